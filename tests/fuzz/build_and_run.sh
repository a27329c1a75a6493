#!/bin/sh
# build_and_run.sh SECONDS [WORKDIR]
#
# Builds six libFuzzer targets with clang-19 (-fsanitize=fuzzer,address,
# undefined) and fuzzes them one after the other, SECONDS in all:
#
#   fuzz_agc                 agc's conversion (fuzz_agc.c over frontend/,
#                            linked with libclang), seeded with every C file
#                            of the tests and examples;
#   fuzz_ir                  the IR's text form as agc-opt reads it
#                            (fuzz_ir.c: ir_parse, ir_verify, and the printed
#                            form read back), seeded with the .ir files of
#                            tests/lit;
#   fuzz_converter_options   the converter's options (converter/options.c
#                            over support/textproto.c and
#                            support/options_table.c, printed and read
#                            back), seeded with converter_options_seed.txtpb
#                            and the TPU device spec (the same text format);
#   fuzz_manifest            a saved model's manifest (model/manifest.c,
#                            printed and read back), seeded with
#                            manifest_seed.pbtxt;
#   fuzz_model_load          ag_saved_model_load on a model one of whose
#                            files is the input (fuzz_model_load.c: all of
#                            libag), then a call of its signature; seeded
#                            with the files of the tiny model it saves;
#   fuzz_dataset             a representative data set (fuzz_dataset.c:
#                            model/dataset.c over support/tfrecord.c and
#                            protowire.c), the input read as a TFRecord
#                            file and as one record's sample, written
#                            again and read back; seeded with the samples
#                            it writes.
#
# The budget: what is left of SECONDS after building the other five (at
# least half of SECONDS) is split: fuzz_ir 10%, fuzz_converter_options 5%,
# fuzz_manifest 5%, fuzz_model_load 15%, fuzz_dataset 5%, fuzz_agc the
# rest. So the step
# lasts about as long as when it fuzzed agc alone, unless building takes
# more than half of SECONDS (about 40 s of two cores: with the default 60
# the step takes about 10 s more).
#
# Fails (status 1) when libFuzzer finds a crash, a hang (-timeout=10 s an
# input), a leak or an out-of-memory in any target; the input that did it
# is WORKDIR/artifacts/<target>-crash-... (or -timeout-, -leak-, -oom-),
# and a run of `WORKDIR/<target> FILE` reproduces it. WORKDIR (default
# build-fuzz/ in the source tree) keeps the corpora libFuzzer grows
# (corpus/ for fuzz_agc, corpus-ir/, corpus-converter-options/), so later
# runs start from them (and corpus-manifest/, corpus-model-load/,
# corpus-dataset/).
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

mkdir -p "$work/obj" "$work/artifacts"
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
  -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE"
sanitize="-fsanitize=fuzzer,address,undefined"

# compile SRC OBJ [FLAGS...]: in the background, FUZZ_JOBS at a time;
# compiled_all waits for the rest.
pids=""
n=0
compile() {
    src=$1
    obj=$2
    shift 2
    # shellcheck disable=SC2086
    "$cc" $cflags "$@" -c "$src" -o "$obj" &
    pids="$pids $!"
    n=$((n + 1))
    if [ $((n % jobs)) -eq 0 ]; then
        compiled_all
    fi
}
compiled_all() {
    for p in $pids; do wait "$p"; done
    pids=""
}

