#!/bin/sh
# run_program.sh EXECUTABLE EXPECTED ACTUAL
#
# Runs one build (eager or staged) of an end-to-end program and passes when
# it exits with status 0 and its stdout equals EXPECTED byte for byte.
if [ $# -ne 3 ]; then
    echo "usage: $0 EXECUTABLE EXPECTED ACTUAL" >&2
    exit 2
fi
"$1" >"$3"
status=$?
if [ "$status" -ne 0 ]; then
    echo "$1 exited with status $status (its stdout is in $3)" >&2
    exit 1
fi
if ! diff -u "$2" "$3"; then
    echo "$1: stdout differs from $2 (diff above: - expected, + actual)" >&2
    exit 1
fi
exit 0
