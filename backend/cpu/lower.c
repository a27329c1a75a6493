/*
 * lower.c - lowers a function's graph to one LLVM function.
 *
 * The generated function is
 *
 *     i32 @sym(ptr %args, ptr %results)
 *
 * where args[i] is the rt_value of parameter i (borrowed) and results[i]
 * receives a new rt_value per result; it returns 1, or 0 after an error
 * was reported (results untouched). Everything else it needs is in its
 * own frame, so it is reentrant.
 *
 * Values (see lower_plan.c for how each is chosen):
 *   - native scalars live in registers (SSA values, phis across loop
 *     iterations and branches) and are boxed only where they escape: into
 *     a fallback call (a stack box, or a heap box for ops that keep their
 *     input) or as a result;
 *   - frame buffers hold small intermediate tensors that only native code
 *     reads (fused loops, matrix products): the memory plan's buffers
 *     (passes/memplan.c), shared by values whose lives do not overlap;
 *     past a frame budget such tensors are rt_values instead;
 *   - rt_values ("boxes") hold everything else. A box the function made is
 *     owned by the node that made it and freed right after its last use,
 *     or handed over when it is a result of its graph; cond and while own
 *     their boxed results, and a `get` borrows one.
 *
 * The error path: every owned box is also stored in a slot of a frame
 * array (cleared when freed), so any failure jumps to one block that frees
 * whatever is still held and returns 0. The error itself has been
 * reported by the runtime at the failing node's location before the jump.
 *
 * Control flow is native: cond is a branch and a join with phis, while is
 * a loop whose header evaluates the ^cond region. Loop variables that are
 * boxes are owned by the loop: each iteration's new values are aliased
 * from the body's results and the old ones freed, as in ir/exec.c.
 */
#include "cg_target.h"
#include "lower.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

bool cg_fail(cg_lower *L, const char *fmt, ...)
{
    if (!L->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err, L->errlen, fmt, ap);
        va_end(ap);
    }
    L->failed = true;
    return false;
}

/* ------------------------------------------------------- small builders */

LLVMValueRef cg_i32(cg_lower *L, int64_t v) { return LLVMConstInt(L->t_i32, (unsigned long long)v, 1); }
LLVMValueRef cg_i64(cg_lower *L, int64_t v) { return LLVMConstInt(L->t_i64, (unsigned long long)v, 1); }

LLVMValueRef cg_ptr_const(cg_lower *L, const void *p)
{
    return LLVMConstIntToPtr(LLVMConstInt(L->t_i64, (unsigned long long)(uintptr_t)p, 0),
                             L->t_ptr);
}

LLVMValueRef cg_node_ref(cg_lower *L, const ir_node *n)
{
    if (!L->node_table)
        return cg_ptr_const(L, n); /* the graph outlives the JIT's code */
    LLVMValueRef idx[2] = {cg_i64(L, 0), cg_i64(L, n->id)};
    LLVMTypeRef t = LLVMGlobalGetValueType(L->node_table);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(L->b, t, L->node_table, idx, 2, "");
    LLVMValueRef node = LLVMBuildLoad2(L->b, L->t_ptr, at, "node");
    LLVMSetMetadata(node, LLVMGetMDKindIDInContext(L->ctx, "invariant.load", 14),
                    LLVMMetadataAsValue(L->ctx, LLVMMDNodeInContext2(L->ctx, NULL, 0)));
    return node;
}

LLVMValueRef cg_const_bytes(cg_lower *L, const void *data, size_t bytes, const char *name)
{
    LLVMValueRef init = LLVMConstStringInContext2(L->ctx, data, bytes, 1);
    LLVMValueRef g = LLVMAddGlobal(L->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetAlignment(g, 64);
    return g;
}

/* A literal's data: its address in the graph's arena for the JIT, a
 * constant of the module ahead of time. */
static LLVMValueRef literal_data(cg_lower *L, const rt_value *lit)
{
    if (!L->node_table)
        return cg_ptr_const(L, lit->data);
    return cg_const_bytes(L, lit->data, (size_t)lit->numel * rt_dtype_size(lit->dtype),
                          "literal");
}

LLVMValueRef cg_call(cg_lower *L, cg_fn *f, LLVMValueRef *args, unsigned n, const char *name)
{
    return LLVMBuildCall2(L->b, f->type, f->value, args, n, name);
}

LLVMBasicBlockRef cg_new_block(cg_lower *L, const char *name)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(L->b));
    return LLVMAppendBasicBlockInContext(L->ctx, fn, name);
}

LLVMValueRef cg_dims_global(cg_lower *L, int rank, const int64_t *dims)
{
    LLVMValueRef elems[AG_MAX_RANK + 1];
    int n = rank > 0 ? rank : 1;
    for (int i = 0; i < n; i++)
        elems[i] = cg_i64(L, rank > 0 ? dims[i] : 0);
    LLVMValueRef init = LLVMConstArray2(L->t_i64, elems, (uint64_t)n);
    LLVMValueRef g = LLVMAddGlobal(L->mod, LLVMTypeOf(init), "dims");
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return g;
}

