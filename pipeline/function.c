/*
 * function.c - the function cache: tf.function's concrete functions in C.
 *
 * Each AG_FUNCTION has an entry; each distinct input signature (dtype and
 * shape of every tensor, value of every C scalar, identity of every
 * variable) has a concrete function: what the compile pipeline made of it
 * (pipeline.h: the optimized graph, compiled for the selected target). A
 * call finds or makes its concrete function, then runs it.
 *
 * The cache is bounded: each function keeps its most recently used
 * concrete functions (ag_set_max_concrete_functions, else
 * AG_MAX_CONCRETE_FUNCTIONS, else 64) and evicts the least recently used,
 * so a function retraced forever holds bounded memory. Calls run without
 * the entry's lock, so an evicted concrete function may still be running
 * on another thread: each one is reference counted (the cache holds one
 * reference, every running call one, every ag_get_concrete_function one)
 * and is freed when the last goes. ag_shutdown frees them all.
 */
#include "function.h"
#include "function_internal.h"
#include "optimizer.h"

#include "profile.h"
#include "tiered.h"

#include "trace.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static fn_entry *registry;
/* Concrete functions allocated and not yet freed, every function's, evicted
 * ones included: what ag_function_concrete_count(NULL) reports, so that a
 * test sees whether ag_shutdown freed them all. */
static atomic_int live_concretes;

/* --------------------------------------------------------------- registry */

static void registry_shutdown(void);
static void at_exit(void);

static bool signature_for(const ag_function_desc *d, ir_spec *sig)
{
    char err[256];
    if (!d->signature)
        return false;
    if (!ir_spec_parse(d->signature, sig, err, sizeof err)) {
        rt_report((ag_loc){d->file, d->line}, "AG_SIGNATURE(\"%s\") of '%s': %s",
                  d->signature, d->name, err);
        return false;
    }
    return true;
}

static fn_entry *find_locked(const ag_function_desc *d, const char *name)
{
    for (fn_entry *e = registry; e; e = e->next)
        if (e->desc == d || (name && strcmp(e->desc->name, name) == 0))
            return e;
    return NULL;
}

static fn_entry *entry_for(const ag_function_desc *d)
{
    pthread_mutex_lock(&registry_lock);
    fn_entry *e = find_locked(d, NULL);
    if (!e) {
        e = rt_xcalloc(1, sizeof *e);
        e->desc = d;
        pthread_mutex_init(&e->lock, NULL);
        e->has_signature = signature_for(d, &e->signature);
        e->next = registry;
        registry = e;
        rt_at_shutdown(registry_shutdown);
        static bool exit_hook;
        if (!exit_hook)
            exit_hook = atexit(at_exit) == 0;
    }
    pthread_mutex_unlock(&registry_lock);
    return e;
}

static fn_entry *entry_named(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    fn_entry *e = find_locked(NULL, name);
    pthread_mutex_unlock(&registry_lock);
    return e;
}

void ag_function_register(const ag_function_desc *fn) { entry_for(fn); }

const ag_function_desc *fn_desc_named(const char *name)
{
    const ag_function_desc *d = NULL;
    pthread_mutex_lock(&registry_lock);
    for (fn_entry *e = registry; e && name && !d; e = e->next)
        if (strcmp(e->desc->name, name) == 0 ||
            (e->desc->alias && strcmp(e->desc->alias, name) == 0))
            d = e->desc;
    pthread_mutex_unlock(&registry_lock);
    return d;
}

static void concrete_free(ag_concrete_function *cf)
{
    fn_grad_free(cf->grad);
    pl_result_free(&cf->compiled); /* the target's executable too: the JIT's code */
    free(cf->keys);
    free(cf);
    atomic_fetch_sub(&live_concretes, 1);
}

static void free_list(ag_concrete_function *cf)
{
    for (ag_concrete_function *next; cf; cf = next) {
        next = cf->next;
        concrete_free(cf);
    }
}

/* AG_PROFILE's table, of the functions in the registry (under
 * registry_lock). The background compiles have ended (pl_tier_stop), so
 * that their time counts. */
static void print_profile_locked(void)
{
    int n = 0;
    for (fn_entry *e = registry; e; e = e->next)
        n++;
    if (!n || !fn_profile_enabled())
        return;
    const char **names = rt_xcalloc((size_t)n, sizeof *names);
    const fn_profile **profiles = rt_xcalloc((size_t)n, sizeof *profiles);
    n = 0;
    for (fn_entry *e = registry; e; e = e->next, n++) {
        names[n] = e->desc->name;
        profiles[n] = &e->profile;
    }
    fn_profile_print(stderr, names, profiles, n);
    free(names);
    free(profiles);
}

/* At exit without ag_shutdown: the profile, nothing freed (another thread
 * may still be calling). Takes no entry's lock, and registry_lock only if
 * it is free: exit may come from an error reported while a trace holds
 * an entry's, or while entry_for (a bad AG_SIGNATURE) holds
 * registry_lock on this very thread. Entries are only ever added at the
 * head, so the walk is safe without it. */
