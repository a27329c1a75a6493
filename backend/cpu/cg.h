/*
 * cg.h - the CPU target's code generator (prefix cg_): compiles a
 * concrete function's graph to native code with the LLVM C API and runs
 * it through an ORC JIT, or compiles graphs ahead of time into an object.
 * target_cpu.c makes it the `cpu` target of backend/target.h.
 *
 * The compiled code has exactly the reference executor's semantics
 * (ir/exec.h): the same results, the same errors at the same source
 * locations, the same prints and state updates in the same order, and the
 * same non-strict liveness (only nodes that reach a result or an effect
 * run). lower.c describes how the code is built; docs/runtime.md how to
 * choose the target.
 */
#ifndef CG_H
#define CG_H

#include "ir.h"
#include "target.h"

typedef struct cg_code cg_code;

/* The cpu target (target_cpu.c); its caps are what the lowering can do. */
extern const tgt_target tgt_cpu;
/* The dtypes generated code computes on directly (tgt_cpu.caps'), here
 * so that the lowering asks without naming the target (lower.h). */
#define CG_NATIVE_DTYPES                                                                  \
    (1u << AG_F32 | 1u << AG_F64 | 1u << AG_BF16 | 1u << AG_I32 | 1u << AG_I64 | 1u << AG_BOOL | \
     1u << AG_I8)

/* How the generated code computes an op (ops_cpu.c, one row per op). */
typedef enum cg_op_use {
    CG_OP_UNLISTED, /* no row: never in the table (test_backend checks) */
    CG_OP_LOOP,     /* in fused loops (lower_elem.c) */
    CG_OP_OWN,      /* a lowering of its own: constants, products */
    CG_OP_KERNEL,   /* a call of its eager kernel */
} cg_op_use;

extern const cg_op_use cg_ops[RT_OP_COUNT];

/*
 * Compiles fn, following the plans of am (fn's analyses, made for
 * tgt_cpu.caps). fn and am must outlive the code: the generated code
 * refers to fn's nodes (attributes, source locations, literals), and
 * cg_module_text lowers again. Returns NULL with a message in err when
 * something is not supported. Safe to call from several threads at once.
 */
cg_code *cg_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o, char *err,
                    size_t errlen);
/* cg_compile's parts (cg_jit.c): whether the JIT could be made (the
 * reason in err if not), and compiling without the cache. */
bool cg_jit_ready(char *err, size_t errlen);
cg_code *cg_jit_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                        char *err, size_t errlen);

/*
 * Runs compiled code, with ir_execute's contract: one value per
 * parameter; on success one new value per result (the caller frees them)
 * and true; on failure false after reporting the error (rt_report) at the
 * failing node's location, with results left untouched. Reentrant.
 */
bool cg_run(const cg_code *c, rt_value *const *args, int n_args, rt_value **results);

void cg_free(cg_code *c);
/* Compiled code not yet freed (its JIT memory still held), for tests
 * that check ag_shutdown frees it all. */
int cg_live_codes(void);
/* Whether compiled code is registered with perf (AG_PERF=1, read once,
 * when the JIT is made, and an LLVM built with perf support). */
bool cg_perf_enabled(void);

/* The machine code is compiled for, as this target's settings name it
 * (rows triple, cpu and cpu_features of runtime/core/config.def; empty:
 * the host's). Copies, so compiled code keeps its machine after the
 * compile's settings are gone. */
typedef struct cg_machine {
    char triple[128];   /* an LLVM target triple (ahead of time only: the JIT is the host's) */
    char cpu[64];       /* a CPU name, as --cpu takes it */
    char features[512]; /* "+avx2,-avx512f" */
} cg_machine;

/* The machine o's settings name (o or o->config NULL: the settings in
 * force); the JIT's drops the triple. */
cg_machine cg_machine_of(const tgt_options *o);
cg_machine cg_machine_jit(const tgt_options *o);

/* Whether code can be compiled for o (JIT or ahead of time): LLVM knows
 * its triple and CPU. False with the reason in err (cg_target.c). */
bool cg_check_options(const tgt_options *o, char *err, size_t errlen);

/* Whether code for machine m (as cg_target_machine picks it: nothing
 * named, the host's) may use AVX512_BF16's dot products (vdpbf16ps): the
 * host's features, or a named CPU that has them, unless m's features add
 * or remove +avx512bf16 (cg_target.c). */
bool cg_has_bf16_dot(const cg_machine *m);

/* The optimized LLVM IR of the code, as text (malloc'ed; free it). */
char *cg_module_text(const cg_code *c);

/* -------------------------------------------- ahead of time (cg_aot.c) */

/* Compiles fns into one module for the options' triple and CPU, each
 * graph planned for caps (the target's; backend/cpu/aot.h describes what
 * the module holds) and returns it as an object
 * file, assembly or LLVM IR text in *out (malloc'ed, *len bytes). False
 * with a message in err. */
bool cg_aot_compile(const tgt_aot_function *fns, int n, const tgt_options *target,
                    const pass_caps *caps, tgt_emit_kind kind, char **out, size_t *len,
                    char *err, size_t errlen);

#endif /* CG_H */