LLVMValueRef cg_entry_alloca(cg_lower *L, LLVMTypeRef t, unsigned align, const char *name)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(L->ctx);
    LLVMPositionBuilderAtEnd(b, L->entry);
    LLVMValueRef a = LLVMBuildAlloca(b, t, name);
    LLVMSetAlignment(a, align);
    LLVMDisposeBuilder(b);
    return a;
}

static LLVMValueRef gep_ptr(cg_lower *L, LLVMValueRef base, int i)
{
    LLVMValueRef idx = cg_i64(L, i);
    return LLVMBuildGEP2(L->b, L->t_ptr, base, &idx, 1, "");
}

/* ---------------------------------------------------------- declarations */

void cg_add_attr(cg_lower *L, LLVMValueRef f, unsigned index, const char *name, uint64_t value)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(f, index, LLVMCreateEnumAttribute(L->ctx, kind, value));
}

void cg_add_call_attr(cg_lower *L, LLVMValueRef call, const char *name, uint64_t value)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(L->ctx, kind, value));
}

static void add_attr(cg_lower *L, LLVMValueRef f, const char *name, uint64_t value)
{
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, name, value);
}

static void declare(cg_lower *L, cg_fn *f, const char *name, LLVMTypeRef ret,
                    LLVMTypeRef *params, unsigned n)
{
    f->type = LLVMFunctionType(ret, params, n, 0);
    f->value = LLVMAddFunction(L->mod, name, f->type);
    add_attr(L, f->value, "nounwind", 0);
}

/* memory(argmem: read): they only read the value they are given. */
enum { MEMORY_NONE = 0, MEMORY_ARGMEM_READ = 1 };

static void declare_helpers(cg_lower *L)
{
    LLVMTypeRef p = L->t_ptr, i32 = L->t_i32, i64 = L->t_i64, v = L->t_void;
    cg_helpers *h = &L->h;
    declare(L, &h->apply, "cg_rt_apply", p, (LLVMTypeRef[]){p, p}, 2);
    declare(L, &h->apply_typed, "cg_rt_apply_typed", p, (LLVMTypeRef[]){p, p}, 2);
    declare(L, &h->fail, "cg_rt_fail", v, (LLVMTypeRef[]){p, p}, 2);
    declare(L, &h->free_, "cg_rt_free", v, (LLVMTypeRef[]){p}, 1);
    declare(L, &h->alias, "cg_rt_alias", p, (LLVMTypeRef[]){p}, 1);
    declare(L, &h->new_, "cg_rt_new", p, (LLVMTypeRef[]){p, i32, i32, p}, 4);
    declare(L, &h->try_new, "cg_rt_try_new", p, (LLVMTypeRef[]){p, i32, i32, p}, 4);
    declare(L, &h->scalar, "cg_rt_scalar", p, (LLVMTypeRef[]){i32, p}, 2);
    declare(L, &h->box_init, "cg_rt_box_init", v, (LLVMTypeRef[]){p, i32, i32, p, p}, 5);
    declare(L, &h->data, "cg_rt_data", p, (LLVMTypeRef[]){p}, 1);
    declare(L, &h->dims, "cg_rt_dims", p, (LLVMTypeRef[]){p}, 1);
    declare(L, &h->truth, "cg_rt_truth", i32, (LLVMTypeRef[]){p}, 1);
    declare(L, &h->release, "cg_rt_release", v, (LLVMTypeRef[]){p, i32}, 2);
    declare(L, &h->ipow, "cg_rt_ipow", i64, (LLVMTypeRef[]){i64, i64}, 2);
    declare(L, &h->parallel_for, "cg_rt_parallel_for", v, (LLVMTypeRef[]){p, p, i64, i64}, 4);
    declare(L, &h->parallel_lookup, "cg_rt_parallel_lookup", v,
            (LLVMTypeRef[]){p, p, i64, i64, i32, i32, i32, p}, 8);
    declare(L, &h->int_check, "cg_rt_int_check", i32, (LLVMTypeRef[]){p, i32, i64, i32}, 4);
    declare(L, &h->matmul_bf16_amx, "cg_rt_matmul_bf16_amx", i32,
            (LLVMTypeRef[]){p, p, p, p, i64, i64, i64, i64}, 8);
    declare(L, &h->qlayer, "cg_rt_qlayer", p, (LLVMTypeRef[]){p, p}, 2);
    declare(L, &h->qlayer_packed, "cg_rt_qlayer_packed", p, (LLVMTypeRef[]){p, p, p, p}, 4);
    declare(L, &h->qproduct, "cg_rt_qproduct", p, (LLVMTypeRef[]){p, p, p, p}, 4);
    add_attr(L, h->data.value, "memory", MEMORY_ARGMEM_READ);
    add_attr(L, h->dims.value, "memory", MEMORY_ARGMEM_READ);
    add_attr(L, h->ipow.value, "memory", MEMORY_NONE);
    add_attr(L, h->ipow.value, "willreturn", 0);
    add_attr(L, h->int_check.value, "memory", MEMORY_ARGMEM_READ);
}

/* ------------------------------------------------------------- values */

static LLVMValueRef slot_ptr(cg_lower *L, int slot) { return gep_ptr(L, L->slots, slot); }

