#!/usr/bin/env python3
"""check_getenv.py - one file of the library reads the environment.

Usage:
    check_getenv.py SOURCE_DIR

Every setting of agc is read once, from the environment, the setters and
the command line, into one configuration (runtime/core/config.h), and
handed down from there. So exactly one file of the library (libag: the
folders support, runtime, ir, passes, backend, pipeline, model and
converter) may call getenv or secure_getenv: runtime/core/config.c. A call
anywhere else is a setting read on the way, which no snapshot records;
add a row to runtime/core/config.def instead. The tools (frontend/ for
agc, tools/) may read variables that are not agc's settings (CC, TMPDIR,
TERM) themselves.

Comments and string literals are skipped. Prints one line per problem,
then "N passed, M failed"; exit status 0 when nothing failed, 1
otherwise, 2 on bad usage. Python 3 standard library only.
"""

import os
import re
import sys

LIBRARY = ("support", "runtime", "ir", "passes", "backend", "pipeline", "model", "converter")
READER = os.path.join("runtime", "core", "config.c")
CALL = re.compile(r"\b(?:secure_)?getenv\s*\(")
# comments and literals, so that a mention of getenv in either is no call
NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def sources(root):
    for top in LIBRARY:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def calls(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = NOISE.sub(" ", f.read())
    return len(CALL.findall(code))


def main(argv):
    if len(argv) != 2:
        print("usage: check_getenv.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    passed = failed = 0
    for path in sources(root):
        rel = os.path.relpath(path, root)
        n = calls(path)
        if rel == READER and n == 0:
            print("%s: the configuration reads no environment variable" % rel)
            failed += 1
        elif rel != READER and n:
            print("%s: calls getenv %d time(s); read a setting from the configuration "
                  "(runtime/core/config.def) instead" % (rel, n))
            failed += 1
        else:
            passed += 1
    if not os.path.exists(os.path.join(root, READER)):
        print("%s: missing" % READER)
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
