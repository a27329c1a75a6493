/*
 * test_tiered.c - tiered execution (pipeline/tiered.c): the policy
 * (ag_set_jit_policy, AG_JIT), a first call that does not wait for the
 * compile, many threads calling while it is in flight, the switch to the
 * compiled code, a compile that fails, eviction and ag_shutdown while a
 * compile runs; and AG_PROFILE's table at exit.
 *
 * A test-only target, "gated", makes the timing deterministic: it falls
 * back to the reference target like cpu, and its compile blocks until the
 * test opens a gate, so a call that returned while the gate was shut did
 * not wait for it. The cpu target is checked too, on issue 12's softmax
 * chain, bit for bit against the reference executor.
 */
#include "staged_util.h"

#include "cg.h"
#include "exec.h"
#include "pipeline.h"
#include "profile.h"

#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------- the gated target */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open = true, gate_fails;
static atomic_int compiling, compiled, runs, freed;
static atomic_int alive; /* executables made and not freed, never reset */

static void set_gate(bool open)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = open;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

struct tgt_exe {
    ir_plan *plan;
};

static tgt_exe *gated_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                              tgt_diag *d)
{
    (void)am, (void)o;
    atomic_fetch_add(&compiling, 1);
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    bool fails = gate_fails;
    pthread_mutex_unlock(&gate_lock);
    atomic_fetch_sub(&compiling, 1);
    if (fails) {
        snprintf(d->msg, sizeof d->msg, "the gated target refuses");
        return NULL;
    }
    atomic_fetch_add(&compiled, 1);
    atomic_fetch_add(&alive, 1);
    tgt_exe *x = calloc(1, sizeof *x);
    x->plan = ir_plan_new(fn);
    return x;
}

static bool gated_run(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results)
{
    atomic_fetch_add(&runs, 1);
    return ir_execute(x->plan, args, n_args, results);
}

static void gated_free(tgt_exe *x)
{
    atomic_fetch_add(&freed, 1);
    atomic_fetch_sub(&alive, 1);
    ir_plan_free(x->plan);
    free(x);
}

static tgt_cost gated_cost(const ir_function *fn, pass_analyses *am)
{
    return tgt_count_cost(fn, am);
}

static const tgt_target gated = {
    .name = "gated",
    .summary = "test only: the reference executor behind a compile that waits for a gate",
    .falls_back = true,
    .caps = {.target = "gated", .native_dtypes = 1u << AG_F32},
    .compile = gated_compile,
    .run = gated_run,
    .free = gated_free,
    .cost = gated_cost,
};

/* Waits (at most 10 s) until the background thread is inside a compile. */
static void wait_compiling(void)
{
    for (int i = 0; i < 10000 && atomic_load(&compiling) == 0; i++)
        usleep(1000);
    assert_int_equal(atomic_load(&compiling), 1);
}

/* ------------------------------------------------------ the functions */

/* issue 12's chain: n steps of x = softmax(transpose(x) + i, 0) */
static void chain__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    for (int i = 0; i < (int)a[1].i; i++)
        x = ag_softmax(ag_add(ag_transpose(x, 1, 0), (float)i), 0);
    o[0] = x;
}
static const char *const N_XN[] = {"x", "n"};
AG_TEST_DESC(chain, 2, N_XN, K_TI, NULL, 1, chain__trace);
AG_TEST_DESC(chain_ref, 2, N_XN, K_TI, NULL, 1, chain__trace);

