/*
 * test_trace_rules.c - the rules tracing enforces (dsl.md), signatures,
 * the retracing warning, inspection, and concurrent first calls.
 */
#include "staged_util.h"
#include "config.h"

#include <pthread.h>
#include <unistd.h>

/* ------------------------------------- a loop variable changing dtype */
struct widen__state {
    ag_tensor x;
};
static ag_tensor widen__cond(void *s_)
{
    struct widen__state *s = s_;
    return ag_less(ag_reduce_sum(ag_cast(s->x, AG_F32), AG_ALL_AXES, false), 10);
}
static void widen__body(void *s_)
{
    struct widen__state *s = s_;
    s->x = ag_cast(ag_add(s->x, 1), AG_F32); /* i32 before, f32 after */
}
static ag_tensor widen__staged(ag_tensor x)
{
    struct widen__state s = {x};
    ag_tensor *vars[] = {&s.x};
    static const char *const names[] = {"x"};
    ag_while_at(AG_HERE, 1, vars, names, widen__cond, widen__body, &s);
    return s.x;
}
static void widen__trace(const ag_arg *a, ag_tensor *o) { o[0] = widen__staged(a[0].tensor); }
AG_TEST_DESC(widen, 1, N_X, K_T, NULL, 1, widen__trace);

static void test_loop_var_dtype_change(void **state)
{
    (void)state;
    ag_arg a[1] = {targ(ag_scalar_i32(1))};
    ag_tensor o[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &widen__desc, a, o));
    assert_true(ag_is_error(o[0]));
    assert_non_null(strstr(ag_last_error(),
                           "'x' has dtype i32 before the loop, but dtype f32 after one "
                           "iteration"));
    assert_non_null(strstr(ag_last_error(), "test_trace_rules.c:"));
    assert_int_equal(ag_function_trace_count("widen"), 0); /* not cached */
}

/* ---------------------------- a loop variable changing shape, and the
 * shape invariant that allows it */
struct grow__state {
    ag_tensor x;
    int relaxed; /* 0 no; 1 before the loop; 2 on a copy of x; 3 in the body;
                    4 in the body, of another rank */
};
static ag_tensor grow__cond(void *s_)
{
    struct grow__state *s = s_;
    return ag_less(ag_size(s->x), 8);
}
static void grow__body(void *s_)
{
    struct grow__state *s = s_;
    if (s->relaxed == 3)
        ag_set_loop_options(&s->x, AG_SHAPE(-1));
    if (s->relaxed == 4)
        ag_set_loop_options(&s->x, AG_SHAPE(-1, -1));
    ag_tensor parts[2] = {s->x, s->x};
    s->x = ag_concat(0, 2, parts);
}
static ag_tensor grow__staged(ag_tensor x, int relaxed)
{
    struct grow__state s = {x, relaxed};
    ag_tensor copy = x;
    if (relaxed == 1)
        ag_set_loop_options(&s.x, AG_SHAPE(-1));
    if (relaxed == 2)
        ag_set_loop_options(&copy, AG_SHAPE(-1)); /* holds x's tensor, but is not x */
    ag_tensor *vars[] = {&s.x};
    static const char *const names[] = {"x"};
    ag_while_at(AG_HERE, 1, vars, names, grow__cond, grow__body, &s);
    return s.x;
}
static void grow__trace(const ag_arg *a, ag_tensor *o) { o[0] = grow__staged(a[0].tensor, (int)a[1].i); }
AG_TEST_DESC(grow, 2, N_XY, K_TI, NULL, 1, grow__trace);
static ag_tensor grow(ag_tensor x, int relaxed, bool *ok)
{
    ag_arg a[2] = {targ(x), {.kind = AG_ARG_INT, .i = relaxed}};
    ag_tensor o[1];
    *ok = ag_function_call_at(AG_HERE, &grow__desc, a, o);
    return o[0];
}

