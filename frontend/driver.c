/*
 * driver.c - agc's command line and its pipeline.
 *
 *   agc [options] input.c -o output.ag.c
 *
 * Exit status: 0 on success, 1 on errors in the user's code (or when the
 * output cannot be written, or is the input), 2 on bad usage. The outputs
 * are written all or nothing (files.c), so a failed run never leaves a
 * partial file and never touches an existing one.
 */
#include "build.h"
#include "suggest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: agc [options] input.c -o output.ag.c\n"
    "       agc --emit=obj,header [options] input.c -o output.o\n"
    "       agc --emit=ir|ir-opt|llvm|asm|dot|tpu [--function NAME] [--signature SPEC] input.c\n"
    "\n"
    "Converts the AG_FUNCTIONs of a C file into staged C (AutoGraph for C), or\n"
    "compiles them ahead of time, or shows any stage of their compilation.\n"
    "\n"
    "options:\n"
    "  -o FILE                 write the output to FILE ('-' for stdout, the default\n"
    "                          for --emit=ir, ir-opt, llvm, asm and dot)\n"
    "  --emit=KINDS            what to write (comma-separated):\n"
    "                            c       the staged C (the default)\n"
    "                            obj     an object file of the functions with an\n"
    "                                    AG_SIGNATURE, compiled ahead of time\n"
    "                            header  the header declaring them (with obj: the\n"
    "                                    object's name with .h)\n"
    "                            ir      the traced graph; ir-opt: after the passes\n"
    "                            llvm    the optimized LLVM IR; asm: the assembly\n"
    "                            dot     Graphviz of the optimized graph\n"
    "                            tpu     the TPU program (--target=tpu-model, the\n"
    "                                    default for this kind)\n"
    "  --function NAME         only this AG_FUNCTION\n"
    "  --signature SPEC        trace for SPEC (\"f32[?,10], n=3\") instead of its\n"
    "                          AG_SIGNATURE\n"
    "  --target NAME           the target that compiles: cpu (default), reference or\n"
    "                          tpu-model; plans in ir-opt and dot, code in obj, llvm,\n"
    "                          asm and tpu\n"
    "  --device-spec FILE      the TPU-model's device (default: AG_DEVICE_SPEC, else v5e)\n"
    "  --soft-device-placement run on the host the ops --target=tpu-model lacks\n"
    "                          (print, assert, ...), with explicit transfers\n"
    "  --bf16                  convert the graphs to bfloat16 (as AG_BFLOAT16 and\n"
    "                          AG_BF16=1 do), for ir-opt, dot, obj, llvm, asm and tpu\n"
    "  --target-triple TRIPLE  compile for TRIPLE (x86_64-linux-gnu, aarch64-linux-gnu)\n"
    "  --cpu CPU               compile for CPU (default: this machine's, or generic)\n"
    "  -p BUILD_DIR            take the input's flags (-I, -D, -std=...) from\n"
    "                          BUILD_DIR/compile_commands.json; other flags add to them\n"
    "  -I DIR, -isystem DIR    add an include directory (also -iquote, -idirafter)\n"
    "  -D NAME[=VALUE], -U NAME\n"
    "                          define or undefine a macro\n"
    "  -std=STD                the C standard (default gnu11)\n"
    "  -include FILE           include FILE first\n"
    "  -MD, -MMD               write a Make dependency file (-MMD: without system headers)\n"
    "  -MF FILE                the dependency file (default: the output with .d)\n"
    "  -MT TARGET              the target of the dependency rule (default: the output)\n"
    "  -MP                     add a phony target for each header\n"
    "  -v                      print each step agc takes (and its commands) on stderr\n"
    "  -fcolor-diagnostics, -fno-color-diagnostics\n"
    "                          force colors in diagnostics on or off\n"
    "  -- ARGS                 pass the remaining arguments to libclang\n"
    "  --print-config          print every setting (target, cpu, jit, cache_dir, bf16,\n"
    "                          ...), its value and where it came from (default,\n"
    "                          environment, setter, flag), then exit\n"
    "  --version               print the version\n"
    "  --help                  print this help\n";

FE_PRINTF(1, 2) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "agc: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nusage: agc [options] input.c -o output.ag.c (see agc --help)\n");
    va_end(ap);
    return 2;
}

static bool default_color(void)
{
    const char *term = getenv("TERM");
    return isatty(2) && term && strcmp(term, "dumb") != 0;
}

/* Flags taking a value, glued (-Idir) or separate (-I dir). */
static const char *const value_flags[] = {"-I",      "-D",         "-U",       "-isystem",
                                          "-iquote", "-idirafter", "-include", NULL};

/* Parses argv; returns 0 when done, 1 when --help/--version printed,
 * 2 on bad usage. */
/* The options of build.h: --emit=, --function, --signature, --target,
 * --target-triple, --cpu (glued with '=' or separate). 1 when argv[*i]
 * was one, 0 when not, 2 on bad usage. */
