/* test_state.c - ag_assert, variables and tensor arrays. */
#include "test_util.h"

#include "rt.h"

#include <pthread.h>

/* Asserts that no error was recorded since the last ag_clear_error. */
#define EXPECT_NO_ERROR()                                                    \
    do {                                                                     \
        if (ag_last_error())                                                 \
            fail_msg("line %d: unexpected error: %s", __LINE__, ag_last_error()); \
    } while (0)

/* ================================================================ assert */

static void test_assert_passes(void **state)
{
    (void)state;
    ag_clear_error();
    ag_assert(ag_scalar_bool(true), "scalar");
    ag_assert(BOOLS(AG_SHAPE(3), 1, 1, 1), "vector");
    ag_assert(BOOLS(AG_SHAPE(2, 2), 1, 1, 1, 1), "matrix");
    ag_assert(ag_zeros(AG_BOOL, AG_SHAPE(0)), "empty: nothing is false");
    EXPECT_NO_ERROR();
}

static void test_assert_fails(void **state)
{
    (void)state;
    EXPECT_ERROR_VOID(ag_assert(ag_scalar_bool(false), "x must be positive"),
                      "ag_assert: assertion failed: x must be positive");
    /* One false element anywhere fails; the location is the caller's. */
    EXPECT_ERROR_VOID(ag_assert(BOOLS(AG_SHAPE(2, 2), 1, 1, 1, 0), "last"),
                      "test_state.c:");
    EXPECT_ERROR_VOID(ag_assert(BOOLS(AG_SHAPE(3), 0, 1, 1), "first"),
                      "assertion failed: first");
    EXPECT_ERROR_VOID(ag_assert(ag_scalar_bool(false), NULL), "assertion failed: ");
}

static void test_assert_bad_condition(void **state)
{
    (void)state;
    EXPECT_ERROR_VOID(ag_assert(I32(AG_SHAPE(2), 1, 1), "int"),
                      "expects a bool condition, got a i32 tensor");
    EXPECT_ERROR_VOID(ag_assert(ag_scalar_f32(1), "float"), "bool condition");
    ag_tensor freed = ag_scalar_bool(true);
    ag_free(freed);
    EXPECT_ERROR_VOID(ag_assert(freed, "freed"), "used after it was freed");
    /* An error tensor fails quietly (its error was already reported). */
    ag_clear_error();
    ag_assert(ag_from_data(AG_BOOL, AG_SHAPE(2), NULL), "error operand");
    assert_non_null(strstr(ag_last_error(), "data is NULL"));
}

/* ============================================================= variables */

static void test_variable_read_and_assign(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(F32(AG_SHAPE(2), 1, 2));
    assert_non_null(v);
    ag_tensor r = ag_variable_read(v);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2));
    CHECK_VALUES(r, 1, 2);
    ag_clear_error();
    ag_assign(v, F32(AG_SHAPE(2), 3, 4));
    CHECK_VALUES(ag_variable_read(v), 3, 4);
    ag_assign_add(v, F32(AG_SHAPE(2), 0.5, 10));
    CHECK_VALUES(ag_variable_read(v), 3.5, 14);
    ag_assign_sub(v, F32(AG_SHAPE(2), 1, 20));
    CHECK_VALUES(ag_variable_read(v), 2.5, -6);
    EXPECT_NO_ERROR();
    ag_variable_free(v);
}