static ag_tensor call(const ag_function_desc *d, ag_tensor x, int n)
{
    ag_arg a[2] = {targ(x), {.kind = AG_ARG_INT, .i = n}};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

static ag_tensor input(int side)
{
    float data[64];
    for (int i = 0; i < side * side; i++)
        data[i] = (float)((i * 37) % 17) / 8.0f;
    return ag_from_data(AG_F32, AG_SHAPE(side, side), data);
}

/* What the reference executor computes for chain(x, n), for comparison. */
static ag_tensor expected(ag_tensor x, int n)
{
    ag_set_target("reference");
    ag_tensor y = call(&chain_ref__desc, x, n);
    ag_set_target(NULL);
    return y;
}

static void assert_same_bits(ag_tensor a, ag_tensor b)
{
    assert_false(ag_is_error(a));
    assert_false(ag_is_error(b));
    assert_int_equal(ag_num_elements(a), ag_num_elements(b));
    assert_memory_equal(ag_data(a), ag_data(b), (size_t)ag_num_elements(a) * sizeof(float));
}

static void reset_gated(void)
{
    ag_jit_wait();
    atomic_store(&compiled, 0);
    atomic_store(&runs, 0);
    atomic_store(&freed, 0);
    gate_fails = false;
    set_gate(true);
}

/* ------------------------------------------------------------ policy */

static void test_policy_from_environment(void **state)
{
    (void)state;
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    unsetenv("AG_JIT");
    rt_config_reload_env();
    assert_int_equal(ag_get_jit_policy(), AG_JIT_AUTO);
    setenv("AG_JIT", "sync", 1);
    rt_config_reload_env();
    assert_int_equal(ag_get_jit_policy(), AG_JIT_SYNC);
    setenv("AG_JIT", "async", 1);
    rt_config_reload_env();
    assert_int_equal(ag_get_jit_policy(), AG_JIT_ASYNC);
    setenv("AG_JIT", "sometimes", 1); /* said once on stderr; auto */
    rt_config_reload_env();
    assert_int_equal(ag_get_jit_policy(), AG_JIT_AUTO);
    ag_set_jit_policy(AG_JIT_SYNC); /* the program's choice wins */
    setenv("AG_JIT", "async", 1);
    rt_config_reload_env();
    assert_int_equal(ag_get_jit_policy(), AG_JIT_SYNC);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    assert_int_equal(ag_get_jit_policy(), AG_JIT_ASYNC);
    unsetenv("AG_JIT");
    rt_config_reload_env();
}

/* sync: the first call waits for the compile and runs the target's code */
static void test_sync_compiles_at_the_first_call(void **state)
{
    (void)state;
    reset_gated();
    ag_set_jit_policy(AG_JIT_SYNC);
    ag_set_target("gated");
    ag_tensor x = input(4);
    ag_tensor y = call(&chain__desc, x, 5);
    assert_int_equal(atomic_load(&compiled), 1);
    assert_int_equal(atomic_load(&runs), 1);
    ag_set_target(NULL);
    assert_same_bits(y, expected(x, 5));
    ag_set_jit_policy(AG_JIT_FROM_ENV);
}

/* auto: a small graph compiles at once, one of 1,000 nodes or more in
 * the background */
static void test_auto_by_graph_size(void **state)
{
    (void)state;
    reset_gated();
    ag_set_jit_policy(AG_JIT_AUTO);
    ag_set_target("gated");
    ag_tensor x = input(3);
    ag_free(call(&chain__desc, x, 10)); /* 30 nodes */
    assert_int_equal(atomic_load(&runs), 1);
    set_gate(false);
    ag_tensor y = call(&chain__desc, x, 400); /* about 1,200 nodes: returns, gate shut */
    wait_compiling();
    assert_int_equal(atomic_load(&runs), 1);
    set_gate(true);
    ag_jit_wait();
    ag_tensor z = call(&chain__desc, x, 400);
    assert_int_equal(atomic_load(&runs), 2);
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    ag_tensor want = expected(x, 400);
    assert_same_bits(y, want);
    assert_same_bits(z, want);
}

/* ------------------------------------------------------------- async */

typedef struct caller {
    ag_tensor x, want;
    int calls, wrong;
} caller;

static void *call_many(void *arg)
{
    caller *c = arg;
    ag_scope_push();
    for (int i = 0; i < c->calls; i++) {
        ag_tensor y = call(&chain__desc, c->x, 7);
        c->wrong += ag_is_error(y) ||
                    memcmp(ag_data(y), ag_data(c->want), 9 * sizeof(float)) != 0;
        ag_free(y);
    }
    ag_scope_pop();
    return NULL;
}

/* Threads call while the compile is blocked: none waits for it, all get
 * the reference executor's results; after the gate opens, calls run the
 * compiled code (and still agree). */
static void test_async_threads_while_compiling(void **state)
{
    (void)state;
    reset_gated();
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_tensor x = input(3);
    ag_tensor want = expected(x, 7);
    ag_set_target("gated");
    set_gate(false);
    ag_free(call(&chain__desc, x, 7));
    wait_compiling();
    enum { THREADS = 8 };
    pthread_t t[THREADS];
    caller c[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i] = (caller){.x = x, .want = want, .calls = 20};
        pthread_create(&t[i], NULL, call_many, &c[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].wrong, 0);
    }
    assert_int_equal(atomic_load(&runs), 0); /* every call ran on the reference */
    assert_int_equal(ag_function_trace_count("chain") >= 1, 1);
    /* the gate opens while threads call: each call runs one or the other */
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, call_many, &c[i]);
    set_gate(true);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].wrong, 0);
    }
    ag_jit_wait();
    int before = atomic_load(&runs);
    assert_same_bits(call(&chain__desc, x, 7), want);
    assert_int_equal(atomic_load(&runs), before + 1); /* now the compiled code */
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
}

