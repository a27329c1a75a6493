/*
 * cg_qlayer.c - the run-time half of a static-range layer lowered as one
 * call (lower_qlayer.c; cg_rt_qlayer in cg_runtime.c checks the result's
 * type): requantize(add(qmatmul(a, w, z_a), bias), mult, z_q) with the
 * sums requantized as the int8 product makes them (rt_qlayer_requantize,
 * runtime/kernels/quant_rows.h).
 *
 * It fuses what the quantizer makes: a and w int8 matrices, a scalar zero
 * point in int8's range, and a bias, multiplier and zero point that are
 * scalars or one value per output column. Anything else (a bias of the
 * whole [m, n], a zero point out of range, a wrong dtype, a bad range)
 * runs the three nodes' kernels one by one, so that the results, and the
 * errors with their locations, are exactly those of the unfused graph.
 *
 * Both this call and cg_qproduct_run (a qmatmul or qconv2d on its own)
 * take the weight packed ahead (lower_qpack.c): when the code was
 * compiled, or by an object file's first call into the code's slot
 * (cg_rt_packed_weight), which the product reads instead of packing the
 * weight again.
 */
#include "cg_runtime.h"

#include "quant_rows.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* in[]: a, w, z_a (the qmatmul's), bias (the add's), mult, z_q. */
enum { A, W, ZA, BIAS, MULT, ZQ };

/* v broadcasts along the n columns of an [m, n] result without growing
 * it: a scalar (*step 0) or n values along the last axis (*step 1). */
static bool per_column(const rt_value *v, ag_dtype dt, int64_t n, int64_t *step)
{
    if (v->kind != RT_CONCRETE || v->dtype != dt || v->shape.rank > 2)
        return false;
    if (v->shape.rank == 2 && v->shape.dims[0] != 1)
        return false;
    *step = v->numel == 1 ? 0 : 1;
    return v->numel == 1 || (v->numel == n && v->shape.dims[v->shape.rank - 1] == n);
}

static bool int8_matrix(const rt_value *v)
{
    return v->kind == RT_CONCRETE && v->dtype == AG_I8 && v->shape.rank == 2;
}

/* Whether the call can fuse; fills r and the product's sizes. */
static bool fusable(const ir_node *rq, rt_value *const *in, rt_requant *r, int64_t mnk[3])
{
    const rt_value *a = in[A], *w = in[W], *za = in[ZA];
    if (!int8_matrix(a) || !int8_matrix(w) || a->shape.dims[1] != w->shape.dims[0] ||
        za->kind != RT_CONCRETE || za->dtype != AG_I32 || za->shape.rank != 0)
        return false;
    int32_t z = *(const int32_t *)za->data;
    int64_t n = w->shape.dims[1];
    double lo = rq->attrs.lo, hi = rq->attrs.hi;
    if (z < -128 || z > 127 || a->shape.dims[1] > RT_QGEMM_MAX_K || !(lo >= -128 && hi <= 127 &&
        lo <= hi && lo == (int32_t)lo && hi == (int32_t)hi))
        return false;
    *r = (rt_requant){.bias = in[BIAS]->data, .mult = in[MULT]->data, .zero = in[ZQ]->data,
                      .lo = (int32_t)lo, .hi = (int32_t)hi};
    if (!per_column(in[BIAS], AG_I32, n, &r->b_step) ||
        !per_column(in[MULT], AG_F32, n, &r->m_step) ||
        !per_column(in[ZQ], AG_I32, n, &r->z_step))
        return false;
    rt_requant_check(r, in[MULT]->numel);
    mnk[0] = a->shape.dims[0];
    mnk[1] = n;
    mnk[2] = a->shape.dims[1];
    return true;
}

/* Node n's kernel on in, as cg_rt_apply runs it. */
static rt_value *apply(const ir_node *n, rt_value *const *in)
{
    return rt_apply_eager(n->loc, (rt_op)n->opcode, &n->attrs, in, n->n_in);
}

