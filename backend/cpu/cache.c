/*
 * cache.c - the persistent compilation cache (cache.h): which directory,
 * the key of a compile, and compiling through the cache.
 *
 * The key is everything that decides the bytes of the object code:
 *   - the optimized graph's text form (ir_print: lossless, and it names
 *     nodes by their ids, so equal text means equal node ids, which is
 *     what the node table is indexed by);
 *   - the target, the LLVM triple, CPU name and feature string of the
 *     target machine the code is compiled with (the host's unless AG_CPU
 *     or the options say otherwise);
 *   - the cache format, agc's and LLVM's versions, and the build of agc
 *     itself (the file holding this code: its path, size and mtime), since
 *     the version does not change with every change to the code generator;
 *   - the code generation settings (O2, position-independent objects).
 * The file name is a 128-bit FNV-1a hash of the key; the entry stores the
 * whole key, compared on load (cache_entry.c), so a hash collision or an
 * entry from another machine is a rejected entry, not wrong code.
 *
 * A rejected entry is reported with one warning, compiled again and
 * overwritten. A directory that cannot be written is one warning per
 * directory and process; compiles go on without storing.
 */
#include "cache.h"

#include "cg_target.h"
#include "lower.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------- the directory */

/* The setting cache_dir (ag_set_cache_dir, else AG_CACHE_DIR): the
 * compile reads it from its snapshot (tgt_options.config). */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warned_dir[4096]; /* the last directory warned about */

void ag_set_cache_dir(const char *dir) { rt_config_set(RT_CFG_CACHE_DIR, dir); }

/* c's directory into buf; false when the cache is off. */
static bool dir_of(const rt_config *c, char *buf, size_t n)
{
    const char *dir = rt_config_str(c, RT_CFG_CACHE_DIR);
    snprintf(buf, n, "%s", dir ? dir : "");
    return buf[0] != '\0';
}

const char *ag_cache_dir(void)
{
    static _Thread_local char buf[4096];
    const rt_config *c = rt_config_get();
    bool on = dir_of(c, buf, sizeof buf);
    rt_config_release(c);
    return on ? buf : NULL;
}

/* ---------------------------------------------------------- statistics */

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_cache_stats stats;

cg_cache_stats cg_cache_get_stats(void)
{
    pthread_mutex_lock(&stats_lock);
    cg_cache_stats s = stats;
    pthread_mutex_unlock(&stats_lock);
    s.llvm_compiles = cg_llvm_compiles();
    return s;
}

static void count(long *field)
{
    pthread_mutex_lock(&stats_lock);
    (*field)++;
    pthread_mutex_unlock(&stats_lock);
}

