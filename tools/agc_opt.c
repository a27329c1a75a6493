/*
 * agc-opt - reads a function in the text IR, verifies it, runs passes on
 * it and prints it back, as text IR or as a Graphviz graph (--emit-dot;
 * docs/ir.md, docs/passes.md).
 *
 *   agc-opt [options] [file|-]
 *
 * Exit status: 0 on success, 1 when the input does not parse or verify or
 * a pass fails (the message, "file:line:col: error: ...", goes to stderr),
 * 2 on a bad command line.
 *
 * The flags that are settings (runtime/core/config.def: --target,
 * --passes and -O, --bf16-*) go into the configuration's flag layer, as
 * agc's do; the passes then read one snapshot of it, which
 * --print-config prints and AG_DUMP_IR's dumps record.
 */
#include "files.h"
#include "ir.h"
#include "pass.h"
#include "pipeline.h"
#include "suggest.h"
#include "target.h"
#include "tool_diag.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct options {
    const char *input; /* NULL or "-": stdin */
    bool verify_only;
    bool no_verify;
    const char *passes; /* a pipeline spec (pass.h), or NULL */
    bool print_clusters;
    bool print_memory_plan;
    bool emit_dot; /* Graphviz instead of text IR */
    bool bf16_report; /* compare with the f32 function on sample inputs */
    bool print_config;
    const tgt_target *target; /* whose capabilities the passes plan for */
    /* the settings among the flags (NULL: not given), for the flag layer */
    const char *bf16_filterlist, *bf16_scope, *bf16_elementwise;
    bool bf16_io, bf16_skip_safety_checks;
    pass_options pass;
} options;

static void usage(FILE *out)
{
    fputs("usage: agc-opt [options] [file|-]\n"
          "Reads a function in agc's text IR (stdin if no file or '-'), verifies\n"
          "it, runs the passes asked for and prints it.\n"
          "\n"
          "options:\n"
          "  --verify-only        print nothing when the function is valid\n"
          "  --no-verify          skip the verifier (parse and print only)\n"
          "  --passes=LIST        run passes: names separated by commas, 'default'\n"
          "                       (the pipeline of traced functions), 'none', or\n"
          "                       'fixpoint(a,b,...)' to repeat a list until it\n"
          "                       changes nothing\n"
          "  -O                   the same as --passes=default\n"
          "  --list-passes        list the passes and what each does\n"
          "  --print-after-all    print the function after every pass (stderr)\n"
          "  --print-after=LIST   print it after the passes named (stderr)\n"
          "  --verify-each        verify after every pass (default in debug builds)\n"
          "  --no-verify-each     do not\n"
          "  --fast-math          let simplify and cse ignore NaN, infinities and\n"
          "                       signed zeros\n"
          "  --target=NAME        plan for target NAME (default: cpu; --list-targets)\n"
          "  --list-targets       list the targets and exit\n"
          "  --print-clusters     after the function, list the fusion plan's loops\n"
          "  --bf16-filterlist=OPS  ops the bf16 pass keeps in f32 (comma-separated)\n"
          "  --bf16-scope=all|tpu   convert the whole function or its TPU nodes only\n"
          "  --bf16-io            also make the function's f32 inputs and outputs bf16\n"
          "  --bf16-elementwise=f32|bf16  elementwise ops compute in f32 between bf16\n"
          "                       values (default), or in bf16, rounding each result\n"
          "  --bf16-skip-safety-checks  convert a function that already computes in bf16\n"
          "  --bf16-report        after the passes, compare with the function before\n"
          "                       them on sample inputs (uniform in [-1, 1], fixed seed):\n"
          "                       error per output and the op where it grows most\n"
          "  --print-memory-plan  after the function, print the memory plan\n"
          "  --emit-dot           print the function (after the passes) as a\n"
          "                       Graphviz dot graph instead of text IR\n"
          "  --print-config       print every setting (target, passes, bf16_*, ...), its\n"
          "                       value and where it came from (default, environment,\n"
          "                       flag), then exit; the flags before it show as flag\n"
          "  --help               show this help\n"
          "  --version            show the version\n",
          out);
}

/* "--name=value": the value, or NULL if `a` is not that option. */
static const char *option_value(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && a[n] == '=' ? a + n + 1 : NULL;
}

