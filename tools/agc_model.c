/*
 * agc-model - look into, run and compile saved models (docs/saved-model.md),
 * in the spirit of TensorFlow's saved_model_cli:
 *
 *   agc-model show DIR
 *   agc-model run DIR --signature S --input NAME=FILE... [--output_dir D]
 *   agc-model aot DIR --signature S -o OBJ [--header H] [--name C_NAME]
 *                     [--cpu CPU] [--target-triple T]
 *   agc-model dataset OUT.tfrecord --input NAME=FILE.npy...
 *   agc-model dataset --show FILE.tfrecord [--model DIR --signature S]
 *   agc-model --print-config [--cpu CPU] [--target-triple T]
 *
 * --cpu and --target-triple are settings (runtime/core/config.def): they
 * go into the configuration's flag layer, which run's and aot's compiles
 * read through their snapshot, and --print-config prints.
 *
 * Exit status: 0 on success, 1 when the model or a call fails, 2 for a
 * bad command line.
 */
#include "dataset.h"
#include "files.h"
#include "model.h"
#include "npy.h"
#include "tool_diag.h"
#include "words.h"

#include "signature.h"
#include "suggest.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: agc-model show DIR\n"
    "       agc-model run DIR --signature NAME --input IN=FILE... [--output_dir DIR]\n"
    "       agc-model aot DIR --signature NAME -o OBJECT [--header HEADER] [--name C_NAME]\n"
    "                 [--cpu CPU] [--target-triple TRIPLE]\n"
    "       agc-model dataset OUT.tfrecord --input IN=FILE.npy...\n"
    "       agc-model dataset --show FILE.tfrecord [--model DIR --signature NAME]\n"
    "       agc-model --print-config [--cpu CPU] [--target-triple TRIPLE]\n"
    "\n"
    "  show   the model's signatures, functions (placement, calls, aliases) and variables\n"
    "  run    calls a signature; FILE is a .npy file, or text holding the numbers in\n"
    "         row-major order (one unknown dimension of the input is inferred);\n"
    "         outputs are printed, and written as OUTPUT.npy into --output_dir\n"
    "  aot    compiles a signature for the CPU into an object file and its header\n"
    "         (variables become constants); link with -lag_rt\n"
    "  dataset writes a representative data set (TensorFlow's TFRecord format) from .npy\n"
    "         files, sample i of each input being its row i; --show lists one's samples,\n"
    "         checked against a model's signature when --model is given\n"
    "  --print-config  print every setting (target, cpu, triple, ...), its value and\n"
    "         where it came from (default, environment, flag), then exit\n"
    "\n"
    "docs/saved-model.md describes the format and each command.\n";

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "agc-model: error: ");
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
    if (f->device_spec[0])
        printf("    on a slice: %s (over the device spec in force)\n", f->device_spec);
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
    if (f->n_quantized)
        printf("    quantized (post-training):\n");
    for (int k = 0; k < f->n_quantized; k++)
        printf("      %s at %s: %s\n", f->quantized[k].op, f->quantized[k].at,
               f->quantized[k].how);
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
        tool_error("%s: expected numbers (or a .npy file)", file);
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
        tool_error("%s: %lld numbers do not fill input '%s' (%s)", file, (long long)n,
                   spec->name, ir_spec_type_str(spec->dtype, &spec->shape, want, sizeof want));
        free(v);
        return none;
    }
    ag_loc none_loc = {0}; /* the tool's own call: no line of the user's */
    ag_tensor t = ag_cast_at(none_loc, ag_from_data_at(none_loc, AG_F64, s, v), spec->dtype);
    free(v);
    return t;
}

/* "--input NAME=..." names no input of s: which it most likely meant,
 * and which it has. */