static void hold(cg_lower *L, int slot, LLVMValueRef box)
{
    LLVMBuildStore(L->b, box, slot_ptr(L, slot));
}

static void release(cg_lower *L, int slot, LLVMValueRef box)
{
    LLVMValueRef arg = box;
    cg_call(L, &L->h.free_, &arg, 1, "");
    LLVMBuildStore(L->b, LLVMConstNull(L->t_ptr), slot_ptr(L, slot));
}

static LLVMValueRef data_of(cg_lower *L, LLVMValueRef box)
{
    return cg_call(L, &L->h.data, &box, 1, "data");
}

LLVMValueRef cg_get_nat(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    if (ni->nat)
        return ni->nat;
    /* a boxed scalar whose register copy was not made in advance */
    LLVMValueRef data = ni->data ? ni->data : data_of(L, ni->box);
    return cg_load_elem(L, n->type.dtype, data);
}

/* A scalar register value's bits, stored in box_bits[i] as in memory. */
static LLVMValueRef spill_bits(cg_lower *L, int i, ag_dtype dt, LLVMValueRef v)
{
    LLVMValueRef idx = cg_i64(L, i);
    LLVMValueRef p = LLVMBuildGEP2(L->b, L->t_i64, L->box_bits, &idx, 1, "");
    cg_store_elem(L, dt, v, p);
    return p;
}

/*
 * Node m's value as an rt_value for operand i of a runtime call. Scalars
 * in registers are boxed in the frame (box_pool[i]), or on the heap when
 * heap is set (the callee keeps the value); *tmp then receives the box to
 * free after the call.
 */
static LLVMValueRef operand_box(cg_lower *L, const ir_node *m, int i, bool heap,
                                LLVMValueRef *tmp)
{
    cg_info *mi = cg_info_of(L, m);
    ag_dtype dt = m->type.dtype;
    *tmp = NULL;
    if (mi->box)
        return mi->box;
    if (mi->repr == CG_NAT || mi->nat) {
        LLVMValueRef bits = spill_bits(L, i, dt, cg_get_nat(L, m));
        if (heap) {
            LLVMValueRef args[2] = {cg_i32(L, dt), bits};
            *tmp = cg_call(L, &L->h.scalar, args, 2, "box");
            return *tmp;
        }
        LLVMValueRef idx[2] = {cg_i64(L, 0), cg_i64(L, i)};
        LLVMValueRef box = LLVMBuildGEP2(L->b, LLVMGetAllocatedType(L->box_pool), L->box_pool,
                                         idx, 2, "");
        LLVMValueRef args[5] = {box, cg_i32(L, dt), cg_i32(L, 0), LLVMConstNull(L->t_ptr), bits};
        cg_call(L, &L->h.box_init, args, 5, "");
        return box;
    }
    /* a literal read in place, lent to a call that does not keep it (or a
     * frame buffer, on error paths) */
    LLVMValueRef idx[2] = {cg_i64(L, 0), cg_i64(L, i)};
    LLVMValueRef box = LLVMBuildGEP2(L->b, LLVMGetAllocatedType(L->box_pool), L->box_pool,
                                     idx, 2, "");
    LLVMValueRef args[5] = {box, cg_i32(L, dt), cg_i32(L, mi->shape.rank),
                            cg_dims_global(L, mi->shape.rank, mi->shape.dims), mi->data};
    cg_call(L, &L->h.box_init, args, 5, "");
    return box;
}

bool cg_keeps_operand(const ir_node *n, int i)
{
    if (n->opcode == RT_OP_TA_WRITE)
        return i == 2;
    return i == 0 && (rt_ops[n->opcode].flags & RT_F_ALIAS);
}

/* Fills in_array with n's operands as boxes; heap temporaries go to tmps. */
static void box_operands(cg_lower *L, const ir_node *n, bool for_fail, LLVMValueRef *tmps)
{
    for (int i = 0; i < n->n_in; i++) {
        LLVMValueRef box = operand_box(L, n->in[i], i, !for_fail && cg_keeps_operand(n, i),
                                       &tmps[i]);
        LLVMBuildStore(L->b, box, gep_ptr(L, L->in_array, i));
    }
}

void cg_check_or_fail(cg_lower *L, LLVMValueRef bad, const ir_node *n)
{
    LLVMBasicBlockRef err = cg_new_block(L, "error");
    LLVMBasicBlockRef ok = cg_new_block(L, "ok");
    LLVMBuildCondBr(L->b, bad, err, ok);
    LLVMPositionBuilderAtEnd(L->b, err);
    LLVMValueRef tmps[n->n_in + 1];
    box_operands(L, n, true, tmps);
    LLVMValueRef args[2] = {cg_node_ref(L, n), L->in_array};
    cg_call(L, &L->h.fail, args, 2, "");
    LLVMBuildBr(L->b, L->fail_bb);
    LLVMPositionBuilderAtEnd(L->b, ok);
}

/* Branches to the error path when box is NULL (the runtime reported). */
static void fail_if_null(cg_lower *L, LLVMValueRef box)
{
    LLVMBasicBlockRef ok = cg_new_block(L, "ok");
    LLVMBuildCondBr(L->b, LLVMBuildIsNull(L->b, box, ""), L->fail_bb, ok);
    LLVMPositionBuilderAtEnd(L->b, ok);
}

