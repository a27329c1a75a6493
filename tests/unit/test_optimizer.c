/*
 * test_optimizer.c - Keras's optimizers (runtime/autodiff/optimizer.c):
 * each one's first steps against its formula computed here in double,
 * slots made once, every error at the caller's line, and a training step
 * traced with the optimizer as a parameter (trace key by identity, the
 * singleton-variable rule and its fix).
 */
#include "staged_util.h"

#include "optimizer.h"

#include <unistd.h>

/* ------------------------------------------------- reference formulas */

typedef struct ref_state {
    double w[2], m[2], v[2];
    int t;
} ref_state;

/* tf.keras.optimizers.SGD */
static void ref_sgd(ref_state *s, const double *g, double lr, double mom, bool nesterov)
{
    for (int i = 0; i < 2; i++) {
        if (mom == 0) {
            s->w[i] -= lr * g[i];
            continue;
        }
        s->m[i] = mom * s->m[i] - lr * g[i];
        s->w[i] += nesterov ? mom * s->m[i] - lr * g[i] : s->m[i];
    }
}

/* tf.keras.optimizers.Adam (epsilon outside sqrt(v)); AdamW decays first */
static void ref_adam(ref_state *s, const double *g, double lr, double b1, double b2,
                     double eps, double wd)
{
    s->t++;
    double alpha = lr * sqrt(1 - pow(b2, s->t)) / (1 - pow(b1, s->t));
    for (int i = 0; i < 2; i++) {
        s->w[i] -= s->w[i] * wd * lr;
        s->m[i] = b1 * s->m[i] + (1 - b1) * g[i];
        s->v[i] = b2 * s->v[i] + (1 - b2) * g[i] * g[i];
        s->w[i] -= alpha * s->m[i] / (sqrt(s->v[i]) + eps);
    }
}

/* ------------------------------------------- three steps, both dtypes */

static const double W0[2] = {0.5, -1.25};
static const double GRADS[3][2] = {{0.3, -0.2}, {-0.7, 0.05}, {0.4, 0.9}};

typedef enum { SGD, SGD_MOMENTUM, SGD_NESTEROV, ADAM, ADAMW } which;

static ag_optimizer make(which k)
{
    switch (k) {
    case SGD: return ag_optimizer_sgd(0.1, 0.0, false);
    case SGD_MOMENTUM: return ag_optimizer_sgd(0.1, 0.9, false);
    case SGD_NESTEROV: return ag_optimizer_sgd(0.1, 0.9, true);
    case ADAM: return ag_optimizer_adam(0.01, 0.9, 0.999, 1e-7);
    default: return ag_optimizer_adamw(0.01, 0.8, 0.99, 1e-3, 0.1);
    }
}

static void ref_step(which k, ref_state *s, const double *g)
{
    switch (k) {
    case SGD: ref_sgd(s, g, 0.1, 0.0, false); break;
    case SGD_MOMENTUM: ref_sgd(s, g, 0.1, 0.9, false); break;
    case SGD_NESTEROV: ref_sgd(s, g, 0.1, 0.9, true); break;
    case ADAM: ref_adam(s, g, 0.01, 0.9, 0.999, 1e-7, 0); break;
    default: ref_adam(s, g, 0.01, 0.8, 0.99, 1e-3, 0.1); break;
    }
}

static ag_tensor pair(ag_dtype dt, const double *x)
{
    if (dt == AG_F64)
        return F64(AG_SHAPE(2), x[0], x[1]);
    return F32(AG_SHAPE(2), (float)x[0], (float)x[1]);
}

/* Slots each optimizer makes for one variable (the step count included). */
static int slots_for(which k)
{
    return k == SGD ? 0 : k <= SGD_NESTEROV ? 1 : 3;
}

