#!/usr/bin/env python3
"""file_cycles.py - cycles between the files of each folder.

Usage:
    file_cycles.py [--check] SOURCE_DIR BUILD_DIR

Two graphs per folder, and their cycles (strongly connected components of
more than one file):

  uses      a.c -> b.c when a.c's object refers to a symbol b.c's object
            defines (from `nm` on BUILD_DIR's objects): two .c files that
            need each other, through any header;
  includes  a.h -> b.h when a.h includes b.h (quoted includes, resolved in
            the including file's folder).

A cycle is fine when the files are one unit split for size (their map
says so, and UNITS below lists them); otherwise one of the edges is an
accident to remove. Prints each cycle with the edges in it and the
symbols behind each edge. Exit status 0: a survey. With --check (the
ctest docs.cycles) it is a test: prints only the cycles that are not
inside one unit of UNITS, and exits 1 when there is one (2 on bad usage,
or when BUILD_DIR has no objects). Python 3 standard library only.
"""

import collections
import os
import re
import subprocess
import sys

# The units split for size, whose files may need each other: folder ->
# a pattern of their names. Each is described as one unit in its map and
# in docs/architecture.md ("A file is one concern").
UNITS = {
    "backend/cpu": r"lower(_\w+)?\.c",       # the lowering, over lower.h
    "ir": r"(trace|staged|staged_grad|loop_grad|replay)\.c",  # the tracer, staged control flow and its gradients
    "passes": r"(analysis|fusion|memplan)\.c",  # the analysis manager and its plans
    "pipeline": r"function(_grad)?\.c",  # the function cache and its calls on tapes
}

ROOTS = ["support", "runtime", "ir", "passes", "backend", "pipeline", "model",
         "converter", "tools", "frontend"]


def objects(source, build):
    """{source path: object path} for the library's and the tools' objects."""
    out = {}
    for dirpath, _, filenames in os.walk(build):
        for f in filenames:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(dirpath, f)
            # .../<folder>/CMakeFiles/<target>.dir/<sub/>file.c.o
            m = re.search(r"^(.*)/CMakeFiles/[^/]+\.dir/(.*)\.o$", os.path.relpath(obj, build))
            if not m:
                continue
            rel = os.path.normpath(os.path.join(m.group(1), m.group(2)))
            if rel.split("/")[0] in ROOTS and os.path.exists(os.path.join(source, rel)):
                out.setdefault(rel, obj)
    return out


def symbols(objs):
    """{object: (defined, used)} from one `nm` run over all of them."""
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True,
                         check=True).stdout
    syms = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        # "path.o:[address] type name"
        cut = line.find(".o:") + 2
        obj, parts = line[:cut], line[cut + 1:].split()
        if obj not in syms:
            continue
        if len(parts) == 2 and parts[0] == "U":
            syms[obj][1].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWG":
            syms[obj][0].add(parts[2])
    return syms


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def in_unit(folder, files):
    """Whether every file of a cycle is in folder's unit (UNITS)."""
    pattern = UNITS.get(folder)
    return bool(pattern) and all(re.fullmatch(pattern, os.path.basename(f)) for f in files)


def use_cycles(source, build, check):
    """Prints the cycles (with check: those outside a unit); their count."""
    objs = objects(source, build)
    if not objs:
        print("file_cycles.py: no objects under %s: build first" % build, file=sys.stderr)
        return -1
    found = 0
    by_obj = symbols(sorted(objs.values()))
    syms = {src: by_obj[o] for src, o in objs.items()}
    owner = {}
    for src, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, src)
    by_folder = collections.defaultdict(list)
    for src in objs:
        by_folder[os.path.dirname(src)].append(src)
    for folder, files in sorted(by_folder.items()):
        edges, why = collections.defaultdict(set), collections.defaultdict(set)
        for a in files:
            for s in syms[a][1]:
                b = owner.get(s)
                if b and b != a and os.path.dirname(b) == folder:
                    edges[a].add(b)
                    why[(a, b)].add(s)
        for comp in sccs(files, edges):
            if check and in_unit(folder, comp):
                continue
            found += 1
            print("uses cycle in %s/: %s" % (folder, " ".join(os.path.basename(f) for f in comp)))
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print("    %s -> %s: %s" % (os.path.basename(a), os.path.basename(b),
                                                   ", ".join(sorted(why[(a, b)])[:6])))
    return found


def include_cycles(source):
    """Prints the cycles between headers; their count."""
    files = []
    for top in ROOTS:
        for dirpath, _, filenames in os.walk(os.path.join(source, top)):
            files += [os.path.relpath(os.path.join(dirpath, f), source)
                      for f in filenames if f.endswith(".h")]
    edges = collections.defaultdict(set)
    for h in files:
        with open(os.path.join(source, h), encoding="utf-8") as f:
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M):
                target = os.path.normpath(os.path.join(os.path.dirname(h), inc))
                if target in files:
                    edges[h].add(target)
    comps = sccs(files, edges)
    for comp in comps:
        print("include cycle: %s" % " ".join(comp))
    return len(comps)


def main(argv):
    check = len(argv) > 1 and argv[1] == "--check"
    args = argv[2:] if check else argv[1:]
    if len(args) != 2:
        print("usage: file_cycles.py [--check] SOURCE_DIR BUILD_DIR", file=sys.stderr)
        return 2
    uses = use_cycles(args[0], args[1], check)
    if uses < 0:
        return 2
    found = uses + include_cycles(args[0])
    if check:
        print("%d cycle(s) between files outside the units split for size" % found)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
