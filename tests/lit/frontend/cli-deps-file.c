// The dependency file never replaces what the run reads or writes:
// -MF naming the output (spelled otherwise, before it exists), or a
// header the input includes, is refused before anything is written.
// RUN: rm -rf %t && mkdir %t && cp %s %t/in.c && echo '#define K 2' > %t/util.h
// RUN: cp %t/util.h %t/util.h.orig && cd %t
// RUN: not %agc in.c -o out.c -MD -MF ./out.c 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: test ! -e out.c
// RUN: echo old > keep.c
// RUN: not %agc in.c -o keep.c -MD -MF %t/keep.c 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: echo old | cmp - keep.c
// RUN: not %agc in.c -o out.c -MMD -MF util.h 2>&1 | FileCheck %s --check-prefix=HEADER
// RUN: ln -s util.h link.h && not %agc in.c -o out.c -MD -MF link.h 2>&1 | FileCheck %s --check-prefix=HEADER
// RUN: cmp util.h util.h.orig && test ! -e out.c
// RUN: %agc in.c -o out.c -MD && grep -q util.h out.c.d
#include <ag.h>
#include "util.h"

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return ag_mul(x, K);
}

// OUT: agc: error: the dependency file './out.c' is the output file 'out.c'
// KEEP: agc: error: the dependency file '{{.*}}/keep.c' is the output file 'keep.c'
// HEADER: agc: error: the dependency file '{{.*}}.h' is '{{.*}}util.h', which the input includes; -MF must name a file of its own
