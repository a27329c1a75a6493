/*
 * aot.h - the contract between the object files `agc --emit=obj` writes
 * and the runtime that runs them (prefix ag_aot_ / aot_).
 *
 * For each function compiled ahead of time the object holds:
 *
 *   - the native code of its graph: int32_t entry(rt_value *const *args,
 *     rt_value **results), exactly as the JIT compiles it (backend/cpu/cg.h),
 *     except that it reaches graph nodes through a node table instead of
 *     addresses of the compiling process;
 *   - the optimized graph in the IR's text form, which the runtime parses
 *     once (ir/parse.c) to fill that table: fallback ops and error reports
 *     need the nodes' attributes and source locations;
 *   - one `ag_aot_function` descriptor (below), named agc_aot_<function>;
 *   - the C function itself, with the user's prototype, which packs its
 *     arguments and calls ag_aot_call.
 *
 * backend/cpu/cg_aot.c builds the descriptor as an LLVM constant whose layout
 * must match this struct: every field is 8 bytes (pointers, int64_t), so
 * there is no padding on any 64-bit target. Change both together and bump
 * AG_AOT_ABI_VERSION.
 */
#ifndef AG_AOT_H
#define AG_AOT_H

#include "rt.h"

#define AG_AOT_ABI_VERSION 1

struct ag_aot_function {
    int64_t abi;                    /* AG_AOT_ABI_VERSION */
    const char *name;               /* the C function */
    const char *file;               /* where the user defined it */
    int64_t line;
    const char *signature;          /* the AG_SIGNATURE it was compiled for */
    const char *graph;              /* the optimized graph, text form */
    int64_t n_params;
    const char *const *param_names;
    const int64_t *param_kinds;     /* ag_arg_kind of each parameter */
    int64_t n_outputs;
    int32_t (*entry)(rt_value *const *args, rt_value **results);
    const void **nodes;             /* [n_nodes]: filled from `graph` */
    int64_t n_nodes;
    void *loaded;                   /* the runtime's: the parsed graph */
};

#endif /* AG_AOT_H */
