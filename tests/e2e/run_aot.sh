#!/bin/sh
# run_aot.sh AGC CC SRC EXPECTED WORK_DIR AG_INCLUDE_DIR AG_RT_LIB_DIR [CFLAGS]
#
# Builds an end-to-end program with its AG_FUNCTIONs compiled ahead of time
# and passes when it prints EXPECTED. SRC holds main() and the functions
# (each with an AG_SIGNATURE), so it is built twice and linked once:
#   1. agc --emit=obj SRC -o NAME.aot.o: the functions, compiled;
#   2. cc -c SRC -o NAME.o: the whole file, eagerly (AG_FUNCTION is a no-op);
#   3. objcopy --weaken-symbol for each function NAME.aot.o defines (its
#      global text symbols), so that its strong definitions win the link;
#   4. cc NAME.o NAME.aot.o -lag_rt -lm: libag_rt only, never libag.
# The executable must not depend on libLLVM or libclang (directly or not),
# must exit with status 0 and print EXPECTED byte for byte.
#
# NAME.o is compiled at -O0: an optimizing compiler could inline the eager
# definitions into main(), and the program would never call the object's.
# CFLAGS (the sanitizers' flags, in a sanitized build) go to both cc steps.
# NM, OBJCOPY and READELF name the tools (default: nm, objcopy, readelf).
if [ $# -ne 7 ] && [ $# -ne 8 ]; then
    echo "usage: $0 AGC CC SRC EXPECTED WORK_DIR AG_INCLUDE_DIR AG_RT_LIB_DIR [CFLAGS]" >&2
    exit 2
fi
agc=$1 cc=$2 src=$3 expected=$4 work=$5 inc=$6 lib=$7 cflags=${8:-}
nm=${NM:-nm} objcopy=${OBJCOPY:-objcopy} readelf=${READELF:-readelf}
name=$(basename "$src" .c)
srcdir=$(dirname "$src")
fail() {
    echo "e2e.$name.aot: $*" >&2
    exit 1
}
rm -rf "$work" && mkdir -p "$work" || exit 2
aot_obj=$work/$name.aot.o
eager_obj=$work/$name.o
exe=$work/$name.aot
actual=$work/$name.aot.actual

"$agc" -fno-color-diagnostics --emit=obj "$src" -o "$aot_obj" ||
    fail "agc --emit=obj failed"
functions=$("$nm" -g --defined-only "$aot_obj" | awk '$2 == "T" { print $3 }')
[ -n "$functions" ] || fail "$aot_obj defines no function"

# $cc and $cflags are word lists ("ccache cc", "-fsanitize=address,undefined")
# shellcheck disable=SC2086
$cc -std=c11 -O0 -Wall -Wextra $cflags -I "$inc" -I "$srcdir" -c "$src" -o "$eager_obj" ||
    fail "cc could not compile $src eagerly"
set --
for f in $functions; do
    set -- "$@" "--weaken-symbol=$f"
done
"$objcopy" "$@" "$eager_obj" || fail "objcopy could not weaken the eager definitions"
# shellcheck disable=SC2086
$cc $cflags "$eager_obj" "$aot_obj" -L "$lib" -Wl,-rpath,"$lib" -lag_rt -lm -o "$exe" ||
    fail "linking $eager_obj and $aot_obj with -lag_rt failed"

# Each function must be the object's: a strong definition in the executable.
for f in $functions; do
    "$nm" "$exe" | grep -q " T $f\$" || fail "'$f' in $exe is not the strong definition of $aot_obj"
done
needed=$("$readelf" -d "$exe") || fail "readelf -d $exe failed"
if printf '%s\n' "$needed" | grep -E 'NEEDED.*(libLLVM|libclang|libag\.so)'; then
    fail "$exe links libLLVM, libclang or libag (above): it must need libag_rt only"
fi
printf '%s\n' "$needed" | grep -q 'NEEDED.*libag_rt\.so' || fail "$exe does not link libag_rt"
deps=$(ldd "$exe") || fail "ldd $exe failed"
if printf '%s\n' "$deps" | grep -E 'libLLVM|libclang'; then
    fail "$exe loads libLLVM or libclang (above) through its libraries"
fi

"$exe" >"$actual"
status=$?
[ "$status" -eq 0 ] || fail "$exe exited with status $status (its stdout is in $actual)"
if ! diff -u "$expected" "$actual"; then
    fail "$exe: stdout differs from $expected (diff above: - expected, + actual)"
fi
exit 0