/* After a box exists for n: fetch what its consumers need. */
static void finish_box(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    if ((ni->need_data || ni->need_nat) && !ni->data)
        ni->data = data_of(L, ni->box);
    if (ni->need_nat && !ni->nat)
        ni->nat = cg_load_elem(L, n->type.dtype, ni->data);
}

/* ------------------------------------------------------ frame buffers */

/* All frame buffers of a function together stay below this, so that
 * generated code runs on small thread stacks too. */
enum { FRAME_MAX_BYTES = 256 * 1024 };

/*
 * n's frame buffer: the memory plan's buffer for n (passes/memplan.c),
 * which values whose lives do not overlap share, and which a loop may
 * write in place over a value it reads. Made at its first use; NULL when
 * the frame is full (the value is then an rt_value).
 */
static LLVMValueRef buf_alloc(cg_lower *L, const ir_node *n)
{
    int b = n->id < L->memory->n_ids ? L->memory->buffer[n->id] : -1;
    if (b < 0 || L->buf_full[b])
        return NULL;
    if (L->buf_ptr[b])
        return L->buf_ptr[b];
    uint64_t size = ((uint64_t)L->memory->buffer_bytes[b] + 63) / 64 * 64;
    if (L->frame_bytes + size > FRAME_MAX_BYTES) {
        L->buf_full[b] = true;
        return NULL;
    }
    L->frame_bytes += size;
    L->buf_ptr[b] = cg_entry_alloca(L, LLVMArrayType2(L->t_i8, size ? size : 64), 64, "buf");
    return L->buf_ptr[b];
}

/* Outputs from this size up, or of a size known only at run time, are
 * allocated with cg_rt_try_new and fail like the eager kernel when the
 * memory is not there. A smaller static buffer cannot be what exhausts
 * memory; cg_rt_new spares every function a failure path for it. */
#define CHECKED_ALLOC_BYTES (INT64_C(1) << 20)

static bool alloc_may_fail(cg_lower *L, const ir_node *n)
{
    const cg_shape *s = &cg_info_of(L, n)->shape;
    if (!s->known)
        return true;
    ag_shape shape = {.rank = s->rank};
    memcpy(shape.dims, s->dims, sizeof s->dims);
    /* a known shape passed rt_shape_size_ok: the product fits */
    int64_t numel = rt_shape_numel(&shape);
    return numel < 0 ||
           numel >= CHECKED_ALLOC_BYTES / (int64_t)rt_dtype_size(n->type.dtype);
}

void cg_alloc_output(cg_lower *L, const ir_node *n, LLVMValueRef dims)
{
    cg_info *ni = cg_info_of(L, n);
    if (ni->repr == CG_BUF) {
        ni->data = buf_alloc(L, n);
        if (ni->data)
            return;
        dims = cg_dims_global(L, ni->shape.rank, ni->shape.dims); /* the frame is full */
    }
    LLVMValueRef args[4] = {cg_node_ref(L, n), cg_i32(L, n->type.dtype),
                            cg_i32(L, ni->shape.rank), dims};
    bool checked = alloc_may_fail(L, n);
    ni->box = cg_call(L, checked ? &L->h.try_new : &L->h.new_, args, 4, "out");
    if (checked)
        fail_if_null(L, ni->box); /* out of memory, already reported */
    hold(L, ni->slot, ni->box);
    ni->data = data_of(L, ni->box);
}

/* Frees what n holds once it is dead. */
static void kill(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    if (ni->kind == CG_K_REGION) {
        for (int i = 0; i < n->n_results; i++)
            if (ni->res_repr[i] == CG_BOX)
                release(L, ni->res_slot[i], ni->res_val[i]);
    } else if (ni->owned && ni->box) {
        release(L, ni->slot, ni->box); /* (a frame buffer that had to be a box too) */
    } /* a frame buffer is the memory plan's to reuse */
}

/* ------------------------------------------------------------- nodes */

static bool emit_graph(cg_lower *L, const ir_graph *g, LLVMValueRef *out,
                       const cg_repr *out_repr);
static LLVMValueRef owned_box(cg_lower *L, const ir_node *m);

static void emit_fallback(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    LLVMValueRef tmps[n->n_in + 1];
    box_operands(L, n, false, tmps);
    /* an int8 product with its constant weight packed (lower_qpack.c) */
    LLVMValueRef args[4] = {cg_node_ref(L, n), L->in_array};
    bool packed = (n->opcode == RT_OP_QMATMUL || n->opcode == RT_OP_QCONV2D) &&
                  cg_packed_weight(L, n->in[1], args + 2);
    /* native consumers rely on the static type: the runtime checks it */
    cg_fn *apply = packed ? &L->h.qproduct : ni->check_type ? &L->h.apply_typed : &L->h.apply;
    LLVMValueRef r = cg_call(L, apply, args, packed ? 4 : 2, rt_ops[n->opcode].name);
    for (int i = 0; i < n->n_in; i++)
        if (tmps[i])
            cg_call(L, &L->h.free_, &tmps[i], 1, "");
    fail_if_null(L, r);
    ni->box = r;
    hold(L, ni->slot, r);
    finish_box(L, n);
}

