/*
 * test_gradients.c - every gradient rule of the op table against central
 * finite differences in f64, on f32 and f64 (ag_check_gradients).
 *
 * The test walks ops.def: each op whose gradient column is GRAD(name)
 * must have a case below (its operands' shapes, attributes and the range
 * its values are drawn from), or the test fails naming it; so a rule
 * added to the table is checked without anyone adding it here first.
 *
 * Error bounds (ag_check_gradients' |analytic - numeric| / (1 + |numeric|)):
 * f64 1e-6, f32 2e-3 — the analytic gradient is computed in the dtype
 * itself, and f32 rounds at about 6e-8 per op, summed over the few dozen
 * elements and ops of a case.
 */
#include "test_util.h"

#include "rt.h"

#define MAX_IN 3

/* How one op is exercised: its operands (shape, and the range [lo, hi)
 * their values come from; a negative `away` keeps |x| >= away by drawing
 * the magnitude and a sign), its attributes. */
typedef struct operand {
    ag_shape shape;
    double lo, hi;
    bool away_from_zero; /* magnitude in [lo, hi), random sign */
    bool boolean;        /* a condition (where) */
    const double *values; /* fixed values instead (reduce_prod's zeros) */
    ag_dtype index;      /* AG_I32 or AG_I64: indices (values), never perturbed; 0 (AG_F32): not indices */
} operand;

typedef struct grad_case {
    bool present;
    int n;
    operand in[MAX_IN];
    rt_attrs attrs;
    /* For ops whose operands are not all tensors (tensor arrays): a
     * function of the tensor operands that exercises the op. */
    ag_tensor (*fn)(void *ctx, const ag_tensor *in);
} grad_case;

#define S(...) AG_SHAPE(__VA_ARGS__)
#define ANY(...) {S(__VA_ARGS__), -1.0, 1.0, false, false, NULL}
#define POS(...) {S(__VA_ARGS__), 0.5, 2.0, false, false, NULL}
#define AWAY(...) {S(__VA_ARGS__), 0.2, 1.0, true, false, NULL}
#define COND(...) {S(__VA_ARGS__), 0, 0, false, true, NULL}
#define INDEX(dt, v, ...) {S(__VA_ARGS__), 0, 0, false, false, v, dt}
#define CASE(...) {.present = true, __VA_ARGS__}

/* one zero in row 0, two in row 1, none in row 2 */
static const double prod_values[] = {0.5, 0, 1.5, -2, 0, 0, 0.7, 1.1, 1.2, -0.9, 0.8, 1.3};

/* gather's indices: repeated (2 twice, 0 three times), one row (3) never */
static const double gather_rows[] = {2, 0, 2, 0, 1, 0};
/* a segment sum into 4 rows: row 1 gets three slices, row 2 none */
static const double segment_rows[] = {1, 3, 1, 0, 1};

/* The tensor arrays. ta_write: b written over a in element 0 (a's only
 * path is the read before it), c into element 1; the stack and the read
 * weigh each element differently so that a wrong row would show. */
static ag_tensor arrays_written(void *ctx, const ag_tensor *in)
{
    (void)ctx;
    ag_tensor_array ta = ag_tensor_array_new(ag_dtype_of(in[0]), 2, false);
    ta = ag_tensor_array_write(ta, 0, in[0]);
    ag_tensor early = ag_tensor_array_read(ta, 0);
    ta = ag_tensor_array_write(ta, 0, in[1]);
    ta = ag_tensor_array_write(ta, 1, ag_mul(in[2], 3.0));
    ag_tensor w = ag_from_data(AG_F64, AG_SHAPE(2, 1, 1), ((const double[]){2, -1}));
    ag_tensor stacked = ag_mul(ag_tensor_array_stack(ta), ag_cast(w, ag_dtype_of(in[0])));
    return ag_add(ag_reduce_sum(ag_mul(stacked, stacked), AG_ALL_AXES, false),
                  ag_reduce_sum(ag_mul(early, in[2]), AG_ALL_AXES, false));
}

