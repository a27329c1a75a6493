// ag_ op macros expand their operands once: 30 nested ops (a polynomial
// of degree 15 in Horner form) convert at once and preprocess to a few
// kilobytes, with libclang (clang's path in ag.h: overloaded functions)
// and with cc (gcc's path: statement expressions). The operands used to be
// copied at every level: 2^30 copies of x, minutes and gigabytes.
// RUN: timeout 20 %agc %s -o %t.c
// RUN: timeout 20 %cc %t.c
// RUN: %cc -E %s | wc -c | awk '{ exit !($1 < 500000) }'
// RUN: %cc -E %t.c | wc -c | awk '{ exit !($1 < 500000) }'
#include <ag.h>

AG_FUNCTION ag_tensor horner(ag_tensor x)
{
    return ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(15, x), 15), x), 14), x), 13), x), 12), x), 11), x), 10), x), 9), x), 8), x), 7), x), 6), x), 5), x), 4), x), 3), x), 2), x), 1);
}
