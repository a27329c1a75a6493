/*
 * test_config.c - the one configuration (runtime/core/config.h): its
 * layers and their order, snapshots that do not change under a compile,
 * the environment read once, what a compile records (AG_DUMP_IR's header,
 * a saved model's manifest), and setters called after a function was
 * compiled behaving as docs/runtime.md says.
 */
#include "staged_util.h"

#include "pipeline.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------ a test-only target */

/* "noting" runs graphs like the reference target and counts its runs:
 * which target a concrete function runs on shows in the count. */
static int noting_runs;

static tgt_exe *noting_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                               tgt_diag *d)
{
    return tgt_find("reference")->compile(fn, am, o, d);
}

static bool noting_run(const tgt_exe *x, rt_value *const *args, int n, rt_value **results)
{
    noting_runs++;
    return tgt_find("reference")->run(x, args, n, results);
}

static void noting_free(tgt_exe *x) { tgt_find("reference")->free(x); }

static tgt_cost noting_cost(const ir_function *fn, pass_analyses *am)
{
    return tgt_count_cost(fn, am);
}

static const tgt_target tgt_noting = {
    .name = "noting",
    .summary = "test only: the reference executor, counting runs",
    .caps = {.target = "noting", .precision = PASS_PRECISION_IEEE},
    .compile = noting_compile,
    .run = noting_run,
    .free = noting_free,
    .cost = noting_cost,
};

/* ------------------------------------------------------ the functions */

static void twice__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_mul(a[0].tensor, 2); }
AG_TEST_DESC(twice, 1, N_X, K_T, NULL, 1, twice__trace);
static ag_tensor twice(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &twice__desc, a, o);
    return o[0];
}

static void inc__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_add(a[0].tensor, 1); }
AG_TEST_DESC(inc, 1, N_X, K_T, "f32[3]", 1, inc__trace);

/* ---------------------------------------------------------------- tests */

/* rt_config_with: a new snapshot with one value more (as a flag), the
 * base and the layers untouched. */
static void test_with_one_more_setting(void **state)
{
    (void)state;
    rt_config_set(RT_CFG_PASSES, "dce");
    const rt_config *base = rt_config_get();
    const rt_config *with = rt_config_with(base, RT_CFG_TRIPLE, "aarch64-linux-gnu");
    rt_config_set(RT_CFG_PASSES, NULL); /* the base was taken before */
    assert_string_equal(rt_config_str(with, RT_CFG_TRIPLE), "aarch64-linux-gnu");
    assert_int_equal(rt_config_source_of(with, RT_CFG_TRIPLE), RT_SRC_FLAG);
    assert_string_equal(rt_config_str(with, RT_CFG_PASSES), "dce");
    assert_int_equal(rt_config_source_of(with, RT_CFG_PASSES), RT_SRC_SETTER);
    assert_null(rt_config_str(base, RT_CFG_TRIPLE));
    assert_int_equal(rt_config_source_of(base, RT_CFG_TRIPLE), RT_SRC_DEFAULT);
    const rt_config *now = rt_config_get();
    assert_null(rt_config_str(now, RT_CFG_TRIPLE));
    assert_null(rt_config_str(now, RT_CFG_PASSES));
    /* NULL: from the settings in force; a value NULL unsets */
    const rt_config *unset = rt_config_with(NULL, RT_CFG_JIT, NULL);
    assert_null(rt_config_str(unset, RT_CFG_JIT));
    assert_int_equal(rt_config_source_of(unset, RT_CFG_JIT), RT_SRC_FLAG);
    char *text = rt_config_changed_text(with);
    assert_non_null(strstr(text, "triple = aarch64-linux-gnu (flag)"));
    free(text);
    rt_config_release(unset);
    rt_config_release(now);
    rt_config_release(with);
    rt_config_release(base);
}

/* default < environment < setter < flag, each value with its source; a
 * layer cleared shows the one below again. */
