/*
 * test_targets.c - the target seam: the registry, choosing a target
 * (ag_set_target, AG_TARGET, AG_EXECUTOR), the analysis manager, and a
 * test-only target registered at run time that the function cache and
 * the compile pipeline use without knowing anything about it.
 */
#include "staged_util.h"

#include "exec.h"
#include "pipeline.h"

#include <string.h>

/* ------------------------------------------------ a test-only target */

/* "counting" interprets graphs like the reference target, counts what the
 * pipeline asks of it, and checks what it is handed: the analyses the
 * passes made, planned for its own capabilities. It fuses add and mul
 * only, and does not run sigmoid at all. */
static struct {
    int compiled, runs, freed;
    int fusion_runs, memory_runs; /* how often the plans were computed, at compile */
    bool plan_respects_caps;
    int largest_loop;
} seen;

struct tgt_exe {
    ir_plan *plan;
};

static bool counting_fuses(int op) { return op == RT_OP_ADD || op == RT_OP_MUL; }
static bool counting_supports(int op, ag_dtype dt) { return op != RT_OP_SIGMOID; }

static bool loops_respect_caps(const ir_graph *g, const pass_fusion_plan *p, int *largest)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        int c = p->cluster[n->id];
        if (c >= 0 && !counting_fuses(n->opcode))
            return false;
        if (c >= 0 && p->cluster_size[c] > *largest)
            *largest = p->cluster_size[c];
    }
    return true;
}

static tgt_exe *counting_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                                  tgt_diag *d)
{
    seen.compiled++;
    const pass_fusion_plan *plan = pass_analyses_fusion(am);
    pass_analyses_memory(am);
    seen.fusion_runs = pass_analyses_runs(am, PASS_ANALYSIS_FUSION);
    seen.memory_runs = pass_analyses_runs(am, PASS_ANALYSIS_MEMORY);
    seen.largest_loop = 0;
    seen.plan_respects_caps = loops_respect_caps(fn->body, plan, &seen.largest_loop);
    tgt_exe *x = calloc(1, sizeof *x);
    x->plan = ir_plan_new(fn);
    return x;
}

static bool counting_run(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results)
{
    seen.runs++;
    return ir_execute(x->plan, args, n_args, results);
}

static void counting_free(tgt_exe *x)
{
    seen.freed++;
    ir_plan_free(x->plan);
    free(x);
}

static tgt_cost counting_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = tgt_count_cost(fn, am);
    c.seconds = c.flops * 1e-9;
    return c;
}

static const tgt_target counting = {
    .name = "counting",
    .summary = "test only: interprets, counts calls",
    .caps = {.target = "counting", .native_dtypes = 1u << AG_F32, .supports = counting_supports,
             .fuses = counting_fuses},
    .compile = counting_compile,
    .run = counting_run,
    .free = counting_free,
    .cost = counting_cost,
};

/* ------------------------------------------------------ the functions */

/* tanh(x*x + x) * 2: add and mul fuse around the tanh */
static void chain__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    o[0] = ag_mul(ag_tanh(ag_add(ag_mul(x, x), x)), 2);
}
AG_TEST_DESC(chain, 1, N_X, K_T, NULL, 1, chain__trace);
static ag_tensor chain(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &chain__desc, a, o);
    return o[0];
}

static int sigmoid_line;
static void squash__trace(const ag_arg *a, ag_tensor *o)
{
    sigmoid_line = __LINE__ + 1;
    o[0] = ag_sigmoid(a[0].tensor);
}
AG_TEST_DESC(squash, 1, N_X, K_T, NULL, 1, squash__trace);
static ag_tensor squash(ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, &squash__desc, a, o);
    return o[0];
}

/* ---------------------------------------------------------------- tests */

static void test_registry(void **state)
{
    (void)state;
    assert_string_equal(tgt_at(0)->name, "reference");
    assert_string_equal(tgt_at(1)->name, "cpu");
    assert_ptr_equal(tgt_find("cpu"), tgt_at(1));
    assert_null(tgt_find("tpu"));
    assert_null(tgt_find(NULL));
    for (int i = 0; tgt_at(i); i++) { /* every target's caps carry its name */
        assert_string_equal(tgt_at(i)->caps.target, tgt_at(i)->name);
        assert_non_null(tgt_at(i)->cost);
    }
    assert_false(tgt_register(tgt_find("cpu"))); /* names are unique */
}