/* A static-range layer (lower_qlayer.c): its operands, which the call
 * does not keep, as boxes; its result a new value, as a fallback's. */
static void emit_qlayer(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    const ir_node *ops[CG_QLAYER_OPERANDS];
    cg_qlayer_operands(n, ops);
    for (int i = 0; i < CG_QLAYER_OPERANDS; i++) {
        LLVMValueRef tmp, box = operand_box(L, ops[i], i, false, &tmp);
        LLVMBuildStore(L->b, box, gep_ptr(L, L->in_array, i));
    }
    LLVMValueRef args[4] = {cg_node_ref(L, n), L->in_array};
    LLVMValueRef r = cg_packed_weight(L, ops[1], args + 2)
                         ? cg_call(L, &L->h.qlayer_packed, args, 4, "qlayer")
                         : cg_call(L, &L->h.qlayer, args, 2, "qlayer");
    fail_if_null(L, r);
    ni->box = r;
    hold(L, ni->slot, r);
    finish_box(L, n);
}

static void emit_scalar(cg_lower *L, const ir_node *n)
{
    LLVMValueRef args[4];
    for (int i = 0; i < n->n_in; i++)
        args[i] = cg_get_nat(L, n->in[i]);
    if (pass_fails_on_data(n))
        cg_check_or_fail(L, cg_emit_elem_bad(L, n, args[1]), n);
    cg_info_of(L, n)->nat = cg_emit_elem(L, n, args);
}

static void emit_const(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    const rt_value *lit = n->attrs.literal;
    if (ni->repr == CG_NAT)
        ni->nat = cg_opaque_if_const(L, cg_const_elem(L, n->type.dtype, lit->data, 0));
    else
        ni->data = literal_data(L, lit);
}

/* A region's params take the values they stand for; data pointers and
 * registers are fetched here when the region's consumers need them. */
static void bind_params(cg_lower *L, const ir_graph *g, LLVMValueRef *const *vals)
{
    for (int i = 0; i < g->n_params; i++) {
        cg_info *pi = cg_info_of(L, g->params[i]);
        pi->nat = vals[0][i];
        pi->box = vals[1][i];
        pi->data = vals[2] ? vals[2][i] : NULL;
        if ((pi->need_data || (pi->need_nat && !pi->nat)) && !pi->data && pi->box)
            pi->data = data_of(L, pi->box);
        if (pi->need_nat && !pi->nat)
            pi->nat = cg_load_elem(L, g->params[i]->type.dtype, pi->data);
    }
}

