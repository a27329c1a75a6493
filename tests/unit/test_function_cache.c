/*
 * test_function_cache.c - the bound on the function cache: at most N
 * concrete functions per AG_FUNCTION (ag_set_max_concrete_functions,
 * AG_MAX_CONCRETE_FUNCTIONS), least recently used evicted first; an
 * evicted function still running on another thread, or held by an
 * ag_get_concrete_function caller, lives until it is done; ag_shutdown
 * frees every concrete function and every piece of JIT code.
 *
 * Memory is counted in concrete functions (ag_function_concrete_count)
 * and in compiled code (cg_live_codes), not in bytes: counts are exact
 * and do not depend on the allocator.
 */
#include "staged_util.h"

#include "cg.h"
#include "target.h"

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

/* x * k + k: every new k is a new concrete function */
static void affine__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_add(ag_mul(a[0].tensor, (int)a[1].i), (int)a[1].i);
}
AG_TEST_DESC(affine, 2, N_XY, K_TI, NULL, 1, affine__trace);

static float affine(float x, int k)
{
    ag_arg a[2] = {targ(ag_scalar_f32(x)), {.kind = AG_ARG_INT, .i = k}};
    ag_tensor o[1];
    if (!ag_function_call_at(AG_HERE, &affine__desc, a, o))
        fail_msg("affine(%g, %d): %s", x, k, ag_last_error());
    return ag_get_f32(o[0], 0);
}

/* Calls affine with k = from .. to-1, checking each result. */
static void call_range(int from, int to)
{
    for (int k = from; k < to; k++)
        assert_float_equal(affine(2, k), 3.0f * (float)k, 0);
}

/* Runs `body` with stderr captured; returns what it printed (free it). */
#define STDERR_OF(text, body)                          \
    do {                                               \
        FILE *err_ = tmpfile();                        \
        int saved_ = dup(2);                           \
        fflush(stderr);                                \
        dup2(fileno(err_), 2);                         \
        body;                                          \
        fflush(stderr);                                \
        dup2(saved_, 2);                               \
        close(saved_);                                 \
        long n_ = ftell(err_);                         \
        (text) = calloc(1, (size_t)n_ + 1);            \
        rewind(err_);                                  \
        if (fread((text), 1, (size_t)n_, err_) == 0) { \
        }                                              \
        fclose(err_);                                  \
    } while (0)

static int teardown_bound(void **state)
{
    ag_set_max_concrete_functions(-1);
    unsetenv("AG_MAX_CONCRETE_FUNCTIONS");
    rt_config_reload_env();
    ag_set_target(NULL);
    return tu_teardown(state);
}
#define CACHE_TEST(f) cmocka_unit_test_setup_teardown(f, tu_setup, teardown_bound)

/* --------------------------------------------------------- the default */

static void test_default_bound_is_64(void **state)
{
    (void)state;
    unsetenv("AG_MAX_CONCRETE_FUNCTIONS");
    rt_config_reload_env();
    assert_int_equal(ag_max_concrete_functions(), 64);
    ag_set_target("reference"); /* the bound is the cache's, whatever the target */
    int traces = ag_function_trace_count("affine");
    char *warnings;
    STDERR_OF(warnings, call_range(1000, 1200));
    assert_int_equal(ag_function_trace_count("affine") - traces, 200);
    assert_int_equal(ag_function_concrete_count("affine"), 64);
    /* the retrace warning is kept, said once */
    assert_non_null(strstr(warnings, "traced a new graph: parameter 'y' changed from"));
    free(warnings);
}

/* ------------------------------------------------- many JIT retraces */

static void test_many_retraces_hold_the_bound(void **state)
{
    (void)state;
    ag_set_target("cpu");
    ag_set_max_concrete_functions(8);
    assert_int_equal(ag_max_concrete_functions(), 8);
    int codes = cg_live_codes();
    char *warnings;
    STDERR_OF(warnings, call_range(0, 300));
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 8);
    /* evicted functions freed their JIT code too */
    assert_true(cg_live_codes() <= codes + 8);
    assert_true(cg_live_codes() >= 8);
}

/* ------------------------------------------- least recently used first */