/* A compile that fails in the background falls back as the synchronous
 * path does: no error, the reference executor goes on running the calls. */
static void test_async_compile_failure_falls_back(void **state)
{
    (void)state;
    reset_gated();
    gate_fails = true;
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_tensor x = input(2);
    ag_tensor want = expected(x, 3);
    ag_set_target("gated");
    ag_tensor y = call(&chain__desc, x, 3);
    ag_jit_wait();
    ag_tensor z = call(&chain__desc, x, 3);
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    assert_null(ag_last_error());
    assert_int_equal(atomic_load(&runs), 0);
    assert_same_bits(y, want);
    assert_same_bits(z, want);
}

/* Evicting a concrete function whose compile is running does not wait
 * for it; the code it makes is freed when it ends, nothing leaks. A
 * queued compile of an evicted function is cancelled. */
static void test_eviction_while_compiling(void **state)
{
    (void)state;
    ag_set_max_concrete_functions(1); /* evicts the earlier tests' functions */
    reset_gated();
    int live = ag_function_concrete_count(NULL);
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_set_target("gated");
    set_gate(false);
    ag_tensor x = input(2);
    ag_free(call(&chain__desc, x, 11)); /* compiling, blocked */
    wait_compiling();
    ag_free(call(&chain__desc, x, 12)); /* evicts the first; queued */
    ag_free(call(&chain__desc, x, 13)); /* evicts the second: cancelled */
    assert_int_equal(ag_function_concrete_count("chain"), 1);
    set_gate(true);
    ag_jit_wait();
    ag_set_max_concrete_functions(-1);
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    /* the first compile's code, made after its function was evicted, is
     * freed; the third's is alive in the cache */
    assert_int_equal(atomic_load(&compiled), 2);
    assert_int_equal(atomic_load(&freed), 1);
    assert_int_equal(ag_function_concrete_count("chain"), 1);
    assert_int_equal(ag_function_concrete_count(NULL), live); /* one evicted, one made */
}

typedef struct cpu_caller {
    ag_tensor x, want;
    int wrong;
} cpu_caller;

static void *call_cpu_chain(void *arg)
{
    cpu_caller *c = arg;
    ag_scope_push();
    for (int i = 0; i < 5; i++) {
        ag_tensor y = call(&chain__desc, c->x, 60);
        c->wrong += ag_is_error(y) ||
                    memcmp(ag_data(y), ag_data(c->want), 64 * sizeof(float)) != 0;
        ag_free(y);
    }
    ag_scope_pop();
    return NULL;
}

/* The cpu target, asynchronously, on issue 12's chain: the first call's
 * results, those of threads calling while LLVM compiles (reading the
 * graph the interpreter runs: ThreadSanitizer watches), and the compiled
 * code's are the reference executor's, bit for bit; the compiled code is
 * in use once ag_jit_wait returns. */
