/*
 * cg_target.c - LLVM targets and the optimization pipeline, shared by the
 * JIT (the host) and ahead-of-time compilation (any target LLVM knows).
 */
#include "cg_target.h"

#include "config.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t targets_once = PTHREAD_ONCE_INIT;

static void init_targets(void)
{
    LLVMInitializeAllTargetInfos();
    LLVMInitializeAllTargets();
    LLVMInitializeAllTargetMCs();
    LLVMInitializeAllAsmPrinters();
    LLVMInitializeAllAsmParsers();
}

cg_arch cg_arch_of(const char *triple)
{
    char *host = triple ? NULL : LLVMGetDefaultTargetTriple();
    const char *t = triple ? triple : host;
    cg_arch arch = CG_ARCH_OTHER;
    if (strncmp(t, "x86_64", 6) == 0)
        arch = CG_ARCH_X86_64;
    else if (t[0] == 'i' && t[1] && strncmp(t + 2, "86", 2) == 0)
        arch = CG_ARCH_X86;
    else if (strncmp(t, "aarch64", 7) == 0 || strncmp(t, "arm64", 5) == 0)
        arch = CG_ARCH_AARCH64;
    LLVMDisposeMessage(host);
    return arch;
}

void cg_target_init(void) { pthread_once(&targets_once, init_targets); }

/* ----------------------------------------------------------- CPU names */

/*
 * LLVM's C API cannot say whether it knows a CPU. A target machine for an
 * unknown one is made anyway, after "'foo' is not a recognized processor
 * for this target (ignoring processor)" on stderr, and the first function
 * compiled for it on x86-64 aborts the process (a subtarget without 64-bit
 * mode). So the first target machine for each (triple, CPU) is made with
 * stderr sent to a temporary file, which is searched for that warning;
 * everything else written there meanwhile (another thread's message, the
 * list LLVM prints for the CPU "help") goes on to stderr. The CPUs found
 * good are remembered.
 */
enum { KNOWN_MAX = 32 };
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static char *known[KNOWN_MAX]; /* "triple cpu" */
static int n_known;

static bool was_known(const char *key)
{
    for (int i = 0; i < n_known; i++)
        if (strcmp(known[i], key) == 0)
            return true;
    return false;
}

typedef struct err_capture {
    FILE *file;
    int saved; /* the real stderr */
} err_capture;

static bool capture_stderr(err_capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    c->saved = c->file ? dup(STDERR_FILENO) : -1;
    if (c->saved >= 0 && dup2(fileno(c->file), STDERR_FILENO) >= 0)
        return true;
    if (c->saved >= 0)
        close(c->saved);
    if (c->file)
        fclose(c->file);
    return false;
}

/* Restores stderr; returns what was written to it meanwhile (malloc'ed). */
static char *release_stderr(err_capture *c)
{
    fflush(stderr);
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    long n = fseek(c->file, 0, SEEK_END) == 0 ? ftell(c->file) : -1;
    char *text = malloc(n > 0 ? (size_t)n + 1 : 1);
    size_t got = text && n > 0 && fseek(c->file, 0, SEEK_SET) == 0
                     ? fread(text, 1, (size_t)n, c->file)
                     : 0;
    if (text)
        text[got] = '\0';
    fclose(c->file);
    return text;
}

/* Writes text to stderr without the lines that contain `drop`. */
static void pass_on(const char *text, const char *drop)
{
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        const char *hit = strstr(line, drop);
        if (!hit || hit >= line + len)
            fwrite(line, 1, len, stderr);
        line += len;
    }
}

/* Whether LLVM knows cpu for triple (target); else false with a message. */
static bool cpu_known(LLVMTargetRef target, const char *triple, const char *cpu,
                      const char *features, char *err, size_t errlen)
{
    char key[256], warning[160];
    snprintf(key, sizeof key, "%s %s", triple, cpu);
    snprintf(warning, sizeof warning, "'%s' is not a recognized processor", cpu);
    pthread_mutex_lock(&known_lock);
    bool ok = was_known(key);
    err_capture c;
    if (!ok && capture_stderr(&c)) {
        LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
            target, triple, cpu, features, LLVMCodeGenLevelDefault, LLVMRelocDefault,
            LLVMCodeModelDefault);
        if (tm)
            LLVMDisposeTargetMachine(tm);
        char *text = release_stderr(&c);
        ok = !text || !strstr(text, warning);
        if (text)
            pass_on(text, warning);
        free(text);
    } else if (!ok) {
        ok = true; /* no way to look: LLVM warns itself */
    }
    bool help = strcmp(cpu, "help") == 0; /* LLVM listed its CPUs, but it is none */
    if (ok && !help && !was_known(key) && n_known < KNOWN_MAX)
        known[n_known++] = strdup(key);
    pthread_mutex_unlock(&known_lock);
    if (help)
        snprintf(err, errlen, "the CPUs LLVM knows for %s are listed above", triple);
    else if (!ok)
        snprintf(err, errlen, "LLVM knows no CPU named '%s' for %s; the name 'help' lists "
                              "those it knows", cpu, triple);
    return ok && !help;
}

