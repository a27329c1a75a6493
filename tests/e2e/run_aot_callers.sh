#!/bin/sh
# run_aot_callers.sh AGC CC SRC_DIR WORK_DIR AG_INCLUDE_DIR AG_RT_LIB_DIR [CFLAGS]
#
# Functions compiled ahead of time report a call that does not match what
# they were compiled for at the caller's line (docs/agc.md, "Ahead of
# time"). SRC_DIR (tests/e2e/aot_callers) holds model.c, whose functions
# agc compiles with --emit=obj,header, and main.c, which includes the
# header and calls them rightly and wrongly. In a scratch copy, so that
# both files are named as the messages name them:
#   1. agc --emit=obj,header model.c -o model.o (writes model.h);
#   2. main.c compiled against model.h, linked with model.o and libag_rt:
#      it must print callers.expected, each error at main.c's line;
#   3. the same with -DAGC_NO_CALLER_LINES, which keeps the header's plain
#      functions: callers.no_lines.expected, each error at model.c's line.
# CFLAGS (the sanitizers' flags, in a sanitized build) go to every cc step.
if [ $# -ne 6 ] && [ $# -ne 7 ]; then
    echo "usage: $0 AGC CC SRC_DIR WORK_DIR AG_INCLUDE_DIR AG_RT_LIB_DIR [CFLAGS]" >&2
    exit 2
fi
agc=$1 cc=$2 src=$3 work=$4 inc=$5 lib=$6 cflags=${7:-}
fail() {
    echo "e2e.aot_callers: $*" >&2
    exit 1
}
rm -rf "$work" && mkdir -p "$work" || exit 2
cp "$src"/model.c "$src"/main.c "$work"/ || exit 2
cd "$work" || exit 2

"$agc" -fno-color-diagnostics --emit=obj,header model.c -o model.o ||
    fail "agc --emit=obj,header failed"
[ -f model.h ] || fail "agc wrote no model.h"

# build NAME [CC FLAGS...]: main.c against model.h, linked with model.o
build() {
    name=$1
    shift
    # $cc and $cflags are word lists ("ccache cc", "-fsanitize=address,undefined")
    # shellcheck disable=SC2086
    $cc -std=c11 -Wall -Wextra -Werror $cflags "$@" -I "$inc" -I . -c main.c -o "$name.o" ||
        fail "cc could not compile main.c against model.h ($*)"
    # shellcheck disable=SC2086
    $cc $cflags "$name.o" model.o -L "$lib" -Wl,-rpath,"$lib" -lag_rt -lm -o "$name" ||
        fail "linking $name.o and model.o with -lag_rt failed"
}

# check NAME EXPECTED: ./NAME exits with 0 and prints EXPECTED
check() {
    "./$1" >"$1.actual" || fail "./$1 exited with status $? (its stdout is in $work/$1.actual)"
    diff -u "$2" "$1.actual" || fail "./$1: stdout differs from $2 (diff above)"
}

build callers
check callers "$src/callers.expected"
build callers_no_lines -DAGC_NO_CALLER_LINES
check callers_no_lines "$src/callers.no_lines.expected"
exit 0