static void test_loop_var_shape_change_and_invariant(void **state)
{
    (void)state;
    bool ok;
    ag_clear_error();
    (void)grow(F32(AG_SHAPE(1), 3), 0, &ok);
    assert_false(ok);
    assert_non_null(strstr(ag_last_error(), "'x' has shape [1] before the loop, but shape "
                                            "[2] after one iteration"));
    ag_tensor r = grow(F32(AG_SHAPE(1), 3), 1, &ok);
    assert_true(ok);
    CHECK_VALUES(r, 3, 3, 3, 3, 3, 3, 3, 3);
}

/* The invariant belongs to the variable whose address is passed, not to
 * the tensor it holds: on a copy, x's loop is still checked, and the
 * copy's invariant, which no loop takes, is an error of its own. */
static void test_loop_invariant_keyed_by_variable(void **state)
{
    (void)state;
    bool ok;
    ag_clear_error();
    (void)grow(F32(AG_SHAPE(2), 1, 1), 2, &ok);
    assert_false(ok);
    assert_non_null(strstr(ag_last_error(), "'x' has shape [2] before the loop"));
}

/* At the top of the loop body the invariant applies to that loop. */
static void test_loop_invariant_in_body(void **state)
{
    (void)state;
    bool ok;
    ag_clear_error();
    ag_tensor r = grow(F32(AG_SHAPE(2), 5, 5), 3, &ok);
    assert_true(ok);
    CHECK_VALUES(r, 5, 5, 5, 5, 5, 5, 5, 5);
}

/* An invariant of another rank than the variable's is the user's error
 * (it made an invalid graph, reported as an internal error). */
static void test_loop_invariant_of_another_rank(void **state)
{
    (void)state;
    bool ok;
    ag_clear_error();
    (void)grow(F32(AG_SHAPE(2), 5, 5), 4, &ok);
    assert_false(ok);
    assert_non_null(strstr(ag_last_error(), "test_trace_rules.c:"));
    assert_non_null(strstr(ag_last_error(), "ag_set_loop_options: 'x' has shape [2] before "
                                            "the loop, but the invariant [?,?] has another "
                                            "rank"));
}

/* An invariant that no staged loop takes is reported where it was set. */
static ag_tensor lonely__staged(ag_tensor x)
{
    ag_set_loop_options(&x, AG_SHAPE(-1));
    return ag_add(x, 1);
}
static void lonely__trace(const ag_arg *a, ag_tensor *o) { o[0] = lonely__staged(a[0].tensor); }
AG_TEST_DESC(lonely, 1, N_X, K_T, NULL, 1, lonely__trace);

static void test_loop_invariant_without_loop(void **state)
{
    (void)state;
    ag_arg a[1] = {targ(ag_scalar_i32(1))};
    ag_tensor o[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &lonely__desc, a, o));
    assert_non_null(strstr(ag_last_error(), "test_trace_rules.c:"));
    assert_non_null(strstr(ag_last_error(), "ag_set_loop_options(&x, ...): no staged loop "
                                            "after it carries this variable"));
}

/* ----------------------------------- branches disagreeing in dtype */
struct mixed__if {
    ag_tensor x, y;
};
static void mixed__then(void *s_)
{
    struct mixed__if *s = s_;
    s->y = ag_cast(s->x, AG_F32);
}
static void mixed__else(void *s_)
{
    struct mixed__if *s = s_;
    s->y = s->x;
}
static ag_tensor mixed__staged(ag_tensor x)
{
    struct mixed__if s = {x, {0, 0}};
    ag_tensor *vars[] = {&s.y};
    static const char *const names[] = {"y"};
    ag_if_at(AG_HERE, ag_greater(x, 0), 1, vars, names, mixed__then, mixed__else, &s);
    return s.y;
}
static void mixed__trace(const ag_arg *a, ag_tensor *o) { o[0] = mixed__staged(a[0].tensor); }
AG_TEST_DESC(mixed, 1, N_X, K_T, NULL, 1, mixed__trace);