static bool no_input(const ag_signature_def *s, const char *arg, int len)
{
    char typed[256], have[512] = "", hint[300];
    snprintf(typed, sizeof typed, "%.*s", len, arg);
    sg_best b;
    sg_begin(&b, typed);
    for (int i = 0; i < s->n_inputs; i++) {
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s'%s'", i ? ", " : "",
                 s->inputs[i].name);
        sg_consider(&b, s->inputs[i].name);
    }
    tool_error("signature '%s' has no input '%s'; it has %s%s", s->name, typed,
               have[0] ? have : "none", sg_did_you_mean(b.name, hint, sizeof hint));
    return false;
}

static bool read_input(const ag_signature_def *s, const char *arg, ag_named_tensor *in)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        tool_error("--input wants NAME=FILE, not '%s'", arg);
        return false;
    }
    const ag_tensor_spec *spec = NULL;
    for (int i = 0; i < s->n_inputs && !spec; i++)
        if (strlen(s->inputs[i].name) == (size_t)(eq - arg) &&
            strncmp(s->inputs[i].name, arg, (size_t)(eq - arg)) == 0)
            spec = &s->inputs[i];
    if (!spec)
        return no_input(s, arg, (int)(eq - arg));
    char err[512];
    size_t n;
    char *data = sf_read_regular(eq + 1, "the input", (size_t)1 << 34, &n, err, sizeof err);
    if (!data) {
        tool_error("%s", err);
        return false;
    }
    size_t len = strlen(eq + 1);
    bool npy = len > 4 && strcmp(eq + 1 + len - 4, ".npy") == 0;
    in->name = spec->name;
    in->tensor = npy ? npy_read(data, n, err, sizeof err) : text_tensor(spec, data, eq + 1);
    if (npy && !in->tensor.id)
        tool_error("%s: %s", eq + 1, err);
    free(data);
    return in->tensor.id != 0;
}

/* After a failed write (errno set to 0 before it): the file, and why. */
static void cannot_write(const char *path)
{
    tool_error("cannot write '%s'%s%s", path, errno ? ": " : "", errno ? strerror(errno) : "");
}

static bool write_output(const char *dir, const ag_named_tensor *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, o->name);
    errno = 0;
    FILE *f = fopen(path, "wb");
    bool ok = f && npy_write(f, o->tensor);
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        cannot_write(path);
    return ok;
}

static int run(ag_saved_model *m, const char *sig, const char *const *inputs, int n_inputs,
               const char *out_dir)
{
    const ag_signature_def *s = ag_model_signature_at((ag_loc){0}, m, sig);
    if (!s)
        return 1;
    ag_named_tensor *in = calloc((size_t)n_inputs + 1, sizeof *in);
    ag_named_tensor *out = calloc((size_t)s->n_outputs + 1, sizeof *out);
    bool ok = true;
    for (int i = 0; ok && i < n_inputs; i++)
        ok = read_input(s, inputs[i], &in[i]);
    ok = ok && ag_model_call_at((ag_loc){0}, m, sig, in, n_inputs, out, s->n_outputs);
    for (int i = 0; ok && i < s->n_outputs; i++) {
        printf("%s: ", out[i].name);
        fflush(stdout);
        ag_print_at((ag_loc){0}, 1, (const ag_print_arg[]){AG__PRINT_ARG(out[i].tensor)});
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
    errno = 0;
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        cannot_write(path);
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
        tool_error("the function name '%s' and the signature's input and output names must "
                   "be C identifiers (use --name)", name);
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
        tool_error("function '%s' is placed on '%s'; aot compiles for the CPU", f->name,
                   f->target);
        return false;
    }
    if (!sm_request(m, fi, PL_OPTIMIZED, &r, &bf16, err, sizeof err) ||
        !sm_freeze_variables(r.graph, err, sizeof err)) {
        if (r.graph)
            ir_function_free(r.graph);
        tool_error("%s", err);
        return false;
    }
    r.target = tgt_find("cpu");
    r.strict = true;
    return pl_run(&r, res);
}

/* The object for the CPU and triple the settings name (--cpu and
 * --target-triple are flags of them), which the cpu target reads. */