/* ------------------------------------------------------ target machines */

/*
 * The vector width on x86 CPUs with AVX-512: LLVM vectorizes for 256 bits
 * on Intel's (tuning feature prefer-256-bit: skylake-avx512 up to
 * sapphirerapids, and rocketlake, as LLVM 19 names this Xeon) and for
 * 512 on AMD's (znver4), because 512-bit arithmetic lowered the clock of
 * Skylake's server cores. For agc's code 512 bits are faster wherever the
 * data fills them. Measured on a Sapphire Rapids Xeon (rocketlake to LLVM),
 * one thread, the best of 61 runs, 256 bits against 512:
 *     tanh(x*a + b)*c + x, 32K f32 in cache      18.0 us    14.3 us
 *     the same, 4M f32                          2.27 ms    1.79 ms
 *     100 chained 16x16 f32 products            11.3 us     8.7 us
 *     100 chained 16x16 i32 products            15.6 us    10.5 us
 *     100 chained 10x10 products, i32 or f32      equal (rows of 8 + 2)
 *     (x*a + b)*c + x, 32K f32 in cache          3.0 us    3.25 us
 * The one loss, 8% on a cheap loop bound by the cache, is small next to
 * the gains. So -prefer-256-bit, except on the Skylake server cores, whose
 * clock drop was not measured here and which keep LLVM's choice. CPUs
 * without AVX-512 are unaffected: the width is capped at what they have.
 */
static bool wants_512_bits(const char *triple, const char *cpu)
{
    static const char *const skylake_server[] = {"skylake-avx512", "cascadelake", "cooperlake"};
    cg_arch arch = cg_arch_of(triple);
    if (arch != CG_ARCH_X86 && arch != CG_ARCH_X86_64)
        return false;
    for (size_t i = 0; i < sizeof skylake_server / sizeof *skylake_server; i++)
        if (strcmp(cpu, skylake_server[i]) == 0)
            return false;
    return true;
}

/* The features of a CPU: the host's, or a named CPU's own plus 64-bit
 * mode on x86-64 (LLVM aborts for a CPU without it, i386 or pentium4,
 * instead of reporting the mismatch); and the vector width. */
static char *cpu_features(const char *triple, const char *cpu, bool host_cpu)
{
    char *base = host_cpu ? LLVMGetHostCPUFeatures() : NULL;
    const char *mode = !host_cpu && cg_arch_of(triple) == CG_ARCH_X86_64 ? "+64bit" : "";
    const char *width = wants_512_bits(triple, cpu) ? "-prefer-256-bit" : "";
    size_t n = (base ? strlen(base) : 0) + strlen(mode) + strlen(width) + 3;
    char *s = malloc(n);
    snprintf(s, n, "%s%s%s%s%s", base ? base : "", base && *mode ? "," : "", mode,
             (base || *mode) && *width ? "," : "", width);
    char *features = LLVMCreateMessage(s);
    free(s);
    LLVMDisposeMessage(base);
    return features;
}

/* ------------------------------------------------------------ machines */

static void copy_setting(char *dst, size_t n, const rt_config *c, rt_config_id id)
{
    const char *v = rt_config_str(c, id);
    snprintf(dst, n, "%s", v ? v : "");
}

cg_machine cg_machine_of(const tgt_options *o)
{
    const rt_config *c = o && o->config ? rt_config_ref(o->config) : rt_config_get();
    cg_machine m;
    copy_setting(m.triple, sizeof m.triple, c, RT_CFG_TRIPLE);
    copy_setting(m.cpu, sizeof m.cpu, c, RT_CFG_CPU);
    copy_setting(m.features, sizeof m.features, c, RT_CFG_CPU_FEATURES);
    rt_config_release(c);
    return m;
}

cg_machine cg_machine_jit(const tgt_options *o)
{
    cg_machine m = cg_machine_of(o);
    m.triple[0] = '\0';
    return m;
}

LLVMTargetMachineRef cg_target_machine(const cg_machine *t, bool pic, char *err, size_t errlen)
{
    cg_target_init();
    bool host = !t || !t->triple[0];
    char *triple = host ? LLVMGetDefaultTargetTriple() : LLVMNormalizeTargetTriple(t->triple);
    /* The host's CPU and features by default; "generic" for another
     * target unless --cpu names one. */
    bool named = t && t->cpu[0];
    char *cpu = named ? LLVMCreateMessage(t->cpu)
                : host ? LLVMGetHostCPUName()
                       : LLVMCreateMessage("generic");
    char *features = cpu_features(triple, cpu, host && !named);
    LLVMTargetRef target;
    char *msg = NULL;
    LLVMTargetMachineRef tm = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "LLVM has no target for '%s': %s", triple, msg ? msg : "");
    } else if (!named || cpu_known(target, triple, cpu, features, err, errlen)) {
        tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault,
                                     pic ? LLVMRelocPIC : LLVMRelocDefault,
                                     pic ? LLVMCodeModelDefault : LLVMCodeModelJITDefault);
        if (!tm)
            snprintf(err, errlen, "LLVM cannot make a target machine for '%s' (cpu '%s')",
                     triple, cpu);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    return tm;
}

