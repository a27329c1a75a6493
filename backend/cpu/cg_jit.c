/*
 * cg_jit.c - compiling with LLVM and running through ORC's LLJIT.
 *
 * One LLJIT per process, made on first use: making one (execution
 * session, target machine, linking layer) costs milliseconds, which every
 * trace would pay again with an instance per function. Each cg_code owns
 * a ResourceTracker in the JIT's main JITDylib instead: removing it frees
 * exactly that code's memory, and symbol names are unique per compile.
 * The JIT lives until the process exits (reachable, so leak checkers do
 * not report it), which lets compiled code outlive ag_shutdown safely.
 * Symbol names are recycled once their code is freed: the JIT interns
 * every name it sees and never forgets one, so a program that retraces
 * forever would otherwise grow it without bound.
 *
 * A compile lowers the graph into a fresh LLVMContext (so that threads
 * compile independently), runs the O2 pipeline with a target machine for
 * the host CPU (so loops vectorize with its vector width), then hands the
 * module to the JIT. Adding and looking up are serialized by a mutex: the
 * LLJIT's default compiler owns one target machine that is not
 * thread-safe.
 *
 * With a compilation cache directory (cache.h), cg_compile (target_cpu.c)
 * hands the graph to cache.c first, which loads or makes a relocatable
 * object and links it here (cg_jit_add_object); such code is named after
 * its key, and freeing it tells the cache through the hook it gave. This
 * file knows nothing of the cache: the cache uses the JIT, not the
 * reverse.
 * With AG_PERF=1 the code is registered with perf (`perf record` then
 * `perf report` name it): the JIT links with RuntimeDyld instead of
 * JITLink, because LLVM's perf JIT event listener hears only RuntimeDyld,
 * and the listener writes a jitdump file (under $JITDUMPDIR, else
 * $HOME, in .debug/jit/) that `perf inject --jit` reads. Every function of
 * a module is named after its AG_FUNCTION: the entry agc_<name>_<n>, an
 * outlined loop agc_<name>_<n>.loop<k> (the k-th of the module).
 */
#include "cg.h"

#include "cache.h" /* cg_jit_add_object's declaration only */
#include "cg_runtime.h"
#include "cg_target.h"
#include "lower.h"

#include <llvm-c/Error.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*cg_entry)(rt_value *const *args, rt_value **results);

struct cg_code {
    const ir_function *fn;
    pass_analyses *am;  /* fn's, for cg_module_text */
    cg_machine machine; /* the CPU it was compiled for (the triple is the host's) */
    char name[96];
    int number; /* in name; back to free_numbers when the code is removed */
    cg_entry entry;
    LLVMOrcResourceTrackerRef tracker;
    /* loaded from the compilation cache (cache.h): name is its key's, and
     * freeing the code calls this with it */
    void (*unloaded)(const char *name);
};

/* ------------------------------------------------------------ the JIT */

static pthread_once_t jit_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef jit;
static char jit_error[256];
static atomic_int live_codes; /* cg_code made and not yet freed */
static LLVMJITEventListenerRef perf_listener; /* AG_PERF: set once by jit_init */

/* Numbers for symbol names, under jit_lock: freed ones first, so that the
 * names in use stay as few as the code alive at once. */
static int next_number;
static int *free_numbers, n_free_numbers, cap_free_numbers;

static int take_number(void)
{
    pthread_mutex_lock(&jit_lock);
    int k = n_free_numbers > 0 ? free_numbers[--n_free_numbers] : next_number++;
    pthread_mutex_unlock(&jit_lock);
    return k;
}

/* Under jit_lock, once no symbol of that name is defined. */
static void give_number_locked(int k)
{
    if (n_free_numbers == cap_free_numbers) {
        cap_free_numbers = cap_free_numbers ? 2 * cap_free_numbers : 64;
        free_numbers = rt_xrealloc(free_numbers, (size_t)cap_free_numbers * sizeof *free_numbers);
    }
    free_numbers[n_free_numbers++] = k;
}

int cg_live_codes(void) { return atomic_load(&live_codes); }

/* Graphs LLVM lowered and optimized, by the JIT or for the cache. */
static atomic_long llvm_runs;

void cg_count_llvm(void) { atomic_fetch_add(&llvm_runs, 1); }

