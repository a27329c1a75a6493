// --emit=dot: Graphviz of the optimized graph. Fused loops and cond/while
// regions are boxes; every node is labelled with the user's source line.
// RUN: %agc --emit=dot %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[?]")
ag_tensor squash(ag_tensor x)
{
    if (ag_bool(ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 0)))
        x = ag_relu(ag_add(ag_mul(x, 2.0f), 1.0f));
    else
        x = ag_neg(x);
    return x;
}

// CHECK: digraph "squash" {
// CHECK: [label="%{{[0-9]+}} reduce_sum\nf32[]\nemit-dot.c:9"];
// CHECK: subgraph cluster_n{{[0-9]+}} {
// CHECK:   subgraph cluster_n{{[0-9]+}}_then {
// CHECK:     label="cond then";
// CHECK:     subgraph cluster_fused_0 {
// CHECK:       label="fused loop 0 (3 ops)";
// CHECK:       [label="%{{[0-9]+}} mul\nf32[?]\nemit-dot.c:10"];
// CHECK:       [label="%{{[0-9]+}} add\nf32[?]\nemit-dot.c:10"];
// CHECK:       [label="%{{[0-9]+}} relu\nf32[?]\nemit-dot.c:10"];
// CHECK:   subgraph cluster_n{{[0-9]+}}_else {
// CHECK:     [label="%{{[0-9]+}} neg\nf32[?]\nemit-dot.c:12"];
// CHECK: [label="%{{[0-9]+}} cond\n(f32[?])\nemit-dot.c:9"
// CHECK: -> ret;
// CHECK-NEXT: }
