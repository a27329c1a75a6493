/*
 * test_bf16.c - bf16 conversion of whole functions: AG_BFLOAT16 and
 * AG_BF16 turn it on; the converted function computes the same bits on
 * the cpu target as on the reference executor; its error against f32 on
 * an MLP layer and a conv2d stays within what bf16 implies; the accuracy
 * report names the outputs' errors; the pass's options and report from C
 * (ag_set_bf16_options, ag_bf16_report); elementwise chains in f32,
 * rounded once, and bf16 inputs and outputs (io) from a C call.
 */
#include "staged_util.h"

#include "pass.h"

#include <math.h>
#include <string.h>

/* relu(x @ w + b), then softmax: the MLP example's layer */
static void layer__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor h = ag_relu(ag_add(ag_matmul(a[0].tensor, a[1].tensor), a[2].tensor));
    o[0] = ag_softmax(h, 1);
}
static const ag_arg_kind K_TTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
static const char *const N_XWB[] = {"x", "w", "b"};
static const ag_function_desc layer_f32__desc = {
    "layer_f32", __FILE__, __LINE__, 3, N_XWB, K_TTT, NULL, NULL, 1, layer__trace, 0};
static const ag_function_desc layer_bf16__desc = {
    "layer_bf16", __FILE__, __LINE__, 3, N_XWB, K_TTT, NULL, NULL, 1, layer__trace,
    AG_FN_BFLOAT16};

/* tanh(conv2d(x, f)): the conv2d example's kind of work */
static void conv__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_tanh(ag_conv2d(a[0].tensor, a[1].tensor, 1, 1, AG_SAME));
}
/* One descriptor per target, so that each has its own concrete function. */
#define CONV_DESC(name, flags) \
    static const ag_function_desc name##__desc = { \
        #name, __FILE__, __LINE__, 2, N_XY, K_TT, NULL, NULL, 1, conv__trace, flags}
CONV_DESC(conv_bf16_cpu, AG_FN_BFLOAT16);
CONV_DESC(conv_bf16_reference, AG_FN_BFLOAT16);
CONV_DESC(conv_f32, 0);

/* tanh(x*a + b)*c + x: a chain of elementwise ops only */
static void chain__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    o[0] = ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a[1].tensor), a[2].tensor)), a[3].tensor), x);
}
static const ag_arg_kind K_TTTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
static const char *const N_XABC[] = {"x", "a", "b", "c"};
#define CHAIN_DESC(name) \
    static const ag_function_desc name##__desc = { \
        #name, __FILE__, __LINE__, 4, N_XABC, K_TTTT, NULL, NULL, 1, chain__trace, AG_FN_BFLOAT16}
CHAIN_DESC(chain_io_cpu);
CHAIN_DESC(chain_io_reference);
CHAIN_DESC(chain_io_f32_args);
CHAIN_DESC(chain_io_per_op);

static ag_tensor call(const ag_function_desc *d, int n, const ag_tensor *in)
{
    ag_arg a[4];
    for (int i = 0; i < n; i++)
        a[i] = targ(in[i]);
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

static ag_tensor sample(ag_shape s, uint32_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) * 2 - 1;
    }
    ag_tensor t = ag_from_data(AG_F32, s, x);
    free(x);
    return t;
}

/* max |want - got| / max |want|: elementwise relative error means
 * nothing near zero, where bf16 keeps absolute, not relative, accuracy. */
static double normwise_error(ag_tensor want, ag_tensor got)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < ag_num_elements(want); i++) {
        double a = ag_get_f64(want, i), b = ag_get_f64(got, i);
        diff = fmax(diff, fabs(a - b));
        scale = fmax(scale, fabs(a));
    }
    return diff / scale;
}

/* A concrete function's graph as text (free it). */
static char *graph_text(const ag_concrete_function *cf)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ag_concrete_print_graph(cf, f);
    fclose(f);
    return text;
}

