/*
 * test_trace.c - tracing, staged control flow, concrete functions and the
 * reference executor, on hand-written staged C in agc's output form.
 * Every program is run eagerly and as a graph, and the outputs compared.
 */
#include "staged_util.h"

#include <pthread.h>

/* ------------------------------------------------------------ simple_relu
 *   AG_FUNCTION ag_tensor simple_relu(ag_tensor x) {
 *       if (ag_bool(ag_greater(x, 0))) return x; else return ag_zeros_like(x);
 *   }
 */
struct simple_relu__if_1 {
    ag_tensor x, retval;
};
static void simple_relu__if_1_then(void *s_)
{
    struct simple_relu__if_1 *s = s_;
    s->retval = s->x;
}
static void simple_relu__if_1_else(void *s_)
{
    struct simple_relu__if_1 *s = s_;
    s->retval = ag_zeros_like(s->x);
}
static ag_tensor simple_relu__staged(ag_tensor x)
{
    struct simple_relu__if_1 s = {x, {0, 0}};
    ag_tensor *vars[] = {&s.retval};
    static const char *const names[] = {"<return value>"};
    ag_if_at(AG_HERE, ag_greater(x, 0), 1, vars, names, simple_relu__if_1_then,
             simple_relu__if_1_else, &s);
    return s.retval;
}
static void simple_relu__trace(const ag_arg *a, ag_tensor *o) { o[0] = simple_relu__staged(a[0].tensor); }
AG_TEST_DESC(simple_relu, 1, N_X, K_T, NULL, 1, simple_relu__trace);
static ag_tensor simple_relu(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &simple_relu__desc, a, o);
    return o[0];
}

static ag_tensor relu_of_minus_3(void) { return simple_relu(ag_scalar_f32(-3)); }
static ag_tensor relu_of_5(void) { return simple_relu(ag_scalar_f32(5)); }

static void test_simple_relu(void **state)
{
    (void)state;
    free(BOTH_WAYS(relu_of_minus_3));
    free(BOTH_WAYS(relu_of_5));
    CHECK_VALUES(simple_relu(ag_scalar_f32(5)), 5);
    CHECK_VALUES(simple_relu(ag_scalar_f32(-2)), 0);
    assert_int_equal(ag_function_trace_count("simple_relu"), 1);
    CHECK_VALUES(simple_relu(ag_scalar_i32(-2)), 0); /* a new dtype: a new trace */
    assert_int_equal(ag_function_trace_count("simple_relu"), 2);
}

/* ---------------------------------------------------------------- squash
 *   while (ag_bool(ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 1))) {
 *       ag_print(x); x = ag_tanh(x);
 *   }
 *   return x;
 */
struct squash__while_1 {
    ag_tensor x;
};
static ag_tensor squash__while_1_cond(void *s_)
{
    struct squash__while_1 *s = s_;
    ag_tensor x = s->x;
    return ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 1);
}
static void squash__while_1_body(void *s_)
{
    struct squash__while_1 *s = s_;
    ag_tensor x = s->x;
    ag_print(x);
    x = ag_tanh(x);
    s->x = x;
}
static ag_tensor squash__staged(ag_tensor x)
{
    struct squash__while_1 s = {x};
    ag_tensor *vars[] = {&s.x};
    static const char *const names[] = {"x"};
    ag_while_at(AG_HERE, 1, vars, names, squash__while_1_cond, squash__while_1_body, &s);
    x = s.x;
    return x;
}
static void squash__trace(const ag_arg *a, ag_tensor *o) { o[0] = squash__staged(a[0].tensor); }
AG_TEST_DESC(squash, 1, N_X, K_T, NULL, 1, squash__trace);
static ag_tensor squash(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &squash__desc, a, o);
    return o[0];
}

static ag_tensor squash_pair(void) { return squash(F32(AG_SHAPE(2), 0.5, 1)); }

