/*
 * test_files.c - files users name (support/files.h): which file a path
 * is, by identity and not by spelling (file_id.c); reading one that
 * must be a regular file of bounded size, without blocking (file_read.c).
 */
#include "test_util.h"

#include "files.h"

#include <sys/stat.h>
#include <unistd.h>

static char root[256], in[300];

static int setup_group(void **state)
{
    (void)state;
    if (!tu_temp_dir(root, sizeof root, "ag-files") || chdir(root) != 0)
        return -1;
    snprintf(in, sizeof in, "%s/in", root);
    bool ok = mkdir("in", 0777) == 0 && mkdir("in/sub", 0777) == 0 &&
              mkdir("other", 0777) == 0 && symlink("in", "link") == 0 &&
              symlink("../in/sub", "other/to_sub") == 0;
    FILE *f = fopen("in/file", "w");
    ok = ok && f && fputs("x", f) >= 0;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

static int teardown_group(void **state)
{
    (void)state;
    tu_remove_dir(root);
    return 0;
}

static void test_every_spelling_of_a_directory_is_it(void **state)
{
    (void)state;
    const char *same[] = {"in", "./in", "in/", "./in/", "in//", "link", "link/",
                          "other/../in", "in/sub/..", in};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        print_message("%s\n", same[i]);
        assert_int_equal(sf_place_of(same[i], "in"), SF_SAME);
        assert_int_equal(sf_place_of("in", same[i]), SF_SAME);
    }
}

static void test_paths_inside_even_not_yet_made(void **state)
{
    (void)state;
    const char *inside[] = {"in/sub", "./in/sub/", "in/new", "in/new/deeper", "link/new",
                            "other/to_sub/new", "in/file"};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        print_message("%s\n", inside[i]);
        assert_int_equal(sf_place_of(inside[i], "./in/"), SF_INSIDE);
    }
}

static void test_paths_apart(void **state)
{
    (void)state;
    const char *apart[] = {"other", "other/new", "inn", "in.tmp", ".", "/", "missing/x"};
    for (size_t i = 0; i < sizeof apart / sizeof apart[0]; i++) {
        print_message("%s\n", apart[i]);
        assert_int_equal(sf_place_of(apart[i], "in"), SF_APART);
    }
    /* a directory holds the input: the input is inside it, not the reverse */
    assert_int_equal(sf_place_of("in", "."), SF_INSIDE);
    assert_int_equal(sf_place_of("in", "missing"), SF_APART);
}

static void test_the_same_file_existing_or_not(void **state)
{
    (void)state;
    assert_true(sf_same_file("in/file", "./link/file"));
    assert_true(sf_same_file("in/file", "other/../in/sub/../file"));
    assert_false(sf_same_file("in/file", "in/sub"));
    /* neither exists yet: their resolved paths */
    assert_true(sf_same_file("in/x.d", "./link/sub/../x.d"));
    assert_false(sf_same_file("in/x.d", "in/y.d"));
    /* one exists, the other does not */
    assert_false(sf_same_file("in/file", "in/x.d"));
}

static void test_only_regular_files_of_bounded_size_are_read(void **state)
{
    (void)state;
    char err[512];
    size_t n;
    char *text = sf_read_regular("in/file", "the test file", 1, &n, err, sizeof err);
    assert_non_null(text);
    assert_int_equal(n, 1);
    assert_string_equal(text, "x");
    free(text);
    assert_null(sf_read_regular("in/file", "the test file", 0, &n, err, sizeof err));
    assert_string_equal(err, "cannot read the test file 'in/file': it is larger than 0 bytes (1)");
    /* a FIFO with no writer: refused at once, not waited on */
    assert_int_equal(mkfifo("fifo", 0600), 0);
    const char *not_files[] = {"fifo", "/dev/zero", "in"};
    for (size_t i = 0; i < sizeof not_files / sizeof not_files[0]; i++) {
        assert_null(sf_read_regular(not_files[i], NULL, 1 << 20, &n, err, sizeof err));
        assert_non_null(strstr(err, "it is not a regular file"));
        assert_non_null(strstr(err, not_files[i]));
    }
    int64_t size;
    assert_false(sf_regular_size("missing", NULL, &size, err, sizeof err));
    assert_string_equal(err, "missing: cannot open: No such file or directory");
    assert_true(sf_regular_size("link/file", NULL, &size, err, sizeof err));
    assert_int_equal(size, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_spelling_of_a_directory_is_it),
        cmocka_unit_test(test_paths_inside_even_not_yet_made),
        cmocka_unit_test(test_paths_apart),
        cmocka_unit_test(test_the_same_file_existing_or_not),
        cmocka_unit_test(test_only_regular_files_of_bounded_size_are_read),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