long cg_llvm_compiles(void) { return atomic_load(&llvm_runs); }

static bool take_error(LLVMErrorRef e, const char *what, char *buf, size_t n)
{
    if (!e)
        return true;
    char *msg = LLVMGetErrorMessage(e);
    snprintf(buf, n, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return false;
}

/* libm and libc functions generated code may call (LLVM lowers frem to
 * fmod, and may turn loops into memset/memcpy), mapped like the runtime
 * helpers so that nothing depends on the executable's dynamic symbols. */
#define LIBFN(f) {#f, (void (*)(void))f}
static const cg_rt_symbol libc_symbols[] = {
    LIBFN(expf), LIBFN(exp),     LIBFN(logf),    LIBFN(log),    LIBFN(tanhf),  LIBFN(tanh),
    LIBFN(powf), LIBFN(pow),     LIBFN(fmodf),   LIBFN(fmod),   LIBFN(floorf), LIBFN(floor),
    LIBFN(ceilf), LIBFN(ceil),   LIBFN(sqrtf),   LIBFN(sqrt),   LIBFN(memset), LIBFN(memcpy),
    LIBFN(memmove),
};

static bool define_symbols(LLVMOrcJITDylibRef jd, const cg_rt_symbol *syms, int n)
{
    LLVMOrcCSymbolMapPair *pairs = rt_xcalloc((size_t)n, sizeof *pairs);
    for (int i = 0; i < n; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, syms[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
        pairs[i].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
    free(pairs);
    return take_error(LLVMOrcJITDylibDefine(jd, mu), "defining runtime symbols", jit_error,
                      sizeof jit_error);
}

/* ---------------------------------------------------------- perf */

static void jit_init(void);

/* The setting perf (AG_PERF), as in force when the process's one JIT is
 * made (at the first compile): it decides how the JIT links, for good. */
static bool perf_wanted(void)
{
    const rt_config *c = rt_config_get();
    bool on = rt_config_on(c, RT_CFG_PERF);
    rt_config_release(c);
    return on;
}

/* LLJIT's object linking layer under AG_PERF: RuntimeDyld, heard by the
 * perf listener (JITLink's perf support needs the ORC runtime, which the
 * C API does not offer). */
static LLVMOrcObjectLayerRef perf_linking_layer(void *ctx, LLVMOrcExecutionSessionRef es,
                                                const char *triple)
{
    (void)ctx, (void)triple;
    LLVMOrcObjectLayerRef layer = LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
    LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, perf_listener);
    return layer;
}

/* Under AG_PERF, makes the listener and has the builder link with a layer
 * it hears; a warning when LLVM was built without perf support. */
static void use_perf(LLVMOrcLLJITBuilderRef builder)
{
    if (!perf_wanted())
        return;
    perf_listener = LLVMCreatePerfJITEventListener();
    if (!perf_listener) {
        rt_warn((ag_loc){0}, "AG_PERF: this LLVM has no perf JIT event listener (it was built "
                             "without LLVM_USE_PERF); compiled code is not registered with perf");
        return;
    }
    LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(builder, perf_linking_layer, NULL);
}

bool cg_perf_enabled(void)
{
    pthread_once(&jit_once, jit_init);
    return perf_listener != NULL;
}

static void jit_init(void)
{
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(jit_error, sizeof jit_error, "LLVM has no native target for this host");
        return;
    }

    LLVMOrcJITTargetMachineBuilderRef jtmb;
    if (!take_error(LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb), "detecting the host",
                    jit_error, sizeof jit_error))
        return;
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
    use_perf(builder);
    LLVMOrcLLJITRef j;
    if (!take_error(LLVMOrcCreateLLJIT(&j, builder), "creating the JIT", jit_error,
                    sizeof jit_error))
        return;
    jit = j;
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    if (!define_symbols(jd, cg_rt_symbols, cg_rt_n_symbols) ||
        !define_symbols(jd, libc_symbols, (int)(sizeof libc_symbols / sizeof *libc_symbols))) {
        jit = NULL; /* unusable; kept alive, as the process owns it */
        return;
    }
    /* anything else LLVM's code generator calls (compiler-rt style
     * helpers) comes from the process */
    LLVMOrcDefinitionGeneratorRef gen;
    if (!take_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                        &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL),
                    "searching the process", jit_error, sizeof jit_error)) {
        jit = NULL;
        return;
    }
    LLVMOrcJITDylibAddGenerator(jd, gen);
}