static int aot(ag_saved_model *m, const aot_args *a)
{
    const ag_signature_def *s = ag_model_signature_at((ag_loc){0}, m, a->sig);
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
    tgt_options o = {0};
    char *obj = NULL, err[1024];
    size_t len = 0;
    bool ok = pl_emit(tgt_find("cpu"), &fn, 1, &o, TGT_EMIT_OBJECT, &obj, &len, err, sizeof err);
    if (!ok)
        tool_error("%s", err);
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
    tool_error("%s needs a value", flag);
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

/* agc-model dataset: its own command line (below). */
static int dataset_command(int argc, char **argv);

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
    tool_set_name("agc-model");
    if (strcmp(argv[1], "dataset") == 0)
        return dataset_command(argc, argv);
    cli c = {.command = argv[1]};
    if (strcmp(c.command, "show") && strcmp(c.command, "run") && strcmp(c.command, "aot") &&
        strcmp(c.command, "--print-config"))
        return bad_usage("unknown command '%s' (show, run, aot, dataset)", c.command);
    int status = parse_cli(argc, argv, &c);
    if (status == 0)
        apply_flags(&c);
    if (status == 0 && c.print_config) {
        status = print_config();
    } else if (status == 0) {
        ag_set_error_mode(AG_ERRORS_RETURN);
        ag_saved_model *m = ag_saved_model_load_at((ag_loc){0}, c.dir);
        if (!m)
            status = 1;
        else if (strcmp(c.command, "show") == 0)
            status = show(m);
        else if (strcmp(c.command, "run") == 0)
            status = run(m, c.sig, c.inputs, c.n_inputs, c.out_dir);
        else
            status = aot(m, &c.aot);
    }
    if (status == 1)
        tool_report_last_error();
    free(c.inputs);
    ag_shutdown();
    return status;
}

/* --------------------------------------------------------------- dataset */

/*
 * agc-model dataset OUT.tfrecord --input NAME=FILE.npy...
 * agc-model dataset --show FILE.tfrecord [--model DIR --signature S]
 *
 * Writes a representative data set (docs/quantization.md) from .npy
 * files, sample i of each input being its row i (the leading dimension
 * counts the samples), or shows one, checked against a signature when a
 * model is given. Its own flags: the saved-model commands' do not apply.
 */
typedef struct dataset_args {
    const char *file, *model, *sig;
    bool show;
    const char **inputs;
    int n_inputs;
} dataset_args;

static int dataset_flag(int argc, char **argv, int *i, dataset_args *a)
{
    const char *arg = argv[*i];
    const char *flag = is_flag(arg, "--model")       ? "--model"
                       : is_flag(arg, "--signature") ? "--signature"
                       : is_flag(arg, "--input")     ? "--input"
                                                     : NULL;
    const char *v;
    if (strcmp(arg, "--show") == 0) {
        a->show = true;
        return 0;
    }
    if (!flag)
        return bad_usage("dataset: unknown option '%s'", arg);
    if (!(v = value_of(argc, argv, i, flag)))
        return 2;
    if (flag[2] == 'i')
        a->inputs[a->n_inputs++] = v;
    else
        *(flag[2] == 'm' ? &a->model : &a->sig) = v;
    return 0;
}

static int dataset_cli(int argc, char **argv, dataset_args *a)
{
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-') {
            int status = dataset_flag(argc, argv, &i, a);
            if (status)
                return status;
        } else if (a->file) {
            return bad_usage("dataset: one data set file only; '%s' is one too many", argv[i]);
        } else {
            a->file = argv[i];
        }
    }
    if (!a->file)
        return bad_usage("%s", "dataset: which file? give the data set's path");
    if (a->show && a->n_inputs)
        return bad_usage("%s", "dataset: --show reads a data set; --input makes one");
    if (!a->show && !a->n_inputs)
        return bad_usage("%s", "dataset: give each input as --input NAME=FILE.npy");
    if ((a->model != NULL) != (a->sig != NULL) || (a->model && !a->show))
        return bad_usage("%s", "dataset: --show checks against --model DIR --signature NAME "
                               "(both)");
    return 0;
}

