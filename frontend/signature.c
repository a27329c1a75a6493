/*
 * signature.c - AG_SIGNATURE checked when agc converts, with the parser
 * that the function cache uses at the first call (ir/signature.c), so a
 * signature that cannot be parsed, or that does not describe the
 * function's parameters, is an error at the signature's line rather than
 * at the first call of a program built from it.
 */
#include "fe.h"
#include "signature.h"
#include "suggest.h"

#include <string.h>

/* Where to point: the signature's string in its AG_SIGNATURE(...). */
static fe_range spec_range(const fe_source *src, const fe_func *fn)
{
    fe_range r = fn->signature_range;
    if (r.end <= r.begin)
        return (fe_range){fn->header.begin, fn->header.begin + 1};
    const char *q = memchr(src->text + r.begin, '"', r.end - r.begin);
    if (q) {
        unsigned b = (unsigned)(q - src->text);
        const char *e = memchr(q + 1, '"', src->text + r.end - (q + 1));
        r = (fe_range){b, e ? (unsigned)(e - src->text) + 1 : b + 1};
    }
    return r;
}

/* "; did you mean 'f32'?" for an unknown dtype close to one (at most a
 * third of its length in edits, as clang's typo correction), else "". */
static const char *dtype_hint(const char *err)
{
    static const char prefix[] = "unknown dtype '";
    if (strncmp(err, prefix, sizeof prefix - 1) != 0)
        return "";
    const char *name = err + sizeof prefix - 1, *end = strchr(name, '\'');
    char typed[32];
    if (!end || end - name >= (long)sizeof typed || end == name)
        return "";
    memcpy(typed, name, (size_t)(end - name));
    typed[end - name] = '\0';
    sg_best best;
    sg_begin(&best, typed);
    for (int i = 0; i < AG_NUM_DTYPES; i++)
        sg_consider(&best, ag_dtype_name((ag_dtype)i));
    return best.name ? fe_format("; did you mean '%s'?", best.name) : "";
}

static int tensor_params(const fe_func *fn)
{
    int n = 0;
    for (int i = 0; i < fn->n_params; i++)
        n += fn->params[i]->tclass == FE_TY_TENSOR;
    return n;
}

static const fe_var *param_named(const fe_func *fn, const char *name)
{
    for (int i = 0; i < fn->n_params; i++)
        if (strcmp(fn->params[i]->name, name) == 0)
            return fn->params[i];
    return NULL;
}

/* A `name=value` entry: it must give a C scalar parameter, an integer one
 * an integer. */
static void check_value(const fe_func *fn, fe_range at, const ir_spec_entry *e)
{
    const fe_var *v = param_named(fn, e->name);
    if (!v || (v->tclass != FE_TY_INT && v->tclass != FE_TY_FLOAT))
        fe_error(at, "AG_SIGNATURE(\"%s\") of '%s' gives a value for '%s', which is not a C "
                     "scalar parameter of '%s'%s", fn->signature, fn->name, e->name, fn->name,
                 v ? "; give a tensor parameter's type as dtype[dims], in order" : "");
    else if (v->tclass == FE_TY_INT && !e->is_integer)
        fe_error(at, "AG_SIGNATURE(\"%s\") of '%s' gives '%s' a value that is not an integer, "
                     "but '%s' is an integer parameter", fn->signature, fn->name, e->name,
                 e->name);
}

void fe_check_signature(const fe_source *src, const fe_func *fn)
{
    if (!fn->signature)
        return;
    fe_range at = spec_range(src, fn);
    ir_spec spec;
    char err[256];
    if (!ir_spec_parse(fn->signature, &spec, err, sizeof err)) {
        fe_error(at, "AG_SIGNATURE(\"%s\") of '%s': %s%s", fn->signature, fn->name, err,
                 dtype_hint(err));
        return;
    }
    int tensors = 0;
    for (int i = 0; i < spec.n; i++) {
        if (spec.entries[i].is_scalar_value)
            check_value(fn, at, &spec.entries[i]);
        else
            tensors++;
    }
    int want = tensor_params(fn);
    if (tensors != want)
        fe_error(at, "AG_SIGNATURE(\"%s\") of '%s' describes %d tensor%s, but '%s' has %d "
                     "tensor parameter%s", fn->signature, fn->name, tensors,
                 tensors == 1 ? "" : "s", fn->name, want, want == 1 ? "" : "s");
}
