/*
 * test_files.c - files users name (support/files.h): which file a path
 * is, by identity and not by spelling (file_id.c).
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_spelling_of_a_directory_is_it),
        cmocka_unit_test(test_paths_inside_even_not_yet_made),
        cmocka_unit_test(test_paths_apart),
        cmocka_unit_test(test_the_same_file_existing_or_not),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