/* The three nodes one after the other, as the unfused code runs them. */
static rt_value *unfused(const ir_node *rq, rt_value *const *in)
{
    const ir_node *add = rq->in[0];
    bool product_first = add->in[0]->opcode == RT_OP_QMATMUL;
    const ir_node *mm = add->in[product_first ? 0 : 1];
    rt_value *acc = apply(mm, in);
    if (!acc)
        return NULL;
    rt_value *sum_in[2] = {product_first ? acc : in[BIAS], product_first ? in[BIAS] : acc};
    rt_value *sum = apply(add, sum_in);
    rt_value_free(acc);
    if (!sum)
        return NULL;
    rt_value *rq_in[3] = {sum, in[MULT], in[ZQ]};
    rt_value *q = apply(rq, rq_in);
    rt_value_free(sum);
    return q;
}

rt_value *cg_qlayer_run(const ir_node *rq, rt_value *const *in, const void *packed)
{
    rt_requant r;
    int64_t mnk[3];
    if (!fusable(rq, in, &r, mnk))
        return unfused(rq, in);
    ag_shape s = {.rank = 2, .dims = {mnk[0], mnk[1]}};
    rt_err e;
    rt_value *q = rt_value_try_new(AG_I8, &s, &e);
    if (!q) {
        rt_report(rq->loc, "%s: %s", ir_opcode_public_name(rq->opcode), e.msg);
        return NULL;
    }
    rt_qlayer_requantize(rt_qgemm_chosen(), mnk[0], mnk[1], mnk[2], in[A]->data,
                         *(const int32_t *)in[ZA]->data, in[W]->data, packed, &r, q->data);
    return q;
}

/* As rt_apply_eager runs the node (the same checks, results and errors),
 * but with the kernel reading the weight packed when compiling. Values
 * that are not concrete take rt_apply_eager itself, which reports them. */
rt_value *cg_qproduct_run(const ir_node *n, rt_value *const *in, const void *packed)
{
    ag_dtype dt;
    ag_shape s;
    rt_err e;
    for (int i = 0; i < n->n_in; i++)
        if (in[i]->kind != RT_CONCRETE)
            return apply(n, in);
    if (!rt_infer((rt_op)n->opcode, &n->attrs, in, n->n_in, &dt, &s, &e))
        return apply(n, in);
    rt_value *out = rt_value_try_new(dt, &s, &e);
    bool ran = out && (n->opcode == RT_OP_QMATMUL
                           ? rt_qmatmul_packed(in, packed, out, &e)
                           : rt_qconv2d_packed(&n->attrs, in, packed, out, &e));
    if (!ran) {
        rt_value_free(out);
        rt_report(n->loc, "%s: %s", rt_op_public_name((rt_op)n->opcode), e.msg);
        return NULL;
    }
    return out;
}

/* The product's k and n of an int8 weight ([k, n], or [kh, kw, c, n]
 * read as [kh*kw*c, n]); false for anything else. */
static bool weight_dims(const rt_value *w, int64_t *k, int64_t *n)
{
    if (w->kind != RT_CONCRETE || w->dtype != AG_I8 || (w->shape.rank != 2 && w->shape.rank != 4))
        return false;
    const int64_t *d = w->shape.dims;
    *k = w->shape.rank == 2 ? d[0] : d[0] * d[1] * d[2];
    *n = d[w->shape.rank - 1];
    return true;
}

/* The block in the slot, or one packed now for the path this call runs
 * and left there. Of threads racing, the first to swap its block in
 * wins; the others free theirs and read the winner's. The block stays
 * for the program's life (the code's slot holds it). */
static const void *cached(void *_Atomic *slot, const rt_value *w)
{
    const void *have = atomic_load_explicit(slot, memory_order_acquire);
    int64_t k, n;
    if (have || !weight_dims(w, &k, &n))
        return have;
    rt_qgemm_kind kind = rt_qgemm_chosen();
    size_t bytes = rt_qgemm_packed_bytes(kind, k, n);
    void *mine = bytes ? malloc(bytes) : NULL;
    if (!mine)
        return NULL; /* the product packs b itself */
    rt_qgemm_pack(kind, w->data, k, n, mine);
    void *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(slot, &expected, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    free(mine);
    return expected;
}

const void *cg_rt_packed_weight(const void *packed, void *cache, const rt_value *w)
{
    if (packed || !cache)
        return packed;
    return cached((void *_Atomic *)cache, w);
}