/* Every name of a comma-separated list is a pass. */
static bool known_passes(const char *list)
{
    char name[64];
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        if (!pass_find(name)) {
            tool_error("--print-after: unknown pass '%s'", name);
            return false;
        }
        p += len + (p[len] == ',');
    }
    return true;
}

/* Options that take no value and only set a flag. */
static bool flag_option(const char *a, options *o)
{
    static const struct {
        const char *name;
        size_t offset;
        bool value;
    } flags[] = {
        {"--verify-only", offsetof(options, verify_only), true},
        {"--no-verify", offsetof(options, no_verify), true},
        {"--print-clusters", offsetof(options, print_clusters), true},
        {"--print-memory-plan", offsetof(options, print_memory_plan), true},
        {"--emit-dot", offsetof(options, emit_dot), true},
        {"--bf16-report", offsetof(options, bf16_report), true},
        {"--print-config", offsetof(options, print_config), true},
        {"--bf16-io", offsetof(options, bf16_io), true},
        {"--bf16-skip-safety-checks", offsetof(options, bf16_skip_safety_checks), true},
        {"--print-after-all", offsetof(options, pass.print_after_all), true},
        {"--verify-each", offsetof(options, pass.verify_each), true},
        {"--no-verify-each", offsetof(options, pass.verify_each), false},
        {"--fast-math", offsetof(options, pass.fast_math), true},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (strcmp(a, flags[i].name) == 0) {
            *(bool *)((char *)o + flags[i].offset) = flags[i].value;
            return true;
        }
    }
    return false;
}

/* Options with a value; 0 if `a` is none of them, 1 if taken, 3 if bad. */
static int value_option(const char *a, options *o)
{
    const char *v;
    char err[512];
    if (strcmp(a, "-O") == 0) {
        o->passes = "default";
    } else if ((v = option_value(a, "--passes"))) {
        if (!pass_check_spec(v, err, sizeof err)) {
            tool_error("--passes=%s: %s", v, err);
            return 3;
        }
        o->passes = v;
    } else if ((v = option_value(a, "--target"))) {
        if (!(o->target = tgt_find(v))) {
            char names[256], hint[160];
            tool_error("--target=%s: no such target; the targets are %s%s", v,
                       tgt_names(names, sizeof names),
                       sg_did_you_mean(tgt_suggest(v), hint, sizeof hint));
            return 3;
        }
    } else if ((v = option_value(a, "--bf16-filterlist"))) {
        o->bf16_filterlist = v;
    } else if ((v = option_value(a, "--bf16-scope"))) {
        if (strcmp(v, "all") != 0 && strcmp(v, "tpu") != 0) {
            tool_error("--bf16-scope=%s: the scopes are all and tpu", v);
            return 3;
        }
        o->bf16_scope = v;
    } else if ((v = option_value(a, "--bf16-elementwise"))) {
        if (strcmp(v, "f32") != 0 && strcmp(v, "bf16") != 0) {
            tool_error("--bf16-elementwise=%s: elementwise ops compute in f32 "
                            "(between bf16 loads and stores) or bf16 (rounding each result)",
                    v);
            return 3;
        }
        o->bf16_elementwise = v;
    } else if ((v = option_value(a, "--print-after"))) {
        if (!known_passes(v))
            return 3;
        snprintf(o->pass.print_after, sizeof o->pass.print_after, "%s", v);
    } else {
        return 0;
    }
    return 1;
}

/* 0 to go on, else the exit status + 1 (so that 0 means "continue"). */
static int parse_args(int argc, char **argv, options *o)
{
    pass_options_init(&o->pass);
    o->pass.strict = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int taken;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--version") == 0) {
            printf("agc-opt (agc) %s\n", AG_VERSION);
            return 1;
        } else if (strcmp(a, "--list-targets") == 0) {
            for (int t = 0; tgt_at(t); t++)
                printf("  %-10s %s\n", tgt_at(t)->name, tgt_at(t)->summary);
            return 1;
        } else if (strcmp(a, "--list-passes") == 0) {
            pass_list(stdout);
            return 1;
        } else if (flag_option(a, o)) {
            continue;
        } else if ((taken = value_option(a, o)) != 0) {
            if (taken == 3)
                return 3;
        } else if (a[0] == '-' && a[1] != '\0') {
            tool_error("unknown option '%s'", a);
            usage(stderr);
            return 3;
        } else if (o->input) {
            tool_error("more than one input file ('%s' and '%s')", o->input, a);
            usage(stderr);
            return 3;
        } else {
            o->input = a;
        }
    }
    if (o->verify_only && o->no_verify) {
        tool_error("--verify-only and --no-verify exclude each other");
        return 3;
    }
    return 0;
}