static void test_annotated_layer_is_bf16_and_bounded(void **state)
{
    (void)state;
    ag_tensor in[3] = {sample(AG_SHAPE(16, 64), 1), sample(AG_SHAPE(64, 32), 2),
                       sample(AG_SHAPE(32), 3)};
    ag_tensor exact = call(&layer_f32__desc, 3, in);
    ag_tensor cpu = call(&layer_bf16__desc, 3, in);
    assert_int_equal(ag_dtype_of(cpu), AG_F32); /* the user's dtypes at the boundary */
    double err = normwise_error(exact, cpu);
    assert_true(err > 0);     /* it did convert */
    assert_true(err < 2e-2);  /* a few bf16 ulps (2^-8) through matmul, relu, softmax */
    ag_concrete_function *cf = ag_get_concrete_function("layer_bf16", "f32[16,64], f32[64,32], f32[32]");
    char *text = graph_text(cf);
    assert_non_null(strstr(text, "matmul("));
    assert_non_null(strstr(text, ": bf16[16,32]"));
    free(text);
}

/* Bit for bit: the converted graph compiled for the cpu and interpreted;
 * within bf16's error of the f32 function. */
static void test_cpu_matches_reference_bitwise(void **state)
{
    (void)state;
    ag_tensor in[2] = {sample(AG_SHAPE(2, 9, 9, 4), 5), sample(AG_SHAPE(3, 3, 4, 8), 6)};
    assert_true(ag_set_target("cpu"));
    ag_tensor cpu = call(&conv_bf16_cpu__desc, 2, in);
    ag_tensor exact = call(&conv_f32__desc, 2, in);
    assert_true(ag_set_target("reference"));
    ag_tensor ref = call(&conv_bf16_reference__desc, 2, in);
    ag_set_target(NULL);
    assert_false(ag_is_error(cpu) || ag_is_error(ref) || ag_is_error(exact));
    for (int64_t i = 0; i < ag_num_elements(cpu); i++) {
        float a = (float)ag_get_f64(cpu, i), b = (float)ag_get_f64(ref, i);
        assert_memory_equal(&a, &b, sizeof a);
    }
    double err = normwise_error(exact, cpu);
    assert_true(err > 0 && err < 2e-2);
}

static void test_env_turns_it_on(void **state)
{
    (void)state;
    setenv("AG_BF16", "1", 1);
    rt_config_reload_env();
    ag_concrete_function *cf = ag_get_concrete_function("layer_f32", "f32[4,8], f32[8,4], f32[4]");
    unsetenv("AG_BF16");
    rt_config_reload_env();
    char *text = graph_text(cf);
    assert_non_null(strstr(text, ": bf16[4,4]"));
    free(text);
}

/* The report from C: each output's error against f32, within bf16's
 * bound, and the op where it grows most, at its line in this file. */
static void test_report_api(void **state)
{
    (void)state;
    ag_tensor in[3] = {sample(AG_SHAPE(16, 64), 1), sample(AG_SHAPE(64, 32), 2),
                       sample(AG_SHAPE(32), 3)};
    ag_bf16_report rep;
    assert_true(ag_bf16_report("layer_f32", in, 3, &rep));
    assert_int_equal(rep.n_outputs, 1);
    assert_true(rep.max_abs[0] > 0);
    assert_true(rep.max_abs[0] < 2e-2); /* softmax outputs: probabilities */
    assert_true(rep.max_rel[0] > 0);
    assert_true(rep.worst_op[0] != '\0');
    assert_non_null(strstr(rep.worst_file, "test_bf16.c"));
    assert_true(rep.worst_line > 0);
    assert_true(rep.worst_growth > 0);
    /* the same as the errors of the converted function run by the cpu */
    ag_tensor exact = call(&layer_f32__desc, 3, in), bf16 = call(&layer_bf16__desc, 3, in);
    double diff = 0;
    for (int64_t i = 0; i < ag_num_elements(exact); i++)
        diff = fmax(diff, fabs(ag_get_f64(exact, i) - ag_get_f64(bf16, i)));
    assert_true(fabs(diff - rep.max_abs[0]) <= 0.25 * diff); /* other sums: one bf16 step at most */
}

