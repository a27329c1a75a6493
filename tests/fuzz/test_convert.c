/*
 * test_convert.c - fe_convert (frontend/convert.c) run many times in one
 * process, as the fuzzer runs it: a conversion from memory gives what the
 * same file gives from disk, repeated conversions give the same output,
 * and nothing of a failed conversion (its error count, its files) leaks
 * into the next. Under -DAG_SANITIZE=ON, LeakSanitizer checks that every
 * conversion frees what it made.
 */
#include "fe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TEST_E2E_DIR
#define TEST_E2E_DIR "tests/e2e"
#endif

static int failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static const char *include_args[] = {"-I", TEST_E2E_DIR};

/* Converts input (from `text` when not NULL); the diagnostics go to *diag
 * (heap, the caller's). */
static int convert(const char *input, const char *text, fe_result *res, char **diag)
{
    size_t diag_len;
    FILE *stream = open_memstream(diag, &diag_len);
    fe_options opt = {
        .input = input,
        .output = "out.ag.c",
        .contents = text,
        .contents_len = text ? strlen(text) : 0,
        .clang_args = include_args,
        .n_clang_args = 2,
        .diag = stream,
        .md = true,
    };
    int status = fe_convert(&opt, res);
    fclose(stream);
    return status;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static void same_from_disk_and_memory(void)
{
    const char *path = TEST_E2E_DIR "/nested_loop_exits.c";
    char *text = read_file(path);
    CHECK(text != NULL);
    if (!text)
        return;
    fe_result disk, mem, again;
    char *d1, *d2, *d3;
    CHECK(convert(path, NULL, &disk, &d1) == 0);
    CHECK(convert(path, text, &mem, &d2) == 0);
    CHECK(convert(path, text, &again, &d3) == 0);
    CHECK(disk.output && mem.output && again.output);
    if (disk.output && mem.output && again.output) {
        CHECK(disk.output_len == mem.output_len &&
              memcmp(disk.output, mem.output, disk.output_len) == 0);
        CHECK(mem.output_len == again.output_len &&
              memcmp(mem.output, again.output, mem.output_len) == 0);
        CHECK(strstr(mem.output, "ag_while_at(") != NULL);
    }
    CHECK(disk.deps && strstr(disk.deps, "e2e.h") != NULL);
    CHECK(strcmp(d1, "") == 0 && strcmp(d2, "") == 0 && strcmp(d3, "") == 0);
    fe_result_free(&disk);
    fe_result_free(&mem);
    fe_result_free(&again);
    CHECK(disk.output == NULL && disk.deps == NULL);
    free(d1);
    free(d2);
    free(d3);
    free(text);
}

static void errors_do_not_carry_over(void)
{
    static const char bad[] = "#include <ag.h>\n"
                              "AG_FUNCTION ag_tensor f(ag_tensor x)\n"
                              "{\n"
                              "    int k = 0;\n"
                              "    while (ag_bool(ag_less(x, 3))) {\n"
                              "        k = k + 1;\n"
                              "        x = ag_add(x, 1);\n"
                              "    }\n"
                              "    return ag_add(x, k);\n"
                              "}\n";
    static const char good[] = "#include <ag.h>\n"
                               "AG_FUNCTION ag_tensor g(ag_tensor x)\n"
                               "{\n"
                               "    if (ag_bool(ag_greater(x, 0)))\n"
                               "        x = ag_neg(x);\n"
                               "    return x;\n"
                               "}\n";
    for (int round = 0; round < 3; round++) {
        fe_result res;
        char *diag;
        CHECK(convert("bad.c", bad, &res, &diag) == 1);
        CHECK(res.output == NULL && res.deps == NULL);
        CHECK(strstr(diag, "bad.c:6:9: error: 'k' is a C 'int' assigned inside staged control "
                           "flow") != NULL);
        CHECK(strstr(diag, "\n1 error generated.\n") != NULL);
        free(diag);
        CHECK(convert("good.c", good, &res, &diag) == 0);
        CHECK(res.output && strstr(res.output, "static ag_tensor g__staged(ag_tensor x)"));
        CHECK(res.output && !strstr(res.output, "bad.c"));
        CHECK(strcmp(diag, "") == 0);
        fe_result_free(&res);
        free(diag);
    }
}

static void empty_and_binary_inputs(void)
{
    static const char *inputs[] = {"", "\r", "#", "\0\1\2", "AG_FUNCTION", "{{{{"};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        fe_result res;
        char *diag;
        int status = convert("odd.c", inputs[i], &res, &diag);
        CHECK(status == 0 || status == 1);
        CHECK(status == 0 || strstr(diag, "error") != NULL);
        fe_result_free(&res);
        free(diag);
    }
}

int main(void)
{
    same_from_disk_and_memory();
    errors_do_not_carry_over();
    empty_and_binary_inputs();
    if (failures) {
        fprintf(stderr, "test_convert: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_convert: all checks passed\n");
    return 0;
}
