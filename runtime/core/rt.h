/*
 * rt.h - the runtime core's internal interface (prefix rt_).
 *
 * The layers above (ir/, passes/, backend/) build on three things declared
 * here:
 *   - rt_value: a tensor value (dtype, shape, and its data, or a list for a
 *     tensor array). Handles (ag_tensor) map to values through the handle
 *     table; executors and kernels work on values directly.
 *   - the op table (ops.def): one row per op with its arity, attributes,
 *     flags, elementwise form and dtype domain, dtype rule, shape rule,
 *     kernel and public form.
 *   - rt_apply: type-check, infer, allocate and run one op. Eager calls,
 *     the tracer and the reference executor all go through the same rules.
 */
#ifndef RT_H
#define RT_H

#include "ag.h"
#include "config.h"

#include <stdarg.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------- dtypes */

/* An internal dtype for tensor-array values; never visible to users. */
#define RT_LIST ((ag_dtype)AG_NUM_DTYPES)

size_t rt_dtype_size(ag_dtype dt);
bool rt_is_float(ag_dtype dt);   /* f32, f64, bf16 */
bool rt_is_int(ag_dtype dt);     /* i32, i64, i8 */
bool rt_is_index(ag_dtype dt);   /* i32, i64: the dtypes of indices */
bool rt_is_numeric(ag_dtype dt); /* float or int */
bool rt_dtype_from_name(const char *name, ag_dtype *out);
/* The dtype name closest to a mistyped one ("f32" for "f33"), or NULL
 * when none is close (support/suggest.h). */
const char *rt_dtype_suggest(const char *name);
/* a^b for b >= 0, modulo 2^64, by repeated squaring. The low bits of a
 * product depend only on the low bits of its factors, so narrowing the
 * result gives the wrapping power of narrower integers too. Shared by the
 * pow kernel and the JIT so both wrap identically. */
static inline uint64_t rt_wrapping_pow(uint64_t base, uint64_t exp)
{
    uint64_t result = 1;
    while (exp) {
        if (exp & 1)
            result *= base;
        base *= base;
        exp >>= 1;
    }
    return result;
}

/* A double rounded once (to nearest even) to bfloat16. */
uint16_t rt_f64_to_bf16(double d);

/* Load element i of a buffer of dtype dt as a double / int64, and store. */
double rt_load_f64(ag_dtype dt, const void *data, int64_t i);
int64_t rt_load_i64(ag_dtype dt, const void *data, int64_t i);
void rt_store_f64(ag_dtype dt, void *data, int64_t i, double v);
void rt_store_i64(ag_dtype dt, void *data, int64_t i, int64_t v);

/* ---------------------------------------------------------------- shapes */

/* The element count; -1 if the rank or a dim is unknown, or if the count
 * does not fit int64_t (rt_shape_size_ok keeps such shapes from values). */
int64_t rt_shape_numel(const ag_shape *s);
/* The most bytes one tensor may hold: far beyond any memory, and small
 * enough that a byte count, an offset times an element size or a size
 * rounded up to a cache line never overflows int64_t or size_t. */
#define RT_MAX_TENSOR_BYTES (INT64_C(1) << 62)
/* Whether a tensor of dtype dt (RT_LIST: one byte per element) and shape
 * s stays within RT_MAX_TENSOR_BYTES; false with a message if not. Every
 * op's result shape passes it (rt_infer), as does every value made
 * (rt_value_try_new). */
typedef struct rt_err rt_err;
bool rt_shape_size_ok(const ag_shape *s, ag_dtype dt, rt_err *e);
bool rt_shape_known(const ag_shape *s);
/* Formats "[2,3]" (unknown dims as "?") into buf; returns buf. */
char *rt_shape_str(const ag_shape *s, char *buf, size_t n);
/* Normalizes a possibly negative axis against rank; false if out of range. */
bool rt_norm_axis(int64_t axis, int rank, int *out);
/* NumPy broadcasting of two shapes (unknown dims allowed). */
bool rt_broadcast_shapes(const ag_shape *x, const ag_shape *y, ag_shape *out);
/* Row-major strides of a shape, in elements. */
void rt_strides(const ag_shape *s, int64_t *strides);

/* ---------------------------------------------------------------- values */

/* Reference-counted storage, so that reshape and friends can share data. */
typedef struct rt_storage {
    atomic_int refs;
    size_t bytes;
    size_t capacity; /* of the block holding data (rt_data_alloc) */
    void *data;      /* 64-byte aligned */
} rt_storage;

