#!/usr/bin/env python3
"""compare_tolerant.py EXPECTED ACTUAL [RTOL [ATOL]]

Compares two program outputs token by token: words must be equal, and
numbers may differ by ATOL + RTOL * |expected| (the tolerance bf16 implies
for a program run on the tpu-model, whose matrix products round their
operands to bf16). Prints the first difference; exit 0 when they agree.
"""
import re
import sys

TOKEN = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\b-?(?:nan|inf)\b|\w+|\S")


def tokens(text):
    return TOKEN.findall(text)


def number(tok):
    try:
        return float(tok)
    except ValueError:
        return None


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-2
    atol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-2
    want = open(sys.argv[1]).read().splitlines()
    got = open(sys.argv[2]).read().splitlines()
    if len(want) != len(got):
        print("%s has %d lines, %s %d" % (sys.argv[1], len(want), sys.argv[2], len(got)))
        return 1
    for line, (a, b) in enumerate(zip(want, got), 1):
        ta, tb = tokens(a), tokens(b)
        same = len(ta) == len(tb)
        for x, y in zip(ta, tb):
            nx, ny = number(x), number(y)
            if nx is None or ny is None:
                same = same and x == y
            elif nx != nx or ny != ny:  # NaN: both or neither
                same = same and (nx != nx) == (ny != ny)
            elif nx != ny and not abs(nx - ny) <= atol + rtol * abs(nx):
                same = False
        if not same:
            print("line %d differs beyond rtol %g, atol %g:\n  expected: %s\n  actual:   %s"
                  % (line, rtol, atol, a, b))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
