#!/usr/bin/env bash
# scripts/get_digits.sh DESTDIR - scikit-learn's digits data set as DESTDIR/digits.csv
#
# examples/digits/ trains on it: 1,797 8x8 images of handwritten digits,
# one per line, 64 pixel values 0..16 then the label 0..9, comma-separated.
# Debian's python3-sklearn package ships it as digits.csv.gz; this script
# downloads that package (apt-get download, without installing it or
# Python), takes out just that file and decompresses it. It does nothing
# when DESTDIR/digits.csv is already there, and fails with a message when
# the package cannot be had (no network, no apt). scripts/build.sh runs it;
# CMake's AG_DIGITS_CSV names the file the build uses.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: bash scripts/get_digits.sh DESTDIR" >&2
  exit 2
fi
dest=$1
out="$dest/digits.csv"
[ -s "$out" ] && exit 0

fail() {
  echo "get_digits.sh: $*" >&2
  echo "get_digits.sh: examples/digits needs digits.csv from Debian's python3-sklearn package" >&2
  exit 1
}

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
  fail "apt-get and dpkg-deb are needed to download and unpack python3-sklearn"
mkdir -p "$dest" || fail "cannot create $dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt downloads as its user _apt when it can: let _apt write here (a
# private directory, removed at exit).
chmod 777 "$tmp"

# Empty package lists (a fresh container) know no package: update them once.
sudo=""
[ "$(id -u)" = 0 ] || ! command -v sudo >/dev/null || sudo=sudo
if ! apt-cache show python3-sklearn >/dev/null 2>&1; then
  $sudo apt-get update -q >&2 || fail "apt-get update failed"
fi
(cd "$tmp" && apt-get download -q python3-sklearn >&2) ||
  fail "apt-get download python3-sklearn failed"

member='*/sklearn/datasets/data/digits.csv.gz'
dpkg-deb --fsys-tarfile "$tmp"/python3-sklearn_*.deb |
  tar -x -C "$tmp" --wildcards "$member" ||
  fail "python3-sklearn has no sklearn/datasets/data/digits.csv.gz"
gz=$(find "$tmp" -name digits.csv.gz -print -quit)
[ -n "$gz" ] || fail "python3-sklearn has no sklearn/datasets/data/digits.csv.gz"
# Written beside the destination, then renamed: never a half file.
gzip -dc "$gz" >"$out.tmp" || fail "cannot decompress digits.csv.gz into $dest"
lines=$(wc -l <"$out.tmp")
[ "$lines" -eq 1797 ] || { rm -f "$out.tmp"; fail "digits.csv has $lines lines, not 1797"; }
mv "$out.tmp" "$out"
echo "get_digits.sh: wrote $out (1797 images)" >&2
