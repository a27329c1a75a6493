/*
 * test_util.h - helpers shared by the cmocka unit tests.
 *
 * Every test runs in AG_ERRORS_RETURN mode inside a scope (see setup and
 * teardown), so an error path is checked with EXPECT_ERROR instead of
 * killing the test binary, and every tensor a test makes is freed.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

static inline int tu_setup(void **state)
{
    (void)state;
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_clear_error();
    ag_scope_push();
    return 0;
}

static inline int tu_teardown(void **state)
{
    (void)state;
    ag_scope_pop();
    return 0;
}

#define TU_TEST(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)

/* A new empty directory "/tmp/<prefix>-XXXXXX", its path in dir (n bytes);
 * false if it cannot be made. */
static inline bool tu_temp_dir(char *dir, size_t n, const char *prefix)
{
    snprintf(dir, n, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(dir) != NULL;
}

/* Removes a directory tree a test made (rm -rf). */
static inline void tu_remove_dir(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", path);
}

/* A group whose tests run in a new directory /tmp/<prefix>-XXXXXX (the
 * working directory while they run), removed after them: defines root,
 * setup_group and teardown_group for cmocka_run_group_tests. */
#define TU_GROUP_IN_TEMP_DIR(prefix)                                                   \
    static char root[256];                                                             \
    static int setup_group(void **state)                                               \
    {                                                                                  \
        (void)state;                                                                   \
        return tu_temp_dir(root, sizeof root, prefix) && chdir(root) == 0 ? 0 : -1;    \
    }                                                                                  \
    static int teardown_group(void **state)                                            \
    {                                                                                  \
        (void)state;                                                                   \
        tu_remove_dir(root);                                                           \
        return 0;                                                                      \
    }

/* Runs the group and then frees all runtime state, so the leak checker
 * sees a clean exit. */
#define TU_RUN(tests)                                               \
    do {                                                            \
        int failed_ = cmocka_run_group_tests(tests, NULL, NULL);    \
        ag_shutdown();                                              \
        return failed_;                                             \
    } while (0)

#define F32(shape, ...) ag_from_data(AG_F32, shape, ((const float[]){__VA_ARGS__}))
#define F64(shape, ...) ag_from_data(AG_F64, shape, ((const double[]){__VA_ARGS__}))
#define I32(shape, ...) ag_from_data(AG_I32, shape, ((const int32_t[]){__VA_ARGS__}))
#define I64(shape, ...) ag_from_data(AG_I64, shape, ((const int64_t[]){__VA_ARGS__}))
#define BOOLS(shape, ...) ag_from_data(AG_BOOL, shape, ((const uint8_t[]){__VA_ARGS__}))

/* Asserts t has this dtype and shape. */
static inline void tu_check_type(ag_tensor t, ag_dtype dt, ag_shape s, int line)
{
    if (ag_is_error(t))
        fail_msg("line %d: unexpected error: %s", line, ag_last_error());
    if (ag_dtype_of(t) != dt)
        fail_msg("line %d: dtype %s, expected %s", line, ag_dtype_name(ag_dtype_of(t)),
                 ag_dtype_name(dt));
    if (!ag_shape_equal(ag_shape_get(t), s))
        fail_msg("line %d: shape mismatch (rank %d vs %d)", line, ag_rank(t), s.rank);
}
#define CHECK_TYPE(t, dt, s) tu_check_type((t), (dt), (s), __LINE__)

/* Asserts every element equals the given doubles (exactly, or both NaN). */
static inline void tu_check_values(ag_tensor t, int n, const double *want, double tol,
                                   int line)
{
    if (ag_is_error(t))
        fail_msg("line %d: unexpected error: %s", line, ag_last_error());
    if (ag_num_elements(t) != n)
        fail_msg("line %d: %lld elements, expected %d", line,
                 (long long)ag_num_elements(t), n);
    for (int i = 0; i < n; i++) {
        double got = ag_get_f64(t, i);
        if (isnan(want[i]) && isnan(got))
            continue;
        if (!(fabs(got - want[i]) <= tol) && !(got == want[i]))
            fail_msg("line %d: element %d is %.9g, expected %.9g", line, i, got, want[i]);
    }
}
#define CHECK_VALUES(t, ...)                                                   \
    tu_check_values((t), (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), \
                    (const double[]){__VA_ARGS__}, 0.0, __LINE__)
#define CHECK_CLOSE(t, tol, ...)                                               \
    tu_check_values((t), (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), \
                    (const double[]){__VA_ARGS__}, (tol), __LINE__)

/* Asserts the expression fails and the error message contains `needle`. */
#define EXPECT_ERROR(expr, needle)                                             \
    do {                                                                       \
        ag_clear_error();                                                      \
        ag_tensor r_ = (expr);                                                 \
        const char *m_ = ag_last_error();                                      \
        if (!ag_is_error(r_))                                                  \
            fail_msg("line %d: expected an error containing \"%s\"", __LINE__, (needle)); \
        if (!m_ || !strstr(m_, (needle)))                                      \
            fail_msg("line %d: error \"%s\" lacks \"%s\"", __LINE__,           \
                     m_ ? m_ : "(none)", (needle));                            \
    } while (0)

/* For calls that return void: asserts an error was recorded. */
#define EXPECT_ERROR_VOID(stmt, needle)                                        \
    do {                                                                       \
        ag_clear_error();                                                      \
        stmt;                                                                  \
        const char *m_ = ag_last_error();                                      \
        if (!m_ || !strstr(m_, (needle)))                                      \
            fail_msg("line %d: error \"%s\" lacks \"%s\"", __LINE__,           \
                     m_ ? m_ : "(none)", (needle));                            \
    } while (0)

#endif
