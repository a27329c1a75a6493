// agc -v prints each step it takes on stderr: the conversion's, and with
// --emit the staged C's compile (its command), the load, then for each
// function the pipeline's stages and the target's, and the writes.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %agc -v %s -o %t/out.c 2>&1 | FileCheck %s --check-prefix=CONVERT
// RUN: %agc -v --emit=obj,header %s -o %t/out.o 2>&1 | FileCheck %s --check-prefix=OBJ
// RUN: %agc %s -o %t/out.c 2>&1 | count 0
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor twice(ag_tensor x)
{
    return ag_mul(x, 2);
}

// CONVERT: agc: parse {{.*}}cli-verbose.c with libclang: -std=gnu11 {{.*}}-isystem
// CONVERT-NEXT: agc: analyze 1 AG_FUNCTION
// CONVERT-NEXT: agc: generate the staged C
// CONVERT-NEXT: agc: write {{.*}}out.c ({{[0-9]+}} bytes)
// OBJ: agc: parse
// OBJ: agc: generate the staged C
// OBJ: agc: write {{.*}}staged.c
// OBJ-NEXT: agc: compile the staged C, to trace it: {{.*}} -shared -fPIC {{.*}}staged.c
// OBJ-NEXT: agc: load {{.*}}staged.so, which registers its AG_FUNCTIONs
// OBJ-NEXT: agc: 'twice' for "f32[2]": trace and verify
// OBJ-NEXT: agc: 'twice' for "f32[2]": passes, planned for the target 'cpu'
// OBJ-NEXT: agc: the target 'cpu': an object file of 1 function
// OBJ-NEXT: agc: write {{.*}}out.o
// OBJ-NEXT: agc: write {{.*}}out.h