static void at_exit(void)
{
    pl_tier_stop();
    bool locked = pthread_mutex_trylock(&registry_lock) == 0;
    print_profile_locked();
    if (locked)
        pthread_mutex_unlock(&registry_lock);
}

/* Frees every concrete function, cached or not, whatever its references:
 * after ag_shutdown no call may run and no user pointer may be used.
 * Compiles in the background end first: they read the graphs. */
static void registry_shutdown(void)
{
    pl_tier_stop();
    pthread_mutex_lock(&registry_lock);
    print_profile_locked();
    for (fn_entry *e = registry, *next; e; e = next) {
        next = e->next;
        free_list(e->concretes);
        free_list(e->retired);
        pthread_mutex_destroy(&e->lock);
        free(e);
    }
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
}

/* ------------------------------------------------------------------ keys */

static const char *param_name(const fn_entry *e, int i)
{
    return e->desc->param_names ? e->desc->param_names[i] : "?";
}

static int count_tensor_params(const ag_function_desc *d)
{
    int n = 0;
    for (int i = 0; i < d->n_params; i++)
        n += d->param_kinds[i] == AG_ARG_TENSOR;
    return n;
}

static int count_tensor_entries(const ir_spec *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += !s->entries[i].is_scalar_value;
    return n;
}

/* Checks a tensor argument against the signature's spec for it. */
static bool match_signature(const fn_entry *e, ag_loc loc, int param, const ir_spec_entry *spec,
                            arg_key *k)
{
    char want[200], got[200];
    if (spec->dtype == k->type.dtype && ir_spec_shape_matches(&spec->shape, &k->type.shape)) {
        k->type.shape = spec->shape; /* one concrete function for the whole spec */
        return true;
    }
    rt_report(loc, "'%s' parameter '%s' expects %s (from its AG_SIGNATURE), got %s",
              e->desc->name, param_name(e, param),
              ir_spec_type_str(spec->dtype, &spec->shape, want, sizeof want),
              ir_spec_type_str(k->type.dtype, &k->type.shape, got, sizeof got));
    return false;
}

