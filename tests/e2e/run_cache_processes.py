#!/usr/bin/env python3
"""The persistent compilation cache (AG_CACHE_DIR) across processes.

Usage: run_cache_processes.py PROGRAM EXPECTED [PROGRAM EXPECTED ...]

For each staged e2e program (its graphs compiled by the cpu target):
  1. four processes at once on an empty cache directory: each prints its
     expected output, without a warning; the entries they leave are whole
     (no temporary files remain);
  2. a fifth process loads every graph (AG_CACHE_VERBOSE says `hit`, never
     `miss`) and prints the same;
  3. every entry gets a flipped byte: the next process warns once per
     entry, compiles again, prints the same, and rewrites them, so that
     the process after it hits again without a warning;
  4. a cache directory that cannot be made: one warning, the same output.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def run(program, cache_dir, wait=True):
    env = dict(os.environ, AG_CACHE_DIR=cache_dir, AG_CACHE_VERBOSE="1")
    env.pop("AG_TARGET", None)
    env.pop("AG_EXECUTOR", None)
    p = subprocess.Popen([program], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    return p.communicate() if wait else p


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_output(what, out, err, expected):
    if out != expected:
        fail(f"{what}: the output differs from the expected one\n--- got\n{out}"
             f"--- stderr\n{err}")


def lines_with(err, word):
    return [l for l in err.splitlines() if word in l]


def entries(cache_dir):
    return sorted(f for f in os.listdir(cache_dir) if f.endswith(".agc"))


def flip_byte(path):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) - 64] ^= 0x40
        f.seek(0)
        f.write(data)


def check_program(program, expected, work):
    name = os.path.basename(program)
    cache_dir = os.path.join(work, name)
    os.mkdir(cache_dir)

    procs = [run(program, cache_dir, wait=False) for _ in range(4)]
    for i, p in enumerate(procs):
        out, err = p.communicate()
        check_output(f"{name}: concurrent process {i}", out, err, expected)
        if lines_with(err, "warning"):
            fail(f"{name}: concurrent process {i} warned:\n{err}")
    stray = [f for f in os.listdir(cache_dir) if not f.endswith(".agc")]
    if stray or not entries(cache_dir):
        fail(f"{name}: the cache holds {os.listdir(cache_dir)}")

    out, err = run(program, cache_dir)
    check_output(f"{name}: warm process", out, err, expected)
    if lines_with(err, "cache: miss") or not lines_with(err, "cache: hit") or \
            lines_with(err, "warning"):
        fail(f"{name}: the warm process did not load every graph:\n{err}")

    for e in entries(cache_dir):
        flip_byte(os.path.join(cache_dir, e))
    out, err = run(program, cache_dir)
    check_output(f"{name}: process after corruption", out, err, expected)
    warned = lines_with(err, "warning")
    if len(warned) != len(entries(cache_dir)) or \
            any("checksum" not in w for w in warned):
        fail(f"{name}: expected one checksum warning per entry:\n{err}")
    out, err = run(program, cache_dir)
    check_output(f"{name}: process after the rewrite", out, err, expected)
    if lines_with(err, "warning") or lines_with(err, "cache: miss"):
        fail(f"{name}: the corrupt entries were not replaced:\n{err}")

    blocker = os.path.join(work, name + ".file")
    open(blocker, "w").close()
    out, err = run(program, os.path.join(blocker, "cache"))
    check_output(f"{name}: unwritable directory", out, err, expected)
    if len(lines_with(err, "warning")) != 1 or not lines_with(err, "cannot be written"):
        fail(f"{name}: expected one warning for the unwritable directory:\n{err}")


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    work = tempfile.mkdtemp(prefix="agc_cache_e2e_")
    try:
        for program, expected_file in zip(args[0::2], args[1::2]):
            with open(expected_file) as f:
                check_program(program, f.read(), work)
    finally:
        shutil.rmtree(work)
    print("ok")


if __name__ == "__main__":
    main()
