/*
 * test_converter.c - the inference converter on a small model: selection
 * by alias, name and signature; the duplicate-selection, indirect-call,
 * unknown-name and TPU-support errors; the report's numbers against the
 * TPU-model's cost model; and the converted model's results against the
 * original's.
 *
 * The functions are written in the form agc generates: `serve` scales its
 * input on the host, then calls `layer` (alias tpu_func) and `head`
 * (alias head_func); `outer` (alias outer_func) calls `layer`; `noisy`
 * prints, which the TPU cannot.
 */
#include "staged_util.h"

#include "convert.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

static ag_variable w, b;

static ag_tensor call1(const ag_function_desc *d, ag_tensor x)
{
    ag_tensor o[1];
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = x};
    ag_function_call_at(AG_HERE, d, &a, o);
    return o[0];
}

static void layer__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_relu(ag_add(ag_matmul(a[0].tensor, ag_variable_read(w)), ag_variable_read(b)));
}
static const ag_function_desc layer__desc = {
    .name = "layer", .file = "model.c", .line = 10, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,16]", .alias = "tpu_func", .n_outputs = 1,
    .trace = layer__trace};

static void head__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_softmax(ag_mul(a[0].tensor, 0.5f), 1);
}
static const ag_function_desc head__desc = {
    .name = "head", .file = "model.c", .line = 20, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .alias = "head_func", .n_outputs = 1, .trace = head__trace,
    .flags = AG_FN_JIT_COMPILE};

static void serve__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = call1(&head__desc, call1(&layer__desc, ag_div(a[0].tensor, 4.0f)));
}
static const ag_function_desc serve__desc = {
    .name = "serve", .file = "model.c", .line = 30, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,16]", .alias = "serve_func", .n_outputs = 1,
    .trace = serve__trace};

static void outer__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_neg(call1(&layer__desc, a[0].tensor));
}
static const ag_function_desc outer__desc = {
    .name = "outer", .file = "model.c", .line = 40, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .alias = "outer_func", .n_outputs = 1, .trace = outer__trace};

static void wrapper__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = call1(&outer__desc, a[0].tensor);
}
static const ag_function_desc wrapper__desc = {
    .name = "wrapper", .file = "model.c", .line = 50, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,16]", .n_outputs = 1, .trace = wrapper__trace,
    .flags = AG_FN_JIT_COMPILE};

static const int print_line = __LINE__ + 3; /* where noisy prints */
static void noisy__trace(const ag_arg *a, ag_tensor *o)
{
    ag_print(ag_reduce_sum(a[0].tensor, 1, false)); /* PRINT_LINE */
    o[0] = ag_exp(a[0].tensor);
}
static const ag_function_desc noisy__desc = {
    .name = "noisy", .file = "model.c", .line = 60, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,16]", .alias = "noisy_func", .n_outputs = 1,
    .trace = noisy__trace};

static char base[128], in_dir[256], out_dir[256];

static int setup_group(void **state)
{
    (void)state;
    const ag_function_desc *all[] = {&layer__desc, &head__desc, &serve__desc,
                                     &outer__desc, &wrapper__desc, &noisy__desc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ag_function_register(all[i]);
    float wv[16 * 8], bv[8];
    for (int i = 0; i < 16 * 8; i++)
        wv[i] = (float)((i * 37) % 19 - 9) / 16.0f;
    for (int i = 0; i < 8; i++)
        bv[i] = (float)(i - 4) / 8.0f;
    w = ag_variable_new(ag_from_data(AG_F32, AG_SHAPE(16, 8), wv));
    b = ag_variable_new(ag_from_data(AG_F32, AG_SHAPE(8), bv));
    snprintf(base, sizeof base, "/tmp/ag-converter-XXXXXX");
    if (!mkdtemp(base))
        return -1;
    snprintf(in_dir, sizeof in_dir, "%s/in", base);
    snprintf(out_dir, sizeof out_dir, "%s/out", base);
    ag_export_signature sigs[] = {
        {.name = "serving_default", .function = "serve"},
        {.name = "wrapped", .function = "wrapper"},
        {.name = "noisy", .function = "noisy"},
    };
    ag_save_options o = {.signatures = sigs, .n_signatures = 3};
    return ag_saved_model_save(in_dir, &o) ? 0 : -1;
}

static int teardown_group(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

/* Converts the model with these options; the report in *r when asked. On
 * failure, the error text in *error (static). */
static bool convert(const char *options, cv_report *r, const char **error)
{
    cv_options *o = calloc(1, sizeof *o);
    char err[1024];
    static char last[1024];
    bool ok = cv_options_parse(options, "opts", o, err, sizeof err);
    if (!ok)
        snprintf(last, sizeof last, "%s", err);
    ag_saved_model *m = ok ? ag_saved_model_load(in_dir) : NULL;
    ag_clear_error();
    ok = m && cv_convert(m, o, "opts", out_dir, NULL, r);
    if (m && !ok)
        snprintf(last, sizeof last, "%s", ag_last_error() ? ag_last_error() : "(none)");
    ag_saved_model_free(m);
    free(o);
    if (error)
        *error = last;
    return ok;
}

static void expect_failure(const char *options, const char *needle, int line)
{
    const char *e;
    if (convert(options, NULL, &e))
        fail_msg("line %d: converted, expected \"%s\"", line, needle);
    if (!strstr(e, needle))
        fail_msg("line %d: error \"%s\" lacks \"%s\"", line, e, needle);
}
#define EXPECT_FAILURE(options, needle) expect_failure((options), (needle), __LINE__)

static const cv_tpu_cost *tpu_cost(const cv_report *r, const char *name)
{
    for (int i = 0; i < r->n_tpu; i++)
        if (strcmp(r->tpu[i].name, name) == 0)
            return &r->tpu[i];
    fail_msg("the report has no TPU function '%s'", name);
    return NULL;
}

/* ------------------------------------------------------------ selection */

static void test_one_tpu_function_by_alias(void **state)
{
    (void)state;
    static cv_report r;
    const char *e;
    if (!convert("tpu_functions { function_alias: \"tpu_func\" }", &r, &e))
        fail_msg("%s", e);
    assert_int_equal(r.n_tpu, 1);
    assert_true(tpu_cost(&r, "tpu_func")->seconds > 0);
    assert_true(r.cpu_seconds > 0); /* the scaling and the head stay on the host */
    ag_saved_model *m = ag_saved_model_load(out_dir);
    assert_non_null(m);
    sm_function *f = &m->man->functions[0];
    assert_string_equal(f->target, "tpu-model");
    assert_int_equal(f->n_device_scopes, 1);
    assert_string_equal(f->device_scopes[0].name, "layer");
    assert_true(f->freeze_variables);
    /* the report is saved with the model */
    char path[300];
    snprintf(path, sizeof path, "%s/conversion_report.txt", out_dir);
    assert_int_equal(access(path, R_OK), 0);
    ag_saved_model_free(m);
}

static void test_two_tpu_functions(void **state)
{
    (void)state;
    static cv_report r;
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" }\n"
                        "tpu_functions { function_alias: \"head_func\" }",
                        &r, NULL));
    assert_int_equal(r.n_tpu, 2);
    assert_true(tpu_cost(&r, "tpu_func")->seconds > 0);
    assert_true(tpu_cost(&r, "head_func")->seconds > 0);
}

