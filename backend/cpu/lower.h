/*
 * lower.h - the internal interface of the lowering from graph IR to LLVM
 * IR (backend/cpu/lower*.c). Nothing here is visible outside the backend.
 *
 *   lower_plan.c  analysis: liveness, static shapes, which nodes become
 *                 native scalars, fused elementwise loops or native matrix
 *                 products, how each value is held, where it dies
 *   lower_elem.c  the scalar semantics of every elementwise op, per dtype,
 *                 as LLVM instructions (shared by scalars and loop bodies)
 *   lower_loop.c  fused elementwise loops: leaves, shapes, checks, the body
 *                 and the nest's levels; with lower_prefetch.c (the
 *                 prefetch rule and blocks), lower_tile.c (short rows in
 *                 groups over tiles) and lower_outline.c (out of line and
 *                 parallel when large; lookup tables), one unit split for
 *                 size over lower_nest.h
 *   lower_matmul.c native matrix products of small static shapes
 *   lower_qlayer.c static-range int8 layers (qmatmul, bias, requantize)
 *                 found in the plan and run as one call
 *   lower_qpack.c int8 products' constant weights packed when compiling
 *   lower_counted.c counted loops and LLVM's loop hints on them
 *   lower_math.c  functions agc computes itself (f32 tanh), the same
 *                 operations as the runtime kernels
 *   lower_bf16mm.c bf16 matrix products: AVX512_BF16 dot products, or
 *                 converting to f32
 *   lower.c       the driver: the generated function, regions, cond and
 *                 while as control flow, the generic fallback, boxing,
 *                 ownership and the error path
 */
#ifndef CG_LOWER_H
#define CG_LOWER_H

#include "cg.h"
#include "ir.h"
#include "pass.h"

#include <llvm-c/Core.h>

/* ------------------------------------------------------------ the plan */

/* How the generated code holds a node's value. */
typedef enum cg_repr {
    CG_NONE, /* not computed: dead, a cond/while (see cg_info.res_*), ... */
    CG_BOX,  /* an rt_value * (owned by the node, or borrowed) */
    CG_NAT,  /* a scalar in a register: rank 0, native dtype */
    CG_BUF   /* raw data with a static shape: frame memory or a literal */
} cg_repr;

/* How a node is computed. */
typedef enum cg_kind {
    CG_K_FALLBACK, /* rt_apply_eager through cg_rt_apply */
    CG_K_SCALAR,   /* native scalar arithmetic (rank 0) */
    CG_K_CONST,    /* a scalar constant, or a literal tensor read in place */
    CG_K_FUSED,    /* member of a fused elementwise loop (cg_cluster) */
    CG_K_MATMUL,   /* a native matrix product */
    CG_K_PARAM,
    CG_K_REGION,   /* cond / while */
    CG_K_GET,
    CG_K_QLAYER,   /* requantize(qmatmul + bias) in one runtime call (lower_qlayer.c) */
    CG_K_ABSORBED  /* computed inside the CG_K_QLAYER node `into`: no code of its own */
} cg_kind;

/* A static shape: rank (-1 unknown) and dims (-1 unknown). Values whose
 * shape is not fully known carry a key: two values with the same key and
 * rank have the same shape at run time (elementwise ops propagate it). */
typedef struct cg_shape {
    int rank;
    int64_t dims[AG_MAX_RANK];
    bool known; /* rank and every dim known */
    int key;    /* when !known: the node id that fixes this shape */
} cg_shape;

typedef struct cg_info {
    const ir_node *node;
    bool live;
    int pos; /* program-order position in its graph */
    cg_kind kind;
    cg_repr repr;
    cg_shape shape;
    int cluster;      /* CG_K_FUSED: index into cg_lower.clusters */
    bool materialize; /* CG_K_FUSED: the value is needed outside its loop */
    bool need_nat;    /* some consumer wants the scalar in a register */
    bool need_data;   /* some consumer reads the data natively */
    bool check_type;  /* a fallback result read natively: check its type */
    bool owned;       /* the node owns its box(es): freed where it dies */
    int slot;         /* owned single box: its slot; -1 if none */
    int *res_slot;    /* cond/while: a slot per boxed result, else -1 */
    cg_repr *res_repr; /* cond/while: the repr of each result */
    int last_use;     /* pos where the value dies; INT_MAX: at graph end */
    const ir_node *into; /* CG_K_ABSORBED: the CG_K_QLAYER node computing it */
    bool qlayer;      /* planned as a CG_K_QLAYER (lower_qlayer.c) */

    /* emission state */
    LLVMValueRef nat, box, data;
    LLVMValueRef *res_val; /* cond/while: each result (register or box) */
} cg_info;

