#!/bin/sh
# run_program.sh EXECUTABLE EXPECTED ACTUAL [tolerant [RTOL ATOL]]
#
# Runs one build (eager or staged) of an end-to-end program and passes when
# it exits with status 0 and its stdout equals EXPECTED byte for byte; with
# `tolerant`, when its numbers match EXPECTED's within RTOL and ATOL (by
# default the tolerance bf16 implies: compare_tolerant.py, for a program
# run on the tpu-model).
if [ $# -lt 3 ] || [ $# -gt 6 ]; then
    echo "usage: $0 EXECUTABLE EXPECTED ACTUAL [tolerant [RTOL ATOL]]" >&2
    exit 2
fi
"$1" >"$3"
status=$?
if [ "$status" -ne 0 ]; then
    echo "$1 exited with status $status (its stdout is in $3)" >&2
    exit 1
fi
if [ "${4:-}" = tolerant ]; then
    exec python3 "$(dirname "$0")/compare_tolerant.py" "$2" "$3" ${5:-} ${6:-}
fi
if ! diff -u "$2" "$3"; then
    echo "$1: stdout differs from $2 (diff above: - expected, + actual)" >&2
    exit 1
fi
exit 0