static void test_whole_function_by_signature(void **state)
{
    (void)state;
    static cv_report r;
    assert_true(convert("tpu_functions { signature_name: \"serving_default\" }", &r, NULL));
    assert_int_equal(r.n_tpu, 1);
    assert_true(tpu_cost(&r, "serve_func")->seconds > 0);
}

static void test_selection_errors(void **state)
{
    (void)state;
    EXPECT_FAILURE("tpu_functions { function_alias: \"serve_func\" }\n"
                   "tpu_functions { signature_name: \"serving_default\" }",
                   "the function \"serve\" is selected twice: by function_alias \"serve_func\" "
                   "and by signature_name \"serving_default\"");
    /* wrapper calls layer through outer, which stays on the host */
    EXPECT_FAILURE("tpu_functions { signature_name: \"wrapped\" }\n"
                   "tpu_functions { function_alias: \"tpu_func\" }",
                   "Unable to place both \"wrapper\" and \"layer\" on the TPU because "
                   "\"wrapper\" indirectly calls \"layer\" (wrapper -> outer -> layer; \"outer\" "
                   "is not on the TPU). This behavior is unsupported because it can cause "
                   "invalid graphs to be generated.");
    EXPECT_FAILURE("tpu_functions { jit_compile_functions: true }\n"
                   "tpu_functions { function_alias: \"tpu_func\" }",
                   "(wrapper -> outer -> layer; \"outer\" is not on the TPU)");
    EXPECT_FAILURE("\n  tpu_functions { function_alias: \"nosuch\" }",
                   "opts:2:35: the model has no function alias 'nosuch' (aliases: ");
    EXPECT_FAILURE("tpu_functions { concrete_function_name: \"__inference_x_9\" }",
                   "opts:1:41: the model has no concrete function '__inference_x_9'");
    EXPECT_FAILURE("tpu_functions { function_alias: \"tpu_func\" } xla_sharding_options { "
                   "num_cores_per_replica: 2 topology: \"2x2\" device_assignment: [0, 0, 0, 0, "
                   "1, 1, 0, 0] }",
                   "opts:1:92: xla_sharding_options: the replica's 2 cores must fill a rectangle "
                   "of the mesh; they span 2 x 2 chips");
}

/* Calls signature `sig` of the input model and of the converted one on
 * the same rows: the results agree to within f32 rounding (no bf16). */
static void expect_converted_agrees(const char *sig)
{
    float xv[3 * 16];
    for (int i = 0; i < 3 * 16; i++)
        xv[i] = (float)((i * 5) % 13) - 6.0f;
    ag_named_tensor in = {"x", ag_from_data(AG_F32, AG_SHAPE(3, 16), xv)}, a[1], c[1];
    ag_saved_model *orig = ag_saved_model_load(in_dir), *conv = ag_saved_model_load(out_dir);
    assert_non_null(orig);
    assert_non_null(conv);
    assert_true(ag_model_call(orig, sig, &in, 1, a, 1));
    assert_true(ag_model_call(conv, sig, &in, 1, c, 1));
    assert_int_equal(ag_num_elements(a[0].tensor), ag_num_elements(c[0].tensor));
    for (int64_t i = 0; i < ag_num_elements(a[0].tensor); i++)
        assert_float_equal(ag_get_f64(a[0].tensor, i), ag_get_f64(c[0].tensor, i), 1e-5);
    ag_saved_model_free(orig);
    ag_saved_model_free(conv);
}