/* One --input NAME=FILE.npy: its name and the tensor of every sample. */
static bool dataset_input(const char *arg, const char *out, ag_named_tensor *in)
{
    const char *eq = strchr(arg, '='), *path = eq ? eq + 1 : "";
    size_t len = strlen(path), n;
    char err[512];
    if (!eq || eq == arg || len < 5 || strcmp(path + len - 4, ".npy") != 0) {
        fprintf(stderr, "agc-model: error: dataset: --input wants NAME=FILE.npy, not '%s'\n", arg);
        return false;
    }
    if (sf_same_file(path, out)) {
        fprintf(stderr, "agc-model: error: dataset: '%s' is an input; write the data set elsewhere\n",
                out);
        return false;
    }
    char *data = sf_read_regular(path, "the input", (size_t)1 << 34, &n, err, sizeof err);
    in->tensor = data ? npy_read(data, n, err, sizeof err) : (ag_tensor){0, 0};
    free(data);
    if (!in->tensor.id)
        fprintf(stderr, "agc-model: error: %s%s%s\n", data ? path : "", data ? ": " : "", err);
    in->name = strndup(arg, (size_t)(eq - arg));
    return in->tensor.id != 0;
}

/* The file of --input NAME=FILE. */
static const char *dataset_path(const char *arg) { return strchr(arg, '=') + 1; }

/* The sample count all the inputs share (their leading dimension); -1
 * after complaining. */
static int64_t dataset_count(const ag_named_tensor *in, int n, const char *const *args)
{
    int64_t count = ag_shape_get(in[0].tensor).rank ? ag_shape_get(in[0].tensor).dims[0] : -1;
    for (int i = 0; i < n; i++) {
        ag_shape s = ag_shape_get(in[i].tensor);
        for (int k = 0; k < i; k++)
            if (strcmp(in[k].name, in[i].name) == 0) {
                fprintf(stderr, "agc-model: error: dataset: input '%s' is given twice\n", in[i].name);
                return -1;
            }
        if (s.rank == 0) {
            fprintf(stderr, "agc-model: error: dataset: %s: a scalar, but an input's leading "
                    "dimension counts its samples\n", dataset_path(args[i]));
            return -1;
        }
        if (s.dims[0] != count) {
            fprintf(stderr, "agc-model: error: dataset: %s: %lld samples (its leading dimension), "
                    "but %s has %lld\n", dataset_path(args[i]), (long long)s.dims[0],
                    dataset_path(args[0]), (long long)count);
            return -1;
        }
    }
    return count;
}

/* Row i of t, a tensor of its own. */
static ag_tensor dataset_row(ag_tensor t, int64_t i)
{
    ag_shape s = ag_shape_get(t), row = {s.rank - 1, {0}};
    for (int k = 1; k < s.rank; k++)
        row.dims[k - 1] = s.dims[k];
    size_t bytes = (size_t)(ag_num_elements(t) / s.dims[0]) * rt_dtype_size(ag_dtype_of(t));
    return ag_from_data_at((ag_loc){0}, ag_dtype_of(t), row,
                           (const char *)ag_data_at((ag_loc){0}, t) + (size_t)i * bytes);
}

/* The library's errors name no line of this file: nowhere (the message
 * names the data set). */
static const ag_loc nowhere = {0};

