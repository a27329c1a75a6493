/*
 * fuzz_ir.c - libFuzzer target on the IR's text form (ir/parse.c), as
 * agc-opt reads it: ir_parse, then ir_verify on what parsed.
 *
 * Besides "never crash, hang or leak", a function that parses and
 * verifies must survive its own printing: ir_print's text parses again
 * and prints the same (the property agc-opt's --bf16-report copy and the
 * lit tests rely on). A difference aborts, which libFuzzer reports.
 * build_and_run.sh builds and runs it.
 */
#include "ir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_to_string(const ir_function *fn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    ir_print(fn, f);
    fclose(f);
    return text;
}

/* The printed form of a valid function reads back to the same print. */
static void check_round_trip(const ir_function *fn)
{
    char err[1024];
    char *text = print_to_string(fn);
    ir_function *back = ir_parse(text, "printed.ir", err, sizeof err);
    if (!back) {
        fprintf(stderr, "fuzz_ir: the printed function does not parse: %s\n%s", err, text);
        abort();
    }
    char *again = print_to_string(back);
    if (strcmp(text, again) != 0) {
        fprintf(stderr, "fuzz_ir: printing changed after a round trip:\n%s---\n%s", text, again);
        abort();
    }
    free(again);
    free(text);
    ir_function_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* ir_parse reads a C string */
    memcpy(text, data, size);
    text[size] = '\0';
    char err[1024];
    ir_function *fn = ir_parse(text, "fuzz.ir", err, sizeof err);
    free(text);
    if (!fn)
        return 0;
    if (ir_verify(fn, err, sizeof err))
        check_round_trip(fn);
    ir_function_free(fn);
    return 0;
}