/* A TPU function that calls another directly places the callee with its
 * caller (the real converter's guide: only an indirect call is refused):
 * serve (whole) calls layer; outer, inlined in wrapper, calls layer. */
static void test_direct_calls_convert(void **state)
{
    (void)state;
    static cv_report r;
    const char *e;
    if (!convert("tpu_functions { signature_name: \"serving_default\" }\n"
                 "tpu_functions { function_alias: \"tpu_func\" }\n"
                 "bfloat16_optimization: DISABLED", &r, &e))
        fail_msg("%s", e);
    assert_true(tpu_cost(&r, "serve_func")->seconds > 0);
    expect_converted_agrees("serving_default");
    if (!convert("tpu_functions { function_alias: \"outer_func\" }\n"
                 "tpu_functions { function_alias: \"tpu_func\" }\n"
                 "bfloat16_optimization: DISABLED", &r, &e))
        fail_msg("%s", e);
    assert_true(tpu_cost(&r, "outer_func")->seconds > 0);
    ag_saved_model *m = ag_saved_model_load(out_dir);
    const sm_function *wrapper = &m->man->functions[1];
    assert_string_equal(wrapper->function, "wrapper");
    assert_string_equal(wrapper->target, "tpu-model");
    assert_int_equal(wrapper->n_device_scopes, 2);
    ag_saved_model_free(m);
    expect_converted_agrees("wrapped");
}

/* Options that convert nothing are an error that says what to add, not a
 * report of 0% on the TPU. */
static void test_options_that_convert_nothing(void **state)
{
    (void)state;
    const char *want = "opts: the converter options convert nothing (no tpu_functions, no "
                       "batch_options): add the function to place on the TPU, e.g. "
                       "'tpu_functions { function_alias: \"";
    EXPECT_FAILURE("", want);
    EXPECT_FAILURE("# nothing but settings\nbfloat16_optimization: ENABLED\n"
                   "io_shape_optimization: DISABLED", want);
    EXPECT_FAILURE("", "(the model's aliases: ");
    /* bf16 of every function converts something */
    assert_true(convert("bfloat16_optimization_options { scope: ALL }", NULL, NULL));
}

static char *report_text(const cv_report *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cv_report_print(r, f);
    fclose(f);
    return text;
}

static void expect_in(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("\"%s\" is not in the report:\n%s", needle, text);
}

/* The report names the ops converted to bf16, counts in good English,
 * and says so when the optimizations made a call slower. */
static void test_report_explains_itself(void **state)
{
    (void)state;
    static cv_report r;
    r = (cv_report){.batch = 1, .bf16 = true, .io_shapes = true, .bf16_ops = 1,
                    .call_before = 10e-6, .call_after = 12.5e-6, .link_before = 8192,
                    .link_after = 8192, .n_tpu = 1, .cpu_seconds = 1e-6};
    r.bf16_by_op[RT_OP_MATMUL] = 1;
    snprintf(r.tpu[0].name, sizeof r.tpu[0].name, "tpu_func");
    r.tpu[0].seconds = 9e-6;
    char *text = report_text(&r);
    expect_in(text, "bfloat16:   1 op computes in bf16: matmul (1)\n");
    expect_in(text, "warning: the optimizations made a call slower: 12.50 us after, 10.00 us "
                    "before");
    free(text);
    r.bf16_ops = 3;
    r.bf16_by_op[RT_OP_ADD] = 2;
    r.call_after = 5e-6;
    r.n_tpu = 0;
    text = report_text(&r);
    expect_in(text, "bfloat16:   3 ops compute in bf16: ");
    expect_in(text, "matmul (1)");
    expect_in(text, "add (2)");
    assert_null(strstr(text, "slower"));
    expect_in(text, "No function is on the TPU: to place one, add tpu_functions");
    free(text);
    /* a real conversion: the ops it counted are the ones it names */
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" }", &r, NULL));
    int named = 0;
    for (int op = 0; op < RT_OP_COUNT; op++)
        named += r.bf16_by_op[op];
    assert_true(r.bf16_ops > 0);
    assert_int_equal(named, r.bf16_ops);
    text = report_text(&r);
    expect_in(text, "matmul (");
    free(text);
}

/* jit_compile_functions: every function marked AG_JIT_COMPILE: a saved
 * one whole (wrapper), one that only others call inside its callers, by
 * its scope (head, inlined into serve). */
static void test_jit_compile_functions(void **state)
{
    (void)state;
    static cv_report r;
    assert_true(convert("tpu_functions { jit_compile_functions: true }", &r, NULL));
    ag_saved_model *m = ag_saved_model_load(out_dir);
    const sm_function *serve = &m->man->functions[0], *wrapper = &m->man->functions[1];
    assert_string_equal(serve->function, "serve");
    assert_true(wrapper->jit_compile);
    assert_string_equal(wrapper->target, "tpu-model");
    assert_int_equal(wrapper->n_device_scopes, 0); /* whole */
    assert_string_equal(serve->target, "tpu-model");
    assert_int_equal(serve->n_device_scopes, 1);
    assert_string_equal(serve->device_scopes[0].name, "head");
    bool head_marked = false;
    for (int k = 0; k < serve->n_calls; k++)
        head_marked |= strcmp(serve->calls[k].name, "head") == 0 && serve->calls[k].jit_compile;
    assert_true(head_marked); /* the manifest says so */
    ag_saved_model_free(m);
    assert_int_equal(r.n_tpu, 2);
}