/* ta_read: elements read back (one twice) from a growing array. */
static ag_tensor arrays_read(void *ctx, const ag_tensor *in)
{
    (void)ctx;
    ag_tensor_array ta = ag_tensor_array_new(ag_dtype_of(in[0]), 0, true);
    ta = ag_tensor_array_write(ta, 0, ag_square(in[0]));
    ta = ag_tensor_array_write(ta, 1, ag_mul(in[0], in[1]));
    ag_tensor r0 = ag_tensor_array_read(ta, 0), r1 = ag_tensor_array_read(ta, 1);
    return ag_add(ag_mul(r0, ag_tensor_array_read(ta, 0)), ag_mul(r1, 2.0));
}

/* The conv2d family, strided SAME on odd sizes (7x5 input, 3x3 window,
 * strides 2 and 3: uneven padding, taps over both edges) and VALID. */
#define CONV_SAME .stride_h = 2, .stride_w = 3, .padding = AG_SAME
#define CONV_VALID .stride_h = 1, .stride_w = 2, .padding = AG_VALID

static const grad_case cases[RT_OP_COUNT] = {
    [RT_OP_ADD] = CASE(.n = 2, .in = {ANY(2, 3), ANY(3)}),
    [RT_OP_SUB] = CASE(.n = 2, .in = {ANY(2, 1), ANY(2, 3)}),
    [RT_OP_MUL] = CASE(.n = 2, .in = {ANY(2, 3), ANY(2, 1)}),
    [RT_OP_DIV] = CASE(.n = 2, .in = {ANY(2, 3), AWAY(3)}),
    [RT_OP_MOD] = CASE(.n = 2, .in = {{S(2, 3), 3.2, 3.8, false, false, NULL},
                                      {S(3), 1.5, 1.55, false, false, NULL}}),
    [RT_OP_POW] = CASE(.n = 2, .in = {POS(2, 3), ANY(2, 3)}),
    [RT_OP_MAXIMUM] = CASE(.n = 2, .in = {ANY(2, 3), ANY(3)}),
    [RT_OP_MINIMUM] = CASE(.n = 2, .in = {ANY(2, 3), ANY(2, 3)}),
    [RT_OP_WHERE] = CASE(.n = 3, .in = {COND(2, 3), ANY(2, 3), ANY(3)}),
    [RT_OP_NEG] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_ABS] = CASE(.n = 1, .in = {AWAY(2, 3)}),
    [RT_OP_EXP] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_LOG] = CASE(.n = 1, .in = {POS(2, 3)}),
    [RT_OP_SQRT] = CASE(.n = 1, .in = {POS(2, 3)}),
    [RT_OP_RSQRT] = CASE(.n = 1, .in = {POS(2, 3)}),
    [RT_OP_SQUARE] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_TANH] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_SIGMOID] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_RELU] = CASE(.n = 1, .in = {AWAY(2, 3)}),
    [RT_OP_CAST] = CASE(.n = 1, .in = {ANY(2, 3)}, .attrs = {.dtype = AG_F64}),
    [RT_OP_REDUCE_SUM] = CASE(.n = 1, .in = {ANY(3, 4)}, .attrs = {.axis = 0, .keepdims = true}),
    [RT_OP_REDUCE_MEAN] = CASE(.n = 1, .in = {ANY(3, 4)}, .attrs = {.axis = AG_ALL_AXES}),
    [RT_OP_REDUCE_MAX] = CASE(.n = 1, .in = {ANY(3, 4)}, .attrs = {.axis = 1}),
    [RT_OP_REDUCE_MIN] = CASE(.n = 1, .in = {ANY(3, 4)}, .attrs = {.axis = -1, .keepdims = true}),
    [RT_OP_REDUCE_PROD] = CASE(.n = 1, .in = {{S(3, 4), 0, 0, false, false, prod_values}},
                               .attrs = {.axis = 1}),
    [RT_OP_SOFTMAX] = CASE(.n = 1, .in = {ANY(3, 4)}, .attrs = {.axis = -1}),
    [RT_OP_MATMUL] = CASE(.n = 2, .in = {ANY(2, 2, 3), ANY(3, 4)}),
    [RT_OP_CONV2D] = CASE(.n = 2, .in = {ANY(2, 7, 5, 3), ANY(3, 3, 3, 2)}, .attrs = {CONV_SAME}),
    [RT_OP_CONV2D_BACKPROP_INPUT] = CASE(.n = 2, .in = {ANY(2, 4, 2, 2), ANY(3, 3, 3, 2)},
                                         .attrs = {CONV_SAME, .shape = S(2, 7, 5, 3)}),
    [RT_OP_CONV2D_BACKPROP_FILTER] = CASE(.n = 2, .in = {ANY(1, 6, 5, 2), ANY(1, 5, 2, 3)},
                                          .attrs = {CONV_VALID, .shape = S(2, 3, 2, 3)}),
    [RT_OP_RESHAPE] = CASE(.n = 1, .in = {ANY(2, 3)}, .attrs = {.shape = S(3, 2)}),
    [RT_OP_TRANSPOSE] = CASE(.n = 1, .in = {ANY(2, 3, 4)}, .attrs = {.perm = S(1, 2, 0)}),
    [RT_OP_CONCAT] = CASE(.n = 2, .in = {ANY(2, 3), ANY(2, 2)}, .attrs = {.axis = 1}),
    [RT_OP_STACK] = CASE(.n = 2, .in = {ANY(2, 3), ANY(2, 3)}, .attrs = {.axis = 1}),
    [RT_OP_SLICE] = CASE(.n = 1, .in = {ANY(4, 5)},
                         .attrs = {.begin = S(1, 2), .size = S(2, -1)}),
    [RT_OP_GATHER] = CASE(.n = 2, .in = {ANY(3, 4, 2), INDEX(AG_I32, gather_rows, 2, 3)},
                          .attrs = {.axis = 1}),
    [RT_OP_UNSORTED_SEGMENT_SUM] = CASE(.n = 2, .in = {ANY(5, 3), INDEX(AG_I64, segment_rows, 5)},
                                        .attrs = {.axis = 0, .n = 4}),
    [RT_OP_EXPAND_DIMS] = CASE(.n = 1, .in = {ANY(2, 3)}, .attrs = {.axis = 1}),
    [RT_OP_SQUEEZE] = CASE(.n = 1, .in = {ANY(2, 1, 3)}, .attrs = {.axis = 1}),
    [RT_OP_TO_DEVICE] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_TO_HOST] = CASE(.n = 1, .in = {ANY(2, 3)}),
    [RT_OP_TA_WRITE] = CASE(.n = 3, .in = {ANY(2, 3), ANY(2, 3), ANY(2, 3)}, .fn = arrays_written),
    [RT_OP_TA_READ] = CASE(.n = 2, .in = {ANY(2, 3), ANY(2, 3)}, .fn = arrays_read),
    [RT_OP_TA_STACK] = CASE(.n = 3, .in = {ANY(2, 3), ANY(2, 3), ANY(2, 3)}, .fn = arrays_written),
};

