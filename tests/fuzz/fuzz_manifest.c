/*
 * fuzz_manifest.c - libFuzzer target on a saved model's table of contents
 * (model/manifest.c over support/textproto.c): sm_manifest_parse on any
 * bytes must give a manifest or a located error, never a crash, a hang or
 * a leak.
 *
 * A manifest that is accepted must also survive its printing, as
 * ag_saved_model_save writes it: sm_manifest_print's text parses again
 * and prints the same. A difference aborts, which libFuzzer reports.
 * build_and_run.sh builds and runs it, seeded with manifest_seed.pbtxt.
 */
#include "manifest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_to_string(const sm_manifest *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    sm_manifest_print(m, f);
    fclose(f);
    return text;
}

static void check_round_trip(const sm_manifest *m, sm_manifest *back)
{
    char err[1024];
    char *text = print_to_string(m);
    if (!sm_manifest_parse(text, "printed", back, err, sizeof err)) {
        fprintf(stderr, "fuzz_manifest: the printed manifest does not parse: %s\n%s", err,
                text);
        abort();
    }
    char *again = print_to_string(back);
    if (strcmp(text, again) != 0) {
        fprintf(stderr, "fuzz_manifest: printing changed after a round trip:\n%s---\n%s",
                text, again);
        abort();
    }
    free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a manifest has fixed capacities (megabytes): on the heap */
    static sm_manifest *m, *back;
    if (!m) {
        m = malloc(sizeof *m);
        back = malloc(sizeof *back);
        if (!m || !back)
            abort();
    }
    char *text = malloc(size + 1); /* the reader takes a C string */
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    char err[1024];
    bool ok = sm_manifest_parse(text, "fuzz.pbtxt", m, err, sizeof err);
    free(text);
    if (ok)
        check_round_trip(m, back);
    return 0;
}