static void test_branch_dtype_mismatch(void **state)
{
    (void)state;
    ag_arg a[1] = {targ(ag_scalar_i32(1))};
    ag_tensor o[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &mixed__desc, a, o));
    assert_non_null(strstr(ag_last_error(), "'y' is f32[] in the then branch but i32[] in "
                                            "the else branch"));
}

/* -------------------------- a variable only one branch initializes */
static void half__then(void *s_)
{
    struct mixed__if *s = s_;
    s->y = s->x;
}
static ag_tensor half__staged(ag_tensor x)
{
    struct mixed__if s = {x, {0, 0}};
    ag_tensor *vars[] = {&s.y};
    static const char *const names[] = {"y"};
    ag_if_at(AG_HERE, ag_greater(x, 0), 1, vars, names, half__then, NULL, &s);
    return s.y;
}
static void half__trace(const ag_arg *a, ag_tensor *o) { o[0] = half__staged(a[0].tensor); }
AG_TEST_DESC(half, 1, N_X, K_T, NULL, 1, half__trace);

static void test_one_branch_initialization(void **state)
{
    (void)state;
    ag_arg a[1] = {targ(ag_scalar_i32(1))};
    ag_tensor o[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &half__desc, a, o));
    assert_non_null(strstr(ag_last_error(), "'y' must also be initialized in the else branch"));
}

/* ------------------ a variable the loop must initialize: zero iterations */
struct init__state {
    ag_tensor i, n, last;
};
static ag_tensor init__cond(void *s_)
{
    struct init__state *s = s_;
    return ag_less(s->i, s->n);
}
static void init__body(void *s_)
{
    struct init__state *s = s_;
    s->last = ag_mul(s->i, 10);
    s->i = ag_add(s->i, 1);
}
static ag_tensor init__staged(ag_tensor n)
{
    struct init__state s = {ag_scalar_i32(0), n, {0, 0}};
    ag_tensor *vars[] = {&s.i, &s.last};
    static const char *const names[] = {"i", "last"};
    ag_while_at(AG_HERE, 2, vars, names, init__cond, init__body, &s);
    return s.last;
}
static void init__trace(const ag_arg *a, ag_tensor *o) { o[0] = init__staged(a[0].tensor); }
AG_TEST_DESC(init, 1, N_N, K_T, NULL, 1, init__trace);
static ag_tensor init(ag_tensor n, bool *ok)
{
    ag_arg a[1] = {targ(n)};
    ag_tensor o[1];
    *ok = ag_function_call_at(AG_HERE, &init__desc, a, o);
    return o[0];
}

static void test_loop_must_iterate_to_initialize(void **state)
{
    (void)state;
    bool ok;
    CHECK_VALUES(init(ag_scalar_i32(4), &ok), 30);
    assert_true(ok);
    ag_clear_error();
    (void)init(ag_scalar_i32(0), &ok);
    assert_false(ok);
    assert_non_null(strstr(ag_last_error(), "loop must iterate at least once to initialize "
                                            "'last'"));
    assert_int_equal(ag_function_trace_count("init"), 1); /* a run-time error */
}

/* --------------------- ag_bool on a symbolic tensor in unstaged code */
static ag_tensor unstaged__staged(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0))) /* agc would have staged this */
        return x;
    return ag_neg(x);
}
static void unstaged__trace(const ag_arg *a, ag_tensor *o) { o[0] = unstaged__staged(a[0].tensor); }
AG_TEST_DESC(unstaged, 1, N_X, K_T, NULL, 1, unstaged__trace);

static void test_ag_bool_on_symbolic_is_an_error(void **state)
{
    (void)state;
    ag_arg a[1] = {targ(ag_scalar_i32(1))};
    ag_tensor o[1];
    ag_clear_error();
    assert_false(ag_function_call_at(AG_HERE, &unstaged__desc, a, o));
    assert_non_null(strstr(ag_last_error(), "was not staged"));
    assert_non_null(strstr(ag_last_error(), "test_trace_rules.c:"));
}

