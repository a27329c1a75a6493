/*
 * test_function_grad.c - a call of an AG_FUNCTION on an eager gradient
 * tape is one op (pipeline/function_grad.c): its gradient graph is traced
 * once per concrete function, split into a forward and a backward and
 * compiled; the gradients equal those of the body run op by op; results
 * no gradient reached, integer parameters, variables the function reads,
 * gradients of gradients and a tape inside the function all work.
 */
#include "staged_util.h"

#include <math.h>

/* How many times a body was run or traced (the trampolines count). */
static int body_runs;

/* AG_FUNCTION dense(x, n): y = tanh(x @ W + b) * n, with W and b
 * variables the function reads; a second result, sum(y), and a third,
 * an integer one (the argmax of each row). */
static ag_variable W, B;

static void dense__trace(const ag_arg *a, ag_tensor *o)
{
    body_runs++;
    ag_tensor z = ag_add(ag_matmul(a[0].tensor, ag_variable_read(W)), ag_variable_read(B));
    o[0] = ag_mul(ag_tanh(z), (double)a[1].i);
    o[1] = ag_reduce_sum(o[0], AG_ALL_AXES, false);
    o[2] = ag_argmax(o[0], 1);
}
static const ag_arg_kind K_TI2[] = {AG_ARG_TENSOR, AG_ARG_INT};
static const char *const N_XN[] = {"x", "n"};
AG_TEST_DESC(dense, 2, N_XN, K_TI2, NULL, 3, dense__trace);

static void dense(ag_tensor x, int n, ag_tensor *o)
{
    ag_arg a[2] = {targ(x), {.kind = AG_ARG_INT, .i = n}};
    ag_function_call_at(AG_HERE, &dense__desc, a, o);
}

static void make_weights(void)
{
    W = ag_variable_new(ag_random_uniform(AG_SHAPE(3, 4), -1, 1, AG_F32, 5));
    B = ag_variable_new(ag_random_uniform(AG_SHAPE(4), -1, 1, AG_F32, 6));
}

/* d loss / d (x, W, b) for loss = sum(y^2) + 3 sum(y), by a call on a
 * tape; grads[0..2]. */
static void dense_gradients(ag_tensor x, ag_tensor *grads)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor o[3];
    dense(x, 2, o);
    ag_tensor loss = ag_add(ag_reduce_sum(ag_mul(o[0], o[0]), AG_ALL_AXES, false),
                            ag_mul(o[1], 3.0));
    ag_tape_free(t);
    t = ag_tape_new_persistent();
    ag_tape_watch(t, x);
    dense(x, 2, o);
    loss = ag_add(ag_reduce_sum(ag_mul(o[0], o[0]), AG_ALL_AXES, false), ag_mul(o[1], 3.0));
    grads[0] = ag_tape_gradient(t, loss, x);
    grads[1] = ag_tape_gradient_variable(t, loss, W);
    grads[2] = ag_tape_gradient_variable(t, loss, B);
    ag_tape_free(t);
}

static void check_close(ag_tensor a, ag_tensor b, double bound, int line)
{
    if (ag_is_error(a) || ag_is_error(b))
        fail_msg("line %d: %s", line, ag_last_error());
    assert_int_equal(ag_num_elements(a), ag_num_elements(b));
    for (int64_t i = 0; i < ag_num_elements(a); i++) {
        double x = ag_get_f64(a, i), y = ag_get_f64(b, i);
        if (fabs(x - y) > bound * (1 + fabs(y)))
            fail_msg("line %d: element %lld: %.9g against %.9g", line, (long long)i, x, y);
    }
}
#define CHECK_NEAR(a, b, bound) check_close((a), (b), (bound), __LINE__)

/* The call is one op: the body is traced twice (the concrete function,
 * its gradient graph) however many calls; the gradients are the body's,
 * op by op. */
static void test_call_is_one_op(void **state)
{
    (void)state;
    make_weights();
    ag_tensor x = ag_random_uniform(AG_SHAPE(5, 3), -1, 1, AG_F32, 7);
    ag_tensor staged[3], eager[3];
    body_runs = 0;
    dense_gradients(x, staged);
    dense_gradients(x, staged); /* the same signature: nothing traced again */
    assert_int_equal(body_runs, 2);
    assert_int_equal(ag_function_trace_count("dense"), 1);
    ag_run_functions_eagerly(true);
    dense_gradients(x, eager);
    ag_run_functions_eagerly(false);
    assert_true(body_runs > 2);
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(staged[i], eager[i], 1e-5);
    ag_variable_free(W);
    ag_variable_free(B);
}