static void test_least_recently_used_is_evicted(void **state)
{
    (void)state;
    ag_set_target("reference");
    ag_set_max_concrete_functions(3);
    char *warnings;
    STDERR_OF(warnings, call_range(2000, 2003)); /* 2000 2001 2002 */
    free(warnings);
    int traces = ag_function_trace_count("affine");
    call_range(2000, 2001); /* 2000 is now the most recent */
    assert_int_equal(ag_function_trace_count("affine"), traces);
    call_range(2003, 2004); /* evicts 2001, the least recent */
    assert_int_equal(ag_function_trace_count("affine"), traces + 1);
    call_range(2000, 2001);
    call_range(2002, 2004);
    assert_int_equal(ag_function_trace_count("affine"), traces + 1); /* all cached */
    call_range(2001, 2002);
    assert_int_equal(ag_function_trace_count("affine"), traces + 2); /* traced again */
    assert_int_equal(ag_function_concrete_count("affine"), 3);
}

/* Lowering the bound evicts at once; 0 removes it. */
static void test_set_bound_evicts_and_zero_removes_it(void **state)
{
    (void)state;
    ag_set_target("reference");
    ag_set_max_concrete_functions(10);
    char *warnings;
    STDERR_OF(warnings, call_range(3000, 3010));
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 10);
    ag_set_max_concrete_functions(2);
    assert_int_equal(ag_function_concrete_count("affine"), 2);
    ag_set_max_concrete_functions(0);
    assert_int_equal(ag_max_concrete_functions(), 0);
    STDERR_OF(warnings, call_range(3100, 3180));
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 82);
}

/* ------------------------------------------------- the environment */

static void test_environment_sets_the_bound(void **state)
{
    (void)state;
    ag_set_target("reference");
    setenv("AG_MAX_CONCRETE_FUNCTIONS", "5", 1);
    rt_config_reload_env();
    assert_int_equal(ag_max_concrete_functions(), 5);
    char *warnings;
    STDERR_OF(warnings, call_range(4000, 4020));
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 5);
    ag_set_max_concrete_functions(7); /* the API wins over the environment */
    assert_int_equal(ag_max_concrete_functions(), 7);
    ag_set_max_concrete_functions(-1);
    assert_int_equal(ag_max_concrete_functions(), 5);

    setenv("AG_MAX_CONCRETE_FUNCTIONS", "lots", 1);
    rt_config_reload_env();
    int n = 0;
    STDERR_OF(warnings, n = ag_max_concrete_functions());
    assert_int_equal(n, 64);
    assert_non_null(strstr(warnings, "AG_MAX_CONCRETE_FUNCTIONS='lots' is not a count"));
    free(warnings);
}

/* ------------------------ a concrete function held by its user survives */

static void test_held_concrete_function_survives_eviction(void **state)
{
    (void)state;
    ag_set_target("reference");
    ag_set_max_concrete_functions(1);
    ag_concrete_function *cf = ag_get_concrete_function("affine", "f32[], y=5000");
    assert_non_null(cf);
    int nodes = ag_concrete_num_nodes(cf);
    char *warnings;
    STDERR_OF(warnings, call_range(5001, 5004)); /* evict it from the cache */
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 2); /* 5003, and cf */
    assert_int_equal(ag_concrete_num_nodes(cf), nodes);        /* still valid */
    ag_concrete_release(cf);
    assert_int_equal(ag_function_concrete_count("affine"), 1);
    ag_clear_error();
    ag_concrete_function *again = ag_get_concrete_function("affine", "f32[], y=5003");
    ag_concrete_release(again);
    ag_concrete_release(again); /* one more than it was given */
    assert_non_null(strstr(ag_last_error(), "released more often than"));
}

/* ------------------- a concrete function running on another thread */

/* "gated": interprets like the reference target, but every run waits
 * until the test opens the gate, so that the test can evict a concrete
 * function while a call of it is known to be running. */
static sem_t run_started, gate;
static atomic_int gated_freed;

struct tgt_exe {
    const tgt_target *inner;
    tgt_exe *exe;
};

static tgt_exe *gated_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                              tgt_diag *d)
{
    const tgt_target *ref = tgt_find("reference");
    tgt_exe *inner = ref->compile(fn, am, o, d);
    if (!inner)
        return NULL;
    tgt_exe *x = calloc(1, sizeof *x);
    x->inner = ref;
    x->exe = inner;
    return x;
}

static bool gated_run(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results)
{
    sem_post(&run_started);
    sem_wait(&gate);
    return x->inner->run(x->exe, args, n_args, results);
}

static void gated_free(tgt_exe *x)
{
    atomic_fetch_add(&gated_freed, 1);
    x->inner->free(x->exe);
    free(x);
}

static bool gated_supports(int op, ag_dtype dt)
{
    (void)op;
    (void)dt;
    return true;
}

