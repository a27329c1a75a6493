#!/usr/bin/env python3
"""check_examples_index.py - examples/README.md indexes every example.

Usage:
    check_examples_index.py EXAMPLES_DIR

Every C file in EXAMPLES_DIR and every folder in it (a project such as
make/) must be linked from EXAMPLES_DIR/README.md as [`NAME`](NAME) (a
folder as [`NAME/`](NAME/)), and every such link must name something that
exists. Prints one line per problem, then "N passed, M failed"; exit
status 0 when nothing failed, 1 otherwise, 2 on bad usage. Python 3
standard library only.
"""

import os
import re
import sys


def main(argv):
    if len(argv) != 2:
        print("usage: check_examples_index.py EXAMPLES_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    try:
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            index = f.read()
    except OSError as e:
        print("missing: %s" % e)
        print("0 passed, 1 failed")
        return 1
    linked = set(re.findall(r"\[`([^`]+)`\]\(\1\)", index))
    wanted = set()
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isdir(path):
            wanted.add(name + "/")
        elif name.endswith(".c"):
            wanted.add(name)
    passed = failed = 0
    for name in sorted(wanted):
        if name in linked:
            passed += 1
        else:
            failed += 1
            print("missing: examples/%s is not in examples/README.md as [`%s`](%s)"
                  % (name, name, name))
    for name in sorted(linked - wanted):
        failed += 1
        print("stale: examples/README.md links `%s`, which is not an example" % name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
