/*
 * test_conv_training.c - training through conv2d and gather: a tiny
 * convolutional net (images gathered from a trainable table of patches by
 * repeated ids, a strided SAME conv, relu, a dense layer, a squared error)
 * takes SGD steps eagerly and as one staged graph (forward, backward and
 * update) on the cpu target; both give the same weights and losses, and
 * the loss falls (on the tpu-model too, within its numerics). Also the
 * new ops' values against a direct definition.
 */
#include "staged_util.h"

#include "rt.h"

#include <math.h>

enum { N_OUT = 4, STEPS = 6 };

static ag_tensor sgd(ag_tensor w, ag_tensor g) { return ag_sub(w, ag_mul(g, 0.2)); }

/* AG_FUNCTION void conv_step(ag_tensor w1, ag_tensor w2, ag_tensor table,
 *                            ag_tensor ids, ag_tensor y): the loss and the
 * three updated weights. */
static void conv_step__staged(ag_tensor w1, ag_tensor w2, ag_tensor table, ag_tensor ids,
                              ag_tensor y, ag_tensor *o)
{
    ag_tape t = ag_tape_new();
    ag_tensor src[3] = {w1, w2, table}, g[3];
    for (int i = 0; i < 3; i++)
        ag_tape_watch(t, src[i]);
    ag_tensor x = ag_gather(table, ids, 0);                       /* [4, 7, 5, 2] */
    ag_tensor h = ag_relu(ag_conv2d(x, w1, 2, 2, AG_SAME));      /* [4, 4, 3, 3] */
    ag_tensor out = ag_matmul(ag_reshape(h, AG_SHAPE(4, 36)), w2); /* [4, 2] */
    ag_tensor loss = ag_reduce_mean(ag_square(ag_sub(out, y)), AG_ALL_AXES, false);
    ag_tape_gradients(t, loss, 3, src, g);
    ag_tape_free(t);
    o[0] = loss;
    for (int i = 0; i < 3; i++)
        o[1 + i] = sgd(src[i], g[i]);
}
static void conv_step__trace(const ag_arg *a, ag_tensor *o)
{
    conv_step__staged(a[0].tensor, a[1].tensor, a[2].tensor, a[3].tensor, a[4].tensor, o);
}
static const ag_arg_kind K_5T[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR,
                                   AG_ARG_TENSOR, AG_ARG_TENSOR};
static const char *const N_STEP[] = {"w1", "w2", "table", "ids", "y"};
AG_TEST_DESC(conv_step, 5, N_STEP, K_5T, NULL, N_OUT, conv_step__trace);

typedef struct net {
    ag_tensor w1, w2, table;
    double loss[STEPS];
} net;

/* STEPS steps from the same start; each call keeps its results alive. */
static net train(void)
{
    net n = {ag_random_uniform(AG_SHAPE(3, 3, 2, 3), -0.5, 0.5, AG_F32, 21),
             ag_random_uniform(AG_SHAPE(36, 2), -0.5, 0.5, AG_F32, 22),
             ag_random_uniform(AG_SHAPE(3, 7, 5, 2), 0, 1, AG_F32, 23), {0}};
    ag_tensor ids = ag_from_data(AG_I32, AG_SHAPE(4), ((const int32_t[]){2, 0, 2, 1}));
    ag_tensor y = ag_from_data(AG_F32, AG_SHAPE(4, 2),
                               ((const float[]){1, 0, 0, 1, 1, 0, 0.5f, 0.5f}));
    for (int s = 0; s < STEPS; s++) {
        ag_arg a[5] = {targ(n.w1), targ(n.w2), targ(n.table), targ(ids), targ(y)};
        ag_tensor o[N_OUT];
        ag_function_call_at(AG_HERE, &conv_step__desc, a, o);
        if (ag_last_error())
            fail_msg("step %d: %s", s, ag_last_error());
        n.loss[s] = ag_item_f64(o[0]);
        n.w1 = o[1], n.w2 = o[2], n.table = o[3];
    }
    return n;
}