static void test_choosing_a_target(void **state)
{
    (void)state;
    bool strict;
    unsetenv("AG_TARGET");
    rt_config_reload_env();
    unsetenv("AG_EXECUTOR");
    rt_config_reload_env();
    assert_string_equal(pl_selected_target(AG_HERE, &strict)->name, "cpu");
    assert_false(strict);
    setenv("AG_EXECUTOR", "reference", 1);
    rt_config_reload_env();
    assert_string_equal(pl_selected_target(AG_HERE, &strict)->name, "reference");
    setenv("AG_EXECUTOR", "jit-strict", 1);
    rt_config_reload_env();
    assert_string_equal(pl_selected_target(AG_HERE, &strict)->name, "cpu");
    assert_true(strict);
    setenv("AG_EXECUTOR", "jit", 1);
    rt_config_reload_env();
    assert_string_equal(pl_selected_target(AG_HERE, &strict)->name, "cpu");
    assert_false(strict);
    setenv("AG_TARGET", "reference", 1); /* AG_TARGET wins over its older name */
    rt_config_reload_env();
    assert_string_equal(ag_target(), "reference");
    assert_true(ag_set_target("cpu")); /* and the API over the environment */
    assert_string_equal(ag_target(), "cpu");
    assert_true(ag_set_target(NULL));
    assert_string_equal(ag_target(), "reference");
    unsetenv("AG_TARGET");
    rt_config_reload_env();
    unsetenv("AG_EXECUTOR");
    rt_config_reload_env();
}

static void test_unknown_target_lists_the_targets(void **state)
{
    (void)state;
    assert_false(ag_set_target("gpu"));
    assert_non_null(strstr(ag_last_error(), "ag_set_target: gpu is not a target; the targets "
                                            "are reference, cpu, tpu-model"));
    ag_clear_error();
    setenv("AG_TARGET", "nosuch", 1);
    rt_config_reload_env();
    ag_tensor r = chain(F32(AG_SHAPE(2), 1, 2));
    unsetenv("AG_TARGET");
    rt_config_reload_env();
    assert_true(ag_is_error(r));
    assert_non_null(strstr(ag_last_error(), "AG_TARGET=nosuch is not a target; the targets "
                                            "are reference, cpu, tpu-model"));
    /* the environment chose it, not the line that traced (issue #30) */
    assert_null(strstr(ag_last_error(), "test_targets.c:"));
    assert_non_null(strstr(ag_last_error(), "the environment variable AG_TARGET=nosuch"));
}

/* AG_CPU compiles the traces that follow for that CPU (one the host can
 * run); a name LLVM does not know is an error at the function, not a
 * quiet fallback to the reference target, nor an LLVM abort. */
static void test_ag_cpu_names_the_cpu(void **state)
{
    (void)state;
#if defined(__x86_64__)
    const char *older = "x86-64-v2";
#else
    const char *older = "generic";
#endif
    ag_tensor x = F32(AG_SHAPE(5), -1, 0, 0.5f, 2, 3);
    setenv("AG_CPU", older, 1);
    rt_config_reload_env();
    ag_tensor got = chain(x); /* a new shape: traced and compiled now */
    unsetenv("AG_CPU");
    rt_config_reload_env();
    ag_run_functions_eagerly(true);
    ag_tensor want = chain(x);
    ag_run_functions_eagerly(false);
    assert_false(ag_is_error(got));
    for (int64_t i = 0; i < 5; i++)
        assert_true(ag_get_f64(got, i) == ag_get_f64(want, i));
    setenv("AG_CPU", "no-such-cpu", 1);
    rt_config_reload_env();
    ag_tensor r = chain(F32(AG_SHAPE(6), 1, 2, 3, 4, 5, 6));
    unsetenv("AG_CPU");
    rt_config_reload_env();
    assert_true(ag_is_error(r));
    assert_non_null(strstr(ag_last_error(), "AG_CPU=no-such-cpu: LLVM knows no CPU named "
                                            "'no-such-cpu'"));
    assert_non_null(strstr(ag_last_error(), "test_targets.c:"));
    ag_clear_error();
}

