#!/usr/bin/env python3
"""check_maps.py - the maps of the source tree are true.

Usage:
    check_maps.py SOURCE_DIR

Checks, in the source tree SOURCE_DIR:

  maps         every source file (.c, .h, .def) of every folder of the
               library and the tools is named in its folder's map: the top
               comment of the folder's main header, or the comments of a
               CMakeLists.txt (MAPS below), by its path from the map's
               folder ("core/ops.c" in runtime/CMakeLists.txt, "parse.c"
               in frontend/fe.h); every file a map names as its folder's
               exists; every folder with sources has a map.
  layers       cmake/layers.cmake's comment names every layer's folder and
               every target's folder under backend/.
  walk-throughs  docs/architecture.md's "Adding an op", "Adding a pass" and
               "Adding a target": every file and function they name
               exists, and they name every place the real code needs, found
               in the code itself: the files that name every public
               elementwise op of the op table (each by RT_OP_<ID>, ag_<name>,
               rt_k_<name> or <name>_<dtype>), the files that name every
               registered pass (pass_<name> or <name>.c) and every built-in
               target (tgt_<name>, its object library, its folder in
               add_subdirectory), and for the targets the construct each of
               those lines is (`extern`, `builtin[]`, `add_subdirectory`,
               `AG_LIB_OBJECTS`).

Example names (NAME, hypot) stand for what is being added and are not
looked up. Prints one line per problem, then "N passed, M failed"; exit
status 0 when nothing failed, 1 otherwise, 2 on bad usage. Python 3
standard library only.
"""

import functools
import os
import re
import sys

# folder -> its map (paths from the source root)
MAPS = {
    "support": "support/CMakeLists.txt",
    "runtime/include": "runtime/CMakeLists.txt",
    "runtime/core": "runtime/CMakeLists.txt",
    "runtime/kernels": "runtime/CMakeLists.txt",
    "runtime/api": "runtime/CMakeLists.txt",
    "runtime/autodiff": "runtime/CMakeLists.txt",
    "ir": "ir/CMakeLists.txt",
    "passes": "passes/CMakeLists.txt",
    "backend": "backend/target.h",
    "backend/reference": "backend/reference/CMakeLists.txt",
    "backend/cpu": "backend/cpu/CMakeLists.txt",
    "backend/tpu": "backend/tpu/CMakeLists.txt",
    "pipeline": "pipeline/CMakeLists.txt",
    "model": "model/CMakeLists.txt",
    "converter": "converter/CMakeLists.txt",
    "tools": "tools/CMakeLists.txt",
    "frontend": "frontend/fe.h",
}
# the folders that hold the library and the tools (tests/, bench/ and
# examples/ have their own indexes)
ROOTS = ["support", "runtime", "ir", "passes", "backend", "pipeline", "model",
         "converter", "tools", "frontend"]
SOURCE_EXT = (".c", ".h", ".def")
EXAMPLES = ("NAME", "hypot")
CODE_EXT = (".c", ".h", ".def", ".txt", ".cmake", ".sh", ".py")

problems = []
passed = 0


def check(ok, msg):
    global passed
    if ok:
        passed += 1
    else:
        problems.append(msg)


@functools.lru_cache(maxsize=None)
def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def map_text(root, rel):
    """The map part of a file: a CMake file's comment lines, a header's
    first comment."""
    text = read(root, rel)
    if rel.endswith((".txt", ".cmake")):
        return "\n".join(l for l in text.split("\n") if l.lstrip().startswith("#"))
    m = re.search(r"/\*.*?\*/", text, re.S)
    return m.group(0) if m else ""


def names(text, name):
    """Whether text names `name` as a whole path (not the end of a longer
    one: "ir/parse.c" does not name frontend's "parse.c")."""
    return re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w])", text) is not None


def sources(root, folder):
    path = os.path.join(root, folder)
    return sorted(f for f in os.listdir(path)
                  if f.endswith(SOURCE_EXT) and os.path.isfile(os.path.join(path, f)))


# ---------------------------------------------------------------- maps

