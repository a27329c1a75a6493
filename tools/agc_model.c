/*
 * agc-model - look into, run and compile saved models (docs/saved-model.md),
 * in the spirit of TensorFlow's saved_model_cli:
 *
 *   agc-model show DIR
 *   agc-model run DIR --signature S --input NAME=FILE... [--output_dir D]
 *   agc-model aot DIR --signature S -o OBJ [--header H] [--name C_NAME]
 *                     [--cpu CPU] [--target-triple T]
 *   agc-model --print-config [--cpu CPU] [--target-triple T]
 *
 * --cpu and --target-triple are settings (runtime/core/config.def): they
 * go into the configuration's flag layer, which run's and aot's compiles
 * read through their snapshot, and --print-config prints.
 *
 * Exit status: 0 on success, 1 when the model or a call fails, 2 for a
 * bad command line.
 */
#include "files.h"
#include "model.h"
#include "npy.h"
#include "words.h"

#include "signature.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: agc-model show DIR\n"
    "       agc-model run DIR --signature NAME --input IN=FILE... [--output_dir DIR]\n"
    "       agc-model aot DIR --signature NAME -o OBJECT [--header HEADER] [--name C_NAME]\n"
    "                 [--cpu CPU] [--target-triple TRIPLE]\n"
    "       agc-model --print-config [--cpu CPU] [--target-triple TRIPLE]\n"
    "\n"
    "  show   the model's signatures, functions (placement, calls, aliases) and variables\n"
    "  run    calls a signature; FILE is a .npy file, or text holding the numbers in\n"
    "         row-major order (one unknown dimension of the input is inferred);\n"
    "         outputs are printed, and written as OUTPUT.npy into --output_dir\n"
    "  aot    compiles a signature for the CPU into an object file and its header\n"
    "         (variables become constants); link with -lag_rt\n"
    "  --print-config  print every setting (target, cpu, triple, ...), its value and\n"
    "         where it came from (default, environment, flag), then exit\n"
    "\n"
    "docs/saved-model.md describes the format and each command.\n";

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "agc-model: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

/* ------------------------------------------------------------------ show */

static void show_ios(const char *what, const sm_io *io, int n)
{
    for (int i = 0; i < n; i++)
        printf("    %s %s: %s\n", what, io[i].name, io[i].type);
}

static void show_ints(const char *name, const int64_t *v, int n)
{
    printf(" %s: [", name);
    for (int i = 0; i < n; i++)
        printf("%s%lld", i ? ", " : "", (long long)v[i]);
    printf("]");
}

/* Every batch option, a row of pipeline/batch_options.def each (so a new
 * row shows with no change here), in the converter's text format: the
 * line can be pasted into a batch_options { } of the options. */
static void show_batch(const sm_batch *b)
{
    printf("    batched with batch_options {");
#define SHOW_INT(name) printf(" %s: %lld", #name, (long long)b->name);
#define SHOW_BOOL(name) printf(" %s: %s", #name, b->name ? "true" : "false");
#define SHOW_INTS(name) show_ints(#name, b->name, b->n_##name);
#define BT_OPTION(name, kind, ...) SHOW_##kind(name)
#include "batch_options.def"
#undef BT_OPTION
#undef SHOW_INTS
#undef SHOW_BOOL
#undef SHOW_INT
    printf(" }\n");
}

static void show_function(const sm_manifest *man, const sm_function *f)
{
    printf("  %s  (AG_FUNCTION %s, traced for \"%s\")\n", f->name, f->function, f->signature);
    printf("    placement: %s", f->target[0] ? f->target : "the loading process's target");
    for (int k = 0; k < f->n_device_scopes; k++)
        printf("%s%s", k ? ", " : " (on the device: ", f->device_scopes[k].name);
    printf("%s%s\n", f->n_device_scopes ? ")" : "",
           f->soft_device_placement ? ", soft device placement" : "");
    if (f->has_bf16 && f->bf16.enabled)
        printf("    bfloat16: scope %s%s%s\n", f->bf16.scope == 2 ? "ALL" : "TPU",
               f->bf16.filterlist[0] ? ", kept in f32: " : "", f->bf16.filterlist);
    if (f->jit_compile)
        printf("    jit_compile: true\n");
    if (f->io_shape_optimization)
        printf("    I/O shape optimization\n");
    if (f->has_batch)
        show_batch(&f->batch);
    if (f->has_batch && f->batch.in_graph && f->batch.scope[0])
        printf("    batched in the graph: the nodes of '%s' run on batches, the work around "
               "them on each caller's thread\n", f->batch.scope);
    else if (f->has_batch && f->batch.in_graph)
        printf("    batched in the graph: the device scopes' nodes run on batches, the host "
               "work around them on each caller's thread\n");
    if (f->freeze_variables)
        printf("    variables read as constants of their saved values\n");
    for (int k = 0; k < f->n_calls; k++)
        printf("    calls %s%s\n", f->calls[k].name,
               f->calls[k].jit_compile ? " (AG_JIT_COMPILE)" : "");
    show_ios("input", f->inputs, f->n_inputs);
    show_ios("output", f->outputs, f->n_outputs);
    for (int k = 0; k < f->n_variables; k++)
        printf("    reads %s\n", man->variables[f->variables[k]].name);
}

