#!/bin/sh
# run_example.sh EXECUTABLE EXPECTED ACTUAL
#
# Runs an example program, saves its stdout in ACTUAL, and passes only if
# the program exits with status 0 and ACTUAL matches EXPECTED byte for
# byte. On a difference it prints a unified diff (expected -> actual).
if [ $# -ne 3 ]; then
    echo "usage: $0 EXECUTABLE EXPECTED ACTUAL" >&2
    exit 2
fi
exe=$1
expected=$2
actual=$3

"$exe" >"$actual"
status=$?
if [ "$status" -ne 0 ]; then
    echo "$exe exited with status $status (its stdout is in $actual)" >&2
    exit 1
fi
if ! diff -u "$expected" "$actual"; then
    echo "$exe: stdout differs from $expected (diff above: - expected, + actual)" >&2
    exit 1
fi
exit 0
