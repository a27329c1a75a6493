/*
 * test_saved_model.c - saved models: save, load, call by signature with
 * named inputs; what the manifest records (calls, aliases, jit_compile,
 * variables); and every kind of damaged model as a clear error naming
 * the file, never a crash.
 *
 * The functions are written in the form agc generates (descriptors and
 * trace trampolines): `net` calls `dense`, which agc would inline.
 */
#include "staged_util.h"

#include "files.h"
#include "model.h"

#include <sys/stat.h>
#include <unistd.h>

static ag_variable w, b;

/* dense(x) = relu(x @ w + b) */
static void dense__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_relu(ag_add(ag_matmul(a[0].tensor, ag_variable_read(w)), ag_variable_read(b)));
}
static const ag_function_desc dense__desc = {
    .name = "dense", .file = __FILE__, .line = __LINE__, .n_params = 1,
    .param_names = N_X, .param_kinds = K_T, .signature = "f32[?,3]", .alias = "tpu_func",
    .n_outputs = 1, .trace = dense__trace, .flags = AG_FN_JIT_COMPILE};

/* net(x) = (sum of dense(x) per row, dense(x)) */
static void net__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor h[1];
    ag_arg in = {.kind = AG_ARG_TENSOR, .tensor = a[0].tensor};
    ag_function_call_at(AG_HERE, &dense__desc, &in, h);
    o[0] = ag_reduce_sum(h[0], 1, false);
    o[1] = h[0];
}
static const ag_function_desc net__desc = {
    .name = "net", .file = __FILE__, .line = __LINE__, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[?,3]", .n_outputs = 2, .trace = net__trace};

/* shifted(x) = x + a table of 32 constants (the tracer makes a constant
 * node): saved in variables.bin, not in the text */
static void shifted__trace(const ag_arg *a, ag_tensor *o)
{
    float t[32];
    for (int i = 0; i < 32; i++)
        t[i] = 0.125f * (float)i - 1.0f;
    o[0] = ag_add(a[0].tensor, ag_from_data(AG_F32, AG_SHAPE(32), t));
}
static const ag_function_desc shifted__desc = {
    .name = "shifted", .file = __FILE__, .line = __LINE__, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[2,32]", .n_outputs = 1, .trace = shifted__trace};

static char dir[256];

static int setup_group(void **state)
{
    (void)state;
    ag_function_register(&dense__desc);
    ag_function_register(&net__desc);
    ag_function_register(&shifted__desc);
    w = ag_variable_new(F32(AG_SHAPE(3, 2), 1, -1, 2, 0.5f, -3, 1));
    b = ag_variable_new(F32(AG_SHAPE(2), 0.25f, -0.5f));
    char tmpl[] = "/tmp/ag-saved-model-XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    snprintf(dir, sizeof dir, "%s/model", tmpl);
    return 0;
}

static int teardown_group(void **state)
{
    (void)state;
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    tu_remove_dir(dir);
    return 0;
}

static const char *const net_outputs[] = {"total", "hidden"};

static bool save_net(void)
{
    ag_export_signature sig = {.name = "serving_default", .function = "net",
                               .output_names = net_outputs};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    return ag_saved_model_save(dir, &o);
}

static ag_tensor input(void) { return F32(AG_SHAPE(2, 3), 1, 2, 3, -1, 0.5f, 2); }

static void check_same(ag_tensor a, ag_tensor b_)
{
    assert_false(ag_is_error(a));
    assert_false(ag_is_error(b_));
    assert_true(ag_shape_equal(ag_shape_get(a), ag_shape_get(b_)));
    for (int64_t i = 0; i < ag_num_elements(a); i++)
        assert_true(ag_get_f64(a, i) == ag_get_f64(b_, i));
}

/* --------------------------------------------------------------- round trip */

static void test_round_trip_runs_like_the_function(void **state)
{
    (void)state;
    assert_true(save_net());
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    const ag_signature_def *s = ag_model_signature(m, "serving_default");
    assert_non_null(s);
    assert_int_equal(s->n_inputs, 1);
    assert_string_equal(s->inputs[0].name, "x");
    assert_int_equal(s->inputs[0].shape.dims[0], -1);
    assert_int_equal(s->n_outputs, 2);
    assert_string_equal(s->outputs[0].name, "total");

    ag_named_tensor in = {"x", input()}, out[2];
    assert_true(ag_model_call(m, "serving_default", &in, 1, out, 2));
    assert_string_equal(out[1].name, "hidden");
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = input()};
    ag_tensor want[2];
    assert_true(ag_function_call_at(AG_HERE, &net__desc, &a, want));
    check_same(out[0].tensor, want[0]);
    check_same(out[1].tensor, want[1]);
    ag_saved_model_free(m);
}

/* The model keeps the variables' values of the moment it was saved. */
static void test_variables_are_saved_values(void **state)
{
    (void)state;
    assert_true(save_net());
    ag_tensor before[2];
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = input()};
    assert_true(ag_function_call_at(AG_HERE, &net__desc, &a, before));
    ag_assign(b, F32(AG_SHAPE(2), 100, 100));
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    ag_named_tensor in = {"x", input()}, out[2];
    assert_true(ag_model_call(m, "serving_default", &in, 1, out, 2));
    check_same(out[1].tensor, before[1]);
    ag_assign(b, F32(AG_SHAPE(2), 0.25f, -0.5f));
    ag_saved_model_free(m);
}