static void test_async_cpu_identical_results(void **state)
{
    (void)state;
    ag_tensor x = input(8);
    ag_tensor want = expected(x, 60);
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_set_target("cpu");
    int codes = cg_live_codes();
    ag_tensor first = call(&chain__desc, x, 60);
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    cpu_caller c[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i] = (cpu_caller){.x = x, .want = want};
        pthread_create(&t[i], NULL, call_cpu_chain, &c[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].wrong, 0);
    }
    ag_jit_wait();
    assert_int_equal(cg_live_codes(), codes + 1);
    ag_tensor later = call(&chain__desc, x, 60);
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    assert_same_bits(first, want);
    assert_same_bits(later, want);
}

/* A child forked while a compile runs has no compile thread: its calls
 * run on the reference executor, ag_jit_wait does not wait for the
 * parent's compile, and a new signature compiles on a thread of its own. */
static void test_fork_while_compiling(void **state)
{
    (void)state;
    reset_gated();
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_tensor x = input(2);
    ag_tensor want = expected(x, 31);
    ag_set_target("gated");
    set_gate(false);
    ag_free(call(&chain__desc, x, 31));
    wait_compiling();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        ag_tensor y = call(&chain__desc, x, 31);
        ag_jit_wait(); /* the parent's compile is not the child's */
        bool ok = !ag_is_error(y) && memcmp(ag_data(y), ag_data(want), 4 * sizeof(float)) == 0 &&
                  atomic_load(&runs) == 0;
#ifndef __SANITIZE_THREAD__ /* TSan refuses new threads after a multi-threaded fork */
        set_gate(true); /* the child's own compile must not wait for the parent's gate */
        ag_free(call(&chain__desc, x, 32));
        ag_jit_wait();
        ok = ok && atomic_load(&compiled) == 1;
#endif
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_true(waitpid(pid, &status, 0) == pid);
    set_gate(true);
    ag_jit_wait();
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ----------------------------------------------------------- shutdown */

static void *open_gate_later(void *arg)
{
    (void)arg;
    usleep(100 * 1000);
    set_gate(true);
    return NULL;
}

/* ag_shutdown while the gated compile is blocked: it cancels what is
 * queued, waits for the running compile (which a thread lets go), and
 * frees everything, the code made meanwhile too. */
static void test_shutdown_while_compiling(void **state)
{
    (void)state;
    ag_set_error_mode(AG_ERRORS_RETURN);
    reset_gated();
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_set_target("gated");
    set_gate(false);
    ag_tensor x = input(2);
    ag_free(call(&chain__desc, x, 21)); /* running, blocked */
    wait_compiling();
    ag_free(call(&chain__desc, x, 22)); /* queued */
    pthread_t t;
    pthread_create(&t, NULL, open_gate_later, NULL);
    ag_shutdown();
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&compiled), 1); /* the queued one was cancelled */
    assert_int_equal(atomic_load(&alive), 0);
    assert_int_equal(ag_function_concrete_count(NULL), 0);
    ag_set_target(NULL);
}

/* ag_shutdown while LLVM compiles a large graph for the cpu target: no
 * crash, no leak (the ASan build checks), no code left. */
static void test_shutdown_while_cpu_compiles(void **state)
{
    (void)state;
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_set_jit_policy(AG_JIT_ASYNC);
    ag_set_target("cpu");
    ag_tensor y = call(&chain__desc, input(8), 300);
    assert_false(ag_is_error(y));
    ag_shutdown();
    assert_int_equal(cg_live_codes(), 0);
    assert_int_equal(ag_function_concrete_count(NULL), 0);
    ag_set_target(NULL);
    ag_set_jit_policy(AG_JIT_FROM_ENV);
}

/* ------------------------------------------------------------ profile */

/* The child: chain on cpu three times, chain_ref on reference twice, then
 * exit with or without ag_shutdown (argv[2]). */
static int profile_child(const char *how)
{
    ag_set_jit_policy(AG_JIT_SYNC);
    ag_tensor x = input(3);
    for (int i = 0; i < 3; i++)
        call(&chain__desc, x, 4);
    ag_set_target("reference");
    for (int i = 0; i < 2; i++)
        call(&chain_ref__desc, x, 4);
    if (strcmp(how, "shutdown") == 0)
        ag_shutdown();
    exit(0);
}

