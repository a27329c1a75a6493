/*
 * lower_loop.c - native tensor code: fused elementwise loops (the nest;
 * its prefetching blocks in lower_prefetch.c, its groups of short rows in
 * lower_tile.c, out of line and in parallel in lower_outline.c: one unit
 * split for size, sharing lower_nest.h).
 *
 * A fused loop (cg_cluster) computes every member of a chain of
 * elementwise ops element by element in one pass, storing only the
 * members needed outside the loop. Its leaves (the values it reads from
 * outside) are read either as one element hoisted out of the loop (scalars
 * and single-element tensors, which broadcast) or through per-dimension
 * strides, 0 on broadcast dims. When every tensor leaf has the loop's
 * shape the loop is flat, one counted loop over all elements, which LLVM
 * vectorizes; otherwise it is a nest over the output's dims.
 *
 * A loop whose single member can fail at run time first checks, like the
 * runtime's kernel and in the same order: shapes that must broadcast (with
 * unknown dims), then a zero divisor or negative integer exponent. On
 * failure the runtime reruns the op to report the exact error.
 */
#include "cg_runtime.h"
#include "lower_nest.h"

#include <stdlib.h>
#include <string.h>

static bool is_member(const cg_cluster *c, const ir_node *x, int *index)
{
    for (int i = 0; i < c->n_members; i++) {
        if (c->members[i] == x) {
            if (index)
                *index = i;
            return true;
        }
    }
    return false;
}

static leaf *find_leaf(nest *N, const ir_node *x)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].node == x)
            return &N->leaves[i];
    return NULL;
}

static void collect_leaves(nest *N)
{
    cg_cluster *c = N->c;
    int cap = 0;
    for (int i = 0; i < c->n_members; i++)
        cap += c->members[i]->n_in;
    N->leaves = rt_xcalloc((size_t)cap + 1, sizeof *N->leaves);
    for (int i = 0; i < c->n_members; i++) {
        const ir_node *m = c->members[i];
        for (int k = 0; k < m->n_in; k++) {
            const ir_node *x = m->in[k];
            if (is_member(c, x, NULL) || find_leaf(N, x))
                continue;
            leaf *l = &N->leaves[N->n_leaves++];
            l->node = x;
            l->dt = x->type.dtype;
            const cg_shape *s = &cg_info_of(N->L, x)->shape;
            l->scalar = s->rank == 0 || cg_shape_unit(s);
        }
    }
}

/* Hoisted scalars: a register, or element 0 of the data. */
static void load_scalars(nest *N)
{
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        cg_info *xi = cg_info_of(N->L, l->node);
        if (!l->scalar) {
            l->data = xi->data;
            continue;
        }
        if (xi->repr == CG_NAT || xi->nat)
            l->value = cg_get_nat(N->L, l->node);
        else
            l->value = cg_load_elem(N->L, l->dt, xi->data);
    }
}

/* Dim d of leaf l's own shape, as an i64 value. */
static LLVMValueRef leaf_dim(nest *N, leaf *l, int d)
{
    cg_lower *L = N->L;
    const cg_info *xi = cg_info_of(L, l->node);
    if (xi->shape.known)
        return cg_i64(L, xi->shape.dims[d]);
    if (!l->dims_ptr) {
        LLVMValueRef box = xi->box;
        l->dims_ptr = cg_call(L, &L->h.dims, &box, 1, "dims");
    }
    LLVMValueRef idx = cg_i64(L, d);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(L->b, L->t_i64, l->dims_ptr, &idx, 1, "");
    return LLVMBuildLoad2(L->b, L->t_i64, p, "");
}

/* Leaf dim aligned with loop dim d (NumPy: shapes align at the right);
 * 1 where the leaf has no such dim. */
static LLVMValueRef aligned_dim(nest *N, leaf *l, int d, int rank)
{
    int lr = cg_info_of(N->L, l->node)->shape.rank;
    int ld = d - (rank - lr);
    return ld < 0 ? cg_i64(N->L, 1) : leaf_dim(N, l, ld);
}

/* ----------------------------------------------------------- shapes */

/* The loop's output dims when they are known statically or, with unknown
 * dims, read from a leaf that has the loop's shape. Returns the i64 array
 * to allocate outputs with. */
static LLVMValueRef output_dims(nest *N)
{
    cg_lower *L = N->L;
    const cg_shape *s = &N->c->shape;
    if (s->known) {
        for (int d = 0; d < s->rank; d++)
            N->dims[d] = cg_i64(L, s->dims[d]);
        return cg_dims_global(L, s->rank, s->dims);
    }
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        if (l->scalar || ls->known || ls->rank != s->rank || ls->key != s->key)
            continue;
        for (int d = 0; d < s->rank; d++)
            N->dims[d] = leaf_dim(N, l, d);
        return l->dims_ptr;
    }
    return NULL;
}

