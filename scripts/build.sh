#!/usr/bin/env bash
# scripts/build.sh - one entry point for a fresh Debian machine or a dev tree.
#
#   bash scripts/build.sh demo    install what is missing, build, run the main job:
#                                 agc converts an example, both builds run; then
#                                 the other examples, an MLP on the TPU-model,
#                                 and an MLP trained on scikit-learn's digits
#   bash scripts/build.sh test    install what is missing, build, run every test
#                                 (the normal build and the ASan+UBSan build),
#                                 the threading tests under ThreadSanitizer,
#                                 then fuzz agc, agc-opt's IR reader, the
#                                 converter's options, the saved model's
#                                 manifest and its loader for AG_FUZZ_SECONDS
#                                 (60) in all
#   bash scripts/build.sh deps    only install what is missing (and get the
#                                 digits data set: scripts/get_digits.sh)
#   bash scripts/build.sh build   only configure and build (build/)
#
# Both `demo` and `test` work on their own, in either order. .ci/run runs
# `test`. Environment: AG_JOBS (parallel jobs, default: nproc),
# AG_BUILD_DIR (default: build), AG_SKIP_DEPS=1 to skip the package step,
# AG_DATA_DIR (default: $AG_BUILD_DIR/data) where digits.csv goes, one
# file for every build tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
jobs=${AG_JOBS:-$(nproc 2>/dev/null || echo 2)}
build_dir=${AG_BUILD_DIR:-build}
asan_dir=${build_dir}-asan
data_dir=${AG_DATA_DIR:-$build_dir/data}
case "$data_dir" in /*) ;; *) data_dir=$here/$data_dir ;; esac

# Debian bookworm packages the project needs (pinned stack: LLVM/clang 19).
# chromium is a test dependency: tpu.timeline_picture opens the TPU-model's
# timeline picture in headless Chromium (and fails without it).
packages=(
  build-essential cmake make pkg-config python3
  clang-19 libclang-19-dev llvm-19-dev llvm-19-tools libclang-rt-19-dev
  libcmocka-dev libopenblas-dev
  chromium
)

say() { printf '\n== %s\n' "$*"; }

install_deps() {
  [ "${AG_SKIP_DEPS:-0}" = 1 ] && return 0
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# scikit-learn's digits, from Debian's python3-sklearn package without
# installing it (examples/digits trains on it; its test needs it).
get_data() {
  [ -s "$data_dir/digits.csv" ] && return 0
  say "getting scikit-learn's digits into $data_dir (scripts/get_digits.sh)"
  bash scripts/get_digits.sh "$data_dir"
}

configure_and_build() { # dir, extra cmake args...
  local dir=$1; shift
  say "building $dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DAG_DIGITS_CSV="$data_dir/digits.csv" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# The main job: agc converts an example into staged C, then the same source
# runs eagerly (plain cc) and staged (agc's output), and both outputs show.
run_demo() {
  local out="$build_dir/demo" ex=fizzbuzz
  local cflags=(-std=c11 -O2 -Iruntime/include)
  local libs=(-L"$build_dir/runtime" -Wl,-rpath,"$here/$build_dir/runtime" -lag -lm)
  mkdir -p "$out"
  say "agc examples/$ex.c -o $out/$ex.ag.c"
  "$build_dir/frontend/agc" "examples/$ex.c" -o "$out/$ex.ag.c"
  say "the staged C agc wrote for fizzbuzz (the AG_FUNCTION's loop and branches; #line lines hidden)"
  sed -n '/^struct fizzbuzz__/,/^static void fizzbuzz__trace/p' "$out/$ex.ag.c" | grep -v '^#line'
  cc "${cflags[@]}" "examples/$ex.c" "${libs[@]}" -o "$out/$ex.eager"
  cc "${cflags[@]}" "$out/$ex.ag.c" "${libs[@]}" -o "$out/$ex.staged"
  say "eager run (cc examples/$ex.c -lag)"
  "$out/$ex.eager" | tee "$out/$ex.eager.txt" | head -n 12
  say "staged run (traced into a graph once per signature)"
  "$out/$ex.staged" | tee "$out/$ex.staged.txt" | head -n 12
  if cmp -s "$out/$ex.eager.txt" "$out/$ex.staged.txt"; then
    echo "(both runs printed the same $(wc -l <"$out/$ex.eager.txt") lines)"
  else
    echo "eager and staged outputs differ:" >&2
    diff "$out/$ex.eager.txt" "$out/$ex.staged.txt" >&2
    exit 1
  fi
  say "the other examples, staged"
  for ex in simple_relu power squash mlp conv2d; do
    printf -- '--- examples/%s.c\n' "$ex"
    "$build_dir/frontend/agc" "examples/$ex.c" -o "$out/$ex.ag.c"
    cc "${cflags[@]}" "$out/$ex.ag.c" "${libs[@]}" -o "$out/$ex.staged"
    "$out/$ex.staged"
  done
  say "examples/tpu/mlp.c on the CPU, then on the simulated TPU with its profile"
  "$build_dir/frontend/agc" examples/tpu/mlp.c -o "$out/tpu_mlp.ag.c"
  cc "${cflags[@]}" "$out/tpu_mlp.ag.c" "${libs[@]}" -o "$out/tpu_mlp"
  "$out/tpu_mlp"
  AG_TARGET=tpu-model AG_PROFILE=1 "$out/tpu_mlp" 2>&1
  say "examples/saved_model: a classifier saved as a model, converted for the TPU-model"
  "$build_dir/frontend/agc" examples/saved_model/export_mlp.c -o "$out/export_mlp.ag.c"
  cc "${cflags[@]}" "$out/export_mlp.ag.c" "${libs[@]}" -o "$out/export_mlp"
  rm -rf "$out/mlp_model" "$out/mlp_tpu"
  "$out/export_mlp" "$out/mlp_model" "$out/batch.txt"
  "$build_dir/bin/agc-convert" --input_model_dir="$out/mlp_model" \
    --output_model_dir="$out/mlp_tpu" --converter_options_string='
      tpu_functions { function_alias: "tpu_func_1" }
      tpu_functions { function_alias: "tpu_func_2" }
      batch_options { max_batch_size: 64 }'
  say "the converted model, run by agc-model on the batch the program ran"
  "$build_dir/bin/agc-model" run "$out/mlp_tpu" --signature serving_default \
    --input pixels="$out/batch.txt"
  say "examples/digits: an MLP trained on scikit-learn's digits (one AG_FUNCTION per step), then saved"
  "$build_dir/frontend/agc" examples/digits/train_digits.c -o "$out/train_digits.ag.c"
  cc "${cflags[@]}" -Iexamples/digits "$out/train_digits.ag.c" examples/digits/digits_data.c \
    "${libs[@]}" -o "$out/train_digits"
  rm -rf "$out/digits_model"
  "$out/train_digits" "$data_dir/digits.csv" "$out/digits_model"
  "$build_dir/bin/agc-model" show "$out/digits_model" | head -n 12
}

run_tests() { # dir
  say "testing $1"
  ctest --test-dir "$1" --output-on-failure -j "$jobs"
}

# The threading tests under ThreadSanitizer: the batching scheduler on the
# cpu, reference and tpu-model targets, and concurrent first calls and
# compiles; tiered execution (calls while a compile runs in the
# background, eviction and ag_shutdown during one); converted models
# batched in the graph (threads calling a model whose TPU nodes run on
# batches); compiled code (parallel loops, a lookup loop's table built by
# one of several racing first calls, concurrent compiles). TSan's reports
# fail the run (exit status 66).
run_tsan_tests() { # dir
  local dir=$1
  say "building the threading tests with ThreadSanitizer in $dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAG_TSAN=ON -DAG_BUILD_BENCH=OFF \
    -DAG_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$dir" -j "$jobs" --target test_batch test_tiered test_converter test_backend \
    test_tpu_chips
  # OpenBLAS is not instrumented either: how its own threads hand a
  # product's blocks to each other is invisible to TSan, which then reports
  # their writes into our buffers as races (an 80x80 sgemm on a 2-CPU AMD
  # host does). These runs check agc's threads, so OpenBLAS runs in one.
  local -x OPENBLAS_NUM_THREADS=1
  say "testing the batching scheduler under ThreadSanitizer"
  local target
  for target in cpu reference tpu-model; do
    echo "-- AG_TARGET=$target"
    TSAN_OPTIONS=halt_on_error=1 AG_TARGET=$target "$dir/tests/test_batch"
  done
  say "testing tiered execution under ThreadSanitizer"
  TSAN_OPTIONS=halt_on_error=1 "$dir/tests/test_tiered"
  say "testing converted models batched in the graph under ThreadSanitizer"
  TSAN_OPTIONS=halt_on_error=1 "$dir/tests/test_converter"
  say "testing compiled code (parallel loops, lookup tables built by racing first calls, concurrent compiles) under ThreadSanitizer"
  TSAN_OPTIONS=halt_on_error=1 "$dir/tests/test_backend"
  say "testing a TPU slice's chips simulated on threads under ThreadSanitizer"
  TSAN_OPTIONS=halt_on_error=1 "$dir/tests/test_tpu_chips"
}

cmd=${1:-demo}
case "$cmd" in
  deps) install_deps; get_data ;;
  build) install_deps; get_data; configure_and_build "$build_dir" ;;
  demo) install_deps; get_data; configure_and_build "$build_dir"; run_demo ;;
  test)
    install_deps
    get_data
    configure_and_build "$build_dir"
    run_tests "$build_dir"
    configure_and_build "$asan_dir" -DAG_SANITIZE=ON -DAG_BUILD_BENCH=OFF
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
      run_tests "$asan_dir"
    run_tsan_tests "${build_dir}-tsan"
    say "fuzzing agc's conversion, the IR reader, the converter's options and the saved-model reader for ${AG_FUZZ_SECONDS:-60} s (libFuzzer, ASan+UBSan, leaks)"
    bash tests/fuzz/build_and_run.sh "${AG_FUZZ_SECONDS:-60}" "$build_dir-fuzz"
    ;;
  *) echo "usage: bash scripts/build.sh [demo|test|deps|build]" >&2; exit 2 ;;
esac
