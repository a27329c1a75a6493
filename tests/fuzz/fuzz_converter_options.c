/*
 * fuzz_converter_options.c - libFuzzer target on the converter's options
 * (converter/options.c over support/textproto.c): cv_options_parse on any
 * bytes must give options or a located error, never a crash, a hang or a
 * leak.
 *
 * Options that are accepted must also survive their printing, as the
 * converted model records them: cv_options_print's text parses again and
 * prints the same. A difference aborts, which libFuzzer reports.
 * build_and_run.sh builds and runs it.
 */
#include "options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_to_string(const cv_options *o)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    cv_options_print(o, f);
    fclose(f);
    return text;
}

static void check_round_trip(const cv_options *o, cv_options *back)
{
    char err[1024];
    char *text = print_to_string(o);
    if (!cv_options_parse(text, "printed", back, err, sizeof err)) {
        fprintf(stderr, "fuzz_converter_options: the printed options do not parse: %s\n%s",
                err, text);
        abort();
    }
    char *again = print_to_string(back);
    if (strcmp(text, again) != 0) {
        fprintf(stderr, "fuzz_converter_options: printing changed after a round trip:\n"
                        "%s---\n%s",
                text, again);
        abort();
    }
    free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the options are large (fixed arrays): on the heap, not the stack */
    static cv_options *o, *back;
    if (!o) {
        o = malloc(sizeof *o);
        back = malloc(sizeof *back);
    }
    char *text = malloc(size + 1); /* the options are a C string */
    memcpy(text, data, size);
    text[size] = '\0';
    char err[1024];
    bool ok = cv_options_parse(text, "fuzz.txtpb", o, err, sizeof err);
    free(text);
    if (ok)
        check_round_trip(o, back);
    return 0;
}
