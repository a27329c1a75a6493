/*
 * bench_cache.c - the persistent compilation cache (AG_CACHE_DIR): the
 * first call of a large function in a cold process (empty cache: LLVM
 * compiles, the entry is written) against a warm one (the entry is
 * loaded), each a fresh process, as a user's second run of a program is.
 *
 * The function is issue 12's first-call example: n unrolled steps of
 * x = softmax(transpose(x) + i, 0) on an 8x8 f32, about 3n nodes. Each
 * process (this program again, with --child) traces it, compiles it and
 * calls it once, and reports: the first call's time (trace, passes,
 * compile, run), the time the cpu target's compile took (the cache's own
 * account, cg_cache_get_stats), whether LLVM ran, and a checksum of the
 * result, which must be the same warm, cold and without a cache. A third
 * process without a cache shows what a miss costs over the plain JIT
 * (writing the object and the entry). Pairs of processes are
 * timed `ROUNDS` times, each cold one with a new empty directory; the
 * figures are medians. Goal (issue 12): warm compile <= 5% of cold.
 */
#define _GNU_SOURCE

#include "bench_util.h"
#include <ag.h>

#include "cache.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { STEPS = 400, ROUNDS = 3 };

/* ------------------------------------------------------------ the child */

static void chain_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    for (int i = 0; i < (int)a[1].i; i++)
        x = ag_softmax(ag_add(ag_transpose(x, 1, 0), (float)i), 0);
    o[0] = x;
}

static const ag_arg_kind chain_kinds[] = {AG_ARG_TENSOR, AG_ARG_INT};
static const char *const chain_names[] = {"x", "n"};
static const ag_function_desc chain_desc = {
    "chain", __FILE__, __LINE__, 2, chain_names, chain_kinds, NULL, NULL, 1, chain_trace, 0};

/* What one process measured. */
typedef struct report {
    double first_call; /* s */
    double compile;    /* s, in the cpu target */
    long llvm;         /* compiles LLVM ran */
    long hits;
    double checksum;
} report;

static int child(const char *dir, int steps)
{
    ag_set_cache_dir(strcmp(dir, "-") == 0 ? "" : dir); /* "-": no cache */
    /* the first call waits for the compile, whatever its size: a graph
     * this large would otherwise compile in the background (AG_JIT=auto),
     * and the first call would time the reference executor */
    ag_set_jit_policy(AG_JIT_SYNC);
    float data[64];
    for (int i = 0; i < 64; i++)
        data[i] = (float)((i * 29) % 13) / 13.0f;
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(8, 8), data), out;
    ag_arg args[2] = {{.kind = AG_ARG_TENSOR, .tensor = x}, {.kind = AG_ARG_INT, .i = steps}};
    double t0 = bench_now_s();
    bool ok = ag_function_call_at(AG_HERE, &chain_desc, args, &out);
    double first = bench_now_s() - t0;
    if (!ok)
        return 1;
    const float *r = ag_data(out);
    double sum = 0;
    for (int i = 0; i < 64; i++)
        sum += (double)r[i] * (i + 1);
    cg_cache_stats s = cg_cache_get_stats();
    printf("%.9f %.9f %ld %ld %.17g\n", first, s.compile_seconds, s.llvm_compiles, s.hits, sum);
    ag_shutdown();
    return 0;
}

/* ----------------------------------------------------------- the parent */

static bool run_child(const char *self, const char *dir, report *r)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' --child '%s' %d", self, dir, STEPS);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    int n = fscanf(p, "%lf %lf %ld %ld %lf", &r->first_call, &r->compile, &r->llvm, &r->hits,
                   &r->checksum);
    return pclose(p) == 0 && n == 5;
}

static void print_ms(const char *what, double s) { printf("  %-44s %10.2f ms\n", what, s * 1e3); }

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child(argv[2], atoi(argv[3]));
    char *cpu = LLVMGetHostCPUName();
    printf("host CPU: %s (LLVM's name; the JIT compiles for it), vector ISA %s\n\n", cpu,
           bench_vector_isa());
    LLVMDisposeMessage(cpu);
    printf("compilation cache: first call of a %d-step chain (about %d nodes), "
           "cold vs warm process\n", STEPS, 3 * STEPS);

    double cold_first[ROUNDS], warm_first[ROUNDS], cold_c[ROUNDS], warm_c[ROUNDS],
        plain_first[ROUNDS];
    bool right = true;
    for (int i = 0; i < ROUNDS; i++) {
        char dir[64] = "/tmp/agc_bench_cache_XXXXXX";
        if (!mkdtemp(dir))
            return 1;
        report cold, warm, plain;
        if (!run_child(argv[0], dir, &cold) || !run_child(argv[0], dir, &warm) ||
            !run_child(argv[0], "-", &plain)) {
            fprintf(stderr, "a child process failed\n");
            return 1;
        }
        /* cold: LLVM ran, nothing loaded; warm: loaded, LLVM idle; same result */
        right = right && cold.llvm == 1 && cold.hits == 0 && warm.llvm == 0 && warm.hits == 1 &&
                cold.checksum == warm.checksum && plain.checksum == cold.checksum;
        cold_first[i] = cold.first_call, warm_first[i] = warm.first_call;
        cold_c[i] = cold.compile, warm_c[i] = warm.compile;
        plain_first[i] = plain.first_call;
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0)
            return 1;
    }
    double cf = bench_median(cold_first, ROUNDS), wf = bench_median(warm_first, ROUNDS);
    double cc = bench_median(cold_c, ROUNDS), wc = bench_median(warm_c, ROUNDS);
    double pf = bench_median(plain_first, ROUNDS);
    print_ms("cold: compile (LLVM, entry written)", cc);
    print_ms("warm: compile (entry loaded)", wc);
    printf("  %-44s %10.2f %%\n", "warm / cold compile", 100 * wc / cc);
    print_ms("cold: first call (trace + passes + compile)", cf);
    print_ms("warm: first call", wf);
    printf("  %-44s %10.2f %%\n", "warm / cold first call", 100 * wf / cf);
    print_ms("no cache: first call", pf);
    printf("  %-44s %10.2f %%\n", "cold / no cache first call (a miss's cost)", 100 * cf / pf);
    printf("  %-44s %s\n", "same results; LLVM not in the warm process", right ? "yes" : "NO");
    bool met = wc <= 0.05 * cc && right;
    printf("  goal: %-50s %s\n", "warm compile <= 5% of cold", met ? "PASS" : "MISS");
    return met ? 0 : 1;
}
