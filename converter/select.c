/*
 * select.c - which functions the converter places on the TPU.
 *
 * A TpuFunction names one by its alias (AG_ALIAS, which names an
 * AG_FUNCTION), by a concrete function's name, by a signature, or as every
 * function marked AG_JIT_COMPILE. An AG_FUNCTION that is a saved concrete
 * function goes to the TPU whole; one that only other functions call was
 * inlined into them by the tracer, and goes to the TPU as the nodes that
 * carry its name (ir_node.scope, the function's "device scope"): the rest
 * of its caller stays on the host, with transfers in between.
 *
 * Two errors of the real converter keep their meaning: the same function
 * selected twice, and a TPU function that indirectly calls another
 * (through a function left on the host); a direct call converts.
 */
#include "convert.h"

#include <stdlib.h>
#include <string.h>

typedef struct selector {
    ag_saved_model *m;
    const char *source;
    char *err;
    size_t errlen;
    cv_choice choices[SM_MAX_FUNCTIONS * SM_MAX_SCOPES];
    int n;
} selector;

#define fail_at(S, at, ...) cv_error((S)->err, (S)->errlen, (S)->source, (at), __VA_ARGS__)

static const char *scope_text(const char *scope) { return scope ? scope : ""; }

static bool add(selector *S, int fn, const char *scope, const cv_tpu_function *t,
                const char *by)
{
    for (int i = 0; i < S->n; i++) {
        cv_choice *c = &S->choices[i];
        if (c->fn != fn || strcmp(scope_text(c->scope), scope_text(scope)) != 0)
            continue;
        char both[2 * CV_NAME_BYTES + 64];
        snprintf(both, sizeof both, "%s and by %s", c->by, by);
        return fail_at(S, (tp_loc){0}, "the function \"%s\" is selected twice: by %s; select "
                                       "each function once",
                       scope ? scope : S->m->man->functions[fn].function, both);
    }
    if (S->n == (int)(sizeof S->choices / sizeof S->choices[0]))
        return fail_at(S, (tp_loc){0}, "too many TPU functions");
    S->choices[S->n++] = (cv_choice){.fn = fn, .scope = scope,
                                     .soft = t->enable_soft_device_placement};
    snprintf(S->choices[S->n - 1].by, sizeof S->choices[0].by, "%s", by);
    return true;
}

/* The AG_FUNCTION `name`: each record that is it, whole; each that calls
 * it, by scope. */
static bool select_function(selector *S, const char *name, const cv_tpu_function *t,
                            const char *by, tp_loc at)
{
    sm_manifest *man = S->m->man;
    bool found = false;
    for (int i = 0; i < man->n_functions; i++) {
        sm_function *f = &man->functions[i];
        if (strcmp(f->function, name) == 0) {
            found = true;
            if (!add(S, i, NULL, t, by))
                return false;
            continue;
        }
        for (int k = 0; k < f->n_calls; k++)
            if (strcmp(f->calls[k].name, name) == 0) {
                found = true;
                if (!add(S, i, f->calls[k].name, t, by))
                    return false;
            }
    }
    if (!found)
        return fail_at(S, at, "the function '%s' (%s) is neither a function of the model nor "
                              "called by one", name, by);
    return true;
}

static bool by_alias(selector *S, const cv_tpu_function *t, const char *alias, const char *by)
{
    sm_manifest *man = S->m->man;
    for (int i = 0; i < man->n_aliases; i++)
        if (strcmp(man->aliases[i].name, alias) == 0)
            return select_function(S, man->aliases[i].function, t, by, t->at.function_alias);
    char have[512], hint[300];
    sm_names_for(man, SM_ALIASES, alias, have, sizeof have, hint, sizeof hint);
    return fail_at(S, t->at.function_alias, "the model has no function alias '%s' (aliases: "
                                            "%s)%s", alias, have, hint);
}

