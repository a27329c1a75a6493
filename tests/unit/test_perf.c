/*
 * test_perf.c - AG_PERF=1 (backend/cpu/cg_jit.c): the JIT links through
 * RuntimeDyld with LLVM's perf JIT event listener, compiled code still
 * runs and gives the reference executor's results, and the listener's
 * jitdump file names the code after its AG_FUNCTION, outlined loops
 * included. perf itself (which needs privileges) is not run: the dump is
 * what `perf inject --jit` reads.
 *
 * AG_PERF is read once, when the JIT is made, so main sets it (and
 * JITDUMPDIR, a fresh directory) before anything compiles.
 */
#include "staged_util.h"

#include "cg.h"

#include <dirent.h>
#include <unistd.h>

static char dump_dir[] = "/tmp/ag_perf_XXXXXX";

/* tanh(x) * 2 + x: one fused loop, outlined and split across threads on
 * a tensor this large */
static void scaled__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    o[0] = ag_add(ag_mul(ag_tanh(x), 2), x);
}
AG_TEST_DESC(scaled, 1, N_X, K_T, NULL, 1, scaled__trace);
AG_TEST_DESC(scaled_ref, 1, N_X, K_T, NULL, 1, scaled__trace);

static ag_tensor call(const ag_function_desc *d, ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

/* The jitdump file LLVM's listener writes for this process:
 * <dir>/.debug/jit/llvm-IR-jit-<date>-<random>/jit-<pid>.dump. */
static char *find_dump(void)
{
    char jit[512], name[64];
    snprintf(jit, sizeof jit, "%s/.debug/jit", dump_dir);
    snprintf(name, sizeof name, "jit-%d.dump", (int)getpid());
    DIR *d = opendir(jit);
    if (!d)
        return NULL;
    char *found = NULL;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s", jit, e->d_name, name);
        if (access(path, R_OK) == 0)
            found = strdup(path);
    }
    closedir(d);
    return found;
}

/* Whether the file holds `text` (the dump's records carry names as C
 * strings). */
static bool file_holds(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t k = strlen(text);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, text, k) == 0)
            return true;
    return false;
}

static void test_perf_listener_and_results(void **state)
{
    (void)state;
    assert_true(cg_perf_enabled());
    enum { N = 1 << 17 }; /* above the threshold for parallel loops */
    float *data = malloc(N * sizeof *data);
    for (int i = 0; i < N; i++)
        data[i] = (float)(i % 1000) / 250.0f - 2.0f;
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(N), data);
    free(data);
    ag_set_target("cpu");
    int codes = cg_live_codes();
    ag_tensor y = call(&scaled__desc, x);
    assert_int_equal(cg_live_codes(), codes + 1); /* compiled, not fallen back */
    ag_set_target("reference");
    ag_tensor want = call(&scaled_ref__desc, x);
    ag_set_target(NULL);
    assert_memory_equal(ag_data(y), ag_data(want), N * sizeof(float));

    char *dump = find_dump();
    if (!dump)
        fail_msg("no jitdump file under %s/.debug/jit", dump_dir);
    assert_true(file_holds(dump, "agc_scaled_"));
    assert_true(file_holds(dump, ".loop0")); /* the outlined loop, named after its function */
    free(dump);
}

int main(void)
{
    assert_non_null(mkdtemp(dump_dir));
    setenv("AG_PERF", "1", 1);
    rt_config_reload_env();
    setenv("JITDUMPDIR", dump_dir, 1);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_perf_listener_and_results),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ag_shutdown();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dump_dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
