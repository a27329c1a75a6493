/*
 * test_tape.c - gradient tapes (runtime/autodiff/): the contract's example,
 * watching, variables, persistence, the unconnected rule, integer sources,
 * non-scalar targets, broadcasting, products, gradients of gradients,
 * tensor arrays, and a tape inside an AG_FUNCTION (eager and staged give
 * the same gradient, which becomes nodes of the traced graph), through
 * staged ifs and loops, also when they carry tensor arrays.
 */
#include "staged_util.h"

#define NO_ERROR()                                                           \
    do {                                                                     \
        if (ag_last_error())                                                 \
            fail_msg("line %d: unexpected error: %s", __LINE__, ag_last_error()); \
    } while (0)

/* The contract's example: d sum(w * x) / dw = x. */
static void test_variable_gradient(void **state)
{
    (void)state;
    ag_variable w = ag_variable_new(ag_ones(AG_F32, AG_SHAPE(3)));
    ag_tensor x = F32(AG_SHAPE(3), 1, 2, 3);
    ag_tape tape = ag_tape_new();
    ag_tensor loss = ag_reduce_sum(ag_mul(ag_variable_read(w), x), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient_variable(tape, loss, w);
    CHECK_VALUES(g, 1, 2, 3);
    ag_tape_free(tape);
    ag_variable_free(w);
    NO_ERROR();
}

/* A variable read twice: its gradient is the sum over its reads. */
static void test_variable_read_twice(void **state)
{
    (void)state;
    ag_variable w = ag_variable_new(F64(AG_SHAPE(2), 3, -1));
    ag_tape tape = ag_tape_new();
    ag_tensor y = ag_mul(ag_variable_read(w), ag_variable_read(w)); /* w^2: 2w */
    CHECK_VALUES(ag_tape_gradient_variable(tape, y, w), 6, -2);
    ag_tape_free(tape);
    ag_variable_free(w);
}

static void test_watched_tensor_and_persistence(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 2, -3);
    ag_tape t = ag_tape_new_persistent();
    ag_tape_watch(t, x);
    ag_tensor y = ag_mul(x, x);
    ag_tensor z = ag_mul(y, x);
    CHECK_VALUES(ag_tape_gradient(t, y, x), 4, -6);
    CHECK_VALUES(ag_tape_gradient(t, z, x), 12, 27); /* 3x^2, asked again */
    ag_tape_free(t);

    ag_tape once = ag_tape_new();
    ag_tape_watch(once, x);
    y = ag_square(x);
    CHECK_VALUES(ag_tape_gradient(once, y, x), 4, -6);
    EXPECT_ERROR(ag_tape_gradient(once, y, x), "already given its gradients");
    ag_tape_free(once);
}

/* Several sources in one call: what a non-persistent tape needs. */
static void test_gradients_of_several_sources(void **state)
{
    (void)state;
    ag_tensor a = F32(AG_SHAPE(1), 3), b = F32(AG_SHAPE(1), 5);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, a);
    ag_tape_watch(t, b);
    ag_tensor y = ag_sub(ag_mul(a, b), ag_div(a, b));
    ag_tensor g[2];
    ag_tensor src[2] = {a, b};
    assert_true(ag_tape_gradients(t, y, 2, src, g));
    CHECK_CLOSE(g[0], 1e-6, 5 - 1.0 / 5);
    CHECK_CLOSE(g[1], 1e-6, 3 + 3.0 / 25);
    ag_tape_free(t);
}

static void test_unconnected_none_and_zero(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 1, 2), u = F32(AG_SHAPE(2), 5, 6);
    ag_tape t = ag_tape_new_persistent();
    ag_tape_watch(t, x);
    ag_tape_watch(t, u);
    ag_tensor y = ag_exp(x);
    ag_tensor k = ag_cast(ag_greater(u, 5.5), AG_F32); /* through a comparison */
    ag_tensor g = ag_tape_gradient(t, y, u);
    assert_true(ag_is_null(g));
    assert_true(ag_is_null(ag_tape_gradient(t, k, u)));
    NO_ERROR();
    ag_tape_set_unconnected(t, AG_UNCONNECTED_ZERO);
    CHECK_VALUES(ag_tape_gradient(t, y, u), 0, 0);
    CHECK_VALUES(ag_tape_gradient(t, k, u), 0, 0);
    ag_tape_free(t);
}

