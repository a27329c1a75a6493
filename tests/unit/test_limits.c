/*
 * test_limits.c - hostile sizes: shapes whose element count or byte size
 * overflows, and tensors too large for memory. Each must fail as an
 * ordinary error, located at the caller's line, never crash or abort.
 */
#include "staged_util.h"

#include "rt.h"

#include <stdio.h>

/* Sizes the tests ask for on purpose; under AddressSanitizer they must
 * come back as NULL like from malloc, not end the process. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_ASAN 1
#endif
#endif
#ifdef TU_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

/* Asserts that the last error contains needle and starts with this file's
 * name and `line`: it points at the user's call. */
static void tu_check_located(const char *needle, int line)
{
    char where[512];
    const char *m = ag_last_error();
    snprintf(where, sizeof where, "%s:%d: ", __FILE__, line);
    if (!m || strncmp(m, where, strlen(where)) != 0)
        fail_msg("line %d: error \"%s\" is not located at %s", line, m ? m : "(none)", where);
    if (!strstr(m, needle))
        fail_msg("line %d: error \"%s\" lacks \"%s\"", line, m, needle);
}

/* expr must fail with an error at this line containing needle. */
#define EXPECT_LOCATED(expr, needle)                                              \
    do {                                                                          \
        ag_clear_error();                                                         \
        ag_tensor r_ = (expr);                                                    \
        if (!ag_is_error(r_))                                                     \
            fail_msg("line %d: expected an error containing \"%s\"", __LINE__, (needle)); \
        tu_check_located((needle), __LINE__);                                     \
    } while (0)

#define BIG (INT64_C(1) << 32)

/* ======================================================== shape overflow */

static void test_constructors_reject_overflow(void **state)
{
    (void)state;
    static const float four[4] = {1, 2, 3, 4};
    /* 2^64 elements: the count itself wraps to 0. */
    EXPECT_LOCATED(ag_zeros(AG_F32, AG_SHAPE(BIG, BIG)), "ag_fill: shape [4294967296,4294967296] is too large");
    EXPECT_LOCATED(ag_ones(AG_BOOL, AG_SHAPE(2, BIG, BIG)), "is too large");
    EXPECT_LOCATED(ag_from_data(AG_F32, AG_SHAPE(INT64_C(1) << 62, 4), four), "ag_from_data: shape");
    /* The count fits, the bytes do not. */
    EXPECT_LOCATED(ag_from_data(AG_F64, AG_SHAPE(INT64_C(1) << 61), four), "too large");
    EXPECT_LOCATED(ag_random_uniform(AG_SHAPE(BIG, BIG), 0, 1, AG_F32, 1), "ag_random_uniform: shape");
    EXPECT_LOCATED(ag_eye(INT64_C(3037000499), AG_F64), "ag_eye: shape [3037000499,3037000499] is too large");
    /* A dim of 0 holds nothing, yet the other dims must still be sane. */
    EXPECT_LOCATED(ag_zeros(AG_F32, AG_SHAPE(0, BIG, BIG)), "too large");
    /* The largest sizes that fit are fine when nothing is stored. */
    ag_tensor z = ag_zeros(AG_BOOL, AG_SHAPE(0, INT64_C(1) << 62));
    CHECK_TYPE(z, AG_BOOL, AG_SHAPE(0, INT64_C(1) << 62));
    assert_int_equal(ag_num_elements(z), 0);
}

static void test_rules_reject_overflow(void **state)
{
    (void)state;
    /* Empty tensors with huge other dims: their results overflow. */
    ag_tensor a = ag_zeros(AG_F32, AG_SHAPE(0, 1, BIG));
    ag_tensor b = ag_zeros(AG_F32, AG_SHAPE(0, BIG, 1));
    EXPECT_LOCATED(ag_add(a, b), "ag_add: shape [0,4294967296,4294967296] is too large");
    EXPECT_LOCATED(ag_reshape(ag_zeros(AG_F32, AG_SHAPE(0)), AG_SHAPE(0, BIG, BIG)),
                   "ag_reshape: shape");
    ag_tensor wide = ag_zeros(AG_F32, AG_SHAPE(0, INT64_C(1) << 60));
    EXPECT_LOCATED(ag_concat(1, 2, ((ag_tensor[]){wide, wide})), "ag_concat: shape");
    /* Two axes of 2^62 bools would sum past INT64_MAX inside the rule. */
    ag_tensor flags = ag_zeros(AG_BOOL, AG_SHAPE(0, INT64_C(1) << 62));
    EXPECT_LOCATED(ag_concat(1, 2, ((ag_tensor[]){flags, flags})), "concat axis 1 would have more");
    EXPECT_LOCATED(ag_stack(0, 2, ((ag_tensor[]){flags, flags})), "ag_stack: shape");
    EXPECT_LOCATED(ag_one_hot(ag_zeros(AG_I32, AG_SHAPE(3)), INT64_C(1) << 62), "ag_one_hot: shape");
    /* [2^31, 0] x [0, 2^33] would be 2^64 elements, read as 0. */
    ag_tensor l = ag_zeros(AG_F32, AG_SHAPE(INT64_C(1) << 31, 0));
    ag_tensor r = ag_zeros(AG_F32, AG_SHAPE(0, INT64_C(1) << 33));
    EXPECT_LOCATED(ag_matmul(l, r), "ag_matmul: shape [2147483648,8589934592] is too large");
    EXPECT_LOCATED(ag_gather(ag_zeros(AG_F32, AG_SHAPE(0, BIG)), ag_zeros(AG_I32, AG_SHAPE(BIG, 0)), 0),
                   "ag_gather: shape");
}