/* The manifest says what net calls, dense's alias and jit mark. */
static void test_manifest_records_calls_and_aliases(void **state)
{
    (void)state;
    assert_true(save_net());
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    sm_manifest *man = m->man;
    assert_int_equal(man->n_functions, 1);
    sm_function *f = &man->functions[0];
    assert_string_equal(f->name, "__inference_net_1");
    assert_string_equal(f->function, "net");
    assert_int_equal(f->n_calls, 1);
    assert_string_equal(f->calls[0].name, "dense");
    assert_int_equal(man->n_aliases, 1);
    assert_string_equal(man->aliases[0].name, "tpu_func");
    assert_string_equal(man->aliases[0].function, "dense");
    assert_int_equal(man->n_variables, 2);
    assert_int_equal(f->n_variables, 2);
    /* the inlined call's nodes carry its scope in the text IR */
    assert_non_null(strstr(m->fns[0].text, "scope(\"dense\")"));
    ag_saved_model_free(m);
}

/* Large constants go to variables.bin (read-only), small ones stay in
 * the text; the model computes what the function does. */
static void test_constants_are_saved_in_binary(void **state)
{
    (void)state;
    ag_export_signature sig = {.name = "shift", .function = "shifted"};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    assert_true(ag_saved_model_save(dir, &o));
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    assert_int_equal(m->man->n_variables, 1);
    assert_true(m->man->variables[0].constant);
    assert_int_equal(m->man->variables[0].bytes, 32 * 4);
    assert_non_null(strstr(m->fns[0].text, "var_read"));
    assert_null(strstr(m->fns[0].text, "2.875")); /* the table's last value */
    float xv[64];
    for (int i = 0; i < 64; i++)
        xv[i] = (float)i;
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2, 32), xv);
    ag_named_tensor in = {"x", x}, out[1];
    assert_true(ag_model_call(m, "shift", &in, 1, out, 1));
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = x};
    ag_tensor want[1];
    assert_true(ag_function_call_at(AG_HERE, &shifted__desc, &a, want));
    check_same(out[0].tensor, want[0]);
    ag_saved_model_free(m);
}

/* ------------------------------------------------------------ damage */

static void write_text(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
}

static char *read_text(const char *path, size_t *n)
{
    char err[256];
    char *s = sf_read_regular(path, NULL, 1 << 30, n, err, sizeof err);
    assert_non_null(s);
    return s;
}

static void expect_load_error(const char *needle, int line)
{
    ag_clear_error();
    ag_saved_model *m = ag_saved_model_load(dir);
    const char *e = ag_last_error();
    if (m || !e || !strstr(e, needle))
        fail_msg("line %d: expected a load error with \"%s\", got %s", line, needle,
                 m ? "a model" : e ? e : "no error");
}
#define EXPECT_LOAD_ERROR(needle) expect_load_error((needle), __LINE__)

static char *model_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void test_damaged_function_is_named(void **state)
{
    (void)state;
    assert_true(save_net());
    size_t n;
    char *text = read_text(model_path("functions/__inference_net_1.ir"), &n);
    char *p = strstr(text, "relu");
    assert_non_null(p);
    p[0] = 'R'; /* same size, other bytes */
    write_text(model_path("functions/__inference_net_1.ir"), text, n);
    EXPECT_LOAD_ERROR("__inference_net_1.ir: checksum mismatch");
    write_text(model_path("functions/__inference_net_1.ir"), text, n / 2);
    EXPECT_LOAD_ERROR("__inference_net_1.ir: ");
    EXPECT_LOAD_ERROR("truncated");
    free(text);
}

static void test_truncated_variables(void **state)
{
    (void)state;
    assert_true(save_net());
    size_t n;
    char *data = read_text(model_path("variables.bin"), &n);
    write_text(model_path("variables.bin"), data, n - 4);
    EXPECT_LOAD_ERROR("variables.bin: its size is not the manifest's");
    data[n - 1] ^= 1;
    write_text(model_path("variables.bin"), data, n);
    EXPECT_LOAD_ERROR("variables.bin: checksum mismatch");
    free(data);
}

