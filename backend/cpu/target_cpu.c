/*
 * target_cpu.c - the `cpu` target: graphs compiled to native code by LLVM
 * (cg_jit.c, lower*.c), run through ORC's JIT, or compiled ahead of time
 * into an object (cg_aot.c).
 *
 * Its capabilities are the lowering's: generated code computes directly
 * on f32, f64, bf16, i32, i64 and bool (bf16 widened to f32 in registers
 * and rounded after each op, as the kernels do: lower_elem.c); every
 * elementwise op fuses into loops (lower_elem.c emits each); every op runs
 * (what has no native form calls its kernel).
 */
#include "cg.h"

#include "cache.h"
#include "cg_runtime.h"
#include "qgemm.h"

#include <stdlib.h>

struct tgt_exe {
    cg_code *code;
};

/* Its op table's loop ops (ops_cpu.c): every elementwise op. */
static bool fuses(int op) { return op >= 0 && op < RT_OP_COUNT && cg_ops[op] == CG_OP_LOOP; }

/* Through the compilation cache when it is on (it links what it loads or
 * makes into the JIT), else straight through the JIT. Called directly
 * (tests, tools), without the pipeline's snapshot: the settings in force
 * (the cache directory) for this compile. */
cg_code *cg_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o, char *err,
                    size_t errlen)
{
    if (!cg_jit_ready(err, errlen))
        return NULL;
    /* int8 products (qmatmul, qconv2d) share this target's thread pool */
    _Static_assert(CG_RT_CHUNK_ALIGN % RT_QGEMM_PANEL == 0, "chunks start on a qgemm panel");
    rt_qgemm_parallel_hook = cg_rt_parallel_for;
    tgt_options with = o ? *o : (tgt_options){0};
    const rt_config *own = with.config ? NULL : rt_config_get();
    if (own)
        with.config = own;
    bool handled;
    cg_code *c = cg_cache_compile(fn, am, &with, &handled, err, errlen);
    if (!handled)
        c = cg_jit_compile(fn, am, &with, err, errlen);
    rt_config_release(own);
    return c;
}

static tgt_exe *cpu_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                                  tgt_diag *d)
{
    cg_code *code = cg_compile(fn, am, o, d->msg, sizeof d->msg);
    if (!code)
        return NULL;
    tgt_exe *x = rt_xcalloc(1, sizeof *x);
    x->code = code;
    return x;
}

static bool cpu_run(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results)
{
    return cg_run(x->code, args, n_args, results);
}

static void cpu_free(tgt_exe *x)
{
    if (!x)
        return;
    cg_free(x->code);
    free(x);
}

/* A roofline: vectorized arithmetic on one core, or the values a fused
 * loop stores and reads, whichever takes longer, plus a call's overhead. */
static tgt_cost cpu_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = tgt_count_cost(fn, am);
    double compute = c.flops / 3.2e10, memory = c.bytes / 2e10;
    c.seconds = 5e-8 + (compute > memory ? compute : memory);
    return c;
}

static bool cpu_emit(const tgt_aot_function *fns, int n, const tgt_options *o,
                     tgt_emit_kind kind, char **out, size_t *len, char *err, size_t errlen)
{
    return cg_aot_compile(fns, n, o, &tgt_cpu.caps, kind, out, len, err, errlen);
}

const tgt_target tgt_cpu = {
    .name = "cpu",
    .summary = "native code from LLVM: fused vectorized loops, BLAS for large products",
    .falls_back = true,
    .caps = {.target = "cpu",
             .native_dtypes = CG_NATIVE_DTYPES,
             .supports = NULL,
             .fuses = fuses,
             .precision = PASS_PRECISION_IEEE},
    .compile = cpu_compile,
    .run = cpu_run,
    .free = cpu_free,
    .cost = cpu_cost,
    .check_options = cg_check_options,
    .emit = cpu_emit,
};