static bool jit_ready(char *err, size_t errlen)
{
    pthread_once(&jit_once, jit_init);
    if (jit)
        return true;
    snprintf(err, errlen, "the LLVM JIT is unavailable: %s", jit_error);
    return false;
}

/* --------------------------------------------------------- optimizing */

/* LLVM's O2 pipeline with a target machine for the host (or the CPU the
 * options name: code for an older CPU of the host's family runs here
 * too), so that loops vectorize with its vector width (cg_target.c). */
static bool optimize(LLVMModuleRef mod, const cg_machine *m, char *err, size_t errlen)
{
    LLVMTargetMachineRef tm = cg_target_machine(m, false, err, errlen);
    if (!tm)
        return false;
    cg_mark_functions(mod, tm);
    bool ok = cg_optimize(mod, tm, err, errlen);
    LLVMDisposeTargetMachine(tm);
    return ok;
}

/* ------------------------------------------------------------ compile */

static void symbol_name(const ir_function *fn, int number, char *buf, size_t n)
{
    char clean[48];
    const char *src = fn->name ? fn->name : "fn";
    size_t k = 0;
    for (const char *p = src; *p && k + 1 < sizeof clean; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_';
        clean[k++] = ok ? ch : '_';
    }
    clean[k] = '\0';
    snprintf(buf, n, "agc_%s_%d", clean, number);
}

/* Names every function the lowering defined besides the entry (outlined
 * loops, small matrix products) after the entry, so that a profiler's
 * samples say which AG_FUNCTION they are in: "loop" becomes
 * agc_f_3.loop0, "matmul_f32_4x4x4" agc_f_3.matmul_f32_4x4x4. The math
 * helpers (agc_tanh_f32 and its vector forms) keep their names: call
 * sites name their vector variants by them ("vector-function-abi-variant",
 * lower_math.c), and a renamed helper is called one element at a time. */
static void name_after_entry(LLVMModuleRef mod, const char *entry)
{
    int loops = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) || strcmp(name, entry) == 0 || strncmp(name, "agc_", 4) == 0)
            continue;
        char fresh[256];
        if (strncmp(name, "loop", 4) == 0 && (name[4] == '\0' || name[4] == '.'))
            snprintf(fresh, sizeof fresh, "%s.loop%d", entry, loops++);
        else
            snprintf(fresh, sizeof fresh, "%s.%.*s", entry, (int)len, name);
        LLVMSetValueName2(f, fresh, strlen(fresh));
    }
}

static LLVMModuleRef build_module(const cg_code *c, LLVMContextRef ctx, char *err, size_t errlen)
{
    LLVMModuleRef mod = cg_lower_function(c->fn, c->am, ctx, c->name, &c->machine, err, errlen);
    if (mod) {
        cg_count_llvm();
        name_after_entry(mod, c->name);
    }
    if (mod && !optimize(mod, &c->machine, err, errlen)) {
        LLVMDisposeModule(mod);
        return NULL;
    }
    return mod;
}

bool cg_jit_ready(char *err, size_t errlen) { return jit_ready(err, errlen); }

cg_code *cg_jit_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                        char *err, size_t errlen)
{
    if (!jit_ready(err, errlen))
        return NULL;
    cg_code *c = rt_xcalloc(1, sizeof *c);
    c->fn = fn;
    c->am = am;
    c->machine = cg_machine_jit(o);
    c->number = take_number();
    symbol_name(fn, c->number, c->name, sizeof c->name);
    atomic_fetch_add(&live_codes, 1);
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMModuleRef mod = build_module(c, LLVMOrcThreadSafeContextGetContext(tsc), err, errlen);
    if (!mod) {
        LLVMOrcDisposeThreadSafeContext(tsc);
        cg_free(c);
        return NULL;
    }
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
    LLVMOrcDisposeThreadSafeContext(tsc); /* the module keeps it alive */

    pthread_mutex_lock(&jit_lock);
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    c->tracker = LLVMOrcJITDylibCreateResourceTracker(jd);
    LLVMOrcExecutorAddress addr = 0;
    bool ok = take_error(LLVMOrcLLJITAddLLVMIRModuleWithRT(jit, c->tracker, tsm),
                         "adding the module", err, errlen) &&
              take_error(LLVMOrcLLJITLookup(jit, &addr, c->name), "linking", err, errlen);
    pthread_mutex_unlock(&jit_lock);
    if (!ok) {
        cg_free(c);
        return NULL;
    }
    c->entry = (cg_entry)(uintptr_t)addr;
    return c;
}

