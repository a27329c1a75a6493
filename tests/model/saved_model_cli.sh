#!/bin/sh
# saved_model_cli.sh EXPORT_MLP AGC_MODEL AGC_CONVERT CC CFLAGS LIBDIR COMPARE WORKDIR
#
# The saved-model workflow of docs/saved-model.md and docs/converter.md,
# end to end, with the example examples/saved_model/export_mlp.c (built
# by agc): export -> agc-model show / run / aot -> agc-convert with one
# and with two TPU functions -> the converted models run and agree with
# the original within bf16's tolerance; and the command lines' errors.
set -u
export_mlp=$1 model=$2 convert=$3 cc=$4 cflags=$5 libdir=$6 compare=$7 work=$8
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { # file needle
    grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "'$2' not in $1"; }
}

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

"$export_mlp" mlp batch.txt >export.out || fail "export_mlp failed"
expect_in export.out "saved mlp"

# show: signatures, functions, aliases, variables
"$model" show mlp >show.out || fail "agc-model show failed"
for s in "serving_default -> __inference_serve_1" "input pixels: f32[?,784]" \
         "output probabilities: f32[?,10]" "calls hidden_layers" "calls classifier" \
         "tpu_func_1 -> hidden_layers" "tpu_func_2 -> classifier" \
         "variable_1: f32[784,512], 1605632 bytes"; do
    expect_in show.out "$s"
done

# run: the model's outputs are the program's
"$model" run mlp --signature serving_default --input pixels=batch.txt --output_dir . \
    >run.out || fail "agc-model run failed"
grep '^classes' export.out >want.txt
grep '^classes' run.out >got.txt
cmp -s want.txt got.txt || fail "agc-model run's classes differ from the program's"
test -s probabilities.npy || fail "no probabilities.npy"

# aot: an object and a header; a C program linked with libag_rt only
"$model" aot mlp --signature serving_default --name classify -o classify.o \
    --header classify.h || fail "agc-model aot failed"
cat >main.c <<'C'
#include "classify.h"
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    FILE *f = fopen("batch.txt", "r");
    float *v = malloc(4 * 784 * sizeof *v);
    for (int i = 0; i < 4 * 784; i++)
        if (fscanf(f, "%f", &v[i]) != 1)
            return 1;
    fclose(f);
    classify_outputs o = classify(ag_from_data(AG_F32, AG_SHAPE(4, 784), v));
    ag_print("classes:", o.classes);
    free(v);
    ag_shutdown();
    return 0;
}
C
# shellcheck disable=SC2086
$cc $cflags main.c classify.o -L"$libdir" -lag_rt -lm -Wl,-rpath,"$libdir" -o aot_main ||
    fail "the aot object does not link with libag_rt"
./aot_main >aot.out || fail "the aot program failed"
cmp -s want.txt aot.out || fail "the aot program's classes differ"

# convert: one TPU function, then two
"$convert" --input_model_dir=mlp --output_model_dir=one \
    --converter_options_string='tpu_functions { function_alias: "tpu_func_1" }' >one.out ||
    fail "agc-convert (one TPU function) failed"
expect_in one.out "-------- Conversion Report --------"
expect_in one.out "tpu_func_1"
printf 'tpu_functions { function_alias: "tpu_func_1" }\n# the head too\ntpu_functions { function_alias: "tpu_func_2" }\nbatch_options { max_batch_size: 64 }\n' >two.pbtxt
"$convert" --input_model_dir=mlp --output_model_dir=two --converter_options=two.pbtxt \
    >two.out || fail "agc-convert (two TPU functions) failed"
expect_in two.out "tpu_func_2"
expect_in two.out "with unknown dimensions at 64"
test -s two/conversion_report.txt || fail "the report is not saved in the model"
"$model" show two >show2.out || fail "agc-model show (converted) failed"
expect_in show2.out "placement: tpu-model (on the device: hidden_layers, classifier)"
# every batch option, a row of pipeline/batch_options.def each
expect_in show2.out "batched with batch_options { num_batch_threads: 1 max_batch_size: 64 "
def=$(dirname "$0")/../../pipeline/batch_options.def # $0: CMake gives its full path
[ -f "$def" ] || fail "no $def"
for field in $(sed -n 's/^BT_OPTION(\([a-z_]*\),.*/\1/p' "$def"); do
    grep "batched with batch_options" show2.out | grep -q " $field: " ||
        { cat show2.out >&2; fail "agc-model show does not list the batch option '$field'"; }