static void test_squash_prints_every_iteration(void **state)
{
    (void)state;
    char *out = BOTH_WAYS(squash_pair);
    assert_string_equal(out, "[0.5 1]\n[0.462117 0.761594]\n[0.431808 0.642015]\n");
    free(out);
}

/* -------------------------------------------------------------- fizzbuzz */
struct fizzbuzz__if_5 {
    ag_tensor i;
};
static void fizzbuzz__if_5_then(void *s_) { (void)s_; ag_print("buzz"); }
static void fizzbuzz__if_5_else(void *s_)
{
    struct fizzbuzz__if_5 *s = s_;
    ag_print(s->i);
}
static void fizzbuzz__if_4_then(void *s_) { (void)s_; ag_print("fizz"); }
static void fizzbuzz__if_4_else(void *s_)
{
    struct fizzbuzz__if_5 *s = s_;
    ag_tensor i = s->i;
    ag_if_at(AG_HERE, ag_equal(ag_mod(i, 5), 0), 0, NULL, NULL, fizzbuzz__if_5_then,
             fizzbuzz__if_5_else, s);
}
static void fizzbuzz__if_3_then(void *s_) { (void)s_; ag_print("fizzbuzz"); }
static void fizzbuzz__if_3_else(void *s_)
{
    struct fizzbuzz__if_5 *s = s_;
    ag_tensor i = s->i;
    ag_if_at(AG_HERE, ag_equal(ag_mod(i, 3), 0), 0, NULL, NULL, fizzbuzz__if_4_then,
             fizzbuzz__if_4_else, s);
}
struct fizzbuzz__for_2 {
    ag_tensor i, n;
};
static ag_tensor fizzbuzz__for_2_cond(void *s_)
{
    struct fizzbuzz__for_2 *s = s_;
    return ag_less_equal(s->i, s->n);
}
static void fizzbuzz__for_2_body(void *s_)
{
    struct fizzbuzz__for_2 *s = s_;
    ag_tensor i = s->i;
    struct fizzbuzz__if_5 st = {i};
    ag_if_at(AG_HERE, ag_equal(ag_mod(i, 15), 0), 0, NULL, NULL, fizzbuzz__if_3_then,
             fizzbuzz__if_3_else, &st);
    i = ag_add(i, 1);
    s->i = i;
}
static void fizzbuzz__staged(ag_tensor n)
{
    struct fizzbuzz__for_2 s = {ag_scalar_i32(1), n};
    ag_tensor *vars[] = {&s.i};
    static const char *const names[] = {"i"};
    ag_while_at(AG_HERE, 1, vars, names, fizzbuzz__for_2_cond, fizzbuzz__for_2_body, &s);
}
static void fizzbuzz__trace(const ag_arg *a, ag_tensor *o) { (void)o; fizzbuzz__staged(a[0].tensor); }
AG_TEST_DESC(fizzbuzz, 1, N_N, K_T, NULL, 0, fizzbuzz__trace);
static void fizzbuzz(ag_tensor n)
{
    ag_arg a[1] = {targ(n)};
    ag_function_call_at(AG_HERE, &fizzbuzz__desc, a, NULL);
}

static ag_tensor fizzbuzz_5_then_20(void)
{
    fizzbuzz(ag_scalar_i32(5));
    fizzbuzz(ag_scalar_i32(20));
    return (ag_tensor){0, 0};
}

static void test_fizzbuzz_traced_once(void **state)
{
    (void)state;
    char *out = BOTH_WAYS(fizzbuzz_5_then_20);
    assert_string_equal(out, "1\n2\nfizz\n4\nbuzz\n"
                             "1\n2\nfizz\n4\nbuzz\nfizz\n7\n8\nfizz\nbuzz\n11\nfizz\n13\n14\n"
                             "fizzbuzz\n16\n17\nfizz\n19\nbuzz\n");
    free(out);
    assert_int_equal(ag_function_trace_count("fizzbuzz"), 1);
}