/* Runs this binary as the child with AG_PROFILE=1 and returns its
 * stderr (free it). */
static char *run_profile_child(const char *how)
{
    char path[] = "/tmp/ag_profile_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    setenv("AG_PROFILE", "1", 1);
    rt_config_reload_env();
    char *argv[] = {"test_tiered", "--profile-child", (char *)how, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ), 0);
    unsetenv("AG_PROFILE");
    rt_config_reload_env();
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    posix_spawn_file_actions_destroy(&fa);
    char *text = calloc(1, 8192);
    assert_true(pread(fd, text, 8191, 0) > 0);
    close(fd);
    unlink(path);
    return text;
}

static void check_profile(const char *text)
{
    const char *header = strstr(text, "AG_PROFILE: 2 AG_FUNCTIONs");
    if (!header)
        fail_msg("no profile in:\n%s", text);
    assert_non_null(strstr(header, "trace+passes"));
    long long calls;
    int traces;
    double total, mean, trace_ms, compile_ms;
    const char *cpu = strstr(header, "\nchain ");
    const char *ref = strstr(header, "\nchain_ref ");
    assert_non_null(cpu);
    assert_non_null(ref);
    assert_int_equal(sscanf(cpu, " chain %lld %lf %lf %d %lf %lf", &calls, &total, &mean,
                            &traces, &trace_ms, &compile_ms), 6);
    assert_int_equal(calls, 3);
    assert_int_equal(traces, 1);
    assert_true(total > 0 && mean > 0 && trace_ms > 0 && compile_ms > 0);
    assert_int_equal(sscanf(ref, " chain_ref %lld %lf %lf %d", &calls, &total, &mean, &traces),
                     4);
    assert_int_equal(calls, 2);
}

/* AG_PROFILE=1 prints the table at ag_shutdown, and at exit without it. */
static void test_profile_at_exit(void **state)
{
    (void)state;
    char *at_shutdown = run_profile_child("shutdown");
    check_profile(at_shutdown);
    free(at_shutdown);
    char *at_exit = run_profile_child("exit");
    check_profile(at_exit);
    free(at_exit);
}

/* A background compile's time counts, with the calls made meanwhile. */
static void test_profile_row_of_a_background_compile(void **state)
{
    (void)state;
    fn_profile p;
    memset(&p, 0, sizeof p);
    atomic_store(&p.traces, 1);
    atomic_store(&p.timing.trace_ns, 2000000);
    atomic_store(&p.timing.compile_ns, 1500000000);
    atomic_store(&p.timing.background, 1);
    fn_profile_call(&p, 4000000, true);
    fn_profile_call(&p, 1000000, false);
    const char *names[1] = {"f"};
    const fn_profile *profiles[1] = {&p};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    fn_profile_print(out, names, profiles, 1);
    fclose(out);
    assert_non_null(strstr(text, "AG_PROFILE: 1 AG_FUNCTION, "));
    assert_non_null(strstr(text, "f                               2       5.000      2.5000       1"
                                 "         2.000   1500.000 (1 in the background; 1 call "
                                 "meanwhile on reference)"));
    free(text);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--profile-child") == 0)
        return profile_child(argv[2]);
    alarm(300); /* a call that waits for the shut gate would hang: fail instead */
    assert_true(tgt_register(&gated));
    const struct CMUnitTest tests[] = {
        TU_TEST(test_policy_from_environment),
        TU_TEST(test_sync_compiles_at_the_first_call),
        TU_TEST(test_auto_by_graph_size),
        TU_TEST(test_async_threads_while_compiling),
        TU_TEST(test_async_compile_failure_falls_back),
        TU_TEST(test_eviction_while_compiling),
        TU_TEST(test_async_cpu_identical_results),
        TU_TEST(test_fork_while_compiling),
        cmocka_unit_test(test_profile_at_exit),
        cmocka_unit_test(test_profile_row_of_a_background_compile),
        /* last: they shut the runtime down */
        cmocka_unit_test(test_shutdown_while_compiling),
        cmocka_unit_test(test_shutdown_while_cpu_compiles),
    };
    TU_RUN(tests);
}
