#!/bin/sh
# run_tolerant.sh EXECUTABLE EXPECTED ACTUAL
#
# Runs a staged end-to-end program (on the target the environment names)
# and passes when it exits with status 0 and its stdout matches EXPECTED
# within the tolerance bf16 implies (compare_tolerant.py).
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
python3 "$(dirname "$0")/compare_tolerant.py" "$2" "$3"
