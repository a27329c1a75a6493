/*
 * staged_util.h - helpers for tests written in the form agc generates.
 *
 * AG_TEST_FUNCTION declares what agc emits for an AG_FUNCTION: a
 * descriptor, a trace trampoline calling the staged body, and a wrapper
 * that calls the runtime. The staged bodies themselves are written out by
 * hand in each test, in agc's output form (lifted bodies over a state
 * struct, ag_if_at / ag_while_at).
 */
#ifndef STAGED_UTIL_H
#define STAGED_UTIL_H

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

/* Captures everything ag_print writes while `body` runs into a string. */
typedef struct captured {
    char *text;
    size_t len;
} captured;

static inline FILE *capture_begin(captured *c)
{
    c->text = NULL;
    c->len = 0;
    FILE *f = open_memstream(&c->text, &c->len);
    ag_set_print_stream(f);
    return f;
}

static inline char *capture_end(FILE *f)
{
    ag_set_print_stream(NULL);
    fclose(f);
    return NULL;
}

#define CAPTURE(out_str, body)                 \
    do {                                       \
        captured c_;                           \
        FILE *f_ = capture_begin(&c_);         \
        body;                                  \
        capture_end(f_);                       \
        (out_str) = c_.text;                   \
    } while (0)

/* Runs `call` eagerly and staged, asserting both print the same text and
 * return the same values; the printed text is returned (free it). */
static inline char *tu_both_ways(ag_tensor (*call)(void), int line)
{
    char *eager = NULL, *staged = NULL;
    ag_tensor re = {0, 0}, rs = {0, 0};
    ag_run_functions_eagerly(true);
    CAPTURE(eager, re = call());
    ag_run_functions_eagerly(false);
    CAPTURE(staged, rs = call());
    if (strcmp(eager, staged) != 0)
        fail_msg("line %d: eager printed\n%s\nstaged printed\n%s", line, eager, staged);
    if (!ag_is_error(re) || !ag_is_error(rs)) {
        if (ag_is_error(re) || ag_is_error(rs))
            fail_msg("line %d: only one run failed: %s", line, ag_last_error());
        if (ag_dtype_of(re) != ag_dtype_of(rs) ||
            !ag_shape_equal(ag_shape_get(re), ag_shape_get(rs)))
            fail_msg("line %d: eager and staged results differ in type", line);
        for (int64_t i = 0; i < ag_num_elements(re); i++)
            if (ag_get_f64(re, i) != ag_get_f64(rs, i))
                fail_msg("line %d: element %lld: eager %g, staged %g", line, (long long)i,
                         ag_get_f64(re, i), ag_get_f64(rs, i));
    }
    free(staged);
    return eager;
}
#define BOTH_WAYS(call) tu_both_ways((call), __LINE__)

#define AG_TEST_DESC(fname, nparams, names, kinds, sig, nout, trampoline) \
    static const ag_function_desc fname##__desc = {                      \
        #fname, __FILE__, __LINE__, nparams, names, kinds, sig, NULL, nout, trampoline, 0}

static const ag_arg_kind K_T[] = {AG_ARG_TENSOR};
static const ag_arg_kind K_TT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR};
static const ag_arg_kind K_TI[] = {AG_ARG_TENSOR, AG_ARG_INT};
static const ag_arg_kind K_V[] = {AG_ARG_VARIABLE};
static const char *const N_X[] = {"x"};
static const char *const N_N[] = {"n"};
static const char *const N_XY[] = {"x", "y"};
static const char *const N_V[] = {"v"};

static inline ag_arg targ(ag_tensor t)
{
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = t};
    return a;
}

#endif
