/*
 * profile.h - what AG_PROFILE=1 prints at exit (prefix fn_profile_): per
 * AG_FUNCTION, its calls and their wall-clock time, and where its
 * compile time went. The function cache keeps one fn_profile per
 * function and adds to it at every trace and call; every target's calls
 * count (tpu-model's also print their simulated profile per call).
 */
#ifndef FN_PROFILE_H
#define FN_PROFILE_H

#include "pipeline.h"

#include <stdio.h>

typedef struct fn_profile {
    pl_timing timing;        /* traces' and compiles' time (pipeline.c, tiered.c) */
    atomic_llong calls;
    atomic_llong run_ns;     /* the calls' time in the target's code */
    atomic_llong interim;    /* calls run by the reference executor while compiling */
    atomic_int traces;
} fn_profile;

/* AG_PROFILE: any value but empty or 0. */
bool fn_profile_enabled(void);

/* Adds one call that ran for ns nanoseconds (interim: on the reference
 * executor, its target's code still compiling). */
void fn_profile_call(fn_profile *p, int64_t ns, bool interim);

/* Prints the n functions' profiles on out, busiest first (those never
 * traced nor called are left out). */
void fn_profile_print(FILE *out, const char *const *names, const fn_profile *const *profiles,
                      int n);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t fn_profile_now(void);

#endif