bool cg_check_options(const tgt_options *o, char *err, size_t errlen)
{
    cg_machine m = cg_machine_of(o);
    LLVMTargetMachineRef tm = cg_target_machine(&m, false, err, errlen);
    if (tm)
        LLVMDisposeTargetMachine(tm);
    return tm != NULL;
}

/* ------------------------------------------------- AVX512_BF16 support */

/* Whether feature list `list` ("+a,-b,...") says +name (1), -name (-1) or
 * nothing (0); the last mention wins, as in LLVM. */
static int feature_says(const char *list, const char *name)
{
    int said = 0;
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n + 1 && (p[0] == '+' || p[0] == '-') && strncmp(p + 1, name, n) == 0)
            said = p[0] == '+' ? 1 : -1;
        p += len + (end ? 1 : 0);
    }
    return said;
}

/*
 * The C API cannot ask LLVM which features a named CPU has, so the x86
 * CPUs LLVM 19 gives AVX512_BF16 (FeatureBF16 in X86.td) are listed here:
 * Intel's server cores from Cooper Lake on, AMD's from Zen 4 on.
 */
static bool cpu_has_bf16(const char *cpu)
{
    static const char *const with_bf16[] = {
        "cooperlake", "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
        "diamondrapids", "znver4", "znver5"};
    for (size_t i = 0; i < sizeof with_bf16 / sizeof *with_bf16; i++)
        if (strcmp(cpu, with_bf16[i]) == 0)
            return true;
    return false;
}

bool cg_has_bf16_dot(const cg_machine *t)
{
    bool host = !t || !t->triple[0];
    cg_arch arch = cg_arch_of(host ? NULL : t->triple);
    if (arch != CG_ARCH_X86_64)
        return false;
    int said = t ? feature_says(t->features, "avx512bf16") : 0;
    if (said)
        return said > 0;
    if (t && t->cpu[0])
        return cpu_has_bf16(t->cpu);
    if (!host)
        return false; /* "generic" */
    char *features = LLVMGetHostCPUFeatures();
    bool has = feature_says(features, "avx512bf16") > 0;
    LLVMDisposeMessage(features);
    return has;
}

/* ------------------------------------------------------------ optimizing */

static void add_string_attr(LLVMValueRef f, const char *key, const char *value)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(f));
    LLVMAttributeRef a = LLVMCreateStringAttribute(ctx, key, (unsigned)strlen(key), value,
                                                   (unsigned)strlen(value));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
}

void cg_mark_functions(LLVMModuleRef mod, LLVMTargetMachineRef tm)
{
    char *cpu = LLVMGetTargetMachineCPU(tm), *features = LLVMGetTargetMachineFeatureString(tm);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f))
            continue;
        add_string_attr(f, "target-cpu", cpu);
        if (*features)
            add_string_attr(f, "target-features", features);
    }
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
}

void cg_mark(LLVMValueRef f, const char *mark)
{
    add_string_attr(f, mark, "");
}

static bool marked(LLVMValueRef f, const char *mark)
{
    return f && LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, mark,
                                              (unsigned)strlen(mark)) != NULL;
}

/* Marks alwaysinline the calls of CG_VECTOR_BODY functions in CG_HOT_LOOP
 * functions; whether there were any. */
static bool mark_hot_calls(LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    bool any = false;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        if (!marked(f, CG_HOT_LOOP))
            continue;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                if (LLVMGetInstructionOpcode(i) != LLVMCall ||
                    !marked(LLVMGetCalledValue(i), CG_VECTOR_BODY))
                    continue;
                LLVMAddCallSiteAttribute(i, LLVMAttributeFunctionIndex,
                                         LLVMCreateEnumAttribute(ctx, always, 0));
                any = true;
            }
    }
    return any;
}

bool cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char *err, size_t errlen)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: invalid LLVM IR was generated: %.300s", msg);
        LLVMDisposeMessage(msg);
        return false;
    }
    LLVMDisposeMessage(msg);
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, layout);
    LLVMDisposeTargetData(layout);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
    LLVMErrorRef e = LLVMRunPasses(mod, "default<O2>", tm, opts);
    if (!e && mark_hot_calls(mod))
        e = LLVMRunPasses(mod, "always-inline", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (!e)
        return true;
    char *m = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "optimizing: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
}