/* A fallible node's output dims by NumPy broadcasting of its operands'
 * run-time dims, failing with the runtime's message when they do not
 * broadcast. */
static LLVMValueRef broadcast_dims(nest *N, const ir_node *m)
{
    cg_lower *L = N->L;
    int rank = N->c->shape.rank;
    LLVMValueRef arr =
        cg_entry_alloca(L, LLVMArrayType2(L->t_i64, (uint64_t)(rank > 0 ? rank : 1)), 8, "dims");
    LLVMValueRef ok = LLVMConstInt(L->t_i1, 1, 0);
    for (int d = 0; d < rank; d++) {
        LLVMValueRef acc = NULL;
        for (int k = 0; k < m->n_in; k++) {
            leaf *l = find_leaf(N, m->in[k]);
            LLVMValueRef y = l->scalar ? cg_i64(L, 1) : aligned_dim(N, l, d, rank);
            if (!acc) {
                acc = y;
                continue;
            }
            LLVMValueRef same = LLVMBuildICmp(L->b, LLVMIntEQ, acc, y, "");
            LLVMValueRef y1 = LLVMBuildICmp(L->b, LLVMIntEQ, y, cg_i64(L, 1), "");
            LLVMValueRef a1 = LLVMBuildICmp(L->b, LLVMIntEQ, acc, cg_i64(L, 1), "");
            LLVMValueRef keep = LLVMBuildOr(L->b, same, y1, "");
            ok = LLVMBuildAnd(L->b, ok, LLVMBuildOr(L->b, keep, a1, ""), "");
            acc = LLVMBuildSelect(L->b, keep, acc, y, "");
        }
        N->dims[d] = acc;
        LLVMValueRef idx = cg_i64(L, d);
        LLVMBuildStore(L->b, acc, LLVMBuildInBoundsGEP2(L->b, L->t_i64, arr, &idx, 1, ""));
    }
    cg_check_or_fail(L, LLVMBuildNot(L->b, ok, ""), m);
    return arr;
}

static LLVMValueRef total_of(nest *N, int rank)
{
    LLVMValueRef t = cg_i64(N->L, 1);
    for (int d = 0; d < rank; d++)
        t = mul(N->L, t, N->dims[d]);
    return t;
}

/* Strides of every tensor leaf over the loop dims. Flat when every tensor
 * leaf has the loop's shape: one loop over all elements, stride 1. */
static void plan_strides(nest *N)
{
    cg_lower *L = N->L;
    const cg_shape *s = &N->c->shape;
    bool flat = true;
    for (int i = 0; i < N->n_leaves && flat; i++) {
        const leaf *l = &N->leaves[i];
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        if (l->scalar)
            continue;
        if (ls->rank != s->rank || ls->known != s->known ||
            (s->known ? memcmp(ls->dims, s->dims, (size_t)s->rank * sizeof *s->dims) != 0
                      : ls->key != s->key))
            flat = false;
    }
    if (flat) {
        N->dims[0] = total_of(N, s->rank);
        N->rank = 1;
        for (int i = 0; i < N->n_leaves; i++) {
            N->leaves[i].strides[0] = cg_i64(L, 1);
            N->leaves[i].full = !N->leaves[i].scalar;
        }
        return;
    }
    N->rank = s->rank;
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar)
            continue;
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        l->full = ls->rank == s->rank && ls->known == s->known &&
                  (s->known ? memcmp(ls->dims, s->dims, (size_t)s->rank * sizeof *s->dims) == 0
                            : ls->key == s->key);
        /* row-major strides of the leaf, 0 where it is broadcast */
        LLVMValueRef stride = cg_i64(L, 1);
        for (int d = s->rank - 1; d >= 0; d--) {
            LLVMValueRef dim = aligned_dim(N, l, d, s->rank);
            LLVMValueRef one = LLVMBuildICmp(L->b, LLVMIntEQ, dim, cg_i64(L, 1), "");
            l->strides[d] = LLVMBuildSelect(L->b, one, cg_i64(L, 0), stride, "");
            stride = mul(L, stride, dim);
        }
    }
}

/* The kernels' data check (zero divisor, negative exponent), done on the
 * whole divisor before computing anything, and only for a non-empty
 * output. */
