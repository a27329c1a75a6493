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
 * Code the JIT compiles for this host holds the block packed for the
 * path this process runs (rt_qgemm_chosen when compiling). An object file
 * (cg_aot.c) cannot know the CPU it will run on: it holds a zeroed slot
 * instead, where the first call leaves the block it packed for the path
 * running then (cg_rt_qproduct: a compare-and-swap, so that calls from
 * many threads at once keep one block; it lives as long as the program,
 * as the object's code does). Code for a named CPU (AG_CPU, agc --cpu)
 * packs per call as before: the JIT's module may be freed before the
 * process ends, with no slot to free the block from, and for objects
 * packing when compiling for the path that CPU would run is not done yet
 * (tests/lit/frontend/emit-llvm-qlayer.c holds such code to the calls
 * that pack per call). The
 * block names the path, k and n it was packed for, and a call that runs
 * another path (AG_QGEMM_PATH is read at each call) packs b itself: the
 * bits are the same either way (tests/unit/test_quant_pack.c). The block
 * is only read, so every thread shares it.
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

/* The block for the path this process runs, a constant of the module. */
static LLVMValueRef packed_now(cg_lower *L, const ir_node *w, const rt_value *lit, int64_t k,
                               int64_t n)
{
    rt_qgemm_kind kind = rt_qgemm_chosen();
    size_t bytes = rt_qgemm_packed_bytes(kind, k, n);
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

/* A zeroed pointer of the module where the first call leaves the block. */
static LLVMValueRef cache_slot(cg_lower *L, const ir_node *w)
{
    char name[48];
    snprintf(name, sizeof name, "qgemm_cache_%d", w->id);
    LLVMValueRef g = LLVMGetNamedGlobal(L->mod, name);
    if (g)
        return g;
    g = LLVMAddGlobal(L->mod, L->t_ptr, name);
    LLVMSetInitializer(g, LLVMConstNull(L->t_ptr));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 8);
    return g;
}

bool cg_packed_weight(cg_lower *L, const ir_node *w, LLVMValueRef out[2])
{
    int64_t k, n;
    const rt_value *lit = constant_weight(w, &k, &n);
    out[0] = out[1] = NULL;
    if (lit && L->for_host)
        out[0] = packed_now(L, w, lit, k, n);
    else if (lit && L->generic_object)
        out[1] = cache_slot(L, w);
    if (!out[0] && !out[1])
        return false;
    for (int i = 0; i < 2; i++)
        out[i] = out[i] ? out[i] : LLVMConstNull(L->t_ptr);
    return true;
}