/* Results no gradient reaches get zeros; a loss of the second result only. */
static void test_result_without_gradient(void **state)
{
    (void)state;
    make_weights();
    ag_tensor x = ag_random_uniform(AG_SHAPE(2, 3), -1, 1, AG_F32, 8);
    ag_tensor g[2];
    for (int eager = 0; eager < 2; eager++) {
        ag_run_functions_eagerly(eager);
        ag_tape t = ag_tape_new();
        ag_tape_watch(t, x);
        ag_tensor o[3];
        dense(x, 1, o);
        g[eager] = ag_tape_gradient(t, o[1], x);
        ag_tape_free(t);
    }
    ag_run_functions_eagerly(false);
    CHECK_NEAR(g[0], g[1], 1e-5);
    ag_variable_free(W);
    ag_variable_free(B);
}

/* AG_FUNCTION cube_sum(x) = sum(x^3), its gradient 3x^2 and the
 * gradient of that, 6x, through nested tapes (the inner gradient is
 * recorded op by op by the outer tape). */
static void cube_sum__trace(const ag_arg *a, ag_tensor *o)
{
    body_runs++;
    o[0] = ag_reduce_sum(ag_mul(ag_mul(a[0].tensor, a[0].tensor), a[0].tensor), AG_ALL_AXES,
                         false);
}
AG_TEST_DESC(cube_sum, 1, N_X, K_T, NULL, 1, cube_sum__trace);

static ag_tensor cube_sum(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &cube_sum__desc, a, o);
    return o[0];
}

static void test_gradient_of_gradient(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(2), 2, -3);
    ag_tape outer = ag_tape_new();
    ag_tape_watch(outer, x);
    ag_tape inner = ag_tape_new();
    ag_tape_watch(inner, x);
    ag_tensor y = cube_sum(x);
    ag_tensor g = ag_tape_gradient(inner, y, x);
    CHECK_VALUES(g, 12, 27);
    ag_tensor gg = ag_tape_gradient(outer, ag_reduce_sum(g, AG_ALL_AXES, false), x);
    CHECK_VALUES(gg, 12, -18);
    ag_tape_free(inner);
    ag_tape_free(outer);
}

/* AG_FUNCTION grad_inside(x): a tape inside the function; the call on an
 * eager tape differentiates the gradient it computes (a second order in
 * the gradient graph). */
static void grad_inside__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, a[0].tensor);
    ag_tensor y = ag_reduce_sum(ag_mul(ag_mul(a[0].tensor, a[0].tensor), a[0].tensor),
                                AG_ALL_AXES, false);
    o[0] = ag_tape_gradient(t, y, a[0].tensor);
    ag_tape_free(t);
}
AG_TEST_DESC(grad_inside, 1, N_X, K_T, NULL, 1, grad_inside__trace);

static void test_tape_inside_the_function(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 2, 3);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &grad_inside__desc, a, o); /* 3x^2 */
    CHECK_VALUES(o[0], 12, 27);
    CHECK_VALUES(ag_tape_gradient(t, ag_reduce_sum(o[0], AG_ALL_AXES, false), x), 12, 18);
    ag_tape_free(t);
}

/* A function without float results runs as usual on a tape. */
static void argmax_only__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_argmax(a[0].tensor, 0); }
AG_TEST_DESC(argmax_only, 1, N_X, K_T, NULL, 1, argmax_only__trace);

static void test_integer_results_only(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(3), 1, 5, 2);
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &argmax_only__desc, a, o);
    assert_int_equal(ag_get_f64(o[0], 0), 1);
    ag_tape_free(t);
    assert_null(ag_last_error());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_call_is_one_op),
        TU_TEST(test_result_without_gradient),
        TU_TEST(test_gradient_of_gradient),
        TU_TEST(test_tape_inside_the_function),
        TU_TEST(test_integer_results_only),
    };
    TU_RUN(tests);
}
