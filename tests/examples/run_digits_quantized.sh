#!/bin/sh
# run_digits_quantized.sh SERVE AGC_CONVERT AGC_MODEL DIGITS_CSV WORKDIR
#
# The digits model that run_digits.sh saved in WORKDIR/model, quantized by
# agc-convert with each method of docs/quantization.md: static range
# calibrated on a representative data set of the training images
# (serve_digits dataset), dynamic range and weights only. Passes only if
# each quantized model's test accuracy is within one point of the float
# model's, its conversion report has the quantization part with the
# argmax agreement, `agc-model show` lists what was quantized and how,
# and its variables are smaller than the float model's.
if [ $# -ne 5 ]; then
    echo "usage: $0 SERVE AGC_CONVERT AGC_MODEL DIGITS_CSV WORKDIR" >&2
    exit 2
fi
serve=$1 convert=$2 agc_model=$3 csv=$4 work=$5

fail() {
    echo "run_digits_quantized.sh: $*" >&2
    exit 1
}

[ -d "$work/model" ] || fail "no $work/model: example.digits saves it"
cd "$work" || fail "cannot enter $work"
rm -rf q && mkdir q || fail "cannot make $work/q"

"$serve" dataset "$csv" q/calib.tfrecord || fail "serve_digits dataset failed"
"$serve" accuracy "$csv" model >q/float.txt || fail "the float model did not run"
accuracy() {
    sed -n 's/^test accuracy \([0-9.]*\)%.*/\1/p' "$1"
}
float=$(accuracy q/float.txt)
[ -n "$float" ] || fail "serve_digits printed no accuracy for the float model"
echo "float: $float%"

dataset='representative_datasets { key: "serving_default" value { tfrecord_file_path: "q/calib.tfrecord" } }'
for method in STATIC_RANGE DYNAMIC_RANGE WEIGHT_ONLY; do
    out=q/$method
    printf 'external_feature_configs { quantization_options {\n  quantization_method: %s\n  %s\n} }\n' \
        "$method" "$dataset" >"q/$method.pbtxt"
    "$convert" --input_model_dir=model --converter_options="q/$method.pbtxt" \
        --output_model_dir="$out" >"q/$method.report" \
        2>&1 || fail "agc-convert $method failed: $(cat "q/$method.report")"
    grep -q '^Quantization$' "q/$method.report" || fail "$method: the report has no quantization part"
    grep -q 'argmax agrees with float on' "q/$method.report" ||
        fail "$method: the report gives no argmax agreement"
    "$agc_model" show "$out" >"q/$method.show" || fail "agc-model show $out failed"
    grep -q 'quantized (post-training):' "q/$method.show" ||
        fail "$method: agc-model show lists nothing quantized"
    "$serve" accuracy "$csv" "$out" >"q/$method.txt" || fail "the $method model did not run"
    a=$(accuracy "q/$method.txt")
    echo "$method: $a%"
    awk -v a="$a" -v f="$float" 'BEGIN { d = a - f; exit !(d <= 1 && d >= -1) }' ||
        fail "$method: test accuracy $a% is not within one point of float's $float%"
    before=$(wc -c <model/variables.bin) after=$(wc -c <"$out/variables.bin")
    [ "$after" -lt "$before" ] ||
        fail "$method: variables.bin is $after bytes, not smaller than float's $before"
done
echo "passed"
