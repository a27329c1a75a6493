/* ops.c - the op table, instantiated from ops.def. */
#include "op_decls.h"

#include <string.h>

/* The elementwise column is a form and a domain (see ops.def): the form
 * says whether the op is elementwise, the domain becomes rt_domain. */
#define EW_FLAGS(form, domain) EW_FLAGS_##form
#define EW_FLAGS_NONE 0
#define EW_FLAGS_SAME RT_F_ELEMENTWISE
#define EW_FLAGS_CMP RT_F_ELEMENTWISE
#define EW_FLAGS_OWN RT_F_ELEMENTWISE
#define EW_DOMAIN(form, domain) RT_DOM_##domain
/* The gradient column is a kind and a rule (see ops.def). */
#define GRAD_KIND(kind, fn) RT_GRAD_##kind
#define GRAD_FN(kind, fn) GRAD_FN_##kind(fn)
#define GRAD_FN_RULE(fn) fn
#define GRAD_FN_NONE(fn) NULL
#define GRAD_FN_MISSING(fn) NULL

const rt_op_info rt_ops[RT_OP_COUNT] = {
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    [RT_OP_##id] = {#name, arity, attrs, (flags) | EW_FLAGS(elem), cost, EW_DOMAIN(elem), \
                    dtype_fn, shape_fn, kernel, GRAD_KIND(grad), GRAD_FN(grad)},
#include "ops.def"
#undef X
};

bool rt_op_from_name(const char *name, rt_op *out)
{
    for (int i = 0; i < RT_OP_COUNT; i++) {
        if (strcmp(rt_ops[i].name, name) == 0) {
            *out = (rt_op)i;
            return true;
        }
    }
    return false;
}