static void three_steps(which k, ag_dtype dt, double tol)
{
    ag_optimizer o = make(k);
    ag_variable w = ag_variable_new(pair(dt, W0));
    ref_state s = {{W0[0], W0[1]}, {0, 0}, {0, 0}, 0};
    for (int step = 0; step < 3; step++) {
        ag_tensor g = pair(dt, GRADS[step]);
        ag_optimizer_apply(o, 1, &g, &w);
        assert_null(ag_last_error());
        ref_step(k, &s, GRADS[step]);
        CHECK_CLOSE(ag_variable_read(w), tol, s.w[0], s.w[1]);
        assert_int_equal(rt_optimizer_num_slots(o), slots_for(k)); /* made once */
    }
    ag_optimizer_free(o);
    ag_variable_free(w);
}

static void test_sgd(void **state)
{
    (void)state;
    three_steps(SGD, AG_F32, 1e-6);
    three_steps(SGD, AG_F64, 1e-12);
}

static void test_sgd_momentum(void **state)
{
    (void)state;
    three_steps(SGD_MOMENTUM, AG_F32, 1e-6);
    three_steps(SGD_MOMENTUM, AG_F64, 1e-12);
}

static void test_sgd_nesterov(void **state)
{
    (void)state;
    three_steps(SGD_NESTEROV, AG_F32, 1e-6);
    three_steps(SGD_NESTEROV, AG_F64, 1e-12);
}

static void test_adam(void **state)
{
    (void)state;
    three_steps(ADAM, AG_F32, 1e-6);
    three_steps(ADAM, AG_F64, 1e-12);
}

static void test_adamw(void **state)
{
    (void)state;
    three_steps(ADAMW, AG_F32, 1e-6);
    three_steps(ADAMW, AG_F64, 1e-12);
}

/* One set of slots per variable, keyed by the variable: two variables
 * updated together, then one of them alone, keep their own moments. */
static void test_slots_per_variable(void **state)
{
    (void)state;
    ag_optimizer o = ag_optimizer_adam_default(0.01);
    ag_variable vs[2] = {ag_variable_new(pair(AG_F64, W0)), ag_variable_new(pair(AG_F64, W0))};
    ref_state s0 = {{W0[0], W0[1]}, {0, 0}, {0, 0}, 0}, s1 = s0;
    ag_tensor gs[2] = {pair(AG_F64, GRADS[0]), pair(AG_F64, GRADS[1])};
    ag_optimizer_apply(o, 2, gs, vs);
    assert_int_equal(rt_optimizer_num_slots(o), 5); /* 2 + 2 moments, 1 step count */
    ref_adam(&s0, GRADS[0], 0.01, AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON, 0);
    ref_adam(&s1, GRADS[1], 0.01, AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON, 0);
    ag_optimizer_apply(o, 1, &gs[1], &vs[1]);
    ref_adam(&s1, GRADS[1], 0.01, AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON, 0);
    ag_optimizer_apply(o, 1, &gs[0], &vs[0]);
    s0.t++; /* the step count is the optimizer's, as Keras's iterations */
    ref_adam(&s0, GRADS[0], 0.01, AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON, 0);
    assert_int_equal(rt_optimizer_num_slots(o), 5);
    CHECK_CLOSE(ag_variable_read(vs[0]), 1e-12, s0.w[0], s0.w[1]);
    CHECK_CLOSE(ag_variable_read(vs[1]), 1e-12, s1.w[0], s1.w[1]);
    ag_optimizer_free(o);
    ag_variable_free(vs[0]);
    ag_variable_free(vs[1]);
}

