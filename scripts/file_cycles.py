#!/usr/bin/env python3
"""file_cycles.py - cycles between the files of each folder.

Usage:
    file_cycles.py SOURCE_DIR BUILD_DIR

Two graphs per folder, and their cycles (strongly connected components of
more than one file):

  uses      a.c -> b.c when a.c's object refers to a symbol b.c's object
            defines (from `nm` on BUILD_DIR's objects): two .c files that
            need each other, through any header;
  includes  a.h -> b.h when a.h includes b.h (quoted includes, resolved in
            the including file's folder).

A cycle is fine when the files are one unit split for size (their map
says so); otherwise one of the edges is an accident to remove. Prints
each cycle with the edges in it and the symbols behind each edge. Exit
status 0; this is a survey, not a test. Python 3 standard library only.
"""

import collections
import os
import re
import subprocess
import sys

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


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWG":
            defined.add(parts[2])
    return defined, used


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


def use_cycles(source, build):
    objs = objects(source, build)
    syms = {src: symbols(o) for src, o in objs.items()}
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
            print("uses cycle in %s/: %s" % (folder, " ".join(os.path.basename(f) for f in comp)))
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print("    %s -> %s: %s" % (os.path.basename(a), os.path.basename(b),
                                                   ", ".join(sorted(why[(a, b)])[:6])))


def include_cycles(source):
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
    for comp in sccs(files, edges):
        print("include cycle: %s" % " ".join(comp))


def main(argv):
    if len(argv) != 3:
        print("usage: file_cycles.py SOURCE_DIR BUILD_DIR", file=sys.stderr)
        return 2
    use_cycles(argv[1], argv[2])
    include_cycles(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
