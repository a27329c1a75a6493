#!/bin/sh
# build_and_run.sh SECONDS [WORKDIR]
#
# Builds the libFuzzer target fuzz_agc.c with agc's frontend (clang-19,
# -fsanitize=fuzzer,address,undefined, linked with libclang) and fuzzes the
# conversion for SECONDS seconds, starting from every C file of the tests
# and examples. Fails (status 1) when libFuzzer finds a crash, a hang
# (-timeout=10 s an input), a leak or an out-of-memory; the input that did
# it is in WORKDIR/artifacts/, and a run of `WORKDIR/fuzz_agc FILE`
# reproduces it. WORKDIR (default build-fuzz/ in the source tree) keeps the
# corpus libFuzzer grows, so later runs start from it.
#
# Environment: CC (default clang-19), LLVM_DIR (default /usr/lib/llvm-19),
# FUZZ_JOBS (compile jobs, default 2).
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 SECONDS [WORKDIR]" >&2
    exit 2
fi
seconds=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-$root/build-fuzz}
cc=${CC:-clang-19}
llvm=${LLVM_DIR:-/usr/lib/llvm-19}
jobs=${FUZZ_JOBS:-2}

mkdir -p "$work/obj" "$work/corpus" "$work/seeds" "$work/artifacts"
work=$(cd "$work" && pwd)

# ------------------------------------------------------------------ build
if ! command -v "$cc" >/dev/null; then
    echo "$0: cannot find $cc (Debian: apt-get install clang-19)" >&2
    exit 2
fi
resource=$("$cc" -print-resource-dir)
if ! ls "$resource"/lib/*/libclang_rt.fuzzer*.a >/dev/null 2>&1; then
    echo "$0: $cc has no libFuzzer runtime (Debian: apt-get install libclang-rt-19-dev)" >&2
    exit 2
fi
cflags="-std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE
  -I$llvm/include -I$root/frontend"
objs=""
pids=""
n=0
for src in "$root"/frontend/*.c "$here/fuzz_agc.c"; do
    name=$(basename "$src" .c)
    # the conversion only: driver.c's main() is libFuzzer's, and build.c
    # and header.c (ahead of time, which links libag) are the driver's
    case $name in driver | build | header) continue ;; esac
    obj="$work/obj/$name.o"
    objs="$objs $obj"
    # shellcheck disable=SC2086
    "$cc" $cflags -DAGC_RUNTIME_INCLUDE_DIR="\"$root/runtime/include\"" \
        -DAGC_CLANG_RESOURCE_DIR="\"$resource\"" -DFUZZ_INCLUDE_DIR="\"$root/tests/e2e\"" \
        -c "$src" -o "$obj" &
    pids="$pids $!"
    n=$((n + 1))
    if [ $((n % jobs)) -eq 0 ]; then
        for p in $pids; do wait "$p"; done
        pids=""
    fi
done
for p in $pids; do wait "$p"; done
# shellcheck disable=SC2086
"$cc" -fsanitize=fuzzer,address,undefined $objs -L"$llvm/lib" -lclang \
    -Wl,-rpath,"$llvm/lib" -o "$work/fuzz_agc"

# ------------------------------------------------------------------- run
rm -f "$work"/seeds/*
i=0
for f in "$root"/tests/e2e/*.c "$root"/tests/e2e/errors/*.c "$root"/tests/lit/frontend/*.c \
    "$root"/examples/*.c; do
    [ -f "$f" ] || continue
    i=$((i + 1))
    cp "$f" "$work/seeds/$i-$(basename "$f")"
done
rm -f "$work"/artifacts/*
cd "$work"
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    ./fuzz_agc -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -detect_leaks=1 \
    -max_len=8192 -dict="$here/agc.dict" -artifact_prefix="$work/artifacts/" \
    -print_final_stats=1 "$work/corpus" "$work/seeds" || status=$?
found=$(ls "$work/artifacts" | wc -l)
if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz_agc: libFuzzer found a problem (status $status); inputs in $work/artifacts:" >&2
    ls -l "$work/artifacts" >&2
    exit 1
fi
echo "fuzz_agc: no crash, hang or leak in $seconds s"