/* A null gradient leaves its variable alone; the others are updated. */
static void test_unconnected_gradient_skipped(void **state)
{
    (void)state;
    ag_optimizer o = ag_optimizer_sgd(0.5, 0, false);
    ag_variable vs[2] = {ag_variable_new(pair(AG_F32, W0)), ag_variable_new(pair(AG_F32, W0))};
    ag_tensor gs[2] = {{0, 0}, ag_ones(AG_F32, AG_SHAPE(2))};
    /* stderr into a file for the two applies: the warning comes once */
    fflush(stderr);
    int saved = dup(2);
    FILE *log = tmpfile();
    assert_non_null(log);
    dup2(fileno(log), 2);
    ag_optimizer_apply(o, 2, gs, vs);
    ag_optimizer_apply(o, 2, gs, vs);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_null(ag_last_error());
    char text[1024] = "";
    rewind(log);
    size_t got = fread(text, 1, sizeof text - 1, log);
    text[got] = 0;
    fclose(log);
    const char *first = strstr(text, "warning: ag_optimizer_apply: gradient 0 is the null tensor");
    assert_non_null(first);
    assert_null(strstr(first + 1, "warning:"));
    CHECK_CLOSE(ag_variable_read(vs[0]), 0, W0[0], W0[1]);
    CHECK_CLOSE(ag_variable_read(vs[1]), 0, W0[0] - 1, W0[1] - 1);
    ag_optimizer_free(o);
    ag_variable_free(vs[0]);
    ag_variable_free(vs[1]);
}

/* ------------------------------------------------------------- errors */

/* Runs a void call and asserts it reported an error naming this file
 * and containing needle. */
#define EXPECT_VOID_ERROR(call, needle)                                           \
    do {                                                                          \
        ag_clear_error();                                                         \
        call;                                                                     \
        const char *m_ = ag_last_error();                                         \
        if (!m_ || !strstr(m_, (needle)) || !strstr(m_, "test_optimizer.c"))      \
            fail_msg("line %d: error \"%s\" lacks \"%s\" or this file", __LINE__, \
                     m_ ? m_ : "(none)", (needle));                               \
    } while (0)

#define EXPECT_NULL_ERROR(call, needle) EXPECT_VOID_ERROR(assert_null(call), needle)

static void test_construction_errors(void **state)
{
    (void)state;
    EXPECT_NULL_ERROR(ag_optimizer_sgd(NAN, 0, false), "learning_rate is nan");
    EXPECT_NULL_ERROR(ag_optimizer_sgd(-0.1, 0, false), "learning_rate is -0.1");
    EXPECT_NULL_ERROR(ag_optimizer_sgd(0.1, 1.5, false), "momentum is 1.5; it must be in [0, 1]");
    EXPECT_NULL_ERROR(ag_optimizer_adam(0.1, 1.0, 0.999, 1e-7), "beta_1 is 1; it must be in [0, 1)");
    EXPECT_NULL_ERROR(ag_optimizer_adam(0.1, 0.9, -0.5, 1e-7), "beta_2 is -0.5");
    EXPECT_NULL_ERROR(ag_optimizer_adam(0.1, 0.9, 0.999, NAN), "epsilon is nan");
    EXPECT_NULL_ERROR(ag_optimizer_adam(INFINITY, 0.9, 0.999, 1e-7), "learning_rate is inf");
    EXPECT_NULL_ERROR(ag_optimizer_adamw(0.1, 0.9, 0.999, 1e-7, -1), "weight_decay is -1");
    EXPECT_NULL_ERROR(ag_optimizer_adamw(0.1, 0.9, 1.0, 1e-7, 0.1), "beta_2 is 1");
}

