/*
 * signature.h - input signatures as text (prefix ir_spec): what
 * AG_SIGNATURE, ag_get_concrete_function and agc --signature take.
 *
 *   "f32[?,10], i32[], y=3"
 *
 * Tensor entries describe the tensor parameters in order (`?` is an
 * unknown dim); `name=value` entries give C scalar parameters by name.
 * The function cache, agc and the runtime of ahead-of-time objects all
 * parse signatures with this one parser.
 */
#ifndef IR_SIGNATURE_H
#define IR_SIGNATURE_H

#include "rt.h"

#define IR_SPEC_MAX_ENTRIES 64

/* One entry of a signature text: a tensor spec, or `name=value`. */
typedef struct ir_spec_entry {
    bool is_scalar_value;
    ag_dtype dtype;
    ag_shape shape;
    char name[64];
    int64_t i;
    double f;
    bool is_integer; /* the value is an integer literal (i is exact) */
} ir_spec_entry;

typedef struct ir_spec {
    int n;
    ir_spec_entry entries[IR_SPEC_MAX_ENTRIES];
} ir_spec;

/* Parses "f32[?,10], i32[], y=3"; false with a message in err. */
bool ir_spec_parse(const char *text, ir_spec *out, char *err, size_t errlen);
/* Whether an actual shape matches a spec shape (-1 dims match any). */
bool ir_spec_shape_matches(const ag_shape *spec, const ag_shape *actual);
/* "f32[?,10]" */
char *ir_spec_type_str(ag_dtype dt, const ag_shape *s, char *buf, size_t n);

#endif
