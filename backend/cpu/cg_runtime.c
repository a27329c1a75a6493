/* cg_runtime.c - the runtime functions generated code calls. */
#include "cg_runtime.h"

#include "bf16mm_amx.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

rt_value *cg_rt_apply(const ir_node *n, rt_value *const *in)
{
    return rt_apply_eager(n->loc, (rt_op)n->opcode, &n->attrs, in, n->n_in);
}

void cg_rt_fail(const ir_node *n, rt_value *const *in)
{
    rt_value *v = cg_rt_apply(n, in);
    if (!v)
        return; /* the kernel reported the error */
    rt_value_free(v);
    rt_report(n->loc, "internal error: the compiled code for %%%d (%s) found an error "
                      "that the runtime's kernel does not; run with AG_TARGET=reference "
                      "and report this", n->id, rt_ops[n->opcode].name);
}

/* Whether v has n's dtype, rank and known dims. */
static bool has_static_type(const rt_value *v, const ir_node *n)
{
    const ag_shape *s = &n->type.shape;
    if (v->kind != RT_CONCRETE || v->dtype != n->type.dtype || v->shape.rank != s->rank)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] >= 0 && v->shape.dims[i] != s->dims[i])
            return false;
    return true;
}

static void bad_type(const ir_node *n, const rt_value *v)
{
    char want[160], got[160];
    ir_type t = {.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
    rt_report(n->loc, "internal error: %%%d (%s) made a value of type %s, but the graph "
                      "says %s; run with AG_TARGET=reference and report this", n->id,
              ir_opcode_name(n->opcode), ir_type_str(&t, got, sizeof got),
              ir_type_str(&n->type, want, sizeof want));
}

/* v itself when it has n's static type (or is NULL); otherwise reported,
 * freed, and NULL. */
static rt_value *typed(const ir_node *n, rt_value *v)
{
    if (v && !has_static_type(v, n)) {
        bad_type(n, v);
        rt_value_free(v);
        return NULL;
    }
    return v;
}

rt_value *cg_rt_apply_typed(const ir_node *n, rt_value *const *in)
{
    return typed(n, cg_rt_apply(n, in));
}

rt_value *cg_rt_qlayer(const ir_node *rq, rt_value *const *in)
{
    return typed(rq, cg_qlayer_run(rq, in, NULL));
}

rt_value *cg_rt_qlayer_packed(const ir_node *rq, rt_value *const *in, const void *packed,
                              void *cache)
{
    const void *w = cg_rt_packed_weight(packed, cache, in[1]);
    return typed(rq, cg_qlayer_run(rq, in, w));
}

rt_value *cg_rt_qproduct(const ir_node *n, rt_value *const *in, const void *packed, void *cache)
{
    const void *w = cg_rt_packed_weight(packed, cache, in[1]);
    return typed(n, cg_qproduct_run(n, in, w));
}

void cg_rt_free(rt_value *v) { rt_value_free(v); }

rt_value *cg_rt_alias(const rt_value *v) { return rt_value_alias(v, &v->shape); }

enum { HUGE_PAGE = 2 << 20, HUGE_MIN_BYTES = 8 << 20 };

/* Advice only: where the kernel has no transparent huge pages, nothing
 * changes. The range is the whole 2 MB pages inside the buffer. */
static void advise_huge_pages(void *data, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    uintptr_t begin = ((uintptr_t)data + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)data + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (end > begin)
        (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
    (void)data, (void)bytes;
#endif
}

/* The tensor, or NULL after reporting at n's location why not. */
static rt_value *new_value(const ir_node *n, int32_t dtype, int32_t rank,
                           const int64_t *dims)
{
    ag_shape s = {.rank = rank};
    rt_err e;
    if (rank > 0)
        memcpy(s.dims, dims, (size_t)rank * sizeof *dims);
    rt_value *v = rt_value_try_new((ag_dtype)dtype, &s, &e);
    if (!v) {
        rt_report(n->loc, "%s: %s", ir_opcode_public_name(n->opcode), e.msg);
        return NULL;
    }
    size_t bytes = rt_value_bytes(v);
    if (bytes >= HUGE_MIN_BYTES)
        advise_huge_pages(v->data, bytes);
    return v;
}

rt_value *cg_rt_new(const ir_node *n, int32_t dtype, int32_t rank, const int64_t *dims)
{
    rt_value *v = new_value(n, dtype, rank, dims);
    if (!v)
        abort(); /* reported; the generated code has no failure path here */
    return v;
}

rt_value *cg_rt_try_new(const ir_node *n, int32_t dtype, int32_t rank,
                        const int64_t *dims)
{
    return new_value(n, dtype, rank, dims);
}

rt_value *cg_rt_scalar(int32_t dtype, const void *bits)
{
    rt_value *v = rt_value_new((ag_dtype)dtype, &AG_SCALAR);
    memcpy(v->data, bits, rt_dtype_size((ag_dtype)dtype));
    return v;
}

void cg_rt_box_init(void *box, int32_t dtype, int32_t rank, const int64_t *dims, void *data)
{
    rt_value *v = box;
    memset(v, 0, sizeof *v);
    v->kind = RT_CONCRETE;
    v->dtype = (ag_dtype)dtype;
    v->shape.rank = rank;
    if (rank > 0)
        memcpy(v->shape.dims, dims, (size_t)rank * sizeof *dims);
    v->numel = rt_shape_numel(&v->shape);
    v->data = data; /* no storage: nothing to release, nothing to share */
}

void *cg_rt_data(const rt_value *v) { return v->data; }

const int64_t *cg_rt_dims(const rt_value *v) { return v->shape.dims; }

int32_t cg_rt_truth(const rt_value *v) { return rt_load_f64(v->dtype, v->data, 0) != 0; }

void cg_rt_release(rt_value **slots, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        rt_value_free(slots[i]);
        slots[i] = NULL;
    }
}

#define ANY(T, cond)                                                          \
    do {                                                                      \
        const T *x = data;                                                    \
        bool found = false;                                                   \
        for (int64_t i = 0; i < n; i++)                                       \
            found |= (cond);                                                  \
        return found;                                                         \
    } while (0)

int32_t cg_rt_int_check(const void *data, int32_t dtype, int64_t n, int32_t negative)
{
    if (dtype == AG_I8) {
        if (negative)
            ANY(int8_t, x[i] < 0);
        ANY(int8_t, x[i] == 0);
    }
    if (dtype == AG_I32) {
        if (negative)
            ANY(int32_t, x[i] < 0);
        ANY(int32_t, x[i] == 0);
    }
    if (negative)
        ANY(int64_t, x[i] < 0);
    ANY(int64_t, x[i] == 0);
}
#undef ANY

uint64_t cg_rt_ipow(uint64_t base, uint64_t exp) { return rt_wrapping_pow(base, exp); }

static void amx_columns(void *ctx, int64_t begin, int64_t end)
{
    rt_bf16mm_amx_columns(ctx, begin, end);
}

/* One chunk of columns per thread: each chunk packs its panels of b
 * pair row by pair row, reading b's rows along the chunk's width, so wide
 * chunks read b nearly in order (chunks of 64 columns were slower on two
 * threads than one thread). */
static int64_t amx_grain(int64_t n)
{
    int64_t threads = cg_rt_num_threads();
    int64_t per_thread = (n + threads - 1) / threads;
    return (per_thread + CG_RT_CHUNK_ALIGN - 1) / CG_RT_CHUNK_ALIGN * CG_RT_CHUNK_ALIGN;
}

_Static_assert(CG_RT_CHUNK_ALIGN % RT_BF16MM_AMX_PANEL == 0,
               "parallel chunks must start on a panel of the AMX kernel");

int32_t cg_rt_matmul_bf16_amx(const void *a, const void *b, const void *packed, void *c,
                              int64_t m, int64_t k, int64_t n, int64_t parallel_work)
{
    rt_bf16mm_amx p;
    if (packed ? !rt_bf16mm_amx_begin_packed(&p, a, packed, c, m, k, n)
               : !rt_bf16mm_amx_begin(&p, a, b, c, m, k, n))
        return 0;
    if ((double)m * (double)k * (double)n >= (double)parallel_work)
        cg_rt_parallel_for(amx_columns, &p, n, amx_grain(n));
    else
        rt_bf16mm_amx_columns(&p, 0, n);
    rt_bf16mm_amx_end(&p);
    return 1;
}

#define SYM(f) {#f, (void (*)(void))f}
const cg_rt_symbol cg_rt_symbols[] = {
    SYM(cg_rt_apply),    SYM(cg_rt_apply_typed), SYM(cg_rt_fail),   SYM(cg_rt_free),
    SYM(cg_rt_alias),    SYM(cg_rt_new),      SYM(cg_rt_scalar),   SYM(cg_rt_box_init),
    SYM(cg_rt_try_new),  SYM(cg_rt_data),     SYM(cg_rt_dims),     SYM(cg_rt_truth),
    SYM(cg_rt_release),  SYM(cg_rt_ipow),     SYM(cg_rt_parallel_for), SYM(cg_rt_int_check),
    SYM(cg_rt_parallel_lookup),
    SYM(cg_rt_matmul_bf16_amx), SYM(cg_rt_qlayer), SYM(cg_rt_qlayer_packed), SYM(cg_rt_qproduct),
};
const int cg_rt_n_symbols = (int)(sizeof cg_rt_symbols / sizeof cg_rt_symbols[0]);