static void test_layers_and_sources(void **state)
{
    (void)state;
    setenv("AG_PASSES", "fold", 1);
    rt_config_reload_env();
    const rt_config *c = rt_config_get();
    assert_string_equal(rt_config_str(c, RT_CFG_PASSES), "fold");
    assert_int_equal(rt_config_source_of(c, RT_CFG_PASSES), RT_SRC_ENV);
    assert_string_equal(rt_config_str(c, RT_CFG_MAX_CONCRETE_FUNCTIONS), "64");
    assert_int_equal(rt_config_source_of(c, RT_CFG_MAX_CONCRETE_FUNCTIONS), RT_SRC_DEFAULT);
    rt_config_release(c);
    rt_config_set(RT_CFG_PASSES, "dce");
    c = rt_config_get();
    assert_string_equal(rt_config_str(c, RT_CFG_PASSES), "dce");
    assert_int_equal(rt_config_source_of(c, RT_CFG_PASSES), RT_SRC_SETTER);
    rt_config_release(c);
    rt_config_set_flag(RT_CFG_PASSES, "none");
    c = rt_config_get();
    assert_string_equal(rt_config_str(c, RT_CFG_PASSES), "none");
    assert_int_equal(rt_config_source_of(c, RT_CFG_PASSES), RT_SRC_FLAG);
    rt_config_release(c);
    rt_config_set_flag(RT_CFG_PASSES, NULL);
    rt_config_set(RT_CFG_PASSES, NULL);
    c = rt_config_get();
    assert_string_equal(rt_config_str(c, RT_CFG_PASSES), "fold");
    assert_int_equal(rt_config_source_of(c, RT_CFG_PASSES), RT_SRC_ENV);
    rt_config_release(c);
    unsetenv("AG_PASSES");
    rt_config_reload_env();
}

/* A snapshot is immutable: what a compile took stays what it reads. */
static void test_snapshot_does_not_change(void **state)
{
    (void)state;
    const rt_config *before = rt_config_get();
    ag_set_jit_policy(AG_JIT_ASYNC);
    const rt_config *after = rt_config_get();
    assert_string_equal(rt_config_str(before, RT_CFG_JIT), "auto");
    assert_string_equal(rt_config_str(after, RT_CFG_JIT), "async");
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    assert_string_equal(rt_config_str(after, RT_CFG_JIT), "async");
    rt_config_release(before);
    rt_config_release(after);
}

/* The environment is read once: setenv after the first use changes
 * nothing until it is read again. */
static void test_environment_read_once(void **state)
{
    (void)state;
    ag_set_soft_device_placement(false); /* a first use, if none was */
    rt_config_set(RT_CFG_SOFT_DEVICE_PLACEMENT, NULL);
    setenv("AG_SOFT_DEVICE_PLACEMENT", "1", 1);
    const rt_config *c = rt_config_get();
    assert_false(rt_config_on(c, RT_CFG_SOFT_DEVICE_PLACEMENT));
    rt_config_release(c);
    rt_config_reload_env();
    c = rt_config_get();
    assert_true(rt_config_on(c, RT_CFG_SOFT_DEVICE_PLACEMENT));
    rt_config_release(c);
    unsetenv("AG_SOFT_DEVICE_PLACEMENT");
    rt_config_reload_env();
}

/* --print-config's table has every setting; the header form only those
 * that are not defaults, each with its source. */
static void test_printing(void **state)
{
    (void)state;
    ag_set_target("reference");
    const rt_config *c = rt_config_get();
    char *all, *changed;
    size_t n;
    FILE *out = open_memstream(&all, &n);
    rt_config_print(c, out);
    fclose(out);
    out = open_memstream(&changed, &n);
    rt_config_print_changed(c, "// config: ", out);
    fclose(out);
    char *text = rt_config_changed_text(c);
    rt_config_release(c);
    ag_set_target(NULL);
    for (int i = 0; i < RT_CFG_COUNT; i++)
        assert_non_null(strstr(all, rt_config_name((rt_config_id)i)));
    assert_non_null(strstr(all, "max_concrete_functions   64             default"));
    assert_non_null(strstr(changed, "// config: target = reference (setter)\n"));
    assert_null(strstr(changed, "max_concrete_functions"));
    assert_non_null(strstr(text, "target = reference (setter)"));
    free(all);
    free(changed);
    free(text);
}

/* ag_set_target affects new compiles only: a concrete function keeps the
 * target it was compiled for. */