/* ------------------------------------------------------------------ power
 *   AG_FUNCTION ag_tensor power(ag_tensor x, int y) {
 *       ag_tensor result = ag_eye(10, AG_I32);
 *       for (int i = 0; i < y; i++) result = ag_matmul(x, result);
 *       return result;
 *   }
 */
static ag_tensor power__staged(ag_tensor x, int y)
{
    ag_tensor result = ag_eye(10, AG_I32);
    for (int i = 0; i < y; i++) /* a C loop: unrolled while tracing */
        result = ag_matmul(x, result);
    return result;
}
static void power__trace(const ag_arg *a, ag_tensor *o) { o[0] = power__staged(a[0].tensor, (int)a[1].i); }
AG_TEST_DESC(power, 2, N_XY, K_TI, NULL, 1, power__trace);
static ag_tensor power(ag_tensor x, int y)
{
    ag_arg a[2] = {targ(x), {.kind = AG_ARG_INT, .i = y}};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &power__desc, a, o);
    return o[0];
}

static void test_power_retraces_per_scalar_value(void **state)
{
    (void)state;
    ag_tensor x = ag_fill(AG_I32, AG_SHAPE(10, 10), 1);
    ag_tensor r = power(x, 2);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(10, 10));
    assert_int_equal(ag_get_i32(r, 0), 10);
    assert_int_equal(ag_function_trace_count("power"), 1);
    (void)power(ag_fill(AG_I32, AG_SHAPE(10, 10), 2), 2); /* same signature */
    assert_int_equal(ag_function_trace_count("power"), 1);
    assert_int_equal(ag_get_i32(power(x, 3), 0), 100);
    assert_int_equal(ag_function_trace_count("power"), 2);
    ag_concrete_function *p3 = ag_get_concrete_function("power", "i32[10,10], y=3");
    ag_concrete_function *p10 = ag_get_concrete_function("power", "i32[10,10], y=10");
    assert_non_null(p3);
    assert_non_null(p10);
    assert_int_equal(ag_function_trace_count("power"), 3); /* y=3 was cached */
    assert_true(ag_concrete_num_nodes(p10) > ag_concrete_num_nodes(p3));
}

/* ------------------------------------------- while with two loop variables
 *   ag_tensor i = 0, acc = 0;  while (i < n) { acc += i; i += 1; }  return acc;
 */
struct sum_below__while {
    ag_tensor i, acc, n;
};
static ag_tensor sum_below__cond(void *s_)
{
    struct sum_below__while *s = s_;
    return ag_less(s->i, s->n);
}
static void sum_below__body(void *s_)
{
    struct sum_below__while *s = s_;
    ag_tensor i = s->i, acc = s->acc;
    acc = ag_add(acc, i);
    i = ag_add(i, 1);
    s->i = i;
    s->acc = acc;
}
static ag_tensor sum_below__staged(ag_tensor n)
{
    struct sum_below__while s = {ag_scalar_i32(0), ag_scalar_i32(0), n};
    ag_tensor *vars[] = {&s.i, &s.acc};
    static const char *const names[] = {"i", "acc"};
    ag_while_at(AG_HERE, 2, vars, names, sum_below__cond, sum_below__body, &s);
    return s.acc;
}
static void sum_below__trace(const ag_arg *a, ag_tensor *o) { o[0] = sum_below__staged(a[0].tensor); }
AG_TEST_DESC(sum_below, 1, N_N, K_T, NULL, 1, sum_below__trace);
static ag_tensor sum_below(ag_tensor n)
{
    ag_arg a[1] = {targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &sum_below__desc, a, o);
    return o[0];
}
static ag_tensor sum_below_10(void) { return sum_below(ag_scalar_i32(10)); }
static ag_tensor sum_below_0(void) { return sum_below(ag_scalar_i32(0)); }