static bool dataset_write(const char *out, ag_named_tensor *in, int n, int64_t count)
{
    ag_dataset_writer *w = ag_dataset_writer_open_at(nowhere, out);
    ag_named_tensor *row = calloc((size_t)n, sizeof *row);
    bool ok = w != NULL;
    for (int64_t s = 0; ok && s < count; s++) {
        ag_scope_push();
        for (int i = 0; i < n; i++)
            row[i] = (ag_named_tensor){in[i].name, dataset_row(in[i].tensor, s)};
        ok = ag_dataset_writer_add_at(nowhere, w, row, n);
        ag_scope_pop_at(nowhere);
    }
    free(row);
    return w && ag_dataset_writer_close_at(nowhere, w) && ok;
}

static int dataset_make(const dataset_args *a)
{
    ag_named_tensor *in = calloc((size_t)a->n_inputs, sizeof *in);
    bool ok = true;
    for (int i = 0; ok && i < a->n_inputs; i++)
        ok = dataset_input(a->inputs[i], a->file, &in[i]);
    int64_t count = ok ? dataset_count(in, a->n_inputs, a->inputs) : -1;
    ok = count >= 0 && dataset_write(a->file, in, a->n_inputs, count);
    if (ok)
        printf("wrote %lld sample%s of %d input%s to %s\n", (long long)count,
               count == 1 ? "" : "s", a->n_inputs, a->n_inputs == 1 ? "" : "s", a->file);
    for (int i = 0; i < a->n_inputs; i++)
        free((char *)in[i].name);
    free(in);
    return ok ? 0 : 1;
}

/* "x f32[?,784], y i32[]": a sample's inputs, into buf. */
static const char *dataset_layout(const sm_sample *s, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n_inputs && at < n; i++) {
        char type[160];
        ag_shape shape = ag_shape_get(s->tensors[i]);
        at += (size_t)snprintf(buf + at, n - at, "%s%s %s", i ? ", " : "", s->names[i],
                               ir_spec_type_str(ag_dtype_of(s->tensors[i]), &shape, type,
                                                sizeof type));
    }
    return s->n_inputs ? buf : "no inputs";
}

/* The samples, a line for each run of samples with the same inputs. */
static void dataset_print(const sm_dataset *ds)
{
    char now[2048], next[2048];
    for (int64_t i = 0, first = 0; i < ds->n_samples; i++) {
        const char *line = dataset_layout(&ds->samples[i], now, sizeof now);
        if (i + 1 < ds->n_samples &&
            strcmp(line, dataset_layout(&ds->samples[i + 1], next, sizeof next)) == 0)
            continue;
        if (first == i)
            printf("  sample %lld: %s\n", (long long)i, line);
        else
            printf("  samples %lld-%lld: %s\n", (long long)first, (long long)i, line);
        first = i + 1;
    }
}

static int dataset_show(const dataset_args *a)
{
    ag_saved_model *m = a->model ? ag_saved_model_load_at(nowhere, a->model) : NULL;
    const ag_signature_def *sig = m ? ag_model_signature_at(nowhere, m, a->sig) : NULL;
    if (a->model && !sig)
        return 1;
    sm_dataset ds;
    char err[1024];
    if (!sm_dataset_read(a->file, sig, &ds, err, sizeof err)) {
        fprintf(stderr, "agc-model: error: %s\n", err);
        return 1;
    }
    printf("data set %s: %lld sample%s\n", a->file, (long long)ds.n_samples,
           ds.n_samples == 1 ? "" : "s");
    dataset_print(&ds);
    if (sig)
        printf("every sample fits the signature '%s' of %s\n", sig->name, a->model);
    sm_dataset_free(&ds);
    return 0;
}

static int dataset_command(int argc, char **argv)
{
    dataset_args a = {.inputs = calloc((size_t)argc, sizeof(const char *))};
    int status = dataset_cli(argc, argv, &a);
    if (status == 0) {
        ag_set_error_mode(AG_ERRORS_RETURN);
        status = a.show ? dataset_show(&a) : dataset_make(&a);
    }
    if (status == 1 && ag_last_error())
        fprintf(stderr, "agc-model: error: %s\n", ag_last_error());
    free(a.inputs);
    ag_shutdown();
    return status;
}
