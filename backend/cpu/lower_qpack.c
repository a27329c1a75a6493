/*
 * lower_qpack.c - int8 weights packed once, when the code is compiled.
 *
 * Every int8 product packs its weight b into the layout its kernel reads
 * (panels of 4 bytes of k per column, and the column sums the zero point's
 * correction needs: runtime/kernels/qgemm_x86.c). For a weight that is a
 * constant of the graph (one the function captured, or a saved model's
 * variable marked constant, which loading turns into a constant:
 * model/freeze.c) that work is the same at every call; for the MLP
 * 784-512-512-10 at batch 64 it was about a third of the products' time.
 * So the code holds the weight packed, as a constant of the module beside
 * it, and the call hands it over (cg_rt_qproduct, cg_rt_qlayer_packed).
 *
 * The packing is the path's that runs in this process (rt_qgemm_chosen
 * when compiling): code for this host only (the JIT, or an object for it;
 * an object for another CPU packs per call as before). The block names
 * the path, k and n it was packed for, and a call that runs another path
 * (AG_QGEMM_PATH read at each call) packs b itself: the bits are the same
 * either way (tests/unit/test_quant_pack.c). The block is read only, so
 * calls from any number of threads share it.
 */
#include "lower.h"

#include "qgemm.h"

#include <stdio.h>
#include <stdlib.h>

/* w's value when it is an int8 constant of rank 2 ([k, n], qmatmul's) or
 * 4 ([kh, kw, c, n], qconv2d's, whose product reads it as [kh*kw*c, n]). */
static const rt_value *constant_weight(const ir_node *w, int64_t *k, int64_t *n)
{
    const rt_value *lit = w->opcode == RT_OP_CONST ? w->attrs.literal : NULL;
    if (!lit || lit->dtype != AG_I8 || (lit->shape.rank != 2 && lit->shape.rank != 4))
        return NULL;
    int r = lit->shape.rank;
    *n = lit->shape.dims[r - 1];
    *k = r == 2 ? lit->shape.dims[0]
                : lit->shape.dims[0] * lit->shape.dims[1] * lit->shape.dims[2];
    return lit;
}

LLVMValueRef cg_packed_weight(cg_lower *L, const ir_node *w)
{
    int64_t k, n;
    const rt_value *lit = L->for_host ? constant_weight(w, &k, &n) : NULL;
    rt_qgemm_kind kind = rt_qgemm_chosen();
    size_t bytes = lit ? rt_qgemm_packed_bytes(kind, k, n) : 0;
    if (!bytes)
        return NULL;
    char name[48];
    snprintf(name, sizeof name, "qgemm_packed_%d", w->id);
    LLVMValueRef g = LLVMGetNamedGlobal(L->mod, name); /* a weight of several products */
    if (g)
        return g;
    void *packed = rt_xmalloc(bytes); /* the packing's stores are unaligned */
    rt_qgemm_pack(kind, lit->data, k, n, packed);
    g = cg_const_bytes(L, packed, bytes, name);
    free(packed);
    return g;
}