static void test_while_two_loop_vars(void **state)
{
    (void)state;
    free(BOTH_WAYS(sum_below_10));
    free(BOTH_WAYS(sum_below_0));
    CHECK_VALUES(sum_below(ag_scalar_i32(10)), 45);
    CHECK_VALUES(sum_below(ag_scalar_i32(0)), 0);
}

/* An eager loop keeps only its variables' latest values: 5,000 iterations
 * leave a handful of live tensors, not tens of thousands. */
static void test_eager_loop_memory_is_bounded(void **state)
{
    (void)state;
    ag_run_functions_eagerly(true);
    ag_tensor n = ag_scalar_i32(5000);
    int64_t before = ag_live_tensors();
    ag_tensor r = sum_below(n);
    int64_t after = ag_live_tensors();
    ag_run_functions_eagerly(false);
    CHECK_VALUES(r, 12497500);
    assert_true(after - before < 10);
    CHECK_VALUES(n, 5000); /* the caller's tensors are untouched */
}

/* -------------------------------------------------------------- nested loops
 *   total = 0; i = 0;
 *   while (i < n) { j = 0; while (j < i) { total += j; j += 1; } i += 1; }
 */
struct nested__inner {
    ag_tensor j, total, i;
};
static ag_tensor nested__inner_cond(void *s_)
{
    struct nested__inner *s = s_;
    return ag_less(s->j, s->i);
}
static void nested__inner_body(void *s_)
{
    struct nested__inner *s = s_;
    s->total = ag_add(s->total, s->j);
    s->j = ag_add(s->j, 1);
}
struct nested__outer {
    ag_tensor i, total, n;
};
static ag_tensor nested__outer_cond(void *s_)
{
    struct nested__outer *s = s_;
    return ag_less(s->i, s->n);
}
static void nested__outer_body(void *s_)
{
    struct nested__outer *s = s_;
    struct nested__inner in = {ag_scalar_i32(0), s->total, s->i};
    ag_tensor *vars[] = {&in.j, &in.total};
    static const char *const names[] = {"j", "total"};
    ag_while_at(AG_HERE, 2, vars, names, nested__inner_cond, nested__inner_body, &in);
    s->total = in.total;
    s->i = ag_add(s->i, 1);
}
static ag_tensor nested__staged(ag_tensor n)
{
    struct nested__outer s = {ag_scalar_i32(0), ag_scalar_i32(0), n};
    ag_tensor *vars[] = {&s.i, &s.total};
    static const char *const names[] = {"i", "total"};
    ag_while_at(AG_HERE, 2, vars, names, nested__outer_cond, nested__outer_body, &s);
    return s.total;
}
static void nested__trace(const ag_arg *a, ag_tensor *o) { o[0] = nested__staged(a[0].tensor); }
AG_TEST_DESC(nested, 1, N_N, K_T, NULL, 1, nested__trace);
static ag_tensor nested(ag_tensor n)
{
    ag_arg a[1] = {targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &nested__desc, a, o);
    return o[0];
}
static ag_tensor nested_5(void) { return nested(ag_scalar_i32(5)); }

static void test_nested_loops(void **state)
{
    (void)state;
    free(BOTH_WAYS(nested_5));
    /* sum over i < 5 of (0 + ... + i-1) = 0 + 0 + 1 + 3 + 6 */
    CHECK_VALUES(nested(ag_scalar_i32(5)), 10);
}

/* ---------------------------------------------- if/else defining two values
 *   ag_tensor a, b;
 *   if (x > 0) { a = x * 2; b = x + 1; } else { a = -x; b = x - 1; }
 *   return a * 10 + b;
 */