static void test_apply_errors(void **state)
{
    (void)state;
    ag_optimizer o = ag_optimizer_adam_default(0.1);
    ag_variable w = ag_variable_new(pair(AG_F32, W0));
    ag_variable wi = ag_variable_new(I32(AG_SHAPE(2), 1, 2));
    ag_tensor g = pair(AG_F32, GRADS[0]);
    ag_tensor g64 = pair(AG_F64, GRADS[0]);
    ag_tensor g3 = ag_ones(AG_F32, AG_SHAPE(3));
    ag_tensor gi = I32(AG_SHAPE(2), 1, 1);
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, -1, &g, &w), "n is -1");
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, NULL, &w), "grads is NULL");
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, &g, NULL), "vars is NULL");
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, &g64, &w),
                      "gradient 0 is f64[2] but variable 0 is f32[2]");
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, &g3, &w),
                      "gradient 0 is f32[3] but variable 0 is f32[2]");
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, &gi, &wi),
                      "variable 0 is i32[2]; optimizers update floating-point variables");
    assert_int_equal(rt_optimizer_num_slots(o), 0); /* nothing made by failed applies */
    CHECK_CLOSE(ag_variable_read(w), 0, (float)W0[0], (float)W0[1]);
    ag_optimizer_free(o);
    EXPECT_VOID_ERROR(ag_optimizer_apply(o, 1, &g, &w), "not a live optimizer");
    EXPECT_VOID_ERROR(ag_optimizer_free(o), "not a live optimizer");
    EXPECT_VOID_ERROR(assert_int_equal(rt_optimizer_serial(AG_HERE, o), 0),
                      "not a live optimizer");
    ag_optimizer_free(NULL); /* like free(NULL) */
    ag_variable_free(w);
    ag_variable_free(wi);
}

/* --------------------------------------- a traced step, optimizer as a parameter */

/* train_step(w, x, opt): the gradient of sum((w - x)^2) by hand, 2(w - x). */
static void train_step__staged(ag_variable w, ag_tensor x, ag_optimizer opt)
{
    ag_tensor g = ag_mul(ag_sub(ag_variable_read(w), x), 2.0);
    ag_optimizer_apply(opt, 1, &g, &w);
}
static void train_step__trace(const ag_arg *a, ag_tensor *o)
{
    (void)o;
    train_step__staged(a[0].variable, a[1].tensor, a[2].optimizer);
}
static const ag_arg_kind K_VTO[] = {AG_ARG_VARIABLE, AG_ARG_TENSOR, AG_ARG_OPTIMIZER};
static const char *const N_WXO[] = {"w", "x", "opt"};
AG_TEST_DESC(train_step, 3, N_WXO, K_VTO, NULL, 0, train_step__trace);
AG_TEST_DESC(train_step_2, 3, N_WXO, K_VTO, NULL, 0, train_step__trace);

static bool call_step(const ag_function_desc *d, ag_variable w, ag_tensor x, ag_optimizer o)
{
    ag_arg a[3] = {{.kind = AG_ARG_VARIABLE, .variable = w}, targ(x),
                   {.kind = AG_ARG_OPTIMIZER, .optimizer = o}};
    return ag_function_call_at(AG_HERE, d, a, NULL);
}

/* 20 staged steps give the eager steps' weights. */
static void test_traced_step_matches_eager(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(2), 3, -2);
    ag_variable we = ag_variable_new(pair(AG_F64, W0)), ws = ag_variable_new(pair(AG_F64, W0));
    ag_optimizer oe = ag_optimizer_adam_default(0.1), os = ag_optimizer_adam_default(0.1);
    for (int i = 0; i < 20; i++) {
        train_step__staged(we, x, oe);
        assert_true(call_step(&train_step__desc, ws, x, os));
    }
    assert_int_equal(ag_function_trace_count("train_step"), 1);
    ag_tensor e = ag_variable_read(we);
    CHECK_CLOSE(ag_variable_read(ws), 1e-12, ag_get_f64(e, 0), ag_get_f64(e, 1));
    /* a second optimizer traces again, and may not make its slots there */
    ag_optimizer o2 = ag_optimizer_sgd(0.1, 0.9, false);
    ag_clear_error();
    assert_false(call_step(&train_step__desc, ws, x, o2));
    assert_non_null(strstr(ag_last_error(), "only supports singleton variables created on "
                                            "the first call"));
    assert_non_null(strstr(ag_last_error(), "test_optimizer.c"));
    /* the guide's fix: another function for the other optimizer */
    ag_clear_error();
    assert_true(call_step(&train_step_2__desc, ws, x, o2));
    assert_true(call_step(&train_step_2__desc, ws, x, o2));
    assert_int_equal(ag_function_trace_count("train_step_2"), 1);
    ag_optimizer_free(oe);
    ag_optimizer_free(os);
    ag_optimizer_free(o2);
    ag_variable_free(we);
    ag_variable_free(ws);
}