/* Every op kept in f32 through the filterlist: nothing loses precision. */
static void test_options_filterlist_from_c(void **state)
{
    (void)state;
    ag_tensor in[3] = {sample(AG_SHAPE(4, 8), 4), sample(AG_SHAPE(8, 4), 5), sample(AG_SHAPE(4), 6)};
    ag_bf16_options o = {.filterlist = "matmul, add,relu,softmax"};
    assert_true(ag_set_bf16_options(&o));
    ag_bf16_report rep;
    bool ok = ag_bf16_report("layer_f32", in, 3, &rep);
    assert_true(ag_set_bf16_options(NULL));
    assert_true(ok);
    assert_true(rep.max_abs[0] == 0);
    assert_string_equal(rep.worst_op, "");
    /* and without it the same inputs do lose some */
    assert_true(ag_bf16_report("layer_f32", in, 3, &rep));
    assert_true(rep.max_abs[0] > 0);
}

/* enabled converts the functions traced afterwards, as AG_BF16=1 does. */
static void test_options_enable_from_c(void **state)
{
    (void)state;
    ag_bf16_options o = {.enabled = true, .scope = "all"};
    assert_true(ag_set_bf16_options(&o));
    ag_concrete_function *cf = ag_get_concrete_function("layer_f32", "f32[2,8], f32[8,2], f32[2]");
    assert_true(ag_set_bf16_options(NULL));
    char *text = graph_text(cf);
    assert_non_null(strstr(text, ": bf16[2,2]"));
    free(text);
    ag_concrete_release(cf);
}

/* Whether a and b hold the same bf16 bits. */
static bool same_bf16(ag_tensor a, ag_tensor b)
{
    return ag_dtype_of(a) == AG_BF16 && ag_dtype_of(b) == AG_BF16 &&
           ag_num_elements(a) == ag_num_elements(b) &&
           memcmp(ag_data(a), ag_data(b), (size_t)ag_num_elements(a) * 2) == 0;
}

/* The chain's inputs in bf16: x with ties and a range where tanh
 * saturates, and a, b, c. */
static void chain_inputs(ag_tensor in[4])
{
    in[0] = ag_cast(ag_mul(sample(AG_SHAPE(1000), 9), 4.0), AG_BF16);
    static const float abc[3] = {0.75f, -0.125f, 1.5f};
    for (int i = 0; i < 3; i++)
        in[1 + i] = ag_cast(ag_from_data(AG_F32, AG_SCALAR, &abc[i]), AG_BF16);
}

/* The default (elementwise = f32) with io from a C call: the caller's bf16
 * tensors are widened, the chain computes in f32 and its result rounds
 * once, on the cpu target (one fused loop) and the reference executor
 * alike; eager f32 arithmetic on the widened values gives the same bits. */
static void test_io_chain_rounds_once(void **state)
{
    (void)state;
    ag_tensor in[4];
    chain_inputs(in);
    ag_bf16_options o = {.io = true};
    assert_true(ag_set_bf16_options(&o));
    assert_true(ag_set_target("cpu"));
    ag_tensor cpu = call(&chain_io_cpu__desc, 4, in);
    assert_true(ag_set_target("reference"));
    ag_tensor ref = call(&chain_io_reference__desc, 4, in);
    ag_set_target(NULL);
    assert_true(ag_set_bf16_options(NULL));
    ag_tensor w[4];
    for (int i = 0; i < 4; i++)
        w[i] = ag_cast(in[i], AG_F32);
    ag_tensor once = ag_cast(
        ag_add(ag_mul(ag_tanh(ag_add(ag_mul(w[0], w[1]), w[2])), w[3]), w[0]), AG_BF16);
    ag_tensor per_op = ag_add(ag_mul(ag_tanh(ag_add(ag_mul(in[0], in[1]), in[2])), in[3]), in[0]);
    assert_true(same_bf16(cpu, ref));
    assert_true(same_bf16(cpu, once));
    assert_false(same_bf16(cpu, per_op)); /* rounding once is not rounding per op */
    ag_concrete_function *cf =
        ag_get_concrete_function("chain_io_cpu", "bf16[1000], bf16[], bf16[], bf16[]");
    char *text = graph_text(cf);
    assert_non_null(strstr(text, "tanh(%"));
    assert_non_null(strstr(text, ": f32[1000]"));
    assert_non_null(strstr(text, "-> (bf16[1000])"));
    free(text);
}