struct two__if {
    ag_tensor x, a, b;
};
static void two__then(void *s_)
{
    struct two__if *s = s_;
    s->a = ag_mul(s->x, 2);
    s->b = ag_add(s->x, 1);
}
static void two__else(void *s_)
{
    struct two__if *s = s_;
    s->a = ag_neg(s->x);
    s->b = ag_sub(s->x, 1);
}
static ag_tensor two__staged(ag_tensor x)
{
    struct two__if s = {x, {0, 0}, {0, 0}};
    ag_tensor *vars[] = {&s.a, &s.b};
    static const char *const names[] = {"a", "b"};
    ag_if_at(AG_HERE, ag_greater(x, 0), 2, vars, names, two__then, two__else, &s);
    return ag_add(ag_mul(s.a, 10), s.b);
}
static void two__trace(const ag_arg *a, ag_tensor *o) { o[0] = two__staged(a[0].tensor); }
AG_TEST_DESC(two, 1, N_X, K_T, NULL, 1, two__trace);
static ag_tensor two(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &two__desc, a, o);
    return o[0];
}
static ag_tensor two_of_3(void) { return two(ag_scalar_i32(3)); }
static ag_tensor two_of_minus_3(void) { return two(ag_scalar_i32(-3)); }

static void test_if_else_defines_two_values(void **state)
{
    (void)state;
    free(BOTH_WAYS(two_of_3));
    free(BOTH_WAYS(two_of_minus_3));
    CHECK_VALUES(two(ag_scalar_i32(3)), 64);
    CHECK_VALUES(two(ag_scalar_i32(-3)), 26);
}

/* ------------------------------------------------ break and continue flags
 *   i = 0; acc = 0;
 *   while (i < 100) {
 *       i += 1;
 *       if (i % 2 == 0) continue;
 *       if (acc > 20) break;
 *       acc += i;
 *   }
 * agc lowers `break` to a flag in the loop condition and `continue` to a
 * flag guarding the rest of the body, as AutoGraph does.
 */
struct brk__state {
    ag_tensor i, acc, brk, cont;
};
static ag_tensor brk__cond(void *s_)
{
    struct brk__state *s = s_;
    return ag_logical_and(ag_logical_not(s->brk), ag_less(s->i, 100));
}
static void brk__set_cont(void *s_)
{
    struct brk__state *s = s_;
    s->cont = ag_scalar_bool(true);
}
static void brk__set_brk(void *s_)
{
    struct brk__state *s = s_;
    s->brk = ag_scalar_bool(true);
}
static void brk__accumulate(void *s_)
{
    struct brk__state *s = s_;
    ag_tensor *vars[] = {&s->brk};
    static const char *const names[] = {"<break>"};
    ag_if_at(AG_HERE, ag_greater(s->acc, 20), 1, vars, names, brk__set_brk, NULL, s);
    struct brk__state *t = s;
    ag_tensor acc = ag_where(t->brk, t->acc, ag_add(t->acc, t->i));
    t->acc = acc;
}
static void brk__body(void *s_)
{
    struct brk__state *s = s_;
    s->cont = ag_scalar_bool(false);
    s->i = ag_add(s->i, 1);
    ag_tensor *v1[] = {&s->cont};
    static const char *const n1[] = {"<continue>"};
    ag_if_at(AG_HERE, ag_equal(ag_mod(s->i, 2), 0), 1, v1, n1, brk__set_cont, NULL, s);
    ag_tensor *v2[] = {&s->brk, &s->acc};
    static const char *const n2[] = {"<break>", "acc"};
    ag_if_at(AG_HERE, ag_logical_not(s->cont), 2, v2, n2, brk__accumulate, NULL, s);
}
static ag_tensor brk__staged(void)
{
    struct brk__state s = {ag_scalar_i32(0), ag_scalar_i32(0), ag_scalar_bool(false),
                           ag_scalar_bool(false)};
    ag_tensor *vars[] = {&s.i, &s.acc, &s.brk, &s.cont};
    static const char *const names[] = {"i", "acc", "<break>", "<continue>"};
    ag_while_at(AG_HERE, 4, vars, names, brk__cond, brk__body, &s);
    return s.acc;
}
static void brk__trace(const ag_arg *a, ag_tensor *o) { (void)a; o[0] = brk__staged(); }
AG_TEST_DESC(brk, 0, NULL, NULL, NULL, 1, brk__trace);
static ag_tensor brk(void)
{
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &brk__desc, NULL, o);
    return o[0];
}

