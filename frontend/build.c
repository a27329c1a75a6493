/*
 * build.c - agc at build time: trace the user's functions, run the passes,
 * compile ahead of time (--emit=obj, header, ir, ir-opt, llvm, asm, dot).
 *
 * Tracing needs the user's code to run, as at a first call under tf.function:
 * the staged C is compiled with the system C compiler ($CC, else cc) into a
 * temporary shared library, which is loaded into agc. Its constructors
 * register its AG_FUNCTIONs with the runtime agc links (libag), so the
 * function cache's own tracer makes each graph, for the signature the
 * function's AG_SIGNATURE (or --signature) gives. The graph then goes
 * through the same passes as at run time, and to the backend's
 * ahead-of-time compiler (backend/cpu/cg_aot.c).
 *
 * Nothing is written until everything succeeded, and then all outputs
 * together (fe_write_outputs): a failed run leaves the user's files as
 * they were.
 */
#include "build.h"

#include "function.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;


/* --emit's kinds, by name. */
static const struct {
    const char *name;
    unsigned bit;
} emit_kinds[] = {{"c", FE_EMIT_C},       {"obj", FE_EMIT_OBJ},       {"header", FE_EMIT_HEADER},
             {"ir", FE_EMIT_IR},     {"ir-opt", FE_EMIT_IR_OPT}, {"llvm", FE_EMIT_LLVM},
             {"asm", FE_EMIT_ASM},   {"dot", FE_EMIT_DOT},       {"tpu", FE_EMIT_TPU}};

/* The name of the first kind in emit that traces at build time. */
static const char *emit_name(unsigned emit)
{
    for (size_t k = 0; k < sizeof emit_kinds / sizeof *emit_kinds; k++)
        if (emit_kinds[k].bit != FE_EMIT_C && (emit & emit_kinds[k].bit))
            return emit_kinds[k].name;
    return "obj";
}

unsigned fe_emit_parse(const char *list)
{
    unsigned emit = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof emit_kinds / sizeof *emit_kinds && !bit; k++)
            if (strlen(emit_kinds[k].name) == n && strncmp(p, emit_kinds[k].name, n) == 0)
                bit = emit_kinds[k].bit;
        if (!bit)
            return 0;
        emit |= bit;
        p += n + (p[n] == ',');
    }
    return emit;
}

/* ------------------------------------------------------------ choosing */

typedef struct build {
    const fe_options *opt;
    const fe_build_options *b;
    fe_result conv;
    const fe_func_info **fns; /* the functions to build */
    const char **specs;       /* the signature of each */
    int n_fns;
    char tmpdir[64];
    void *lib;
} build;

static bool wants_graph(unsigned emit)
{
    return emit & (FE_EMIT_OBJ | FE_EMIT_IR | FE_EMIT_IR_OPT | FE_EMIT_LLVM | FE_EMIT_ASM |
                   FE_EMIT_DOT | FE_EMIT_TPU);
}

/* "file:line: error: message", as the runtime and clang print them. */
FE_PRINTF(3, 4) static void error_at(const build *B, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_buf b = {0};
    fe_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "%s:%d: error: %s\n", B->opt->input, line, b.data);
    fe_buf_free(&b);
}

/* Whether f's parameters can be traced at build time and compiled ahead
 * of time. */
static bool aot_params_ok(const build *B, const fe_func_info *f)
{
    for (int i = 0; i < f->n_params; i++) {
        const fe_param_info *p = &f->params[i];
        const char *why = NULL;
        if (p->tclass == FE_TY_VARIABLE)
            why = "an ag_variable lives in the process that made it, so a function that "
                  "takes one cannot be traced at build time; pass its value as a tensor";
        else if (p->tclass == FE_TY_OPTIMIZER)
            why = "an ag_optimizer and its slot variables live in the process that made "
                  "them, so a function that takes one cannot be traced at build time";
        else if (p->tclass == FE_TY_TENSOR_ARRAY)
            why = "a signature cannot describe an ag_tensor_array yet, so a function that "
                  "takes one cannot be traced at build time; pass its elements as a tensor";
        else if (p->tclass == FE_TY_FLOAT && p->bits != 32 && p->bits != 64)
            why = "long double parameters cannot be compiled ahead of time";
        else if (p->tclass == FE_TY_INT && p->bits > 64)
            why = "integer parameters wider than 64 bits cannot be compiled ahead of time";
        if (why) {
            error_at(B, f->line, "parameter '%s' of '%s': %s", p->name, f->name, why);
            return false;
        }
    }
    return true;
}