static const tgt_target gated = {
    .name = "gated",
    .summary = "test only: the reference interpreter behind a gate",
    .caps = {.target = "gated", .native_dtypes = 1u << AG_F32, .supports = gated_supports},
    .compile = gated_compile,
    .run = gated_run,
    .free = gated_free,
};

static void *call_7000(void *result)
{
    ag_scope_push();
    *(float *)result = affine(2, 7000);
    ag_scope_pop();
    return NULL;
}

static void test_running_concrete_function_is_not_freed(void **state)
{
    (void)state;
    assert_true(tgt_register(&gated) || tgt_find("gated") == &gated);
    sem_init(&run_started, 0, 0);
    sem_init(&gate, 0, 0);
    ag_set_target("gated");
    ag_set_max_concrete_functions(1);
    int freed = atomic_load(&gated_freed);

    pthread_t thread;
    float result = 0;
    pthread_create(&thread, NULL, call_7000, &result);
    sem_wait(&run_started); /* the call of k=7000 is running */

    /* Another signature evicts k=7000 from the cache (its trace runs on
     * this thread: tracing does not run the graph) ... */
    ag_concrete_function *cf = ag_get_concrete_function("affine", "f32[], y=7001");
    assert_non_null(cf);
    ag_concrete_release(cf);
    /* ... but the running one is retired, not freed. */
    assert_int_equal(ag_function_concrete_count("affine"), 2);
    assert_int_equal(atomic_load(&gated_freed), freed);

    sem_post(&gate);
    pthread_join(thread, NULL);
    assert_float_equal(result, 2.0f * 7000 + 7000, 0);
    /* its call is done: it is freed now */
    assert_int_equal(ag_function_concrete_count("affine"), 1);
    assert_int_equal(atomic_load(&gated_freed), freed + 1);
    sem_destroy(&run_started);
    sem_destroy(&gate);
}

/* Many threads calling with many signatures under a tiny bound: every
 * result right, nothing freed under a running call (ASan would say). */
static void *churn(void *arg)
{
    int base = *(int *)arg;
    ag_scope_push();
    for (int i = 0; i < 200; i++) {
        int k = base + i % 7;
        if (affine(1, k) != 2.0f * (float)k)
            fail_msg("affine(1, %d) was wrong", k);
    }
    ag_scope_pop();
    return NULL;
}

static void test_concurrent_calls_under_a_small_bound(void **state)
{
    (void)state;
    ag_set_target("reference");
    ag_set_max_concrete_functions(2);
    pthread_t threads[4];
    int bases[4] = {8000, 8003, 8100, 8200};
    char *warnings;
    STDERR_OF(warnings, {
        for (int i = 0; i < 4; i++)
            pthread_create(&threads[i], NULL, churn, &bases[i]);
        for (int i = 0; i < 4; i++)
            pthread_join(threads[i], NULL);
    });
    free(warnings);
    assert_int_equal(ag_function_concrete_count("affine"), 2);
}

/* ----------------------------------------- ag_shutdown frees them all */

static void test_shutdown_frees_every_concrete_function(void **state)
{
    (void)state;
    ag_set_target("cpu");
    ag_set_max_concrete_functions(0);
    char *warnings;
    STDERR_OF(warnings, call_range(9000, 9020));
    free(warnings);
    ag_concrete_function *held = ag_get_concrete_function("affine", "f32[], y=1");
    assert_non_null(held);
    assert_true(ag_function_concrete_count(NULL) >= 21);
    assert_true(cg_live_codes() >= 20);

    ag_scope_pop(); /* the fixture's scope, before the runtime goes */
    ag_shutdown();
    assert_int_equal(ag_function_concrete_count(NULL), 0);
    assert_int_equal(cg_live_codes(), 0); /* the JIT's code, too */
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_scope_push();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CACHE_TEST(test_default_bound_is_64),
        CACHE_TEST(test_many_retraces_hold_the_bound),
        CACHE_TEST(test_least_recently_used_is_evicted),
        CACHE_TEST(test_set_bound_evicts_and_zero_removes_it),
        CACHE_TEST(test_environment_sets_the_bound),
        CACHE_TEST(test_held_concrete_function_survives_eviction),
        CACHE_TEST(test_running_concrete_function_is_not_freed),
        CACHE_TEST(test_concurrent_calls_under_a_small_bound),
        CACHE_TEST(test_shutdown_frees_every_concrete_function),
    };
    TU_RUN(tests);
}