/* A fused elementwise loop: members share one output shape; leaves are
 * the values the loop reads from outside. Emitted at its last member. */
typedef struct cg_cluster {
    int n_members, cap_members;
    const ir_node **members; /* program order */
    const ir_node *last;
    bool fallible; /* a single node that checks at run time (pass.h) */
    cg_shape shape;
} cg_cluster;

/* ---------------------------------------------------- lowering context */

/* The runtime functions generated code calls (cg_runtime.h). */
typedef struct cg_fn {
    LLVMTypeRef type;
    LLVMValueRef value;
} cg_fn;

typedef struct cg_helpers {
    cg_fn apply, apply_typed, fail, free_, alias, new_, try_new, scalar, box_init, data,
        dims, truth, release, ipow, parallel_for, parallel_lookup, int_check, matmul_bf16_amx,
        qlayer, qlayer_packed, qproduct;
} cg_helpers;

typedef struct cg_lower {
    const ir_function *fn;
    pass_analyses *am; /* fn's analyses: liveness and the plans followed */
    char *err;
    size_t errlen;
    bool failed;

    /* the plan */
    int n_ids;
    cg_info *info; /* by node id */
    const pass_fusion_plan *fusion; /* the loops to emit: passes/fusion.c, from am */
    const pass_memory_plan *memory; /* frame buffers: passes/memplan.c, from am */
    cg_cluster *clusters;     /* by the plan's cluster number */
    int n_slots;
    int max_inputs; /* most operands of a fallback node */
    int n_fallbacks;
    bool outline_loops; /* every loop nest out of line (large functions) */

    /* LLVM */
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef func;
    LLVMBasicBlockRef entry, fail_bb;
    LLVMValueRef args, results, slots, in_array, box_pool, box_bits;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f32, t_f64, t_ptr;
    LLVMTypeRef t_box; /* [sizeof(rt_value) x i8] */
    cg_helpers h;
    LLVMValueRef *buf_ptr; /* by memory-plan buffer: its frame memory, once made */
    bool *buf_full;        /* by memory-plan buffer: did not fit the frame */
    uint64_t frame_bytes;  /* frame buffers made so far */

    /* Ahead of time (cg_aot.c) the code cannot hold addresses of this
     * process: nodes are read from node_table (filled by the runtime when
     * it loads the graph's text) and literals are constants of the module.
     * NULL for the JIT. */
    LLVMValueRef node_table;
    const char *fp_constraint; /* cg_fp_constraint of the target */
    bool bf16_dot; /* the CPU has AVX512_BF16 (cg_has_bf16_dot) */
    /* The code is compiled for this host (no triple, CPU or features
     * named), so bf16 products may call the AMX kernel, which checks at
     * run time that the process can use it (lower_bf16mm.c). */
    bool host_amx;
    /* The code is compiled for this host: int8 products' constant weights
     * are packed for the path this process runs (lower_qpack.c). */
    bool for_host;
    /* An object file for no CPU in particular: they are packed by the
     * first call (lower_qpack.c). */
    bool generic_object;
} cg_lower;

/* Lowers fn to a module holding one function, `sym`:
 *   i32 sym(ptr args, ptr results)    (1 on success, 0 after an error)
 * following the plans of am (fn's analyses, for the cpu target's caps),
 * for the host or the CPU m names (m's triple is ignored: the JIT runs
 * here). NULL with a message in err when fn uses something not supported. */
LLVMModuleRef cg_lower_function(const ir_function *fn, pass_analyses *am, LLVMContextRef ctx,
                                const char *sym, const cg_machine *m, char *err,
                                size_t errlen);

/* The same for code compiled ahead of time for machine m, whose triple
 * is `triple`: node references go through `node_table`, a global
 * [ir_function_num_ids(fn) x ptr] this defines (internal, zeroed), which
 * the runtime fills from the graph it parses before the first call
 * (backend/cpu/aot.c). */
LLVMModuleRef cg_lower_function_aot(const ir_function *fn, pass_analyses *am,
                                    LLVMContextRef ctx, const char *sym,
                                    const char *node_table, const char *triple,
                                    const cg_machine *m, char *err, size_t errlen);

