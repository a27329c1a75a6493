/*
 * profile.c - AG_PROFILE's table of AG_FUNCTIONs at exit (profile.h).
 *
 *   AG_PROFILE: 2 AG_FUNCTIONs, wall-clock milliseconds, busiest first
 *   function        calls   run total    run mean  traces  trace+passes    compile
 *   chain              10      12.345       1.234       1        40.100   12840.551 (1 in the background; 3 calls meanwhile on reference)
 *
 * "compile" is the target's (LLVM's for cpu); a compile in the
 * background (tiered execution, ag_set_jit_policy) counts whole, though
 * the calls did not wait for it.
 */
#include "profile.h"

#include "words.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t fn_profile_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The setting profile in force at exit (AG_PROFILE): the table covers
 * the whole process, not one compile. */
bool fn_profile_enabled(void)
{
    const rt_config *c = rt_config_get();
    bool on = rt_config_on(c, RT_CFG_PROFILE);
    rt_config_release(c);
    return on;
}

void fn_profile_call(fn_profile *p, int64_t ns, bool interim)
{
    atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->run_ns, ns, memory_order_relaxed);
    if (interim)
        atomic_fetch_add_explicit(&p->interim, 1, memory_order_relaxed);
}

typedef struct row {
    const char *name;
    long long calls, interim;
    int traces, background;
    double run_ms, trace_ms, compile_ms;
} row;

static row row_of(const char *name, const fn_profile *p)
{
    /* the counters are only read: casts for atomic_load's non-const
     * parameter in C11 */
    fn_profile *q = (fn_profile *)p;
    return (row){.name = name,
                 .calls = atomic_load(&q->calls),
                 .interim = atomic_load(&q->interim),
                 .traces = atomic_load(&q->traces),
                 .background = atomic_load(&q->timing.background),
                 .run_ms = (double)atomic_load(&q->run_ns) / 1e6,
                 .trace_ms = (double)atomic_load(&q->timing.trace_ns) / 1e6,
                 .compile_ms = (double)atomic_load(&q->timing.compile_ns) / 1e6};
}

static int busiest_first(const void *a, const void *b)
{
    const row *x = a, *y = b;
    double tx = x->run_ms + x->trace_ms + x->compile_ms;
    double ty = y->run_ms + y->trace_ms + y->compile_ms;
    return (tx < ty) - (tx > ty);
}

static void print_row(FILE *out, const row *r)
{
    fprintf(out, "%-24s %8lld %11.3f %11.4f %7d %13.3f %10.3f", r->name, r->calls, r->run_ms,
            r->calls ? r->run_ms / (double)r->calls : 0.0, r->traces, r->trace_ms,
            r->compile_ms);
    if (r->background)
        fprintf(out, " (%d in the background; %lld %s meanwhile on reference)",
                r->background, r->interim, sw_plural(r->interim, "call", "calls"));
    fputc('\n', out);
}

void fn_profile_print(FILE *out, const char *const *names, const fn_profile *const *profiles,
                      int n)
{
    row *rows = rt_xcalloc((size_t)n + 1, sizeof *rows);
    int k = 0;
    for (int i = 0; i < n; i++) {
        rows[k] = row_of(names[i], profiles[i]);
        k += rows[k].calls > 0 || rows[k].traces > 0;
    }
    qsort(rows, (size_t)k, sizeof *rows, busiest_first);
    fprintf(out, "AG_PROFILE: %d %s, wall-clock milliseconds, busiest first\n", k,
            sw_plural(k, "AG_FUNCTION", "AG_FUNCTIONs"));
    fprintf(out, "%-24s %8s %11s %11s %7s %13s %10s\n", "function", "calls", "run total",
            "run mean", "traces", "trace+passes", "compile");
    for (int i = 0; i < k; i++)
        print_row(out, &rows[i]);
    free(rows);
}