static void test_variable_dtypes(void **state)
{
    (void)state;
    ag_variable vi = ag_variable_new(I32(AG_SHAPE(2), INT32_MAX, INT32_MIN));
    ag_assign_add(vi, I32(AG_SHAPE(2), 1, 0));
    ag_assign_sub(vi, I32(AG_SHAPE(2), 0, 1));
    /* Integers wrap around, as in TensorFlow. */
    CHECK_VALUES(ag_variable_read(vi), INT32_MIN, INT32_MAX);

    ag_variable vl = ag_variable_new(ag_scalar_i64(INT64_MAX));
    ag_assign_add(vl, ag_scalar_i64(1));
    assert_true(ag_get_i64(ag_variable_read(vl), 0) == INT64_MIN);
    ag_assign_sub(vl, ag_scalar_i64(5));
    assert_true(ag_get_i64(ag_variable_read(vl), 0) == INT64_MAX - 4);

    ag_variable vd = ag_variable_new(F64(AG_SCALAR, 0.1));
    ag_assign_add(vd, F64(AG_SCALAR, 0.2));
    CHECK_VALUES(ag_variable_read(vd), 0.1 + 0.2);

    /* bf16 rounds every result: 256 + 1 is not representable (8 bits). */
    ag_variable vb = ag_variable_new(ag_scalar_bf16(256));
    ag_assign_add(vb, ag_scalar_bf16(1));
    CHECK_VALUES(ag_variable_read(vb), 256);
    ag_assign_add(vb, ag_scalar_bf16(2));
    CHECK_VALUES(ag_variable_read(vb), 258);
    ag_assign_sub(vb, ag_scalar_bf16(0.5));
    CHECK_VALUES(ag_variable_read(vb), 258); /* 257.5 rounds to even: 258 */
    CHECK_TYPE(ag_variable_read(vb), AG_BF16, AG_SCALAR);

    ag_variable vbool = ag_variable_new(BOOLS(AG_SHAPE(2), 1, 0));
    ag_assign(vbool, BOOLS(AG_SHAPE(2), 0, 1));
    CHECK_VALUES(ag_variable_read(vbool), 0, 1);
    EXPECT_ERROR_VOID(ag_assign_add(vbool, BOOLS(AG_SHAPE(2), 1, 1)),
                      "needs a numeric variable, but it holds bool");
    CHECK_VALUES(ag_variable_read(vbool), 0, 1);

    ag_variable_free(vi);
    ag_variable_free(vl);
    ag_variable_free(vd);
    ag_variable_free(vb);
    ag_variable_free(vbool);
}

static void test_variable_empty_and_scalar(void **state)
{
    (void)state;
    ag_variable e = ag_variable_new(ag_zeros(AG_F32, AG_SHAPE(0, 3)));
    ag_clear_error();
    ag_assign(e, ag_zeros(AG_F32, AG_SHAPE(0, 3)));
    ag_assign_add(e, ag_zeros(AG_F32, AG_SHAPE(0, 3)));
    EXPECT_NO_ERROR();
    CHECK_TYPE(ag_variable_read(e), AG_F32, AG_SHAPE(0, 3));
    ag_variable s = ag_variable_new(ag_scalar_i32(7));
    ag_assign_sub(s, ag_scalar_i32(10));
    CHECK_TYPE(ag_variable_read(s), AG_I32, AG_SCALAR);
    CHECK_VALUES(ag_variable_read(s), -3);
    ag_variable_free(e);
    ag_variable_free(s);
}

static void test_variable_mismatches(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(F32(AG_SHAPE(2), 1, 2));
    EXPECT_ERROR_VOID(ag_assign(v, I32(AG_SHAPE(2), 1, 2)),
                      "the variable holds f32 but the value is i32");
    EXPECT_ERROR_VOID(ag_assign_add(v, F64(AG_SHAPE(2), 1, 2)), "ag_assign_add: ");
    EXPECT_ERROR_VOID(ag_assign(v, F32(AG_SHAPE(3), 1, 2, 3)),
                      "the value has shape [3] but the variable has shape [2]");
    EXPECT_ERROR_VOID(ag_assign_sub(v, F32(AG_SHAPE(1, 2), 1, 2)),
                      "TensorFlow variables keep their shape");
    /* No broadcasting either: a scalar is not a [2]. */
    EXPECT_ERROR_VOID(ag_assign_add(v, ag_scalar_f32(1)), "shape [] but the variable");
    CHECK_VALUES(ag_variable_read(v), 1, 2);
    ag_variable_free(v);
}

static void test_variable_is_a_copy(void **state)
{
    (void)state;
    ag_tensor init = F32(AG_SHAPE(2), 1, 2);
    ag_variable v = ag_variable_new(init);
    ag_tensor before = ag_variable_read(v);
    ag_tensor value = F32(AG_SHAPE(2), 5, 6);
    ag_assign(v, value);
    ag_assign_add(v, value);
    /* Neither the initial value, an earlier read, nor the assigned tensor
     * changes: the variable owns its own storage. */
    CHECK_VALUES(init, 1, 2);
    CHECK_VALUES(before, 1, 2);
    CHECK_VALUES(value, 5, 6);
    CHECK_VALUES(ag_variable_read(v), 10, 12);
    ag_free(init);
    ag_free(value);
    CHECK_VALUES(ag_variable_read(v), 10, 12);
    ag_variable_free(v);
}