static void test_integer_source_is_an_error(void **state)
{
    (void)state;
    ag_tensor i = I32(AG_SHAPE(2), 1, 2);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, i);
    ag_tensor y = ag_mul(i, i);
    EXPECT_ERROR(ag_tape_gradient(t, ag_cast(y, AG_F32), i), "the source is i32");
    ag_tape_free(t);
}

/* A non-scalar target: the gradient of its sum; broadcast operands get
 * their gradient summed back to their shape. */
static void test_broadcast_and_non_scalar_target(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor b = F32(AG_SHAPE(3), 10, 20, 30);
    ag_tensor s = F32(AG_SHAPE(2, 1), 2, 3);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, b);
    ag_tape_watch(t, s);
    ag_tensor y = ag_mul(ag_add(x, b), s); /* [2,3] */
    ag_tensor g[2];
    ag_tensor src[2] = {b, s};
    assert_true(ag_tape_gradients(t, y, 2, src, g));
    CHECK_VALUES(g[0], 5, 5, 5);
    CHECK_VALUES(g[1], 11 + 22 + 33, 14 + 25 + 36);
    ag_tape_free(t);
}

/* z = sum(a @ b): da = 1 b^T, db = a^T 1. */
static void test_matmul(void **state)
{
    (void)state;
    ag_tensor a = F64(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor b = F64(AG_SHAPE(3, 2), 1, 0, 0, 1, 2, -1);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, a);
    ag_tape_watch(t, b);
    ag_tensor z = ag_matmul(a, b);
    ag_tensor g[2];
    ag_tensor src[2] = {a, b};
    assert_true(ag_tape_gradients(t, z, 2, src, g));
    CHECK_VALUES(g[0], 1, 1, 1, 1, 1, 1);
    CHECK_VALUES(g[1], 5, 5, 7, 7, 9, 9);
    ag_tape_free(t);
}

/* Nested tapes: the outer one records the inner one's gradient. */
static void test_gradient_of_gradient(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(2), 2, -1);
    ag_tape outer = ag_tape_new();
    ag_tape_watch(outer, x);
    ag_tape inner = ag_tape_new();
    ag_tape_watch(inner, x);
    ag_tensor y = ag_mul(ag_mul(x, x), x);
    ag_tensor dy = ag_tape_gradient(inner, y, x); /* 3x^2 */
    CHECK_VALUES(dy, 12, 3);
    ag_tensor d2y = ag_tape_gradient(outer, dy, x); /* 6x */
    CHECK_VALUES(d2y, 12, -6);
    ag_tape_free(inner);
    ag_tape_free(outer);
    NO_ERROR();
}

/* gather was the op without a rule here; it has one now (grad_rules_nn.c):
 * its gradient, a repeated index summed. */
static void test_gather_gradient(void **state)
{
    (void)state;
    ag_tensor p = F32(AG_SHAPE(3), 1, 2, 3);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, p);
    ag_tensor y = ag_gather(p, I32(AG_SHAPE(3), 0, 2, 0), 0);
    CHECK_VALUES(ag_tape_gradient(t, y, p), 2, 0, 1);
    ag_tape_free(t);
    NO_ERROR();
}

/* A gradient through a tensor array: the list built in a C loop (as
 * AutoGraph's lists are), stacked, and one element read back. */
static void test_gradient_through_a_tensor_array(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 1, 2);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    for (int i = 0; i < 3; i++)
        ta = ag_tensor_array_write(ta, i, ag_mul(x, (double)(i + 1)));
    ag_tensor y = ag_add(ag_reduce_sum(ag_tensor_array_stack(ta), AG_ALL_AXES, false),
                         ag_reduce_sum(ag_square(ag_tensor_array_read(ta, 2)), AG_ALL_AXES,
                                       false));
    /* 1 + 2 + 3 from the stack, and d(3x)^2/dx = 18x from the read */
    CHECK_VALUES(ag_tape_gradient(t, y, x), 24, 42);
    ag_tape_free(t);
    NO_ERROR();
}

static void test_bad_tape(void **state)
{
    (void)state;
    ag_tape t = ag_tape_new();
    ag_tape_free(t);
    EXPECT_ERROR_VOID(ag_tape_watch(t, F32(AG_SHAPE(1), 1)), "not a live gradient tape");
}

/* ------------------------------------------- a tape inside an AG_FUNCTION */

