/* test_core.c - handles, scopes, errors, weak operands, bfloat16 and tensor memory. */
#include "test_util.h"

#include "rt.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void test_bf16_rounding(void **state)
{
    (void)state;
    /* 1 + 2^-8 is exactly halfway between two bf16 values: ties to even. */
    assert_int_equal(ag_f32_to_bf16(1.00390625f), 0x3F80);
    /* 1 + 3 * 2^-8 is halfway too, and rounds up to the even neighbour. */
    assert_int_equal(ag_f32_to_bf16(1.01171875f), 0x3F82);
    assert_int_equal(ag_f32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(ag_f32_to_bf16(-2.0f), 0xC000);
    /* Above halfway rounds up. */
    assert_int_equal(ag_f32_to_bf16(1.0040f), 0x3F81);
}

static void test_bf16_nan_and_overflow(void **state)
{
    (void)state;
    assert_true(isnan(ag_bf16_to_f32(ag_f32_to_bf16(NAN))));
    /* A NaN whose payload sits only in the low half stays a NaN. */
    uint32_t bits = 0x7F800001u;
    float snan;
    memcpy(&snan, &bits, sizeof snan);
    uint16_t b = ag_f32_to_bf16(snan);
    assert_true(isnan(ag_bf16_to_f32(b)));
    assert_true(b & 0x0040);
    /* The largest f32 rounds up past the largest bf16: infinity. */
    assert_true(isinf(ag_bf16_to_f32(ag_f32_to_bf16(3.4028235e38f))));
    assert_true(isinf(ag_bf16_to_f32(ag_f32_to_bf16(INFINITY))));
}

static void test_from_data_and_get(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2, 2), 1, 2, 3, 4);
    CHECK_TYPE(t, AG_F32, AG_SHAPE(2, 2));
    CHECK_VALUES(t, 1, 2, 3, 4);
    assert_int_equal(ag_rank(t), 2);
    assert_int_equal(ag_num_elements(t), 4);
    assert_float_equal(ag_get_f32(t, 3), 4.0f, 0);
    ag_tensor s = ag_scalar_i64(INT64_MAX);
    assert_true(ag_get_i64(s, 0) == INT64_MAX);
    ag_tensor b = ag_scalar_bool(true);
    CHECK_TYPE(b, AG_BOOL, AG_SCALAR);
    assert_true(ag_bool(b));
}

static void test_bad_reads(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2), 1, 2);
    ag_clear_error();
    assert_true(isnan(ag_get_f32(t, 2)));
    assert_non_null(strstr(ag_last_error(), "out of range"));
    ag_clear_error();
    assert_false(ag_bool(t));
    assert_non_null(strstr(ag_last_error(), "needs a scalar"));
    EXPECT_ERROR(ag_from_data(AG_F32, AG_SHAPE(2), NULL), "data is NULL");
    EXPECT_ERROR(ag_from_data(AG_F32, AG_SHAPE(-2), (const float[]){1}), "negative dim");
    EXPECT_ERROR(ag_zeros((ag_dtype)42, AG_SHAPE(2)), "invalid dtype");
}

static void test_use_after_free(void **state)
{
    (void)state;
    ag_tensor t = ag_scalar_f32(1);
    ag_free(t);
    ag_clear_error();
    assert_true(isnan(ag_item_f64(t)));
    assert_non_null(strstr(ag_last_error(), "used after it was freed"));
    /* The slot is reused; the stale handle must still be rejected. */
    ag_tensor u = ag_scalar_f32(2);
    assert_int_equal(u.id, t.id);
    ag_clear_error();
    assert_true(isnan(ag_item_f64(t)));
    assert_non_null(ag_last_error());
    assert_float_equal(ag_item_f64(u), 2.0, 0);
}

static void test_zero_handle_is_reported(void **state)
{
    (void)state;
    ag_tensor zero = {0, 0};
    assert_true(ag_is_error(zero));
    ag_clear_error();
    assert_true(isnan(ag_item_f64(zero)));
    assert_non_null(strstr(ag_last_error(), "uninitialized"));
}

static void test_scopes_and_keep(void **state)
{
    (void)state;
    int64_t before = ag_live_tensors();
    ag_tensor kept;
    ag_scope_push();
    {
        ag_tensor a = ag_scalar_f32(1);
        (void)ag_scalar_f32(2);
        kept = ag_keep(a);
        assert_int_equal(ag_live_tensors(), before + 2);
    }
    ag_scope_pop();
    assert_int_equal(ag_live_tensors(), before + 1);
    assert_float_equal(ag_item_f64(kept), 1.0, 0);
    ag_free(kept);
    assert_int_equal(ag_live_tensors(), before);
}

static void test_error_location_and_clear(void **state)
{
    (void)state;
    ag_clear_error();
    assert_null(ag_last_error());
    ag_tensor t = ag_from_data(AG_F32, AG_SHAPE(1), NULL);
    assert_true(ag_is_error(t));
    const char *m = ag_last_error();
    assert_non_null(m);
    assert_non_null(strstr(m, "test_core.c:"));
    /* A later successful call does not clear it. */
    (void)ag_scalar_f32(1);
    assert_non_null(ag_last_error());
    ag_clear_error();
    assert_null(ag_last_error());
}