static void test_set_target_affects_new_compiles(void **state)
{
    (void)state;
    tgt_register(&tgt_noting);
    assert_true(ag_set_target("noting"));
    noting_runs = 0;
    ag_tensor a = twice(ag_ones(AG_F32, AG_SHAPE(2)));
    assert_int_equal(noting_runs, 1);
    assert_true(ag_set_target("reference"));
    ag_tensor b = twice(ag_ones(AG_F32, AG_SHAPE(2))); /* compiled for noting */
    assert_int_equal(noting_runs, 2);
    ag_tensor c = twice(ag_ones(AG_F32, AG_SHAPE(5))); /* a new compile */
    assert_int_equal(noting_runs, 2);
    ag_set_target(NULL);
    assert_false(ag_is_error(a) || ag_is_error(b) || ag_is_error(c));
    assert_true(ag_get_f32(c, 4) == 2.0f);
}

/* The bound a setter gives applies at once; the environment's comes back
 * when it is cleared. */
static void test_max_concrete_functions_setter(void **state)
{
    (void)state;
    ag_set_max_concrete_functions(3);
    assert_int_equal(ag_max_concrete_functions(), 3);
    for (int n = 1; n <= 6; n++)
        ag_free(twice(ag_ones(AG_F32, AG_SHAPE(n + 10))));
    assert_true(ag_function_concrete_count("twice") <= 3);
    ag_set_max_concrete_functions(-1);
    assert_int_equal(ag_max_concrete_functions(), 64);
}

/* ag_set_cache_dir: NULL goes back to AG_CACHE_DIR, "" turns it off. */
static void test_cache_dir_setter(void **state)
{
    (void)state;
    setenv("AG_CACHE_DIR", "/tmp/agc-config-env", 1);
    rt_config_reload_env();
    ag_set_cache_dir("");
    assert_null(ag_cache_dir());
    ag_set_cache_dir("/tmp/agc-config-set");
    assert_string_equal(ag_cache_dir(), "/tmp/agc-config-set");
    ag_set_cache_dir(NULL);
    assert_string_equal(ag_cache_dir(), "/tmp/agc-config-env");
    unsetenv("AG_CACHE_DIR");
    rt_config_reload_env();
    assert_null(ag_cache_dir());
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* AG_DUMP_IR's files start with the settings the compile used. */
static void test_dump_ir_records_the_settings(void **state)
{
    (void)state;
    char dir[] = "/tmp/agc-config-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("AG_DUMP_IR", dir, 1);
    rt_config_reload_env();
    ag_set_jit_policy(AG_JIT_SYNC);
    ag_free(twice(ag_ones(AG_F32, AG_SHAPE(7))));
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    unsetenv("AG_DUMP_IR");
    rt_config_reload_env();
    char cmd[256], path[200];
    snprintf(cmd, sizeof cmd, "ls %s/twice.*.after.ir | head -1", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    char *text = read_text(path);
    assert_non_null(strstr(text, "// config: jit = sync (setter)\n"));
    assert_non_null(strstr(text, "// config: dump_ir = "));
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A saved model's manifest records the settings its functions were
 * traced with. */
static void test_saved_model_records_the_settings(void **state)
{
    (void)state;
    ag_function_register(&inc__desc);
    char dir[] = "/tmp/agc-config-model-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char model[256];
    snprintf(model, sizeof model, "%s/m", dir);
    ag_set_target("reference");
    ag_export_signature sig = {.name = "serving_default", .function = "inc"};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    bool saved = ag_saved_model_save(model, &o);
    ag_set_target(NULL);
    assert_true(saved);
    char path[300];
    snprintf(path, sizeof path, "%s/saved_model.pbtxt", model);
    char *text = read_text(path);
    assert_non_null(strstr(text, "config: \"target = reference (setter)\"\n"));
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_layers_and_sources),
        TU_TEST(test_with_one_more_setting),
        TU_TEST(test_snapshot_does_not_change),
        TU_TEST(test_environment_read_once),
        TU_TEST(test_printing),
        TU_TEST(test_set_target_affects_new_compiles),
        TU_TEST(test_max_concrete_functions_setter),
        TU_TEST(test_cache_dir_setter),
        TU_TEST(test_dump_ir_records_the_settings),
        TU_TEST(test_saved_model_records_the_settings),
    };
    TU_RUN(tests);
}