/* The object also defines NAME_at (the caller's location first: see
 * header.c), so another AG_FUNCTION of that name would clash with it. */
static bool at_name_free(const build *B, const fe_func_info *f)
{
    if (!(B->b->emit & (FE_EMIT_OBJ | FE_EMIT_HEADER | FE_EMIT_LLVM | FE_EMIT_ASM)))
        return true; /* the graphs alone define no C function */
    size_t n = strlen(f->name);
    for (int i = 0; i < B->conv.n_funcs; i++) {
        const fe_func_info *g = &B->conv.funcs[i];
        if (strncmp(g->name, f->name, n) == 0 && strcmp(g->name + n, "_at") == 0) {
            error_at(B, g->line, "'%s' clashes with the function '%s_at' that "
                                 "--emit=obj defines for '%s' (its callers' locations): "
                                 "rename one of them", g->name, f->name, f->name);
            return false;
        }
    }
    return true;
}

/* The functions to build and their signatures; false after an error. */
static bool choose(build *B)
{
    const fe_result *r = &B->conv;
    const fe_build_options *b = B->b;
    if (b->signature && !b->function && r->n_funcs > 1) {
        fe_diag_plain(FE_ERROR, "--signature applies to one function: name it with --function");
        return false;
    }
    B->fns = fe_alloc((size_t)(r->n_funcs + 1) * sizeof *B->fns);
    B->specs = fe_alloc((size_t)(r->n_funcs + 1) * sizeof *B->specs);
    bool ok = true; /* every function is checked: one run reports every error */
    for (int i = 0; i < r->n_funcs; i++) {
        const fe_func_info *f = &r->funcs[i];
        if (b->function && strcmp(f->name, b->function) != 0)
            continue;
        const char *spec = b->signature ? b->signature : f->signature;
        if (!spec && (b->function || r->n_funcs == 1)) {
            error_at(B, f->line, "'%s' has no AG_SIGNATURE: give one that fixes every "
                                 "parameter, or pass --signature \"f32[2,3], n=4\"", f->name);
            ok = false;
            continue;
        }
        if (!spec)
            continue; /* several functions: those with a signature are built */
        if (!aot_params_ok(B, f) || !at_name_free(B, f)) {
            ok = false;
            continue;
        }
        B->fns[B->n_fns] = f;
        B->specs[B->n_fns++] = spec;
    }
    if (!ok)
        return false;
    if (b->function && !B->n_fns) {
        fe_diag_plain(FE_ERROR, "%s has no AG_FUNCTION named '%s'", B->opt->input, b->function);
        return false;
    }
    if (!B->n_fns) {
        fe_diag_plain(FE_ERROR, "no AG_FUNCTION of %s has an AG_SIGNATURE: add one that fixes "
                                "every parameter, or name a function with --function and "
                                "--signature", B->opt->input);
        return false;
    }
    return true;
}

/* ------------------------------------------------- tracing at build time */

