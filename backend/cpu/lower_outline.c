/*
 * lower_outline.c - fused loops out of line.
 *
 * A loop nest out of line: an internal function loop(ctx, begin, end) over
 * [begin, end) of its first dim (noinline). Large loops are built so, to
 * run in parallel chunks through cg_rt_parallel_for; in large functions
 * every loop is, which keeps the function of the graph free of loops,
 * whose analysis (scalar evolution walking up every dominating branch, one
 * per runtime call) would otherwise grow quadratically with its length.
 * Small loops in small functions stay inline, where their constant trip
 * counts compile to the tightest code.
 *
 * What the loop reads is passed in ctx, an array of 8-byte slots in the
 * caller's frame; constants are used directly, so that known dims and
 * strides stay constants for the vectorizer.
 */
#include "cg_runtime.h"
#include "cg_target.h"
#include "lower_nest.h"

#include <stdlib.h>
#include <string.h>

typedef struct outline {
    cg_lower *L;
    LLVMBuilderRef caller; /* at the call site */
    LLVMValueRef ctx;      /* the slots, in the caller */
    LLVMValueRef fctx;     /* the slots, in the loop function */
    int n, cap;
    int x_slot, out_slot;  /* a lookup loop's operand and result (below) */
} outline;

static LLVMValueRef ctx_slot(cg_lower *L, LLVMBuilderRef b, LLVMValueRef ctx, int i)
{
    LLVMValueRef idx = cg_i64(L, i);
    return LLVMBuildInBoundsGEP2(b, L->t_i64, ctx, &idx, 1, "");
}

/* v as seen inside the loop function. */
static LLVMValueRef pass(outline *o, LLVMValueRef v)
{
    cg_lower *L = o->L;
    if (!v || LLVMIsConstant(v))
        return v;
    if (o->n == o->cap) {
        cg_fail(L, "internal: too many loop operands");
        return v;
    }
    int i = o->n++;
    LLVMBuildStore(o->caller, v, ctx_slot(L, o->caller, o->ctx, i));
    return LLVMBuildLoad2(L->b, LLVMTypeOf(v), ctx_slot(L, L->b, o->fctx, i), "");
}

/* Flat loops of at least this many elements (or of unknown size) run in
 * parallel chunks of at least PARALLEL_GRAIN elements. */
enum { PARALLEL_MIN = 1 << 16, PARALLEL_GRAIN = 1 << 14 };

bool cg_nest_parallel(const nest *N)
{
    const cg_shape *s = &N->c->shape;
    if (!s->known)
        return true; /* cg_rt_parallel_for runs small loops serially */
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n >= PARALLEL_MIN;
}

/* Chunks of the first dim holding at least PARALLEL_GRAIN elements. */
static LLVMValueRef grain_of(nest *N)
{
    cg_lower *L = N->L;
    LLVMValueRef inner = cg_i64(L, 1);
    for (int d = 1; d < N->rank; d++)
        inner = mul(L, inner, N->dims[d]);
    LLVMValueRef one = cg_i64(L, 1);
    LLVMValueRef big = LLVMBuildICmp(L->b, LLVMIntSGT, inner, one, "");
    LLVMValueRef safe = LLVMBuildSelect(L->b, big, inner, one, "");
    LLVMValueRef g = LLVMBuildSDiv(L->b, cg_i64(L, PARALLEL_GRAIN), safe, "");
    LLVMValueRef pos = LLVMBuildICmp(L->b, LLVMIntSGT, g, one, "");
    return LLVMBuildSelect(L->b, pos, g, one, "grain");
}

/*
 * A loop whose result is a function of one bf16 tensor's elements alone
 * (its other operands scalars) is looked up in a table of its results for
 * every bf16 value when it is long (cg_rt_parallel_lookup, cg_lookup.c):
 * worth it where the body is costly: tanh(x*a + b)*c + x on 16M bf16
 * elements takes 4.5 ms computed, 2.1 - 2.2 ms looked up. The operand and
 * the single result the loop stores must be passed in slots, which the
 * runtime points at its own arrays to build the table.
 */
static bool wants_lookup(const nest *N, const outline *o)
{
    const cg_cluster *c = N->c;
    int tensors = 0, stored = 0;
    for (int i = 0; i < N->n_leaves; i++) {
        if (N->leaves[i].scalar)
            continue;
        if (N->leaves[i].dt != AG_BF16)
            return false;
        tensors++;
    }
    for (int i = 0; i < c->n_members; i++) {
        const ir_node *m = c->members[i];
        if (!cg_info_of(N->L, m)->materialize)
            continue;
        size_t size = rt_dtype_size(m->type.dtype);
        if (size != 2 && size != 4)
            return false;
        stored++;
    }
    return N->rank == 1 && tensors == 1 && stored == 1 && !c->fallible && o->x_slot >= 0 &&
           o->out_slot >= 0 && cg_nest_wants_prefetch(N) && cg_has_costly_op(c);
}

/* Whether every scalar the loop reads is a constant of the code: then its
 * table is the same at every call. */