/* AG_FUNCTION ag_tensor grad_of_cube_sum(ag_tensor x) {
 *     ag_tape t = ag_tape_new(); ag_tape_watch(t, x);
 *     ag_tensor y = ag_reduce_sum(ag_mul(ag_mul(x, x), x), AG_ALL_AXES, false);
 *     ag_tensor g = ag_tape_gradient(t, y, x); ag_tape_free(t); return g; } */
static ag_tensor grad_of_cube_sum__staged(ag_tensor x)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor y = ag_reduce_sum(ag_mul(ag_mul(x, x), x), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, y, x);
    ag_tape_free(t);
    return g;
}
static void grad_of_cube_sum__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = grad_of_cube_sum__staged(a[0].tensor);
}
AG_TEST_DESC(grad_of_cube_sum, 1, N_X, K_T, NULL, 1, grad_of_cube_sum__trace);
static ag_tensor grad_of_cube_sum(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &grad_of_cube_sum__desc, a, o);
    return o[0];
}
static ag_tensor cube_sum_at_1_2(void) { return grad_of_cube_sum(F32(AG_SHAPE(2), 1, -2)); }

static void test_tape_inside_a_function(void **state)
{
    (void)state;
    free(BOTH_WAYS(cube_sum_at_1_2));
    CHECK_VALUES(grad_of_cube_sum(F32(AG_SHAPE(2), 1, -2)), 3, 12);
    assert_int_equal(ag_function_trace_count("grad_of_cube_sum"), 1);
}


/* An eager tape over a call of an AG_FUNCTION sees the ops of its body. */
static void test_eager_tape_over_a_call(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 2, 3);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor g = grad_of_cube_sum(x); /* 3x^2, itself differentiable */
    ag_tensor y = ag_reduce_sum(g, AG_ALL_AXES, false);
    CHECK_VALUES(ag_tape_gradient(t, y, x), 12, 18); /* 6x */
    ag_tape_free(t);
}

/* AG_FUNCTION ag_tensor grad_through_if(ag_tensor x) {
 *     ag_tape t = ag_tape_new(); ag_tape_watch(t, x);
 *     ag_tensor y = x; if (ag_bool(ag_reduce_sum(x, AG_ALL_AXES, false) > 0)) y = x * x;
 *     ag_tensor g = ag_tape_gradient(t, y, x); ag_tape_free(t); return g; } */
struct grad_through_if__if_1 {
    ag_tensor x, y;
};
static void grad_through_if__if_1_then(void *s_)
{
    struct grad_through_if__if_1 *s = s_;
    s->y = ag_mul(s->x, s->x);
}
static void grad_through_if__if_1_else(void *s_) { (void)s_; }
static ag_tensor grad_through_if__staged(ag_tensor x)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    struct grad_through_if__if_1 s = {x, x};
    ag_tensor *vars[] = {&s.y};
    static const char *const names[] = {"y"};
    ag_if_at(AG_HERE, ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 0), 1, vars, names,
             grad_through_if__if_1_then, grad_through_if__if_1_else, &s);
    ag_tensor g = ag_tape_gradient(t, s.y, x);
    ag_tape_free(t);
    return g;
}
static void grad_through_if__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = grad_through_if__staged(a[0].tensor);
}
AG_TEST_DESC(grad_through_if, 1, N_X, K_T, NULL, 1, grad_through_if__trace);
static ag_tensor grad_through_if(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &grad_through_if__desc, a, o);
    return o[0];
}

/* Eagerly the if is C control flow and the tape sees the branch taken;
 * staged, the gradient is a cond on the same predicate. */
static void test_staged_if_on_a_tape(void **state)
{
    (void)state;
    ag_run_functions_eagerly(true);
    CHECK_VALUES(grad_through_if(F32(AG_SHAPE(2), 1, 2)), 2, 4);
    CHECK_VALUES(grad_through_if(F32(AG_SHAPE(2), -1, -2)), 1, 1);
    ag_run_functions_eagerly(false);
    CHECK_VALUES(grad_through_if(F32(AG_SHAPE(2), 1, 2)), 2, 4);
    CHECK_VALUES(grad_through_if(F32(AG_SHAPE(2), -1, -2)), 1, 1);
    assert_int_equal(ag_function_trace_count("grad_through_if"), 1);
}

/* AG_FUNCTION ag_tensor fit_step(ag_tensor w, ag_tensor x, ag_tensor y):
 * the gradient of a least-squares loss through a product, on each target. */
