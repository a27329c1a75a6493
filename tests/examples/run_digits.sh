#!/bin/sh
# run_digits.sh STAGED EAGER AGC_MODEL DIGITS_CSV WORKDIR
#
# examples/digits/train_digits.c trained both ways on scikit-learn's
# digits (scripts/get_digits.sh). Passes only if:
#   - the staged build (agc) prints a progress line per epoch whose loss
#     falls (the last below a quarter of the first), a test accuracy of
#     at least 95%, and saves a model that `agc-model show` reads, with
#     its serving_default signature over `predict`;
#   - the eager build (cc) reaches at least 95% too, within one point of
#     the staged build (they differ only by float summation order), and
#     says it saved nothing.
# The outputs and the model stay in WORKDIR.
if [ $# -ne 5 ]; then
    echo "usage: $0 STAGED EAGER AGC_MODEL DIGITS_CSV WORKDIR" >&2
    exit 2
fi
staged=$1 eager=$2 agc_model=$3 csv=$4 work=$5

fail() {
    echo "run_digits.sh: $*" >&2
    exit 1
}

[ -s "$csv" ] || fail "no $csv: run bash scripts/get_digits.sh $(dirname "$csv")"
rm -rf "$work" && mkdir -p "$work" || fail "cannot make $work"

"$staged" "$csv" "$work/model" >"$work/staged.txt" ||
    fail "the staged build failed (its output: $work/staged.txt)"
"$eager" "$csv" "$work/eager_model" >"$work/eager.txt" ||
    fail "the eager build failed (its output: $work/eager.txt)"
cat "$work/staged.txt"

# N of the line "test accuracy N% (...)" of file $1.
accuracy() {
    sed -n 's/^test accuracy \([0-9.]*\)%.*/\1/p' "$1"
}

for kind in staged eager; do
    a=$(accuracy "$work/$kind.txt")
    [ -n "$a" ] || fail "the $kind build printed no test accuracy"
    awk -v a="$a" 'BEGIN { exit !(a >= 95) }' || fail "$kind: test accuracy $a% < 95%"
done
awk -v s="$(accuracy "$work/staged.txt")" -v e="$(accuracy "$work/eager.txt")" \
    'BEGIN { d = s - e; exit !(d <= 1 && d >= -1) }' ||
    fail "staged and eager test accuracies differ by more than one point"

epochs=$(grep -c '^epoch ' "$work/staged.txt")
[ "$epochs" -ge 2 ] || fail "the staged build printed $epochs epoch lines"
first=$(sed -n 's/^epoch *1  loss \([0-9.]*\) .*/\1/p' "$work/staged.txt")
last=$(grep '^epoch ' "$work/staged.txt" | tail -n 1 | sed 's/.*loss \([0-9.]*\) .*/\1/')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 0 && l < f / 4) }' ||
    fail "the loss did not fall: epoch 1 $first, last epoch $last"

grep -q "^saved $work/model\$" "$work/staged.txt" || fail "the staged build saved no model"
grep -q '^not saved: the eager build' "$work/eager.txt" ||
    fail "the eager build did not say that it saves nothing"
[ ! -e "$work/eager_model" ] || fail "the eager build wrote $work/eager_model"
"$agc_model" show "$work/model" >"$work/show.txt" || fail "agc-model show $work/model failed"
grep -q 'serving_default' "$work/show.txt" && grep -q 'predict' "$work/show.txt" ||
    fail "agc-model show lists no serving_default signature over predict: $work/show.txt"
echo "staged $(accuracy "$work/staged.txt")%, eager $(accuracy "$work/eager.txt")%: passed"
