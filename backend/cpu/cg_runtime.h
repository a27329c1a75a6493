/*
 * cg_runtime.h - the runtime functions that generated code calls.
 *
 * The JIT maps each of them by absolute address (cg_rt_symbols), so they
 * need not be exported from the executable. They are the whole interface
 * between generated code and the runtime: generated code never reads an
 * rt_value's fields directly, it asks for the data pointer and dims here,
 * so the value layout can change without touching the code generator.
 *
 * Ownership: a value returned by cg_rt_apply, cg_rt_new, cg_rt_try_new,
 * cg_rt_scalar or cg_rt_alias belongs to the generated code, which frees
 * it with cg_rt_free (or cg_rt_release on its error path).
 */
#ifndef CG_RUNTIME_H
#define CG_RUNTIME_H

#include "ir.h"

/* Runs node n's op on in[0..n->n_in) with the node's attributes, through
 * rt_apply_eager: the generic fallback for every op. NULL after reporting
 * an error at the node's location. */
rt_value *cg_rt_apply(const ir_node *n, rt_value *const *in);

/* cg_rt_apply for a result native code reads as n's static type: a
 * result of another dtype or of other known dims is reported as an
 * internal error (and freed), and NULL returned. */
rt_value *cg_rt_apply_typed(const ir_node *n, rt_value *const *in);
/* A static-range layer (lower_qlayer.c): requantize node rq of
 * add(qmatmul(a, w, z_a), bias) on in = {a, w, z_a, bias, mult, z_q}, in
 * one pass over the product where the shapes allow (cg_qlayer.c); the
 * three nodes' kernels otherwise. Its result has rq's static type; NULL
 * after reporting an error. The operands are not kept. */
rt_value *cg_rt_qlayer(const ir_node *rq, rt_value *const *in);
/* cg_rt_qlayer's work, without the type check (cg_qlayer.c); packed is
 * the weight packed ahead (rt_qgemm_pack), or NULL. */
rt_value *cg_qlayer_run(const ir_node *rq, rt_value *const *in, const void *packed);
/* The weight of an int8 product packed ahead (lower_qpack.c): `packed`,
 * a constant of the code packed when compiling; else, when `cache` is a
 * zeroed slot of the code's own, the block the first call packed for the
 * path it ran and left there (atomically: the calls of many threads keep
 * one); else NULL. The product reads it when it fits the path it runs. */
const void *cg_rt_packed_weight(const void *packed, void *cache, const rt_value *w);
/* cg_rt_qlayer with the weight packed ahead (cg_rt_packed_weight). */
rt_value *cg_rt_qlayer_packed(const ir_node *rq, rt_value *const *in, const void *packed,
                              void *cache);
/* A qmatmul or qconv2d node n whose weight in[1] is packed ahead
 * (cg_rt_packed_weight): as cg_rt_apply_typed, its kernel reading the
 * packed weight (cg_qlayer.c). */
rt_value *cg_rt_qproduct(const ir_node *n, rt_value *const *in, const void *packed,
                         void *cache);
rt_value *cg_qproduct_run(const ir_node *n, rt_value *const *in, const void *packed);

/* Reports the error node n gives on these inputs. Native code calls it
 * when its own check (integer division by zero, a negative integer
 * exponent, shapes that do not broadcast) fails: running the op's kernel
 * again reports exactly the runtime's message. */
void cg_rt_fail(const ir_node *n, rt_value *const *in);


void cg_rt_free(rt_value *v);
rt_value *cg_rt_alias(const rt_value *v);
/* A new tensor of that dtype and shape for node n's result; its data is
 * not initialized. Large buffers are marked for transparent huge pages,
 * so that writing them the first time costs a few page faults instead of
 * thousands. When the memory is not there, cg_rt_try_new reports at n's
 * location and returns NULL (the code then fails like the eager kernel);
 * cg_rt_new, for small buffers of static size, reports and aborts. */
rt_value *cg_rt_new(const ir_node *n, int32_t dtype, int32_t rank, const int64_t *dims);
rt_value *cg_rt_try_new(const ir_node *n, int32_t dtype, int32_t rank,
                        const int64_t *dims);