/* Tensor data (blocks.c): a 64-byte aligned block of at least `bytes`,
 * its size in *cap; large blocks are recycled. NULL when out of memory:
 * tensor data is sized by the user, so running out is their error to
 * handle, not a crash. */
void *rt_data_alloc(size_t bytes, size_t *cap);
void rt_data_free(void *p, size_t cap);

/* The payload of a tensor-array value: a growable list of element values. */
typedef struct rt_list {
    atomic_int refs;
    ag_dtype elem_dtype;
    bool dynamic_size;
    int64_t size; /* number of slots */
    int64_t cap;
    struct rt_value **elems; /* NULL where never written */
} rt_list;

typedef enum rt_value_kind {
    RT_CONCRETE, /* data is valid */
    RT_SYMBOLIC  /* a graph value while tracing; `sym` is owned by ir/ */
} rt_value_kind;

typedef struct rt_value {
    rt_value_kind kind;
    ag_dtype dtype;
    ag_shape shape;
    int64_t numel;
    rt_storage *storage; /* concrete tensors */
    void *data;          /* == storage->data */
    rt_list *list;       /* dtype RT_LIST: the elements; `shape` is then the
                            element shape (rank -1 until known) */
    ag_dtype elem_dtype; /* dtype RT_LIST: the elements' dtype */
    void *sym;           /* symbolic values */
    uint64_t tape_id;    /* non-zero once a gradient tape tracks the value
                            (runtime/autodiff/tape.c); aliases start at 0 */
} rt_value;

/* A new concrete value of that type, or NULL with the reason in e: a
 * shape too large (rt_shape_size_ok) or memory that is not there. Its
 * data is NOT initialized: a kernel writes every element of its output.
 * Every tensor whose size a user chooses is made here. */
rt_value *rt_value_try_new(ag_dtype dt, const ag_shape *s, rt_err *e);
/* rt_value_try_new for small internal values (scalars, lists): a failure
 * aborts the process, as rt_xmalloc does. */
rt_value *rt_value_new(ag_dtype dt, const ag_shape *s);
/* A new value of a new shape sharing v's data (numel must match). */
rt_value *rt_value_alias(const rt_value *v, const ag_shape *s);
rt_value *rt_value_new_list(ag_dtype elem, int64_t size, bool dynamic);
rt_value *rt_value_scalar(ag_dtype dt, double v);
rt_value *rt_value_zeros(ag_dtype dt, const ag_shape *s);
/* Sets every element of a concrete value to x. */
void rt_fill(rt_value *v, double x);
void rt_value_free(rt_value *v);
size_t rt_value_bytes(const rt_value *v);

/* ---------------------------------------------------------------- errors */

/* Kernels and shape rules report failures into an rt_err, never directly. */
struct rt_err {
    char msg[512];
};