static int show(const ag_saved_model *m)
{
    const sm_manifest *man = m->man;
    printf("saved model %s (format %lld, %s)\n\nsignatures:\n", m->dir,
           (long long)man->format_version, man->producer);
    for (int i = 0; i < man->n_signatures; i++) {
        printf("  %s -> %s\n", man->signatures[i].name, man->signatures[i].function);
        show_ios("input", man->signatures[i].inputs, man->signatures[i].n_inputs);
        show_ios("output", man->signatures[i].outputs, man->signatures[i].n_outputs);
    }
    printf("\nfunctions:\n");
    for (int i = 0; i < man->n_functions; i++)
        show_function(man, &man->functions[i]);
    printf("\naliases:%s\n", man->n_aliases ? "" : " none");
    for (int i = 0; i < man->n_aliases; i++)
        printf("  %s -> %s\n", man->aliases[i].name, man->aliases[i].function);
    printf("\nvariables:%s\n", man->n_variables ? "" : " none");
    for (int i = 0; i < man->n_variables; i++)
        printf("  %s: %s, %lld %s%s%s%s\n", man->variables[i].name, man->variables[i].type,
               (long long)man->variables[i].bytes,
               sw_plural(man->variables[i].bytes, "byte", "bytes"),
               man->variables[i].constant ? ", a graph's constant" : "",
               man->variables[i].created_at[0] ? ", made at " : "", man->variables[i].created_at);
    return 0;
}

/* ------------------------------------------------------------------- run */

/* Numbers in text: whitespace, commas and brackets separate them. */
static double *parse_numbers(const char *text, int64_t *n)
{
    int64_t cap = 64;
    double *v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    const char *p = text;
    for (;;) {
        while (*p && (isspace((unsigned char)*p) || strchr(",[]();", *p)))
            p++;
        if (!*p)
            return v;
        char *end;
        double x = strtod(p, &end);
        if (end == p) {
            free(v);
            return NULL;
        }
        if (*n == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = x;
        p = end;
    }
}

/* The text's numbers as a tensor of spec's type, one `?` inferred. */
static ag_tensor text_tensor(const ag_tensor_spec *spec, const char *text, const char *file)
{
    ag_tensor none = {0, 0};
    int64_t n;
    double *v = parse_numbers(text, &n);
    if (!v) {
        fprintf(stderr, "agc-model: %s: expected numbers (or a .npy file)\n", file);
        return none;
    }
    ag_shape s = spec->shape;
    int64_t known = 1;
    int unknown = -1, n_unknown = 0;
    for (int i = 0; i < s.rank; i++) {
        if (s.dims[i] < 0)
            unknown = i, n_unknown++;
        else
            known *= s.dims[i];
    }
    if (n_unknown == 1 && known > 0 && n % known == 0)
        s.dims[unknown] = n / known;
    if (n_unknown > 1 || (n_unknown == 0 && known != n) ||
        (n_unknown == 1 && (known == 0 || n % known != 0))) {
        char want[128];
        fprintf(stderr, "agc-model: %s: %lld numbers do not fill input '%s' (%s)\n", file,
                (long long)n, spec->name, ir_spec_type_str(spec->dtype, &spec->shape, want,
                                                           sizeof want));
        free(v);
        return none;
    }
    ag_tensor t = ag_cast(ag_from_data(AG_F64, s, v), spec->dtype);
    free(v);
    return t;
}

static bool read_input(const ag_signature_def *s, const char *arg, ag_named_tensor *in)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        fprintf(stderr, "agc-model: --input wants NAME=FILE, not '%s'\n", arg);
        return false;
    }
    const ag_tensor_spec *spec = NULL;
    for (int i = 0; i < s->n_inputs && !spec; i++)
        if (strlen(s->inputs[i].name) == (size_t)(eq - arg) &&
            strncmp(s->inputs[i].name, arg, (size_t)(eq - arg)) == 0)
            spec = &s->inputs[i];
    if (!spec) {
        fprintf(stderr, "agc-model: signature '%s' has no input '%.*s'\n", s->name,
                (int)(eq - arg), arg);
        return false;
    }
    char err[512];
    size_t n;
    char *data = sf_read_regular(eq + 1, "the input", (size_t)1 << 34, &n, err, sizeof err);
    if (!data) {
        fprintf(stderr, "agc-model: %s\n", err);
        return false;
    }
    size_t len = strlen(eq + 1);
    bool npy = len > 4 && strcmp(eq + 1 + len - 4, ".npy") == 0;
    in->name = spec->name;
    in->tensor = npy ? npy_read(data, n, err, sizeof err) : text_tensor(spec, data, eq + 1);
    if (npy && !in->tensor.id)
        fprintf(stderr, "agc-model: %s: %s\n", eq + 1, err);
    free(data);
    return in->tensor.id != 0;
}