static bool tensor_key(const fn_entry *e, ag_loc loc, int i, ag_tensor h, bool is_array,
                       arg_key *k)
{
    rt_value *v = rt_handle_get(loc, h);
    if (!v)
        return false;
    if ((v->dtype == RT_LIST) != is_array) {
        rt_report(loc, "'%s' parameter '%s' expects a %s", e->desc->name, param_name(e, i),
                  is_array ? "tensor array" : "tensor, got a tensor array");
        return false;
    }
    if (v->kind == RT_SYMBOLIC) {
        rt_report(loc, "'%s' was given a symbolic tensor outside a trace", e->desc->name);
        return false;
    }
    k->type = (ir_type){.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
    return true;
}

/* The C scalar parameters of d, "k, n", for messages. */
static void scalar_param_names(const fn_entry *e, char *buf, size_t n)
{
    const ag_function_desc *d = e->desc;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n_params; i++) {
        if (d->param_kinds[i] != AG_ARG_INT && d->param_kinds[i] != AG_ARG_FLOAT)
            continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", param_name(e, i));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
}

/* Every entry of a signature must describe a parameter: an extra tensor, a
 * value for a name that is no C scalar parameter (or given twice), and a
 * non-integer for an integer parameter are errors, not silently ignored. */
static bool spec_entries_used(const fn_entry *e, ag_loc loc, const ir_spec *spec,
                              const char *spec_text)
{
    const ag_function_desc *d = e->desc;
    if (count_tensor_entries(spec) > count_tensor_params(d)) {
        int np = count_tensor_params(d);
        rt_report(loc, "the signature \"%s\" describes %d tensors, but '%s' has %d tensor "
                       "parameter%s", spec_text, count_tensor_entries(spec), d->name, np,
                  np == 1 ? "" : "s");
        return false;
    }
    for (int j = 0; j < spec->n; j++) {
        const ir_spec_entry *s = &spec->entries[j];
        if (!s->is_scalar_value)
            continue;
        int param = -1;
        for (int i = 0; i < d->n_params && param < 0; i++)
            if (strcmp(param_name(e, i), s->name) == 0)
                param = i;
        for (int k = 0; k < j; k++) {
            if (spec->entries[k].is_scalar_value && strcmp(spec->entries[k].name, s->name) == 0) {
                rt_report(loc, "the signature \"%s\" gives '%s' twice", spec_text, s->name);
                return false;
            }
        }
        ag_arg_kind kind = param < 0 ? AG_ARG_TENSOR : d->param_kinds[param];
        if (param < 0 || (kind != AG_ARG_INT && kind != AG_ARG_FLOAT)) {
            char names[256];
            scalar_param_names(e, names, sizeof names);
            rt_report(loc, "the signature \"%s\" gives a value for '%s', which is not a C "
                           "scalar parameter of '%s' (%s%s%s)", spec_text, s->name, d->name,
                      *names ? "its C scalar parameters: " : "it has none", names,
                      param >= 0 ? "; give a tensor parameter's type as dtype[dims], in order"
                                 : "");
            return false;
        }
        if (kind == AG_ARG_INT && !s->is_integer) {
            rt_report(loc, "the signature \"%s\" gives '%s' a value that is not an integer, "
                           "but '%s' is an integer parameter of '%s'", spec_text, s->name,
                      s->name, d->name);
            return false;
        }
    }
    return true;
}

static bool make_keys(const fn_entry *e, ag_loc loc, const ag_arg *args, arg_key *keys)
{
    const ag_function_desc *d = e->desc;
    if (e->has_signature && count_tensor_entries(&e->signature) != count_tensor_params(d)) {
        rt_report(loc, "the AG_SIGNATURE of '%s' describes %d tensors but the function has "
                       "%d tensor parameters", d->name, count_tensor_entries(&e->signature),
                  count_tensor_params(d));
        return false;
    }
    if (e->has_signature && !spec_entries_used(e, loc, &e->signature, d->signature))
        return false;
    int t = 0;
    for (int i = 0; i < d->n_params; i++) {
        arg_key *k = &keys[i];
        memset(k, 0, sizeof *k);
        k->kind = d->param_kinds[i];
        switch (k->kind) {
        case AG_ARG_TENSOR:
            if (!tensor_key(e, loc, i, args[i].tensor, false, k))
                return false;
            while (e->has_signature && e->signature.entries[t].is_scalar_value)
                t++;
            if (e->has_signature && !match_signature(e, loc, i, &e->signature.entries[t++], k))
                return false;
            break;
        case AG_ARG_TENSOR_ARRAY:
            if (!tensor_key(e, loc, i, args[i].tensor, true, k))
                return false;
            break;
        case AG_ARG_VARIABLE: k->var = args[i].variable; break;
        case AG_ARG_OPTIMIZER:
            if (!(k->i = (int64_t)rt_optimizer_serial(loc, args[i].optimizer)))
                return false;
            k->opt = args[i].optimizer;
            break;
        case AG_ARG_INT: k->i = args[i].i; break;
        case AG_ARG_FLOAT: k->f = args[i].f; break;
        }
    }
    return true;
}

static bool key_equal(const arg_key *a, const arg_key *b)
{
    switch (a->kind) {
    case AG_ARG_TENSOR:
    case AG_ARG_TENSOR_ARRAY: return ir_type_equal(&a->type, &b->type);
    case AG_ARG_VARIABLE: return a->var == b->var;
    case AG_ARG_OPTIMIZER: return a->opt == b->opt && a->i == b->i;
    case AG_ARG_INT: return a->i == b->i;
    case AG_ARG_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    }
    return false;
}

/* Finds the cached concrete function for keys and makes it the most
 * recently used (under e->lock). */
static ag_concrete_function *find_concrete(fn_entry *e, const arg_key *keys)
{
    for (ag_concrete_function **link = &e->concretes; *link; link = &(*link)->next) {
        ag_concrete_function *cf = *link;
        bool same = true;
        for (int i = 0; i < e->desc->n_params && same; i++)
            same = key_equal(&cf->keys[i], &keys[i]);
        if (!same)
            continue;
        *link = cf->next;
        cf->next = e->concretes;
        e->concretes = cf;
        return cf;
    }
    return NULL;
}

/* ------------------------------------------------------------- the bound */

#define DEFAULT_MAX_CONCRETES 64

static atomic_bool env_warned;

/* The setting max_concrete_functions of c (ag_set_max_concrete_functions,
 * else AG_MAX_CONCRETE_FUNCTIONS), read at every call from the call's
 * snapshot. A value that is not a count is said once, and the default
 * used. */
static int max_concretes(const rt_config *c)
{
    const char *env = rt_config_str(c, RT_CFG_MAX_CONCRETE_FUNCTIONS);
    if (!env || !*env)
        return DEFAULT_MAX_CONCRETES;
    char *end;
    long n = strtol(env, &end, 10);
    if (*end == '\0' && n >= 0 && n <= INT_MAX)
        return (int)n;
    if (!atomic_exchange(&env_warned, true))
        rt_warn((ag_loc){0}, "AG_MAX_CONCRETE_FUNCTIONS='%s' is not a count (0 for no bound); "
                             "keeping at most %d concrete functions per function", env,
                DEFAULT_MAX_CONCRETES);
    return DEFAULT_MAX_CONCRETES;
}

int ag_max_concrete_functions(void)
{
    const rt_config *c = rt_config_get();
    int n = max_concretes(c);
    rt_config_release(c);
    return n;
}

/* Drops one reference (under e->lock); the last one frees an evicted
 * concrete function. A cached one always keeps the cache's. */
static void unref_locked(fn_entry *e, ag_concrete_function *cf)
{
    if (--cf->refs > 0 || cf->cached)
        return;
    for (ag_concrete_function **link = &e->retired; *link; link = &(*link)->next)
        if (*link == cf) {
            *link = cf->next;
            break;
        }
    concrete_free(cf);
}

/* Evicts the least recently used concrete functions beyond the bound
 * (under e->lock). One still running on another thread, or held by an
 * ag_get_concrete_function caller, moves to the retired list and lives
 * until its last reference goes. */
static void evict_over_bound(fn_entry *e, int max)
{
    while (max > 0 && e->n_cached > max) {
        ag_concrete_function **link = &e->concretes;
        while ((*link)->next)
            link = &(*link)->next;
        ag_concrete_function *lru = *link;
        *link = NULL;
        e->n_cached--;
        lru->cached = false;
        lru->next = e->retired;
        e->retired = lru;
        unref_locked(e, lru); /* the cache's reference */
    }
}

void ag_set_max_concrete_functions(int n)
{
    char text[16];
    snprintf(text, sizeof text, "%d", n);
    rt_config_set(RT_CFG_MAX_CONCRETE_FUNCTIONS, n < 0 ? NULL : text);
    int max = ag_max_concrete_functions();
    /* Entries are only ever added at the head and freed at shutdown, so
     * the list from this head is walked without registry_lock: a trace
     * holding e->lock may take registry_lock (ag_function_trace_count in
     * traced code), and the two must not be taken in the other order. */
    pthread_mutex_lock(&registry_lock);
    fn_entry *head = registry;
    pthread_mutex_unlock(&registry_lock);
    for (fn_entry *e = head; e; e = e->next) {
        pthread_mutex_lock(&e->lock);
        evict_over_bound(e, max);
        pthread_mutex_unlock(&e->lock);
    }
}

/* A reference for a call or a user, under e->lock. */
static ag_concrete_function *ref_locked(ag_concrete_function *cf)
{
    if (cf)
        cf->refs++;
    return cf;
}

static void concrete_release(ag_concrete_function *cf)
{
    fn_entry *e = cf->entry;
    pthread_mutex_lock(&e->lock);
    unref_locked(e, cf);
    pthread_mutex_unlock(&e->lock);
}

void fn_concrete_ref(ag_concrete_function *cf)
{
    pthread_mutex_lock(&cf->entry->lock);
    ref_locked(cf);
    pthread_mutex_unlock(&cf->entry->lock);
}

void fn_concrete_unref(ag_concrete_function *cf) { concrete_release(cf); }

/* --------------------------------------------------------------- tracing */

/* A pipeline request for e's function with these keys. */
static pl_request request_for(const fn_entry *e, const arg_key *keys, pl_stage stop)
{
    return (pl_request){.desc = e->desc, .args = keys, .first_trace = e->trace_count == 0,
                        .stop = stop};
}

static ag_concrete_function *trace_concrete(fn_entry *e, const arg_key *keys,
                                            const rt_config *c)
{
    const ag_function_desc *d = e->desc;
    pl_request r = request_for(e, keys, PL_COMPILED);
    r.config = c;
    r.may_tier = true; /* calls run whichever code is ready */
    r.timing = &e->profile.timing;
    atomic_fetch_add(&e->profile.traces, 1);
    pl_result compiled;
    if (!pl_run(&r, &compiled))
        return NULL;
    size_t np = (size_t)(d->n_params ? d->n_params : 1);
    ag_concrete_function *cf = rt_xcalloc(1, sizeof *cf);
    cf->entry = e;
    cf->keys = rt_xmalloc(np * sizeof *cf->keys);
    memcpy(cf->keys, keys, (size_t)d->n_params * sizeof *keys);
    cf->compiled = compiled;
    cf->serial = e->serial++;
    cf->refs = 1; /* the cache's */
    cf->cached = true;
    cf->next = e->concretes;
    e->concretes = cf;
    e->n_cached++;
    e->trace_count++;
    atomic_fetch_add(&live_concretes, 1);
    return cf;
}

/* ----------------------------------------------------- retrace warning */

static void describe_key(const arg_key *k, char *buf, size_t n)
{
    switch (k->kind) {
    case AG_ARG_TENSOR:
    case AG_ARG_TENSOR_ARRAY: ir_type_str(&k->type, buf, n); break;
    case AG_ARG_VARIABLE: snprintf(buf, n, "variable %p", (void *)k->var); break;
    case AG_ARG_OPTIMIZER: snprintf(buf, n, "optimizer %p", (void *)k->opt); break;
    case AG_ARG_INT: snprintf(buf, n, "%lld", (long long)k->i); break;
    case AG_ARG_FLOAT: snprintf(buf, n, "%g", k->f); break;
    }
}

/* Names the first parameter whose key differs between two traces. */
static void retrace_cause(const fn_entry *e, const arg_key *old, const arg_key *now, char *buf,
                          size_t n)
{
    for (int i = 0; i < e->desc->n_params; i++) {
        if (key_equal(&old[i], &now[i]))
            continue;
        char a[160], b[160];
        describe_key(&old[i], a, sizeof a);
        describe_key(&now[i], b, sizeof b);
        snprintf(buf, n, "parameter '%s' changed from %s to %s%s", param_name(e, i), a, b,
                 now[i].kind == AG_ARG_INT || now[i].kind == AG_ARG_FLOAT
                     ? " (every new value of a C scalar parameter is a new trace; pass a "
                       "tensor instead)"
                 : now[i].kind == AG_ARG_OPTIMIZER
                     ? " (every new optimizer is a new trace, as a new Python object is "
                       "for tf.function)"
                     : " (give the function an AG_SIGNATURE with '?' dims to trace once)");
        return;
    }
    snprintf(buf, n, "its arguments changed");
}

static void note_call(fn_entry *e, ag_loc loc, bool traced, const arg_key *previous,
                      const arg_key *keys)
{
    e->history = ((e->history << 1) | traced) & 0x3FFu;
    e->calls++;
    if (!traced || e->warned || __builtin_popcount(e->history) < 5 || !previous)
        return;
    char cause[512];
    retrace_cause(e, previous, keys, cause, sizeof cause);
    rt_warn(loc, "%d of the last %d calls to '%s' traced a new graph: %s",
            __builtin_popcount(e->history), e->calls < 10 ? e->calls : 10, e->desc->name,
            cause);
    e->warned = true;
}

/* ------------------------------------------------------------------ calls */

void ag_run_functions_eagerly(bool on)
{
    rt_config_set(RT_CFG_RUN_FUNCTIONS_EAGERLY, on ? "1" : "0");
}

static void fail_outputs(const ag_function_desc *d, ag_tensor *outputs)
{
    for (int i = 0; i < d->n_outputs; i++)
        outputs[i] = rt_error_tensor();
}

/* Finds or traces the concrete function for keys (under the entry's lock,
 * so concurrent first calls with one signature trace once) and returns it
 * with a reference for the call: eviction by another thread's trace
 * cannot free it while it runs. */
static ag_concrete_function *lookup_or_trace(fn_entry *e, ag_loc loc, const arg_key *keys,
                                             const rt_config *c)
{
    pthread_mutex_lock(&e->lock);
    /* the previous call's keys, read before find_concrete reorders */
    const arg_key *previous = e->concretes ? e->concretes->keys : NULL;
    ag_concrete_function *cf = find_concrete(e, keys);
    bool traced = false;
    if (!cf) {
        cf = trace_concrete(e, keys, c);
        traced = cf != NULL;
    }
    note_call(e, loc, traced, previous, keys);
    ref_locked(cf);
    /* after note_call, which reads `previous`, which this may free */
    evict_over_bound(e, max_concretes(c));
    pthread_mutex_unlock(&e->lock);
    return cf;
}

static bool run_concrete(ag_concrete_function *cf, ag_loc loc, const ag_arg *args,
                         ag_tensor *outputs)
{
    const ag_function_desc *d = cf->entry->desc;
    size_t np = (size_t)(d->n_params ? d->n_params : 1);
    rt_value **in = rt_xcalloc(np, sizeof *in);
    rt_value **out = rt_xcalloc((size_t)d->n_outputs + 1, sizeof *out);
    int n_in = 0;
    for (int i = 0; i < d->n_params; i++)
        if (d->param_kinds[i] == AG_ARG_TENSOR || d->param_kinds[i] == AG_ARG_TENSOR_ARRAY)
            in[n_in++] = rt_handle_get(loc, args[i].tensor);
    bool interim = pl_compiling(&cf->compiled);
    int64_t t0 = fn_profile_now();
    bool ok = pl_execute(&cf->compiled, in, n_in, out);
    fn_profile_call(&cf->entry->profile, fn_profile_now() - t0, interim);
    for (int i = 0; i < d->n_outputs; i++)
        outputs[i] = ok ? rt_handle_new(out[i]) : rt_error_tensor();
    if (!ok)
        for (int i = 0; i < d->n_outputs; i++)
            rt_value_free(out[i]);
    free(in);
    free(out);
    return ok;
}

/* Whether args fit the types cf was traced for (its `?` dims match any
 * size), reporting the first that does not. */
static bool args_match_concrete(const ag_concrete_function *cf, ag_loc loc, const ag_arg *args)
{
    const fn_entry *e = cf->entry;
    for (int i = 0; i < e->desc->n_params; i++) {
        const arg_key *k = &cf->keys[i];
        if (k->kind != AG_ARG_TENSOR)
            continue;
        rt_value *v = rt_handle_get(loc, args[i].tensor);
        if (!v)
            return false;
        if (v->dtype == k->type.dtype && ir_spec_shape_matches(&k->type.shape, &v->shape))
            continue;
        char want[200], got[200];
        rt_report(loc, "'%s' parameter '%s' expects %s (its concrete function's), got %s",
                  e->desc->name, param_name(e, i),
                  ir_spec_type_str(k->type.dtype, &k->type.shape, want, sizeof want),
                  ir_spec_type_str(v->dtype, &v->shape, got, sizeof got));
        return false;
    }
    return true;
}

bool fn_concrete_call(ag_loc loc, ag_concrete_function *cf, const ag_arg *args,
                      ag_tensor *outputs)
{
    if (!args_match_concrete(cf, loc, args)) {
        fail_outputs(cf->entry->desc, outputs);
        return false;
    }
    return run_concrete(cf, loc, args, outputs);
}

/* ------------------------------------------------------- inlined calls */

/*
 * Inside a trace, a call to an AG_FUNCTION is traced into the caller's
 * graph (inlined). A function that calls itself is inlined again, and a
 * staged condition cannot end that: the tracer runs both branches. Only a
 * C condition can (on a C scalar parameter that changes, or on shapes
 * that shrink); a call with the same argument types and C values as a
 * call being inlined would recur forever, and is reported, as is nesting
 * deeper than MAX_INLINED, instead of overflowing the stack.
 */
#define MAX_INLINED 1000

typedef struct inlined_call {
    const ag_function_desc *d;
    const ag_arg *args;
} inlined_call;

static _Thread_local inlined_call inlined[MAX_INLINED];
static _Thread_local int n_inlined;

static bool same_tensor_type(ag_tensor a, ag_tensor b)
{
    if (a.id == b.id && a.gen == b.gen)
        return true;
    const rt_value *x = rt_handle_peek(a), *y = rt_handle_peek(b);
    return x && y && x->dtype == y->dtype && x->elem_dtype == y->elem_dtype &&
           ag_shape_equal(x->shape, y->shape);
}

static bool same_call(const ag_function_desc *d, const ag_arg *a, const ag_arg *b)
{
    for (int i = 0; i < d->n_params; i++) {
        bool same = false;
        switch (d->param_kinds[i]) {
        case AG_ARG_TENSOR:
        case AG_ARG_TENSOR_ARRAY: same = same_tensor_type(a[i].tensor, b[i].tensor); break;
        case AG_ARG_VARIABLE: same = a[i].variable == b[i].variable; break;
        case AG_ARG_OPTIMIZER: same = a[i].optimizer == b[i].optimizer; break;
        case AG_ARG_INT: same = a[i].i == b[i].i; break;
        case AG_ARG_FLOAT: same = memcmp(&a[i].f, &b[i].f, sizeof a[i].f) == 0; break;
        }
        if (!same)
            return false;
    }
    return true;
}

/* Whether inlining d(args) may go on; reports why not. */
static bool may_inline(ag_loc loc, const ag_function_desc *d, const ag_arg *args)
{
    if (n_inlined == MAX_INLINED) {
        rt_report(loc, "calls to '%s' are nested more than %d deep while it is traced: a "
                       "recursion that only a staged condition ends never ends (both "
                       "branches are traced); end it on a C condition, or write a loop",
                  d->name, MAX_INLINED);
        return false;
    }
    for (int k = 0; k < n_inlined; k++) {
        if (inlined[k].d != d || !same_call(d, inlined[k].args, args))
            continue;
        char via[256] = "";
        size_t len = 0;
        for (int j = k + 1; j < n_inlined && len < sizeof via; j++) {
            int w = snprintf(via + len, sizeof via - len, "%s'%s'", j > k + 1 ? ", " : " (through ",
                             inlined[j].d->name);
            len += w > 0 ? (size_t)w : 0;
        }
        if (len && len < sizeof via - 1)
            strcat(via, ")");
        rt_report(loc, "'%s' calls itself%s with the same argument types and C values while "
                       "it is traced, so the recursion never ends (both branches of a staged "
                       "condition are traced); end it on a C condition, or write a loop",
                  d->name, via);
        return false;
    }
    return true;
}

static bool trace_inline(ag_loc loc, const ag_function_desc *d, const ag_arg *args,
                         ag_tensor *outputs)
{
    if (!may_inline(loc, d, args)) {
        ir_trace_fail();
        fail_outputs(d, outputs);
        return false;
    }
    inlined[n_inlined++] = (inlined_call){d, args};
    const char *outer = ir_trace_enter_scope(d->name);
    d->trace(args, outputs);
    ir_trace_leave_scope(outer);
    n_inlined--;
    return true;
}

bool ag_function_call_at(ag_loc loc, const ag_function_desc *d, const ag_arg *args,
                         ag_tensor *outputs)
{
    /* Inside a trace, a call to another AG_FUNCTION traces into the
     * caller's graph, as nested tf.functions do. */
    if (ir_trace_active())
        return trace_inline(loc, d, args, outputs);
    const rt_config *c = rt_config_get(); /* the call's settings, and its trace's */
    if (rt_config_on(c, RT_CFG_RUN_FUNCTIONS_EAGERLY)) {
        rt_config_release(c);
        d->trace(args, outputs);
        return true;
    }
    fn_entry *e = entry_for(d);
    arg_key *keys = rt_xcalloc((size_t)(d->n_params ? d->n_params : 1), sizeof *keys);
    ag_concrete_function *cf = make_keys(e, loc, args, keys) ? lookup_or_trace(e, loc, keys, c)
                                                             : NULL;
    free(keys);
    rt_config_release(c);
    if (!cf) {
        fail_outputs(d, outputs);
        return false;
    }
    /* On a gradient tape the call is one op whose gradient is its
     * concrete function's gradient graph; a call that cannot be one runs
     * its body eagerly, for the tape to see every op of it. */
    bool handled = false, ok = true;
    if (rt_tape_recording_here())
        ok = fn_grad_call(cf, loc, args, outputs, &handled);
    if (!handled && rt_tape_recording_here())
        d->trace(args, outputs);
    else if (!handled)
        ok = run_concrete(cf, loc, args, outputs);
    concrete_release(cf);
    return ok;
}

/* ------------------------------------------------------------- inspection */

int ag_function_trace_count(const char *name)
{
    fn_entry *e = name ? entry_named(name) : NULL;
    return e ? e->trace_count : 0;
}

static int list_length(const ag_concrete_function *cf)
{
    int n = 0;
    for (; cf; cf = cf->next)
        n++;
    return n;
}

int ag_function_concrete_count(const char *name)
{
    if (!name)
        return atomic_load(&live_concretes);
    fn_entry *e = entry_named(name);
    if (!e)
        return 0;
    pthread_mutex_lock(&e->lock);
    int n = e->n_cached + list_length(e->retired);
    pthread_mutex_unlock(&e->lock);
    return n;
}

static void print_concrete(const ag_concrete_function *cf, FILE *out)
{
    const ag_function_desc *d = cf->entry->desc;
    char buf[200];
    fprintf(out, "%s(", d->name);
    for (int i = 0; i < d->n_params; i++)
        fprintf(out, "%s%s", i ? ", " : "", param_name(cf->entry, i));
    fprintf(out, ")\n  Args:\n");
    for (int i = 0; i < d->n_params; i++) {
        describe_key(&cf->keys[i], buf, sizeof buf);
        fprintf(out, "    %s: %s\n", param_name(cf->entry, i), buf);
    }
    fprintf(out, "  Returns:\n");
    const ir_graph *body = cf->compiled.graph->body;
    if (body->n_results == 0)
        fprintf(out, "    (nothing)\n");
    for (int i = 0; i < body->n_results; i++)
        fprintf(out, "    %s\n", ir_type_str(&body->results[i]->type, buf, sizeof buf));
}

static int by_serial(const void *a, const void *b)
{
    unsigned long x = (*(ag_concrete_function *const *)a)->serial;
    unsigned long y = (*(ag_concrete_function *const *)b)->serial;
    return (x > y) - (x < y);
}

void ag_function_print_signatures(const char *name, FILE *out)
{
    fn_entry *e = name ? entry_named(name) : NULL;
    if (!out)
        out = stdout;
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    /* Oldest first: the order the signatures were traced in, which the
     * cache's most-recently-used order no longer is. */
    int n = e->n_cached;
    ag_concrete_function **all = rt_xcalloc((size_t)n + 1, sizeof *all);
    int k = 0;
    for (ag_concrete_function *cf = e->concretes; cf; cf = cf->next)
        all[k++] = cf;
    qsort(all, (size_t)n, sizeof *all, by_serial);
    for (k = 0; k < n; k++)
        print_concrete(all[k], out);
    free(all);
    pthread_mutex_unlock(&e->lock);
}

static bool keys_from_spec(const fn_entry *e, ag_loc loc, const ir_spec *spec,
                           const char *spec_text, arg_key *keys)
{
    if (!spec_entries_used(e, loc, spec, spec_text))
        return false;
    const ag_function_desc *d = e->desc;
    int t = 0;
    for (int i = 0; i < d->n_params; i++) {
        arg_key *k = &keys[i];
        memset(k, 0, sizeof *k);
        k->kind = d->param_kinds[i];
        const ir_spec_entry *s = NULL;
        if (k->kind == AG_ARG_TENSOR) {
            while (t < spec->n && spec->entries[t].is_scalar_value)
                t++;
            s = t < spec->n ? &spec->entries[t++] : NULL;
            if (s)
                k->type = (ir_type){.dtype = s->dtype, .shape = s->shape};
        } else if (k->kind == AG_ARG_INT || k->kind == AG_ARG_FLOAT) {
            for (int j = 0; j < spec->n && !s; j++)
                if (spec->entries[j].is_scalar_value &&
                    strcmp(spec->entries[j].name, param_name(e, i)) == 0)
                    s = &spec->entries[j];
            if (s) {
                k->i = s->i;
                k->f = s->f;
            }
        }
        if (!s) {
            rt_report(loc, "the signature \"%s\" gives no %s for parameter '%s' of '%s'%s",
                      spec_text, k->kind == AG_ARG_TENSOR ? "tensor type" : "value",
                      param_name(e, i), d->name,
                      k->kind == AG_ARG_INT || k->kind == AG_ARG_FLOAT
                          ? ": add name=VALUE for each C scalar"
                      : k->kind == AG_ARG_TENSOR ? ": add a dtype[dims] for each tensor"
                      : k->kind == AG_ARG_TENSOR_ARRAY
                          ? ": a signature cannot describe an ag_tensor_array yet"
                      : k->kind == AG_ARG_OPTIMIZER
                          ? ": ag_optimizer parameters cannot be given in a signature"
                          : ": ag_variable parameters cannot be given in a signature");
            return false;
        }
    }
    return true;
}

ag_concrete_function *ag_get_concrete_function_at(ag_loc loc, const char *name,
                                                  const char *spec_text)
{
    fn_entry *e = name ? entry_named(name) : NULL;
    char err[256];
    ir_spec spec;
    if (!e) {
        rt_report(loc, "ag_get_concrete_function: no AG_FUNCTION named '%s' is known",
                  name ? name : "(null)");
        return NULL;
    }
    if (!ir_spec_parse(spec_text, &spec, err, sizeof err)) {
        rt_report(loc, "ag_get_concrete_function: bad spec \"%s\": %s", spec_text, err);
        return NULL;
    }
    arg_key *keys = rt_xcalloc((size_t)(e->desc->n_params + 1), sizeof *keys);
    ag_concrete_function *cf = NULL;
    if (keys_from_spec(e, loc, &spec, spec_text, keys)) {
        const rt_config *c = rt_config_get();
        pthread_mutex_lock(&e->lock);
        cf = find_concrete(e, keys);
        if (!cf)
            cf = trace_concrete(e, keys, c);
        if (ref_locked(cf))
            cf->user_refs++; /* the caller's, until ag_concrete_release */
        evict_over_bound(e, max_concretes(c));
        pthread_mutex_unlock(&e->lock);
        rt_config_release(c);
    }
    free(keys);
    return cf;
}

/* A release without a matching ag_get_concrete_function is refused: it
 * would drop a running call's or the cache's reference, and free the
 * function under them. */
void ag_concrete_release_at(ag_loc loc, ag_concrete_function *cf)
{
    if (!cf)
        return;
    fn_entry *e = cf->entry;
    pthread_mutex_lock(&e->lock);
    bool held = cf->user_refs > 0;
    if (held) {
        cf->user_refs--;
        unref_locked(e, cf);
    }
    pthread_mutex_unlock(&e->lock);
    if (!held)
        rt_report(loc, "ag_concrete_release: this concrete function of '%s' was released "
                       "more often than ag_get_concrete_function returned it",
                  e->desc->name);
}

/* The function named `name` (or its AG_ALIAS); NULL after reporting,
 * with `hint` after the message. */
static fn_entry *entry_or_report(ag_loc loc, const char *name, const char *hint)
{
    const ag_function_desc *d = fn_desc_named(name);
    if (!d) {
        rt_report(loc, "no AG_FUNCTION named '%s' is known%s", name ? name : "(null)", hint);
        return NULL;
    }
    return entry_for(d);
}

/* The cache keys of e's function for the signature spec_text; NULL after
 * reporting. */
static arg_key *spec_keys(fn_entry *e, ag_loc loc, const char *spec_text)
{
    char err[256];
    ir_spec spec;
    if (!ir_spec_parse(spec_text, &spec, err, sizeof err)) {
        rt_report(loc, "bad signature \"%s\" for '%s': %s", spec_text, e->desc->name, err);
        return NULL;
    }
    arg_key *keys = rt_xcalloc((size_t)(e->desc->n_params + 1), sizeof *keys);
    if (!keys_from_spec(e, loc, &spec, spec_text, keys)) {
        free(keys);
        return NULL;
    }
    return keys;
}

bool fn_compile_spec(ag_loc loc, const char *name, const char *spec_text, pl_stage stop,
                     const tgt_target *target, const tgt_options *options,
                     const pl_request *flags, pl_result *out)
{
    memset(out, 0, sizeof *out);
    fn_entry *e = entry_or_report(loc, name, "");
    arg_key *keys = e ? spec_keys(e, loc, spec_text) : NULL;
    if (!keys)
        return false;
    pl_request r = request_for(e, keys, stop);
    r.first_trace = true;
    r.target = target;
    r.strict = true;
    r.progress = flags ? flags->progress : NULL;
    r.progress_ctx = flags ? flags->progress_ctx : NULL;
    if (options)
        r.options = *options;
    pthread_mutex_lock(&e->lock);
    bool ok = pl_run(&r, out);
    pthread_mutex_unlock(&e->lock);
    free(keys);
    return ok;
}

bool fn_trace_export(ag_loc loc, const char *name, const char *spec_text, pl_result *out,
                     const ag_function_desc **desc)
{
    memset(out, 0, sizeof *out);
    fn_entry *e = entry_or_report(loc, name, " (call it, or register it with "
                                             "ag_function_register, before saving)");
    if (!e)
        return false;
    *desc = e->desc;
    if (!spec_text && !(spec_text = e->desc->signature)) {
        rt_report(loc, "'%s' has no AG_SIGNATURE: give the signature to export", name);
        return false;
    }
    arg_key *keys = spec_keys(e, loc, spec_text);
    if (!keys)
        return false;
    pthread_mutex_lock(&e->lock);
    pl_request r = request_for(e, keys, PL_TRACED);
    bool ok = pl_run(&r, out);
    /* a first trace made the function's variables: later ones must not */
    e->trace_count += ok && r.first_trace;
    pthread_mutex_unlock(&e->lock);
    free(keys);
    return ok;
}

void ag_concrete_print_graph(const ag_concrete_function *cf, FILE *out)
{
    if (cf)
        ir_print(cf->compiled.graph, out ? out : stdout);
}

int ag_concrete_num_nodes(const ag_concrete_function *cf)
{
    return cf ? ir_function_num_nodes(cf->compiled.graph) : 0;
}