bool cg_fail(cg_lower *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline cg_info *cg_info_of(cg_lower *L, const ir_node *n) { return &L->info[n->id]; }
/* Whether generated code computes on dt directly (the cpu target's caps). */
static inline bool cg_native_dtype(ag_dtype dt)
{
    return (unsigned)dt < 32 && (CG_NATIVE_DTYPES >> dt & 1u);
}

/* lower_plan.c */
bool cg_plan(cg_lower *L);
/* Whether op n keeps (aliases) its operand i beyond the call. */
bool cg_keeps_operand(const ir_node *n, int i);
void cg_plan_free(cg_lower *L);
/* A known shape with every dim 1 (rank 0 included): one element. */
bool cg_shape_unit(const cg_shape *s);

/* lower_elem.c: element semantics. Register types: bool is i1, others
 * their LLVM type; in memory bool is i8. */
LLVMTypeRef cg_reg_type(cg_lower *L, ag_dtype dt);
LLVMTypeRef cg_mem_type(cg_lower *L, ag_dtype dt);
LLVMValueRef cg_load_elem(cg_lower *L, ag_dtype dt, LLVMValueRef ptr);
void cg_store_elem(cg_lower *L, ag_dtype dt, LLVMValueRef v, LLVMValueRef ptr);
LLVMValueRef cg_const_elem(cg_lower *L, ag_dtype dt, const void *data, int64_t i);
/* bf16 (see lower_elem.c): i16 bits to the f32 of the same value, an f32
 * rounded to bf16 back to its bits, and rounding an f32 to bf16 (to
 * nearest even, as ag_f32_to_bf16), scalars or vectors. */
LLVMValueRef cg_widen_bf16(cg_lower *L, LLVMValueRef bits);
LLVMValueRef cg_narrow_bf16(cg_lower *L, LLVMValueRef v);
LLVMValueRef cg_round_bf16(cg_lower *L, LLVMValueRef v);
/* v, or for a float constant an opaque copy LLVM cannot fold (see
 * lower_elem.c). */
LLVMValueRef cg_opaque_if_const(cg_lower *L, LLVMValueRef v);
const char *cg_fp_constraint(const char *triple);
/* cg_emit_elem implements every op pass_fusible accepts (one it does not
 * fails the compilation, naming the op); the ops pass_fails_on_data names
 * need cg_emit_elem_bad's check first. */
/* The operation of n on one element of each operand (register types).
 * Division by zero must have been excluded by the caller. */
LLVMValueRef cg_emit_elem(cg_lower *L, const ir_node *n, LLVMValueRef *args);
/* Whether n's data check rejects negative elements of in[1] (an exponent,
 * RT_F_INT_EXPONENT) rather than zeros (a divisor, RT_F_INT_DIVISOR). */
bool cg_checks_negative(const ir_node *n);
/* The condition under which n's data check fails for divisor / exponent
 * element v (i1). */
LLVMValueRef cg_emit_elem_bad(cg_lower *L, const ir_node *n, LLVMValueRef v);
/* A call of intrinsic `name` overloaded on over[0..n_over). */
LLVMValueRef cg_call_intrinsic(cg_lower *L, const char *name, LLVMTypeRef *over, size_t n_over,
                               LLVMValueRef *args, unsigned n_args);

/* lower_math.c: functions agc computes itself, from exact IEEE
 * operations, bit for bit as the runtime kernels do. */
/* tanh of the f32 scalar x, as rt_tanh_f32 (runtime/kernels/tanh_f32.h). */
LLVMValueRef cg_emit_tanh_f32(cg_lower *L, LLVMValueRef x);
/* Makes mod's math helpers one definition per name when modules are
 * linked (linkonce_odr, hidden), for an ahead-of-time object of several
 * functions: internal copies would be renamed (agc_tanh_f32.1), and a
 * renamed copy no longer matches the vector versions its calls name, so
 * that function's loop would call tanh one element at a time. The JIT
 * keeps them internal: a module it evicts must not take with it a
 * definition another module bound to. */
void cg_share_math_helpers(LLVMModuleRef mod);

/* lower_loop.c */
bool cg_emit_cluster(cg_lower *L, cg_cluster *c);
/* lower_matmul.c */
bool cg_emit_matmul(cg_lower *L, const ir_node *n);
/* lower_qlayer.c: static-range layers, requantize(add(qmatmul(a, b, z),
 * bias), ...), as one call of cg_rt_qlayer. cg_plan_qlayers marks them
 * (info.qlayer, and info.into of the add and the qmatmul) before the
 * nodes are classified; cg_qlayer_operands lists the call's operands. */
enum { CG_QLAYER_OPERANDS = 6 };
void cg_plan_qlayers(cg_lower *L);
void cg_qlayer_operands(const ir_node *rq, const ir_node *ops[CG_QLAYER_OPERANDS]);
/* lower_qpack.c: the weight w of an int8 product (qmatmul's or qconv2d's
 * in[1]) when it is a constant: out[0] the block packed for the kernel
 * (code for this host), or out[1] the slot of the module where the first
 * call leaves it (an object file); the other a null pointer. The call
 * passes both to cg_rt_qproduct or cg_rt_qlayer_packed. False (out
 * unset) when the weight is not packed ahead. */
bool cg_packed_weight(cg_lower *L, const ir_node *w, LLVMValueRef out[2]);
/* lower_counted.c */
/* A counted loop i = 0 .. n-1 (nothing when n <= 0): begin leaves the
 * builder in the body with *iv set; end closes it from the current block
 * and sets latch, the back edge's branch (where loop metadata goes). */
typedef struct cg_loop {
    LLVMBasicBlockRef header, exit;
    LLVMValueRef iv, n, latch;
} cg_loop;
void cg_loop_begin(cg_lower *L, cg_loop *lp, LLVMValueRef n);
void cg_loop_end(cg_lower *L, cg_loop *lp);
/* Keeps LLVM's loop vectorizer off the loop whose back edge is latch and,
 * with no_unroll, its unroller too. */
void cg_loop_hints(cg_lower *L, LLVMValueRef latch, bool no_unroll);
void cg_loop_interleave(cg_lower *L, LLVMValueRef latch, int count);

/* lower_bf16mm.c: a bf16 matrix product, with AVX512_BF16's dot products
 * when L->bf16_dot, else converting to f32 (small products only: see
 * lower_plan.c). */
bool cg_emit_matmul_bf16(cg_lower *L, const ir_node *n);

/* lower.c services for the loop emitters */
/* Enum attribute `name` (with its value, 0 for most) on function f at
 * index (LLVMAttributeFunctionIndex, or a parameter's, from 1); and on a
 * call instruction, for its callee. */
void cg_add_attr(cg_lower *L, LLVMValueRef f, unsigned index, const char *name, uint64_t value);
void cg_add_call_attr(cg_lower *L, LLVMValueRef call, const char *name, uint64_t value);
LLVMValueRef cg_call(cg_lower *L, cg_fn *f, LLVMValueRef *args, unsigned n, const char *name);
LLVMValueRef cg_i32(cg_lower *L, int64_t v);
LLVMValueRef cg_i64(cg_lower *L, int64_t v);
LLVMValueRef cg_ptr_const(cg_lower *L, const void *p);
/* A private constant of the module holding `bytes` bytes of data,
 * 64-byte aligned: its address. */
LLVMValueRef cg_const_bytes(cg_lower *L, const void *data, size_t bytes, const char *name);
/* A pointer to node n, for the runtime helpers (an address, or a load
 * from the node table ahead of time). */
LLVMValueRef cg_node_ref(cg_lower *L, const ir_node *n);
/* A private constant i64 array holding dims[0..rank). */
LLVMValueRef cg_dims_global(cg_lower *L, int rank, const int64_t *dims);
/* The node's value as a register scalar (loads a boxed scalar). */
LLVMValueRef cg_get_nat(cg_lower *L, const ir_node *n);
/* Branches to a fresh error block when bad is true: there the error of
 * node n (on its operands) is reported and the function fails. */
void cg_check_or_fail(cg_lower *L, LLVMValueRef bad, const ir_node *n);
/* Allocates the output of a native node: frame memory (CG_BUF) or a new
 * owned rt_value (CG_BOX) with dims (an i64 array pointer). Sets data. */
void cg_alloc_output(cg_lower *L, const ir_node *n, LLVMValueRef dims);
LLVMBasicBlockRef cg_new_block(cg_lower *L, const char *name);
/* An alloca in the entry block, whatever block is being built (so that
 * loops do not grow the stack). */
LLVMValueRef cg_entry_alloca(cg_lower *L, LLVMTypeRef t, unsigned align, const char *name);

#endif /* CG_LOWER_H */