static void test_break_and_continue_flags(void **state)
{
    (void)state;
    free(BOTH_WAYS(brk));
    CHECK_VALUES(brk(), 25); /* 1 + 3 + 5 + 7 + 9 = 25 > 20, then break */
}

/* ------------------------------------------------- return inside a loop
 *   i = 0; while (i < 100) { if (i * i > n) return i; i += 1; } return -1;
 */
struct first__state {
    ag_tensor i, n, retval, done;
};
static ag_tensor first__cond(void *s_)
{
    struct first__state *s = s_;
    return ag_logical_and(ag_logical_not(s->done), ag_less(s->i, 100));
}
static void first__ret(void *s_)
{
    struct first__state *s = s_;
    s->retval = s->i;
    s->done = ag_scalar_bool(true);
}
static void first__advance(void *s_)
{
    struct first__state *s = s_;
    s->i = ag_add(s->i, 1);
}
static void first__body(void *s_)
{
    struct first__state *s = s_;
    ag_tensor *vars[] = {&s->retval, &s->done};
    static const char *const names[] = {"<return value>", "<returned>"};
    ag_if_at(AG_HERE, ag_greater(ag_mul(s->i, s->i), s->n), 2, vars, names, first__ret, NULL, s);
    ag_tensor *v2[] = {&s->i};
    static const char *const n2[] = {"i"};
    ag_if_at(AG_HERE, ag_logical_not(s->done), 1, v2, n2, first__advance, NULL, s);
}
static void first__final(void *s_)
{
    struct first__state *s = s_;
    s->retval = ag_scalar_i32(-1);
}
static ag_tensor first__staged(ag_tensor n)
{
    struct first__state s = {ag_scalar_i32(0), n, ag_scalar_i32(0), ag_scalar_bool(false)};
    ag_tensor *vars[] = {&s.i, &s.retval, &s.done};
    static const char *const names[] = {"i", "<return value>", "<returned>"};
    ag_while_at(AG_HERE, 3, vars, names, first__cond, first__body, &s);
    ag_tensor *v2[] = {&s.retval};
    static const char *const n2[] = {"<return value>"};
    ag_if_at(AG_HERE, ag_logical_not(s.done), 1, v2, n2, first__final, NULL, &s);
    return s.retval;
}
static void first__trace(const ag_arg *a, ag_tensor *o) { o[0] = first__staged(a[0].tensor); }
AG_TEST_DESC(first, 1, N_N, K_T, NULL, 1, first__trace);
static ag_tensor first(ag_tensor n)
{
    ag_arg a[1] = {targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &first__desc, a, o);
    return o[0];
}
static ag_tensor first_50(void) { return first(ag_scalar_i32(50)); }
static ag_tensor first_big(void) { return first(ag_scalar_i32(100000)); }

static void test_return_inside_loop(void **state)
{
    (void)state;
    free(BOTH_WAYS(first_50));
    free(BOTH_WAYS(first_big));
    CHECK_VALUES(first(ag_scalar_i32(50)), 8);
    CHECK_VALUES(first(ag_scalar_i32(100000)), -1);
}

/* ----------------------------------------- tensor array filled in a loop
 *   ta = new(f32, 0, dynamic); i = 0;
 *   while (i < n) { ta = write(ta, i, cast(i*i, f32)); i += 1; }
 *   return stack(ta);
 */