static void test_manifest_version_and_truncation(void **state)
{
    (void)state;
    assert_true(save_net());
    size_t n;
    char *text = read_text(model_path("saved_model.pbtxt"), &n);
    char *v = strstr(text, "format_version: 1");
    assert_non_null(v);
    v[16] = '7';
    write_text(model_path("saved_model.pbtxt"), text, n);
    EXPECT_LOAD_ERROR("saved_model.pbtxt: format version 7 is not the one this agc reads");
    v[16] = '1';
    char *end = strstr(text, "complete: true");
    assert_non_null(end);
    write_text(model_path("saved_model.pbtxt"), text, (size_t)(end - text));
    EXPECT_LOAD_ERROR("saved_model.pbtxt: the file is truncated");
    write_text(model_path("saved_model.pbtxt"), text, (size_t)(end - text) / 2);
    EXPECT_LOAD_ERROR("saved_model.pbtxt:");
    free(text);
    tu_remove_dir(dir);
    EXPECT_LOAD_ERROR("saved_model.pbtxt: cannot open");
}

/* ------------------------------------------------------------ calls */

static void test_call_errors(void **state)
{
    (void)state;
    assert_true(save_net());
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    ag_named_tensor out[2];
    ag_clear_error();
    assert_null(ag_model_signature(m, "predict"));
    assert_non_null(strstr(ag_last_error(), "has no signature 'predict'; it has "
                                            "'serving_default'"));
    ag_named_tensor bad_name = {"y", input()};
    EXPECT_ERROR((ag_model_call(m, "serving_default", &bad_name, 1, out, 2), out[0].tensor),
                 "has no input 'y'");
    EXPECT_ERROR((ag_model_call(m, "serving_default", NULL, 0, out, 2), out[0].tensor),
                 "needs the input 'x'");
    ag_named_tensor bad_shape = {"x", F32(AG_SHAPE(2, 2), 1, 2, 3, 4)};
    EXPECT_ERROR((ag_model_call(m, "serving_default", &bad_shape, 1, out, 2), out[0].tensor),
                 "input 'x' expects f32[?,3], got f32[2,2]");
    ag_named_tensor in = {"x", input()};
    EXPECT_ERROR((ag_model_call(m, "serving_default", &in, 1, out, 1), out[0].tensor),
                 "has 2 outputs; the call asks for 1");
    ag_saved_model_free(m);
}

/* Names outside printable ASCII: the manifest writes those bytes as
 * protobuf's octal escapes, which its reader did not read ("unknown
 * escape '\3'"): such a model saved but did not load (fuzz_manifest). */
static void test_names_outside_ascii(void **state)
{
    (void)state;
    static const char *const names[] = {"summe \xc3\xa4", "tab\there"};
    ag_export_signature sig = {.name = "serving_default", .function = "net",
                               .output_names = names};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    assert_true(ag_saved_model_save(dir, &o));
    ag_clear_error();
    ag_saved_model *m = ag_saved_model_load(dir);
    assert_non_null(m);
    const ag_signature_def *s = ag_model_signature(m, "serving_default");
    assert_non_null(s);
    assert_string_equal(s->outputs[0].name, names[0]);
    assert_string_equal(s->outputs[1].name, names[1]);
    ag_saved_model_free(m);
}

/* ------------------------------------------------------------ saving */

static void test_save_refuses_what_is_not_a_model(void **state)
{
    (void)state;
    tu_remove_dir(dir);
    assert_int_equal(mkdir(dir, 0777), 0);
    write_text(model_path("notes.txt"), "mine", 4);
    ag_clear_error();
    assert_false(save_net());
    assert_non_null(strstr(ag_last_error(), "exists and is not a saved model"));
    assert_int_equal(access(model_path("notes.txt"), F_OK), 0); /* left alone */
    tu_remove_dir(dir);
    /* replacing a model is fine */
    assert_true(save_net());
    assert_true(save_net());
    ag_export_signature sig = {.name = "s", .function = "nosuch"};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    ag_clear_error();
    assert_false(ag_saved_model_save(dir, &o));
    assert_non_null(strstr(ag_last_error(), "no AG_FUNCTION named 'nosuch'"));
    ag_saved_model *m = ag_saved_model_load(dir); /* the old model is still there */
    assert_non_null(m);
    ag_saved_model_free(m);
}

/* A model left loaded is freed by ag_shutdown (the leak checker sees). */
static void test_left_loaded(void **state)
{
    (void)state;
    assert_true(save_net());
    assert_non_null(ag_saved_model_load(dir));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_round_trip_runs_like_the_function),
        TU_TEST(test_variables_are_saved_values),
        TU_TEST(test_manifest_records_calls_and_aliases),
        TU_TEST(test_constants_are_saved_in_binary),
        TU_TEST(test_damaged_function_is_named),
        TU_TEST(test_truncated_variables),
        TU_TEST(test_manifest_version_and_truncation),
        TU_TEST(test_call_errors),
        TU_TEST(test_names_outside_ascii),
        TU_TEST(test_save_refuses_what_is_not_a_model),
        TU_TEST(test_left_loaded),
    };
    int failed = cmocka_run_group_tests(tests, setup_group, teardown_group);
    ag_shutdown();
    return failed;
}