static void test_variable_use_after_free(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(ag_scalar_f32(1));
    ag_variable_free(v);
    EXPECT_ERROR(ag_variable_read(v),
                 "ag_variable_read: not a live variable (freed, or never created)");
    EXPECT_ERROR_VOID(ag_assign(v, ag_scalar_f32(2)), "ag_assign: not a live variable");
    EXPECT_ERROR_VOID(ag_assign_add(v, ag_scalar_f32(2)), "not a live variable");
    EXPECT_ERROR_VOID(ag_assign_sub(v, ag_scalar_f32(2)), "not a live variable");
    EXPECT_ERROR_VOID(ag_variable_free(v), "ag_variable_free: not a live variable");
    /* A pointer that never was a variable, and NULL. */
    int not_a_variable = 0;
    EXPECT_ERROR(ag_variable_read((ag_variable)(void *)&not_a_variable),
                 "not a live variable");
    EXPECT_ERROR(ag_variable_read(NULL), "not a live variable");
    ag_clear_error();
    ag_variable_free(NULL); /* harmless, like free(NULL) */
    EXPECT_NO_ERROR();
}

static void test_variable_bad_init(void **state)
{
    (void)state;
    ag_clear_error();
    assert_null(ag_variable_new(ag_from_data(AG_F32, AG_SHAPE(1), NULL)));
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 1, false);
    ag_clear_error();
    assert_null(ag_variable_new(ta.list));
    assert_non_null(strstr(ag_last_error(), "a tensor array was passed"));
}

enum { THREADS = 4, ADDS_PER_THREAD = 1000 };

static void *add_ones(void *arg)
{
    ag_variable v = arg;
    ag_tensor one = ag_scalar_i32(1);
    for (int i = 0; i < ADDS_PER_THREAD; i++)
        ag_assign_add(v, one);
    ag_free(one);
    return NULL;
}

static void test_variable_concurrent_assign_add(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(ag_scalar_i32(0));
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, add_ones, v), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    CHECK_VALUES(ag_variable_read(v), THREADS * ADDS_PER_THREAD);
    ag_variable_free(v);
}

/* Variables still alive at ag_shutdown are freed by it (the leak checker
 * verifies this one at exit). */
static void test_variable_left_for_shutdown(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(ag_ones(AG_F64, AG_SHAPE(4, 4)));
    assert_non_null(v);
}

/* The shape rules accept traced values with unknown dims. */
static void test_variable_rules_unknown_dims(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(ag_zeros(AG_F32, AG_SHAPE(2, 3)));
    rt_attrs a = {.ref = v};
    rt_value sym = {.kind = RT_SYMBOLIC, .dtype = AG_F32, .shape = {2, {-1, 3}}};
    rt_value *in = &sym;
    ag_dtype dt;
    ag_shape s;
    rt_err e;
    assert_true(rt_infer(RT_OP_ASSIGN, &a, &in, 1, &dt, &s, &e));
    assert_true(ag_shape_equal(s, AG_SHAPE(2, 3)));
    sym.shape = (ag_shape){2, {-1, 4}};
    assert_false(rt_infer(RT_OP_ASSIGN_ADD, &a, &in, 1, &dt, &s, &e));
    assert_non_null(strstr(e.msg, "shape [?,4] but the variable has shape [2,3]"));
    assert_true(rt_infer(RT_OP_VAR_READ, &a, NULL, 0, &dt, &s, &e));
    assert_true(ag_shape_equal(s, AG_SHAPE(2, 3)));
    /* The kernel still checks the concrete shape a graph gives it. */
    rt_value *wrong = rt_value_zeros(AG_F32, &AG_SHAPE(3, 3));
    rt_value *out = rt_value_new(AG_F32, &AG_SHAPE(2, 3));
    assert_false(rt_ops[RT_OP_ASSIGN].kernel(&a, &wrong, 1, out, &e));
    assert_non_null(strstr(e.msg, "shape [3,3] but the variable has shape [2,3]"));
    rt_value_free(wrong);
    rt_value_free(out);
    ag_variable_free(v);
}

/* ========================================================= tensor arrays */

