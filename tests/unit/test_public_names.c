/*
 * test_public_names.c - what users read names their own things: ops by
 * their public names (runtime/core/ops.c), the last error's message and
 * location apart (runtime/core/error.c, for the tools' "FILE:LINE: error:"
 * and "TOOL: error:" forms).
 */
#include "test_util.h"

#include "ir.h"

static void test_ops_by_the_calls_that_make_them(void **state)
{
    (void)state;
    assert_string_equal(rt_op_public_name(RT_OP_ADD), "ag_add");
    assert_string_equal(rt_op_public_name(RT_OP_MATMUL), "ag_matmul");
    assert_string_equal(rt_op_public_name(RT_OP_VAR_READ), "ag_variable_read");
    assert_string_equal(rt_op_public_name(RT_OP_TA_NEW), "ag_tensor_array_new");
    assert_string_equal(rt_op_public_name(RT_OP_TA_WRITE), "ag_tensor_array_write");
    assert_string_equal(rt_op_public_name(RT_OP_TA_READ), "ag_tensor_array_read");
    assert_string_equal(rt_op_public_name(RT_OP_TA_STACK), "ag_tensor_array_stack");
    assert_string_equal(rt_op_public_name(RT_OP_TA_SIZE), "ag_tensor_array_size");
    /* every op has one, and none is the IR's ta_ or var_ spelling */
    for (int op = 0; op < RT_OP_COUNT; op++) {
        const char *name = rt_op_public_name(op);
        assert_non_null(name);
        if (strstr(name, "ag_ta_") || strstr(name, "ag_var_"))
            fail_msg("op %s shows as %s", rt_ops[op].name, name);
    }
    /* listings drop the ag_ that would repeat on every line, not a name */
    assert_string_equal(rt_op_listed_name(RT_OP_MATMUL), "matmul");
    assert_string_equal(rt_op_listed_name(RT_OP_VAR_READ), "ag_variable_read");
    assert_string_equal(rt_op_listed_name(RT_OP_TO_HOST), "to_host");
    assert_string_equal(ir_opcode_public_name(IR_WHILE), "a staged loop");
    assert_string_equal(ir_opcode_public_name(IR_COND), "a staged if");
    assert_string_equal(ir_opcode_public_name(RT_OP_TA_SIZE), "ag_tensor_array_size");
}

/* A failing ag_tensor_array_read names the call the user wrote. */
static void test_eager_errors_use_public_names(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new_at((ag_loc){"user.c", 3}, AG_F32, 1, false);
    ag_tensor r = ag_tensor_array_read_at((ag_loc){"user.c", 4}, ta, AG_OPERAND(5));
    assert_true(ag_is_error(r));
    assert_non_null(strstr(ag_last_error(), "user.c:4: ag_tensor_array_read: "));
    assert_null(strstr(ag_last_error(), "ta_read"));
}

/* The last error in parts: the message alone, and its location (none
 * for an error at no line). */
static void test_last_error_in_parts(void **state)
{
    (void)state;
    ag_loc at;
    ag_clear_error();
    assert_null(rt_last_error_parts(&at));
    rt_report((ag_loc){"user.c", 12}, "something about %s", "x");
    const char *msg = rt_last_error_parts(&at);
    assert_string_equal(msg, "something about x");
    assert_string_equal(at.file, "user.c");
    assert_int_equal(at.line, 12);
    assert_string_equal(ag_last_error(), "user.c:12: something about x");
    rt_report((ag_loc){0}, "nowhere");
    msg = rt_last_error_parts(&at);
    assert_string_equal(msg, "nowhere");
    assert_null(at.file);
    ag_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_ops_by_the_calls_that_make_them),
        TU_TEST(test_eager_errors_use_public_names),
        TU_TEST(test_last_error_in_parts),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ag_shutdown();
    return failed;
}
