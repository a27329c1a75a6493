/*
 * manager.c - the pass manager: the registration table, the default
 * pipeline, pipelines written as text, and the debugging aids (verify
 * after each pass, print after passes, AG_DUMP_IR).
 *
 * A run is a session: it reads the options, runs passes one `step` at a
 * time - each step runs a pass, then the verifier and printing the options
 * ask for - and ends by reporting what failed. Sessions nest: "default"
 * inside a textual pipeline runs pass_run_default within the outer run;
 * only the outermost session dumps (AG_DUMP_IR) and honors the override.
 */
#include "pass.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ================================================== the registration table */

static const pass_info passes[] = {
    {"infer", pass_infer,
     "refine dtypes and shapes with the ops' own rules, through cond and while"},
    {"bf16", pass_bf16,
     "f32 values and ops become bf16 (filterlist and scope options); casts at the boundaries"},
    {"fold", pass_fold,
     "evaluate pure ops on constants; inline conds with a constant predicate; "
     "drop loops that never run"},
    {"simplify", pass_simplify,
     "algebraic identities that keep every bit: x+(-0.0), x*1, neg(neg(x)), "
     "transpose/reshape chains, ..."},
    {"matpow", pass_matpow,
     "integer matmul chains x*(x*(...*r)) as x^k*r by repeated squaring (exact: wrapping)"},
    {"cse", pass_cse, "merge equal pure nodes (commutative operands in either order)"},
    {"licm", pass_licm, "hoist loop-invariant pure nodes out of while loops"},
    {"dce", pass_dce,
     "remove what no result or effect needs, and unused cond/while results, "
     "loop variables and operands"},
    {"place", pass_place,
     "device targets: ops on the device, the rest on the host (soft placement), "
     "to_device/to_host between"},
    {"fusion", pass_fusion,
     "analysis: the loops the backend emits: elementwise ops fused by shape"},
    {"memplan", pass_memplan,
     "analysis: buffers by liveness, reuse of dead buffers, in-place elementwise ops"},
};

enum { N_PASSES = sizeof passes / sizeof passes[0] };

int pass_count(void) { return N_PASSES; }

const pass_info *pass_at(int i) { return i >= 0 && i < N_PASSES ? &passes[i] : NULL; }

const pass_info *pass_find(const char *name)
{
    for (int i = 0; i < N_PASSES; i++)
        if (strcmp(passes[i].name, name) == 0)
            return &passes[i];
    return NULL;
}

static const pass_info *pass_of(pass_fn fn)
{
    for (int i = 0; i < N_PASSES; i++)
        if (passes[i].run == fn)
            return &passes[i];
    return NULL;
}

void pass_list(FILE *out)
{
    for (int i = 0; i < N_PASSES; i++)
        fprintf(out, "  %-9s %s\n", passes[i].name, passes[i].summary);
}

/* ============================================================== options */

static pthread_mutex_t options_lock = PTHREAD_MUTEX_INITIALIZER;
static bool options_set;
static pass_options options;
static char *override_spec;

void pass_options_init(pass_options *o)
{
    memset(o, 0, sizeof *o);
#ifndef NDEBUG
    o->verify_each = true;
#endif
}

void pass_set_options(const pass_options *o)
{
    pthread_mutex_lock(&options_lock);
    if (o)
        options = *o;
    options_set = o != NULL;
    pthread_mutex_unlock(&options_lock);
}

void pass_get_options(pass_options *o)
{
    pthread_mutex_lock(&options_lock);
    if (options_set)
        *o = options;
    else
        pass_options_init(o);
    pthread_mutex_unlock(&options_lock);
}

void pass_set_pipeline_override(const char *spec)
{
    pthread_mutex_lock(&options_lock);
    free(override_spec);
    override_spec = spec ? rt_xstrdup(spec) : NULL;
    pthread_mutex_unlock(&options_lock);
}

/* A copy of the override (the caller frees it), or NULL. The API's
 * override wins over the setting passes (AG_PASSES: a pipeline spec like
 * "none", "fold,dce" or "default"), which lets whole programs run under
 * another pipeline without being rebuilt. */
static char *get_override(const rt_config *c)
{
    pthread_mutex_lock(&options_lock);
    char *s = override_spec ? rt_xstrdup(override_spec) : NULL;
    pthread_mutex_unlock(&options_lock);
    const char *spec = rt_config_str(c, RT_CFG_PASSES);
    if (!s && spec && *spec)
        s = rt_xstrdup(spec);
    return s;
}