done
expect_in show2.out "allowed_batch_sizes: [] max_enqueued_batches: 10 disable_large_batch_splitting: false }"
# the report: grammatical, and the ops it converted to bf16 by name
expect_in two.out "ops compute in bf16: "
expect_in two.out "matmul ("
# serve inlined both: its TPU nodes are batched inside its graph
expect_in two.out "batching:   1 function batched in the graph, in front of the TPU nodes"
expect_in show2.out "batched in the graph: the device scopes' nodes run on batches"
# a direct call between two TPU functions converts: serve, placed whole,
# calls hidden_layers (only an indirect call, through a function left on
# the host, is refused: tests/unit/test_converter.c)
"$convert" --input_model_dir=mlp --output_model_dir=direct \
    --converter_options_string='tpu_functions { signature_name: "serving_default" } tpu_functions { function_alias: "tpu_func_1" }' \
    >direct.out || fail "agc-convert (serve and the hidden layers it calls) failed"
expect_in direct.out "-------- Conversion Report --------"
# sharded over a 2x2 slice (xla_sharding_options): the record, the report
"$convert" --input_model_dir=mlp --output_model_dir=sharded \
    --converter_options_string='tpu_functions { signature_name: "serving_default" } xla_sharding_options { num_cores_per_replica: 4 topology: "2x2" }' \
    >sharded.out || fail "agc-convert (sharded over 2x2) failed"
expect_in sharded.out "slice:      chips: 4 mesh { x: 2 y: 2 }"
expect_in sharded.out "on 4 chips: "
expect_in sharded.out "matmul at export_mlp.c:"
"$model" show sharded >show_sharded.out || fail "agc-model show (sharded) failed"
expect_in show_sharded.out "on a slice: chips: 4 mesh { x: 2 y: 2 }"
for m in one two direct sharded; do
    "$model" run $m --signature serving_default --input pixels=batch.txt >run_$m.out ||
        fail "the converted model '$m' does not run"
    # bf16 operands through three layers and a softmax: a few percent
    python3 "$compare" run.out run_$m.out 5e-2 2e-3 || fail "'$m' disagrees with the original"
done

# errors: each a clear message and exit status 1 (2 for the command line)
check_error() { # status needle command...
    want=$1 needle=$2
    shift 2
    "$@" >err.out 2>&1
    got=$?
    [ "$got" -eq "$want" ] || { cat err.out >&2; fail "$* exited $got, not $want"; }
    expect_in err.out "$needle"
}
check_error 1 "<converter_options_string>:1:17: unknown field 'function_alia'" \
    "$convert" --input_model_dir=mlp --output_model_dir=bad \
    --converter_options_string='tpu_functions { function_alia: "x" }'
check_error 1 "the model has no function alias 'nosuch'" "$convert" --input_model_dir=mlp \
    --output_model_dir=bad --converter_options_string='tpu_functions { function_alias: "nosuch" }'
# options that convert nothing: an error saying what to add
check_error 1 "the converter options convert nothing (no tpu_functions, no batch_options): add the function to place on the TPU, e.g. 'tpu_functions { function_alias: \"tpu_func_" \
    "$convert" --input_model_dir=mlp --output_model_dir=bad --converter_options_string=''
printf '# no tpu_functions\n' >empty.pbtxt
check_error 1 "empty.pbtxt: the converter options convert nothing" \
    "$convert" --input_model_dir=mlp --output_model_dir=bad --converter_options=empty.pbtxt
test ! -e bad || fail "a failed conversion wrote its output"
check_error 2 "unknown argument" "$convert" --input_model=mlp
# the output is compared with the input by identity, not by spelling:
# each refused (status 2) naming both, and the input left as it was
ls -lR --time-style=+%s.%N mlp >before.ls
ln -s mlp link_to_mlp
mkdir holder && ln -s ../mlp holder/mlp && mkdir outer && cp -r mlp outer/m
for out in mlp ./mlp mlp/ "$PWD/mlp" link_to_mlp ./mlp/ mlp/sub ./mlp/sub/new mlp/functions \
    holder/../mlp; do
    check_error 2 "'$out' is" "$convert" --input_model_dir=mlp --output_model_dir="$out"
    expect_in err.out "must not"
    expect_in err.out "the input 'mlp'"
done
check_error 2 "must not replace a directory that holds the input model" \
    "$convert" --input_model_dir=outer/./m --output_model_dir=outer/
check_error 2 "must not be inside the input model" \
    "$convert" --input_model_dir=link_to_mlp --output_model_dir=mlp/new
ls -lR --time-style=+%s.%N mlp >after.ls
cmp -s before.ls after.ls || { diff before.ls after.ls >&2; fail "a refused output changed the input"; }
test ! -e mlp/sub || fail "a refused output wrote inside the input"
check_error 2 "unknown command" "$model" list mlp
check_error 1 "has no signature 'predict'" "$model" run mlp --signature predict
check_error 1 "has no input 'x'" "$model" run mlp --signature serving_default --input x=batch.txt
# clang's form, naming the user's names: a close one suggested, the ones
# there listed, never a source file of agc's own
check_error 1 "agc-model: error: the saved model 'mlp' has no signature 'serving_defualt'; it has 'serving_default'; did you mean 'serving_default'?" \
    "$model" run mlp --signature serving_defualt