static void set_flag(rt_config_id id, const char *value)
{
    if (value)
        rt_config_set_flag(id, value);
}

/* The flags that are settings, into the configuration's flag layer. */
static void apply_flags(const options *o)
{
    set_flag(RT_CFG_TARGET, o->target ? o->target->name : NULL);
    set_flag(RT_CFG_PASSES, o->passes);
    set_flag(RT_CFG_BF16_FILTERLIST, o->bf16_filterlist);
    set_flag(RT_CFG_BF16_SCOPE, o->bf16_scope);
    set_flag(RT_CFG_BF16_ELEMENTWISE, o->bf16_elementwise);
    set_flag(RT_CFG_BF16_IO, o->bf16_io ? "1" : NULL);
    set_flag(RT_CFG_BF16_SKIP_SAFETY_CHECKS, o->bf16_skip_safety_checks ? "1" : NULL);
}

/* What the passes run with, from the snapshot c: its target (cpu when
 * unset) and bf16 options. */
static void take_config(options *o, const rt_config *c)
{
    const char *target = rt_config_str(c, RT_CFG_TARGET);
    o->target = tgt_find(target && *target ? target : "cpu");
    o->pass.config = c;
    o->pass.bf16 = pl_bf16_from_config(c);
}

/* The largest input file read (a function's text IR, as in a saved model). */
enum { INPUT_MAX_BYTES = 1 << 30 };

/* buf, unless it holds a NUL byte (then freed; NULL, reported). */
static char *text_only(char *buf, size_t len, const char *name)
{
    if (!memchr(buf, '\0', len))
        return buf;
    fprintf(stderr, "%s: error: the input contains a NUL byte\n", name);
    free(buf);
    return NULL;
}

/* The whole stream as a NUL-terminated string; NULL (reported) on error. */
static char *read_all(FILE *f, const char *name)
{
    size_t len = 0, cap = 4096;
    char *buf = rt_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0)
            buf = rt_xrealloc(buf, cap *= 2);
    }
    if (ferror(f)) {
        tool_error("cannot read %s", name);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return text_only(buf, len, name);
}

static char *read_input(const char *path, const char **name)
{
    if (!path || strcmp(path, "-") == 0) {
        *name = "<stdin>";
        return read_all(stdin, *name);
    }
    *name = path;
    /* a regular file only, of a bounded size: a FIFO or /dev/zero would
     * block or grow without end */
    char err[PATH_MAX + 256];
    size_t len;
    char *text = sf_read_regular(path, "the input", INPUT_MAX_BYTES, &len, err, sizeof err);
    if (!text && access(path, F_OK) != 0)
        tool_error("cannot open '%s': %s", path, strerror(errno));
    else if (!text)
        tool_error("%s", err);
    return text ? text_only(text, len, path) : NULL;
}

/* After a parse error "name:line:col: error: ...", shows that source line
 * and a caret under the column. */
static void show_caret(const char *text, const char *name, const char *err)
{
    size_t n = strlen(name);
    if (strncmp(err, name, n) != 0 || err[n] != ':')
        return;
    char *end;
    long line = strtol(err + n + 1, &end, 10);
    long col = *end == ':' ? strtol(end + 1, &end, 10) : 0;
    if (line < 1 || col < 1)
        return;
    const char *s = text;
    for (long i = 1; i < line; i++) {
        s = strchr(s, '\n');
        if (!s)
            return;
        s++;
    }
    int len = (int)strcspn(s, "\n");
    fprintf(stderr, "%.*s\n", len, s);
    for (long i = 1; i < col && i <= len; i++)
        fputc(s[i - 1] == '\t' ? '\t' : ' ', stderr);
    fputs("^\n", stderr);
}

/* Runs the passes; false after printing why they failed. */
static bool run_passes(ir_function *fn, const options *o, pass_analyses *am)
{
    char err[1024];
    pass_set_options(&o->pass);
    if (!pass_run_with(fn, o->passes, am, NULL)) {
        fprintf(stderr, "%s\n", pass_last_error());
        return false;
    }
    if (!o->no_verify && !ir_verify(fn, err, sizeof err)) {
        fprintf(stderr, "internal error: the function is invalid after the passes: %s\n", err);
        return false;
    }
    return true;
}

