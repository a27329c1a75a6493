/*
 * test_suggest.c - "did you mean": the edit distance and when a name is
 * close enough to suggest (support/suggest.h), and the messages that use
 * it: unknown option fields and enum values (support/textproto.c), dtypes,
 * targets, a saved model's signatures, and the target named by the
 * environment, which is at no line of the program.
 */
#include "test_util.h"

#include "options.h"
#include "pipeline.h"
#include "signature.h"
#include "suggest.h"
#include "target.h"

#include <stdlib.h>

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(sg_distance("", ""), 0);
    assert_int_equal(sg_distance("abc", ""), 3);
    assert_int_equal(sg_distance("", "abc"), 3);
    assert_int_equal(sg_distance("kitten", "sitting"), 3);
    assert_int_equal(sg_distance("function_alia", "function_alias"), 1); /* insertion */
    assert_int_equal(sg_distance("sreving", "serving"), 1);            /* a swap */
    assert_int_equal(sg_distance("f33", "f32"), 1);                    /* substitution */
    assert_int_equal(sg_distance("cpu", "gpu"), 1);
    assert_int_equal(sg_distance("same", "same"), 0);
}

/* Suggested only within a third of the typed length, the nearest first,
 * the earlier on a tie, never the typed name itself. */
static void test_only_close_names(void **state)
{
    (void)state;
    const char *targets[] = {"reference", "cpu", "tpu-model"};
    assert_string_equal(sg_suggest("cpx", targets, 3), "cpu");
    assert_string_equal(sg_suggest("tpu-modl", targets, 3), "tpu-model");
    assert_string_equal(sg_suggest("refrence", targets, 3), "reference");
    assert_null(sg_suggest("gpu", (const char *[]){"reference", "tpu-model"}, 2));
    assert_null(sg_suggest("nosuch", targets, 3));
    assert_null(sg_suggest("x", targets, 3)); /* one letter: one edit is too many */
    const char *near[] = {"ab", "abc"};
    assert_string_equal(sg_suggest("abcd", near, 2), "abc"); /* 1 edit beats 2 */
    assert_string_equal(sg_suggest("abd", near, 2), "ab");   /* 1 and 1: the first */
    const char *self[] = {"cpu"};
    assert_null(sg_suggest("cpu", self, 1));
    char buf[64];
    assert_string_equal(sg_did_you_mean("cpu", buf, sizeof buf), "; did you mean 'cpu'?");
    assert_string_equal(sg_did_you_mean(NULL, buf, sizeof buf), "");
}

static void test_dtypes_and_targets(void **state)
{
    (void)state;
    assert_string_equal(rt_dtype_suggest("f33"), "f32");
    assert_string_equal(rt_dtype_suggest("fp32"), "f32");
    assert_string_equal(rt_dtype_suggest("int64"), "i64");
    assert_null(rt_dtype_suggest("complex"));
    assert_string_equal(tgt_suggest("cpx"), "cpu");
    assert_string_equal(tgt_suggest("gpu"), "cpu"); /* one letter of three */
    assert_null(tgt_suggest("metal"));
    ir_spec spec;
    char err[256];
    assert_false(ir_spec_parse("f33[2]", &spec, err, sizeof err));
    assert_non_null(strstr(err, "unknown dtype 'f33'"));
    assert_non_null(strstr(err, "; did you mean 'f32'?"));
}

static void expect_options_error(const char *text, const char *want)
{
    cv_options *o = malloc(sizeof *o);
    char err[512];
    assert_false(cv_options_parse(text, "opts.txt", o, err, sizeof err));
    if (!strstr(err, want))
        fail_msg("expected \"%s\" in \"%s\"", want, err);
    free(o);
}

static void test_option_fields_and_values(void **state)
{
    (void)state;
    expect_options_error("tpu_functions { functon_alias: \"f\" }",
                         "unknown field 'functon_alias' in TpuFunction; did you mean "
                         "'function_alias'?");
    expect_options_error("bfloat16_optimization: ENABLD",
                         "(one of DEFAULT, ENABLED, DISABLED); did you mean 'ENABLED'?");
    /* nothing close: the message ends with the name */
    cv_options *o = malloc(sizeof *o);
    char err[512];
    assert_false(cv_options_parse("zzzzzzzz: 1", "opts.txt", o, err, sizeof err));
    assert_null(strstr(err, "did you mean"));
    free(o);
}

/* AG_TARGET names no target: the message says it is the environment
 * variable's, suggests the close name, and has no location (the line
 * that traced first has nothing to do with it). */
static void test_environment_target_is_not_at_a_line(void **state)
{
    (void)state;
    setenv("AG_TARGET", "cpx", 1);
    rt_config_reload_env();
    bool strict;
    ag_clear_error();
    const tgt_target *t = pl_selected_target((ag_loc){"user.c", 12}, &strict);
    unsetenv("AG_TARGET");
    rt_config_reload_env();
    assert_null(t);
    ag_loc at;
    const char *msg = rt_last_error_parts(&at);
    assert_non_null(msg);
    assert_null(at.file);
    assert_string_equal(msg, "the environment variable AG_TARGET=cpx is not a target; the "
                             "targets are reference, cpu, tpu-model; did you mean 'cpu'?");
    assert_string_equal(ag_last_error(), msg);
    /* a name the program gave keeps the program's line */
    assert_false(ag_set_target_at((ag_loc){"user.c", 7}, "tpu-modl"));
    msg = rt_last_error_parts(&at);
    assert_string_equal(at.file, "user.c");
    assert_int_equal(at.line, 7);
    assert_non_null(strstr(msg, "did you mean 'tpu-model'?"));
    assert_non_null(strstr(ag_last_error(), "user.c:7: ag_set_target: tpu-modl"));
    ag_clear_error();
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_only_close_names),
        cmocka_unit_test(test_dtypes_and_targets),
        cmocka_unit_test(test_option_fields_and_values),
        cmocka_unit_test(test_environment_target_is_not_at_a_line),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ag_shutdown();
    return failed;
}