static void same_values(ag_tensor a, ag_tensor b, const char *what)
{
    assert_int_equal(ag_num_elements(a), ag_num_elements(b));
    for (int64_t i = 0; i < ag_num_elements(a); i++) {
        double x = ag_get_f64(a, i), y = ag_get_f64(b, i);
        if (!(fabs(x - y) <= 1e-5 * (1 + fabs(x))))
            fail_msg("%s element %lld: staged %.9g, eager %.9g", what, (long long)i, y, x);
    }
}

static void test_eager_and_staged_training_agree(void **state)
{
    (void)state;
    ag_run_functions_eagerly(true);
    net eager = train();
    ag_run_functions_eagerly(false);
    assert_true(ag_set_target("cpu"));
    net staged = train();
    assert_true(ag_set_target(NULL));
    assert_int_equal(ag_function_trace_count("conv_step"), 1);
    for (int s = 0; s < STEPS; s++)
        assert_true(fabs(eager.loss[s] - staged.loss[s]) <= 1e-5 * (1 + eager.loss[s]));
    same_values(eager.w1, staged.w1, "w1");
    same_values(eager.w2, staged.w2, "w2");
    same_values(eager.table, staged.table, "table");
    assert_true(staged.loss[STEPS - 1] < 0.7 * staged.loss[0]);
}

/* The tpu-model runs the step too: the gradients' products on the host
 * (soft placement), conv2d on its matrix unit, whose bf16 operands make
 * the bound wider. */
static void test_step_on_the_tpu_model(void **state)
{
    (void)state;
    ag_run_functions_eagerly(true);
    net eager = train();
    ag_run_functions_eagerly(false);
    assert_true(ag_set_target("tpu-model"));
    net tpu = train();
    assert_true(ag_set_target(NULL));
    for (int s = 0; s < STEPS; s++)
        if (!(fabs(eager.loss[s] - tpu.loss[s]) <= 2e-2 * (1 + eager.loss[s])))
            fail_msg("step %d: loss %g on the tpu-model, %g eagerly", s, tpu.loss[s],
                     eager.loss[s]);
    assert_true(tpu.loss[STEPS - 1] < 0.7 * tpu.loss[0]);
}

/* ------------------------------------------- unknown dims in signatures */

/* AG_FUNCTION AG_SIGNATURE("f32[?,6,5,2], f32[3,3,2,4]") ag_tensor
 * conv_grads(ag_tensor x, ag_tensor w): d sum(conv2d(x, w)^2) / dx + the
 * filter's gradient summed, on a batch of any size. */
static ag_tensor conv_grads__staged(ag_tensor x, ag_tensor w)
{
    ag_tape t = ag_tape_new();
    ag_tensor src[2] = {x, w}, g[2];
    ag_tape_watch(t, x);
    ag_tape_watch(t, w);
    ag_tensor y = ag_conv2d(x, w, 2, 2, AG_SAME);
    ag_tape_gradients(t, ag_reduce_sum(ag_square(y), AG_ALL_AXES, false), 2, src, g);
    ag_tape_free(t);
    return ag_add(ag_reduce_sum(g[0], AG_ALL_AXES, false), ag_reduce_sum(g[1], AG_ALL_AXES, false));
}
static void conv_grads__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = conv_grads__staged(a[0].tensor, a[1].tensor);
}
static const char *const N_XW[] = {"x", "w"};
AG_TEST_DESC(conv_grads, 2, N_XW, K_TT, "f32[?,6,5,2], f32[3,3,2,4]", 1, conv_grads__trace);

/* AG_FUNCTION AG_SIGNATURE("f32[?,3], i32[2]") ag_tensor
 * gather_grad(ag_tensor x, ag_tensor ids): the gathered rows' gradient. */
static ag_tensor gather_grad__staged(ag_tensor x, ag_tensor ids)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor y = ag_reduce_sum(ag_gather(x, ids, 0), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, y, x);
    ag_tape_free(t);
    return g;
}
static void gather_grad__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = gather_grad__staged(a[0].tensor, a[1].tensor);
}
static const char *const N_XI[] = {"x", "ids"};
AG_TEST_DESC(gather_grad, 2, N_XI, K_TT, "f32[?,3], i32[2]", 1, gather_grad__trace);

