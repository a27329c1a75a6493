// Bad usage exits with status 2 and a message; --version and --help
// exit 0.
// RUN: %agc --version | FileCheck %s --check-prefix=VERSION
// RUN: %agc --help | FileCheck %s --check-prefix=HELP
// RUN: %agc 2> %t.err; test $? -eq 2 && FileCheck %s --check-prefix=NOINPUT < %t.err
// RUN: %agc %s 2> %t.err; test $? -eq 2 && FileCheck %s --check-prefix=NOOUTPUT < %t.err
// RUN: %agc %s -o 2> %t.err; test $? -eq 2 && FileCheck %s --check-prefix=NOARG < %t.err
// RUN: %agc --frobnicate %s -o %t.c 2> %t.err; test $? -eq 2 && FileCheck %s --check-prefix=UNKNOWN < %t.err
// RUN: %agc %s %s -o %t.c 2> %t.err; test $? -eq 2 && FileCheck %s --check-prefix=TWO < %t.err
// RUN: %agc %s.missing -o %t.c 2> %t.err; test $? -eq 1 && FileCheck %s --check-prefix=MISSING < %t.err
#include <ag.h>

// VERSION: agc 0.1.0 (AutoGraph for C)
// HELP: usage: agc [options] input.c -o output.ag.c
// HELP: -MD, -MMD
// NOINPUT: agc: error: no input file
// NOINPUT-NEXT: usage: agc [options] input.c -o output.ag.c
// NOOUTPUT: agc: error: no output file: use -o FILE (or -o - for stdout)
// NOARG: agc: error: missing argument to '-o'
// UNKNOWN: agc: error: unknown option '--frobnicate'
// TWO: agc: error: more than one input file
// MISSING: agc: error: cannot read '{{.*}}cli-usage.c.missing'