static bool by_name(selector *S, const cv_tpu_function *t, const char *name, const char *by)
{
    int i = sm_function_index(S->m, name);
    char have[2048], hint[300];
    if (i < 0)
        sm_names_for(S->m->man, SM_FUNCTIONS, name, have, sizeof have, hint, sizeof hint);
    if (i < 0)
        return fail_at(S, t->at.concrete_function_name, "the model has no concrete function "
                       "'%s' (agc-model show lists them)%s", name, hint);
    return add(S, i, NULL, t, by);
}

static bool by_signature(selector *S, const cv_tpu_function *t, const char *name,
                         const char *by)
{
    sm_signature *s = sm_find_signature(S->m->man, name);
    char have[512], hint[300];
    if (!s)
        sm_names_for(S->m->man, SM_SIGNATURES, name, have, sizeof have, hint, sizeof hint);
    if (!s)
        return fail_at(S, t->at.signature_name, "the model has no signature '%s'; it has %s%s",
                       name, have, hint);
    return add(S, sm_function_index(S->m, s->function), NULL, t, by);
}

/* Every marked function: a saved one whole, one that others call in
 * each caller, by its scope (a marked function calling another marked one
 * through an unmarked one is then the indirect-call error, as in the real
 * converter). */
static bool by_jit_mark(selector *S, const cv_tpu_function *t, const char *by)
{
    bool any = false;
    for (int i = 0; i < S->m->man->n_functions; i++) {
        const sm_function *f = &S->m->man->functions[i];
        if (f->jit_compile) {
            any = true;
            if (!add(S, i, NULL, t, by))
                return false;
        }
        for (int k = 0; k < f->n_calls; k++)
            if (f->calls[k].jit_compile) {
                any = true;
                if (!add(S, i, f->calls[k].name, t, by))
                    return false;
            }
    }
    if (!any)
        return fail_at(S, t->at.jit_compile_functions, "jit_compile_functions: no function of "
                       "the model is marked AG_JIT_COMPILE");
    return true;
}

static bool select_one(selector *S, const cv_tpu_function *t)
{
    const char *name = NULL;
    cv_selector kind = cv_tpu_function_selector(t, &name);
    char by[2 * CV_NAME_BYTES];
    snprintf(by, sizeof by, "%s%s%s%s", cv_selector_field(kind), name ? " \"" : "",
             name ? name : "", name ? "\"" : "");
    switch (kind) {
    case CV_SELECT_FUNCTION_ALIAS: return by_alias(S, t, name, by);
    case CV_SELECT_CONCRETE_FUNCTION_NAME: return by_name(S, t, name, by);
    case CV_SELECT_SIGNATURE_NAME: return by_signature(S, t, name, by);
    case CV_SELECT_JIT_COMPILE_FUNCTIONS: return by_jit_mark(S, t, by);
    default: return fail_at(S, (tp_loc){0}, "a tpu_functions entry selects nothing");
    }
}

/* ------------------------------------------------------- indirect calls */

/* A TPU function that calls another directly (`serve -> layer`, the
 * callee inlined in its caller) converts: the callee is placed with its
 * caller. One that calls another through a function left on the host
 * (`serve -> middle -> leaf`, middle not selected) is the real
 * converter's indirect call, which it refuses. A node's scope ("a/b/c")
 * is the chain of calls that traced it. */

typedef struct span {
    const char *s;
    int n;
} span;

static bool selected_span(const selector *S, int fn, span c)
{
    for (int i = 0; i < S->n; i++) {
        const cv_choice *k = &S->choices[i];
        if (k->fn == fn && k->scope && (int)strlen(k->scope) == c.n &&
            strncmp(k->scope, c.s, (size_t)c.n) == 0)
            return true;
    }
    return false;
}

static bool whole(const selector *S, int fn)
{
    for (int i = 0; i < S->n; i++)
        if (S->choices[i].fn == fn && !S->choices[i].scope)
            return true;
    return false;
}