static bool write_output(const char *dir, const ag_named_tensor *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, o->name);
    FILE *f = fopen(path, "wb");
    bool ok = f && npy_write(f, o->tensor);
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "agc-model: cannot write '%s'\n", path);
    return ok;
}

static int run(ag_saved_model *m, const char *sig, const char *const *inputs, int n_inputs,
               const char *out_dir)
{
    const ag_signature_def *s = ag_model_signature(m, sig);
    if (!s)
        return 1;
    ag_named_tensor *in = calloc((size_t)n_inputs + 1, sizeof *in);
    ag_named_tensor *out = calloc((size_t)s->n_outputs + 1, sizeof *out);
    bool ok = true;
    for (int i = 0; ok && i < n_inputs; i++)
        ok = read_input(s, inputs[i], &in[i]);
    ok = ok && ag_model_call(m, sig, in, n_inputs, out, s->n_outputs);
    for (int i = 0; ok && i < s->n_outputs; i++) {
        printf("%s: ", out[i].name);
        fflush(stdout);
        ag_print(out[i].tensor);
        ok = !out_dir || write_output(out_dir, &out[i]);
    }
    free(in);
    free(out);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------- aot */

typedef struct aot_args {
    const char *sig, *object, *header, *name, *cpu, *triple;
} aot_args;

static bool write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "agc-model: cannot write '%s'\n", path);
    return ok;
}

static char *header_text(const ag_saved_model *m, const ag_signature_def *s, const char *name,
                         const char *object)
{
    char *text = NULL;
    size_t n = 0;
    FILE *h = open_memstream(&text, &n);
    fprintf(h, "/*\n * Generated by agc-model %s from the saved model %s, signature '%s'.\n"
               " * %s() is compiled ahead of time into %s; link it with -lag_rt.\n */\n",
            AG_VERSION, m->dir, s->name, name, object);
    fprintf(h, "#ifndef AGC_MODEL_%s_H_\n#define AGC_MODEL_%s_H_\n\n#include <ag.h>\n\n"
               "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", name, name);
    const char *ret = "ag_tensor";
    char sname[256];
    if (s->n_outputs > 1) {
        snprintf(sname, sizeof sname, "%s_outputs", name);
        fprintf(h, "typedef struct %s {\n", sname);
        for (int i = 0; i < s->n_outputs; i++)
            fprintf(h, "    ag_tensor %s;\n", s->outputs[i].name);
        fprintf(h, "} %s;\n\n", sname);
        ret = sname;
    }
    fputs("/* inputs:", h);
    for (int i = 0; i < s->n_inputs; i++) {
        char t[128];
        fprintf(h, " %s %s", s->inputs[i].name,
                ir_spec_type_str(s->inputs[i].dtype, &s->inputs[i].shape, t, sizeof t));
    }
    fprintf(h, " */\n%s %s(", ret, name);
    for (int i = 0; i < s->n_inputs; i++)
        fprintf(h, "%sag_tensor %s", i ? ", " : "", s->inputs[i].name);
    fprintf(h, "%s);\n%s %s_at(ag_loc ag__loc", s->n_inputs ? "" : "void", ret, name);
    for (int i = 0; i < s->n_inputs; i++)
        fprintf(h, ", ag_tensor %s", s->inputs[i].name);
    fprintf(h, ");\n#ifndef AGC_NO_CALLER_LINES\n#define %s(...) %s_at(AG_HERE, __VA_ARGS__)\n"
               "#endif\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", name, name);
    fclose(h);
    return text;
}

