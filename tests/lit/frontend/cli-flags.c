// -D, -U, -I, -isystem, -std= and the arguments after -- reach libclang.
// RUN: mkdir -p %t.dir/inc && echo '#define FROM_HEADER 3' > %t.dir/inc/cli_flags.h
// RUN: %agc -DSCALE=7 -USCALE -DSCALE=5 -I %t.dir/inc -std=c11 %s -o - -- -DEXTRA=1 | FileCheck %s
// RUN: %agc -DSCALE=5 -isystem%t.dir/inc %s -o - -- -DEXTRA=1 | FileCheck %s
#include <ag.h>
#include "cli_flags.h"

#if !defined(EXTRA)
#error "the arguments after -- did not reach libclang"
#endif

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return ag_mul(x, SCALE + FROM_HEADER);
}

// The macros are kept as written in the output.
// CHECK: return ag_mul(x, SCALE + FROM_HEADER);