struct squares__state {
    ag_tensor i, n;
    ag_tensor_array ta;
};
static ag_tensor squares__cond(void *s_)
{
    struct squares__state *s = s_;
    return ag_less(s->i, s->n);
}
static void squares__body(void *s_)
{
    struct squares__state *s = s_;
    s->ta = ag_tensor_array_write(s->ta, s->i, ag_cast(ag_mul(s->i, s->i), AG_F32));
    s->i = ag_add(s->i, 1);
}
static ag_tensor squares__staged(ag_tensor n)
{
    struct squares__state s = {ag_scalar_i32(0), n, ag_tensor_array_new(AG_F32, 0, true)};
    ag_tensor *vars[] = {&s.i, &s.ta.list};
    static const char *const names[] = {"i", "ta"};
    ag_while_at(AG_HERE, 2, vars, names, squares__cond, squares__body, &s);
    return ag_tensor_array_stack(s.ta);
}
static void squares__trace(const ag_arg *a, ag_tensor *o) { o[0] = squares__staged(a[0].tensor); }
AG_TEST_DESC(squares, 1, N_N, K_T, NULL, 1, squares__trace);
static ag_tensor squares(ag_tensor n)
{
    ag_arg a[1] = {targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &squares__desc, a, o);
    return o[0];
}
static ag_tensor squares_5(void) { return squares(ag_scalar_i32(5)); }

static void test_tensor_array_in_loop(void **state)
{
    (void)state;
    free(BOTH_WAYS(squares_5));
    ag_tensor r = squares(ag_scalar_i32(5));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(5));
    CHECK_VALUES(r, 0, 1, 4, 9, 16);
}

/* ----------------------------------- a variable incremented three times */
static void inc__staged(ag_variable v)
{
    ag_assign_add(v, ag_scalar_i32(1));
    ag_print(ag_variable_read(v));
}
static void inc__trace(const ag_arg *a, ag_tensor *o) { (void)o; inc__staged(a[0].variable); }
AG_TEST_DESC(inc, 1, N_V, K_V, NULL, 0, inc__trace);
static void inc(ag_variable v)
{
    ag_arg a[1] = {{.kind = AG_ARG_VARIABLE, .variable = v}};
    ag_function_call_at(AG_HERE, &inc__desc, a, NULL);
}

static void test_variable_incremented_three_times(void **state)
{
    (void)state;
    ag_variable v = ag_variable_new(ag_scalar_i32(0));
    char *out;
    CAPTURE(out, { inc(v); inc(v); inc(v); });
    assert_string_equal(out, "1\n2\n3\n");
    free(out);
    assert_int_equal(ag_function_trace_count("inc"), 1);
    ag_variable_free(v);
}

/* --------------------------- printf runs per trace, ag_print per call */
static int printf_calls;
static ag_tensor noisy__staged(ag_tensor x)
{
    printf_calls++; /* stands for the user's printf: plain C runs while tracing */
    ag_print("x:", x);
    return ag_mul(x, 2);
}
static void noisy__trace(const ag_arg *a, ag_tensor *o) { o[0] = noisy__staged(a[0].tensor); }
AG_TEST_DESC(noisy, 1, N_X, K_T, NULL, 1, noisy__trace);
static ag_tensor noisy(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &noisy__desc, a, o);
    return o[0];
}

static void test_c_side_effects_once_per_trace(void **state)
{
    (void)state;
    char *out;
    printf_calls = 0;
    CAPTURE(out, {
        noisy(ag_scalar_f32(1));
        noisy(ag_scalar_f32(2));
        noisy(ag_scalar_f32(3));
    });
    assert_string_equal(out, "x: 1\nx: 2\nx: 3\n");
    free(out);
    assert_int_equal(printf_calls, 1);
}

/* --------------------- non-strict: an unused failing op does not run */
static ag_tensor lazy__staged(ag_tensor x)
{
    ag_tensor unused = ag_gather(x, ag_scalar_i32(7), 0); /* out of range */
    (void)unused;
    return ag_add(x, 1);
}
static void lazy__trace(const ag_arg *a, ag_tensor *o) { o[0] = lazy__staged(a[0].tensor); }
AG_TEST_DESC(lazy, 1, N_X, K_T, NULL, 1, lazy__trace);
static ag_tensor lazy(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &lazy__desc, a, o);
    return o[0];
}