static ag_tensor fit_step__staged(ag_tensor w, ag_tensor x, ag_tensor y)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, w);
    ag_tensor err = ag_sub(ag_tanh(ag_matmul(x, w)), y);
    ag_tensor loss = ag_reduce_mean(ag_square(err), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, loss, w);
    ag_tape_free(t);
    return g;
}
static void fit_step__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = fit_step__staged(a[0].tensor, a[1].tensor, a[2].tensor);
}
static const ag_arg_kind K_TTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
static const char *const N_WXY[] = {"w", "x", "y"};
AG_TEST_DESC(fit_step, 3, N_WXY, K_TTT, NULL, 1, fit_step__trace);

static ag_tensor fit_step_call(int rows)
{
    ag_tensor w = ag_random_uniform(AG_SHAPE(3, 2), -1, 1, AG_F32, 11);
    ag_tensor x = ag_random_uniform(AG_SHAPE(rows, 3), -1, 1, AG_F32, 12);
    ag_tensor y = ag_random_uniform(AG_SHAPE(rows, 2), -1, 1, AG_F32, 13);
    ag_arg a[3] = {targ(w), targ(x), targ(y)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &fit_step__desc, a, o);
    return o[0];
}

/* Each target runs the traced gradient graph; all agree with eager
 * (the tpu-model's products round operands to bf16: its bound is wider). */
static void test_gradient_graph_on_every_target(void **state)
{
    (void)state;
    static const char *const targets[] = {"reference", "cpu", "tpu-model"};
    static const double bounds[] = {1e-6, 1e-5, 2e-2};
    for (int k = 0; k < 3; k++) {
        int rows = 8 + k; /* a new signature: traced for this target */
        ag_run_functions_eagerly(true);
        ag_tensor want = fit_step_call(rows);
        ag_run_functions_eagerly(false);
        assert_true(ag_set_target(targets[k]));
        ag_tensor got = fit_step_call(rows);
        for (int i = 0; i < 6; i++) {
            double a = ag_get_f64(want, i), b = ag_get_f64(got, i);
            if (!(fabs(a - b) <= bounds[k] * (1 + fabs(a))))
                fail_msg("%s: element %d is %g, eager gives %g", targets[k], i, b, a);
        }
    }
    assert_true(ag_set_target(NULL));
    assert_int_equal(ag_function_concrete_count("fit_step"), 3);
}

/* AG_FUNCTION ag_tensor grad_through_while(ag_tensor x) {
 *     tape; watch x; y = x;
 *     while (ag_bool(ag_greater(ag_reduce_sum(y, AG_ALL_AXES, false), 1))) y = ag_tanh(y);
 *     return gradient(y, x); } */
struct grad_through_while__while_1 {
    ag_tensor y;
};
static ag_tensor grad_through_while__cond(void *s_)
{
    struct grad_through_while__while_1 *s = s_;
    return ag_greater(ag_reduce_sum(s->y, AG_ALL_AXES, false), 1);
}
static void grad_through_while__body(void *s_)
{
    struct grad_through_while__while_1 *s = s_;
    s->y = ag_tanh(s->y);
}
static ag_tensor grad_through_while__staged(ag_tensor x)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    struct grad_through_while__while_1 s = {x};
    ag_tensor *vars[] = {&s.y};
    static const char *const names[] = {"y"};
    ag_while_at(AG_HERE, 1, vars, names, grad_through_while__cond, grad_through_while__body,
                &s);
    ag_tensor g = ag_tape_gradient(t, s.y, x);
    ag_tape_free(t);
    return g;
}
static void grad_through_while__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = grad_through_while__staged(a[0].tensor);
}
AG_TEST_DESC(grad_through_while, 1, N_X, K_T, NULL, 1, grad_through_while__trace);
static ag_tensor grad_through_while(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &grad_through_while__desc, a, o);
    return o[0];
}

/* Eagerly a loop is C control flow; staged, its gradient is a loop that
 * runs backward over what the forward accumulated. */
static void test_staged_while_on_a_tape(void **state)
{
    (void)state;
    double t1 = tanh(2.0), want = 1 - t1 * t1; /* sum 2 > 1: one step, then 0.96 < 1 */
    ag_run_functions_eagerly(true);
    CHECK_CLOSE(grad_through_while(F64(AG_SHAPE(1), 2)), 1e-12, want);
    ag_run_functions_eagerly(false);
    CHECK_CLOSE(grad_through_while(F64(AG_SHAPE(1), 2)), 1e-12, want);
    /* 0.9 -> 0.716 (one step); 8 -> tanh^4(8)... four steps to below 1 */
    ag_tensor x = F64(AG_SHAPE(2), 0.9, 8);
    ag_run_functions_eagerly(true);
    ag_tensor eager = grad_through_while(x);
    ag_run_functions_eagerly(false);
    ag_tensor staged = grad_through_while(x);
    for (int i = 0; i < 2; i++)
        assert_true(fabs(ag_get_f64(eager, i) - ag_get_f64(staged, i)) < 1e-12);
    assert_int_equal(ag_function_trace_count("grad_through_while"), 2); /* two shapes */
}