static int parse_build_arg(int argc, char **argv, int *i, fe_build_options *b)
{
    static const char *const names[] = {"--emit",          "--function", "--signature",
                                        "--target-triple", "--cpu",      "--target",
                                        "--device-spec",   NULL};
    const char *a = argv[*i];
    for (int k = 0; names[k]; k++) {
        size_t n = strlen(names[k]);
        if (strncmp(a, names[k], n) != 0 || (a[n] != '=' && a[n] != '\0'))
            continue;
        const char *v = a[n] == '=' ? a + n + 1 : NULL;
        if (!v && *i + 1 >= argc)
            return usage_error("missing argument to '%s'", names[k]);
        if (!v)
            v = argv[++*i];
        if (k == 0 && !(b->emit = fe_emit_parse(v)))
            return usage_error("unknown --emit kind in '%s' (kinds: c, obj, header, ir, "
                               "ir-opt, llvm, asm, dot, tpu)", v);
        char targets[256], hint[160];
        if (k == 5 && !fe_target_known(v, targets, sizeof targets))
            return usage_error("unknown target '%s' for --target (targets: %s)%s", v, targets,
                               sg_did_you_mean(fe_target_suggest(v), hint, sizeof hint));
        const char **dst[] = {NULL,     &b->function, &b->signature,  &b->triple,
                              &b->cpu, &b->target,   &b->device_spec};
        if (k > 0)
            *dst[k] = v;
        return 1;
    }
    return 0;
}

/* Combinations of --emit that make no sense. */
static int check_emit(const fe_options *opt, const fe_build_options *b)
{
    unsigned e = b->emit;
    unsigned graphs = e & (FE_EMIT_IR | FE_EMIT_IR_OPT | FE_EMIT_DOT | FE_EMIT_TPU);
    unsigned code = e & (FE_EMIT_OBJ | FE_EMIT_LLVM | FE_EMIT_ASM);
    if ((e & FE_EMIT_C) && e != FE_EMIT_C)
        return usage_error("--emit=c cannot be combined with other kinds");
    if ((graphs && (graphs & (graphs - 1))) || (code && (code & (code - 1))) || (graphs && code))
        return usage_error("--emit: one of obj, llvm, asm, ir, ir-opt, dot, tpu at a time (obj "
                           "may come with header)");
    if ((e & FE_EMIT_HEADER) && (graphs || (code && code != FE_EMIT_OBJ)))
        return usage_error("--emit=header goes with obj only");
    if ((e & FE_EMIT_OBJ) && (e & FE_EMIT_HEADER) && strcmp(opt->output, "-") == 0)
        return usage_error("--emit=obj,header needs -o FILE.o (the header is FILE.h)");
    if ((b->triple || b->cpu) && !code)
        return usage_error("--target-triple and --cpu apply to --emit=obj, llvm and asm");
    if (b->target && !code && !(e & (FE_EMIT_IR_OPT | FE_EMIT_DOT | FE_EMIT_TPU)))
        return usage_error("--target applies to --emit=ir-opt, dot, obj, llvm, asm and tpu");
    if ((e & FE_EMIT_TPU) && b->target && !fe_target_prints(b->target))
        return usage_error("--emit=tpu prints the program of --target=tpu-model; the target "
                           "'%s' has none", b->target);
    if (b->bf16 && !code && !(e & (FE_EMIT_IR_OPT | FE_EMIT_DOT | FE_EMIT_TPU)))
        return usage_error("--bf16 applies to --emit=ir-opt, dot, obj, llvm, asm and tpu");
    if (b->device_spec && !(e & (FE_EMIT_IR_OPT | FE_EMIT_DOT | FE_EMIT_TPU)))
        return usage_error("--device-spec applies to --emit=ir-opt, dot and tpu");
    return 0;
}