static int run_compiler(const char *const *argv)
{
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], NULL, NULL, (char *const *)argv, environ);
    if (err) {
        fe_diag_plain(FE_ERROR, "cannot run the C compiler '%s': %s (set CC to one)", argv[0],
                      strerror(err));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Compiles the staged C into tmpdir/staged.so with $CC. */
static bool compile_staged(build *B, const char *c_path, const char *so_path)
{
    const char *cc = getenv("CC");
    cc = cc && *cc ? cc : "cc";
    int n_flags;
    const char **flags = fe_cc_flags(B->opt, &n_flags);
    const char **argv = fe_alloc((size_t)(n_flags + 16) * sizeof *argv);
    int n = 0;
    /* $CC may be a command with arguments ("ccache gcc") */
    char *words = fe_strdup(cc);
    for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t"))
        argv[n++] = w;
    const char *fixed[] = {"-shared", "-fPIC", "-O1", "-w", "-o", so_path, c_path};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        argv[n++] = fixed[i];
    for (int i = 0; i < n_flags; i++)
        argv[n++] = flags[i];
    /* the staged C is elsewhere: "headers" next to the source still count */
    const char *slash = strrchr(B->opt->input, '/');
    argv[n++] = "-iquote";
    argv[n++] = slash ? fe_strndup(B->opt->input, (size_t)(slash - B->opt->input) + 1) : ".";
    argv[n] = NULL;
    fe_step("compile the staged C, to trace it: %s", fe_join_args(argv, n));
    if (run_compiler(argv) == 0)
        return true;
    fe_diag_plain(FE_ERROR, "'%s' could not compile the staged C of %s to trace its functions "
                            "(its messages are above)", cc, B->opt->input);
    return false;
}

/* Writes, compiles and loads the staged C. */
static bool load_staged(build *B)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(B->tmpdir, sizeof B->tmpdir, "%s/agc-XXXXXX",
             tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(B->tmpdir)) {
        fe_diag_plain(FE_ERROR, "cannot make a temporary directory: %s", strerror(errno));
        B->tmpdir[0] = '\0';
        return false;
    }
    const char *c_path = fe_format("%s/staged.c", B->tmpdir);
    const char *so_path = fe_format("%s/staged.so", B->tmpdir);
    if (!fe_write_file(c_path, B->conv.output, B->conv.output_len) ||
        !compile_staged(B, c_path, so_path))
        return false;
    fe_step("load %s, which registers its AG_FUNCTIONs", so_path);
    B->lib = dlopen(so_path, RTLD_LAZY | RTLD_LOCAL);
    if (!B->lib)
        fe_diag_plain(FE_ERROR, "cannot load the staged C of %s to trace it: %s", B->opt->input,
                      dlerror());
    return B->lib != NULL;
}

static void unload_staged(build *B)
{
    ag_shutdown(); /* the registry points into the library */
    if (B->lib)
        dlclose(B->lib);
    if (B->tmpdir[0]) {
        unlink(fe_format("%s/staged.c", B->tmpdir));
        unlink(fe_format("%s/staged.so", B->tmpdir));
        rmdir(B->tmpdir);
    }
}

/* Prints the runtime's last error ("file:line: message") as a diagnostic. */
static void report_runtime_error(void)
{
    const char *e = ag_last_error();
    if (!e)
        return;
    const char *colon = strchr(e, ':');
    const char *sep = colon ? strstr(colon + 1, ": ") : NULL;
    fflush(stdout);
    if (sep)
        fprintf(stderr, "%.*s: error: %s\n", (int)(sep - e), e, sep + 2);
    else
        fprintf(stderr, "agc: error: %s\n", e);
    ag_clear_error();
}

bool fe_target_known(const char *name, char *names, size_t n)
{
    tgt_names(names, n);
    return tgt_find(name) != NULL;
}

const char *fe_target_suggest(const char *name) { return tgt_suggest(name); }

bool fe_target_prints(const char *name)
{
    const tgt_target *t = tgt_find(name);
    return t && t->print;
}

/* The target --target names (validated by the driver); else tpu-model
 * for --emit=tpu, cpu otherwise. */
static const tgt_target *build_target(const build *B)
{
    const char *dflt = B->b->emit & FE_EMIT_TPU ? "tpu-model" : "cpu";
    return tgt_find(B->b->target ? B->b->target : dflt);
}

/* agc -v: a stage of the pipeline of one function. */
static void pipeline_step(void *ctx, const char *stage)
{
    const char *const *spec = ctx; /* name, signature */
    fe_step("'%s' for \"%s\": %s", spec[0], spec[1], stage);
}

/* Runs the compile pipeline on fns[i] up to `stop`; false after
 * reporting why. */
static bool run_pipeline(build *B, int i, pl_stage stop, pl_result *out)
{
    const fe_func_info *f = B->fns[i];
    ag_loc loc = {B->opt->input, f->line};
    tgt_options o = {0}; /* agc's flags reach the target through the settings */
    const char *what[2] = {f->name, B->specs[i]};
    pl_request flags = {.progress = pipeline_step, .progress_ctx = (void *)what};
    bool ok = fn_compile_spec(loc, f->name, B->specs[i], stop, build_target(B), &o, &flags, out);
    if (!ok && rt_last_error_absent()) {
        report_runtime_error();
        fe_diag_plain(FE_NOTE, "agc traced '%s' at build time, without running the program, so "
                               "what main sets up before calling it (variables, tensors or "
                               "optimizers in globals) does not exist yet; pass that state to "
                               "'%s' as parameters, or leave out --emit=%s and let the staged "
                               "C trace it at its first call, after main has set it up",
                      f->name, f->name, emit_name(B->b->emit));
    } else if (!ok) {
        report_runtime_error();
    }
    return ok;
}