/* ============================================================== sessions */

static _Thread_local char last_error[2048];
/* The options of the outermost pass_run_with that gave some, for every
 * session it runs (NULL: the process-wide options). */
static _Thread_local const pass_options *run_options;
static _Thread_local int depth; /* sessions running on this thread */
static atomic_int dump_seq;

const char *pass_last_error(void) { return last_error; }

typedef struct session {
    ir_function *fn;
    pass_ctx ctx; /* ctx.am: the caller's analysis manager, or the session's own */
    bool own_am;
    bool ok;
    const rt_config *own_config; /* taken when the options had none */
} session;

static FILE *trace_stream(const session *s) { return s->ctx.opt.trace ? s->ctx.opt.trace : stderr; }

static void fail(session *s, const char *fmt, const char *a, const char *b)
{
    if (s->ok)
        snprintf(last_error, sizeof last_error, fmt, a, b);
    s->ok = false;
}

/* Whether `name` is in the comma-separated list. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Runs one pass with the checks the options ask for; returns whether it
 * changed the function. */
static bool step_info(session *s, const pass_info *p)
{
    if (!s->ok)
        return false;
    s->ctx.failed = false;
    bool changed = p->run(s->fn, &s->ctx);
    if (changed) /* the analyses describe the function as it was */
        pass_analyses_invalidate(s->ctx.am);
    if (s->ctx.failed && s->ctx.opt.strict)
        fail(s, "%s%s", s->ctx.err, "");
    if (s->ctx.opt.print_after_all || listed(s->ctx.opt.print_after, p->name)) {
        fprintf(trace_stream(s), "// *** IR after %s ***\n", p->name);
        ir_print(s->fn, trace_stream(s));
    }
    char err[1024];
    if (s->ok && s->ctx.opt.verify_each && !ir_verify(s->fn, err, sizeof err))
        fail(s, "internal error: after pass '%s' the IR is invalid: %s", p->name, err);
    return changed;
}

static bool step(session *s, pass_fn fn) { return step_info(s, pass_of(fn)); }

/* --------------------------------------------------------------- dumping */

/* Where AG_DUMP_IR sends dumps: NULL (off), "1" (stderr) or a directory. */
static const char *dump_target(const rt_config *c)
{
    return rt_config_on(c, RT_CFG_DUMP_IR) ? rt_config_str(c, RT_CFG_DUMP_IR) : NULL;
}

/* The settings the run used that are not defaults, as comments; then fn,
 * and with `plans` its fusion and memory plans (the session's, made here
 * if its pipeline did not). */
static void print_with_plans(const ir_function *fn, bool plans, const pass_ctx *ctx, FILE *out)
{
    rt_config_print_changed(ctx->opt.config, "// config: ", out);
    ir_print(fn, out);
    if (!plans)
        return;
    pass_fusion_plan_print(pass_analyses_fusion(ctx->am), fn, out);
    pass_memory_plan_print(pass_analyses_memory(ctx->am), fn, out);
}

/* <dir>/<name>.<seq>.<when>.ir, the name reduced to file-name characters. */
static FILE *open_dump_file(const char *dir, const char *name, int seq, const char *when)
{
    char path[4096], clean[128];
    size_t k = 0;
    for (const char *p = name ? name : "fn"; *p && k + 1 < sizeof clean; p++)
        clean[k++] = isalnum((unsigned char)*p) || *p == '_' || *p == '-' ? *p : '_';
    clean[k] = '\0';
    snprintf(path, sizeof path, "%s/%s.%d.%s.ir", dir, clean, seq, when);
    FILE *f = fopen(path, "w");
    if (!f)
        rt_warn((ag_loc){0}, "AG_DUMP_IR: cannot write '%s'", path);
    return f;
}

static void dump(const session *s, int seq, const char *when)
{
    const char *target = dump_target(s->ctx.opt.config);
    bool after = strcmp(when, "after") == 0;
    if (!target)
        return;
    if (strcmp(target, "1") == 0) {
        fflush(stdout);
        fprintf(stderr, "// ----- AG_DUMP_IR: @%s %s the pass pipeline (%d nodes) -----\n",
                s->fn->name ? s->fn->name : "", when, ir_function_num_nodes(s->fn));
        print_with_plans(s->fn, after, &s->ctx, stderr);
        return;
    }
    FILE *f = open_dump_file(target, s->fn->name, seq, when);
    if (f) {
        print_with_plans(s->fn, after, &s->ctx, f);
        fclose(f);
    }
}