/* bfloat16_optimization_options: scope ALL converts the host's functions
 * too; the filterlist keeps ops in f32. */
static void test_bf16_options(void **state)
{
    (void)state;
    static cv_report tpu, all, kept;
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" }", &tpu, NULL));
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" } "
                        "bfloat16_optimization_options { scope: ALL }",
                        &all, NULL));
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" } "
                        "bfloat16_optimization_options { filterlist: \"matmul\" }",
                        &kept, NULL));
    assert_true(all.bf16_ops > tpu.bf16_ops);
    assert_true(kept.bf16_ops < tpu.bf16_ops);
    ag_saved_model *m = ag_saved_model_load(out_dir);
    assert_string_equal(m->man->functions[0].bf16.filterlist, "matmul");
    ag_saved_model_free(m);
}

/* print is host work: an error at its line, unless soft placement. */
static void test_soft_device_placement(void **state)
{
    (void)state;
    char at[64];
    snprintf(at, sizeof at, "test_converter.c:%d: 'ag_print' isn't compilable for the TPU",
             print_line);
    EXPECT_FAILURE("tpu_functions { function_alias: \"noisy_func\" }", at);
    assert_true(convert("tpu_functions { function_alias: \"noisy_func\" "
                        "enable_soft_device_placement: true }",
                        NULL, NULL));
}

/* -------------------------------------------------------- report, costs */

typedef struct scope_sum {
    const char *scope;
    double seconds;
} scope_sum;

static void add_scope(void *ctx, const ir_node *n, double s)
{
    scope_sum *S = ctx;
    if (n && n->device != IR_HOST && ir_scope_within(n->scope, S->scope))
        S->seconds += s;
}

/* tpu_func's share is what the tpu-model says its nodes cost. */
static void test_report_matches_the_cost_model(void **state)
{
    (void)state;
    const char *opts = "tpu_functions { function_alias: \"tpu_func\" } "
                       "bfloat16_optimization: DISABLED io_shape_optimization: DISABLED";
    static cv_report r;
    assert_true(convert(opts, &r, NULL));
    ag_saved_model *m = ag_saved_model_load(out_dir);
    assert_non_null(m);
    pl_request req;
    pass_bf16_options bf16;
    char err[512];
    assert_true(sm_request(m, 0, PL_COMPILED, &req, &bf16, err, sizeof err));
    req.graph->body->params[0]->type.shape.dims[0] = 1;
    assert_true(pass_run_spec(req.graph, "infer"));
    pl_result res;
    assert_true(pl_run(&req, &res));
    scope_sum S = {"layer", 0};
    tgt_call_estimate whole;
    assert_true(res.target->node_costs(res.exe, add_scope, &S, &whole));
    assert_true(S.seconds > 0);
    assert_true(fabs(tpu_cost(&r, "tpu_func")->seconds - S.seconds) < 1e-12);
    assert_false(r.bf16);
    assert_int_equal(r.link_before, r.link_after);
    pl_result_free(&res);
    ag_saved_model_free(m);
}

/* The optimizations are on by default; disable_default_optimizations
 * turns them off unless one is ENABLED. */
static void test_default_optimizations(void **state)
{
    (void)state;
    static cv_report r;
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" }", &r, NULL));
    assert_true(r.bf16 && r.io_shapes);
    assert_true(r.bf16_ops > 0);
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" } "
                        "disable_default_optimizations: true bfloat16_optimization: ENABLED",
                        &r, NULL));
    assert_true(r.bf16 && !r.io_shapes);
}

/* ------------------------------------------------------------- results */

/* The converted model's serving_default against the original's on x
 * [3,16] (whole numbers in [-5, 5], times scale): the largest difference
 * of the probabilities. */
static double worst_difference(float scale)
{
    float xv[3 * 16];
    for (int i = 0; i < 3 * 16; i++)
        xv[i] = (float)((i * 7) % 11 - 5) * scale;
    ag_named_tensor in = {"x", ag_from_data(AG_F32, AG_SHAPE(3, 16), xv)}, a[1], c[1];
    ag_saved_model *orig = ag_saved_model_load(in_dir), *conv = ag_saved_model_load(out_dir);
    assert_non_null(orig);
    assert_non_null(conv);
    assert_true(ag_model_call(orig, "serving_default", &in, 1, a, 1));
    assert_true(ag_model_call(conv, "serving_default", &in, 1, c, 1));
    double worst = 0;
    for (int64_t i = 0; i < ag_num_elements(a[0].tensor); i++)
        worst = fmax(worst, fabs(ag_get_f64(a[0].tensor, i) - ag_get_f64(c[0].tensor, i)));
    ag_saved_model_free(orig);
    ag_saved_model_free(conv);
    return worst;
}

static void test_converted_model_agrees(void **state)
{
    (void)state;
    assert_true(convert("tpu_functions { function_alias: \"tpu_func\" }\n"
                        "tpu_functions { function_alias: \"head_func\" }",
                        NULL, NULL));
    /* bf16 keeps 8 bits of mantissa: probabilities agree to about 1e-2 */
    assert_true(worst_difference(1) < 2e-2);
}

/* ------------------------------------------------------------ batching */

typedef struct client {
    ag_saved_model *orig, *conv;
    int id;
    int calls, max_rows; /* calls of 1 to max_rows (at most 6) rows */
    double tolerance;    /* 0: bit for bit */
    bool ok;
} client;