/* elementwise = "bf16" rounds after every op: eager bf16 code's bits. */
static void test_elementwise_bf16_rounds_per_op(void **state)
{
    (void)state;
    ag_tensor in[4];
    chain_inputs(in);
    ag_bf16_options o = {.io = true, .elementwise = "bf16"};
    assert_true(ag_set_bf16_options(&o));
    ag_tensor staged = call(&chain_io_per_op__desc, 4, in);
    assert_true(ag_set_bf16_options(NULL));
    ag_tensor eager = ag_add(ag_mul(ag_tanh(ag_add(ag_mul(in[0], in[1]), in[2])), in[3]), in[0]);
    assert_true(same_bf16(staged, eager));
}

/* With io the converted function takes bf16 tensors: an f32 one is
 * reported at the function, naming the parameter. */
static void test_io_f32_argument_is_reported(void **state)
{
    (void)state;
    ag_tensor in[4] = {sample(AG_SHAPE(8), 1), sample(AG_SCALAR, 2), sample(AG_SCALAR, 3),
                       sample(AG_SCALAR, 4)};
    ag_bf16_options o = {.io = true};
    assert_true(ag_set_bf16_options(&o));
    ag_arg a[4];
    for (int i = 0; i < 4; i++)
        a[i] = targ(in[i]);
    ag_tensor out[1];
    bool ok = ag_function_call_at(AG_HERE, &chain_io_f32_args__desc, a, out);
    assert_true(ag_set_bf16_options(NULL));
    assert_false(ok);
    assert_non_null(strstr(ag_last_error(), "its parameter 'x' takes a bf16 tensor, not f32[8]"));
    ag_clear_error();
}

/* Mistakes are reported, and change nothing. */
static void test_api_errors(void **state)
{
    (void)state;
    ag_tensor in[3] = {sample(AG_SHAPE(4, 8), 4), sample(AG_SHAPE(8, 4), 5), sample(AG_SHAPE(4), 6)};
    ag_bf16_report rep;
    assert_false(ag_bf16_report("no_such_function", in, 3, &rep));
    assert_non_null(strstr(ag_last_error(), "no AG_FUNCTION named 'no_such_function'"));
    ag_clear_error();
    assert_false(ag_bf16_report("layer_f32", in, 2, &rep));
    assert_non_null(strstr(ag_last_error(), "takes 3 parameters but 2 inputs"));
    ag_clear_error();
    ag_bf16_options bad_op = {.filterlist = "matmul,tanhh"};
    assert_false(ag_set_bf16_options(&bad_op));
    assert_non_null(strstr(ag_last_error(), "names 'tanhh', which is no op"));
    ag_clear_error();
    ag_bf16_options bad_scope = {.scope = "gpu"};
    assert_false(ag_set_bf16_options(&bad_scope));
    assert_non_null(strstr(ag_last_error(), "scope \"gpu\""));
    ag_clear_error();
    ag_bf16_options bad_elementwise = {.elementwise = "f16"};
    assert_false(ag_set_bf16_options(&bad_elementwise));
    assert_non_null(strstr(ag_last_error(), "elementwise \"f16\" is none of"));
    ag_clear_error();
    /* the options in force are still the defaults: the report converts */
    assert_true(ag_bf16_report("layer_f32", in, 3, &rep));
    assert_true(rep.max_abs[0] > 0);
}

int main(void)
{
    ag_function_register(&layer_f32__desc);
    ag_function_register(&layer_bf16__desc);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_annotated_layer_is_bf16_and_bounded),
        TU_TEST(test_cpu_matches_reference_bitwise),
        TU_TEST(test_env_turns_it_on),
        TU_TEST(test_report_api),
        TU_TEST(test_options_filterlist_from_c),
        TU_TEST(test_options_enable_from_c),
        TU_TEST(test_io_chain_rounds_once),
        TU_TEST(test_elementwise_bf16_rounds_per_op),
        TU_TEST(test_io_f32_argument_is_reported),
        TU_TEST(test_api_errors),
    };
    TU_RUN(tests);
}