/* AG_FUNCTION ag_tensor rnn_grad(ag_tensor x, ag_tensor w, ag_tensor n) {
 *     tape; watch w; h = x; i = 0;
 *     while (ag_bool(ag_less(i, n))) { h = ag_tanh(ag_matmul(h, w)); i = i + 1; }
 *     return gradient(sum(h), w); }
 * The weight is captured by the loop body: its gradient sums over the
 * iterations; the trip count is data. */
struct rnn_grad__while_1 {
    ag_tensor h, i, w, n;
};
static ag_tensor rnn_grad__cond(void *s_)
{
    struct rnn_grad__while_1 *s = s_;
    return ag_less(s->i, s->n);
}
static void rnn_grad__body(void *s_)
{
    struct rnn_grad__while_1 *s = s_;
    s->h = ag_tanh(ag_matmul(s->h, s->w));
    s->i = ag_add(s->i, 1);
}
static ag_tensor rnn_grad__staged(ag_tensor x, ag_tensor w, ag_tensor n)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, w);
    struct rnn_grad__while_1 s = {x, ag_scalar_i32(0), w, n};
    ag_tensor *vars[] = {&s.h, &s.i};
    static const char *const names[] = {"h", "i"};
    ag_while_at(AG_HERE, 2, vars, names, rnn_grad__cond, rnn_grad__body, &s);
    ag_tensor g = ag_tape_gradient(t, ag_reduce_sum(s.h, AG_ALL_AXES, false), w);
    ag_tape_free(t);
    return g;
}
static void rnn_grad__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = rnn_grad__staged(a[0].tensor, a[1].tensor, a[2].tensor);
}
static const char *const N_XWN[] = {"x", "w", "n"};
AG_TEST_DESC(rnn_grad, 3, N_XWN, K_TTT, NULL, 1, rnn_grad__trace);
static ag_tensor rnn_grad(ag_tensor x, ag_tensor w, ag_tensor n)
{
    ag_arg a[3] = {targ(x), targ(w), targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &rnn_grad__desc, a, o);
    return o[0];
}

static void test_staged_loop_with_a_captured_weight(void **state)
{
    (void)state;
    ag_tensor x = ag_random_uniform(AG_SHAPE(2, 3), -1, 1, AG_F64, 21);
    ag_tensor w = ag_random_uniform(AG_SHAPE(3, 3), -1, 1, AG_F64, 22);
    for (int n = 0; n <= 4; n += 2) {
        ag_tensor steps = ag_scalar_i32(n);
        ag_run_functions_eagerly(true);
        ag_tensor eager = rnn_grad(x, w, steps);
        ag_run_functions_eagerly(false);
        ag_tensor staged = rnn_grad(x, w, steps);
        if (n == 0) { /* no iteration: the sum does not depend on w */
            for (int i = 0; i < 9; i++)
                assert_true(ag_get_f64(staged, i) == 0.0);
            assert_true(ag_is_null(eager));
            continue;
        }
        for (int i = 0; i < 9; i++)
            if (!(fabs(ag_get_f64(eager, i) - ag_get_f64(staged, i)) < 1e-12))
                fail_msg("n=%d element %d: eager %g, staged %g", n, i, ag_get_f64(eager, i),
                         ag_get_f64(staged, i));
    }
    assert_int_equal(ag_function_trace_count("rnn_grad"), 1); /* n is data */
}

/* AG_FUNCTION rnn_outputs_grad(x, w, n): an RNN writing each step's
 * output to an array after the initial state, the loss over the stacked
 * array (and the last state):
 *     tape; watch x, w; h = x; ta = write(ag_tensor_array_new(AG_F64, 0, true), 0, x);
 *     i = 0;
 *     while (ag_bool(ag_less(i, n))) { h = tanh(h @ w); ta = write(ta, i + 1, h); i = i + 1; }
 *     loss = sum(stack(ta)^2) + sum(h);
 *     return gradients(loss, {w, x}); }
 * The array is a variable of the staged loop: its dense gradient is one
 * of the backward loop's; row 0, which no iteration writes, passes through
 * it to x. (Row 0 also keeps the array non-empty when n is 0: a staged
 * stack of an array no element was ever written to does not know its
 * element shape when it runs.) */