static ag_tensor call2(const ag_function_desc *d, ag_tensor p, ag_tensor q)
{
    ag_arg a[2] = {targ(p), targ(q)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

/* The batch of conv2d's input is unknown when traced: backprop_input
 * takes it from dy when the graph runs; staged agrees with eager for two
 * batch sizes and one trace. gather's gradient needs the gathered axis's
 * size when traced, and says so. */
static void test_unknown_dims(void **state)
{
    (void)state;
    ag_tensor w = ag_random_uniform(AG_SHAPE(3, 3, 2, 4), -1, 1, AG_F32, 51);
    for (int b = 1; b <= 3; b += 2) {
        ag_tensor x = ag_random_uniform(AG_SHAPE(b, 6, 5, 2), -1, 1, AG_F32, 52);
        ag_run_functions_eagerly(true);
        double want = ag_item_f64(call2(&conv_grads__desc, x, w));
        ag_run_functions_eagerly(false);
        ag_tensor got = call2(&conv_grads__desc, x, w);
        if (ag_last_error())
            fail_msg("batch %d: %s", b, ag_last_error());
        assert_true(fabs(ag_item_f64(got) - want) <= 1e-4 * (1 + fabs(want)));
    }
    assert_int_equal(ag_function_trace_count("conv_grads"), 1);
    ag_tensor x = ag_ones(AG_F32, AG_SHAPE(4, 3));
    ag_tensor ids = ag_from_data(AG_I32, AG_SHAPE(2), ((const int32_t[]){1, 1}));
    assert_true(ag_is_error(call2(&gather_grad__desc, x, ids)));
    assert_non_null(strstr(ag_last_error(), "needs the size of axis 0 of the gathered"));
}

/* -------------------------------------------- the new ops, by definition */

static ag_tensor apply2(rt_op op, const rt_attrs *a, ag_tensor p, ag_tensor q)
{
    ag_tensor in[2] = {p, q};
    return rt_call(AG_HERE, op, a, in, 2);
}

/* sum(dy * conv2d(x, w)) is bilinear: its gradient in x is
 * backprop_input(dy, w) and in w backprop_filter(x, dy). Checked
 * element by element with unit x (w), in f64 and in i32 (exact). */
static void check_pairing(ag_dtype dt, int sh, int sw, ag_padding pad)
{
    ag_shape xs = AG_SHAPE(2, 5, 7, 2), ws = AG_SHAPE(3, 3, 2, 3); /* SAME pads both sides */
    ag_tensor x = ag_cast(ag_random_uniform(xs, -3, 3, AG_F64, 31), dt);
    ag_tensor w = ag_cast(ag_random_uniform(ws, -3, 3, AG_F64, 32), dt);
    ag_tensor y = ag_conv2d(x, w, sh, sw, pad);
    ag_tensor dy = ag_cast(ag_random_uniform(ag_shape_get(y), -3, 3, AG_F64, 33), dt);
    rt_attrs ai = {.stride_h = sh, .stride_w = sw, .padding = pad, .shape = xs};
    rt_attrs af = {.stride_h = sh, .stride_w = sw, .padding = pad, .shape = ws};
    ag_tensor dx = apply2(RT_OP_CONV2D_BACKPROP_INPUT, &ai, dy, w);
    ag_tensor dw = apply2(RT_OP_CONV2D_BACKPROP_FILTER, &af, x, dy);
    for (int k = 0; k < 2; k++) {
        ag_shape s = k ? ws : xs;
        ag_tensor got = k ? dw : dx;
        for (int64_t i = 0; i < ag_num_elements(got); i++) {
            ag_scope_push();
            ag_tensor e = ag_cast(ag_one_hot(ag_scalar_i64(i), rt_shape_numel(&s)), dt);
            e = ag_reshape(e, s);
            ag_tensor yi = k ? ag_conv2d(x, e, sh, sw, pad) : ag_conv2d(e, w, sh, sw, pad);
            double want = ag_item_f64(ag_reduce_sum(ag_mul(dy, yi), AG_ALL_AXES, false));
            ag_scope_pop();
            if (fabs(ag_get_f64(got, i) - want) > 1e-9 * (1 + fabs(want)))
                fail_msg("%s %s element %lld: %g, by definition %g", ag_dtype_name(dt),
                         k ? "dw" : "dx", (long long)i, ag_get_f64(got, i), want);
        }
    }
}

static void test_conv_backprops_by_definition(void **state)
{
    (void)state;
    check_pairing(AG_F64, 2, 3, AG_SAME);
    check_pairing(AG_F64, 1, 2, AG_VALID);
    check_pairing(AG_I32, 2, 2, AG_SAME);
}

/* Small integers are exact in bf16 and their sums here too (below 256):
 * the bf16 kernels (f32 accumulation, rounded once) give the i32 ones'
 * values exactly. */
static ag_tensor small_ints(ag_shape s, uint64_t seed, ag_dtype dt)
{
    return ag_cast(ag_cast(ag_random_uniform(s, -3, 4, AG_F64, seed), AG_I32), dt);
}

static void same_as_i32(ag_tensor bf, ag_tensor i32, const char *what)
{
    for (int64_t i = 0; i < ag_num_elements(i32); i++)
        if (ag_get_f64(bf, i) != ag_get_f64(i32, i))
            fail_msg("bf16 %s element %lld: %g, i32 gives %g", what, (long long)i,
                     ag_get_f64(bf, i), ag_get_f64(i32, i));
}

static void test_bf16_kernels(void **state)
{
    (void)state;
    ag_shape xs = AG_SHAPE(2, 5, 4, 2), ws = AG_SHAPE(2, 3, 2, 3), ys = AG_SHAPE(2, 3, 2, 3);
    rt_attrs ai = {.stride_h = 2, .stride_w = 2, .padding = AG_SAME, .shape = xs};
    rt_attrs af = {.stride_h = 2, .stride_w = 2, .padding = AG_SAME, .shape = ws};
    rt_attrs as = {.axis = 0, .n = 3};
    ag_tensor ids = ag_from_data(AG_I32, AG_SHAPE(4), ((const int32_t[]){2, 0, 2, 2}));
    ag_tensor r[2][3];
    for (int k = 0; k < 2; k++) {
        ag_dtype dt = k ? AG_I32 : AG_BF16;
        ag_tensor x = small_ints(xs, 41, dt), w = small_ints(ws, 42, dt);
        ag_tensor dy = small_ints(ys, 43, dt), d = small_ints(AG_SHAPE(4, 5), 44, dt);
        r[k][0] = apply2(RT_OP_CONV2D_BACKPROP_INPUT, &ai, dy, w);
        r[k][1] = apply2(RT_OP_CONV2D_BACKPROP_FILTER, &af, x, dy);
        r[k][2] = apply2(RT_OP_UNSORTED_SEGMENT_SUM, &as, d, ids);
        assert_int_equal(ag_dtype_of(r[k][0]), dt);
    }
    same_as_i32(r[0][0], r[1][0], "dx");
    same_as_i32(r[0][1], r[1][1], "dw");
    same_as_i32(r[0][2], r[1][2], "segment sum");
}

static void test_segment_sum(void **state)
{
    (void)state;
    ag_tensor d = ag_from_data(AG_F32, AG_SHAPE(2, 3), ((const float[]){1, 2, 3, 4, 5, 6}));
    ag_tensor ids = ag_from_data(AG_I64, AG_SHAPE(3), ((const int64_t[]){2, 0, 2}));
    rt_attrs a = {.axis = 1, .n = 4};
    ag_tensor s = apply2(RT_OP_UNSORTED_SEGMENT_SUM, &a, d, ids);
    CHECK_VALUES(s, 2, 0, 4, 0, 5, 0, 10, 0);
    ag_tensor bad = ag_from_data(AG_I64, AG_SHAPE(3), ((const int64_t[]){2, 4, 2}));
    assert_true(ag_is_error(apply2(RT_OP_UNSORTED_SEGMENT_SUM, &a, d, bad)));
    assert_non_null(strstr(ag_last_error(), "index 4 (at position 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_eager_and_staged_training_agree),
        TU_TEST(test_step_on_the_tpu_model),
        TU_TEST(test_unknown_dims),
        TU_TEST(test_conv_backprops_by_definition),
        TU_TEST(test_bf16_kernels),
        TU_TEST(test_segment_sum),
    };
    TU_RUN(tests);
}