/* The optimizer is keyed by identity: a freed optimizer's address reused
 * by a new one is not the same key (its slots are gone). */
static void test_optimizer_key_is_identity(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 1, 1);
    ag_variable w = ag_variable_new(ag_zeros(AG_F32, AG_SHAPE(2)));
    ag_optimizer o = ag_optimizer_sgd(0.25, 0, false);
    uint64_t first = rt_optimizer_serial(AG_HERE, o);
    assert_true(call_step(&train_step_2__desc, w, x, o)); /* w = 0 - 0.25 * 2 * (0 - 1) */
    CHECK_CLOSE(ag_variable_read(w), 0, 0.5, 0.5);
    ag_optimizer_free(o);
    ag_optimizer o2 = ag_optimizer_sgd(0.25, 0, false);
    assert_true(rt_optimizer_serial(AG_HERE, o2) != first);
    int traces = ag_function_trace_count("train_step_2");
    assert_true(call_step(&train_step_2__desc, w, x, o2)); /* no slots to make: traces */
    assert_int_equal(ag_function_trace_count("train_step_2"), traces + 1);
    CHECK_CLOSE(ag_variable_read(w), 0, 0.75, 0.75);
    ag_clear_error();
    ag_optimizer_free(o2);
    assert_false(call_step(&train_step_2__desc, w, x, o2));
    assert_non_null(strstr(ag_last_error(), "not a live optimizer"));
    ag_variable_free(w);
}

/* scaled(x, opt): a function whose only non-tensor parameter is an
 * optimizer (it does not use it). */
static void scaled__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_mul(a[0].tensor, 2.0); }
static const ag_arg_kind K_TO[] = {AG_ARG_TENSOR, AG_ARG_OPTIMIZER};
static const char *const N_XO[] = {"x", "opt"};
AG_TEST_DESC(scaled, 2, N_XO, K_TO, NULL, 1, scaled__trace);

/* A function with an optimizer parameter has no signature to trace or
 * export, and is not batched. */
static void test_optimizer_not_in_signature(void **state)
{
    (void)state;
    ag_function_register(&scaled__desc);
    ag_clear_error();
    assert_null(ag_get_concrete_function("scaled", "f32[2]"));
    assert_non_null(strstr(ag_last_error(), "ag_optimizer parameters cannot be given in a "
                                            "signature"));
    char dir[64];
    assert_true(tu_temp_dir(dir, sizeof dir, "agc-optimizer"));
    char path[96];
    snprintf(path, sizeof path, "%s/model", dir);
    ag_export_signature sig = {.name = "serving_default", .function = "scaled",
                               .spec = "f32[2]"};
    ag_save_options opts = {.signatures = &sig, .n_signatures = 1};
    ag_clear_error();
    assert_false(ag_saved_model_save(path, &opts));
    assert_non_null(strstr(ag_last_error(), "ag_optimizer parameters cannot be given in a "
                                            "signature"));
    tu_remove_dir(dir);
    ag_batch_options bo = {.max_batch_size = 4};
    ag_clear_error();
    assert_null(ag_batcher_new("scaled", "f32[?]", &bo));
    assert_non_null(strstr(ag_last_error(), "parameter 'opt' of 'scaled' is an optimizer"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_sgd),
        TU_TEST(test_sgd_momentum),
        TU_TEST(test_sgd_nesterov),
        TU_TEST(test_adam),
        TU_TEST(test_adamw),
        TU_TEST(test_slots_per_variable),
        TU_TEST(test_unconnected_gradient_skipped),
        TU_TEST(test_construction_errors),
        TU_TEST(test_apply_errors),
        TU_TEST(test_traced_step_matches_eager),
        TU_TEST(test_optimizer_key_is_identity),
        TU_TEST(test_optimizer_not_in_signature),
    };
    TU_RUN(tests);
}