static void test_ta_write_read_stack_size(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 3, false);
    CHECK_VALUES(ag_tensor_array_size(ta), 3);
    CHECK_TYPE(ag_tensor_array_size(ta), AG_I32, AG_SCALAR);
    ta = ag_tensor_array_write(ta, 0, F32(AG_SHAPE(2), 1, 2));
    ta = ag_tensor_array_write(ta, ag_scalar_i32(1), F32(AG_SHAPE(2), 3, 4));
    ta = ag_tensor_array_write(ta, ag_scalar_i64(2), F32(AG_SHAPE(2), 5, 6));
    assert_false(ag_is_error(ta.list));
    ag_tensor r = ag_tensor_array_read(ta, 1);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2));
    CHECK_VALUES(r, 3, 4);
    CHECK_VALUES(ag_tensor_array_read(ta, ag_scalar_i64(2)), 5, 6);
    ag_tensor s = ag_tensor_array_stack(ta);
    CHECK_TYPE(s, AG_F32, AG_SHAPE(3, 2));
    CHECK_VALUES(s, 1, 2, 3, 4, 5, 6);
    CHECK_VALUES(ag_tensor_array_size(ta), 3);
}

static void test_ta_scalar_elements_and_dtypes(void **state)
{
    (void)state;
    ag_tensor_array ti = ag_tensor_array_new(AG_I64, 2, false);
    ti = ag_tensor_array_write(ti, 0, ag_scalar_i64(INT64_MIN));
    ti = ag_tensor_array_write(ti, 1, ag_scalar_i64(INT64_MAX));
    ag_tensor s = ag_tensor_array_stack(ti);
    CHECK_TYPE(s, AG_I64, AG_SHAPE(2));
    assert_true(ag_get_i64(s, 0) == INT64_MIN && ag_get_i64(s, 1) == INT64_MAX);

    ag_tensor_array tb = ag_tensor_array_new(AG_BOOL, 2, false);
    tb = ag_tensor_array_write(tb, 1, BOOLS(AG_SHAPE(1, 2), 1, 0));
    tb = ag_tensor_array_write(tb, 0, BOOLS(AG_SHAPE(1, 2), 0, 1));
    s = ag_tensor_array_stack(tb);
    CHECK_TYPE(s, AG_BOOL, AG_SHAPE(2, 1, 2));
    CHECK_VALUES(s, 0, 1, 1, 0);

    ag_tensor_array th = ag_tensor_array_new(AG_BF16, 1, false);
    th = ag_tensor_array_write(th, 0, ag_scalar_bf16(1.5));
    CHECK_TYPE(ag_tensor_array_read(th, 0), AG_BF16, AG_SCALAR);
    CHECK_VALUES(ag_tensor_array_stack(th), 1.5);

    /* Empty elements stack to an empty result of the right shape. */
    ag_tensor_array te = ag_tensor_array_new(AG_F64, 2, false);
    te = ag_tensor_array_write(te, 0, ag_zeros(AG_F64, AG_SHAPE(0, 3)));
    te = ag_tensor_array_write(te, 1, ag_zeros(AG_F64, AG_SHAPE(0, 3)));
    CHECK_TYPE(ag_tensor_array_stack(te), AG_F64, AG_SHAPE(2, 0, 3));
    CHECK_TYPE(ag_tensor_array_read(te, 1), AG_F64, AG_SHAPE(0, 3));
}

static void test_ta_dynamic_growth(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_I32, 0, true);
    CHECK_VALUES(ag_tensor_array_size(ta), 0);
    for (int i = 0; i < 10; i++)
        ta = ag_tensor_array_write(ta, i, ag_scalar_i32(i * i));
    CHECK_VALUES(ag_tensor_array_size(ta), 10);
    ag_tensor s = ag_tensor_array_stack(ta);
    CHECK_TYPE(s, AG_I32, AG_SHAPE(10));
    CHECK_VALUES(s, 0, 1, 4, 9, 16, 25, 36, 49, 64, 81);
    /* A write far past the end grows to index + 1, leaving a gap. */
    ta = ag_tensor_array_write(ta, 99, ag_scalar_i32(-1));
    CHECK_VALUES(ag_tensor_array_size(ta), 100);
    CHECK_VALUES(ag_tensor_array_read(ta, 99), -1);
    EXPECT_ERROR(ag_tensor_array_read(ta, 50),
                 "element 50 of the tensor array was never written");
    EXPECT_ERROR(ag_tensor_array_stack(ta),
                 "element 10 of the tensor array was never written");
}

