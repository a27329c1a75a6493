#!/usr/bin/env python3
"""check_dsl_reference.py - docs/dsl.md mentions every public name of ag.h.

Usage:
    check_dsl_reference.py AG_H DSL_MD          check, report, exit 0 or 1
    check_dsl_reference.py --list AG_H [DSL_MD] print the public names found

The public names of ag.h are
  1. the macros it #defines whose names begin with AG_ or ag_;
  2. the typedef names beginning with ag_;
  3. the enum constants beginning with AG_;
  4. the functions it declares or defines at file scope whose names begin
     with ag_, including those an X-macro list declares
     (AG__BINARY_OPS(AG__DECLARE_BINARY) declares ag_add_at, ...);
except these, which are internal:
  a. names beginning with AG__ or ag__ (two underscores): the header's own
     helpers (AG__MAP, ag__int_operand, ...), never spelled by users;
  b. the include guard (the X of a leading "#ifndef X" / "#define X" pair);
  c. a function NAME_at when ag.h also defines a function-like macro NAME:
     the macro is what users write, the _at function only the entry point
     it forwards to with the caller's file and line (ag_add -> ag_add_at).
     An _at function without such a macro (ag_if_at, ag_fill_like_at) is
     public and must be documented;
  d. anything in an internal region: from a comment whose text (after
     leading dashes and spaces) begins with the word "internal", to the
     next comment beginning with "end internal" or the next section banner
     (a comment beginning with "---") that does not itself say internal;
  e. anything under "#ifdef __cplusplus" (the extern "C" wrapper).
Struct and enum tags (struct ag_variable_s) and struct members are not
checked: users spell the typedef names.

A name is mentioned when it occurs in DSL_MD as a whole word (no letter,
digit or underscore right before or after it). The last line printed is
"N passed, M failed"; before it, one line per missing name with its kind
and line in ag.h. Exit status: 0 when nothing is missing, 1 when a name is
missing (or ag.h yields no public names at all, which means this parser
broke), 2 on bad usage or an unreadable file. Python 3 standard library
only.
"""

import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Name:
    def __init__(self, name, kind, line, internal):
        self.name, self.kind, self.line, self.internal = name, kind, line, internal


# ------------------------------------------------------------ scanning


def scan(text):
    """Splits C source into events: ("directive", text, line),
    ("comment", text, line) and ("code", text, line), in order.
    Directives have their continuation lines joined and their comments
    removed; string and character literals stay inside code."""
    events = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    code, code_line = [], 1

    def flush():
        if code:
            events.append(("code", "".join(code), code_line))
            code.clear()

    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            code.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            flush()
            start_line = line
            parts = []
            while i < n:
                if text.startswith("/*", i):
                    end = text.find("*/", i + 2)
                    end = n if end < 0 else end + 2
                    line += text.count("\n", i, end)
                    parts.append(" ")
                    i = end
                elif text.startswith("//", i):
                    while i < n and text[i] != "\n":
                        i += 1
                elif text.startswith("\\\n", i):
                    parts.append(" ")
                    line += 1
                    i += 2
                elif text[i] == "\n":
                    break
                else:
                    parts.append(text[i])
                    i += 1
            events.append(("directive", "".join(parts).strip(), start_line))
            code_line = line
            continue
        at_line_start = False
        if text.startswith("/*", i):
            flush()
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            events.append(("comment", text[i + 2:end - 2], line))
            line += text.count("\n", i, end)
            code.append(" ")
            code_line = line
            i = end
            continue
        if text.startswith("//", i):
            flush()
            end = text.find("\n", i)
            end = n if end < 0 else end
            events.append(("comment", text[i + 2:end], line))
            code_line = line
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            code.append(text[i:j + 1])
            i = j + 1
            continue
        if not code:
            code_line = line
        code.append(c)
        if c == "\n":
            line += 1
            at_line_start = True
        i += 1
    flush()
    return events


def comment_marker(text):
    """'internal', 'end' or 'banner' for comments that open or close an
    internal region, else None."""
    stripped = text.strip().lstrip("*").strip()
    is_banner = stripped.startswith("---")
    words = stripped.lstrip("-").strip().lower()
    if re.match(r"internal\b", words):
        return "internal"
    if re.match(r"end\s+internal\b", words):
        return "end"
    return "banner" if is_banner else None