struct rnn_outputs__while_1 {
    ag_tensor h, i, ta, w, n;
};
static ag_tensor rnn_outputs__cond(void *s_)
{
    struct rnn_outputs__while_1 *s = s_;
    return ag_less(s->i, s->n);
}
static void rnn_outputs__body(void *s_)
{
    struct rnn_outputs__while_1 *s = s_;
    s->h = ag_tanh(ag_matmul(s->h, s->w));
    s->ta = ag_tensor_array_write((ag_tensor_array){s->ta}, ag_add(s->i, 1), s->h).list;
    s->i = ag_add(s->i, 1);
}
static void rnn_outputs__staged(ag_tensor x, ag_tensor w, ag_tensor n, ag_tensor *g)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tape_watch(t, w);
    ag_tensor_array ta = ag_tensor_array_write(ag_tensor_array_new(AG_F64, 0, true), 0, x);
    struct rnn_outputs__while_1 s = {x, ag_scalar_i32(0), ta.list, w, n};
    ag_tensor *vars[] = {&s.h, &s.i, &s.ta};
    static const char *const names[] = {"h", "i", "ta"};
    ag_while_at(AG_HERE, 3, vars, names, rnn_outputs__cond, rnn_outputs__body, &s);
    ag_tensor stacked = ag_tensor_array_stack((ag_tensor_array){s.ta});
    ag_tensor loss = ag_add(ag_reduce_sum(ag_square(stacked), AG_ALL_AXES, false),
                            ag_reduce_sum(s.h, AG_ALL_AXES, false));
    ag_tensor src[2] = {w, x};
    ag_tape_gradients(t, loss, 2, src, g);
    ag_tape_free(t);
}
static void rnn_outputs__trace(const ag_arg *a, ag_tensor *o)
{
    rnn_outputs__staged(a[0].tensor, a[1].tensor, a[2].tensor, o);
}
AG_TEST_DESC(rnn_outputs, 3, N_XWN, K_TTT, NULL, 2, rnn_outputs__trace);
static void rnn_outputs(ag_tensor x, ag_tensor w, ag_tensor n, ag_tensor *o)
{
    ag_arg a[3] = {targ(x), targ(w), targ(n)};
    ag_function_call_at(AG_HERE, &rnn_outputs__desc, a, o);
}

/* Staged and eager gradients agree to 1e-12 (null eagerly: unconnected). */
static void expect_same(const char *what, int n, ag_tensor eager, ag_tensor staged, int numel)
{
    NO_ERROR();
    for (int i = 0; i < numel; i++) {
        double e = ag_is_null(eager) ? 0.0 : ag_get_f64(eager, i);
        double st = ag_get_f64(staged, i);
        if (!(fabs(e - st) < 1e-12))
            fail_msg("%s, n=%d, element %d: eager %.17g, staged %.17g", what, n, i, e, st);
    }
}

static void test_staged_loop_carrying_an_array(void **state)
{
    (void)state;
    ag_tensor x = ag_random_uniform(AG_SHAPE(2, 3), -1, 1, AG_F64, 31);
    ag_tensor w = ag_random_uniform(AG_SHAPE(3, 3), -1, 1, AG_F64, 32);
    const int trips[] = {0, 1, 3};
    for (int k = 0; k < 3; k++) {
        ag_tensor eager[2], staged[2], steps = ag_scalar_i32(trips[k]);
        ag_run_functions_eagerly(true);
        rnn_outputs(x, w, steps, eager);
        ag_run_functions_eagerly(false);
        rnn_outputs(x, w, steps, staged);
        expect_same("d/dw", trips[k], eager[0], staged[0], 9);
        expect_same("d/dx", trips[k], eager[1], staged[1], 6);
    }
    assert_int_equal(ag_function_trace_count("rnn_outputs"), 1); /* n is data */
}

/* AG_FUNCTION powers_by_reads(x, n): the body reads what the iteration
 * before wrote (ta[i] = ta[i-1] * x), so the array's rows receive gradient
 * from the reads as well as give it to the writes:
 *     ta = write(new(AG_F64, 0, true), 0, x); i = 1;
 *     while (i < n) { ta = write(ta, i, read(ta, i - 1) * x); i = i + 1; }
 *     return gradient(sum(stack(ta)), x); }   = sum_k k x^(k-1) */