static void test_ta_fixed_size_out_of_range(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 2, false);
    ag_clear_error();
    ag_tensor_array bad = ag_tensor_array_write(ta, 2, ag_scalar_f32(1));
    assert_true(ag_is_error(bad.list));
    assert_non_null(strstr(ag_last_error(), "ag_tensor_array_write: index 2 is out of range for "
                                            "a tensor array of size 2"));
    ag_clear_error();
    bad = ag_tensor_array_write(ta, -1, ag_scalar_f32(1));
    assert_true(ag_is_error(bad.list));
    assert_non_null(strstr(ag_last_error(), "index -1 is negative"));
    EXPECT_ERROR(ag_tensor_array_read(ta, 2), "index 2 is out of range");
    EXPECT_ERROR(ag_tensor_array_read(ta, ag_scalar_i64(-3)), "index -3 is out of range");
    /* A dynamic array rejects negative indices too. */
    ag_tensor_array dyn = ag_tensor_array_new(AG_F32, 0, true);
    ag_clear_error();
    bad = ag_tensor_array_write(dyn, ag_scalar_i64(-1), ag_scalar_f32(1));
    assert_true(ag_is_error(bad.list));
    assert_non_null(strstr(ag_last_error(), "negative"));
    ag_clear_error();
    bad = ag_tensor_array_write(dyn, ag_scalar_i64(INT64_MAX), ag_scalar_f32(1));
    assert_true(ag_is_error(bad.list));
    assert_non_null(strstr(ag_last_error(), "too large"));
    CHECK_VALUES(ag_tensor_array_size(dyn), 0);
}

static void test_ta_unwritten(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 4, false);
    EXPECT_ERROR(ag_tensor_array_read(ta, 3),
                 "element 3 of the tensor array was never written");
    EXPECT_ERROR(ag_tensor_array_stack(ta), "element 0 of the tensor array was never "
                                            "written; ag_tensor_array_stack needs");
    ta = ag_tensor_array_write(ta, 0, F32(AG_SHAPE(2), 1, 2));
    EXPECT_ERROR(ag_tensor_array_stack(ta), "element 1 of the tensor array was never");
}

static void test_ta_empty_stack(void **state)
{
    (void)state;
    ag_tensor s = ag_tensor_array_stack(ag_tensor_array_new(AG_F32, 0, true));
    CHECK_TYPE(s, AG_F32, AG_SHAPE(0));
    s = ag_tensor_array_stack(ag_tensor_array_new(AG_I64, 0, false));
    CHECK_TYPE(s, AG_I64, AG_SHAPE(0));
}

static void test_ta_shape_mismatch(void **state)
{
    (void)state;
    ag_tensor_array ta0 = ag_tensor_array_new(AG_F32, 3, false);
    ag_tensor_array ta = ag_tensor_array_write(ta0, 0, F32(AG_SHAPE(2), 1, 2));
    /* Found by the shape rule: the handle knows the element shape. */
    EXPECT_ERROR(ag_tensor_array_write(ta, 1, F32(AG_SHAPE(3), 1, 2, 3)).list,
                 "cannot write a value of shape [3] into a tensor array whose "
                 "elements have shape [2]");
    /* Found by the kernel: the first handle predates the first write. */
    EXPECT_ERROR(ag_tensor_array_write(ta0, 1, F32(AG_SHAPE(1, 2), 1, 2)).list,
                 "shape [1,2] into a tensor array whose elements have shape [2]");
    /* Rewriting the only element with another shape is refused too. */
    EXPECT_ERROR(ag_tensor_array_write(ta, 0, ag_scalar_f32(1)).list,
                 "cannot write a value of shape []");
    CHECK_VALUES(ag_tensor_array_read(ta, 0), 1, 2);
}

