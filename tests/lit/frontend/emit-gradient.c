// A tape inside an AG_FUNCTION: the gradient's ops join the traced graph,
// so --emit=ir-opt shows forward, backward and update as one function,
// every backward node at the line of the forward op it differentiates.
// The passes keep only what the result and the update need: the gradient
// of the input x (matmul's other operand) is never built. A staged if
// differentiates into a cond on the same predicate.
// RUN: %agc --emit=ir-opt --function train_step %s | FileCheck --check-prefix=STEP %s
// RUN: %agc --emit=ir-opt --function grad_if %s | FileCheck --check-prefix=COND %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[4,2], f32[4,1]")
ag_tensor train_step(ag_tensor x, ag_tensor y)
{
    static ag_variable w;
    if (!w)
        w = ag_variable_new(ag_zeros(AG_F32, AG_SHAPE(2, 1)));
    ag_tape tape = ag_tape_new();
    ag_tensor err = ag_sub(ag_matmul(x, ag_variable_read(w)), y);
    ag_tensor loss = ag_reduce_mean(ag_mul(err, err), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient_variable(tape, loss, w);
    ag_tape_free(tape);
    ag_assign_sub(w, ag_mul(g, 0.1f));
    return loss;
}

// STEP: func @train_step(%0: f32[4,2], %1: f32[4,1]) -> (f32[]) vars(@v0: f32[2,1]) {
// STEP: var_read() {ref = @v0}
// STEP: = matmul(%0, %{{[0-9]+}}) : f32[4,1] loc("{{.*}}emit-gradient.c":18)
// STEP: = reduce_mean(
// STEP: = transpose(%0) {perm = [1,0]} : f32[2,4] loc("{{.*}}emit-gradient.c":18)
// STEP-NEXT: = matmul(%{{[0-9]+}}, %{{[0-9]+}}) : f32[2,1] loc("{{.*}}emit-gradient.c":18)
// STEP-NOT: : f32[4,2]
// STEP: assign_sub(%{{[0-9]+}}) {ref = @v0}
// STEP: return

AG_FUNCTION AG_SIGNATURE("f32[2], f32[2]")
ag_tensor grad_if(ag_tensor x, ag_tensor w)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, w);
    ag_tensor y = ag_mul(x, w);
    if (ag_bool(ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 0)))
        y = ag_tanh(ag_mul(y, w));
    else
        y = ag_neg(y);
    ag_tensor g = ag_tape_gradient(t, ag_reduce_sum(y, AG_ALL_AXES, false), w);
    ag_tape_free(t);
    return g;
}

// COND: func @grad_if(
// COND: [[P:%[0-9]+]] = greater(
// COND: = cond([[P]], {{.*}}) : (f32[2], f32[2]) loc("{{.*}}emit-gradient.c":42) {
// COND: ^then(
// COND: = tanh(
// COND: = square(
// COND: yield
// COND: ^else(
// COND: yield
// COND-NOT: cond(
// COND: return