/* "a -> b -> c" into out; the functions between the ends into between. */
static void chain_text(const span *c, int n, char *out, size_t size, char *between,
                       size_t bsize)
{
    out[0] = between[0] = '\0';
    for (int i = 0; i < n; i++) {
        snprintf(out + strlen(out), size - strlen(out), "%s%.*s", i ? " -> " : "", c[i].n,
                 c[i].s);
        if (i > 0 && i < n - 1)
            snprintf(between + strlen(between), bsize - strlen(between), "%s\"%.*s\"",
                     i > 1 ? ", " : "", c[i].n, c[i].s);
    }
}

/* The real converter's message, word for word, with the chain that makes
 * the call indirect. */
static bool indirect(selector *S, const span *c, int n)
{
    char chain[4 * SM_NAME], between[4 * SM_NAME];
    chain_text(c, n, chain, sizeof chain, between, sizeof between);
    snprintf(S->err, S->errlen, "Unable to place both \"%.*s\" and \"%.*s\" on the TPU because "
             "\"%.*s\" indirectly calls \"%.*s\" (%s; %s %s not on the TPU). This behavior is "
             "unsupported because it can cause invalid graphs to be generated.",
             c[0].n, c[0].s, c[n - 1].n, c[n - 1].s, c[0].n, c[0].s, c[n - 1].n, c[n - 1].s,
             chain, between, n > 3 ? "are" : "is");
    return false;
}

/* The chain of calls that traced a node of function fn (the function
 * first when it is selected whole): two selected functions with one
 * left on the host between them is an indirect call. */
static bool check_scope(selector *S, int fn, const char *scope)
{
    span c[SM_MAX_SCOPES + 1];
    int n = 0, last = -1;
    if (whole(S, fn)) {
        const char *name = S->m->man->functions[fn].function;
        c[n++] = (span){name, (int)strlen(name)};
        last = 0;
    }
    for (const char *p = scope; *p && n < (int)(sizeof c / sizeof c[0]);) {
        c[n] = (span){p, (int)strcspn(p, "/")};
        p += c[n].n + (p[c[n].n] == '/');
        if (selected_span(S, fn, c[n])) {
            if (last >= 0 && n - last > 1)
                return indirect(S, c + last, n - last + 1);
            last = n;
        }
        n++;
    }
    return true;
}

static bool check_graph(selector *S, int fn, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->scope && !check_scope(S, fn, n->scope))
            return false;
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !check_graph(S, fn, n->region[r]))
                return false;
    }
    return true;
}

static bool check_indirect_calls(selector *S)
{
    for (int fn = 0; fn < S->m->man->n_functions; fn++) {
        bool scoped = false;
        for (int i = 0; i < S->n; i++)
            scoped |= S->choices[i].fn == fn && S->choices[i].scope;
        if (!scoped)
            continue;
        ir_function *g = sm_function_graph(S->m, fn, S->err, S->errlen);
        bool ok = g && check_graph(S, fn, g->body);
        if (g)
            ir_function_free(g);
        if (!ok)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------ placement */

bool cv_on_device(const sm_function *f) { return strcmp(f->target, CV_DEVICE_TARGET) == 0; }

static void place(selector *S)
{
    for (int i = 0; i < S->n; i++) {
        const cv_choice *c = &S->choices[i];
        sm_function *f = &S->m->man->functions[c->fn];
        snprintf(f->target, sizeof f->target, "%s", CV_DEVICE_TARGET);
        f->soft_device_placement |= c->soft;
        if (c->scope && !whole(S, c->fn) && f->n_device_scopes < SM_MAX_SCOPES)
            snprintf(f->device_scopes[f->n_device_scopes++].name, SM_NAME, "%s", c->scope);
    }
}

bool cv_select(ag_saved_model *m, const cv_options *o, const char *source, char *err,
               size_t errlen)
{
    selector *S = rt_xcalloc(1, sizeof *S);
    *S = (selector){.m = m, .source = source ? source : "<options>", .err = err,
                    .errlen = errlen};
    bool ok = true;
    for (int i = 0; ok && i < o->n_tpu_functions; i++)
        ok = select_one(S, &o->tpu_functions[i]);
    ok = ok && check_indirect_calls(S);
    if (ok)
        place(S);
    free(S);
    return ok;
}