cg_code *cg_jit_add_object(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                           const char *sym, const char *table_sym, const char *obj, size_t len,
                           void (*unloaded)(const char *sym), const void ***table, char *err,
                           size_t errlen)
{
    if (!jit_ready(err, errlen))
        return NULL;
    cg_code *c = rt_xcalloc(1, sizeof *c);
    c->fn = fn;
    c->am = am;
    c->machine = cg_machine_jit(o);
    c->number = -1; /* the name is the cache key's, not a recycled number */
    snprintf(c->name, sizeof c->name, "%s", sym);
    atomic_fetch_add(&live_codes, 1);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, sym);
    pthread_mutex_lock(&jit_lock);
    c->tracker = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    LLVMOrcExecutorAddress entry = 0, nodes = 0;
    bool ok = take_error(LLVMOrcLLJITAddObjectFileWithRT(jit, c->tracker, buf),
                         "adding the cached object", err, errlen) &&
              take_error(LLVMOrcLLJITLookup(jit, &entry, sym), "linking", err, errlen) &&
              take_error(LLVMOrcLLJITLookup(jit, &nodes, table_sym), "linking", err, errlen);
    pthread_mutex_unlock(&jit_lock);
    if (!ok) {
        cg_free(c); /* not yet cached: the caller keeps the name reserved */
        return NULL;
    }
    c->unloaded = unloaded;
    c->entry = (cg_entry)(uintptr_t)entry;
    *table = (const void **)(uintptr_t)nodes;
    return c;
}

void cg_free(cg_code *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&jit_lock);
    bool removed = true;
    if (c->tracker) {
        LLVMErrorRef e = LLVMOrcResourceTrackerRemove(c->tracker);
        if (e) {
            LLVMConsumeError(e); /* nothing to do: the memory stays mapped */
            removed = false;     /* and the name defined: never reuse it */
        }
        LLVMOrcReleaseResourceTracker(c->tracker);
    }
    if (removed && c->number >= 0)
        give_number_locked(c->number);
    pthread_mutex_unlock(&jit_lock);
    if (removed && c->unloaded)
        c->unloaded(c->name);
    atomic_fetch_sub(&live_codes, 1);
    free(c);
}

char *cg_module_text(const cg_code *c)
{
    char err[512];
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = build_module(c, ctx, err, sizeof err);
    char *text;
    if (mod) {
        char *s = LLVMPrintModuleToString(mod);
        text = rt_xstrdup(s);
        LLVMDisposeMessage(s);
        LLVMDisposeModule(mod);
    } else {
        size_t n = strlen(err) + 16;
        text = rt_xmalloc(n);
        snprintf(text, n, "; error: %s\n", err);
    }
    LLVMContextDispose(ctx);
    return text;
}

/* ---------------------------------------------------------------- run */

/* The compiled code relies on each argument having its parameter's
 * dtype and known dims; a mismatch is the caller's bug, reported rather
 * than read out of bounds. */
static bool check_arg(const ir_node *p, const rt_value *v, int i)
{
    const ir_type *t = &p->type;
    bool ok = ir_value_has_type(t, v);
    if (!ok) {
        char want[160], got[160];
        ir_type vt = {.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
        rt_report((ag_loc){0}, "internal: argument %d has type %s, but the compiled function "
                               "expects %s", i, ir_type_str(&vt, got, sizeof got),
                  ir_type_str(t, want, sizeof want));
    }
    return ok;
}

bool cg_run(const cg_code *c, rt_value *const *args, int n_args, rt_value **results)
{
    const ir_graph *body = c->fn->body;
    if (n_args != body->n_params) {
        rt_report((ag_loc){0}, "internal: %d arguments for %d parameters", n_args,
                  body->n_params);
        return false;
    }
    for (int i = 0; i < n_args; i++)
        if (!args[i] || !check_arg(body->params[i], args[i], i))
            return false; /* a NULL argument was reported where it was made */
    return c->entry(args, results) != 0;
}
