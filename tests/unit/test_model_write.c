/*
 * test_model_write.c - putting a saved model in place (model/replace.c):
 * only what agc wrote is replaced, the directory holds the old model or
 * the new one at every instant, and the leftovers of saves killed midway
 * are removed by the next save.
 *
 * Saves here are sm_write calls with a manifest of no functions; a file
 * the converter writes (conversion_report.txt) says which save made the
 * model. Saves that die run in a child process that a crash point of
 * replace.c kills.
 */
#include "test_util.h"

#include "model.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256], dir[300];

static int setup_group(void **state)
{
    (void)state;
    if (!tu_temp_dir(root, sizeof root, "ag-model-write"))
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

static int clean(void **state)
{
    tu_remove_dir(dir);
    return tu_setup(state);
}

#define CLEAN_TEST(f) cmocka_unit_test_setup_teardown(f, clean, tu_teardown)

/* A model whose report says `which`. */
static bool save(const char *which)
{
    sm_manifest man;
    memset(&man, 0, sizeof man);
    sm_extra_file report = {SM_REPORT_FILE, which};
    return sm_write((ag_loc){0}, dir, &man, NULL, NULL, &report, 1);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The report of the model at dir ("" when there is no complete model). */
static const char *model_at_dir(void)
{
    static char text[64];
    char path[400];
    text[0] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, SM_MANIFEST_FILE);
    if (access(path, R_OK) != 0)
        return text;
    snprintf(path, sizeof path, "%s/%s", dir, SM_REPORT_FILE);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    return text;
}

/* How many "model.tmp-*" and "model.old-*" are beside dir. */
static int leftovers(void)
{
    DIR *d = opendir(root);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += !strncmp(e->d_name, "model.tmp-", 10) || !strncmp(e->d_name, "model.old-", 10);
    closedir(d);
    return n;
}

static void path_in_model(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* ------------------------------------------- what may be replaced */

/* A TensorFlow SavedModel in text form has a saved_model.pbtxt too. */
static void test_refuses_a_tensorflow_saved_model(void **state)
{
    (void)state;
    char path[400];
    assert_int_equal(mkdir(dir, 0777), 0);
    path_in_model(path, sizeof path, SM_MANIFEST_FILE);
    write_file(path, "saved_model_schema_version: 1\nmeta_graphs {\n}\n");
    path_in_model(path, sizeof path, "variables");
    assert_int_equal(mkdir(path, 0777), 0);
    assert_false(save("new"));
    assert_non_null(strstr(ag_last_error(), "that agc did not write"));
    assert_int_equal(access(path, F_OK), 0); /* variables/ left alone */
    path_in_model(path, sizeof path, SM_MANIFEST_FILE);
    assert_int_equal(access(path, F_OK), 0);
}

/* A user's file inside a model agc wrote: the whole model stays. */
static void test_refuses_a_model_with_files_of_the_user(void **state)
{
    (void)state;
    char path[400];
    assert_true(save("old"));
    path_in_model(path, sizeof path, "notes.txt");
    write_file(path, "mine");
    assert_false(save("new"));
    assert_non_null(strstr(ag_last_error(), "holds 'notes.txt', which agc did not write"));
    assert_int_equal(access(path, F_OK), 0);
    assert_string_equal(model_at_dir(), "old");
    unlink(path);
    path_in_model(path, sizeof path, "functions/notes.txt");
    write_file(path, "mine");
    ag_clear_error();
    assert_false(save("new"));
    assert_non_null(strstr(ag_last_error(), "holds 'functions/notes.txt'"));
    assert_string_equal(model_at_dir(), "old");
}

/* What agc wrote, the converter's files included, is replaced. */
static void test_replaces_what_agc_wrote(void **state)
{
    (void)state;
    char path[400];
    assert_true(save("old"));
    path_in_model(path, sizeof path, SM_CONVERTER_OPTIONS_FILE);
    write_file(path, "");
    assert_true(save("new"));
    assert_string_equal(model_at_dir(), "new");
    assert_int_equal(access(path, F_OK), -1); /* the old model's file went with it */
    assert_int_equal(leftovers(), 0);
}

/* ------------------------------------------------ saves that die */

static const char *kill_at;

static void kill_here(const char *where)
{
    if (!strcmp(where, kill_at))
        raise(SIGKILL);
}

/* A child process saves "new" and is killed at `where`. */
static void save_killed_at(const char *where)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kill_at = where;
        sm_write_crash_point = kill_here;
        save("new");
        _exit(0); /* not killed: the point was never reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_a_killed_save_leaves_a_whole_model(void **state)
{
    (void)state;
    static const char *const points[] = {"before the swap", "after the swap"};
    for (int i = 0; i < 2; i++) {
        assert_true(save("old"));
        save_killed_at(points[i]);
        const char *m = model_at_dir();
        assert_true(!strcmp(m, i == 0 ? "old" : "new"));
        assert_int_equal(leftovers(), 1);
    }
}

/* Many killed saves leave no pile of directories: each save removes every
 * leftover whose process is gone, so only the last killed one's is left,
 * until the next save. */
static void test_the_next_save_removes_leftovers(void **state)
{
    (void)state;
    assert_true(save("old"));
    for (int i = 0; i < 6; i++)
        save_killed_at(i % 2 ? "after the swap" : "before the swap");
    assert_int_equal(leftovers(), 1);
    assert_true(save("last"));
    assert_int_equal(leftovers(), 0);
    assert_string_equal(model_at_dir(), "last");
}

/* Watched from outside while another process saves again and again, dir
 * is a whole model at every look. */
static void test_the_model_is_there_at_every_instant(void **state)
{
    (void)state;
    assert_true(save("old"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 60; i++)
            if (!save(i % 2 ? "old" : "new"))
                _exit(1);
        _exit(0);
    }
    char path[400];
    path_in_model(path, sizeof path, SM_MANIFEST_FILE);
    long looks = 0, missing = 0;
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        missing += access(path, F_OK) != 0;
        looks++;
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(looks > 0);
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CLEAN_TEST(test_refuses_a_tensorflow_saved_model),
        CLEAN_TEST(test_refuses_a_model_with_files_of_the_user),
        CLEAN_TEST(test_replaces_what_agc_wrote),
        CLEAN_TEST(test_a_killed_save_leaves_a_whole_model),
        CLEAN_TEST(test_the_next_save_removes_leftovers),
        CLEAN_TEST(test_the_model_is_there_at_every_instant),
    };
    int failed = cmocka_run_group_tests(tests, setup_group, teardown_group);
    ag_shutdown();
    return failed;
}