/* ------------------------------------------------------ begin and end */

/* Starts a session; false when the override ran instead of the caller's
 * pipeline (the session is then only to be ended). */
static bool begin(session *s, ir_function *fn, pass_analyses *am, int *seq,
                  bool honor_override)
{
    memset(s, 0, sizeof *s);
    s->fn = fn;
    s->ok = true;
    if (run_options)
        s->ctx.opt = *run_options;
    else
        pass_get_options(&s->ctx.opt);
    if (!s->ctx.opt.config)
        s->ctx.opt.config = s->own_config = rt_config_get();
    if (!run_options) /* no compile merged the settings: the process's bf16 applies */
        s->ctx.opt.bf16.enabled |= rt_config_on(s->ctx.opt.config, RT_CFG_BF16);
    s->own_am = am == NULL;
    s->ctx.am = am ? am : pass_analyses_new(fn, s->ctx.opt.caps);
    if (depth++ == 0) {
        last_error[0] = '\0';
        *seq = atomic_fetch_add(&dump_seq, 1);
        dump(s, *seq, "before");
    }
    char *spec = honor_override && depth == 1 ? get_override(s->ctx.opt.config) : NULL;
    if (spec)
        s->ok = pass_run_with(fn, spec, s->ctx.am, NULL);
    free(spec);
    return spec == NULL;
}

static bool end(session *s, int seq)
{
    if (--depth == 0) {
        dump(s, seq, "after");
        if (!s->ok && !s->ctx.opt.strict)
            rt_report((ag_loc){0}, "while optimizing the graph of '%s': %s",
                      s->fn->name ? s->fn->name : "", last_error);
    }
    if (s->own_am)
        pass_analyses_free(s->ctx.am);
    rt_config_release(s->own_config);
    return s->ok;
}

/* ======================================================== the pipelines */

static bool run_default(ir_function *fn, pass_analyses *am)
{
    session s;
    int seq = 0;
    if (begin(&s, fn, am, &seq, true)) {
        step(&s, pass_infer);
        /* converting only what runs on the device needs the placement */
        bool bf16 = s.ctx.opt.bf16.enabled;
        bool bf16_placed = bf16 && s.ctx.opt.bf16.scope == PASS_BF16_SCOPE_DEVICE &&
                           pass_analyses_caps(s.ctx.am)->supports;
        if (bf16 && !bf16_placed)
            step(&s, pass_bf16);
        bool changed = true;
        for (int round = 0; changed && round < PASS_MAX_ROUNDS; round++) {
            changed = false;
            changed |= step(&s, pass_fold);
            changed |= step(&s, pass_simplify);
            changed |= step(&s, pass_matpow);
            changed |= step(&s, pass_cse);
            changed |= step(&s, pass_licm);
            changed |= step(&s, pass_infer);
            changed |= step(&s, pass_dce);
        }
        if (pass_analyses_caps(s.ctx.am)->supports)
            step(&s, pass_place); /* a device target: before its plans */
        if (bf16_placed) {
            step(&s, pass_bf16);
            step(&s, pass_fold); /* casts of constants become bf16 constants */
            step(&s, pass_dce);
        }
        step(&s, pass_fusion);
        step(&s, pass_memplan);
    }
    return end(&s, seq);
}

bool pass_run_default(ir_function *fn) { return run_default(fn, NULL); }

/* ------------------------------------------------------- textual specs */

typedef enum { ITEM_PASS, ITEM_DEFAULT, ITEM_FIXPOINT } item_kind;

typedef struct item {
    item_kind kind;
    const pass_info *pass;
    struct item *kids; /* fixpoint(...) */
    int n_kids;
} item;

typedef struct spec_parser {
    const char *p;
    char *err;
    size_t errlen;
} spec_parser;

static void free_items(item *v, int n)
{
    for (int i = 0; i < n; i++)
        free_items(v[i].kids, v[i].n_kids);
    free(v);
}

static void skip_space(spec_parser *P)
{
    while (isspace((unsigned char)*P->p))
        P->p++;
}

static bool parse_list(spec_parser *P, item **out, int *n, bool nested);

