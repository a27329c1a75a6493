/* ops.c - the op table, instantiated from ops.def. */
#include "op_decls.h"

#include <string.h>

const rt_op_info rt_ops[RT_OP_COUNT] = {
#define X(id, name, arity, attrs, flags, dtype_fn, shape_fn, kernel) \
    [RT_OP_##id] = {name, arity, attrs, flags, dtype_fn, shape_fn, kernel},
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
