#!/usr/bin/env python3
"""check_man_page.py - docs/agc.1 stays true to `agc --help` and renders.

Usage:
    check_man_page.py AGC MAN_PAGE

Checks, printing one line per problem and then "N passed, M failed":
  1. every option `agc --help` lists (each name at the start of an option
     line, and each one after a comma there: "-I DIR, -isystem DIR"), and
     every --emit kind it lists, is in the rendered page;
  2. the page's .TH line names the version `agc --version` prints;
  3. the page renders with groff's man macros without a warning (-ww).
The page is rendered with `groff -man -Tascii`; without groff, the roff
source is read instead (with \\- taken as -) and rendering is skipped, said
on stdout. Exit status: 0 when nothing failed, 1 otherwise, 2 on bad usage.
Python 3 standard library only.
"""

import re
import shutil
import subprocess
import sys

OPTION_LINE = re.compile(r"^  (-\S.*?)(?:\s{2,}|$)")
KIND_LINE = re.compile(r"^\s{20,}([a-z][a-z-]*)\s{2,}(.*)$")


def help_options(help_text):
    """The option names of the help's option lines, in order."""
    names = []
    for line in help_text.splitlines():
        m = OPTION_LINE.match(line)
        if not m:
            continue
        for part in m.group(1).split(", "):
            name = part.split()[0].split("=")[0] if part.split() else ""
            if name.startswith("-") and name not in names:
                names.append(name)
    return names


def emit_kinds(help_text):
    """The --emit kinds: the first word of each indented kind line, and
    the "ir-opt:" / "asm:" named after a semicolon on those lines."""
    kinds = []
    for line in help_text.splitlines():
        m = KIND_LINE.match(line)
        if not m:
            continue
        kinds.append(m.group(1))
        kinds += re.findall(r";\s*([a-z][a-z-]*):", m.group(2))
    return kinds


def render(page):
    """The page as plain text, and groff's warnings (None: no groff)."""
    groff = shutil.which("groff")
    if not groff:
        with open(page, encoding="utf-8") as f:
            return f.read().replace("\\-", "-"), None
    r = subprocess.run([groff, "-man", "-Tascii", "-ww", "-P-c", "-P-b", "-P-u", page],
                       capture_output=True, text=True)
    return r.stdout, r.stderr if r.returncode == 0 else (r.stderr or "groff failed")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    agc, page = argv[1], argv[2]
    help_text = subprocess.run([agc, "--help"], capture_output=True, text=True).stdout
    version = subprocess.run([agc, "--version"], capture_output=True, text=True).stdout
    text, warnings = render(page)
    words = set(re.findall(r"-{1,2}[\w][\w-]*|--(?!\w)", text))
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("missing: " + what)

    options = help_options(help_text)
    if not options:
        print("agc --help lists no options: this parser broke")
        return 1
    for name in options:
        check(name in words, "option %s (agc --help) is not in %s" % (name, page))
    for kind in emit_kinds(help_text):
        check(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(kind), text) is not None,
              "--emit kind %s (agc --help) is not in %s" % (kind, page))
    m = re.search(r"agc (\d+\.\d+\.\d+)", version)
    with open(page, encoding="utf-8") as f:
        th = next((l for l in f if l.startswith(".TH ")), "")
    check(bool(m) and ('"agc %s"' % m.group(1)) in th,
          "the .TH line %r does not name agc %s" % (th.strip(), m.group(1) if m else "?"))
    if warnings is None:
        print("groff is not installed: the page was not rendered")
    else:
        check(not warnings.strip(), "a clean rendering: groff says\n" + warnings)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