/* A new scalar of dtype holding the element at bits (heap boxing). */
rt_value *cg_rt_scalar(int32_t dtype, const void *bits);
/* Makes the storage at box (sizeof(rt_value) bytes, in the caller's
 * frame) a value that borrows data: for inputs of ops that do not keep
 * their inputs, without allocating. */
void cg_rt_box_init(void *box, int32_t dtype, int32_t rank, const int64_t *dims,
                    void *data);

void *cg_rt_data(const rt_value *v);
const int64_t *cg_rt_dims(const rt_value *v);
/* Whether a condition value is true (its first element is not zero). */
int32_t cg_rt_truth(const rt_value *v);

/* Frees every non-NULL value of slots[0..n): the error path. */
void cg_rt_release(rt_value **slots, int32_t n);

/* Runs body(ctx, begin, end) over [0, n) in chunks of at least grain
 * elements, on a pool of threads (cg_parallel.c); serially when n is
 * small. */
typedef void (*cg_rt_body)(void *ctx, int64_t begin, int64_t end);
void cg_rt_parallel_for(cg_rt_body body, void *ctx, int64_t n, int64_t grain);
/* Every chunk but the last of a parallel loop starts and ends on a
 * multiple of this (bf16 matrix products rely on it: lower_bf16mm.c). */
enum { CG_RT_CHUNK_ALIGN = 64 };
/* cg_rt_parallel_for for a loop whose only tensor operand is bf16 (its
 * other operands scalars): when n is large, the body runs once over every
 * bf16 value into a table and each element is then looked up, with the
 * loop's own bits (cg_lookup.c). Slots x_slot and out_slot of ctx hold
 * the operand's and the result's data; out_size is the result's element
 * size (2 or 4 bytes; otherwise the loop runs as it is). cache, when the
 * scalars are constants of the code, is CG_RT_LOOKUP_CACHE_BYTES(out_size)
 * zeroed bytes of the code's own (64-byte aligned) where the first call
 * that can leaves the table for the calls after it; else NULL. */
void cg_rt_parallel_lookup(cg_rt_body body, void *ctx, int64_t n, int64_t grain,
                           int32_t x_slot, int32_t out_slot, int32_t out_size, void *cache);
#define CG_RT_LOOKUP_CACHE_BYTES(out_size) (64 + 65536 * (out_size) + 64)
/* For tests: cg_rt_parallel_lookup uses its kernel `name` from now on
 * ("avx512", "avx2" or "portable"; NULL: the best this CPU runs, the
 * default); false when this CPU cannot run it. */
bool cg_lookup_use_kernel(const char *name);
/* For tests: the least n that cg_rt_parallel_lookup looks up without a
 * cache, and with one. */
int64_t cg_lookup_min(void);
int64_t cg_lookup_min_cached(void);
/* The threads a parallel loop uses (the caller included). */
int cg_rt_num_threads(void);

/* c[m,n] = a[m,k] x b[k,n] in bf16 on AMX tiles (runtime/kernels/
 * bf16mm_amx.h), in parallel chunks of columns when there is enough work
 * (at least `parallel_work` multiply-adds); `packed` is b as
 * rt_bf16mm_amx_pack lays it out (a constant b, packed when the code was
 * compiled), or NULL: each call packs b. 1 when done; 0 when AMX is not
 * usable in this process (the CPU, the OS, AG_NO_AMX) or its scratch
 * memory is not there: the caller then runs its own path. */
int32_t cg_rt_matmul_bf16_amx(const void *a, const void *b, const void *packed, void *c,
                              int64_t m, int64_t k, int64_t n, int64_t parallel_work);

/* Whether the n elements of an i32/i64 buffer hold a 0 (negative == 0:
 * a divisor) or a negative value (negative == 1: an exponent). */
int32_t cg_rt_int_check(const void *data, int32_t dtype, int64_t n, int32_t negative);

/* base^exp modulo 2^64 (exp >= 0): integer ag_pow; callers narrow. */
uint64_t cg_rt_ipow(uint64_t base, uint64_t exp);

/* The symbols above, for the JIT. */
typedef struct cg_rt_symbol {
    const char *name;
    void (*addr)(void);
} cg_rt_symbol;

extern const cg_rt_symbol cg_rt_symbols[];
extern const int cg_rt_n_symbols;

#endif /* CG_RUNTIME_H */