/* The seam: a target added at run time is chosen by name and used by the
 * function cache through the pipeline, with nothing else changed. */
static void test_a_registered_target_runs_functions(void **state)
{
    (void)state;
    assert_true(tgt_register(&counting) || tgt_find("counting") == &counting);
    assert_true(ag_set_target("counting"));
    memset(&seen, 0, sizeof seen);
    ag_tensor x = F32(AG_SHAPE(4), -1, 0, 0.5f, 2);
    ag_tensor a = chain(x), b = chain(x);
    assert_int_equal(seen.compiled, 1); /* one signature, one compile */
    assert_int_equal(seen.runs, 2);
    /* what it was handed: the plans of the passes' run, computed once,
     * for its capabilities (add and mul fused, tanh alone) */
    assert_int_equal(seen.fusion_runs, 1);
    assert_int_equal(seen.memory_runs, 1);
    assert_true(seen.plan_respects_caps);
    assert_int_equal(seen.largest_loop, 2); /* mul, add */
    ag_run_functions_eagerly(true);
    ag_tensor want = chain(x);
    ag_run_functions_eagerly(false);
    for (int64_t i = 0; i < 4; i++) {
        assert_true(ag_get_f64(a, i) == ag_get_f64(want, i));
        assert_true(ag_get_f64(b, i) == ag_get_f64(want, i));
    }
    ag_set_target(NULL);
}

static void test_unsupported_op_is_located(void **state)
{
    (void)state;
    assert_true(tgt_register(&counting) || tgt_find("counting") == &counting);
    assert_true(ag_set_target("counting"));
    ag_tensor r = squash(F32(AG_SHAPE(2), 1, 2));
    ag_set_target(NULL);
    assert_true(ag_is_error(r));
    char want[128];
    snprintf(want, sizeof want, "test_targets.c:%d: 'ag_sigmoid' isn't compilable for the target "
                                "'counting'", sigmoid_line);
    assert_non_null(strstr(ag_last_error(), want));
}

static void test_analyses_computed_once_per_version(void **state)
{
    (void)state;
    ir_function *fn = ir_parse("func @f(%0: f32[4]) -> (f32[4]) {\n"
                               "  %1 = mul(%0, %0) : f32[4]\n"
                               "  %2 = add(%1, %0) : f32[4]\n"
                               "  return %2\n}\n",
                               "t.ir", NULL, 0);
    assert_non_null(fn);
    pass_analyses *am = pass_analyses_new(fn, &tgt_find("cpu")->caps);
    const pass_fusion_plan *p = pass_analyses_fusion(am);
    assert_ptr_equal(pass_analyses_fusion(am), p);
    pass_analyses_memory(am);
    pass_analyses_memory(am);
    assert_int_equal(pass_analyses_runs(am, PASS_ANALYSIS_LIVENESS), 1);
    assert_int_equal(pass_analyses_runs(am, PASS_ANALYSIS_FUSION), 1);
    assert_int_equal(pass_analyses_runs(am, PASS_ANALYSIS_MEMORY), 1);
    assert_int_equal(p->n_clusters, 1);
    /* a pipeline whose passes change nothing keeps them */
    assert_true(pass_run_with(fn, "cse,dce,fusion,memplan", am, NULL));
    assert_int_equal(pass_analyses_runs(am, PASS_ANALYSIS_FUSION), 1);
    /* an edit invalidates them (the pass manager does after a change) */
    pass_analyses_invalidate(am);
    pass_analyses_fusion(am);
    assert_int_equal(pass_analyses_runs(am, PASS_ANALYSIS_FUSION), 2);
    tgt_cost c = tgt_find("cpu")->cost(fn, am);
    assert_true(c.flops == 8 && c.ops == 2 && c.seconds > 0);
    pass_analyses_free(am);
    ir_function_free(fn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_registry),
        TU_TEST(test_choosing_a_target),
        TU_TEST(test_unknown_target_lists_the_targets),
        TU_TEST(test_ag_cpu_names_the_cpu),
        TU_TEST(test_a_registered_target_runs_functions),
        TU_TEST(test_unsupported_op_is_located),
        TU_TEST(test_analyses_computed_once_per_version),
    };
    TU_RUN(tests);
}