static void test_unused_failing_op_is_pruned(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(3), 1, 2, 3);
    ag_run_functions_eagerly(true);
    ag_clear_error();
    (void)lazy(x);
    assert_non_null(ag_last_error()); /* eagerly, the gather fails */
    ag_run_functions_eagerly(false);
    ag_clear_error();
    CHECK_VALUES(lazy(x), 2, 3, 4);
    assert_null(ag_last_error());
}

/* ------------------------------------------------------------------ flip
 *   AG_FUNCTION ag_tensor flip(ag_tensor x) { return ag_transpose(ag_mul(x, 2)); }
 * ag_transpose with no permutation reverses the axes; the trace records
 * that permutation, so eager, traced and every target agree. One copy of
 * the function per target: a target applies to traces made after it is
 * set, and a first call's trace would be reused.
 */
static ag_tensor flip__staged(ag_tensor x) { return ag_transpose(ag_mul(x, 2)); }
static void flip__trace(const ag_arg *a, ag_tensor *o) { o[0] = flip__staged(a[0].tensor); }
AG_TEST_DESC(flip, 1, N_X, K_T, NULL, 1, flip__trace);
AG_TEST_DESC(flip_reference, 1, N_X, K_T, NULL, 1, flip__trace);
AG_TEST_DESC(flip_cpu, 1, N_X, K_T, NULL, 1, flip__trace);

static ag_tensor call_flip(const ag_function_desc *fn, ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, fn, a, o);
    return o[0];
}

static ag_tensor iota_2x3x4(void)
{
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)i;
    return ag_from_data(AG_F32, AG_SHAPE(2, 3, 4), v);
}

static ag_tensor flip_2x3x4(void) { return call_flip(&flip__desc, iota_2x3x4()); }

static void test_transpose_default_perm(void **state)
{
    (void)state;
    free(BOTH_WAYS(flip_2x3x4));
    ag_tensor want = ag_transpose(ag_mul(iota_2x3x4(), 2), 2, 1, 0);
    static const char *const targets[] = {"reference", "cpu"};
    const ag_function_desc *fns[] = {&flip_reference__desc, &flip_cpu__desc};
    for (int t = 0; t < 2; t++) {
        assert_true(ag_set_target(targets[t]));
        ag_tensor got = call_flip(fns[t], iota_2x3x4());
        CHECK_TYPE(got, AG_F32, AG_SHAPE(4, 3, 2));
        for (int i = 0; i < 24; i++)
            if (ag_get_f32(got, i) != ag_get_f32(want, i))
                fail_msg("target %s: element %d is %g, expected %g", targets[t], i,
                         ag_get_f32(got, i), ag_get_f32(want, i));
    }
    assert_true(ag_set_target(NULL));
    /* the graph holds the resolved permutation */
    ag_concrete_function *cf = ag_get_concrete_function("flip", "f32[2,3,4]");
    assert_non_null(cf);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ag_concrete_print_graph(cf, f);
    fclose(f);
    if (!strstr(text, "transpose(") || !strstr(text, "{perm = [2,1,0]}"))
        fail_msg("graph lacks transpose with perm [2,1,0]:\n%s", text);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_simple_relu),
        TU_TEST(test_squash_prints_every_iteration),
        TU_TEST(test_fizzbuzz_traced_once),
        TU_TEST(test_power_retraces_per_scalar_value),
        TU_TEST(test_while_two_loop_vars),
        TU_TEST(test_eager_loop_memory_is_bounded),
        TU_TEST(test_nested_loops),
        TU_TEST(test_if_else_defines_two_values),
        TU_TEST(test_break_and_continue_flags),
        TU_TEST(test_return_inside_loop),
        TU_TEST(test_tensor_array_in_loop),
        TU_TEST(test_variable_incremented_three_times),
        TU_TEST(test_c_side_effects_once_per_trace),
        TU_TEST(test_unused_failing_op_is_pruned),
        TU_TEST(test_transpose_default_perm),
    };
    TU_RUN(tests);
}
