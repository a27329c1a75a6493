#!/usr/bin/env python3
"""Differential test of agc's exit restructuring: every output agc accepts
must compile, and run as the eager program does.

A staged loop whose body is

    i = i + 1;
    if (COND) { THEN } else { ELSE }
    REST

is generated for pairs of branch bodies (breaks, continues and returns,
staged or under C conditions, nested or not) and several statements after
the if, in each kind of loop and under staged and C conditions. agc moves
REST into the branch that does not always exit and guards it by the flags
the branches may set (docs/agc.md); the programs check that the moved text
compiles (cc -Wall -Wextra -Werror) and computes what the eager build
computes, on inputs that take every path.

usage: exit_combinations.py AGC CC INCLUDE_DIR LIB_DIR WORK_DIR [CFLAGS]

CFLAGS (one argument, words separated by spaces) are added to every C
compile: the sanitizers, when libag is built with them.
"""
import itertools
import os
import subprocess
import sys

BRANCHES = [
    "x = ag_add(x, 1);",
    "x = ag_add(x, 1);\nbreak;",
    "x = ag_add(x, 3);\ncontinue;",
    "if (ag_bool(ag_greater(x, 50)))\n    break;\nx = ag_add(x, 1);",
    "if (ag_bool(ag_greater(x, 40)))\n    continue;\nx = ag_add(x, 1);",
    "if (ag_bool(ag_greater(x, 60)))\n    return ag_neg(x);\nx = ag_add(x, 1);",
    "return ag_sub(x, 1);",
    "if (ag_bool(ag_greater(x, 30))) {\n    x = ag_add(x, 7);\n    break;\n} else {\n"
    "    x = ag_add(x, 2);\n    continue;\n}",
    "if (k > 2)\n    break;\nx = ag_add(x, 1);",
    "if (ag_bool(ag_greater(x, 20))) {\n    if (ag_bool(ag_less(x, 90)))\n        break;\n}\n"
    "x = ag_add(x, 5);",
]

RESTS = [
    "",
    "/* after the if */\nx = ag_mul(x, 2);",
    "x = ag_mul(x, 2);\n#define ONE 1\nx = ag_sub(x, ONE);\n#undef ONE",
]

# (loop head, loop tail, the if's condition)
SHAPES = [
    ("while (ag_bool(ag_less(i, n)))", "", "ag_bool(ag_greater(x, 5))"),
    ("while (ag_bool(ag_less(i, n)))", "", "k > 1"),
    ("do", " while (ag_bool(ag_less(i, n)));", "ag_bool(ag_greater(x, 5))"),
    ("for (; ag_bool(ag_less(i, n)); x = ag_add(x, 0.5f))", "", "ag_bool(ag_greater(x, 5))"),
    ("while (ag_bool(ag_less(i, n)))", "", "ag_bool(ag_greater(x, 5)) && ag_bool(ag_less(x, 80))"),
]

INPUTS = [(1, 0), (6, 2), (45, 1), (7, 3), (-4, 2)]


def indent(text, n):
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def function(name, shape, then_s, else_s, rest):
    head, tail, cond = shape
    return f"""AG_FUNCTION ag_tensor {name}(ag_tensor x, ag_tensor n, int k)
{{
    ag_tensor i = ag_scalar_i32(0);
    (void)k;
    {head} {{
        i = ag_add(i, 1);
        if ({cond}) {{
{indent(then_s, 12)}
        }} else {{
{indent(else_s, 12)}
        }}
{indent(rest, 8)}
    }}{tail}
    return x;
}}
"""


def program(funcs):
    out = ["#include <ag.h>", "#include <stdio.h>", ""]
    out += [function(*f) for f in funcs]
    out.append("int main(void)\n{")
    for name, *_ in funcs:
        for x0, k in INPUTS:
            out.append(f"    printf(\"{name}({x0}, {k}) = %g\\n\", "
                       f"ag_item_f64({name}(ag_scalar(AG_F32, {x0}), ag_scalar_i32(6), {k})));")
    out.append("    return 0;\n}\n")
    return "\n".join(out)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check(path, agc, cc, include, libdir, cflags):
    """Converts, compiles and runs one program; a message, or None."""
    staged = path[:-2] + ".ag.c"
    r = run([agc, "-fno-color-diagnostics", path, "-o", staged])
    if r.returncode != 0:
        return f"agc rejected {path}:\n{r.stderr}"
    outputs = []
    for kind, src in (("eager", path), ("staged", staged)):
        exe = path[:-2] + "." + kind
        r = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *cflags, "-I" + include, src,
                 "-o", exe, "-L" + libdir, "-Wl,-rpath," + libdir, "-lag", "-lm"])
        if r.returncode != 0:
            return f"the {kind} build of {path} does not compile:\n{r.stderr}"
        # the graph interpreter: this test is about agc's output, and it
        # spares 500 LLVM compiles
        r = run([exe], env=dict(os.environ, AG_TARGET="reference"))
        outputs.append((r.returncode, r.stdout, r.stderr))
    if outputs[0] != outputs[1]:
        diff = [f"  eager: {a}\n  staged: {b}"
                for a, b in zip(outputs[0][1].splitlines(), outputs[1][1].splitlines()) if a != b]
        return (f"{path}: the staged program differs from the eager one (exit {outputs[0][0]} "
                f"vs {outputs[1][0]}):\n" + "\n".join(diff[:10]) + "\n" + outputs[1][2][:2000])
    return None


def main():
    agc, cc, include, libdir, work = sys.argv[1:6]
    cflags = sys.argv[6].split() if len(sys.argv) > 6 else []
    os.makedirs(work, exist_ok=True)
    funcs = []
    pairs = list(itertools.product(range(len(BRANCHES)), repeat=2))
    for s, shape in enumerate(SHAPES):
        for p, (t, e) in enumerate(pairs):
            if s and (p + s) % 2:
                continue  # every pair in the first shape, half of them in the others
            rest = RESTS[(p + s) % len(RESTS)]
            funcs.append((f"s{s}_t{t}_e{e}", shape, BRANCHES[t], BRANCHES[e], rest))
    failures = []
    per_file = 50
    for start in range(0, len(funcs), per_file):
        path = os.path.join(work, f"combinations_{start // per_file}.c")
        with open(path, "w") as f:
            f.write(program(funcs[start:start + per_file]))
        msg = check(path, agc, cc, include, libdir, cflags)
        if msg:
            failures.append(msg)
    for m in failures:
        print(m)
    print(f"{len(funcs)} functions in {(len(funcs) + per_file - 1) // per_file} programs, "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
