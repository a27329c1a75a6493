/*
 * test_device_target.c - a second device target, registered at run time
 * by this test alone: "test-accel", which runs f32 add and mul and
 * nothing else. The function cache, the pipeline and the passes place
 * AG_FUNCTIONs on it by its name (device("test-accel")) with soft
 * placement, the rest on the host through explicit transfers, exactly as
 * they do for the tpu-model; nothing above backend/ knows it exists.
 */
#include "staged_util.h"

#include "exec.h"
#include "target.h"

#include <string.h>

/* ------------------------------------------------ the device target */

#define ACCEL "test-accel"

/* Its op table, indexed by op like the built-in targets' (ops_tpu.c):
 * the device's own arithmetic. */
static const bool accel_ops[RT_OP_COUNT] = {[RT_OP_ADD] = true, [RT_OP_MUL] = true};

static bool accel_supports(int op, ag_dtype dt)
{
    return op >= 0 && op < RT_OP_COUNT && accel_ops[op] && dt == AG_F32;
}

static bool accel_fuses(int op) { return op >= 0 && op < RT_OP_COUNT && accel_ops[op]; }

/* What the last compile was handed, and what the runs did on the device. */
static struct {
    int on_device, to_device, to_host, host_ops;
    bool sides_agree; /* every node reads its operands on its own side */
    int device_adds, device_muls, transfers_run;
} seen;

struct tgt_exe {
    ir_plan *plan;
    ir_device device;
};

static bool on_accel(const ir_node *n) { return n->device == ir_device_named(ACCEL); }

/* A top-level parameter is on both sides; every other value is where its
 * node was placed. */
static bool readable(const ir_node *v, bool device)
{
    return (v->opcode == IR_PARAM && !v->graph->parent) || on_accel(v) == device;
}

static void survey(const ir_function *fn, pass_analyses *am)
{
    const ir_liveness *live = pass_analyses_liveness(am);
    memset(&seen, 0, sizeof seen);
    seen.sides_agree = true;
    for (const ir_node *n = fn->body->first; n; n = n->next) {
        if (!ir_is_live(live, n))
            continue;
        seen.to_device += n->opcode == RT_OP_TO_DEVICE;
        seen.to_host += n->opcode == RT_OP_TO_HOST;
        bool transfer = n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST;
        if (transfer)
            continue; /* they read the other side: that is what they are for */
        seen.on_device += on_accel(n);
        seen.host_ops += !on_accel(n);
        for (int i = 0; i < n->n_in; i++)
            seen.sides_agree &= readable(n->in[i], on_accel(n));
    }
}

static tgt_exe *accel_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                              tgt_diag *d)
{
    survey(fn, am);
    tgt_exe *x = calloc(1, sizeof *x);
    x->plan = ir_plan_new(fn);
    x->device = ir_device_named(ACCEL);
    return x;
}

/* The device's own kernels: f32 add and mul of same-shape operands. */
static rt_value *accel_apply(void *ctx, const ir_node *n, rt_value *const *in, int n_in,
                             bool *handled)
{
    const tgt_exe *x = ctx;
    seen.transfers_run += n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST;
    bool mine = n->device == x->device && (n->opcode == RT_OP_ADD || n->opcode == RT_OP_MUL);
    if (!mine || !ag_shape_equal(in[0]->shape, in[1]->shape))
        return NULL; /* the host's, a transfer or a broadcast: the runtime's kernel */
    rt_value *out = rt_value_new(AG_F32, &in[0]->shape);
    const float *a = in[0]->data, *b = in[1]->data;
    float *r = out->data;
    bool add = n->opcode == RT_OP_ADD;
    for (int64_t i = 0; i < out->numel; i++)
        r[i] = add ? a[i] + b[i] : a[i] * b[i];
    seen.device_adds += add;
    seen.device_muls += !add;
    *handled = true;
    return out;
}

static bool accel_run(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results)
{
    ir_exec_hooks hooks = {.apply = accel_apply, .ctx = (void *)x};
    return ir_execute_hooked(x->plan, &hooks, args, n_args, results);
}

static void accel_free(tgt_exe *x)
{
    ir_plan_free(x->plan);
    free(x);
}

static tgt_cost accel_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = tgt_count_cost(fn, am);
    c.seconds = c.flops * 1e-12;
    return c;
}

