#!/usr/bin/env bash
# Installs the build tree into a scratch prefix (not a system one), then
# builds a program against it twice: with pkg-config and with
# find_package(ag), and runs each with LD_LIBRARY_PATH unset (the rpath
# that ag.pc and agConfig.cmake give; the find_package one also once
# installed, without CMake's build rpath). Then builds
# agc_consumer/, which makes agc a build step (agc_stage_sources,
# agc_compile_aot, ag::agc), with Make and with Ninja when ninja is
# installed (else it says the Ninja build was skipped), checking for each:
# the programs' output, that a second build does nothing, that touching a
# header a staged source includes (include/smooth.h, found through the
# target's include directories) stages it again and rebuilds the AOT
# library, which includes it too, through agc's dependency files, and that
# the AOT program links libag_rt and no LLVM.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)/consumer
agc_src=$(cd "$(dirname "$0")" && pwd)/agc_consumer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
expected="y = [[0 0] [5 12]]"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/ag.h"
test -f "$work/prefix/share/man/man1/agc.1" || { echo "agc.1 is not installed" >&2; exit 1; }
libdir=$(ls -d "$work"/prefix/lib*/ | head -n 1)

# pkg-config: the program runs with no loader setup (ag.pc's rpath)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$src_dir/hello.c" $(pkg-config --cflags --libs ag) -o "$work/hello-pc"
out=$(env -u LD_LIBRARY_PATH "$work/hello-pc")
[ "$out" = "$expected" ] || { echo "pkg-config build printed: $out" >&2; exit 1; }

# CMake package: the consumer installed into a prefix of its own, where
# CMake's build rpath is gone, still runs (the imported targets' rpath)
cmake -S "$src_dir" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
cmake --install "$work/cmake-build" --prefix "$work/consumer" >/dev/null
for hello in "$work/cmake-build/hello" "$work/consumer/bin/hello"; do
    out=$(env -u LD_LIBRARY_PATH "$hello")
    [ "$out" = "$expected" ] || { echo "find_package build $hello printed: $out" >&2; exit 1; }
done
echo "install test: pkg-config and find_package(ag) consumers both print, with no" \
     "LD_LIBRARY_PATH: $out"

# agc as a build step. A scratch copy of the project, so that touching
# its headers leaves the source tree alone.
agc_build() { # GENERATOR NAME
    local gen=$1 name=$2 dir="$work/agc-$2" src="$work/agc-src-$2" log
    cp -R "$agc_src" "$src"
    cmake -G "$gen" -S "$src" -B "$dir" -DCMAKE_PREFIX_PATH="$work/prefix" \
          -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
    cmake --build "$dir" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
    check_agc_outputs "$dir" "$name"
    # a second build has nothing to do
    log=$(cmake --build "$dir" 2>&1)
    if printf '%s\n' "$log" | grep -q 'agc:'; then
        printf '%s\n' "$log" >&2
        echo "$name: a second build ran agc again" >&2
        exit 1
    fi
    # touching a header the sources include runs agc again on both
    sleep 1
    touch "$src/include/smooth.h"
    log=$(cmake --build "$dir" 2>&1)
    for step in "agc: staging agc/smooth/smooth.ag.c" "agc: compiling agc/blend/blend.o"; do
        printf '%s\n' "$log" | grep -q "$step" || {
            printf '%s\n' "$log" >&2
            echo "$name: touching include/smooth.h did not run '$step'" >&2
            exit 1
        }
    done
    check_agc_outputs "$dir" "$name"
    if ldd "$dir/blend_main" | grep -i -e llvm -e clang -e 'libag\.so' >&2; then
        echo "$name: blend_main links LLVM, libclang or libag: it needs libag_rt only" >&2
        exit 1
    fi
    echo "install test: agc_stage_sources and agc_compile_aot work with $name"
}
check_agc_outputs() { # DIR NAME
    local out
    out=$("$1/smooth")
    [ "$out" = "$(printf 'smooth: [1 1]\ntraces: 1')" ] ||
        { echo "$2: smooth printed: $out" >&2; exit 1; }
    out=$("$1/blend_main")
    [ "$out" = "blend: [3 1]" ] || { echo "$2: blend_main printed: $out" >&2; exit 1; }
}

agc_build "Unix Makefiles" Make
if command -v ninja >/dev/null 2>&1; then
    agc_build Ninja Ninja
else
    echo "install test: ninja is not installed: skipped the Ninja build of agc_consumer"
fi