static void test_ta_dtype_and_index_errors(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 2, false);
    EXPECT_ERROR(ag_tensor_array_write(ta, 0, ag_scalar_i32(1)).list,
                 "the tensor array holds f32 but the value written is i32");
    EXPECT_ERROR(ag_tensor_array_write(ta, 0.5, ag_scalar_f32(1)).list,
                 "an integer index, got a f32 tensor");
    EXPECT_ERROR(ag_tensor_array_write(ta, I32(AG_SHAPE(1), 0), ag_scalar_f32(1)).list,
                 "the index must be a scalar, got shape [1]");
    EXPECT_ERROR(ag_tensor_array_read(ta, ag_scalar_f32(0)), "an integer index");
    EXPECT_ERROR(ag_tensor_array_read(ta, 5000000000LL), "cannot be converted to i32");
    EXPECT_ERROR(ag_tensor_array_new(AG_F32, -1, false).list,
                 "ag_tensor_array_new: size -1 is negative");
    EXPECT_ERROR(ag_tensor_array_new((ag_dtype)42, 1, false).list,
                 "invalid element dtype 42");
    /* A tensor where a tensor array is expected, and the reverse. */
    ag_tensor_array not_ta = {ag_scalar_f32(1)};
    EXPECT_ERROR(ag_tensor_array_size(not_ta), "expects a tensor array, got a f32");
    EXPECT_ERROR(ag_tensor_array_stack(not_ta), "ag_tensor_array_stack: expects");
    EXPECT_ERROR(ag_tensor_array_write(ta, 0, ta.list).list, "a tensor array was passed");
    EXPECT_ERROR(ag_add(ta.list, 1), "a tensor array was passed");
    /* A failed write's result is an error handle; using it fails quietly. */
    ag_tensor_array bad = ag_tensor_array_write(ta, 9, ag_scalar_f32(1));
    ag_clear_error();
    assert_true(ag_is_error(ag_tensor_array_size(bad)));
}

static void test_ta_rank_limit(void **state)
{
    (void)state;
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 1, false);
    ta = ag_tensor_array_write(ta, 0, ag_zeros(AG_F32, AG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1)));
    CHECK_TYPE(ag_tensor_array_read(ta, 0), AG_F32, AG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    EXPECT_ERROR(ag_tensor_array_stack(ta), "would exceed the maximum rank 8");
}

static void test_ta_handles_share_the_list(void **state)
{
    (void)state;
    ag_tensor_array ta0 = ag_tensor_array_new(AG_I32, 2, false);
    ag_tensor_array ta1 = ag_tensor_array_write(ta0, 0, I32(AG_SHAPE(2), 1, 2));
    ag_tensor_array ta2 = ag_tensor_array_write(ta1, 1, I32(AG_SHAPE(2), 3, 4));
    assert_false(ta1.list.id == ta2.list.id && ta1.list.gen == ta2.list.gen);
    /* As in TensorFlow's eager mode, every handle sees every write. */
    CHECK_TYPE(ag_tensor_array_read(ta0, 1), AG_I32, AG_SHAPE(2));
    CHECK_VALUES(ag_tensor_array_read(ta0, 1), 3, 4);
    CHECK_VALUES(ag_tensor_array_stack(ta0), 1, 2, 3, 4);
    CHECK_VALUES(ag_tensor_array_stack(ta1), 1, 2, 3, 4);
    /* Freeing handles keeps the list alive for the others. */
    ag_free(ta2.list);
    ag_free(ta0.list);
    CHECK_VALUES(ag_tensor_array_read(ta1, 1), 3, 4);
}

static void test_ta_elements_are_refcounted(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(3), 1, 2, 3);
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 1, false);
    ta = ag_tensor_array_write(ta, 0, x);
    ag_free(x);
    CHECK_VALUES(ag_tensor_array_read(ta, 0), 1, 2, 3);
    /* A read is a snapshot: rewriting the element does not change it. */
    ag_tensor r = ag_tensor_array_read(ta, 0);
    ta = ag_tensor_array_write(ta, 0, F32(AG_SHAPE(3), 7, 8, 9));
    CHECK_VALUES(r, 1, 2, 3);
    CHECK_VALUES(ag_tensor_array_read(ta, 0), 7, 8, 9);
}

static void test_ta_loop_leaks_nothing(void **state)
{
    (void)state;
    int64_t start = ag_live_tensors();
    ag_scope_push();
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    for (int i = 0; i < 100; i++)
        ta = ag_tensor_array_write(ta, i, F32(AG_SHAPE(2), (float)i, (float)-i));
    ag_tensor s = ag_tensor_array_stack(ta);
    CHECK_TYPE(s, AG_F32, AG_SHAPE(100, 2));
    assert_float_equal(ag_get_f32(s, 199), -99.0f, 0);
    ag_scope_pop();
    assert_int_equal(ag_live_tensors(), start);
}

