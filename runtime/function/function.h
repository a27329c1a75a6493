/*
 * function.h - AG_FUNCTIONs at run time (prefix fn_): the function cache,
 * concrete functions per input signature, and signatures.
 */
#ifndef FN_FUNCTION_H
#define FN_FUNCTION_H

#include "ir.h"
#include "rt.h"

#define FN_MAX_PARAMS 64

/* One entry of a signature text: a tensor spec, or `name=value`. */
typedef struct fn_spec_entry {
    bool is_scalar_value;
    ag_dtype dtype;
    ag_shape shape;
    char name[64];
    int64_t i;
    double f;
} fn_spec_entry;

typedef struct fn_spec {
    int n;
    fn_spec_entry entries[FN_MAX_PARAMS];
} fn_spec;

/* Parses "f32[?,10], i32[], y=3"; false with a message in err. */
bool fn_parse_spec(const char *text, fn_spec *out, char *err, size_t errlen);
/* Whether an actual shape matches a spec shape (-1 dims match any). */
bool fn_shape_matches(const ag_shape *spec, const ag_shape *actual);
char *fn_type_str(ag_dtype dt, const ag_shape *s, char *buf, size_t n);

/* Traces (without optimizing, compiling or caching) the graph of the
 * AG_FUNCTION `name` for a signature "f32[2,?], n=3" that gives every
 * parameter: what agc does at build time (--emit=ir, --emit=obj). The
 * caller owns the graph; *desc (if not NULL) gets the function's
 * descriptor. NULL after reporting an error at loc. */
ir_function *fn_trace_spec(ag_loc loc, const char *name, const char *spec,
                           const ag_function_desc **desc);

#endif