static bool is_c_name(const char *s)
{
    if (!*s || isdigit((unsigned char)*s))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static bool c_names(const ag_signature_def *s, const char *name)
{
    bool ok = is_c_name(name);
    for (int i = 0; ok && i < s->n_inputs; i++)
        ok = is_c_name(s->inputs[i].name);
    for (int i = 0; ok && i < s->n_outputs; i++)
        ok = is_c_name(s->outputs[i].name);
    if (!ok)
        fprintf(stderr, "agc-model: the function name '%s' and the signature's input and "
                        "output names must be C identifiers (use --name)\n", name);
    return ok;
}

/* The signature's function, optimized for the cpu target with its
 * variables frozen, in *res. */
static bool optimized(ag_saved_model *m, int fi, const aot_args *a, pl_result *res)
{
    pl_request r;
    pass_bf16_options bf16;
    char err[1024];
    const sm_function *f = &m->man->functions[fi];
    if (f->target[0] && strcmp(f->target, "cpu") != 0) {
        fprintf(stderr, "agc-model: function '%s' is placed on '%s'; aot compiles for the CPU\n",
                f->name, f->target);
        return false;
    }
    if (!sm_request(m, fi, PL_OPTIMIZED, &r, &bf16, err, sizeof err) ||
        !sm_freeze_variables(r.graph, err, sizeof err)) {
        if (r.graph)
            ir_function_free(r.graph);
        fprintf(stderr, "agc-model: %s\n", err);
        return false;
    }
    r.target = tgt_find("cpu");
    r.strict = true;
    r.options.cpu = a->cpu;
    r.options.triple = a->triple;
    return pl_run(&r, res);
}

/* The CPU and triple the object is for: the settings (--cpu and
 * --target-triple are flags of them). */
static void aot_target(aot_args *a, const rt_config *c)
{
    a->cpu = rt_config_str(c, RT_CFG_CPU);
    a->triple = rt_config_str(c, RT_CFG_TRIPLE);
}

static int aot_with(ag_saved_model *m, const aot_args *a);

static int aot(ag_saved_model *m, const aot_args *given)
{
    const rt_config *c = rt_config_get();
    aot_args a = *given;
    aot_target(&a, c);
    int status = aot_with(m, &a);
    rt_config_release(c);
    return status;
}

static int aot_with(ag_saved_model *m, const aot_args *a)
{
    const ag_signature_def *s = ag_model_signature(m, a->sig);
    const char *name = a->name ? a->name : a->sig;
    if (!s || !c_names(s, name))
        return 1;
    int fi = sm_function_index(m, m->man->signatures[s - m->sigs].function);
    pl_result res;
    if (!optimized(m, fi, a, &res))
        return 1;
    tgt_aot_param *ps = calloc((size_t)s->n_inputs + 1, sizeof *ps);
    for (int i = 0; i < s->n_inputs; i++)
        ps[i] = (tgt_aot_param){.name = s->inputs[i].name, .kind = AG_ARG_TENSOR};
    tgt_aot_function fn = {.name = name, .file = m->dir, .line = 0,
                           .signature = m->man->functions[fi].signature, .graph = res.graph,
                           .n_params = s->n_inputs, .params = ps, .n_outputs = s->n_outputs,
                           .returns_struct = s->n_outputs > 1};
    tgt_options o = {.cpu = a->cpu, .triple = a->triple};
    char *obj = NULL, err[1024];
    size_t len = 0;
    bool ok = pl_emit(tgt_find("cpu"), &fn, 1, &o, TGT_EMIT_OBJECT, &obj, &len, err, sizeof err);
    if (!ok)
        fprintf(stderr, "agc-model: %s\n", err);
    char *header = ok ? header_text(m, s, name, a->object) : NULL;
    ok = ok && write_file(a->object, obj, len) &&
         (!a->header || write_file(a->header, header, strlen(header)));
    free(header);
    free(obj);
    free(ps);
    pl_result_free(&res);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ main */

typedef struct cli {
    const char *command, *dir, *sig, *out_dir;
    const char **inputs;
    int n_inputs;
    bool print_config;
    aot_args aot;
} cli;

/* --flag=value or --flag value; NULL (after complaining) when missing. */
static const char *value_of(int argc, char **argv, int *i, const char *flag)
{
    size_t n = strlen(flag);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    fprintf(stderr, "agc-model: %s needs a value\n", flag);
    return NULL;
}

static bool is_flag(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    return strncmp(arg, flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_cli(int argc, char **argv, cli *c)
{
    static const struct {
        const char *flag;
        size_t offset;
    } flags[] = {
        {"--signature", offsetof(cli, sig)},       {"--output_dir", offsetof(cli, out_dir)},
        {"-o", offsetof(cli, aot.object)},         {"--header", offsetof(cli, aot.header)},
        {"--name", offsetof(cli, aot.name)},       {"--cpu", offsetof(cli, aot.cpu)},
        {"--target-triple", offsetof(cli, aot.triple)},
    };
    c->inputs = calloc((size_t)argc, sizeof *c->inputs);
    c->print_config = strcmp(c->command, "--print-config") == 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        bool known = false;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !known; k++) {
            if (!is_flag(a, flags[k].flag))
                continue;
            known = true;
            if (!(v = value_of(argc, argv, &i, flags[k].flag)))
                return 2;
            *(const char **)((char *)c + flags[k].offset) = v;
        }
        if (known)
            continue;
        if (strcmp(a, "--print-config") == 0) {
            c->print_config = true;
        } else if (is_flag(a, "--input")) {
            if (!(v = value_of(argc, argv, &i, "--input")))
                return 2;
            c->inputs[c->n_inputs++] = v;
        } else if (a[0] == '-') {
            return bad_usage("unknown option '%s'", a);
        } else if (!c->dir) {
            c->dir = a;
        } else {
            return bad_usage("one model directory only; '%s' is one too many", a);
        }
    }
    c->aot.sig = c->sig;
    if (c->print_config)
        return 0;
    if (!c->dir)
        return bad_usage("%s: which model? give its directory", c->command);
    bool wants_sig = strcmp(c->command, "show") != 0;
    if (wants_sig && !c->sig)
        return bad_usage("%s needs --signature NAME", c->command);
    if (strcmp(c->command, "aot") == 0 && !c->aot.object)
        return bad_usage("%s needs -o OBJECT", c->command);
    return 0;
}

/* The flags that are settings, into the configuration's flag layer. */
static void apply_flags(const cli *c)
{
    if (c->aot.cpu)
        rt_config_set_flag(RT_CFG_CPU, c->aot.cpu);
    if (c->aot.triple)
        rt_config_set_flag(RT_CFG_TRIPLE, c->aot.triple);
}

static int print_config(void)
{
    const rt_config *c = rt_config_get();
    rt_config_print(c, stdout);
    rt_config_release(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("agc-model (agc) %s\n", AG_VERSION);
        return 0;
    }
    cli c = {.command = argv[1]};
    if (strcmp(c.command, "show") && strcmp(c.command, "run") && strcmp(c.command, "aot") &&
        strcmp(c.command, "--print-config"))
        return bad_usage("unknown command '%s' (show, run, aot)", c.command);
    int status = parse_cli(argc, argv, &c);
    if (status == 0)
        apply_flags(&c);
    if (status == 0 && c.print_config) {
        status = print_config();
    } else if (status == 0) {
        ag_set_error_mode(AG_ERRORS_RETURN);
        ag_saved_model *m = ag_saved_model_load(c.dir);
        if (!m)
            status = 1;
        else if (strcmp(c.command, "show") == 0)
            status = show(m);
        else if (strcmp(c.command, "run") == 0)
            status = run(m, c.sig, c.inputs, c.n_inputs, c.out_dir);
        else
            status = aot(m, &c.aot);
    }
    if (status == 1 && ag_last_error())
        fprintf(stderr, "agc-model: %s\n", ag_last_error());
    free(c.inputs);
    ag_shutdown();
    return status;
}