grep -q '\.c:' err.out && fail "an agc source path in: $(cat err.out)"
check_error 1 "agc-model: error: signature 'serving_default' has no input 'pixel'; it has 'pixels'; did you mean 'pixels'?" \
    "$model" run mlp --signature serving_default --input pixel=batch.txt
check_error 1 "has no function alias 'tpu_fnc_1' (aliases: 'tpu_func_1', 'tpu_func_2'); did you mean 'tpu_func_1'?" \
    "$convert" --input_model_dir=mlp --output_model_dir=bad \
    --converter_options_string='tpu_functions { function_alias: "tpu_fnc_1" }'
head -c 1000 mlp/variables.bin >trunc.bin && cp -r mlp damaged && cp trunc.bin damaged/variables.bin
check_error 1 "damaged/variables.bin: its size is not the manifest's" "$model" show damaged
# what is not a regular file is refused without blocking (timeout: a
# regression would hang), naming the file
mkfifo fifo
for input in fifo /dev/zero; do
    check_error 1 "cannot read the input '$input': it is not a regular file" timeout 120 \
        "$model" run mlp --signature serving_default --input pixels=$input
done
check_error 1 "cannot read the converter options 'fifo': it is not a regular file" timeout 120 \
    "$convert" --input_model_dir=mlp --output_model_dir=bad --converter_options=fifo
for spec in fifo /dev/zero; do
    check_error 1 "cannot read the device spec '$spec': it is not a regular" \
        env AG_DEVICE_SPEC=$spec timeout 120 "$model" run two --signature serving_default --input pixels=batch.txt
done

# an edited function file (size and checksum made to agree) that does not
# verify is reported at its own line, not at the C line it came from
cp -r mlp edited && fn=edited/functions/__inference_serve_1.ir
sed -i '7s/add(%5, %3)/add(%5)/' "$fn"
python3 - "$fn" edited/saved_model.pbtxt <<'PY' || fail "cannot fix up the edited manifest"
import re, sys, zlib
data = open(sys.argv[1], "rb").read()
man = open(sys.argv[2]).read()
man = re.sub(r"bytes: \d+\n  checksum: \d+", "bytes: %d\n  checksum: %d" % (len(data), zlib.crc32(data)), man, count=1)
open(sys.argv[2], "w").write(man)
PY
check_error 1 "edited/functions/__inference_serve_1.ir:7:3: error: %6 (add): takes 2 operands" \
    "$model" show edited
# a representative data set (docs/quantization.md) made from .npy files
# and checked against the model's signature: each error names the file,
# the record and the input
npy() { # file shape... (f4 zeros)
    python3 - "$@" <<'PY' || fail "cannot write $1"
import struct, sys
shape = [int(d) for d in sys.argv[2:]]
n = 1
for d in shape:
    n *= d
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
h += " " * (-(11 + len(h)) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()
                              + bytes(4 * n))
PY
}
npy pixels.npy 3 2 784 && npy narrow.npy 3 1 783
"$model" dataset calib.tfrecord --input pixels=pixels.npy >ds.out 2>ds.err ||
    fail "agc-model dataset failed"
expect_in ds.out "wrote 3 samples of 1 input to calib.tfrecord"
expect_in ds.err "calib.tfrecord: 3 samples; the converter guide recommends more than 200"
"$model" dataset --show calib.tfrecord --model mlp --signature serving_default >ds.out \
    2>/dev/null || fail "agc-model dataset --show --model failed"
expect_in ds.out "samples 0-2: pixels f32[2,784]"
expect_in ds.out "every sample fits the signature 'serving_default' of mlp"
"$model" dataset image.tfrecord --input image=pixels.npy 2>/dev/null >/dev/null
check_error 1 "image.tfrecord: record 0: the signature 'serving_default' has no input 'image' (its inputs: pixels)" \
    "$model" dataset --show image.tfrecord --model mlp --signature serving_default
"$model" dataset narrow.tfrecord --input pixels=narrow.npy 2>/dev/null >/dev/null
check_error 1 "narrow.tfrecord: record 0: input 'pixels' is f32[1,783], but the signature 'serving_default' takes f32[?,784] (a wrong shape)" \
    "$model" dataset --show narrow.tfrecord --model mlp --signature serving_default
check_error 1 "serving_defualt" \
    "$model" dataset --show calib.tfrecord --model mlp --signature serving_defualt
echo "saved models: all checks passed"