def check_maps(root):
    for top in ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            folder = os.path.relpath(dirpath, root)
            if any(f.endswith(SOURCE_EXT) for f in filenames):
                check(folder in MAPS, "%s: a folder with sources but no map "
                      "(add it to MAPS in tests/docs/check_maps.py)" % folder)
    for folder, map_rel in sorted(MAPS.items()):
        if not os.path.isdir(os.path.join(root, folder)):
            check(False, "%s: no such folder (MAPS in check_maps.py)" % folder)
            continue
        text = map_text(root, map_rel)
        map_dir = os.path.dirname(map_rel)
        for f in sources(root, folder):
            rel = os.path.relpath(os.path.join(folder, f), map_dir)
            check(names(text, rel), "%s: %s is not named in its folder's map" %
                  (map_rel, os.path.join(folder, f)))
    for map_rel in sorted(set(MAPS.values())):
        check_named_exist(root, map_rel)


@functools.lru_cache(maxsize=None)
def basenames(root):
    out = set()
    for top in ROOTS:
        for _, _, filenames in os.walk(os.path.join(root, top)):
            out.update(filenames)
    return out


def exists(root, name, base_dir=""):
    """A path from base_dir or from the root; a bare file name anywhere in
    the sources."""
    if "/" not in name:
        return name in basenames(root)
    return (os.path.exists(os.path.join(root, base_dir, name)) or
            os.path.exists(os.path.join(root, name)))


def check_named_exist(root, map_rel):
    """Every source file the map names exists."""
    text = map_text(root, map_rel)
    for name in sorted(set(re.findall(r"(?<![\w./*-])([\w][\w/.-]*\.(?:c|h|def))(?![\w])", text))):
        if any(e in name for e in EXAMPLES):
            continue
        check(exists(root, name, os.path.dirname(map_rel)),
              "%s: names %s, which does not exist" % (map_rel, name))


def check_layers(root):
    text = map_text(root, "cmake/layers.cmake")
    for top in ROOTS:
        if top != "tools" and top != "frontend":
            check(names(text, top + "/"), "cmake/layers.cmake: the layer %s/ is not named" % top)
    for tool in ("frontend/", "tools/"):
        check(names(text, tool) or ("(%s)" % tool) in text,
              "cmake/layers.cmake: %s is not named" % tool)
    backend = os.path.join(root, "backend")
    for d in sorted(os.listdir(backend)):
        if os.path.isdir(os.path.join(backend, d)):
            check(names(text, "backend/" + d),
                  "cmake/layers.cmake: the target folder backend/%s is not named" % d)


# ------------------------------------------------------- walk-throughs

def code_files(root):
    """Every file of the library, the tools and the build (not tests/,
    docs/, bench/, examples/), and docs/*.md, relative to root."""
    out = []
    for top in ROOTS + ["cmake"]:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(CODE_EXT):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root))
    out += ["CMakeLists.txt"]
    for f in sorted(os.listdir(os.path.join(root, "docs"))):
        if f.endswith(".md") and f != "architecture.md":
            out.append(os.path.join("docs", f))
    return out


def section(doc, title):
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    return m.group(1) if m else None


def mentions(root, files, pattern):
    rx = re.compile(pattern)
    return {f for f in files if rx.search(read(root, f))}


def common(root, files, patterns):
    """The files that every pattern is found in."""
    sets = [mentions(root, files, p) for p in patterns]
    return set.intersection(*sets) if sets else set()


def require_files(title, text, wanted, own=()):
    for f in sorted(wanted):
        if f in own:
            continue
        check(f in text, '"%s" does not name %s, which every existing one needs '
              "(the real steps)" % (title, f))


def table_ops(root):
    """(ID, name) of the op table's public elementwise ops (generated
    kernels: EW or EW_CMP, API_BINARY or API_UNARY)."""
    rows = re.findall(r"^X\((\w+),\s*(\w+),(.*?)\)\s*$",
                      re.sub(r",\s*\n\s+", ", ", read(root, "runtime/core/ops.def")), re.M)
    return [(i, n) for i, n, rest in rows
            if re.search(r"\bEW(_CMP)?\(", rest) and re.search(r"\bAPI_(BINARY|UNARY)\b", rest)]


def check_op_steps(root, files, text):
    ops = table_ops(root)
    check(len(ops) > 5, "runtime/core/ops.def: found only %d public elementwise ops" % len(ops))
    dt = r"(?:f32|f64|bf16|i8|i16|i32|i64|u8|bool|##)"
    pats = [r"\b(?:RT_OP_%s|ag_%s|rt_k_%s|%s_%s)" % (i, n, n, n, dt) for i, n in ops]
    require_files("Adding an op", text, common(root, files, pats))