/* Calls of 1 to max_rows rows; each answer must be the unbatched
 * original's, to within the tolerance. */
static void *client_main(void *arg)
{
    client *c = arg;
    ag_set_error_mode(AG_ERRORS_RETURN);
    c->ok = true;
    for (int call = 0; call < c->calls && c->ok; call++) {
        ag_scope_push();
        int rows = 1 + (c->id + call) % c->max_rows;
        float xv[6 * 16];
        for (int i = 0; i < rows * 16; i++)
            xv[i] = (float)((i + 5 * c->id + call) % 13) - 6.0f;
        ag_named_tensor in = {"x", ag_from_data(AG_F32, AG_SHAPE(rows, 16), xv)}, a[1], r[1];
        c->ok = ag_model_call(c->orig, "serving_default", &in, 1, a, 1) &&
                ag_model_call(c->conv, "serving_default", &in, 1, r, 1) &&
                ag_shape_equal(ag_shape_get(a[0].tensor), ag_shape_get(r[0].tensor));
        for (int64_t i = 0; c->ok && i < ag_num_elements(a[0].tensor); i++)
            c->ok = fabs(ag_get_f64(a[0].tensor, i) - ag_get_f64(r[0].tensor, i)) <= c->tolerance;
        if (!c->ok)
            print_message("client %d, call %d: %s\n", c->id, call,
                          ag_last_error() ? ag_last_error() : "results differ");
        ag_scope_pop();
    }
    return NULL;
}

static void test_batched_signature(void **state)
{
    (void)state;
    const char *e;
    if (!convert("batch_options { max_batch_size: 4 batch_timeout_micros: 2000 "
                 "allowed_batch_sizes: [2, 4] experimental { signature_name: \"serving_default\" } }",
                 NULL, &e))
        fail_msg("%s", e);
    ag_saved_model *orig = ag_saved_model_load(in_dir), *conv = ag_saved_model_load(out_dir);
    assert_non_null(conv);
    assert_true(conv->man->functions[0].has_batch);
    enum { N = 8 };
    pthread_t t[N];
    client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){orig, conv, i, 6, 3, 1e-5, false};
        assert_int_equal(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_true(c[i].ok);
    }
    ag_saved_model_free(orig);
    ag_saved_model_free(conv);
    /* the shape rules the signature decides are errors at conversion */
    EXPECT_FAILURE("batch_options { max_batch_size: 4 experimental { signature_name: \"nosuch\" } }",
                   "opts:1:15: batching: the model has no signature 'nosuch'");
    EXPECT_FAILURE("batch_options { max_batch_size: 4 }",
                   "batching: no TPU function to batch");
}

/* What the batched nodes read from the host and hand back needs
 * dimension 0 of the batch: a weight the host computes does not have it. */
static void test_in_graph_shape_rules(void **state)
{
    (void)state;
    char err[512];
    ir_function *ok = ir_parse("func @m(%0: f32[?,4]) -> (f32[?,4]) {\n"
                               "  %1 = neg(%0) : f32[?,4] loc(\"m.c\":5)\n"
                               "  return %1\n}\n", "t.ir", err, sizeof err);
    assert_non_null(ok);
    assert_true(sm_check_batched(ok, "batching", err, sizeof err));
    ir_function_free(ok);
    ir_function *weight = ir_parse("func @m(%0: f32[?,4], %1: f32[4,4]) -> (f32[?,4]) {\n"
                                   "  %2 = matmul(%0, %1) : f32[?,4] loc(\"m.c\":5)\n"
                                   "  return %2\n}\n", "t.ir", err, sizeof err);
    assert_non_null(weight);
    weight->body->params[1]->loc = (ag_loc){"m.c", 12};
    assert_false(sm_check_batched(weight, "batching the device nodes of 'serve' (layer)", err,
                                  sizeof err));
    assert_non_null(strstr(err, "m.c:12: batching the device nodes of 'serve' (layer): they "
                                "read f32[4,4], which has a fixed dimension 0"));
    ir_function_free(weight);
    ir_function *scalar = ir_parse("func @m(%0: f32[?,4]) -> (f32[]) {\n"
                                   "  %1 = reduce_sum(%0) {keepdims = false, axis = all} : f32[] loc(\"m.c\":7)\n"
                                   "  return %1\n}\n", "t.ir", err, sizeof err);
    assert_non_null(scalar);
    assert_false(sm_check_batched(scalar, "batching", err, sizeof err));
    assert_non_null(strstr(err, "m.c:7: batching: they hand back f32[], which has no dimension 0"));
    ir_function_free(scalar);
}

static int function_named(const ag_saved_model *m, const char *function)
{
    for (int i = 0; i < m->man->n_functions; i++)
        if (strcmp(m->man->functions[i].function, function) == 0)
            return i;
    fail_msg("the model has no function traced from '%s'", function);
    return -1;
}

/* By default every TPU function is batched; one that serve inlined is
 * batched inside serve's graph, in front of its nodes: serve's scaling
 * (before) and head (after) run on each caller's thread on the cpu
 * target, the layer on batches on the tpu-model. Results are those of the
 * same conversion without batching, bit for bit, for requests of 1 to 6
 * rows (more than max_batch_size 4: split across batches). */
/* 8 threads call serving_default of `conv` and of `unbatched` with 1 to 6
 * rows each; every answer must be bit for bit the same. (48 rows in
 * flight are 12 batches of 4: the batchers' queues must hold them, or
 * requests fail fast, as they should.) */
