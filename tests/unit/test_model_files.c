/*
 * test_model_files.c - loading a saved model whose files are damaged or
 * are not files (model/load.c): a manifest cut anywhere is reported as
 * truncated; a FIFO is refused without blocking; /dev/zero and a sparse
 * file of gigabytes are refused by their size, without being read.
 *
 * The model is written by sm_write with a manifest of no functions and
 * no variables (variables.bin is its 8-byte magic).
 */
#include "test_util.h"

#include "files.h"
#include "model.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256], dir[300];

static int setup_group(void **state)
{
    (void)state;
    if (!tu_temp_dir(root, sizeof root, "ag-model-files"))
        return -1;
    snprintf(dir, sizeof dir, "%s/model", root);
    return 0;
}

static int teardown_group(void **state)
{
    (void)state;
    tu_remove_dir(root);
    return 0;
}

/* A fresh model at dir, before each test. */
static int fresh_model(void **state)
{
    tu_remove_dir(dir);
    sm_manifest man;
    memset(&man, 0, sizeof man);
    if (!sm_write((ag_loc){0}, dir, &man, NULL, NULL, NULL, 0))
        return -1;
    return tu_setup(state);
}

#define MODEL_TEST(f) cmocka_unit_test_setup_teardown(f, fresh_model, tu_teardown)

static void model_file(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Loads dir, which must fail with `message` in the error. */
static void load_fails_with(const char *message)
{
    ag_clear_error();
    ag_saved_model *m = ag_saved_model_load(dir);
    if (m)
        ag_saved_model_free(m);
    assert_null(m);
    if (!strstr(ag_last_error(), message))
        fail_msg("expected \"%s\" in: %s", message, ag_last_error());
}

static void test_the_model_loads(void **state)
{
    (void)state;
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    ag_saved_model_free(m);
}

/* Cut after any byte, the manifest lacks its last line: the message says
 * so, not a parser error at a line the user never wrote (nor a manifest
 * that reads: "complete: t" is protobuf's true). */
static void test_a_manifest_cut_anywhere_is_truncated(void **state)
{
    (void)state;
    char path[400];
    model_file(path, sizeof path, SM_MANIFEST_FILE);
    size_t n = 0;
    char err[512];
    char *text = sf_read_regular(path, NULL, 1 << 20, &n, err, sizeof err);
    assert_non_null(text);
    size_t last = n - strlen("complete: true\n");
    for (size_t cut = 0; cut < last + strlen("complete: tru"); cut++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(text, 1, cut, f);
        fclose(f);
        load_fails_with("the file is truncated (it does not end with 'complete: true')");
    }
    free(text);
}

/* open() of a FIFO waits for a writer: each file is refused instead. */
static void test_a_fifo_is_refused_without_blocking(void **state)
{
    (void)state;
    static const char *const files[] = {SM_VARIABLES_FILE, SM_MANIFEST_FILE};
    for (int i = 0; i < 2; i++) {
        char path[400];
        model_file(path, sizeof path, files[i]);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0600), 0);
        alarm(10); /* a blocking open fails the test instead of hanging it */
        load_fails_with("not a regular file");
        alarm(0);
    }
}

static void test_a_device_is_refused(void **state)
{
    (void)state;
    char path[400];
    model_file(path, sizeof path, SM_VARIABLES_FILE);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/dev/zero", path), 0);
    load_fails_with("not a regular file");
}

/* 8 GiB with no data on disk: refused by its size, never read. */
static void test_a_huge_sparse_file_is_not_read(void **state)
{
    (void)state;
    char path[400];
    model_file(path, sizeof path, SM_VARIABLES_FILE);
    int fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)8 << 30), 0);
    close(fd);
    load_fails_with("its size is not the manifest's");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MODEL_TEST(test_the_model_loads),
        MODEL_TEST(test_a_manifest_cut_anywhere_is_truncated),
        MODEL_TEST(test_a_fifo_is_refused_without_blocking),
        MODEL_TEST(test_a_device_is_refused),
        MODEL_TEST(test_a_huge_sparse_file_is_not_read),
    };
    int failed = cmocka_run_group_tests(tests, setup_group, teardown_group);
    ag_shutdown();
    return failed;
}