static LLVMValueRef truth(cg_lower *L, const ir_node *pred)
{
    cg_info *pi = cg_info_of(L, pred);
    if (pi->repr == CG_NAT || pi->nat) {
        LLVMValueRef v = cg_get_nat(L, pred);
        ag_dtype dt = pred->type.dtype;
        if (dt == AG_BOOL)
            return v;
        if (dt == AG_F32 || dt == AG_F64)
            return LLVMBuildFCmp(L->b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "");
        return LLVMBuildICmp(L->b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
    }
    LLVMValueRef t = cg_call(L, &L->h.truth, &pi->box, 1, "");
    return LLVMBuildICmp(L->b, LLVMIntNE, t, cg_i32(L, 0), "");
}

static LLVMTypeRef result_type(cg_lower *L, const ir_node *n, int i)
{
    return cg_info_of(L, n)->res_repr[i] == CG_NAT ? cg_reg_type(L, n->results[i].dtype)
                                                   : L->t_ptr;
}

static void emit_cond(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    int np = n->n_in - 1, nr = n->n_results;
    LLVMValueRef pred = truth(L, n->in[0]);
    LLVMBasicBlockRef bb[2] = {cg_new_block(L, "then"), cg_new_block(L, "else")};
    LLVMBasicBlockRef join = cg_new_block(L, "endif"), ends[2];
    LLVMBuildCondBr(L->b, pred, bb[0], bb[1]);

    LLVMValueRef *pv[3], *res[2];
    for (int k = 0; k < 3; k++)
        pv[k] = rt_xcalloc((size_t)np + 1, sizeof *pv[k]);
    for (int i = 0; i < np; i++) {
        const cg_info *oi = cg_info_of(L, n->in[i + 1]);
        pv[0][i] = oi->nat;
        pv[1][i] = oi->box;
        pv[2][i] = oi->data;
    }
    for (int r = 0; r < 2; r++) {
        res[r] = rt_xcalloc((size_t)nr + 1, sizeof *res[r]);
        LLVMPositionBuilderAtEnd(L->b, bb[r]);
        bind_params(L, n->region[r], pv);
        emit_graph(L, n->region[r], res[r], ni->res_repr);
        ends[r] = LLVMGetInsertBlock(L->b);
        LLVMBuildBr(L->b, join);
    }
    LLVMPositionBuilderAtEnd(L->b, join);
    ni->res_val = rt_xcalloc((size_t)nr + 1, sizeof *ni->res_val);
    for (int i = 0; i < nr; i++) {
        LLVMValueRef phi = LLVMBuildPhi(L->b, result_type(L, n, i), "");
        LLVMValueRef in[2] = {res[0][i], res[1][i]};
        LLVMAddIncoming(phi, in, ends, 2);
        ni->res_val[i] = phi;
    }
    for (int i = 0; i < nr; i++)
        if (ni->res_repr[i] == CG_BOX)
            hold(L, ni->res_slot[i], ni->res_val[i]);
    for (int k = 0; k < 3; k++)
        free(pv[k]);
    free(res[0]);
    free(res[1]);
}

static void emit_while(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    int nv = n->n_in;
    LLVMValueRef *init = rt_xcalloc((size_t)nv + 1, sizeof *init);
    LLVMValueRef *next = rt_xcalloc((size_t)nv + 1, sizeof *next);
    LLVMValueRef *pv[3] = {rt_xcalloc((size_t)nv + 1, sizeof(LLVMValueRef)),
                           rt_xcalloc((size_t)nv + 1, sizeof(LLVMValueRef)), NULL};
    /* the loop owns its variables: boxes are aliased from the operands */
    for (int i = 0; i < nv; i++) {
        if (ni->res_repr[i] == CG_NAT) {
            init[i] = cg_get_nat(L, n->in[i]);
        } else {
            init[i] = owned_box(L, n->in[i]);
            hold(L, ni->res_slot[i], init[i]);
        }
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
    LLVMBasicBlockRef header = cg_new_block(L, "while");
    LLVMBasicBlockRef body = cg_new_block(L, "do");
    LLVMBasicBlockRef exit = cg_new_block(L, "endwhile");
    LLVMBuildBr(L->b, header);

    LLVMPositionBuilderAtEnd(L->b, header);
    LLVMValueRef *phis = rt_xcalloc((size_t)nv + 1, sizeof *phis);
    for (int i = 0; i < nv; i++) {
        phis[i] = LLVMBuildPhi(L->b, result_type(L, n, i), "");
        LLVMAddIncoming(phis[i], &init[i], &pre, 1);
        bool nat = ni->res_repr[i] == CG_NAT;
        pv[0][i] = nat ? phis[i] : NULL;
        pv[1][i] = nat ? NULL : phis[i];
    }
    static const cg_repr pred_repr = CG_NAT;
    LLVMValueRef go;
    bind_params(L, n->region[0], pv);
    emit_graph(L, n->region[0], &go, &pred_repr);
    LLVMBuildCondBr(L->b, go, body, exit);

    LLVMPositionBuilderAtEnd(L->b, body);
    bind_params(L, n->region[1], pv);
    emit_graph(L, n->region[1], next, ni->res_repr);
    for (int i = 0; i < nv; i++) {
        if (ni->res_repr[i] == CG_BOX) {
            cg_call(L, &L->h.free_, &phis[i], 1, "");
            hold(L, ni->res_slot[i], next[i]);
        }
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
    LLVMBuildBr(L->b, header);
    for (int i = 0; i < nv; i++)
        LLVMAddIncoming(phis[i], &next[i], &latch, 1);

    LLVMPositionBuilderAtEnd(L->b, exit);
    ni->res_val = phis;
    free(init);
    free(next);
    free(pv[0]);
    free(pv[1]);
}

static void emit_get(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    LLVMValueRef v = cg_info_of(L, n->in[0])->res_val[n->index];
    if (ni->repr == CG_NAT) {
        ni->nat = v;
        return;
    }
    ni->box = v;
    finish_box(L, n);
}

static void emit_node(cg_lower *L, const ir_node *n)
{
    cg_info *ni = cg_info_of(L, n);
    switch (ni->kind) {
    case CG_K_FALLBACK: emit_fallback(L, n); break;
    case CG_K_SCALAR: emit_scalar(L, n); break;
    case CG_K_CONST: emit_const(L, n); break;
    case CG_K_MATMUL: cg_emit_matmul(L, n); break;
    case CG_K_GET: emit_get(L, n); break;
    case CG_K_REGION:
        if (n->opcode == IR_COND)
            emit_cond(L, n);
        else
            emit_while(L, n);
        break;
    case CG_K_FUSED: {
        cg_cluster *c = &L->clusters[ni->cluster];
        if (c->last == n)
            cg_emit_cluster(L, c);
        break;
    }
    case CG_K_QLAYER: emit_qlayer(L, n); break;
    case CG_K_PARAM:
    case CG_K_ABSORBED: break;
    }
}

/* A new rt_value holding m's value, owned by the receiver: an alias of
 * m's box, or a register scalar boxed on the heap. (The plan never gives
 * a frame buffer to a consumer that needs a box.) */
static LLVMValueRef owned_box(cg_lower *L, const ir_node *m)
{
    cg_info *mi = cg_info_of(L, m);
    if (mi->box)
        return cg_call(L, &L->h.alias, &mi->box, 1, "");
    LLVMValueRef tmp = NULL;
    if (mi->repr == CG_NAT || mi->nat)
        operand_box(L, m, 0, true, &tmp);
    if (!tmp) {
        cg_fail(L, "internal: %%%d has no value to box", m->id);
        return LLVMConstNull(L->t_ptr);
    }
    return tmp;
}

/* The value of result node m as repr wants it: a register, or a new box
 * the receiver owns. */
static LLVMValueRef yield_value(cg_lower *L, const ir_node *m, cg_repr repr)
{
    return repr == CG_NAT ? cg_get_nat(L, m) : owned_box(L, m);
}

/* Whether g's result i can be handed over instead of aliased: a box this
 * graph made, that dies here, and that no other result also yields. */
static bool movable(cg_lower *L, const ir_graph *g, int i)
{
    const ir_node *m = g->results[i];
    const cg_info *mi = cg_info_of(L, m);
    if (!mi->owned || !mi->box || mi->kind == CG_K_REGION || mi->last_use != INT_MAX ||
        m->graph != g)
        return false;
    for (int j = 0; j < g->n_results; j++)
        if (j != i && g->results[j] == m)
            return false;
    return true;
}

/* Hands m's box to the receiver, which holds it in its own slot: m no
 * longer owns it, so it is neither freed at the graph's end nor on the
 * error path. */
static LLVMValueRef move_box(cg_lower *L, const ir_node *m)
{
    cg_info *mi = cg_info_of(L, m);
    LLVMValueRef box = mi->box;
    LLVMBuildStore(L->b, LLVMConstNull(L->t_ptr), slot_ptr(L, mi->slot));
    mi->box = NULL;
    return box;
}

/* Emits g's live nodes in program order, freeing each value after its
 * last use, then its results into out[] (one per result, as out_repr
 * says), then frees what is left. */
static bool emit_graph(cg_lower *L, const ir_graph *g, LLVMValueRef *out,
                       const cg_repr *out_repr)
{
    int n = 0;
    for (const ir_node *x = g->first; x; x = x->next)
        n++;
    /* dying[p]: nodes whose last use is at position p; dying[n]: at the end */
    int *head = rt_xmalloc((size_t)(n + 1) * sizeof *head);
    int *next = rt_xmalloc((size_t)(n + 1) * sizeof *next);
    const ir_node **nodes = rt_xmalloc((size_t)(n + 1) * sizeof *nodes);
    for (int p = 0; p <= n; p++)
        head[p] = -1;
    int k = 0;
    for (const ir_node *x = g->first; x; x = x->next, k++) {
        const cg_info *xi = cg_info_of(L, x);
        nodes[k] = x;
        if (!xi->live)
            continue;
        int p = xi->last_use == INT_MAX ? n : xi->last_use;
        next[k] = head[p];
        head[p] = k;
    }
    k = 0;
    for (const ir_node *x = g->first; x; x = x->next, k++) {
        if (!cg_info_of(L, x)->live)
            continue;
        emit_node(L, x);
        for (int d = head[k]; d >= 0; d = next[d])
            kill(L, nodes[d]);
    }
    for (int i = 0; i < g->n_results; i++) {
        cg_repr want = g->parent ? out_repr[i] : CG_BOX;
        LLVMValueRef v = want == CG_BOX && movable(L, g, i) ? move_box(L, g->results[i])
                                                             : yield_value(L, g->results[i], want);
        if (g->parent)
            out[i] = v;
        else
            LLVMBuildStore(L->b, v, gep_ptr(L, L->results, i));
    }
    for (int d = head[n]; d >= 0; d = next[d])
        kill(L, nodes[d]);
    free(head);
    free(next);
    free(nodes);
    return !L->failed;
}

/* ------------------------------------------------------------ function */

static void init_types(cg_lower *L)
{
    L->t_void = LLVMVoidTypeInContext(L->ctx);
    L->t_i1 = LLVMInt1TypeInContext(L->ctx);
    L->t_i8 = LLVMInt8TypeInContext(L->ctx);
    L->t_i16 = LLVMInt16TypeInContext(L->ctx);
    L->t_i32 = LLVMInt32TypeInContext(L->ctx);
    L->t_i64 = LLVMInt64TypeInContext(L->ctx);
    L->t_f32 = LLVMFloatTypeInContext(L->ctx);
    L->t_f64 = LLVMDoubleTypeInContext(L->ctx);
    L->t_ptr = LLVMPointerTypeInContext(L->ctx, 0);
    L->t_box = LLVMArrayType2(L->t_i8, sizeof(rt_value));
}

/* The frame arrays the generated code shares between nodes. */
static void make_frame(cg_lower *L)
{
    int m = L->max_inputs;
    L->in_array = cg_entry_alloca(L, LLVMArrayType2(L->t_ptr, (uint64_t)m), 16, "in");
    L->box_pool = cg_entry_alloca(L, LLVMArrayType2(L->t_box, (uint64_t)m), 16, "boxes");
    L->box_bits = cg_entry_alloca(L, LLVMArrayType2(L->t_i64, (uint64_t)m), 16, "bits");
    int ns = L->n_slots ? L->n_slots : 1;
    L->slots = cg_entry_alloca(L, LLVMArrayType2(L->t_ptr, (uint64_t)ns), 16, "slots");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(L->ctx);
    LLVMPositionBuilderAtEnd(b, L->entry);
    LLVMBuildMemSet(b, L->slots, LLVMConstInt(L->t_i8, 0, 0),
                    cg_i64(L, (int64_t)ns * (int64_t)sizeof(void *)), 16);
    LLVMDisposeBuilder(b);
}

static void make_fail_block(cg_lower *L)
{
    L->fail_bb = LLVMAppendBasicBlockInContext(L->ctx, L->func, "fail");
    LLVMPositionBuilderAtEnd(L->b, L->fail_bb);
    LLVMValueRef args[2] = {L->slots, cg_i32(L, L->n_slots)};
    if (L->n_slots)
        cg_call(L, &L->h.release, args, 2, "");
    LLVMBuildRet(L->b, cg_i32(L, 0));
}

static void bind_function_params(cg_lower *L)
{
    const ir_graph *g = L->fn->body;
    for (int i = 0; i < g->n_params; i++) {
        cg_info *pi = cg_info_of(L, g->params[i]);
        LLVMValueRef box = LLVMBuildLoad2(L->b, L->t_ptr, gep_ptr(L, L->args, i), "arg");
        pi->box = box;
        finish_box(L, g->params[i]);
    }
}

static void emit_function(cg_lower *L, const char *sym)
{
    LLVMTypeRef params[2] = {L->t_ptr, L->t_ptr};
    LLVMTypeRef ft = LLVMFunctionType(L->t_i32, params, 2, 0);
    L->func = LLVMAddFunction(L->mod, sym, ft);
    add_attr(L, L->func, "nounwind", 0);
    L->args = LLVMGetParam(L->func, 0);
    L->results = LLVMGetParam(L->func, 1);
    LLVMSetValueName2(L->args, "args", 4);
    LLVMSetValueName2(L->results, "results", 7);
    L->entry = LLVMAppendBasicBlockInContext(L->ctx, L->func, "entry");
    make_frame(L);
    make_fail_block(L);
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(L->ctx, L->func, "start");
    LLVMPositionBuilderAtEnd(L->b, start);
    bind_function_params(L);
    emit_graph(L, L->fn->body, NULL, NULL);
    LLVMBuildRet(L->b, cg_i32(L, 1));
    /* the entry block holds only allocas, so that any node may add one */
    LLVMPositionBuilderAtEnd(L->b, L->entry);
    LLVMBuildBr(L->b, start);
}

static void make_node_table(cg_lower *L, const char *name)
{
    LLVMTypeRef t = LLVMArrayType2(L->t_ptr, (uint64_t)(L->fn->next_id ? L->fn->next_id : 1));
    L->node_table = LLVMAddGlobal(L->mod, t, name);
    LLVMSetInitializer(L->node_table, LLVMConstNull(t));
    LLVMSetLinkage(L->node_table, LLVMInternalLinkage);
}

/* Whether m names a CPU or features (AG_CPU, agc --cpu). */
static bool names_cpu(const cg_machine *m) { return m->cpu[0] || m->features[0]; }

/* Code for the machine it is compiled on: no triple, and no CPU or
 * features named. */
static bool for_this_host(const char *triple, const cg_machine *m)
{
    return !triple && !names_cpu(m);
}

static LLVMModuleRef lower(const ir_function *fn, pass_analyses *am, LLVMContextRef ctx,
                           const char *sym, const char *node_table, const char *triple,
                           const cg_machine *o, char *err, size_t errlen)
{
    bool bf16_dot = cg_has_bf16_dot(o);
    cg_lower L = {.fn = fn, .am = am, .err = err, .errlen = errlen, .ctx = ctx,
                  .fp_constraint = cg_fp_constraint(triple), .bf16_dot = bf16_dot,
                  .host_amx = bf16_dot && for_this_host(triple, o),
                  .for_host = for_this_host(triple, o),
                  .generic_object = node_table && !names_cpu(o)};
    if (errlen)
        err[0] = '\0';
    init_types(&L);
    L.mod = LLVMModuleCreateWithNameInContext(fn->name ? fn->name : "agc", ctx);
    L.b = LLVMCreateBuilderInContext(ctx);
    if (node_table)
        make_node_table(&L, node_table);
    declare_helpers(&L);
    if (cg_plan(&L))
        emit_function(&L, sym);
    cg_plan_free(&L);
    LLVMDisposeBuilder(L.b);
    if (L.failed) {
        LLVMDisposeModule(L.mod);
        return NULL;
    }
    return L.mod;
}

LLVMModuleRef cg_lower_function(const ir_function *fn, pass_analyses *am, LLVMContextRef ctx,
                                const char *sym, const cg_machine *m, char *err,
                                size_t errlen)
{
    cg_machine host = *m;
    host.triple[0] = '\0';
    return lower(fn, am, ctx, sym, NULL, NULL, &host, err, errlen);
}

LLVMModuleRef cg_lower_function_aot(const ir_function *fn, pass_analyses *am,
                                    LLVMContextRef ctx, const char *sym,
                                    const char *node_table, const char *triple,
                                    const cg_machine *m, char *err, size_t errlen)
{
    return lower(fn, am, ctx, sym, node_table, triple, m, err, errlen);
}