static void expect_same_under_load(ag_saved_model *unbatched, ag_saved_model *conv)
{
    enum { N = 8 };
    pthread_t t[N];
    client c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){unbatched, conv, i, 20, 6, 0, false};
        assert_int_equal(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_true(c[i].ok);
    }
}

/* The model converted with `placed`, then with `placed` and `batching`
 * (its report in *r when r is not NULL); the second's serve runs bit for
 * bit like the first. */
static void convert_pair(const char *placed, const char *batching, ag_saved_model **unbatched,
                         ag_saved_model **conv, cv_report *r)
{
    const char *e;
    char opts[512];
    if (!convert(placed, NULL, &e))
        fail_msg("%s", e);
    *unbatched = ag_saved_model_load(out_dir);
    snprintf(opts, sizeof opts, "%s %s", placed, batching);
    if (!convert(opts, r, &e))
        fail_msg("%s", e);
    *conv = ag_saved_model_load(out_dir);
    assert_non_null(*unbatched);
    assert_non_null(*conv);
}

static void test_batched_in_graph(void **state)
{
    (void)state;
    ag_saved_model *unbatched, *conv;
    cv_report *report = calloc(1, sizeof *report);
    convert_pair("tpu_functions { function_alias: \"tpu_func\" } bfloat16_optimization: DISABLED",
                 "batch_options { max_batch_size: 4 batch_timeout_micros: 2000 "
                 "allowed_batch_sizes: [2, 4] max_enqueued_batches: 64 }",
                 &unbatched, &conv, report);
    int fi = function_named(conv, "serve");
    assert_true(conv->man->functions[fi].has_batch);
    assert_true(conv->man->functions[fi].batch.in_graph);
    /* wrapper inlined layer through outer: no node of the scope at the top
     * of its body, so no cut; it is batched at its inputs */
    int wi = function_named(conv, "wrapper");
    assert_true(conv->man->functions[wi].has_batch);
    assert_false(conv->man->functions[wi].batch.in_graph);
    /* and the report says so, and why */
    assert_int_equal(report->n_batched_in_graph, 1);
    assert_int_equal(report->n_batch_notes, 1);
    char expect[256];
    snprintf(expect, sizeof expect, "'%s' is batched at its inputs: ",
             conv->man->functions[wi].name);
    if (!strstr(report->batch_note[0], expect) ||
        !strstr(report->batch_note[0], "no node of the function's own body"))
        fail_msg("the report's note: %s", report->batch_note[0]);
    free(report);
    expect_same_under_load(unbatched, conv);
    const sm_loaded_function *lf = &conv->fns[fi];
    assert_string_equal(lf->compiled.target->name, "tpu-model");
    assert_string_equal(lf->pre.target->name, "cpu");
    assert_string_equal(lf->post.target->name, "cpu");
    ag_batch_stats st = ag_batcher_stats(lf->batcher);
    assert_int_equal(st.requests, 8 * 20);
    assert_true(st.batches < st.requests); /* calls joined */
    ag_saved_model_free(unbatched);
    ag_saved_model_free(conv);
}

/* experimental's function_alias names a function serve inlined (head, on
 * the host): serve is cut in front of head's nodes; the scaling and the
 * TPU layer before it run on each caller's thread where the converter
 * placed them (the tpu-model), head on batches on the cpu. */
static void test_batched_alias_in_graph(void **state)
{
    (void)state;
    ag_saved_model *unbatched, *conv;
    convert_pair("tpu_functions { function_alias: \"tpu_func\" } bfloat16_optimization: DISABLED",
                 "batch_options { max_batch_size: 4 batch_timeout_micros: 1000 "
                 "max_enqueued_batches: 64 experimental { function_alias: \"head_func\" } }",
                 &unbatched, &conv, NULL);
    int fi = function_named(conv, "serve");
    const sm_batch *sb = &conv->man->functions[fi].batch;
    assert_true(conv->man->functions[fi].has_batch);
    assert_true(sb->in_graph);
    assert_string_equal(sb->scope, "head");
    expect_same_under_load(unbatched, conv);
    const sm_loaded_function *lf = &conv->fns[fi];
    assert_string_equal(lf->compiled.target->name, "cpu");
    assert_string_equal(lf->pre.target->name, "tpu-model");
    assert_true(ag_batcher_stats(lf->batcher).batches > 0);
    ag_saved_model_free(unbatched);
    ag_saved_model_free(conv);
}

/* ------------------------------------------------ rows that would mix */

/* pool subtracts the mean of the batch's rows: each row's result depends
 * on every row (alias pool_func); mixer calls it (signature "mixed"). */
static const int pool_line = __LINE__ + 3;
static void pool__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_sub(a[0].tensor, ag_reduce_mean(a[0].tensor, 0, true));
}
static const ag_function_desc pool__desc = {
    .name = "pool", .file = "model.c", .line = 70, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .alias = "pool_func", .n_outputs = 1, .trace = pool__trace};

static void mixer__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_exp(call1(&pool__desc, ag_mul(a[0].tensor, 2.0f)));
}
static const ag_function_desc mixer__desc = {
    .name = "mixer", .file = "model.c", .line = 80, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,16]", .n_outputs = 1, .trace = mixer__trace};