struct powers_by_reads__while_1 {
    ag_tensor i, ta, x, n;
};
static ag_tensor powers_by_reads__cond(void *s_)
{
    struct powers_by_reads__while_1 *s = s_;
    return ag_less(s->i, s->n);
}
static void powers_by_reads__body(void *s_)
{
    struct powers_by_reads__while_1 *s = s_;
    ag_tensor_array ta = {s->ta};
    ag_tensor prev = ag_tensor_array_read(ta, ag_sub(s->i, 1));
    s->ta = ag_tensor_array_write(ta, s->i, ag_mul(prev, s->x)).list;
    s->i = ag_add(s->i, 1);
}
static ag_tensor powers_by_reads__staged(ag_tensor x, ag_tensor n)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta0 = ag_tensor_array_write(ag_tensor_array_new(AG_F64, 0, true), 0, x);
    struct powers_by_reads__while_1 s = {ag_scalar_i32(1), ta0.list, x, n};
    ag_tensor *vars[] = {&s.i, &s.ta};
    static const char *const names[] = {"i", "ta"};
    ag_while_at(AG_HERE, 2, vars, names, powers_by_reads__cond, powers_by_reads__body, &s);
    ag_tensor loss = ag_reduce_sum(ag_tensor_array_stack((ag_tensor_array){s.ta}), AG_ALL_AXES,
                                   false);
    ag_tensor g = ag_tape_gradient(t, loss, x);
    ag_tape_free(t);
    return g;
}
static void powers_by_reads__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = powers_by_reads__staged(a[0].tensor, a[1].tensor);
}
static const char *const N_XN[] = {"x", "n"};
AG_TEST_DESC(powers_by_reads, 2, N_XN, K_TT, NULL, 1, powers_by_reads__trace);
static ag_tensor powers_by_reads(ag_tensor x, ag_tensor n)
{
    ag_arg a[2] = {targ(x), targ(n)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &powers_by_reads__desc, a, o);
    return o[0];
}

static void test_staged_loop_reading_its_array(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(2), 0.5, -1.5);
    for (int n = 1; n <= 4; n += 3) { /* 1: no iteration; 4: three */
        ag_run_functions_eagerly(true);
        ag_tensor eager = powers_by_reads(x, ag_scalar_i32(n));
        ag_run_functions_eagerly(false);
        ag_tensor staged = powers_by_reads(x, ag_scalar_i32(n));
        expect_same("powers_by_reads", n, eager, staged, 2);
        for (int e = 0; e < 2; e++) {
            double v = ag_get_f64(x, e), want = 0;
            for (int k = 1; k <= n; k++)
                want += k * pow(v, k - 1);
            assert_true(fabs(ag_get_f64(staged, e) - want) < 1e-12);
        }
    }
}

/* AG_FUNCTION array_from_if(x, flag): a staged if writes the array's
 * second row differently in each branch and returns the array:
 *     ta = write(new(AG_F64, 2, false), 0, x * x);
 *     if (ag_bool(flag > 0)) ta = write(ta, 1, 3 * x); else ta = write(ta, 1, exp(x));
 *     return gradient(sum(stack(ta)), x); }   = 2x + (3 or e^x) */
struct array_from_if__if_1 {
    ag_tensor x, ta;
};
static void array_from_if__then(void *s_)
{
    struct array_from_if__if_1 *s = s_;
    s->ta = ag_tensor_array_write((ag_tensor_array){s->ta}, 1, ag_mul(s->x, 3.0)).list;
}
static void array_from_if__else(void *s_)
{
    struct array_from_if__if_1 *s = s_;
    s->ta = ag_tensor_array_write((ag_tensor_array){s->ta}, 1, ag_exp(s->x)).list;
}
static ag_tensor array_from_if__staged(ag_tensor x, ag_tensor flag)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_write(ag_tensor_array_new(AG_F64, 2, false), 0,
                                               ag_mul(x, x));
    struct array_from_if__if_1 s = {x, ta.list};
    ag_tensor *vars[] = {&s.ta};
    static const char *const names[] = {"ta"};
    ag_if_at(AG_HERE, ag_greater(flag, 0), 1, vars, names, array_from_if__then,
             array_from_if__else, &s);
    ag_tensor loss = ag_reduce_sum(ag_tensor_array_stack((ag_tensor_array){s.ta}), AG_ALL_AXES,
                                   false);
    ag_tensor g = ag_tape_gradient(t, loss, x);
    ag_tape_free(t);
    return g;
}
static void array_from_if__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = array_from_if__staged(a[0].tensor, a[1].tensor);
}
static const char *const N_XF[] = {"x", "flag"};
AG_TEST_DESC(array_from_if, 2, N_XF, K_TT, NULL, 1, array_from_if__trace);
static ag_tensor array_from_if(ag_tensor x, ag_tensor flag)
{
    ag_arg a[2] = {targ(x), targ(flag)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &array_from_if__desc, a, o);
    return o[0];
}