/* The function (text IR or dot), then the analyses asked for (as
 * comments, which dot also accepts). */
static void print_output(const ir_function *fn, const options *o, pass_analyses *am)
{
    if (o->emit_dot)
        pass_print_dot(fn, pass_analyses_fusion(am), stdout);
    else
        ir_print(fn, stdout);
    if (o->print_clusters)
        pass_fusion_plan_print(pass_analyses_fusion(am), fn, stdout);
    if (o->print_memory_plan)
        pass_memory_plan_print(pass_analyses_memory(am), fn, stdout);
}

/* Uniform values in [-1, 1] from a fixed seed; integers in [-4, 4]. */
static rt_value *sample(const ir_type *t, uint32_t *seed)
{
    rt_value *v = rt_value_new(t->dtype, &t->shape);
    for (int64_t i = 0; i < v->numel; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        double u = (double)(*seed >> 8) / (double)(1u << 24) * 2 - 1;
        rt_store_f64(v->dtype, v->data, i, rt_is_float(v->dtype) ? u : floor(u * 4.5));
    }
    return v;
}

/* --bf16-report: the optimized function against the one read. */
static bool report_bf16(const ir_function *f32_fn, const ir_function *fn)
{
    const ir_graph *body = f32_fn->body;
    rt_value **in = calloc((size_t)body->n_params + 1, sizeof *in);
    uint32_t seed = 42;
    bool ok = true;
    for (int i = 0; i < body->n_params && ok; i++) {
        const ir_type *t = &body->params[i]->type;
        bool known = t->dtype != RT_LIST && t->shape.rank >= 0;
        for (int d = 0; known && d < t->shape.rank; d++)
            known = t->shape.dims[d] >= 0;
        if (!known) {
            char buf[128];
            tool_error("--bf16-report needs static parameter types; %%%d is %s",
                       body->params[i]->id, ir_type_str(t, buf, sizeof buf));
            ok = false;
        } else {
            in[i] = sample(t, &seed);
        }
    }
    pass_bf16_report rep;
    ok = ok && pass_bf16_report_run(f32_fn, fn, in, body->n_params, &rep);
    if (ok)
        pass_bf16_report_print(&rep, stdout);
    else
        tool_report_last_error();
    for (int i = 0; i < body->n_params; i++)
        rt_value_free(in[i]);
    free(in);
    return ok;
}

/* The function read, verified, optimized and printed; the exit status. */
static int run(options *o);

/* The setting's target does not exist: --target was checked as it was
 * read, so the name came from the environment. */
static void no_target(const char *name)
{
    char names[256], hint[160];
    tool_error("the environment variable AG_TARGET=%s is not a target; the targets are %s%s",
               name, tgt_names(names, sizeof names),
               sg_did_you_mean(tgt_suggest(name), hint, sizeof hint));
}

int main(int argc, char **argv)
{
    tool_set_name("agc-opt");
    options o = {0};
    int stop = parse_args(argc, argv, &o);
    if (stop)
        return stop - 1;
    apply_flags(&o);
    const rt_config *c = rt_config_get();
    int status = 0;
    if (o.print_config) {
        rt_config_print(c, stdout);
    } else {
        take_config(&o, c);
        status = o.target ? run(&o) : 1;
        if (!o.target)
            no_target(rt_config_str(c, RT_CFG_TARGET));
    }
    rt_config_release(c);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}

static int run(options *o)
{
    const char *name;
    char *text = read_input(o->input, &name);
    if (!text)
        return 1;
    char err[1024];
    ir_function *fn = ir_parse(text, name, err, sizeof err);
    if (!fn) {
        fprintf(stderr, "%s\n", err);
        show_caret(text, name, err);
        free(text);
        return 1;
    }
    free(text);
    int status = 0;
    char copy_err[512];
    ir_function *before = o->bf16_report ? ir_copy(fn, copy_err, sizeof copy_err) : NULL;
    pass_analyses *am = pass_analyses_new(fn, &o->target->caps);
    if (!o->no_verify && !ir_verify(fn, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        status = 1;
    } else if (o->passes && !run_passes(fn, o, am)) {
        status = 1;
    } else if (!o->verify_only) {
        print_output(fn, o, am);
        if (o->bf16_report && !report_bf16(before, fn))
            status = 1;
    }
    pass_analyses_free(am);
    if (before)
        ir_function_free(before);
    ir_function_free(fn);
    return status;
}