/* A fixed pseudo-random sequence in [0, 1). */
static double next_unit(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24);
}

static ag_tensor make_operand(const operand *o, ag_dtype dt, uint32_t *seed)
{
    int64_t n = 1;
    for (int i = 0; i < o->shape.rank; i++)
        n *= o->shape.dims[i];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        double u = next_unit(seed), x = o->lo + (o->hi - o->lo) * next_unit(seed);
        v[i] = o->values ? o->values[i] : o->boolean ? (u < 0.5)
               : o->away_from_zero && u < 0.5 ? -x : x;
    }
    ag_tensor t = ag_from_data(AG_F64, o->shape, v);
    free(v);
    return ag_cast(t, o->boolean ? AG_BOOL : o->index ? o->index : dt);
}

typedef struct op_call {
    rt_op op;
    const grad_case *c;
} op_call;

static ag_tensor apply_op(void *ctx, const ag_tensor *in)
{
    const op_call *call = ctx;
    return rt_call(AG_HERE, call->op, &call->c->attrs, in, call->c->n);
}

static void check_op(rt_op op, ag_dtype dt, double bound)
{
    const grad_case *c = &cases[op];
    uint32_t seed = 777u + (uint32_t)op;
    ag_tensor in[MAX_IN];
    for (int i = 0; i < c->n; i++)
        in[i] = make_operand(&c->in[i], dt, &seed);
    op_call call = {op, c};
    ag_gradient_check r;
    if (!ag_check_gradients(c->fn ? c->fn : apply_op, &call, c->n, in, &r))
        fail_msg("ag_%s (%s): the check failed: %s", rt_ops[op].name, ag_dtype_name(dt),
                 ag_last_error() ? ag_last_error() : "?");
    if (!(r.max_error <= bound))
        fail_msg("ag_%s (%s): gradient of operand %d element %lld is %.9g, finite "
                 "differences give %.9g (error %.3g > %.3g)", rt_ops[op].name,
                 ag_dtype_name(dt), r.input, (long long)r.element, r.analytic, r.numeric,
                 r.max_error, bound);
}