static void test_staged_if_returning_an_array(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(2), 0.25, -2);
    for (int flag = -1; flag <= 1; flag += 2) {
        ag_run_functions_eagerly(true);
        ag_tensor eager = array_from_if(x, ag_scalar_i32(flag));
        ag_run_functions_eagerly(false);
        ag_tensor staged = array_from_if(x, ag_scalar_i32(flag));
        expect_same("array_from_if", flag, eager, staged, 2);
        for (int e = 0; e < 2; e++) {
            double v = ag_get_f64(x, e), want = 2 * v + (flag > 0 ? 3 : exp(v));
            assert_true(fabs(ag_get_f64(staged, e) - want) < 1e-12);
        }
    }
    assert_int_equal(ag_function_trace_count("array_from_if"), 1);
}

/* AG_FUNCTION AG_SIGNATURE("f32[?,3]") ag_tensor grad_of_mean(ag_tensor x):
 * the gradient of a mean over a dim known only when the graph runs. */
static ag_tensor grad_of_mean__staged(ag_tensor x)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor y = ag_reduce_mean(ag_mul(x, x), AG_ALL_AXES, false);
    ag_tensor z = ag_reduce_sum(ag_reduce_max(x, 1, false), AG_ALL_AXES, false);
    ag_tensor g[1];
    ag_tape_gradients(t, ag_add(y, z), 1, &x, g);
    ag_tape_free(t);
    return g[0];
}
static void grad_of_mean__trace(const ag_arg *a, ag_tensor *o) { o[0] = grad_of_mean__staged(a[0].tensor); }
AG_TEST_DESC(grad_of_mean, 1, N_X, K_T, "f32[?,3]", 1, grad_of_mean__trace);
static ag_tensor grad_of_mean(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &grad_of_mean__desc, a, o);
    return o[0];
}

static void test_unknown_dims(void **state)
{
    (void)state;
    /* d/dx mean(x^2) = 2x/6; max of each row adds 1 at its argmax */
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 6, 5, 4);
    CHECK_CLOSE(grad_of_mean(x), 1e-6, 2.0 / 6, 4.0 / 6, 6.0 / 6 + 1, 12.0 / 6 + 1, 10.0 / 6,
                8.0 / 6);
    ag_tensor x3 = F32(AG_SHAPE(1, 3), 3, 0, 0);
    CHECK_CLOSE(grad_of_mean(x3), 1e-6, 2.0 + 1, 0, 0);
    assert_int_equal(ag_function_trace_count("grad_of_mean"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_variable_gradient),
        TU_TEST(test_variable_read_twice),
        TU_TEST(test_watched_tensor_and_persistence),
        TU_TEST(test_gradients_of_several_sources),
        TU_TEST(test_unconnected_none_and_zero),
        TU_TEST(test_integer_source_is_an_error),
        TU_TEST(test_broadcast_and_non_scalar_target),
        TU_TEST(test_matmul),
        TU_TEST(test_gradient_of_gradient),
        TU_TEST(test_gather_gradient),
        TU_TEST(test_gradient_through_a_tensor_array),
        TU_TEST(test_bad_tape),
        TU_TEST(test_tape_inside_a_function),
        TU_TEST(test_eager_tape_over_a_call),
        TU_TEST(test_staged_if_on_a_tape),
        TU_TEST(test_staged_while_on_a_tape),
        TU_TEST(test_staged_loop_with_a_captured_weight),
        TU_TEST(test_staged_loop_carrying_an_array),
        TU_TEST(test_staged_loop_reading_its_array),
        TU_TEST(test_staged_if_returning_an_array),
        TU_TEST(test_unknown_dims),
        TU_TEST(test_gradient_graph_on_every_target),
    };
    TU_RUN(tests);
}