static const tgt_target accel = {
    .name = ACCEL,
    .summary = "test only: a device of f32 add and mul",
    .device = "the test accelerator",
    .unsupported_hint = "enable soft device placement to run it on the host",
    .caps = {.target = ACCEL, .native_dtypes = 1u << AG_F32, .supports = accel_supports,
             .fuses = accel_fuses},
    .compile = accel_compile,
    .run = accel_run,
    .free = accel_free,
    .cost = accel_cost,
};

/* ------------------------------------------------------ the functions */

/* tanh(x*x + x) * x: mul and add on the device, tanh on the host, the
 * last mul on the device again. */
static int tanh_line;
static void mixed__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    tanh_line = __LINE__ + 1;
    ag_tensor h = ag_tanh(ag_add(ag_mul(x, x), x));
    o[0] = ag_mul(h, x);
}
AG_TEST_DESC(mixed, 1, N_X, K_T, NULL, 1, mixed__trace);
static ag_tensor mixed(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &mixed__desc, a, o);
    return o[0];
}

/* ---------------------------------------------------------------- tests */

static void register_accel(void)
{
    assert_true(tgt_register(&accel) || tgt_find(ACCEL) == &accel);
}

/* Without soft placement an op the device lacks is the user's error, at
 * the line of the op, naming the device. */
static void test_unsupported_op_is_located(void **state)
{
    (void)state;
    register_accel();
    ag_set_soft_device_placement(false);
    assert_true(ag_set_target(ACCEL));
    ag_tensor r = mixed(F32(AG_SHAPE(3), 1, 2, 3));
    ag_set_target(NULL);
    assert_true(ag_is_error(r));
    char want[160];
    snprintf(want, sizeof want, "test_device_target.c:%d: 'ag_tanh' isn't compilable for the test "
             "accelerator; enable soft device placement", tanh_line);
    assert_non_null(strstr(ag_last_error(), want));
    ag_clear_error();
}

/* With it: placement by the target's name, transfers where values cross,
 * the device's own kernels for its nodes, and the eager results. */
static void test_soft_placement_runs_on_the_device(void **state)
{
    (void)state;
    register_accel();
    ag_set_soft_device_placement(true);
    assert_true(ag_set_target(ACCEL));
    ag_tensor x = F32(AG_SHAPE(4), -1, 0, 0.5f, 2);
    ag_tensor got = mixed(x);
    ag_set_target(NULL);
    ag_set_soft_device_placement(false);
    assert_false(ag_is_error(got));
    /* mul, add | to_host, tanh | to_device, mul */
    assert_int_equal(seen.on_device, 3);
    assert_int_equal(seen.host_ops, 1);
    assert_int_equal(seen.to_host, 1);
    assert_int_equal(seen.to_device, 1);
    assert_true(seen.sides_agree);
    assert_int_equal(seen.device_muls, 2);
    assert_int_equal(seen.device_adds, 1);
    assert_int_equal(seen.transfers_run, 2);
    ag_run_functions_eagerly(true);
    ag_tensor want = mixed(x);
    ag_run_functions_eagerly(false);
    for (int64_t i = 0; i < 4; i++)
        assert_true(ag_get_f64(got, i) == ag_get_f64(want, i));
}

/* The IR names the device by the target: its text form says so, and
 * reads back to the same device. */
static void test_the_ir_names_the_device(void **state)
{
    (void)state;
    register_accel();
    ir_function *fn = ir_parse("func @f(%0: f32[4]) -> (f32[4]) {\n"
                               "  %1 = mul(%0, %0) : f32[4]\n"
                               "  %2 = exp(%1) : f32[4]\n"
                               "  return %2\n}\n",
                               "t.ir", NULL, 0);
    assert_non_null(fn);
    pass_analyses *am = pass_analyses_new(fn, &accel.caps);
    pass_options o;
    pass_options_init(&o);
    o.soft_placement = true;
    assert_true(pass_run_with(fn, "place", am, &o));
    const ir_node *mul = fn->body->first;
    assert_int_equal(mul->device, ir_device_named(ACCEL));
    assert_string_equal(ir_device_name(mul->device), ACCEL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(fn, f);
    fclose(f);
    assert_non_null(strstr(text, "mul(%0, %0) : f32[4] device(\"test-accel\")"));
    ir_function *back = ir_parse(text, "t.ir", NULL, 0);
    assert_non_null(back);
    assert_int_equal(back->body->first->device, mul->device);
    free(text);
    ir_function_free(back);
    pass_analyses_free(am);
    ir_function_free(fn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_unsupported_op_is_located),
        TU_TEST(test_soft_placement_runs_on_the_device),
        TU_TEST(test_the_ir_names_the_device),
    };
    TU_RUN(tests);
}