static int parse_args(int argc, char **argv, fe_options *opt, fe_build_options *b)
{
    memset(opt, 0, sizeof *opt);
    memset(b, 0, sizeof *b);
    bool print_config = false;
    opt->color = default_color();
    opt->clang_args = fe_alloc((size_t)(2 * argc + 1) * sizeof *opt->clang_args);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                opt->clang_args[opt->n_clang_args++] = argv[i];
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            printf("agc %s (AutoGraph for C), built with libclang 19\n", AGC_VERSION_STRING);
            return 1;
        }
        if (strcmp(a, "--print-config") == 0) {
            print_config = true;
            continue;
        }
        if (strcmp(a, "--bf16") == 0 || strcmp(a, "--soft-device-placement") == 0) {
            *(a[2] == 'b' ? &b->bf16 : &b->soft_placement) = true;
            continue;
        }
        if (strcmp(a, "-v") == 0) {
            fe_verbose = true;
            continue;
        }
        int built = parse_build_arg(argc, argv, &i, b);
        if (built == 2)
            return 2;
        if (built)
            continue;
        if (strcmp(a, "-o") == 0 || strcmp(a, "-MF") == 0 || strcmp(a, "-MT") == 0 ||
            strcmp(a, "-p") == 0) {
            if (i + 1 >= argc)
                return usage_error("missing argument to '%s'", a);
            const char **dst = a[1] == 'o'   ? &opt->output
                               : a[1] == 'p' ? &opt->compdb_dir
                               : a[2] == 'F' ? &opt->mf
                                             : &opt->mt;
            *dst = argv[++i];
            continue;
        }
        if (strncmp(a, "-p=", 3) == 0) {
            opt->compdb_dir = a + 3;
            continue;
        }
        if (strncmp(a, "-o", 2) == 0) {
            opt->output = a + 2;
            continue;
        }
        if (strcmp(a, "-MD") == 0 || strcmp(a, "-MMD") == 0) {
            opt->md = true;
            opt->mmd = a[2] == 'M';
            continue;
        }
        if (strcmp(a, "-MP") == 0) {
            opt->mp = true;
            continue;
        }
        if (strcmp(a, "-fcolor-diagnostics") == 0 || strcmp(a, "-fno-color-diagnostics") == 0) {
            opt->color = a[2] == 'c';
            continue;
        }
        if (strncmp(a, "-std=", 5) == 0) {
            opt->clang_args[opt->n_clang_args++] = a;
            continue;
        }
        bool matched = false;
        for (int k = 0; value_flags[k] && !matched; k++) {
            size_t n = strlen(value_flags[k]);
            if (strncmp(a, value_flags[k], n) != 0)
                continue;
            matched = true;
            opt->clang_args[opt->n_clang_args++] = a;
            if (a[n] == '\0') {
                if (i + 1 >= argc)
                    return usage_error("missing argument to '%s'", a);
                opt->clang_args[opt->n_clang_args++] = argv[++i];
            }
        }
        if (matched)
            continue;
        if (a[0] == '-' && a[1] != '\0')
            return usage_error("unknown option '%s'", a);
        if (opt->input)
            return usage_error("more than one input file ('%s')", a);
        opt->input = a;
    }
    if (print_config) {
        fe_build_apply_flags(b);
        fe_print_config(stdout);
        return 1;
    }
    if (!opt->input)
        return usage_error("no input file");
    if (!b->emit)
        b->emit = FE_EMIT_C;
    bool to_stdout = !(b->emit & (FE_EMIT_C | FE_EMIT_OBJ | FE_EMIT_HEADER));
    if (!opt->output && to_stdout)
        opt->output = "-";
    if (!opt->output)
        return usage_error("no output file: use -o FILE (or -o - for stdout)");
    if (check_emit(opt, b))
        return 2;
    if (opt->compdb_dir && !*opt->compdb_dir)
        return usage_error("-p needs a build directory");
    return 0;
}

/* Like gcc ("input file 'x.c' is the same as output file"), agc never
 * writes over its input: not with -o, -MF or the header of --emit; nor
 * two outputs over each other (-MF FILE -o FILE). */
static bool output_is_input(const fe_options *opt, const fe_build_options *b)
{
    const char *outs[3] = {opt->output, NULL, NULL};
    if (opt->md)
        outs[1] = fe_deps_file(opt);
    if (b->emit & FE_EMIT_HEADER)
        outs[2] = fe_header_path(opt, b->emit);
    for (int i = 0; i < 3; i++) {
        if (outs[i] && fe_same_file(opt->input, outs[i])) {
            fe_diag_plain(FE_ERROR, "input file '%s' is the same as output file '%s'",
                          opt->input, outs[i]);
            return true;
        }
    }
    /* the other outputs are compared now; the headers the input reads,
     * once it is parsed (convert.c), before anything is written */
    const char *others[2] = {opt->output, outs[2]};
    return opt->md && !fe_deps_file_apart(opt, others, 2, NULL);
}

/* Converts, then writes the output and the dependency file. */
static int run(const fe_options *opt, const fe_build_options *b)
{
    if (output_is_input(opt, b))
        return 1;
    if (b->emit != FE_EMIT_C)
        return fe_build(opt, b);
    fe_result res;
    if (fe_convert(opt, &res) != 0)
        return 1;
    fe_output outs[2] = {{opt->output, res.output, res.output_len},
                         {res.deps ? fe_deps_file(opt) : NULL, res.deps, res.deps_len}};
    bool ok = fe_write_outputs(outs, res.deps ? 2 : 1);
    fe_result_free(&res);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    fe_options opt;
    fe_build_options b;
    int status = parse_args(argc, argv, &opt, &b);
    if (status == 0)
        status = run(&opt, &b);
    else if (status == 1)
        status = 0;
    fe_arena_free();
    return status;
}
