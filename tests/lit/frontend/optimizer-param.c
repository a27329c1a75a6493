// An ag_optimizer parameter: its kind (AG_ARG_OPTIMIZER, keyed by identity
// at run time), how the trampoline and the wrapper pass it, and that a
// function taking one is not compiled ahead of time.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: not %agc --emit=obj --function scaled %s -o %t.d/out.o 2>&1 | FileCheck --check-prefix=AOT %s
// AOT: error: parameter 'opt' of 'scaled': an ag_optimizer and its slot variables live in the process that made them
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[2]")
void step(ag_variable w, ag_tensor g, ag_optimizer opt)
{
    ag_optimizer_apply(opt, 1, &g, &w);
}

AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor scaled(ag_tensor x, ag_optimizer opt)
{
    (void)opt;
    return ag_mul(x, 2.0);
}

// CHECK-LABEL: static void step__trace(const ag_arg *ag__args, ag_tensor *ag__out)
// CHECK: step__staged(ag__args[0].variable, ag__args[1].tensor, ag__args[2].optimizer);
// CHECK: static const ag_arg_kind step__param_kinds[] = {AG_ARG_VARIABLE, AG_ARG_TENSOR, AG_ARG_OPTIMIZER};
// CHECK: {.kind = AG_ARG_OPTIMIZER, .optimizer = opt},