# ------------------------------------------------------------- parsing


class Header:
    def __init__(self):
        self.macros = {}  # name -> (function_like, params, body, line, internal)
        self.names = {}  # name -> Name (first occurrence)
        self.guard = None
        self.code = []  # characters of file-scope code
        self.code_info = []  # (line, internal) per character of code

    def add(self, name, kind, line, internal):
        if name not in self.names:
            self.names[name] = Name(name, kind, line, internal)


def read_header(text):
    h = Header()
    internal = False
    stack = []  # one entry per open #if: (skipping, is_cplusplus_group)
    events = scan(text)
    first_directives = [e for e in events if e[0] == "directive"][:2]
    if len(first_directives) == 2:
        m1 = re.match(r"#\s*ifndef\s+(\w+)\s*$", first_directives[0][1])
        m2 = re.match(r"#\s*define\s+(\w+)\s*$", first_directives[1][1])
        if m1 and m2 and m1.group(1) == m2.group(1):
            h.guard = m1.group(1)

    def skipping():
        return any(s for s, _ in stack)

    for kind, body, line in events:
        if kind == "comment":
            mark = comment_marker(body)
            if mark == "internal":
                internal = True
            elif mark in ("end", "banner"):
                internal = False
            continue
        if kind == "directive":
            m = re.match(r"#\s*(\w+)\s*(.*)$", body, re.S)
            if not m:
                continue
            word, rest = m.group(1), m.group(2)
            if word in ("if", "ifdef", "ifndef"):
                cpp = "__cplusplus" in rest
                negated = word == "ifndef" or rest.lstrip().startswith("!")
                stack.append((cpp and not negated, cpp))
            elif word in ("else", "elif") and stack:
                skip, cpp = stack[-1]
                stack[-1] = (cpp and not skip, cpp)
            elif word == "endif" and stack:
                stack.pop()
            elif word == "define" and not skipping():
                d = re.match(r"(\w+)(\()?", rest)
                if d:
                    name = d.group(1)
                    params, macro_body = [], rest[d.end():]
                    if d.group(2):
                        close = macro_body.find(")")
                        params = [p.strip() for p in macro_body[:close].split(",")]
                        macro_body = macro_body[close + 1:]
                    if name not in h.macros:
                        h.macros[name] = (bool(d.group(2)), params, macro_body.strip(),
                                          line, internal)
            continue
        if skipping():
            continue
        ln = line
        for ch in body:
            h.code.append(ch)
            h.code_info.append((ln, internal))
            if ch == "\n":
                ln += 1
    return h