/* ------------------------------------------------------------ outputs */

typedef struct sink {
    char *data;
    size_t len;
    FILE *f;
} sink;

static void sink_open(sink *s) { s->f = open_memstream(&s->data, &s->len); }
static void sink_close(sink *s)
{
    if (s->f)
        fclose(s->f);
    s->f = NULL;
}

/* Where --emit stops the pipeline. */
static pl_stage stop_for(unsigned emit)
{
    return emit & FE_EMIT_IR ? PL_TRACED : emit & FE_EMIT_TPU ? PL_COMPILED : PL_OPTIMIZED;
}

/* --emit=ir, ir-opt, dot or tpu: every function, one after another, the
 * pipeline stopped after tracing (ir), the passes (ir-opt, dot) or the
 * target's compile (tpu: the program it made). */
static bool emit_graphs(build *B, sink *out)
{
    unsigned emit = B->b->emit;
    bool ok = true; /* every function, so that one run reports every error */
    if (emit & FE_EMIT_IR_OPT) { /* the settings the passes ran with */
        const rt_config *c = rt_config_get();
        rt_config_print_changed(c, "// config: ", out->f);
        rt_config_release(c);
    }
    for (int i = 0; i < B->n_fns; i++) {
        pl_result g;
        if (!run_pipeline(B, i, stop_for(emit), &g)) {
            ok = false;
            continue;
        }
        if (emit & FE_EMIT_DOT)
            pass_print_dot(g.graph, pass_analyses_fusion(g.am), out->f);
        else if (emit & FE_EMIT_TPU)
            pl_print_compiled(&g, out->f);
        else
            ir_print(g.graph, out->f);
        pl_result_free(&g);
    }
    return ok;
}

static ag_arg_kind param_kind(const fe_param_info *p)
{
    return p->tclass == FE_TY_INT            ? AG_ARG_INT
           : p->tclass == FE_TY_FLOAT        ? AG_ARG_FLOAT
           : p->tclass == FE_TY_TENSOR_ARRAY ? AG_ARG_TENSOR_ARRAY
                                             : AG_ARG_TENSOR;
}

/* --emit=obj, llvm or asm: every function's optimized graph, compiled
 * into one module by the target's ahead-of-time form. */
static bool emit_code(build *B, tgt_emit_kind kind, char **data, size_t *len)
{
    tgt_aot_function *afs = fe_alloc((size_t)B->n_fns * sizeof *afs);
    pl_result *graphs = fe_alloc((size_t)B->n_fns * sizeof *graphs); /* zeroed */
    bool ok = true; /* every function, so that one run reports every error */
    for (int i = 0; i < B->n_fns; i++) {
        if (!run_pipeline(B, i, PL_OPTIMIZED, &graphs[i])) {
            ok = false;
            continue;
        }
        const fe_func_info *f = B->fns[i];
        tgt_aot_param *ps = fe_alloc((size_t)(f->n_params + 1) * sizeof *ps);
        for (int k = 0; k < f->n_params; k++) {
            const fe_param_info *p = &f->params[k];
            ps[k] = (tgt_aot_param){.name = p->name, .kind = param_kind(p), .bits = p->bits,
                                    .is_signed = p->is_signed};
        }
        afs[i] = (tgt_aot_function){.name = f->name, .file = B->opt->input, .line = f->line,
                                    .signature = B->specs[i], .graph = graphs[i].graph,
                                    .n_params = f->n_params, .params = ps,
                                    .n_outputs = f->n_outputs,
                                    .returns_struct = f->returns_struct};
    }
    char err[768];
    tgt_options o = {0}; /* agc's flags reach the target through the settings */
    static const char *const kinds[] = {"an object file", "assembly", "LLVM IR"};
    if (ok)
        fe_step("the target '%s': %s of %d function%s", build_target(B)->name,
                kinds[kind == TGT_EMIT_OBJECT ? 0 : kind == TGT_EMIT_ASM ? 1 : 2], B->n_fns,
                B->n_fns == 1 ? "" : "s");
    if (ok && !pl_emit(build_target(B), afs, B->n_fns, &o, kind, data, len, err, sizeof err)) {
        fe_diag_plain(FE_ERROR, "%s", err);
        ok = false;
    }
    for (int i = 0; i < B->n_fns; i++)
        pl_result_free(&graphs[i]);
    return ok;
}