static void test_weak_operand_conversion(void **state)
{
    (void)state;
    ag_tensor i = I32(AG_SHAPE(2), 1, 2);
    EXPECT_ERROR(ag_add(i, 2.5), "cannot be converted to i32");
    ag_tensor f = F32(AG_SHAPE(2), 1, 2);
    EXPECT_ERROR(ag_add(i, f), "different dtypes");
    ag_tensor err = ag_add(i, f);
    /* An op given an error tensor returns an error tensor, silently. */
    ag_clear_error();
    assert_true(ag_is_error(ag_neg(err)));
    assert_null(ag_last_error());
}

/* Asserts the last error starts with "<this file>:<line>: " and holds needle. */
static void check_located(const char *needle, int line)
{
    char where[512];
    const char *m = ag_last_error();
    snprintf(where, sizeof where, "%s:%d: ", __FILE__, line);
    if (!m || strncmp(m, where, strlen(where)) != 0 || !strstr(m, needle))
        fail_msg("line %d: error \"%s\" is not \"%s...%s...\"", line, m ? m : "(none)",
                 where, needle);
}

/* Freeing twice, popping a scope never pushed and freeing a variable
 * twice are errors at the caller's line, recorded in AG_ERRORS_RETURN
 * mode; freeing nothing (an error tensor, the zero handle) is not. */
static void test_free_errors_are_located(void **state)
{
    (void)state;
    ag_tensor t = ag_scalar_f32(1);
    ag_free(t);
    ag_clear_error();
    int free_line = __LINE__ + 1;
    ag_free(t);
    check_located("ag_free: tensor already freed", free_line);
    ag_clear_error();
    ag_tensor zero = {0, 0};
    ag_free(rt_error_tensor());
    ag_free(zero);
    assert_null(ag_last_error());

    ag_variable v = ag_variable_new(ag_scalar_f32(1));
    ag_variable_free(v);
    ag_clear_error();
    int var_line = __LINE__ + 1;
    ag_variable_free(v);
    check_located("ag_variable_free: not a live variable", var_line);

    ag_scope_pop(); /* the scope tu_setup pushed */
    ag_clear_error();
    int pop_line = __LINE__ + 1;
    ag_scope_pop();
    check_located("ag_scope_pop without a matching ag_scope_push", pop_line);
    ag_scope_push(); /* for tu_teardown */
}

/* Threads that make tensors (allocating ids and chunks) while others look
 * theirs up: the lookups read the table without the lock, which must not
 * race with the writers. Built with ThreadSanitizer (cmake
 * -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread)
 * this reports the race on the table's next id if it comes back; in other
 * builds it checks the values. */
enum { RACE_THREADS = 4, RACE_TENSORS = 3 * 4096 };

static void *make_and_read(void *arg)
{
    float base = (float)(intptr_t)arg;
    ag_scope_push();
    ag_tensor first = ag_scalar_f32(base);
    for (int i = 0; i < RACE_TENSORS; i++) {
        ag_tensor t = ag_scalar_f32(base + (float)i);
        if (ag_item_f64(t) != base + (float)i || ag_item_f64(first) != base)
            return (void *)1;
    }
    ag_scope_pop();
    return NULL;
}

static void test_handles_across_threads(void **state)
{
    (void)state;
    pthread_t th[RACE_THREADS];
    for (intptr_t i = 0; i < RACE_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, make_and_read, (void *)(i * 100000)), 0);
    for (int i = 0; i < RACE_THREADS; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        assert_null(bad);
    }
}

/* Large tensor blocks are recycled (their pages stay mapped); a block is
 * never handed out twice, and every block is 64-byte aligned. */
static void test_large_blocks_are_recycled(void **state)
{
    (void)state;
    size_t big = (size_t)3 << 20, cap_a, cap_b, cap_c, cap_d;
    char *a = rt_data_alloc(big, &cap_a);
    assert_true(cap_a >= big);
    assert_int_equal((uintptr_t)a % 64, 0);
    memset(a, 1, big);
    rt_data_free(a, cap_a);
    char *b = rt_data_alloc(big - 100, &cap_b); /* fits: the same block */
    assert_ptr_equal(b, a);
    assert_int_equal(cap_b, cap_a);
    char *c = rt_data_alloc(big, &cap_c); /* b is in use: another block */
    assert_ptr_not_equal(c, b);
    rt_data_free(c, cap_c);
    char *d = rt_data_alloc(4 * big, &cap_d); /* too small to reuse c */
    assert_ptr_not_equal(d, c);
    assert_true(cap_d >= 4 * big);
    rt_data_free(d, cap_d);
    rt_data_free(b, cap_b);
    /* tensors go through it: a freed tensor's block comes back */
    ag_tensor t = ag_zeros(AG_F32, AG_SHAPE(1024, 1024));
    const void *data = ag_data(t);
    ag_free(t);
    ag_tensor u = ag_ones(AG_F32, AG_SHAPE(1024, 1024));
    assert_ptr_equal(ag_data(u), data);
    assert_true(((const float *)ag_data(u))[1048575] == 1.0f);
    ag_free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_bf16_rounding),
        TU_TEST(test_bf16_nan_and_overflow),
        TU_TEST(test_from_data_and_get),
        TU_TEST(test_bad_reads),
        TU_TEST(test_use_after_free),
        TU_TEST(test_zero_handle_is_reported),
        TU_TEST(test_scopes_and_keep),
        TU_TEST(test_error_location_and_clear),
        TU_TEST(test_weak_operand_conversion),
        TU_TEST(test_large_blocks_are_recycled),
        TU_TEST(test_free_errors_are_located),
        TU_TEST(test_handles_across_threads),
    };
    TU_RUN(tests);
}