void rt_err_set(rt_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reports an error at loc according to the error mode: prints and exits,
 * or records it as ag_last_error(). */
void rt_report(ag_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_vreport(ag_loc loc, const char *fmt, va_list ap);
/* rt_report for state that does not exist (a zero or freed tensor handle,
 * a variable or optimizer never made or freed), which
 * rt_last_error_absent() then says: agc adds what that means when it
 * traced the function at build time, before the program's main ran. */
void rt_report_absent(ag_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool rt_last_error_absent(void);
/* The last error's message without its location, and the location (file
 * NULL when it has none), or NULL when there is none: what a tool needs
 * to print it as "FILE:LINE: error: ..." or "TOOL: error: ...". */
const char *rt_last_error_parts(ag_loc *loc);
/* How many errors this thread has reported (to tell whether a call that
 * runs user code, like a trace, failed). */
uint64_t rt_error_count(void);
/* While latched (during a trace), only the first error is recorded: the
 * ones that follow from it would bury it. Latching nests. */
void rt_error_latch(bool on);
/* Prints "file:line: warning: message" on stderr. */
void rt_warn(ag_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Overrides the error mode for this thread's calls (-1: back to
 * ag_set_error_mode's). Batch threads (pipeline/batch.c) run in
 * AG_ERRORS_RETURN, so that a failed batch is reported to each of its
 * callers at the caller's line rather than exiting from a worker. */
void rt_set_thread_error_mode(int mode);

/* Functions ag_shutdown calls (upper layers register their cleanup). */
void rt_at_shutdown(void (*fn)(void));
void rt_run_shutdown_hooks(void);

/* The error tensor that failing calls return in AG_ERRORS_RETURN mode. */
#define RT_ERROR_GEN 0xFFFFFFFFu
static inline ag_tensor rt_error_tensor(void)
{
    ag_tensor t = {0, RT_ERROR_GEN};
    return t;
}

/* ------------------------------------------------------------- handles */

/* Registers v in the innermost scope of this thread; the handle owns v. */
ag_tensor rt_handle_new(rt_value *v);
/* The value behind a handle, or NULL after reporting at loc why not
 * (error tensor, never-initialized handle, or a tensor used after free).
 * Returns NULL silently for an error tensor in AG_ERRORS_RETURN mode. */
rt_value *rt_handle_get(ag_loc loc, ag_tensor t);
/* The value behind a live handle, or NULL, without reporting. */
rt_value *rt_handle_peek(ag_tensor t);
/* Replaces the value behind a live handle (tensor arrays). */
void rt_handle_set(ag_tensor t, rt_value *v);
/* ag_keep, telling whether t moved (it belonged to the innermost scope). */
bool rt_handle_keep(ag_tensor t);
/* Frees every handle and scope (ag_shutdown). */
void rt_handles_shutdown(void);

/* ----------------------------------------------------------- attributes */

/* Which attribute fields an op uses (for printing, parsing and hashing). */
enum {
    RT_A_AXIS = 1 << 0,
    RT_A_KEEPDIMS = 1 << 1,
    RT_A_DTYPE = 1 << 2,
    RT_A_SHAPE = 1 << 3,
    RT_A_BEGIN = 1 << 4,
    RT_A_SIZE = 1 << 5,
    RT_A_PERM = 1 << 6,
    RT_A_STRIDES = 1 << 7,
    RT_A_PADDING = 1 << 8,
    RT_A_VALUE = 1 << 9,
    RT_A_RANGE = 1 << 10,
    RT_A_SEED = 1 << 11,
    RT_A_N = 1 << 12,
    RT_A_TEXT = 1 << 13,
    RT_A_REF = 1 << 14,
    RT_A_LITERAL = 1 << 15,
    RT_A_DYNAMIC = 1 << 16
};

typedef struct rt_attrs {
    int64_t axis;          /* RT_A_AXIS (may be AG_ALL_AXES) */
    bool keepdims;         /* RT_A_KEEPDIMS */
    ag_dtype dtype;        /* RT_A_DTYPE: cast target, fill/eye/random dtype */
    ag_shape shape;        /* RT_A_SHAPE: reshape target, fill/random shape */
    ag_shape begin;        /* RT_A_BEGIN: slice */
    ag_shape size;         /* RT_A_SIZE: slice (-1 = to the end) */
    ag_shape perm;         /* RT_A_PERM: transpose */
    int stride_h, stride_w; /* RT_A_STRIDES: conv2d */
    ag_padding padding;    /* RT_A_PADDING: conv2d */
    double value;          /* RT_A_VALUE: fill */
    double lo, hi;         /* RT_A_RANGE: random_uniform */
    uint64_t seed;         /* RT_A_SEED: random_uniform */
    int64_t n;             /* RT_A_N: eye size, one_hot depth, list size */
    bool dynamic;          /* RT_A_DYNAMIC: tensor array may grow */
    const char *text;      /* RT_A_TEXT: print format, assert message */
    void *ref;             /* RT_A_REF: the variable (rt_variable *) */
    const rt_value *literal; /* RT_A_LITERAL: a constant's value */
} rt_attrs;

/* ------------------------------------------------------------ op table */

/* Op flags (ops.def's flags column). */
enum {
    RT_F_PURE = 1 << 0,        /* no side effect; result depends on inputs */
    /* out[i] depends on broadcast inputs at i. Set from the elementwise
     * column (rows do not list it), so the two cannot disagree. */
    RT_F_ELEMENTWISE = 1 << 1,
    RT_F_COMMUTATIVE = 1 << 2, /* f(a, b) == f(b, a) */
    RT_F_EFFECT = 1 << 3,      /* reads or writes state, or prints: ordered */
    RT_F_RANDOM = 1 << 4,      /* never fold or merge */
    RT_F_REDUCTION = 1 << 5,
    RT_F_ALIAS = 1 << 6,       /* result shares in[0]'s data (reshape) */
    /* Fails on some data when its operands are integers (as TensorFlow
     * does); the kernels, the passes and the cpu target all check this
     * way, from these flags: */
    RT_F_INT_DIVISOR = 1 << 7,  /* in[1] divides: a zero element fails */
    RT_F_INT_EXPONENT = 1 << 8, /* in[1] is an exponent: a negative one fails */
};
/* Which ops a target runs, fuses, and on which of its units, are the
 * target's own tables (backend/<target>/ops_<target>.c), not flags here. */

/*
 * The kind of work an op does (ops.def's cost column), in classes that
 * every target's cost model can tell apart; none names a target. The tpu-
 * model gives DIVIDE and TRANSCENDENTAL ops several vector-unit cycles an
 * element, the cpu prefetches ahead of loops with TRANSCENDENTAL ops (their
 * work per element hides the memory latency the prefetch pays), and
 * tgt_count_cost counts a REDUCTION's flops on its input.
 */
typedef enum rt_cost {
    RT_COST_FREE,           /* no work of its own: a constant, a view, shape metadata */
    RT_COST_MOVE,           /* moves or makes data, no arithmetic: transpose, gather, fill */
    RT_COST_ARITH,          /* one cheap operation an element: add, compare, select, cast */
    RT_COST_DIVIDE,         /* a division or a root an element: a long-latency unit */
    RT_COST_TRANSCENDENTAL, /* many operations an element: exp, log, tanh, pow (a
                             * polynomial or a library call), a random generator */
    RT_COST_REDUCTION,      /* combines elements along axes (softmax: two reductions) */
    RT_COST_CONTRACTION,    /* sums of products over a shared dim: matmul, conv2d */
    RT_COST_STATE,          /* state outside the values: variables, printing, tensor arrays */
    RT_N_COSTS
} rt_cost;

/* The flags that make an op fail on some integer data (pass_fails_on_data). */
#define RT_F_FAILS_ON_DATA (RT_F_INT_DIVISOR | RT_F_INT_EXPONENT)

/*
 * The dtypes an elementwise op computes on (ops.def's elementwise column):
 * its operands', or for where its branches'. The dtype rule enforces the
 * domain for users; passes and targets read it here instead of restating
 * it per op. RT_DOM_NONE: not elementwise.
 */
typedef enum rt_domain {
    RT_DOM_NONE,
    RT_DOM_NUM,   /* numbers: f32, f64, bf16, i32, i64, i8 */
    RT_DOM_FLOAT, /* floats only: f32, f64, bf16 */
    RT_DOM_BOOL,  /* bool only */
    RT_DOM_ANY    /* every tensor dtype */
} rt_domain;

/* Whether dtype dt is in domain d. */
bool rt_domain_has(rt_domain d, ag_dtype dt);

/* A dtype rule: the result dtype from the inputs' (and attrs), or an error. */
typedef bool (*rt_dtype_fn)(const rt_attrs *a, rt_value *const *in, int n,
                            ag_dtype *out, rt_err *e);
/* A shape rule: the result shape. Inputs may be symbolic (data == NULL) and
 * may have unknown (-1) dims; a rule then gives -1 where it cannot know. */
typedef bool (*rt_shape_fn)(const rt_attrs *a, rt_value *const *in, int n,
                            ag_shape *out, rt_err *e);
/* A kernel: computes `out` (allocated with the inferred type) from
 * concrete inputs. Data-dependent errors (integer division by zero, an
 * index out of range) return false with a message. */
typedef bool (*rt_kernel_fn)(const rt_attrs *a, rt_value *const *in, int n,
                             rt_value *out, rt_err *e);

/* What reverse-mode differentiation does with an op (ops.def's gradient
 * column): a rule, nothing (not differentiable), or an error (a rule not
 * written yet). */
typedef enum rt_grad_kind { RT_GRAD_NONE, RT_GRAD_RULE, RT_GRAD_MISSING } rt_grad_kind;
/* A gradient rule: runtime/autodiff/grad.h defines its argument. */
struct rt_grad_args;
typedef bool (*rt_grad_fn)(struct rt_grad_args *g);

typedef enum rt_op {
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) RT_OP_##id,
#include "ops.def"
#undef X
    RT_OP_COUNT
} rt_op;

typedef struct rt_op_info {
    const char *name;
    int arity; /* -1: variadic */
    unsigned attrs;
    unsigned flags;
    rt_cost cost;
    rt_domain domain; /* RT_DOM_NONE unless RT_F_ELEMENTWISE */
    rt_dtype_fn dtype_rule;
    rt_shape_fn shape_rule;
    rt_kernel_fn kernel;
    rt_grad_kind grad_kind;
    rt_grad_fn grad; /* RT_GRAD_RULE only */
} rt_op_info;

extern const rt_op_info rt_ops[RT_OP_COUNT];
bool rt_op_from_name(const char *name, rt_op *out);
/* The op as users know it, for messages, listings and profiles:
 * "ag_variable_read" for var_read, "ag_add" for add (ops.c). The IR's
 * text form keeps rt_ops[op].name. */
const char *rt_op_public_name(int op);
/* The op in listings and profiles, where ag_ would repeat on every line:
 * "matmul" for ag_matmul, and the public name where the call is named
 * otherwise ("ag_variable_read" for var_read). */
const char *rt_op_listed_name(int op);

/* Infers the result type of op on in[] (values may be symbolic). */
bool rt_infer(rt_op op, const rt_attrs *a, rt_value *const *in, int n,
              ag_dtype *dt, ag_shape *shape, rt_err *e);

/*
 * Applies op to values: infers the result type and, when every input is
 * concrete, allocates and runs the kernel. While tracing (or with a
 * symbolic input), the trace hook records a node instead. Returns a new
 * value, or NULL after reporting the error at loc.
 */
rt_value *rt_apply(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in, int n);

/* rt_apply without the trace hook: always computes (executors use it). */
rt_value *rt_apply_eager(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in,
                         int n);

/* Applies op to handles and returns a handle (the public API's path). */
ag_tensor rt_call(ag_loc loc, rt_op op, const rt_attrs *a, const ag_tensor *in, int n);

/* The values of up to RT_MAX_OPERANDS operands. C numbers become scalars
 * stored right here, so the common `ag_mul(x, 2)` allocates nothing for
 * its constant; the struct must not be copied or outlive the call. */
#define RT_MAX_OPERANDS 4
typedef struct rt_operand_values {
    rt_value *v[RT_MAX_OPERANDS];
    rt_value scalar[RT_MAX_OPERANDS];
    union {
        int64_t i;
        double f;
    } data[RT_MAX_OPERANDS];
} rt_operand_values;

/* Turns operands into values: tensors as they are, C numbers as scalars
 * of the first tensor operand's dtype (or their default: i32, f32, bool).
 * False after reporting a bad handle or a number the dtype cannot hold. */
bool rt_operands_to_values(ag_loc loc, const char *opname, const ag_operand *ops,
                           int n, rt_operand_values *out);
/* rt_call for operands (at most 4) that may be C numbers. */
ag_tensor rt_call_operands(ag_loc loc, rt_op op, const rt_attrs *a,
                           const ag_operand *ops, int n);
ag_tensor rt_call_binary(ag_loc loc, rt_op op, ag_operand a, ag_operand b);

/* --------------------------------------------------------------- tracing */

/* Installed by the tracer (ir/); NULL when no trace is active. */
typedef rt_value *(*rt_trace_hook_fn)(ag_loc loc, rt_op op, const rt_attrs *a,
                                      rt_value *const *in, int n, ag_dtype dt,
                                      const ag_shape *shape);
extern _Thread_local rt_trace_hook_fn rt_trace_hook;
/* The graph region the tracer records into (NULL: none, eager). A gradient
 * tape records only the ops of the region it was made in: a staged
 * branch's or loop body's values do not exist outside its region. */
extern _Thread_local const void *rt_trace_frame;

/* ------------------------------------------------------- gradient tapes */

/* Non-zero while a gradient tape records on this thread; rt_apply then
 * gives every op it applied to rt_tape_record (runtime/autodiff/tape.c). */
extern _Thread_local int rt_tapes_recording;
void rt_tape_record(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in, int n,
                    rt_value *out);
/* Whether a tape records the current graph region (or eager code) now. */
bool rt_tape_recording_here(void);
/*
 * An op the op table does not have, recorded with its own gradient (the
 * tracer's staged cond): backward gets the entry's operands and results,
 * the gradient of each result (dy[j], NULL: none reached it) and which
 * operands' gradients are wanted, and stores new values in dx[i] (NULL:
 * none); a tensor array's gradient, in dy and dx, is its dense tensor
 * [size, element...] (runtime/autodiff/grad_rules_list.c). It runs where the tape answers, so its ops may be recorded by
 * other tapes. NULL backward: a construct the tapes cannot see inside (a
 * staged loop): a gradient reaching its results is an error naming
 * `what` at loc, never a silent zero. Every tape recording this graph
 * region records it, whatever its operands: its captures may depend on
 * what a tape follows.
 */
typedef bool (*rt_tape_backward_fn)(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                                    rt_value *const *out, rt_value *const *dy, int n_out,
                                    const bool *want, rt_value **dx);
void rt_tape_record_custom(ag_loc loc, const char *what, rt_value *const *in, int n_in,
                           rt_value *const *out, int n_out, rt_tape_backward_fn backward,
                           void *ctx);
/* A custom entry's context that outlives the call recording it (an
 * AG_FUNCTION call's saved forward values): every entry made of it holds
 * a reference, and the last one dropped calls release. */
typedef struct rt_tape_ctx {
    atomic_int refs;
    void (*release)(struct rt_tape_ctx *ctx);
} rt_tape_ctx;
/* rt_tape_record_custom with backward given ctx; the caller keeps its own
 * reference to ctx and drops it with rt_tape_ctx_unref. */
void rt_tape_record_owned(ag_loc loc, const char *what, rt_value *const *in, int n_in,
                          rt_value *const *out, int n_out, rt_tape_backward_fn backward,
                          rt_tape_ctx *ctx);
void rt_tape_ctx_unref(rt_tape_ctx *ctx);
/* A value the tapes take for v (the same data, the same tape id). */
rt_value *rt_tape_alias(const rt_value *v);
/* ag_tape_watch for a tensor array, which users cannot watch: tape t then
 * gives the array's dense gradient as a source's (the staged loop's and
 * if's backward, ir/loop_grad.c and ir/staged_grad.c). */
void rt_tape_watch_array(ag_loc loc, ag_tape t, ag_tensor x);
/* sum_j <ys_j, dys_j>, each product summed over its elements, over the j
 * whose dys_j is not null (a null handle); null when none is. Its
 * gradient is sum_j J_j^T dys_j: how the staged gradients (cond, while,
 * a call's backward) seed several results with one tape target. */
ag_tensor rt_weighted_sum(ag_loc at, int n, const ag_tensor *ys, const ag_tensor *dys);
/* The variables tape t has seen read, each once, in first-read order
 * (malloc'ed, *n of them); NULL when none. */
struct ag_variable_s **rt_tape_variables_read(ag_tape t, int *n);
/* Where ag_set_loop_options sends a checked invariant, with the variable's
 * address and its text as written ("&x"): the tracer sets it (eagerly
 * there is nothing to record, and libag_rt has no tracer). */
typedef void (*rt_loop_options_fn)(ag_loc loc, const ag_tensor *var, const char *text,
                                   ag_shape invariant);
extern rt_loop_options_fn _Atomic rt_loop_options_hook;

/* Also installed by the tracer: the concrete value of a symbolic one, for
 * variables created while tracing; NULL after reporting why it cannot. */
typedef rt_value *(*rt_concretize_fn)(ag_loc loc, const rt_value *v);
extern _Thread_local rt_concretize_fn rt_trace_concretize;

/* ------------------------------------------------------------- printing */

/* Formats a concrete tensor like tf.print ("[[1 2] [3 4]]", long dims
 * summarized with "..."), into a malloc'ed string. */
char *rt_format_value(const rt_value *v);

/* Whether a print template takes n tensors: as many "{}" as n, literal
 * braces doubled. False with the message in e (the verifier's check of a
 * print node, the same as the kernel's when it runs). */
bool rt_print_template_ok(const char *tpl, int n, rt_err *e);

/* The stream ag_print writes to. */
FILE *rt_print_stream(void);

/* ----------------------------------------------------------- variables */

typedef struct ag_variable_s {
    uint32_t magic;
    rt_value *value; /* owned */
    ag_loc created_at;
} rt_variable;

#define RT_VARIABLE_MAGIC 0xA6A7A81Eu

/* Frees every variable still alive and resets the print stream
 * (ag_shutdown). */
void rt_state_shutdown(void);

/* ------------------------------------------------------------ checksum */

/* CRC-32 (IEEE 802.3, as zlib's crc32) of p[0..n), continuing crc (0 to
 * start): what agc's own files carry (core/checksum.c). */
uint32_t rt_crc32(uint32_t crc, const void *p, size_t n);

/* ---------------------------------------------------------- allocation */

void *rt_xmalloc(size_t n);
void *rt_xcalloc(size_t n, size_t size);
void *rt_xrealloc(void *p, size_t n);
char *rt_xstrdup(const char *s);

#endif /* RT_H */
