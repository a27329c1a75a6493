/*
 * fuzz_agc.c - libFuzzer target on agc's conversion (frontend/convert.c).
 *
 * Each input is a C file, given to fe_convert in memory (libclang sees it
 * as an unsaved file). The output is discarded and diagnostics go to
 * /dev/null: what is checked is that agc never crashes, hangs or leaks,
 * whatever the bytes. build_and_run.sh builds and runs it.
 */
#include "fe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_INCLUDE_DIR
#define FUZZ_INCLUDE_DIR "."
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *null_stream;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    null_stream = fopen("/dev/null", "w");
    if (!null_stream) {
        perror("fuzz_agc: /dev/null");
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* e2e.h, which the seeds from tests/e2e include. */
    static const char *args[] = {"-I", FUZZ_INCLUDE_DIR};
    fe_options opt = {
        .input = "fuzz.c",
        .output = "fuzz.ag.c",
        .contents = size ? (const char *)data : "", /* never NULL: NULL reads the file */
        .contents_len = size,
        .clang_args = args,
        .n_clang_args = 2,
        .diag = null_stream,
        .md = true, /* the dependency file's text too */
        .mp = true,
    };
    fe_result res;
    if (fe_convert(&opt, &res) == 0)
        fe_result_free(&res);
    return 0;
}