static bool scalars_constant(const nest *N)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].scalar && N->leaves[i].node->opcode != RT_OP_CONST)
            return false;
    return true;
}

/* Zeroed memory of the code's own where the runtime keeps a lookup loop's
 * table from its first call on (cg_rt_parallel_lookup): it lives and dies
 * with the code. */
static LLVMValueRef lookup_cache(cg_lower *L, int out_size)
{
    LLVMTypeRef t = LLVMArrayType2(L->t_i8, (uint64_t)CG_RT_LOOKUP_CACHE_BYTES(out_size));
    LLVMValueRef g = LLVMAddGlobal(L->mod, t, "lookup_cache");
    LLVMSetInitializer(g, LLVMConstNull(t));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 64);
    return g;
}

static LLVMValueRef loop_function(cg_lower *L)
{
    LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
    LLVMValueRef f = LLVMAddFunction(L->mod, "loop", LLVMFunctionType(L->t_void, params, 3, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "nounwind", 0);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "noinline", 0);
    return f;
}

void cg_nest_outlined(nest *N)
{
    cg_lower *L = N->L;
    cg_cluster *c = N->c;
    int cap = N->n_leaves * (N->rank + 1) + c->n_members + N->rank + 1;
    outline o = {.L = L, .cap = cap, .x_slot = -1, .out_slot = -1};
    o.ctx = cg_entry_alloca(L, LLVMArrayType2(L->t_i64, (uint64_t)cap), 16, "loop_ctx");
    o.caller = LLVMCreateBuilderInContext(L->ctx);
    LLVMBasicBlockRef call_site = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(o.caller, call_site);

    LLVMValueRef f = loop_function(L);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    o.fctx = LLVMGetParam(f, 0);

    /* inside: the same nest over values read back from ctx */
    leaf *outer = rt_xmalloc((size_t)(N->n_leaves + 1) * sizeof *outer);
    LLVMValueRef *outer_data = rt_xcalloc((size_t)c->n_members + 1, sizeof *outer_data);
    LLVMValueRef outer_dims[AG_MAX_RANK];
    memcpy(outer, N->leaves, (size_t)N->n_leaves * sizeof *outer);
    memcpy(outer_dims, N->dims, sizeof outer_dims);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar) {
            l->value = pass(&o, l->value);
            continue;
        }
        int before = o.n;
        l->data = pass(&o, l->data);
        if (o.n > before)
            o.x_slot = before;
        for (int d = 0; d < N->rank; d++)
            l->strides[d] = pass(&o, l->strides[d]);
    }
    for (int i = 0; i < c->n_members; i++) {
        cg_info *mi = cg_info_of(L, c->members[i]);
        outer_data[i] = mi->data;
        if (mi->materialize) {
            int before = o.n;
            mi->data = pass(&o, mi->data);
            if (o.n > before)
                o.out_slot = before;
        }
    }
    for (int d = 1; d < N->rank; d++)
        N->dims[d] = pass(&o, N->dims[d]);
    if ((N->group = cg_nest_group_rows(N)))
        cg_nest_make_tiles(N);
    N->prefetch = cg_nest_wants_prefetch(N);
    bool lookup = wants_lookup(N, &o);
    if (N->prefetch) /* and inline its vector tanh (lower_math.c) */
        cg_mark(f, CG_HOT_LOOP);
    cg_nest_level(N, 0, LLVMGetParam(f, 1), LLVMGetParam(f, 2), NULL, NULL);
    N->prefetch = false;
    N->group = 0;
    free(N->tiles);
    free(N->columns);
    N->tiles = NULL;
    N->columns = NULL;
    LLVMBuildRetVoid(L->b);

    memcpy(N->leaves, outer, (size_t)N->n_leaves * sizeof *outer);
    memcpy(N->dims, outer_dims, sizeof outer_dims);
    for (int i = 0; i < c->n_members; i++)
        cg_info_of(L, c->members[i])->data = outer_data[i];
    free(outer);
    free(outer_data);
    LLVMDisposeBuilder(o.caller);

    /* the call */
    LLVMPositionBuilderAtEnd(L->b, call_site);
    if (lookup) {
        const ir_node *out = NULL;
        for (int i = 0; i < c->n_members && !out; i++)
            if (cg_info_of(L, c->members[i])->materialize)
                out = c->members[i];
        int size = (int)rt_dtype_size(out->type.dtype);
        LLVMValueRef args[8] = {f, o.ctx, N->dims[0], grain_of(N), cg_i32(L, o.x_slot),
                                cg_i32(L, o.out_slot), cg_i32(L, size),
                                scalars_constant(N) ? lookup_cache(L, size)
                                                    : LLVMConstNull(L->t_ptr)};
        cg_call(L, &L->h.parallel_lookup, args, 8, "");
    } else if (cg_nest_parallel(N)) {
        LLVMValueRef args[4] = {f, o.ctx, N->dims[0], grain_of(N)};
        cg_call(L, &L->h.parallel_for, args, 4, "");
    } else {
        LLVMValueRef args[3] = {o.ctx, cg_i64(L, 0), N->dims[0]};
        LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
        LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, args, 3, "");
    }
}