static void data_check(nest *N, const ir_node *m, LLVMValueRef total)
{
    cg_lower *L = N->L;
    leaf *l = find_leaf(N, m->in[1]);
    LLVMValueRef bad;
    if (l->scalar) {
        bad = cg_emit_elem_bad(L, m, l->value);
    } else {
        const cg_info *xi = cg_info_of(L, l->node);
        LLVMValueRef count = cg_i64(L, 1);
        for (int d = 0; d < xi->shape.rank; d++)
            count = mul(L, count, leaf_dim(N, l, d));
        LLVMValueRef args[4] = {l->data, cg_i32(L, l->dt), count,
                                cg_i32(L, cg_checks_negative(m))};
        LLVMValueRef found = cg_call(L, &L->h.int_check, args, 4, "");
        bad = LLVMBuildICmp(L->b, LLVMIntNE, found, cg_i32(L, 0), "");
    }
    LLVMValueRef nonempty = LLVMBuildICmp(L->b, LLVMIntSGT, total, cg_i64(L, 0), "");
    cg_check_or_fail(L, LLVMBuildAnd(L->b, nonempty, bad, ""), m);
}

/* -------------------------------------------------------------- body */

static LLVMValueRef body_value(nest *N, const ir_node *x)
{
    int i;
    if (is_member(N->c, x, &i))
        return N->vals[i];
    return find_leaf(N, x)->value;
}

void cg_nest_body(nest *N, LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (!l->scalar)
            l->value = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, offs[i]));
    }
    for (int i = 0; i < N->c->n_members; i++) {
        const ir_node *m = N->c->members[i];
        LLVMValueRef args[4];
        for (int k = 0; k < m->n_in; k++)
            args[k] = body_value(N, m->in[k]);
        N->vals[i] = cg_emit_elem(L, m, args);
        cg_info *mi = cg_info_of(L, m);
        if (mi->materialize)
            cg_store_elem(L, m->type.dtype, N->vals[i],
                          elem_ptr(L, m->type.dtype, mi->data, out_off));
    }
}

bool cg_nest_calls_tanh(const cg_cluster *c)
{
    for (int i = 0; i < c->n_members; i++)
        if (c->members[i]->opcode == RT_OP_TANH && c->members[i]->type.dtype != AG_F64)
            return true;
    return false;
}

/* Loop d of the nest over [begin, end) of its dim (NULL: all of it); loop
 * 0 covers a parallel chunk. */
void cg_nest_level(nest *N, int d, LLVMValueRef begin, LLVMValueRef end,
                       LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    if (d == N->rank) {
        cg_nest_body(N, out_off, offs);
        return;
    }
    if (d == 0 && N->group) {
        cg_nest_groups(N, begin ? begin : cg_i64(L, 0), begin ? end : N->dims[0]);
        return;
    }
    if (d == N->rank - 1 && N->prefetch) {
        cg_nest_blocks(N, d, begin ? begin : cg_i64(L, 0), begin ? end : N->dims[d], out_off,
                    offs);
        return;
    }
    cg_loop lp;
    cg_loop_begin(L, &lp, begin ? LLVMBuildNSWSub(L->b, end, begin, "") : N->dims[d]);
    LLVMValueRef iv = begin ? add(L, begin, lp.iv) : lp.iv;
    LLVMValueRef o = d == 0 ? iv : add(L, mul(L, out_off, N->dims[d]), iv);
    LLVMValueRef *offs2 = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *offs2);
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (l->scalar)
            continue;
        LLVMValueRef step = mul(L, iv, l->strides[d]);
        offs2[i] = d == 0 ? step : add(L, offs[i], step);
    }
    cg_nest_level(N, d + 1, NULL, NULL, o, offs2);
    free(offs2);
    cg_loop_end(L, &lp);
    if (d == N->rank - 1 && cg_nest_calls_tanh(N->c))
        cg_loop_interleave(L, lp.latch, TANH_INTERLEAVE);
}

bool cg_emit_cluster(cg_lower *L, cg_cluster *c)
{
    nest N = {.L = L, .c = c};
    collect_leaves(&N);
    N.vals = rt_xcalloc((size_t)c->n_members + 1, sizeof *N.vals);
    load_scalars(&N);
    const ir_node *only = c->members[0];
    LLVMValueRef dims_ptr = c->fallible && !c->shape.known ? broadcast_dims(&N, only)
                                                           : output_dims(&N);
    bool ok = dims_ptr != NULL || c->shape.rank == 0;
    if (!ok) {
        cg_fail(L, "internal: no operand of %%%d gives its loop's shape", only->id);
    } else {
        LLVMValueRef total = total_of(&N, c->shape.rank);
        if (c->fallible && pass_fails_on_data(only))
            data_check(&N, only, total);
        for (int i = 0; i < c->n_members; i++)
            if (cg_info_of(L, c->members[i])->materialize)
                cg_alloc_output(L, c->members[i], dims_ptr);
        plan_strides(&N);
        if (L->outline_loops || cg_nest_parallel(&N))
            cg_nest_outlined(&N);
        else
            cg_nest_level(&N, 0, cg_i64(L, 0), N.dims[0], NULL, NULL);
    }
    free(N.vals);
    free(N.leaves);
    return ok;
}