const char *fe_header_path(const fe_options *opt, unsigned emit)
{
    const char *out = opt->output;
    if (!(emit & FE_EMIT_OBJ))
        return out;
    size_t n = strlen(out);
    if (n > 2 && strcmp(out + n - 2, ".o") == 0)
        return fe_format("%.*s.h", (int)(n - 2), out);
    return fe_format("%s.h", out);
}

static bool write_outputs(build *B)
{
    unsigned emit = B->b->emit;
    const char *out = B->opt->output;
    bool ok = true;
    char *data = NULL;
    size_t len = 0;
    if (emit & (FE_EMIT_OBJ | FE_EMIT_LLVM | FE_EMIT_ASM)) {
        tgt_emit_kind kind = emit & FE_EMIT_OBJ   ? TGT_EMIT_OBJECT
                         : emit & FE_EMIT_ASM ? TGT_EMIT_ASM
                                              : TGT_EMIT_LLVM;
        ok = emit_code(B, kind, &data, &len);
    } else if (emit & (FE_EMIT_IR | FE_EMIT_IR_OPT | FE_EMIT_DOT | FE_EMIT_TPU)) {
        sink s = {0};
        sink_open(&s);
        ok = emit_graphs(B, &s);
        sink_close(&s);
        data = s.data;
        len = s.len;
    }
    char *header = NULL;
    const char *hpath = NULL;
    if (ok && (emit & FE_EMIT_HEADER)) {
        hpath = fe_header_path(B->opt, emit);
        header = fe_header_text(B->opt, B->fns, B->specs, B->n_fns, hpath,
                                emit & FE_EMIT_OBJ ? out : NULL);
    }
    fe_output outs[3];
    int n = 0;
    if (data)
        outs[n++] = (fe_output){out, data, len};
    if (header)
        outs[n++] = (fe_output){hpath, header, strlen(header)};
    if (B->conv.deps)
        outs[n++] = (fe_output){fe_deps_file(B->opt), B->conv.deps, B->conv.deps_len};
    if (ok)
        ok = fe_write_outputs(outs, n);
    free(data);
    free(header);
    return ok;
}

void fe_build_apply_flags(const fe_build_options *b)
{
    if (b->target)
        rt_config_set_flag(RT_CFG_TARGET, b->target);
    if (b->cpu)
        rt_config_set_flag(RT_CFG_CPU, b->cpu);
    if (b->triple)
        rt_config_set_flag(RT_CFG_TRIPLE, b->triple);
    if (b->device_spec)
        rt_config_set_flag(RT_CFG_DEVICE_SPEC, b->device_spec);
    if (b->bf16)
        rt_config_set_flag(RT_CFG_BF16, "1");
    if (b->soft_placement)
        rt_config_set_flag(RT_CFG_SOFT_DEVICE_PLACEMENT, "1");
}

void fe_print_config(FILE *out)
{
    const rt_config *c = rt_config_get();
    rt_config_print(c, out);
    rt_config_release(c);
}

int fe_build(const fe_options *opt, const fe_build_options *b)
{
    build B = {.opt = opt, .b = b};
    fe_build_apply_flags(b);
    fe_options conv = *opt;
    conv.output = "staged.c"; /* the name its #line directives use */
    conv.mt = opt->mt ? opt->mt : opt->output;
    if (fe_convert(&conv, &B.conv) != 0)
        return 1;
    bool ok = choose(&B);
    if (ok && wants_graph(b->emit)) {
        ag_set_error_mode(AG_ERRORS_RETURN);
        ok = load_staged(&B) && write_outputs(&B);
        unload_staged(&B);
    } else if (ok) {
        ok = write_outputs(&B);
    }
    fe_result_free(&B.conv);
    return ok ? 0 : 1;
}