static void test_every_rule_against_finite_differences(void **state)
{
    (void)state;
    int checked = 0;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        if (rt_ops[op].grad_kind != RT_GRAD_RULE)
            continue;
        if (!cases[op].present)
            fail_msg("ag_%s has a gradient rule but no case in test_gradients.c",
                     rt_ops[op].name);
        check_op((rt_op)op, AG_F64, 1e-6);
        check_op((rt_op)op, AG_F32, 2e-3);
        checked++;
    }
    assert_true(checked >= 30);
}

/* The check finds a disagreement: x + (x > 0.5) has a jump at 0.5, which
 * the tape does not see (the comparison has no gradient: 1) and finite
 * differences across it do (about 1 / 2h). */
static ag_tensor step_at_half(void *ctx, const ag_tensor *in)
{
    (void)ctx;
    ag_tensor x = in[0];
    return ag_add(x, ag_cast(ag_greater(x, 0.5), ag_dtype_of(x)));
}

static void test_check_reports_a_disagreement(void **state)
{
    (void)state;
    ag_tensor x = ag_from_data(AG_F64, AG_SHAPE(2), ((const double[]){0.1, 0.5}));
    ag_gradient_check r;
    assert_true(ag_check_gradients(step_at_half, NULL, 1, &x, &r));
    assert_true(r.max_error > 0.9); /* the jump: about 1 / 2h against 1 */
    assert_true(r.numeric > 1e5);
    assert_int_equal(r.input, 0);
    assert_int_equal(r.element, 1);
    assert_true(r.analytic >= 0.5 && r.analytic < 1.5); /* 1 times its weight */
}

/* softmax cross-entropy of a linear layer against class 0, as a user
 * writes it: -log(softmax(x w)[:, 0]), summed */
static ag_tensor apply_xent(void *ctx, const ag_tensor *in)
{
    (void)ctx;
    ag_tensor logits = ag_matmul(in[1], in[0]);
    ag_tensor p = ag_softmax(logits, -1);
    ag_tensor first = ag_slice(p, AG_SHAPE(0, 0), AG_SHAPE(-1, 1));
    return ag_neg(ag_log(first));
}

static void test_check_of_a_user_function(void **state)
{
    (void)state;
    /* softmax cross-entropy of a linear layer, as a user writes it */
    ag_tensor w = ag_random_uniform(AG_SHAPE(4, 3), -1, 1, AG_F32, 5);
    ag_tensor x = ag_random_uniform(AG_SHAPE(2, 4), -1, 1, AG_F32, 6);
    ag_tensor in[2] = {w, x};
    ag_gradient_check r;
    assert_true(ag_check_gradients(apply_xent, NULL, 2, in, &r));
    assert_true(r.max_error <= 2e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_every_rule_against_finite_differences),
        TU_TEST(test_check_reports_a_disagreement),
        TU_TEST(test_check_of_a_user_function),
    };
    TU_RUN(tests);
}
