/*
 * agc-convert - the inference converter (docs/converter.md):
 *
 *   agc-convert --input_model_dir=IN --output_model_dir=OUT \
 *               [--converter_options_string='TEXT' | --converter_options=FILE]
 *
 * Reads the saved model IN, applies the options (protobuf text format,
 * docs/converter-options.md), writes the converted model to OUT and
 * prints the conversion report. Exit status: 0 converted, 1 the model or
 * the options are wrong (nothing is written), 2 a bad command line (an
 * output that is the input, in it or holds it, by identity, included).
 *
 *   agc-convert --print-config
 *
 * prints the settings a conversion uses (runtime/core/config.def; its
 * own flags are none of them: the converter's options are the model's).
 *
 *   agc-convert --print-topology=2x2
 *
 * prints the serialized TopologyProto of a slice as an escaped string,
 * to paste after `topology:` in xla_sharding_options.
 */
#include "convert.h"
#include "textproto.h"
#include "tool_diag.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: agc-convert --input_model_dir=DIR --output_model_dir=DIR\n"
    "                   [--converter_options_string=TEXT | --converter_options=FILE]\n"
    "       agc-convert --print-config\n"
    "       agc-convert --print-topology=SLICE\n"
    "\n"
    "  --input_model_dir     the saved model to convert (ag_saved_model_save wrote it)\n"
    "  --output_model_dir    where the converted model goes (a new directory, or a model\n"
    "                        to replace); the input is never changed\n"
    "  --converter_options_string  ConverterOptions in protobuf text format, e.g.\n"
    "                        'tpu_functions { function_alias: \"tpu_func\" }'\n"
    "  --converter_options   the same, from a file\n"
    "  --print-config        print every setting (target, device_spec, ...), its value\n"
    "                        and where it came from (default, environment), then exit\n"
    "  --print-topology=SLICE  print the serialized TopologyProto of a slice of chips\n"
    "                        (\"2x2\", \"2x4\", AxB or AxBxC) as an escaped string, for\n"
    "                        xla_sharding_options { topology: ... }, then exit\n"
    "\n"
    "docs/converter.md walks through a conversion; docs/converter-options.md lists\n"
    "every option.\n";

typedef struct cli {
    const char *in, *out, *text, *file;
} cli;

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "agc-convert: error: %s%s%s\n%s", what, arg ? arg : "", arg ? "'" : "",
            usage);
    return 2;
}

static int parse_cli(int argc, char **argv, cli *c)
{
    static const struct {
        const char *flag;
        size_t offset;
    } flags[] = {
        {"--input_model_dir", offsetof(cli, in)},
        {"--output_model_dir", offsetof(cli, out)},
        {"--converter_options_string", offsetof(cli, text)},
        {"--converter_options", offsetof(cli, file)},
    };
    for (int i = 1; i < argc; i++) {
        bool known = false;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !known; k++) {
            size_t n = strlen(flags[k].flag);
            if (strncmp(argv[i], flags[k].flag, n) != 0 || (argv[i][n] && argv[i][n] != '='))
                continue;
            known = true;
            const char *v = argv[i][n] == '=' ? argv[i] + n + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!v)
                return bad_usage("a value is missing after ", flags[k].flag);
            *(const char **)((char *)c + flags[k].offset) = v;
        }
        if (!known)
            return bad_usage("unknown argument '", argv[i]);
    }
    if (!c->in || !c->out)
        return bad_usage("both --input_model_dir and --output_model_dir are needed", NULL);
    if (c->text && c->file)
        return bad_usage("give the options as a string or a file, not both", NULL);
    char err[2 * 4096 + 256];
    if (!cv_check_output_dir(c->in, c->out, err, sizeof err)) {
        tool_error("%s", err);
        return 2;
    }
    return 0;
}

static bool read_options(const cli *c, cv_options *o, const char **source)
{
    char err[1024];
    bool ok;
    if (c->file) {
        *source = c->file;
        ok = cv_options_read_file(c->file, o, err, sizeof err);
    } else {
        *source = "<converter_options_string>";
        ok = cv_options_parse(c->text ? c->text : "", *source, o, err, sizeof err);
    }
    if (!ok)
        tool_error("%s", err);
    return ok;
}

/* --print-topology=SLICE: the bytes escaped as the text format reads
 * them, ready to paste; 2 for a slice that names no grid of chips. */
static int print_topology(const char *slice)
{
    size_t n = ag_tpu_topology_serialize(slice, NULL, 0);
    if (!n)
        return bad_usage("--print-topology needs a slice's grid of chips, AxB or AxBxC of at "
                         "most 256, like 2x2; got '", slice);
    char *bytes = malloc(n);
    ag_tpu_topology_serialize(slice, bytes, n);
    tp_print_bytes(stdout, bytes, n);
    putchar('\n');
    free(bytes);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("agc-convert (agc) %s\n", AG_VERSION);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--print-config") == 0) {
        const rt_config *cfg = rt_config_get();
        rt_config_print(cfg, stdout);
        rt_config_release(cfg);
        return 0;
    }
    tool_set_name("agc-convert");
    if (argc == 2 && strncmp(argv[1], "--print-topology=", 17) == 0)
        return print_topology(argv[1] + 17);
    cli c = {0};
    int status = parse_cli(argc, argv, &c);
    if (status)
        return status;
    cv_options *o = calloc(1, sizeof *o);
    const char *source = NULL;
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_saved_model *m = NULL;
    status = 1;
    if (read_options(&c, o, &source) && (m = ag_saved_model_load_at((ag_loc){0}, c.in)) &&
        cv_convert(m, o, source, c.out, stdout, NULL))
        status = 0;
    if (status)
        tool_report_last_error();
    free(o);
    ag_shutdown();
    return status;
}
