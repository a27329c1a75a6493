#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a program
# against it twice: with pkg-config and with find_package(ag).
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)/consumer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
expected="y = [[0 0] [5 12]]"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/ag.h"
libdir=$(ls -d "$work"/prefix/lib*/ | head -n 1)

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$src_dir/hello.c" $(pkg-config --cflags --libs ag) -Wl,-rpath,"$libdir" \
   -o "$work/hello-pc"
out=$("$work/hello-pc")
[ "$out" = "$expected" ] || { echo "pkg-config build printed: $out" >&2; exit 1; }

# CMake package
cmake -S "$src_dir" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
out=$("$work/cmake-build/hello")
[ "$out" = "$expected" ] || { echo "find_package build printed: $out" >&2; exit 1; }
echo "install test: pkg-config and find_package(ag) consumers both print: $out"
