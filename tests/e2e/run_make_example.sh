#!/bin/sh
# run_make_example.sh SRC_DIR WORK_DIR AGC AG_INCLUDE_DIR AG_LIB_DIR [SANITIZE_FLAGS]
#
# Builds examples/make with its own Makefile in a scratch copy, and checks
# the Make integration of docs/agc.md:
#   1. make builds the program, which prints smooth.expected;
#   2. a second make has nothing to do (make -q says up to date);
#   3. touching the header makes the program out of date, and make
#      converts the source again; so does editing it, with the C
#      compiler's -MMD file (smooth.ag.d) written beside agc's
#      (smooth.ag.c.d), neither replacing the other;
#   4. `make aot` builds blend from an object agc compiles ahead of time;
#      it prints blend.expected and links no LLVM and no libclang, and
#      touching the header compiles it again.
if [ $# -ne 5 ] && [ $# -ne 6 ]; then
    echo "usage: $0 SRC_DIR WORK_DIR AGC AG_INCLUDE_DIR AG_LIB_DIR [SANITIZE_FLAGS]" >&2
    exit 2
fi
src=$1 work=$2 agc=$3 inc=$4 lib=$5 san=${6:-}
fail() {
    echo "make.example: $*" >&2
    exit 1
}
rm -rf "$work" && mkdir -p "$work" || exit 2
cp "$src"/Makefile "$src"/*.c "$src"/*.h "$src"/*.expected "$work"/ || exit 2
cd "$work" || exit 2
run_make() {
    make "$@" AGC="$agc" AG_CFLAGS="-I$inc" AG_LIBS="-L$lib -Wl,-rpath,$lib -lag" \
        AG_RT_LIBS="-L$lib -Wl,-rpath,$lib -lag_rt" CFLAGS="-std=c11 -O2 -Wall -Wextra $san"
}

run_make >build1.log 2>&1 || { cat build1.log; fail "the first make failed"; }
./smooth >smooth.actual || fail "./smooth failed"
diff -u smooth.expected smooth.actual || fail "./smooth printed something else"
[ -f smooth.ag.c.d ] || fail "agc -MD wrote no smooth.ag.c.d"
grep -q '^smooth\.ag\.c:.*smooth\.c' smooth.ag.c.d || fail "smooth.ag.c.d is not agc's rule"
grep -q 'smooth\.h' smooth.ag.c.d || fail "smooth.ag.c.d does not list smooth.h"
grep -q '^smooth\.ag\.o:' smooth.ag.d || fail "cc -MMD wrote no smooth.ag.d of its own"

run_make -q || fail "a second make would rebuild: the build is not up to date"
run_make >build2.log 2>&1 || fail "the second make failed"
if grep -q agc build2.log; then
    cat build2.log
    fail "the second make ran agc again"
fi

sleep 1
touch smooth.h
run_make -q && fail "touching smooth.h did not make the program out of date"
run_make >build3.log 2>&1 || { cat build3.log; fail "the make after touching smooth.h failed"; }
grep -q "smooth.c -o smooth.ag.c" build3.log || {
    cat build3.log
    fail "touching smooth.h did not run agc on smooth.c again"
}
run_make -q || fail "not up to date after the rebuild"

sleep 1
echo '/* an edit */' >>smooth.h
run_make >build4.log 2>&1 || { cat build4.log; fail "the make after editing smooth.h failed"; }
grep -q "smooth.c -o smooth.ag.c" build4.log || {
    cat build4.log
    fail "editing smooth.h did not run agc on smooth.c again"
}

run_make aot >aot1.log 2>&1 || { cat aot1.log; fail "make aot failed"; }
./blend >blend.actual || fail "./blend failed"
diff -u blend.expected blend.actual || fail "./blend printed something else"
if ldd ./blend | grep -i -e llvm -e clang; then
    fail "./blend links LLVM or libclang: it should need libag_rt only"
fi
ldd ./blend | grep -q libag_rt || fail "./blend does not link libag_rt"
run_make -q aot || fail "a second make aot would rebuild"
sleep 1
touch smooth.h
run_make aot >aot2.log 2>&1 || { cat aot2.log; fail "make aot after touching smooth.h failed"; }
grep -q -- "--emit=obj,header" aot2.log || {
    cat aot2.log
    fail "touching smooth.h did not compile blend.c again"
}
echo "make.example: ok"
exit 0