/* Converts the model at dir with options; false with the error in *error. */
static bool convert_dir(const char *dir, const char *options, const char **error)
{
    static char last[1024];
    cv_options *o = calloc(1, sizeof *o);
    char err[1024];
    assert_true(cv_options_parse(options, "opts", o, err, sizeof err));
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    ag_clear_error();
    bool ok = cv_convert(m, o, "opts", out_dir, NULL, NULL);
    snprintf(last, sizeof last, "%s", ag_last_error() ? ag_last_error() : "(none)");
    ag_saved_model_free(m);
    free(o);
    *error = last;
    return ok;
}

/* A function whose rows mix is refused for batching, at conversion,
 * naming the op and its line: batched at its inputs (the whole function)
 * and in front of its TPU nodes (the cut's middle, pool's nodes). */
static void test_batching_refuses_mixed_rows(void **state)
{
    (void)state;
    ag_function_register(&pool__desc);
    ag_function_register(&mixer__desc);
    char dir[300], needle[256];
    snprintf(dir, sizeof dir, "%s/mixed", base);
    ag_export_signature sigs[] = {{.name = "mixed", .function = "mixer"}};
    ag_save_options so = {.signatures = sigs, .n_signatures = 1};
    assert_true(ag_saved_model_save(dir, &so));
    snprintf(needle, sizeof needle, "test_converter.c:%d: 'ag_reduce_mean' reduces along "
                                    "dimension 0, across the rows of the batch", pool_line);
    static const char *const options[] = {
        "batch_options { max_batch_size: 4 experimental { signature_name: \"mixed\" } }",
        "tpu_functions { function_alias: \"pool_func\" } batch_options { max_batch_size: 4 }",
    };
    for (int i = 0; i < 2; i++) {
        const char *e;
        if (convert_dir(dir, options[i], &e))
            fail_msg("options %d converted; expected the refusal", i);
        if (!strstr(e, "batching: 'mixer' cannot be batched: ") || !strstr(e, needle))
            fail_msg("options %d: \"%s\" lacks \"%s\"", i, e, needle);
    }
    /* without batching, it converts */
    const char *e;
    if (!convert_dir(dir, "tpu_functions { function_alias: \"pool_func\" }", &e))
        fail_msg("%s", e);
}

/* --------------------------------------------------------- quantization */

/* The quantized function's record in the converted model: its products. */
static int quantized_records(const char **how)
{
    ag_saved_model *conv = ag_saved_model_load(out_dir);
    assert_non_null(conv);
    int fi = sm_function_index(conv, conv->man->signatures[0].function);
    static char first[256];
    int n = conv->man->functions[fi].n_quantized;
    snprintf(first, sizeof first, "%s", n ? conv->man->functions[fi].quantized[0].how : "");
    *how = first;
    ag_saved_model_free(conv);
    return n;
}

/* xla_sharding_options over a 2x2 slice: the TPU function's record runs
 * it on the replica's four chips, the report says so, and the converted
 * model agrees with the original (the products split by rows or columns
 * give one chip's bits). */
static void test_sharded_over_a_slice(void **state)
{
    (void)state;
    cv_report *r = calloc(1, sizeof *r);
    const char *e;
    if (!convert("tpu_functions { function_alias: \"tpu_func\" } bfloat16_optimization: "
                 "DISABLED xla_sharding_options { num_cores_per_replica: 4 topology: \"2x2\" }",
                 r, &e))
        fail_msg("%s", e);
    assert_string_equal(r->slice, "chips: 4 mesh { x: 2 y: 2 }");
    /* the report's part: the layer's function on 4 chips, its product named */
    assert_true(r->n_sharded >= 1);
    assert_int_equal(r->sharded[0].chips, 4);
    assert_true(r->sharded[0].link_seconds >= 0 &&
                r->sharded[0].link_seconds <= r->sharded[0].seconds);
    assert_non_null(strstr(r->sharded[0].splits, "matmul at test_converter.c:"));
    ag_saved_model *conv = ag_saved_model_load(out_dir);
    assert_non_null(conv);
    int sharded = 0;
    for (int i = 0; i < conv->man->n_functions; i++)
        sharded += strcmp(conv->man->functions[i].device_spec, r->slice) == 0;
    assert_true(sharded > 0);
    ag_saved_model_free(conv);
    assert_true(worst_difference(1) < 1e-5);
    free(r);
}

/* Quantization's errors: a signature the model lacks, a data set that is
 * not there, a bad sample (the file and record named). */
static void test_quantization_errors(void **state)
{
    (void)state;
    EXPECT_FAILURE("external_feature_configs { quantization_options { quantization_method: "
                   "DYNAMIC_RANGE signature_keys: \"serving_defualt\" } }",
                   "opts:1:102: quantization: the model has no signature 'serving_defualt'; it "
                   "has 'serving_default', 'wrapped', 'noisy'; did you mean 'serving_default'?");
    EXPECT_FAILURE("external_feature_configs { quantization_options { representative_datasets { "
                   "key: \"serving_default\" value { tfrecord_file_path: \"/nonexistent/c.tfr\" "
                   "} } } }",
                   "cannot read the representative data set '/nonexistent/c.tfr' of signature "
                   "\"serving_default\": No such file or directory");
    char path[600], options[1024];
    snprintf(path, sizeof path, "%s/bad.tfrecord", base);
    ag_dataset_writer *dw = ag_dataset_writer_open(path);
    ag_scope_push();
    ag_named_tensor bad = {"x", ag_fill(AG_F32, AG_SHAPE(2, 15), 1.0)};
    assert_true(ag_dataset_writer_add(dw, &bad, 1));
    ag_scope_pop();
    assert_true(ag_dataset_writer_close(dw));
    snprintf(options, sizeof options,
             "external_feature_configs { quantization_options { representative_datasets { "
             "key: \"serving_default\" value { tfrecord_file_path: \"%s\" } } } }",
             path);
    EXPECT_FAILURE(options, "bad.tfrecord: record 0");
}

