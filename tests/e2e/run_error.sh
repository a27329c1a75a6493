#!/bin/sh
# run_error.sh AGC NAME.c EXPECTED WORKDIR
#
# Runs agc on an illegal program (from the directory holding it, so that
# diagnostics name it as NAME.c) and passes when agc exits with status 1,
# writes no output file, and prints exactly EXPECTED on stderr.
if [ $# -ne 4 ]; then
    echo "usage: $0 AGC NAME.c EXPECTED WORKDIR" >&2
    exit 2
fi
agc=$1
src=$2
expected=$3
work=$4
mkdir -p "$work" || exit 2
out="$work/$(basename "$src" .c).ag.c"
actual="$work/$(basename "$src" .c).stderr"
rm -f "$out"
cd "$(dirname "$expected")" || exit 2
"$agc" -fno-color-diagnostics "$src" -o "$out" 2>"$actual"
status=$?
if [ "$status" -ne 1 ]; then
    echo "agc exited with status $status, expected 1" >&2
    exit 1
fi
if [ -e "$out" ]; then
    echo "agc failed but wrote $out" >&2
    exit 1
fi
if ! diff -u "$expected" "$actual"; then
    echo "agc's diagnostics differ from $expected (diff above: - expected, + actual)" >&2
    exit 1
fi
exit 0
