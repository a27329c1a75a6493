/*
 * convert.c - one conversion, start to end: parse, analyze, emit.
 *
 * The frontend keeps its state in a few globals (the arena, the loaded
 * files, the diagnostics' stream and count, analyze.c's current function).
 * fe_convert sets them up, runs the pipeline, and puts them back as they
 * were, so a process may convert any number of inputs, from files or from
 * memory, one after the other (tests/fuzz/fuzz_agc.c does), without
 * leaking and without one run seeing anything of the last.
 */
#include "fe.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The stack the conversion runs on. clang's parser and libclang's and
 * agc's walks of the tree recurse once per operator of a chain
 * `a && b && c ...`, which is a tree as deep as it is long: 20,000 terms
 * overflow the 8 MiB stack libclang parses on (clang itself crashes on
 * them). Address space only: what a conversion does not use is never
 * touched. */
#define STACK_SIZE ((size_t)256 << 20)

static char *heap_copy(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        FE_BUG("out of memory");
    return memcpy(d, s, n);
}

/* What the driver needs of each function, copied out of the arena. */
static void func_infos(const fe_unit *u, fe_result *res)
{
    res->n_funcs = u->funcs.n;
    res->funcs = calloc((size_t)(u->funcs.n ? u->funcs.n : 1), sizeof *res->funcs);
    for (int i = 0; i < u->funcs.n; i++) {
        const fe_func *fn = u->funcs.items[i];
        fe_func_info *f = &res->funcs[i];
        f->name = heap_copy(fn->name);
        f->line = fn->line;
        f->signature = heap_copy(fn->signature);
        f->prototype = heap_copy(fe_prototype(u, fn));
        f->n_outputs = fe_num_outputs(fn);
        f->returns_struct = fn->ret == FE_RET_STRUCT;
        f->n_params = fn->n_params;
        f->params = calloc((size_t)(fn->n_params ? fn->n_params : 1), sizeof *f->params);
        for (int k = 0; k < fn->n_params; k++) {
            const fe_var *v = fn->params[k];
            f->params[k] = (fe_param_info){.name = heap_copy(v->name), .tclass = v->tclass,
                                           .bits = v->bits, .is_signed = v->is_signed};
        }
    }
}

/* The pipeline; fills res on success. */
static int run(const fe_options *opt, fe_result *res)
{
    if (opt->contents && opt->contents_len >= UINT_MAX / 2) {
        fe_diag_plain(FE_ERROR, "'%s' is too large (%zu bytes)", opt->input, opt->contents_len);
        return 1;
    }
    fe_vec deps = {0};
    fe_unit *u = fe_parse(opt, &deps);
    if (!u)
        return 1;
    fe_step("analyze %d AG_FUNCTION%s", u->funcs.n, u->funcs.n == 1 ? "" : "s");
    for (int i = 0; i < u->funcs.n; i++) {
        fe_check_signature(u->src, u->funcs.items[i]);
        fe_analyze(u->funcs.items[i]);
    }
    /* gen.c finds errors of its own (a C scalar carried out of staged
     * code, a preprocessor conditional across a staged construct): it runs
     * after analysis errors too, so that one run reports every error, and
     * its output is then dropped */
    fe_step("generate the staged C");
    fe_out o;
    fe_out_init(&o, u->src);
    fe_emit_unit(u, &o);
    const char *name = strcmp(opt->output, "-") == 0 ? "<stdout>" : opt->output;
    size_t len;
    char *text = fe_out_finish(&o, name, &len);
    if (fe_diag_errors()) {
        free(text);
        return 1;
    }
    if (opt->md && !fe_deps_file_apart(opt, NULL, 0, &deps)) {
        free(text);
        return 1;
    }
    res->output = text;
    res->output_len = len;
    func_infos(u, res);
    if (opt->md)
        res->deps = fe_deps_text(opt, &deps, &res->deps_len);
    return 0;
}

typedef struct run_args {
    const fe_options *opt;
    fe_result *res;
    int status;
} run_args;

static void *run_thread(void *arg)
{
    run_args *a = arg;
    a->status = run(a->opt, a->res);
    return NULL;
}

/* run() on a thread with STACK_SIZE of stack; libclang is told to parse
 * on the thread that calls it (LIBCLANG_NOTHREADS), this one, instead of
 * on a thread of its own. Where no thread can be made, on this one. */
static int run_on_large_stack(const fe_options *opt, fe_result *res)
{
    run_args a = {opt, res, 1};
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0)
        return run(opt, res);
    bool made = pthread_attr_setstacksize(&attr, STACK_SIZE) == 0 &&
                setenv("LIBCLANG_NOTHREADS", "1", 1) == 0 &&
                pthread_create(&t, &attr, run_thread, &a) == 0;
    pthread_attr_destroy(&attr);
    if (!made) {
        unsetenv("LIBCLANG_NOTHREADS");
        return run(opt, res);
    }
    pthread_join(t, NULL);
    return a.status;
}

int fe_convert(const fe_options *opt, fe_result *res)
{
    memset(res, 0, sizeof *res);
    fe_arena_state arena = fe_arena_save();
    fe_diag_init(opt->diag, opt->color);
    int status = run_on_large_stack(opt, res);
    if (status != 0)
        fe_diag_summary();
    fe_diag_done();
    fe_source_forget_all();
    fe_set_current_function(NULL);
    fe_arena_restore(arena);
    return status;
}

void fe_result_free(fe_result *res)
{
    for (int i = 0; i < res->n_funcs; i++) {
        fe_func_info *f = &res->funcs[i];
        for (int k = 0; k < f->n_params; k++)
            free(f->params[k].name);
        free(f->params);
        free(f->name);
        free(f->signature);
        free(f->prototype);
    }
    free(res->funcs);
    free(res->output);
    free(res->deps);
    memset(res, 0, sizeof *res);
}