/* Each method converts `serve` (its layer: matmul by w [16,8], bias,
 * relu), the converted model runs close to float, its record says what
 * was made of the product, and the report has its part. */
static void test_quantization_converts(void **state)
{
    (void)state;
    char path[600], options[1024];
    snprintf(path, sizeof path, "%s/calib.tfrecord", base);
    ag_dataset_writer *dw = ag_dataset_writer_open(path);
    for (int k = 0; k < 5; k++) {
        ag_scope_push();
        ag_named_tensor in = {"x", ag_fill(AG_F32, AG_SHAPE(2, 16), k / 2.0 - 1)};
        assert_true(ag_dataset_writer_add(dw, &in, 1));
        ag_scope_pop();
    }
    assert_true(ag_dataset_writer_close(dw));
    cv_report *r = calloc(1, sizeof *r);
    const char *how;
    /* dynamic range keeps a weight of 128 elements float by default */
    assert_true(convert("external_feature_configs { quantization_options { quantization_method: "
                        "DYNAMIC_RANGE } }", r, NULL));
    assert_true(r->quant.on && r->quant.quantized == 0 && r->quant.kept_float == 1);
    assert_int_equal(quantized_records(&how), 1);
    assert_non_null(strstr(how, "stays float: too small (128 weight elements"));
    static const char *const methods[] = {"STATIC_RANGE", "DYNAMIC_RANGE", "WEIGHT_ONLY"};
    static const char *const made[] = {"static range int8: weights per channel",
                                       "dynamic range int8: weights per channel",
                                       "weights only int8: weights per channel"};
    for (int i = 0; i < 3; i++) {
        snprintf(options, sizeof options,
                 "tpu_functions { function_alias: \"tpu_func\" } "
                 "external_feature_configs { quantization_options { quantization_method: %s "
                 "min_num_elements_for_weights: -1 enable_per_channel_quantization: true "
                 "representative_datasets { key: \"serving_default\" value { "
                 "tfrecord_file_path: \"%s\" } } } }",
                 methods[i], path);
        memset(r, 0, sizeof *r);
        const char *e;
        if (!convert(options, r, &e))
            fail_msg("%s: %s", methods[i], e);
        assert_int_equal(r->quant.quantized, 1);
        assert_int_equal(r->quant.n_measured, 1);
        assert_int_equal(r->quant.outputs.samples, 5);
        assert_true(r->quant.ops[0].measured && r->quant.ops[0].error.max_abs > 0);
        /* w [16,8] becomes int8 (128 bytes more: `wrapped` still reads w in
         * f32, so w stays), its 8 scales and int32 bias in the graph's text */
        assert_int_equal(r->quant.bytes_after, r->quant.bytes_before + 128);
        assert_true(r->quant.call_float > 0 && r->quant.call_int8 > 0);
        assert_int_equal(quantized_records(&how), 1);
        if (!strstr(how, made[i]))
            fail_msg("%s: the record says \"%s\"", methods[i], how);
        double worst = worst_difference(0.2f);
        if (!(worst > 0 && worst < 0.05))
            fail_msg("%s: probabilities differ from float by %g", methods[i], worst);
    }
    free(r);
}

/* A batched function quantized by dynamic range still computes each row
 * alone: its scales are per row (TensorFlow's per tensor would mix the
 * batch's requests, and the batching check would refuse it). */
static void test_dynamic_range_batches(void **state)
{
    (void)state;
    const char *e;
    if (!convert("batch_options { max_batch_size: 4 experimental { signature_name: "
                 "\"serving_default\" } } external_feature_configs { quantization_options { "
                 "quantization_method: DYNAMIC_RANGE min_num_elements_for_weights: -1 } }",
                 NULL, &e))
        fail_msg("%s", e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_one_tpu_function_by_alias),
        TU_TEST(test_two_tpu_functions),
        TU_TEST(test_whole_function_by_signature),
        TU_TEST(test_selection_errors),
        TU_TEST(test_direct_calls_convert),
        TU_TEST(test_options_that_convert_nothing),
        TU_TEST(test_report_explains_itself),
        TU_TEST(test_soft_device_placement),
        TU_TEST(test_jit_compile_functions),
        TU_TEST(test_bf16_options),
        TU_TEST(test_report_matches_the_cost_model),
        TU_TEST(test_default_optimizations),
        TU_TEST(test_converted_model_agrees),
        TU_TEST(test_batched_signature),
        TU_TEST(test_batched_in_graph),
        TU_TEST(test_batched_alias_in_graph),
        TU_TEST(test_batching_refuses_mixed_rows),
        TU_TEST(test_in_graph_shape_rules),
        TU_TEST(test_sharded_over_a_slice),
        TU_TEST(test_quantization_errors),
        TU_TEST(test_quantization_converts),
        TU_TEST(test_dynamic_range_batches),
    };
    int failed = cmocka_run_group_tests(tests, setup_group, teardown_group);
    ag_shutdown();
    return failed;
}