/* --------------------------------------------------------- signatures */
static ag_tensor scale__staged(ag_tensor x) { return ag_mul(x, 2); }
static void scale__trace(const ag_arg *a, ag_tensor *o) { o[0] = scale__staged(a[0].tensor); }
AG_TEST_DESC(scale, 1, N_X, K_T, "f32[?,2]", 1, scale__trace);
static ag_tensor scale(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &scale__desc, a, o);
    return o[0];
}

static void test_signature_matches_and_mismatches(void **state)
{
    (void)state;
    CHECK_VALUES(scale(F32(AG_SHAPE(1, 2), 1, 2)), 2, 4);
    CHECK_VALUES(scale(F32(AG_SHAPE(3, 2), 1, 2, 3, 4, 5, 6)), 2, 4, 6, 8, 10, 12);
    assert_int_equal(ag_function_trace_count("scale"), 1); /* matching calls never retrace */
    EXPECT_ERROR(scale(F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6)),
                 "'scale' parameter 'x' expects f32[?,2] (from its AG_SIGNATURE), got "
                 "f32[2,3]");
    EXPECT_ERROR(scale(I32(AG_SHAPE(1, 2), 1, 2)), "got i32[1,2]");
    assert_int_equal(ag_function_trace_count("scale"), 1);
}

/* -------------------------------- inspection: signatures and graphs */
static char *read_all(FILE *f)
{
    long n = ftell(f);
    char *buf = calloc((size_t)n + 1, 1);
    rewind(f);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        buf[0] = '\0';
    return buf;
}

static void test_print_signatures_and_graph(void **state)
{
    (void)state;
    (void)scale(F32(AG_SHAPE(1, 2), 1, 2));
    FILE *f = tmpfile();
    ag_function_print_signatures("scale", f);
    char *text = read_all(f);
    fclose(f);
    assert_string_equal(text, "scale(x)\n  Args:\n    x: f32[?,2]\n  Returns:\n    f32[?,2]\n");
    free(text);

    ag_concrete_function *cf = ag_get_concrete_function("scale", "f32[?,2]");
    assert_non_null(cf);
    f = tmpfile();
    ag_concrete_print_graph(cf, f);
    text = read_all(f);
    fclose(f);
    assert_non_null(strstr(text, "func @scale(%0: f32[?,2]) -> (f32[?,2])"));
    assert_non_null(strstr(text, "mul("));
    free(text);
    assert_null(ag_get_concrete_function("no_such_function", "f32[]"));
    assert_null(ag_get_concrete_function("scale", "f32[?,2"));
}

/* ------------------------------------------------- the retrace warning */
static ag_tensor shifty__staged(ag_tensor x, int k) { return ag_add(x, k); }
static void shifty__trace(const ag_arg *a, ag_tensor *o) { o[0] = shifty__staged(a[0].tensor, (int)a[1].i); }
AG_TEST_DESC(shifty, 2, N_XY, K_TI, NULL, 1, shifty__trace);

static void test_retrace_warning_names_the_parameter(void **state)
{
    (void)state;
    FILE *err = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    dup2(fileno(err), 2);
    for (int k = 0; k < 6; k++) {
        ag_arg a[2] = {targ(ag_scalar_i32(1)), {.kind = AG_ARG_INT, .i = k}};
        ag_tensor o[1];
        ag_function_call_at(AG_HERE, &shifty__desc, a, o);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(err, 0, SEEK_END);
    char *text = read_all(err);
    fclose(err);
    assert_non_null(strstr(text, "warning: 5 of the last 5 calls to 'shifty' traced a new "
                                 "graph: parameter 'y' changed from 3 to 4"));
    /* Said once, not on every later retrace. */
    assert_null(strstr(strstr(text, "warning") + 1, "warning"));
    free(text);
}

/* ------------------- a variable created inside, on the first trace only */
static ag_tensor counter__staged(ag_tensor x)
{
    ag_variable v = ag_variable_new(ag_zeros(ag_dtype_of(x), AG_SCALAR));
    ag_assign_add(v, x);
    return ag_variable_read(v);
}
static void counter__trace(const ag_arg *a, ag_tensor *o) { o[0] = counter__staged(a[0].tensor); }
AG_TEST_DESC(counter, 1, N_X, K_T, NULL, 1, counter__trace);
static ag_tensor counter(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &counter__desc, a, o);
    return o[0];
}

