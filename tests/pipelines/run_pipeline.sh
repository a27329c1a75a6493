#!/bin/sh
# run_pipeline.sh SPEC EXPECTED_DIR PROGRAM...
# Runs each staged program with AG_PASSES=SPEC (the pipeline every traced
# function goes through) and compares its stdout with EXPECTED_DIR/<name>.expected.
# No default pass may change a result, so every pipeline must match.
spec=$1 expected_dir=$2
shift 2
failed=0
for program in "$@"; do
  name=$(basename "$program" | sed -e 's/^e2e_//' -e 's/_staged$//')
  want="$expected_dir/$name.expected"
  if ! got=$(AG_PASSES="$spec" "$program" 2>&1); then
    echo "$name: exited with an error under AG_PASSES=$spec:" >&2
    echo "$got" | tail -5 >&2
    failed=1
    continue
  fi
  if ! printf '%s\n' "$got" | diff -u "$want" - >/dev/null; then
    echo "$name: output differs under AG_PASSES=$spec:" >&2
    printf '%s\n' "$got" | diff -u "$want" - | head -20 >&2
    failed=1
  fi
done
[ $failed = 0 ] && echo "AG_PASSES=$spec: $# programs match their expected output"
exit $failed
