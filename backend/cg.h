/*
 * cg.h - the LLVM backend (prefix cg_): compiles a concrete function's
 * graph to native code with the LLVM C API and runs it through an ORC JIT.
 *
 * The compiled code has exactly the reference executor's semantics
 * (ir/exec.h): the same results, the same errors at the same source
 * locations, the same prints and state updates in the same order, and the
 * same non-strict liveness (only nodes that reach a result or an effect
 * run). lower.c describes how the code is built; docs/runtime.md how to
 * choose the executor.
 */
#ifndef CG_H
#define CG_H

#include "ir.h"

typedef struct cg_code cg_code;

/*
 * Compiles fn. The function must outlive the code: the generated code
 * refers to its nodes (attributes, source locations, literals). Returns
 * NULL with a message in err when something is not supported; the caller
 * then runs fn with the reference executor. Safe to call from several
 * threads at once.
 */
cg_code *cg_compile(const ir_function *fn, char *err, size_t errlen);

/*
 * Runs compiled code, with ir_execute's contract: one value per
 * parameter; on success one new value per result (the caller frees them)
 * and true; on failure false after reporting the error (rt_report) at the
 * failing node's location, with results left untouched. Reentrant.
 */
bool cg_run(const cg_code *c, rt_value *const *args, int n_args, rt_value **results);

void cg_free(cg_code *c);

/* The optimized LLVM IR of the code, as text (malloc'ed; free it). */
char *cg_module_text(const cg_code *c);

/* ------------------------------------------------ choosing the executor */

/* AG_EXECUTOR selects how concrete functions run: unset or "jit" compiles
 * them (falling back to the reference executor for what the backend
 * cannot compile), "reference" always uses the reference executor, and
 * "jit-strict" compiles and reports an error when compiling fails. */
typedef enum cg_executor {
    CG_EXECUTOR_JIT,
    CG_EXECUTOR_REFERENCE,
    CG_EXECUTOR_JIT_STRICT
} cg_executor;

cg_executor cg_executor_selected(void);

/* What the function cache calls after tracing: the compiled code for fn
 * under the selected executor, or NULL to run the reference executor
 * (in jit-strict mode a compile failure is also reported, at loc). */
cg_code *cg_compile_for_executor(const ir_function *fn, ag_loc loc);

/* -------------------------------------------- ahead of time (cg_aot.c) */

/* A target: NULL or empty fields mean the host's (--target-triple, --cpu). */
typedef struct cg_target {
    const char *triple, *cpu, *features;
} cg_target;

/* A parameter of the C function: a tensor (or tensor array), or a C
 * scalar of `bits` bits (1 for bool; 32 or 64 for floating point). */
typedef struct cg_aot_param {
    const char *name;
    ag_arg_kind kind;
    int bits;
    bool is_signed;
} cg_aot_param;

/* One function to compile ahead of time. */
typedef struct cg_aot_function {
    const char *name;      /* the C function the object defines */
    const char *file;      /* where the user defined it */
    int line;
    const char *signature; /* what it is compiled for */
    const char *graph_text; /* the optimized graph, text form ... */
    const ir_function *graph; /* ... and as parsed from that text */
    int n_params;
    const cg_aot_param *params;
    int n_outputs;
    bool returns_struct; /* the outputs are the fields of a struct */
} cg_aot_function;

typedef enum cg_output { CG_OUTPUT_OBJECT, CG_OUTPUT_ASM, CG_OUTPUT_LLVM } cg_output;

/* Compiles fns into one module for target (runtime/aot/aot.h describes
 * what it holds) and returns it as an object file, assembly or LLVM IR
 * text in *out (malloc'ed, *len bytes). False with a message in err. */
bool cg_aot_compile(const cg_aot_function *fns, int n, const cg_target *target, cg_output kind,
                    char **out, size_t *len, char *err, size_t errlen);

#endif /* CG_H */