static bool parse_item(spec_parser *P, item *it)
{
    char name[64];
    size_t len = 0;
    skip_space(P);
    while ((isalnum((unsigned char)*P->p) || *P->p == '_' || *P->p == '-') && len + 1 < sizeof name)
        name[len++] = *P->p++;
    name[len] = '\0';
    memset(it, 0, sizeof *it);
    skip_space(P);
    if (strcmp(name, "fixpoint") == 0 && *P->p == '(') {
        P->p++;
        it->kind = ITEM_FIXPOINT;
        if (!parse_list(P, &it->kids, &it->n_kids, true))
            return false;
        if (*P->p != ')') {
            snprintf(P->err, P->errlen, "expected ')' to close fixpoint(");
            return false;
        }
        P->p++;
        return true;
    }
    it->kind = strcmp(name, "default") == 0 ? ITEM_DEFAULT : ITEM_PASS;
    it->pass = pass_find(name);
    if (it->kind == ITEM_PASS && !it->pass) {
        if (len)
            snprintf(P->err, P->errlen, "unknown pass '%s' (agc-opt --list-passes lists them)",
                     name);
        else
            snprintf(P->err, P->errlen, "expected a pass name at '%s'", P->p);
        return false;
    }
    return true;
}

/* item ("," item)*, up to the end (or a ')' when nested). */
static bool parse_list(spec_parser *P, item **out, int *n, bool nested)
{
    int cap = 4;
    *out = rt_xcalloc((size_t)cap, sizeof **out);
    *n = 0;
    for (;;) {
        if (*n == cap) {
            *out = rt_xrealloc(*out, (size_t)(cap *= 2) * sizeof **out);
            memset(*out + *n, 0, (size_t)(cap - *n) * sizeof **out);
        }
        if (!parse_item(P, &(*out)[*n]))
            return ++*n, false;
        ++*n;
        skip_space(P);
        if (*P->p != ',')
            break;
        P->p++;
    }
    if ((nested && *P->p == ')') || (!nested && *P->p == '\0'))
        return true;
    if (*P->p == '\0')
        snprintf(P->err, P->errlen, "expected ')' to close fixpoint(");
    else
        snprintf(P->err, P->errlen, "unexpected '%c' in the pass list", *P->p);
    return false;
}

/* Parses a spec; "none" and "" are the empty pipeline. */
static bool parse_spec(const char *spec, item **out, int *n, char *err, size_t errlen)
{
    const char *s = spec ? spec : "";
    while (isspace((unsigned char)*s))
        s++;
    *out = NULL;
    *n = 0;
    if (*s == '\0' || strcmp(s, "none") == 0)
        return true;
    spec_parser P = {s, err, errlen};
    if (parse_list(&P, out, n, false))
        return true;
    free_items(*out, *n);
    *out = NULL;
    *n = 0;
    return false;
}

bool pass_check_spec(const char *spec, char *err, size_t errlen)
{
    item *v;
    int n;
    bool ok = parse_spec(spec, &v, &n, err, errlen);
    free_items(v, n);
    return ok;
}

static bool run_items(session *s, const item *v, int n)
{
    bool changed = false;
    for (int i = 0; i < n && s->ok; i++) {
        switch (v[i].kind) {
        case ITEM_PASS: changed |= step_info(s, v[i].pass); break;
        case ITEM_DEFAULT:
            if (!run_default(s->fn, s->ctx.am))
                s->ok = false; /* (its message is in last_error) */
            break;
        case ITEM_FIXPOINT: {
            bool again = true;
            for (int round = 0; again && round < PASS_MAX_ROUNDS && s->ok; round++)
                changed |= again = run_items(s, v[i].kids, v[i].n_kids);
            break;
        }
        }
    }
    return changed;
}

bool pass_run_spec(ir_function *fn, const char *spec)
{
    return pass_run_with(fn, spec, NULL, NULL);
}

static bool run_with(ir_function *fn, const char *spec, pass_analyses *am);

bool pass_run_with(ir_function *fn, const char *spec, pass_analyses *am, const pass_options *opt)
{
    if (!opt || run_options)
        return run_with(fn, spec, am);
    run_options = opt;
    bool ok = run_with(fn, spec, am);
    run_options = NULL;
    return ok;
}

static bool run_with(ir_function *fn, const char *spec, pass_analyses *am)
{
    if (!spec)
        return run_default(fn, am);
    char err[512];
    item *v;
    int n;
    if (!parse_spec(spec, &v, &n, err, sizeof err)) {
        snprintf(last_error, sizeof last_error, "bad pass pipeline \"%s\": %s", spec, err);
        return false;
    }
    session s;
    int seq = 0;
    begin(&s, fn, am, &seq, false);
    run_items(&s, v, n);
    free_items(v, n);
    return end(&s, seq);
}