static void count_seconds(double s)
{
    pthread_mutex_lock(&stats_lock);
    stats.compile_seconds += s;
    pthread_mutex_unlock(&stats_lock);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ----------------------------------------------------------------- key */

/* 128-bit FNV-1a: h = (h ^ byte) * (2^88 + 0x13b) mod 2^128, on two
 * 64-bit halves. The product splits as h * 0x13b + (h << 88); h << 88
 * only adds lo << 24 to the high half. */
typedef struct hash128 {
    uint64_t hi, lo;
} hash128;

static hash128 fnv1a_128(const char *p, size_t n)
{
    hash128 h = {0x6c62272e07bb0142u, 0x62b821756295c58du};
    const uint64_t k = 0x13b;
    for (size_t i = 0; i < n; i++) {
        h.lo ^= (unsigned char)p[i];
        uint64_t a = h.lo >> 32, b = h.lo & 0xffffffffu;
        uint64_t carry = (a * k + ((b * k) >> 32)) >> 32; /* high half of lo * k */
        h.hi = h.hi * k + carry + (h.lo << 24);
        h.lo *= k;
    }
    return h;
}

/* The file holding this code, its size and mtime: a new build of agc
 * invalidates what an older one stored. */
static char build_id[4200];
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static void find_build_id(void)
{
    Dl_info info;
    struct stat st;
    if (dladdr((void *)find_build_id, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
        snprintf(build_id, sizeof build_id, "%s %lld %lld.%09ld", info.dli_fname,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    else
        snprintf(build_id, sizeof build_id, "unknown");
}

typedef struct cache_key {
    char *text; /* the full key */
    size_t len;
    char sym[48];   /* the entry's function in the object and the JIT */
    char table[64]; /* its node table */
    char *path;
    bool verbose; /* cache_verbose: say hits, misses and writes */
} cache_key;

static void print_header(FILE *out, LLVMTargetMachineRef tm)
{
    pthread_once(&build_once, find_build_id);
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm),
         *features = LLVMGetTargetMachineFeatureString(tm);
    fprintf(out, "agc compilation cache, format %d\nagc %s\nllvm %u.%u.%u\nbuild %s\n"
                 "target cpu\ntriple %s\ncpu %s\nfeatures %s\ncodegen O2 pic node-table\n"
                 "graph\n",
            CG_CACHE_FORMAT, AG_VERSION, major, minor, patch, build_id, triple, cpu, features);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
}

static void make_key(const ir_function *fn, LLVMTargetMachineRef tm, const char *dir,
                     cache_key *k)
{
    FILE *out = open_memstream(&k->text, &k->len);
    print_header(out, tm);
    ir_print(fn, out);
    fclose(out);
    hash128 h = fnv1a_128(k->text, k->len);
    snprintf(k->sym, sizeof k->sym, "agcache_%016llx%016llx", (unsigned long long)h.hi,
             (unsigned long long)h.lo);
    snprintf(k->table, sizeof k->table, "%s_nodes", k->sym);
    size_t n = strlen(dir) + sizeof k->sym + 16;
    k->path = rt_xmalloc(n);
    snprintf(k->path, n, "%s/%s.agc", dir, k->sym + strlen("agcache_"));
}

static void free_key(cache_key *k)
{
    free(k->text);
    free(k->path);
}

static LLVMTargetMachineRef machine_for(const tgt_options *o, char *err, size_t errlen)
{
    /* as the JIT: the host triple, the settings' CPU and features */
    cg_machine host = cg_machine_jit(o);
    return cg_target_machine(&host, true, err, errlen);
}

bool cg_cache_describe(const ir_function *fn, const tgt_options *o, const char *dir, char **key,
                       char **path)
{
    char err[512];
    LLVMTargetMachineRef tm = machine_for(o, err, sizeof err);
    if (!tm)
        return false;
    cache_key k = {0};
    make_key(fn, tm, dir, &k);
    LLVMDisposeTargetMachine(tm);
    *key = k.text;
    *path = k.path;
    return true;
}

/* ------------------------------------------------ names loaded in the JIT */

/* Symbols of cached code in the JIT now: a second load of one would be a
 * duplicate definition, so such a compile goes the plain JIT's way. */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static char **loaded;
static int n_loaded, cap_loaded;

static bool reserve(const char *sym)
{
    pthread_mutex_lock(&loaded_lock);
    bool taken = false;
    for (int i = 0; i < n_loaded && !taken; i++)
        taken = strcmp(loaded[i], sym) == 0;
    if (!taken) {
        if (n_loaded == cap_loaded) {
            cap_loaded = cap_loaded ? 2 * cap_loaded : 16;
            loaded = rt_xrealloc(loaded, (size_t)cap_loaded * sizeof *loaded);
        }
        loaded[n_loaded++] = rt_xstrdup(sym);
    }
    pthread_mutex_unlock(&loaded_lock);
    return !taken;
}

static void unloaded(const char *sym)
{
    pthread_mutex_lock(&loaded_lock);
    for (int i = 0; i < n_loaded; i++)
        if (strcmp(loaded[i], sym) == 0) {
            free(loaded[i]);
            loaded[i] = loaded[--n_loaded];
            break;
        }
    pthread_mutex_unlock(&loaded_lock);
}

/* ------------------------------------------------------------ compiling */

static bool emit_object(LLVMModuleRef mod, LLVMTargetMachineRef tm, cg_cache_entry *e,
                        char *err, size_t errlen)
{
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
        snprintf(err, errlen, "LLVM cannot write the object file: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return false;
    }
    e->object_len = LLVMGetBufferSize(buf);
    e->object = rt_xmalloc(e->object_len ? e->object_len : 1);
    memcpy(e->object, LLVMGetBufferStart(buf), e->object_len);
    LLVMDisposeMemoryBuffer(buf);
    return true;
}

/* LLVM: fn in its relocatable form (lower.h), for the CPU of o as the
 * JIT's (the host triple), optimized and written as an object into e. The
 * node table is made external so the JIT can find it. */
static bool compile_object(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                           LLVMTargetMachineRef tm, const cache_key *k, cg_cache_entry *e,
                           char *err, size_t errlen)
{
    LLVMContextRef ctx = LLVMContextCreate();
    cg_machine host = cg_machine_jit(o);
    LLVMModuleRef mod =
        cg_lower_function_aot(fn, am, ctx, k->sym, k->table, NULL, &host, err, errlen);
    bool ok = mod != NULL;
    if (ok) {
        LLVMValueRef table = LLVMGetNamedGlobal(mod, k->table);
        LLVMSetLinkage(table, LLVMExternalLinkage);
        e->n_nodes = (uint32_t)LLVMGetArrayLength2(LLVMGlobalGetValueType(table));
        cg_mark_functions(mod, tm);
        cg_count_llvm();
        ok = cg_optimize(mod, tm, err, errlen) && emit_object(mod, tm, e, err, errlen);
        LLVMDisposeModule(mod);
    }
    LLVMContextDispose(ctx);
    return ok;
}

/* table[id] = the node of fn with that id (the ids the code was compiled
 * with: equal keys mean equal ids). False if one is out of range. */
static bool fill_table(const void **table, uint32_t n, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++) {
        if (g->params[i]->id < 0 || (uint32_t)g->params[i]->id >= n)
            return false;
        table[g->params[i]->id] = g->params[i];
    }
    for (const ir_node *node = g->first; node; node = node->next) {
        if (node->id < 0 || (uint32_t)node->id >= n)
            return false;
        table[node->id] = node;
        for (int r = 0; r < 2; r++)
            if (node->region[r] && !fill_table(table, n, node->region[r]))
                return false;
    }
    return true;
}

static cg_code *load(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                     const cache_key *k, const cg_cache_entry *e, char *err, size_t errlen)
{
    const void **table = NULL;
    cg_code *c = cg_jit_add_object(fn, am, o, k->sym, k->table, e->object, e->object_len,
                                   unloaded, &table, err, errlen);
    if (c && !fill_table(table, e->n_nodes, fn->body)) {
        snprintf(err, errlen, "its node table does not fit the graph");
        cg_free(c); /* releases the name: take it again */
        reserve(k->sym);
        return NULL;
    }
    return c;
}

static void warn_unwritable(const char *dir, const char *why)
{
    pthread_mutex_lock(&warn_lock);
    bool again = strcmp(warned_dir, dir) == 0;
    snprintf(warned_dir, sizeof warned_dir, "%s", dir);
    pthread_mutex_unlock(&warn_lock);
    if (!again)
        rt_warn((ag_loc){0}, "the compilation cache directory %s cannot be written (%s); "
                             "compiled code is not cached", dir, why);
}

/* mkdir -p; errors show when the entry is written. */
static void make_dirs(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void store(const char *dir, const cache_key *k, cg_cache_entry *e)
{
    e->key = k->text;
    e->key_len = k->len;
    char err[4400];
    make_dirs(dir);
    if (cg_cache_write(k->path, e, err, sizeof err)) {
        count(&stats.writes);
        if (k->verbose)
            fprintf(stderr, "agc cache: wrote %s\n", k->path);
    } else {
        warn_unwritable(dir, err);
    }
    e->key = NULL; /* k's */
}

/* An entry found at k->path, verified and linked; NULL when there is
 * none or it is rejected (warned). */
static cg_code *try_hit(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                        const cache_key *k)
{
    cg_cache_entry e;
    char why[700], err[512];
    cg_code *c = NULL;
    if (cg_cache_read(k->path, k->text, k->len, &e, why, sizeof why)) {
        c = load(fn, am, o, k, &e, err, sizeof err);
        if (!c)
            snprintf(why, sizeof why, "cannot be loaded: %s", err);
    }
    if (why[0]) {
        count(&stats.rejected);
        rt_warn((ag_loc){0}, "compilation cache entry %s for '%s' %s; ignored, compiling again",
                 k->path, fn->name ? fn->name : "fn", why);
    }
    cg_cache_entry_free(&e);
    if (c) {
        count(&stats.hits);
        if (k->verbose)
            fprintf(stderr, "agc cache: hit %s\n", k->path);
    }
    return c;
}

static cg_code *miss(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                     LLVMTargetMachineRef tm, const char *dir, const cache_key *k, char *err,
                     size_t errlen)
{
    count(&stats.misses);
    if (k->verbose)
        fprintf(stderr, "agc cache: miss %s\n", k->path);
    cg_cache_entry e = {0};
    cg_code *c = NULL;
    if (compile_object(fn, am, o, tm, k, &e, err, errlen)) {
        store(dir, k, &e);
        c = load(fn, am, o, k, &e, err, errlen);
    }
    cg_cache_entry_free(&e);
    return c;
}

cg_code *cg_cache_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                          bool *handled, char *err, size_t errlen)
{
    char dir[4096];
    *handled = false;
    const rt_config *cfg = o ? o->config : NULL;
    if (!dir_of(cfg, dir, sizeof dir))
        return NULL;
    double t0 = now_s();
    LLVMTargetMachineRef tm = machine_for(o, err, errlen);
    if (!tm)
        return NULL; /* the plain JIT reports it */
    cache_key k = {0};
    make_key(fn, tm, dir, &k);
    k.verbose = rt_config_on(cfg, RT_CFG_CACHE_VERBOSE);
    cg_code *c = NULL;
    if (reserve(k.sym)) { /* else this process runs that code already */
        *handled = true;
        c = try_hit(fn, am, o, &k);
        if (!c)
            c = miss(fn, am, o, tm, dir, &k, err, errlen);
        if (!c)
            unloaded(k.sym);
    }
    free_key(&k);
    LLVMDisposeTargetMachine(tm);
    if (*handled)
        count_seconds(now_s() - t0);
    return c;
}
