/*
 * signature.c - parsing and matching input signatures.
 *
 * The syntax is the one of AG_SIGNATURE and ag_get_concrete_function:
 *   spec  := entry (',' entry)*
 *   entry := dtype '[' (dim (',' dim)*)? ']'  |  name '=' number
 *   dim   := integer | '?'
 * Tensor entries describe the tensor parameters in order; `name=value`
 * entries give C scalar parameters by name.
 */
#include "signature.h"
#include "suggest.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static bool parse_dims(const char **pp, ag_shape *s, char *err, size_t errlen)
{
    const char *p = skip_space(*pp + 1); /* past '[' */
    s->rank = 0;
    while (*p != ']') {
        if (s->rank == AG_MAX_RANK) {
            snprintf(err, errlen, "more than %d dims", AG_MAX_RANK);
            return false;
        }
        if (*p == '?') {
            s->dims[s->rank++] = -1;
            p++;
        } else if (isdigit((unsigned char)*p)) {
            errno = 0;
            char *end;
            long long d = strtoll(p, &end, 10);
            if (errno || d > INT32_MAX) {
                snprintf(err, errlen, "dim '%.*s' is too large", (int)(end - p), p);
                return false;
            }
            s->dims[s->rank++] = d;
            p = end;
        } else {
            snprintf(err, errlen, "expected a dim (an integer or '?') at '%.10s'", p);
            return false;
        }
        p = skip_space(p);
        if (*p == ',')
            p = skip_space(p + 1);
        else if (*p != ']') {
            snprintf(err, errlen, "expected ',' or ']' at '%.10s'", p);
            return false;
        }
    }
    *pp = p + 1;
    return true;
}

static bool parse_tensor_entry(const char **pp, ir_spec_entry *e, char *err, size_t errlen)
{
    const char *p = *pp;
    char name[16];
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) && n < sizeof name - 1) {
        name[n] = p[n];
        n++;
    }
    name[n] = '\0';
    if (!rt_dtype_from_name(name, &e->dtype)) {
        char hint[64];
        snprintf(err, errlen, "unknown dtype '%s' (expected f32, f64, bf16, i32, i64 "
                              "or bool)%s", name,
                 sg_did_you_mean(rt_dtype_suggest(name), hint, sizeof hint));
        return false;
    }
    p += n;
    if (*p != '[') {
        snprintf(err, errlen, "expected '[' after '%s' (write '%s[]' for a scalar)", name,
                 name);
        return false;
    }
    e->is_scalar_value = false;
    *pp = p;
    return parse_dims(pp, &e->shape, err, errlen);
}

static bool parse_value_entry(const char **pp, ir_spec_entry *e, char *err, size_t errlen)
{
    const char *p = *pp, *eq = strchr(p, '=');
    size_t n = (size_t)(eq - p);
    while (n > 0 && isspace((unsigned char)p[n - 1]))
        n--;
    if (n == 0 || n >= sizeof e->name) {
        snprintf(err, errlen, "expected a parameter name before '='");
        return false;
    }
    memcpy(e->name, p, n);
    e->name[n] = '\0';
    p = skip_space(eq + 1);
    char *end;
    e->f = strtod(p, &end);
    if (end == p) {
        snprintf(err, errlen, "expected a number after '%s='", e->name);
        return false;
    }
    char *iend;
    errno = 0;
    e->i = (int64_t)strtoll(p, &iend, 0);
    /* as in C: 7, -7, 0x1f, 017; not 2.5, 1e3, or out of range */
    e->is_integer = iend == end && errno == 0;
    e->is_scalar_value = true;
    *pp = end;
    return true;
}

bool ir_spec_parse(const char *text, ir_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *p = skip_space(text ? text : "");
    while (*p) {
        if (out->n == IR_SPEC_MAX_ENTRIES) {
            snprintf(err, errlen, "more than %d entries", IR_SPEC_MAX_ENTRIES);
            return false;
        }
        ir_spec_entry *e = &out->entries[out->n++];
        const char *comma_or_end = p + strcspn(p, ",[");
        const char *eq = strchr(p, '=');
        bool is_value = eq && eq < comma_or_end;
        if (!(is_value ? parse_value_entry(&p, e, err, errlen)
                       : parse_tensor_entry(&p, e, err, errlen)))
            return false;
        p = skip_space(p);
        if (*p == ',')
            p = skip_space(p + 1);
        else if (*p) {
            snprintf(err, errlen, "expected ',' at '%.10s'", p);
            return false;
        }
    }
    return true;
}

bool ir_spec_shape_matches(const ag_shape *spec, const ag_shape *actual)
{
    if (spec->rank != actual->rank)
        return false;
    for (int i = 0; i < spec->rank; i++)
        if (spec->dims[i] >= 0 && spec->dims[i] != actual->dims[i])
            return false;
    return true;
}

char *ir_spec_type_str(ag_dtype dt, const ag_shape *s, char *buf, size_t n)
{
    char shape[160];
    snprintf(buf, n, "%s%s", ag_dtype_name(dt), rt_shape_str(s, shape, sizeof shape));
    return buf;
}