def registered_passes(root):
    return re.findall(r'^\s*\{"(\w+)",\s*pass_(\w+),', read(root, "passes/manager.c"), re.M)


def check_pass_steps(root, files, text):
    passes = registered_passes(root)
    check(len(passes) > 5, "passes/manager.c: found only %d registered passes" % len(passes))
    sets = []
    for name, fn in passes:
        own = "passes/%s.c" % fn
        found = mentions(root, files, r"\bpass_%s\b|(?<![\w/])%s\.c\b" % (fn, fn)) - {own}
        sets.append(found)
    require_files("Adding a pass", text, set.intersection(*sets) if sets else set())


def builtin_targets(root):
    """(symbol, folder) of each built-in target: target.c's externs, with
    the file the comment beside each names."""
    out = []
    for sym, path in re.findall(r"^extern const tgt_target (\w+);\s*/\*\s*backend/(\w+)/",
                                read(root, "backend/target.c"), re.M):
        out.append((sym, path))
    return out


def construct_of(lines, i):
    """What the line lines[i] is part of: `extern`, `add_subdirectory`, or
    the array or CMake variable it is in."""
    first = re.match(r"\s*(\w+)", lines[i])
    if first and first.group(1) in ("extern", "add_subdirectory"):
        return first.group(1)
    for j in range(i, -1, -1):
        m = re.search(r"(\w+)\s*\[\]\s*=|\bset\((\w+)", lines[j])
        if m:
            return m.group(1) or m.group(2)
    return None


def check_target_steps(root, files, text):
    targets = builtin_targets(root)
    check(len(targets) >= 2, "backend/target.c: found only %d built-in targets" % len(targets))
    per_target = []
    for sym, folder in targets:
        libs = re.findall(r"ag_layer_objects\((\w+)", read(root, "backend/%s/CMakeLists.txt" % folder))
        words = [sym] + libs
        pat = re.compile(r"\b(?:%s)\b|add_subdirectory\(%s\)" % ("|".join(words), folder))
        places = set()
        for f in files:
            if f.startswith("backend/%s/" % folder) or f.startswith("docs/"):
                continue
            lines = read(root, f).split("\n")
            for i, line in enumerate(lines):
                if pat.search(line) and not line.lstrip().startswith(("/*", "*", "#")):
                    places.add((f, construct_of(lines, i)))
        per_target.append(places)
    needed = set.intersection(*per_target) if per_target else set()
    require_files("Adding a target", text, {f for f, _ in needed})
    for f, what in sorted(needed, key=str):
        if what:
            check(re.search(r"\b%s\b" % re.escape(what), text) is not None,
                  '"Adding a target" does not say `%s` (%s), which every target needs' % (what, f))


def check_named_things(root, title, text):
    """Every file and function the walk-through names exists."""
    all_text = "\n".join(read(root, f) for f in code_files(root))
    for tok in sorted(set(re.findall(r"`([^`\n]+)`", text))):
        if any(e in tok for e in EXAMPLES):
            continue
        path = re.fullmatch(r"([\w.-]+/)*[\w.-]+\.(?:c|h|def|md|txt|cmake|ir)|([\w.-]+/)+", tok)
        if path:
            check(exists(root, tok.rstrip("/")) or os.path.isdir(os.path.join(root, tok)),
                  '"%s" names %s, which does not exist' % (title, tok))
            continue
        fn = re.fullmatch(r"(\w+)(?:\(.*\))?(?:\[\])?", tok)
        if fn and "_" in fn.group(1):
            check(re.search(r"\b%s\b" % re.escape(fn.group(1)), all_text) is not None,
                  '"%s" names %s, which is nowhere in the sources' % (title, fn.group(1)))


def check_walkthroughs(root):
    doc = read(root, "docs/architecture.md")
    files = code_files(root)
    for title, fn in (("Adding an op", check_op_steps), ("Adding a pass", check_pass_steps),
                      ("Adding a target", check_target_steps)):
        text = section(doc, title)
        check(text is not None, 'docs/architecture.md: no section "%s"' % title)
        if text is None:
            continue
        check_named_things(root, title, text)
        fn(root, files, text)


def main(argv):
    if len(argv) != 2:
        print("usage: check_maps.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    check_maps(root)
    check_layers(root)
    check_walkthroughs(root)
    for p in problems:
        print(p)
    print("%d passed, %d failed" % (passed, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