static void test_variable_created_on_first_trace_only(void **state)
{
    (void)state;
    CHECK_VALUES(counter(ag_scalar_i32(1)), 1);
    CHECK_VALUES(counter(ag_scalar_i32(1)), 2); /* the same variable */
    CHECK_VALUES(counter(ag_scalar_i32(5)), 7);
    EXPECT_ERROR(counter(ag_scalar_i64(1)), "only on its first trace");
}

/* ------------------------- AG_RUN_FUNCTIONS_EAGERLY=1 skips tracing */
static void test_run_functions_eagerly_env(void **state)
{
    (void)state;
    (void)scale(F32(AG_SHAPE(1, 2), 1, 2));
    int traces = ag_function_trace_count("scale");
    setenv("AG_RUN_FUNCTIONS_EAGERLY", "1", 1);
    rt_config_reload_env();
    /* Eagerly nothing is traced, so the f32[?,2] signature is not checked. */
    ag_tensor r = scale(F32(AG_SHAPE(1, 3), 1, 2, 3));
    unsetenv("AG_RUN_FUNCTIONS_EAGERLY");
    rt_config_reload_env();
    CHECK_VALUES(r, 2, 4, 6);
    assert_int_equal(ag_function_trace_count("scale"), traces);
    EXPECT_ERROR(scale(F32(AG_SHAPE(1, 3), 1, 2, 3)), "expects f32[?,2]");
    ag_run_functions_eagerly(true); /* the API call works like the variable */
    CHECK_VALUES(scale(F32(AG_SHAPE(1, 3), 1, 2, 3)), 2, 4, 6);
    ag_run_functions_eagerly(false);
    assert_int_equal(ag_function_trace_count("scale"), traces);
}

/* ---------------------------- concurrent first calls trace only once */
static ag_tensor slow__staged(ag_tensor x)
{
    usleep(20000); /* widen the window in which other threads arrive */
    return ag_square(x);
}
static void slow__trace(const ag_arg *a, ag_tensor *o) { o[0] = slow__staged(a[0].tensor); }
AG_TEST_DESC(slow, 1, N_X, K_T, NULL, 1, slow__trace);

static void *call_slow(void *arg)
{
    float *result = arg;
    ag_scope_push();
    ag_arg a[1] = {targ(ag_scalar_f32(3))};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &slow__desc, a, o);
    *result = ag_get_f32(o[0], 0);
    ag_scope_pop();
    return NULL;
}

static void test_concurrent_first_calls_trace_once(void **state)
{
    (void)state;
    pthread_t threads[4];
    float results[4] = {0};
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, call_slow, &results[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < 4; i++)
        assert_float_equal(results[i], 9.0f, 0);
    assert_int_equal(ag_function_trace_count("slow"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_loop_var_dtype_change),
        TU_TEST(test_loop_var_shape_change_and_invariant),
        TU_TEST(test_loop_invariant_keyed_by_variable),
        TU_TEST(test_loop_invariant_in_body),
        TU_TEST(test_loop_invariant_of_another_rank),
        TU_TEST(test_loop_invariant_without_loop),
        TU_TEST(test_branch_dtype_mismatch),
        TU_TEST(test_one_branch_initialization),
        TU_TEST(test_loop_must_iterate_to_initialize),
        TU_TEST(test_ag_bool_on_symbolic_is_an_error),
        TU_TEST(test_signature_matches_and_mismatches),
        TU_TEST(test_print_signatures_and_graph),
        TU_TEST(test_retrace_warning_names_the_parameter),
        TU_TEST(test_variable_created_on_first_trace_only),
        TU_TEST(test_run_functions_eagerly_env),
        TU_TEST(test_concurrent_first_calls_trace_once),
    };
    TU_RUN(tests);
}