def matching(text, i, open_ch, close_ch):
    """Index just past the bracket matching the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_ch:
            depth += 1
        elif text[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def statements(code):
    """File-scope statements as (start, end) offsets: up to a ';' outside
    braces, or up to the '}' that ends a function body."""
    out, start, i, n = [], 0, 0, len(code)
    while i < n:
        c = code[i]
        if c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            end = matching(code, i, "{", "}")
            before = code[start:i].rstrip()
            if before.endswith(")"):  # a function definition
                out.append((start, end))
                start = end
            i = end
            continue
        if c == ";":
            out.append((start, i + 1))
            start = i + 1
        i += 1
    if code[start:].strip():
        out.append((start, n))
    return out


def blank_braces(s):
    """s with every {...} body replaced by spaces (offsets kept)."""
    chars, i = list(s), 0
    while i < len(s):
        if s[i] == "{":
            end = matching(s, i, "{", "}")
            for k in range(i, end):
                if chars[k] != "\n":
                    chars[k] = " "
            i = end
        else:
            i += 1
    return "".join(chars)


def xmacro_names(h, list_macro, decl_macro):
    """Names a LIST(DECL) invocation declares: LIST's body applies its
    parameter to each entry (X(add) X(sub)), and DECL pastes its parameter
    into a name (ag_##name##_at)."""
    lfn, lparams, lbody, _, _ = h.macros[list_macro]
    dfn, dparams, dbody, _, _ = h.macros[decl_macro]
    if not (lfn and dfn and len(lparams) == 1 and len(dparams) == 1):
        return []
    entries = re.findall(r"\b%s\s*\(\s*(\w+)\s*\)" % re.escape(lparams[0]), lbody)
    pastes = re.findall(r"(\w*)\s*##\s*%s\s*##\s*(\w*)\s*\(" % re.escape(dparams[0]), dbody)
    return [pre + e + post for e in entries for pre, post in pastes]


def collect(h):
    code = "".join(h.code)

    def info(offset):
        return h.code_info[min(offset, len(h.code_info) - 1)]

    for name, (_, _, _, line, internal) in h.macros.items():
        h.add(name, "macro", line, internal)
    for start, end in statements(code):
        stmt = code[start:end]
        if re.match(r"\s*typedef\b", stmt):
            for em in re.finditer(r"\benum\b[^{;]*\{", stmt):
                open_at = em.end() - 1
                body = stmt[open_at + 1:matching(stmt, open_at, "{", "}") - 1]
                offset = start + open_at + 1
                for item in body.split(","):
                    im = IDENT.search(item)
                    if im:
                        ln, internal = info(offset + im.start())
                        h.add(im.group(0), "enum constant", ln, internal)
                    offset += len(item) + 1
            flat = blank_braces(stmt)
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", flat)
            if fp:
                name, at = fp.group(1), fp.start(1)
            else:
                idents = list(IDENT.finditer(re.sub(r"\[[^\]]*\]", " ", flat)))
                if not idents:
                    continue
                name, at = idents[-1].group(0), idents[-1].start()
            ln, internal = info(start + at)
            h.add(name, "type", ln, internal)
            continue
        flat = blank_braces(stmt)
        i = 0
        while True:
            m = re.compile(r"\b([A-Za-z_]\w*)\s*\(").search(flat, i)
            if not m:
                break
            name = m.group(1)
            macro = h.macros.get(name)
            if macro and macro[0]:  # a macro invocation: an X-list, an annotation
                args_end = matching(flat, m.end() - 1, "(", ")")
                arg = flat[m.end():args_end - 1].strip()
                if arg in h.macros:
                    for gen in xmacro_names(h, name, arg):
                        ln, internal = info(start + m.start())
                        h.add(gen, "function", ln, internal)
                i = args_end
                continue
            ln, internal = info(start + m.start())
            h.add(name, "function", ln, internal)
            break


def is_public(h, n):
    name = n.name
    if not (name.startswith("ag_") or name.startswith("AG_")):
        return False
    if n.kind == "enum constant" and not name.startswith("AG_"):
        return False
    if n.kind in ("type", "function") and not name.startswith("ag_"):
        return False
    if name.startswith("ag__") or name.startswith("AG__"):
        return False
    if name == h.guard or n.internal:
        return False
    if n.kind == "function" and name.endswith("_at"):
        wrapper = h.macros.get(name[:-3])
        if wrapper and wrapper[0]:
            return False
    return True


def public_names(header_text):
    h = read_header(header_text)
    collect(h)
    return sorted((n for n in h.names.values() if is_public(h, n)), key=lambda n: n.line)


# ---------------------------------------------------------------- main


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        print("check_dsl_reference: cannot read %s: %s" % (path, e.strerror), file=sys.stderr)
        sys.exit(2)


def main(argv):
    args = argv[1:]
    listing = "--list" in args
    args = [a for a in args if a != "--list"]
    if len(args) != 2 and not (listing and len(args) == 1):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    names = public_names(read(args[0]))
    if listing:
        for n in names:
            print("%-32s %-14s ag.h:%d" % (n.name, n.kind, n.line))
        if len(args) == 1:
            return 0
    if not names:
        print("no public names found in %s: the parser is broken" % args[0])
        print("0 passed, 1 failed")
        return 1
    doc = read(args[1])
    missing = [n for n in names
               if not re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(n.name), doc)]
    for n in missing:
        print("not in %s: %s (%s, %s:%d)" % (args[1], n.name, n.kind, args[0], n.line))
    print("%d passed, %d failed" % (len(names) - len(missing), len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
