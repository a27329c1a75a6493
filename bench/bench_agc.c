/*
 * bench_agc.c - how long agc takes to convert a realistic file.
 *
 *   bench_agc [AGC INPUT.c CC INCLUDE_DIR]
 *
 * INPUT.c is written by bench/gen_agc_input.py (the `bench_agc_run` target
 * makes it in the build tree): about 2,000 lines with 50 AG_FUNCTIONs
 * mixing every staged construct. The figure is the wall time of the whole
 * `agc INPUT.c -o OUTPUT` process (libclang's parse of the file and its
 * headers included), the median of RUNS runs after one warm-up, held to
 * the goal of under one second. The run also checks that every conversion
 * succeeded and that the output compiles with CC -std=c11 -Wall -Wextra
 * -Werror -fsyntax-only: the figure of a conversion that failed would be
 * meaningless. Exit status 1 when a check fails (not when the goal is
 * missed: timing depends on the machine's load).
 *
 * Without arguments it uses the paths CMake compiled in.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench_util.h"
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#ifndef BENCH_AGC
#define BENCH_AGC "agc"
#endif
#ifndef BENCH_AGC_INPUT
#define BENCH_AGC_INPUT "agc_input.c"
#endif
#ifndef BENCH_AGC_CC
#define BENCH_AGC_CC "cc"
#endif
#ifndef BENCH_AGC_INCLUDE
#define BENCH_AGC_INCLUDE "."
#endif

enum { RUNS = 9 };
static const double goal_s = 1.0;

extern char **environ;

/* Runs argv with stderr sent to err_path; returns its exit status, or -1
 * when it could not start or died of a signal. */
static int run(char *const argv[], const char *err_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "bench_agc: cannot run %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void show_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n++ < 20)
        fputs(line, stderr);
    fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Lines and AG_FUNCTION definitions (lines that start with it). */
static void count(const char *path, int *lines, int *functions)
{
    *lines = *functions = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        (*lines)++;
        *functions += strncmp(line, "AG_FUNCTION", 11) == 0;
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 1 && argc != 5) {
        fprintf(stderr, "usage: %s [AGC INPUT.c CC INCLUDE_DIR]\n", argv[0]);
        return 2;
    }
    const char *agc = argc > 1 ? argv[1] : BENCH_AGC;
    const char *input = argc > 1 ? argv[2] : BENCH_AGC_INPUT;
    const char *cc = argc > 1 ? argv[3] : BENCH_AGC_CC;
    const char *include = argc > 1 ? argv[4] : BENCH_AGC_INCLUDE;

    char output[4096], errors[4096], include_flag[4096];
    snprintf(output, sizeof output, "%s.ag.c", input);
    snprintf(errors, sizeof errors, "%s.stderr", input);
    snprintf(include_flag, sizeof include_flag, "-I%s", include);

    int lines, functions;
    count(input, &lines, &functions);
    if (lines == 0) {
        fprintf(stderr, "bench_agc: cannot read %s (make it with bench/gen_agc_input.py)\n",
                input);
        return 1;
    }
    printf("agc converting %s: %d lines, %d AG_FUNCTIONs\n", input, lines, functions);

    char *convert[] = {(char *)agc, "-fno-color-diagnostics", (char *)input, "-o", output, NULL};
    double times[RUNS];
    for (int i = -1; i < RUNS; i++) { /* run -1 warms the caches up */
        double t0 = bench_now_s();
        int status = run(convert, errors);
        double t = bench_now_s() - t0;
        if (status != 0) {
            fprintf(stderr, "bench_agc: agc failed (status %d) on %s:\n", status, input);
            show_file(errors);
            return 1;
        }
        if (i >= 0)
            times[i] = t;
    }
    qsort(times, RUNS, sizeof *times, cmp_double);
    double median = times[RUNS / 2];
    printf("  %-26s %8.3f s   (min %.3f, max %.3f; median of %d runs)   goal < %.0f s   %s\n",
           "agc input.c -o output.c", median, times[0], times[RUNS - 1], RUNS, goal_s,
           median < goal_s ? "PASS" : "MISS");

    char *check[] = {(char *)cc,  "-std=c11", "-Wall",      "-Wextra", "-Werror",
                     "-fsyntax-only", include_flag, output,  NULL};
    int status = run(check, errors);
    count(output, &lines, &functions);
    printf("  %-26s %8d lines, %s -Wall -Wextra -Werror: %s\n", "its output", lines, cc,
           status == 0 ? "compiles" : "DOES NOT COMPILE");
    if (status != 0) {
        show_file(errors);
        return 1;
    }
    return 0;
}
