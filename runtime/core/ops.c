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

/* The public name of each op: ag_<name> (ops.def's API_BINARY, API_UNARY
 * and API_OWN rows), or, for an API_OTHER row, what a user calls to make
 * it. An API_OTHER row without its PUBLIC_OF_<ID> below does not compile,
 * so a new op cannot show its internal name in a user's message. */
#define PUBLIC_API_BINARY(id, name) "ag_" #name
#define PUBLIC_API_UNARY(id, name) "ag_" #name
#define PUBLIC_API_OWN(id, name) "ag_" #name
#define PUBLIC_API_OTHER(id, name) PUBLIC_OF_##id
#define PUBLIC_OF_CONST "ag_scalar"
#define PUBLIC_OF_VAR_READ "ag_variable_read"
#define PUBLIC_OF_TA_NEW "ag_tensor_array_new"
#define PUBLIC_OF_TA_WRITE "ag_tensor_array_write"
#define PUBLIC_OF_TA_READ "ag_tensor_array_read"
#define PUBLIC_OF_TA_STACK "ag_tensor_array_stack"
#define PUBLIC_OF_TA_SIZE "ag_tensor_array_size"
/* made by device placement (passes/place.c) for an AG_DEVICE scope,
 * under these names in docs/dsl.md and docs/tpu-model.md */
#define PUBLIC_OF_TO_DEVICE "to_device"
#define PUBLIC_OF_TO_HOST "to_host"
/* made by the gradients of ag_conv2d and ag_gather (grad_rules_nn.c),
 * named after TensorFlow's ops of the same work */
#define PUBLIC_OF_CONV2D_BACKPROP_INPUT "the gradient of ag_conv2d (conv2d_backprop_input)"
#define PUBLIC_OF_CONV2D_BACKPROP_FILTER "the gradient of ag_conv2d (conv2d_backprop_filter)"
#define PUBLIC_OF_UNSORTED_SEGMENT_SUM "the gradient of ag_gather (unsorted_segment_sum)"

static const char *const public_names[RT_OP_COUNT] = {
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    [RT_OP_##id] = PUBLIC_##api(id, name),
#include "ops.def"
#undef X
};

const char *rt_op_public_name(int op)
{
    return op >= 0 && op < RT_OP_COUNT ? public_names[op] : "?";
}

const char *rt_op_listed_name(int op)
{
    const char *pub = rt_op_public_name(op);
    bool own_call = strncmp(pub, "ag_", 3) == 0 && strcmp(pub + 3, rt_ops[op].name) == 0;
    return own_call ? rt_ops[op].name : pub;
}