/* The shape rules accept symbolic lists (no list payload, unknown dims). */
static void test_ta_rules_unknown_dims(void **state)
{
    (void)state;
    rt_value list = {.kind = RT_SYMBOLIC, .dtype = RT_LIST, .elem_dtype = AG_F32,
                     .shape = {-1, {0}}};
    rt_value idx = {.kind = RT_SYMBOLIC, .dtype = AG_I32, .shape = {0, {0}}};
    rt_value val = {.kind = RT_SYMBOLIC, .dtype = AG_F32, .shape = {2, {-1, 2}}};
    rt_value *in[3] = {&list, &idx, &val};
    ag_dtype dt;
    ag_shape s;
    rt_err e;
    assert_true(rt_infer(RT_OP_TA_WRITE, NULL, in, 3, &dt, &s, &e));
    assert_int_equal(dt, RT_LIST);
    assert_true(ag_shape_equal(s, (ag_shape){2, {-1, 2}}));
    list.shape = (ag_shape){2, {3, -1}};
    assert_true(rt_infer(RT_OP_TA_WRITE, NULL, in, 3, &dt, &s, &e));
    assert_true(ag_shape_equal(s, AG_SHAPE(3, 2)));
    val.shape = (ag_shape){2, {4, -1}};
    assert_false(rt_infer(RT_OP_TA_WRITE, NULL, in, 3, &dt, &s, &e));
    assert_non_null(strstr(e.msg, "shape [4,?] into a tensor array whose elements have "
                                  "shape [3,?]"));
    idx.shape = (ag_shape){-1, {0}}; /* unknown rank index: accepted */
    assert_true(rt_infer(RT_OP_TA_READ, NULL, in, 2, &dt, &s, &e));
    assert_int_equal(dt, AG_F32);
    assert_true(ag_shape_equal(s, (ag_shape){2, {3, -1}}));
    assert_true(rt_infer(RT_OP_TA_STACK, NULL, in, 1, &dt, &s, &e));
    assert_true(ag_shape_equal(s, (ag_shape){3, {-1, 3, -1}}));
    list.shape = (ag_shape){-1, {0}};
    assert_true(rt_infer(RT_OP_TA_STACK, NULL, in, 1, &dt, &s, &e));
    assert_int_equal(s.rank, -1);
    assert_true(rt_infer(RT_OP_TA_SIZE, NULL, in, 1, &dt, &s, &e));
    assert_int_equal(dt, AG_I32);
    assert_int_equal(s.rank, 0);
    rt_attrs a = {.dtype = AG_F32, .n = 3};
    assert_true(rt_infer(RT_OP_TA_NEW, &a, NULL, 0, &dt, &s, &e));
    assert_int_equal(s.rank, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_assert_passes),
        TU_TEST(test_assert_fails),
        TU_TEST(test_assert_bad_condition),
        TU_TEST(test_variable_read_and_assign),
        TU_TEST(test_variable_dtypes),
        TU_TEST(test_variable_empty_and_scalar),
        TU_TEST(test_variable_mismatches),
        TU_TEST(test_variable_is_a_copy),
        TU_TEST(test_variable_use_after_free),
        TU_TEST(test_variable_bad_init),
        TU_TEST(test_variable_concurrent_assign_add),
        TU_TEST(test_variable_left_for_shutdown),
        TU_TEST(test_variable_rules_unknown_dims),
        TU_TEST(test_ta_write_read_stack_size),
        TU_TEST(test_ta_scalar_elements_and_dtypes),
        TU_TEST(test_ta_dynamic_growth),
        TU_TEST(test_ta_fixed_size_out_of_range),
        TU_TEST(test_ta_unwritten),
        TU_TEST(test_ta_empty_stack),
        TU_TEST(test_ta_shape_mismatch),
        TU_TEST(test_ta_dtype_and_index_errors),
        TU_TEST(test_ta_rank_limit),
        TU_TEST(test_ta_handles_share_the_list),
        TU_TEST(test_ta_elements_are_refcounted),
        TU_TEST(test_ta_loop_leaks_nothing),
        TU_TEST(test_ta_rules_unknown_dims),
    };
    TU_RUN(tests);
}