# fuzz_agc: the conversion only: driver.c's main() is libFuzzer's, and
# build.c and header.c (ahead of time, which links libag) are the driver's;
# it is linked below, with the runtime and the IR's core (the signature
# parser).
agc_objs=""
for src in "$root"/frontend/*.c "$root"/support/file_id.c "$here/fuzz_agc.c"; do
    name=$(basename "$src" .c)
    case $name in driver | build | header) continue ;; esac
    obj="$work/obj/$name.o"
    agc_objs="$agc_objs $obj"
    compile "$src" "$obj" -I"$llvm/include" -I"$root/frontend" -I"$root/support" \
        -I"$root/ir" -I"$root/runtime/include" -I"$root/runtime/core" \
        -DAGC_RUNTIME_INCLUDE_DIR="\"$root/runtime/include\"" \
        -DAGC_CLANG_RESOURCE_DIR="\"$resource\"" -DFUZZ_INCLUDE_DIR="\"$root/tests/e2e\""
done
compiled_all

# fuzz_ir and fuzz_converter_options: the runtime and the IR's core (what
# libag_rt holds of them, with support/suggest.c), the text-format reader
# and the options.
build_start=$(date +%s)
layers="-I$root/runtime/include -I$root/runtime/core -I$root/runtime/kernels
  -I$root/runtime/autodiff -I$root/ir
  -I$root/backend -I$root/converter -I$root/support -I$root/pipeline"
core_objs=""
for src in "$root"/runtime/core/*.c "$root"/runtime/kernels/*.c "$root"/runtime/api/*.c \
    "$root"/runtime/autodiff/*.c "$root"/ir/ir.c "$root"/ir/print.c "$root"/ir/parse.c \
    "$root"/ir/verify.c "$root"/ir/signature.c "$root"/support/suggest.c; do
    obj="$work/obj/core-$(basename "$(dirname "$src")")-$(basename "$src" .c).o"
    core_objs="$core_objs $obj"
    # (clang, unlike gcc, warns about the unused static inline functions
    # the kernels' macros define)
    # shellcheck disable=SC2086
    compile "$src" "$obj" $layers -Wno-unused-function
done
options_objs=""
# (the options' topology is a TopologyProto: topology.c over protowire.c)
for src in "$root"/support/textproto.c "$root"/support/options_table.c \
    "$root"/support/words.c "$root"/support/file_read.c "$root"/support/file_id.c \
    "$root"/support/topology.c "$root"/support/protowire.c "$root"/converter/options*.c; do
    obj="$work/obj/options-$(basename "$src" .c).o"
    options_objs="$options_objs $obj"
    # shellcheck disable=SC2086
    compile "$src" "$obj" $layers
done
# shellcheck disable=SC2086
compile "$here/fuzz_ir.c" "$work/obj/fuzz_ir.o" $layers
# shellcheck disable=SC2086
compile "$here/fuzz_converter_options.c" "$work/obj/fuzz_converter_options.o" $layers
compiled_all
libs="-lopenblas -lm -lpthread"
# (fuzz_agc: the conversion checks AG_SIGNATURE with ir/signature.c)
# shellcheck disable=SC2086
"$cc" $sanitize $agc_objs $core_objs -L"$llvm/lib" -lclang -Wl,-rpath,"$llvm/lib" $libs \
    -o "$work/fuzz_agc"
# shellcheck disable=SC2086
"$cc" $sanitize "$work/obj/fuzz_ir.o" $core_objs $libs -o "$work/fuzz_ir"
# shellcheck disable=SC2086
"$cc" $sanitize "$work/obj/fuzz_converter_options.o" $options_objs $core_objs $libs \
    -o "$work/fuzz_converter_options"

# fuzz_manifest: the manifest's schema and printer over the text-format
# reader.
model_layers="$layers -I$root/model -I$root/pipeline -I$root/passes"
# shellcheck disable=SC2086
compile "$root/model/manifest.c" "$work/obj/model-manifest.o" $model_layers
# shellcheck disable=SC2086
compile "$here/fuzz_manifest.c" "$work/obj/fuzz_manifest.o" $model_layers
compiled_all
"$cc" $sanitize "$work/obj/fuzz_manifest.o" "$work/obj/model-manifest.o" \
    "$work/obj/options-textproto.o" "$work/obj/options-options_table.o" \
    "$work/obj/options-file_read.o" "$work/obj/core-support-suggest.o" -lm \
    -o "$work/fuzz_manifest"

# fuzz_model_load: loading and calling reach every layer of libag (the
# reference target runs the calls, but the pipeline links them all; the
# model layer's data sets need support/'s TFRecord and wire format).
lib_objs=""
for src in "$root"/ir/trace.c "$root"/ir/staged.c "$root"/ir/staged_grad.c "$root"/ir/loop_grad.c "$root"/ir/replay.c "$root"/ir/split.c "$root"/ir/liveness.c "$root"/ir/exec.c \
    "$root"/passes/*.c "$root"/backend/target.c "$root"/backend/reference/*.c \
    "$root"/backend/cpu/*.c "$root"/backend/tpu/*.c "$root"/pipeline/*.c "$root"/model/*.c \
    "$root"/converter/empty.c "$root"/converter/select.c "$root"/converter/report.c "$root"/converter/convert.c \
    "$root"/converter/error.c "$root"/converter/calibrate.c "$root"/converter/quantize.c \
    "$root"/converter/quantize_apply.c "$root"/converter/agreement.c "$root"/converter/shard.c \
    "$root"/support/crc32c.c "$root"/support/tfrecord.c; do
    name=$(basename "$src" .c)
    case $name in manifest) continue ;; esac
    obj="$work/obj/lib-$(basename "$(dirname "$src")")-$name.o"
    lib_objs="$lib_objs $obj"
    # shellcheck disable=SC2086
    compile "$src" "$obj" $model_layers -I"$root/backend/cpu" -I"$root/backend/tpu" \
        -isystem "$llvm/include" -Wno-unused-function
done
# shellcheck disable=SC2086
compile "$here/fuzz_model_load.c" "$work/obj/fuzz_model_load.o" $model_layers
# shellcheck disable=SC2086
compile "$here/fuzz_dataset.c" "$work/obj/fuzz_dataset.o" $model_layers
compiled_all
# shellcheck disable=SC2086
"$cc" $sanitize "$work/obj/fuzz_model_load.o" $lib_objs "$work/obj/model-manifest.o" \
    $options_objs $core_objs -L"$llvm/lib" -lLLVM -Wl,-rpath,"$llvm/lib" $libs -ldl \
    -o "$work/fuzz_model_load"
# fuzz_dataset: the data sets make tensors, so it links libag as well.
# shellcheck disable=SC2086
"$cc" $sanitize "$work/obj/fuzz_dataset.o" $lib_objs "$work/obj/model-manifest.o" \
    $options_objs $core_objs -L"$llvm/lib" -lLLVM -Wl,-rpath,"$llvm/lib" $libs -ldl \
    -o "$work/fuzz_dataset"
build_seconds=$(($(date +%s) - build_start))

# ------------------------------------------------------------------- time
# What is left of SECONDS after building (at least half of it), split.
fuzz_seconds=$((seconds - build_seconds))
[ "$fuzz_seconds" -ge $((seconds / 2)) ] || fuzz_seconds=$((seconds / 2))
ir_seconds=$((fuzz_seconds / 10))
options_seconds=$((fuzz_seconds / 20))
manifest_seconds=$((fuzz_seconds / 20))
model_seconds=$((fuzz_seconds * 15 / 100))
dataset_seconds=$((fuzz_seconds / 20))
[ "$ir_seconds" -ge 1 ] || ir_seconds=1
[ "$options_seconds" -ge 1 ] || options_seconds=1
[ "$manifest_seconds" -ge 1 ] || manifest_seconds=1
[ "$model_seconds" -ge 1 ] || model_seconds=1
[ "$dataset_seconds" -ge 1 ] || dataset_seconds=1
agc_seconds=$((fuzz_seconds - ir_seconds - options_seconds - manifest_seconds - model_seconds
    - dataset_seconds))
[ "$agc_seconds" -ge 1 ] || agc_seconds=1
echo "fuzzing for $seconds s: fuzz_agc $agc_seconds s, fuzz_ir $ir_seconds s," \
    "fuzz_converter_options $options_seconds s, fuzz_manifest $manifest_seconds s," \
    "fuzz_model_load $model_seconds s, fuzz_dataset $dataset_seconds s" \
    "(building the last five took $build_seconds s)"

# ------------------------------------------------------------------- run
rm -f "$work"/artifacts/*
failed=""

# seed DIR FILES...: DIR holds exactly copies of FILES (numbered, as
# names repeat across folders).
seed() {
    dir=$1
    shift
    mkdir -p "$dir"
    rm -f "$dir"/*
    i=0
    for f in "$@"; do
        [ -f "$f" ] || continue
        i=$((i + 1))
        cp "$f" "$dir/$i-$(basename "$f")"
    done
}

# fuzz TARGET SECONDS MAX_LEN DICT CORPUS SEEDS
fuzz() {
    target=$1
    status=0
    (cd "$work" &&
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
            "./$target" -max_total_time="$2" -timeout=10 -rss_limit_mb=4096 -detect_leaks=1 \
            -max_len="$3" -dict="$4" -artifact_prefix="$work/artifacts/$target-" \
            -print_final_stats=1 "$5" "$6") || status=$?
    if [ "$status" -ne 0 ] || ls "$work/artifacts/$target-"* >/dev/null 2>&1; then
        echo "$target: libFuzzer found a problem (status $status)" >&2
        failed="$failed $target"
    else
        echo "$target: no crash, hang or leak in $2 s"
    fi
}

seed "$work/seeds" "$root"/tests/e2e/*.c "$root"/tests/e2e/errors/*.c \
    "$root"/tests/lit/frontend/*.c "$root"/examples/*.c
mkdir -p "$work/corpus"
fuzz fuzz_agc "$agc_seconds" 8192 "$here/agc.dict" "$work/corpus" "$work/seeds"

seed "$work/seeds-ir" "$root"/tests/lit/ir/*.ir "$root"/tests/lit/passes/*.ir
mkdir -p "$work/corpus-ir"
fuzz fuzz_ir "$ir_seconds" 8192 "$here/ir.dict" "$work/corpus-ir" "$work/seeds-ir"

seed "$work/seeds-converter-options" "$here/converter_options_seed.txtpb" \
    "$root/backend/tpu/v5e.textproto"
mkdir -p "$work/corpus-converter-options"
fuzz fuzz_converter_options "$options_seconds" 4096 "$here/converter_options.dict" \
    "$work/corpus-converter-options" "$work/seeds-converter-options"

seed "$work/seeds-manifest" "$here/manifest_seed.pbtxt"
mkdir -p "$work/corpus-manifest"
fuzz fuzz_manifest "$manifest_seconds" 8192 "$here/manifest.dict" "$work/corpus-manifest" \
    "$work/seeds-manifest"

# The seeds of fuzz_model_load are the files of the model it saves; its
# inputs are manifests and text IR.
rm -rf "$work/seeds-model-load"
(cd "$work" && FUZZ_MODEL_LOAD_SEEDS="$work/seeds-model-load" ./fuzz_model_load)
cat "$here/manifest.dict" "$here/ir.dict" >"$work/model-load.dict"
mkdir -p "$work/corpus-model-load"
fuzz fuzz_model_load "$model_seconds" 8192 "$work/model-load.dict" "$work/corpus-model-load" \
    "$work/seeds-model-load"

# The seeds of fuzz_dataset are the samples it writes (a record's bytes).
rm -rf "$work/seeds-dataset" && mkdir -p "$work/seeds-dataset"
(cd "$work" && FUZZ_DATASET_SEEDS="$work/seeds-dataset" ./fuzz_dataset 2>/dev/null)
mkdir -p "$work/corpus-dataset"
fuzz fuzz_dataset "$dataset_seconds" 4096 "$here/dataset.dict" "$work/corpus-dataset" \
    "$work/seeds-dataset"

if [ -n "$failed" ]; then
    echo "fuzzing failed:$failed; the inputs are in $work/artifacts:" >&2
    ls -l "$work/artifacts" >&2
    exit 1
fi
echo "fuzzing: no crash, hang or leak in $seconds s"