/* ------------------------------------------------- the same while tracing */

enum { WIDE_ONE_HOT_LINE = __LINE__ + 1 };
static ag_tensor wide_one_hot__staged(ag_tensor x) { return ag_one_hot(x, INT64_C(1) << 62); }
static void wide_one_hot__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = wide_one_hot__staged(a[0].tensor);
}
AG_TEST_DESC(wide_one_hot, 1, N_X, K_T, NULL, 1, wide_one_hot__trace);

static void test_traced_overflow(void **state)
{
    (void)state;
    ag_arg args[1] = {targ(ag_zeros(AG_I32, AG_SHAPE(3)))};
    ag_tensor out[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &wide_one_hot__desc, args, out));
    assert_true(ag_is_error(out[0]));
    assert_non_null(ag_last_error());
    assert_non_null(strstr(ag_last_error(), "ag_one_hot: shape [3,4611686018427387904] is too large"));
    /* located at the op inside the traced function */
    char where[256];
    snprintf(where, sizeof where, "%s:%d:", __FILE__, WIDE_ONE_HOT_LINE);
    assert_non_null(strstr(ag_last_error(), where));
}

/* =========================================================== out of memory */

/* 2^50 f32 elements: 4 PiB, more than any address space, so the request
 * fails whatever the system's overcommit policy. */
#define HUGE (INT64_C(1) << 50)

static void test_out_of_memory_is_an_error(void **state)
{
    (void)state;
    EXPECT_LOCATED(ag_zeros(AG_F32, AG_SHAPE(HUGE)),
                   "ag_fill: out of memory allocating 4503599627370496 bytes");
    EXPECT_LOCATED(ag_zeros(AG_F32, AG_SHAPE(INT64_C(1) << 40)), "out of memory");
    EXPECT_LOCATED(ag_from_data(AG_F32, AG_SHAPE(HUGE), (const float[]){1}),
                   "ag_from_data: out of memory allocating 4503599627370496 bytes");
    EXPECT_LOCATED(ag_eye(INT64_C(1) << 26, AG_F64), "ag_eye: out of memory");
    /* Ops whose results are too large for memory: [2^16,1,1], [1,2^16,1]
     * and [1,1,2^16] broadcast to 2^48 elements; one_hot makes 2^50. */
    ag_tensor c = ag_zeros(AG_BOOL, AG_SHAPE(1 << 16, 1, 1));
    ag_tensor x = ag_zeros(AG_F32, AG_SHAPE(1, 1 << 16, 1));
    ag_tensor y = ag_zeros(AG_F32, AG_SHAPE(1, 1, 1 << 16));
    EXPECT_LOCATED(ag_where(c, x, y), "ag_where: out of memory allocating 1125899906842624 bytes");
    EXPECT_LOCATED(ag_one_hot(ag_zeros(AG_I32, AG_SHAPE(1 << 20)), 1 << 30),
                   "ag_one_hot: out of memory allocating 4503599627370496 bytes");
    /* Nothing leaked, and the runtime still works. */
    CHECK_VALUES(ag_add(ag_scalar_f32(1), 2), 3);
}

/* where(c, x, y) over [2^16,1,1], [1,2^16,1] and [1,1,2^16]: compiled
 * code must fail as the eager kernel does, at the op's line. */
enum { HUGE_WHERE_LINE = __LINE__ + 3 };
static ag_tensor huge_where__staged(ag_tensor c, ag_tensor x, ag_tensor y)
{
    return ag_where(c, x, y);
}
static void huge_where__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = huge_where__staged(a[0].tensor, a[1].tensor, a[2].tensor);
}
static const char *const N_CXY[] = {"c", "x", "y"};
static const ag_arg_kind K_TTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
/* One function per target: a target applies to functions traced after
 * it is set, and the first call's trace would be reused. */
AG_TEST_DESC(huge_where_ref, 3, N_CXY, K_TTT, NULL, 1, huge_where__trace);
AG_TEST_DESC(huge_where_cpu, 3, N_CXY, K_TTT, NULL, 1, huge_where__trace);

static void test_out_of_memory_in_graphs(void **state)
{
    (void)state;
    static const char *const targets[] = {"reference", "cpu"};
    const ag_function_desc *fns[] = {&huge_where_ref__desc, &huge_where_cpu__desc};
    ag_arg args[3] = {targ(ag_zeros(AG_BOOL, AG_SHAPE(1 << 16, 1, 1))),
                      targ(ag_zeros(AG_F32, AG_SHAPE(1, 1 << 16, 1))),
                      targ(ag_zeros(AG_F32, AG_SHAPE(1, 1, 1 << 16)))};
    char where[256];
    snprintf(where, sizeof where, "%s:%d: ag_where: out of memory allocating "
                                  "1125899906842624 bytes", __FILE__, HUGE_WHERE_LINE);
    for (int t = 0; t < 2; t++) {
        assert_true(ag_set_target(targets[t]));
        ag_tensor out[1];
        ag_clear_error();
        assert_false(ag_function_call_at(AG_HERE, fns[t], args, out));
        assert_true(ag_is_error(out[0]));
        if (!ag_last_error() || !strstr(ag_last_error(), where))
            fail_msg("target %s: error \"%s\" lacks \"%s\"", targets[t],
                     ag_last_error() ? ag_last_error() : "(none)", where);
    }
    assert_true(ag_set_target(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_constructors_reject_overflow),
        TU_TEST(test_rules_reject_overflow),
        TU_TEST(test_traced_overflow),
        TU_TEST(test_out_of_memory_is_an_error),
        TU_TEST(test_out_of_memory_in_graphs),
    };
    TU_RUN(tests);
}
