/*
 * op_decls.h - prototypes of every dtype rule, shape rule and kernel that
 * ops.def names, so that the table and each kernel file agree on them.
 */
#ifndef RT_OP_DECLS_H
#define RT_OP_DECLS_H

#include "rt.h"

#define RT_DTYPE_RULE(f) bool f(const rt_attrs *a, rt_value *const *in, int n, \
                                ag_dtype *out, rt_err *e)
#define RT_SHAPE_RULE(f) bool f(const rt_attrs *a, rt_value *const *in, int n, \
                                ag_shape *out, rt_err *e)
#define RT_KERNEL(f) bool f(const rt_attrs *a, rt_value *const *in, int n, \
                            rt_value *out, rt_err *e)

#define RT_GRAD_RULE(f) bool f(struct rt_grad_args *g)
#define GRAD_DECL(kind, fn) GRAD_DECL_##kind(fn)
#define GRAD_DECL_RULE(fn) RT_GRAD_RULE(fn);
#define GRAD_DECL_NONE(fn)
#define GRAD_DECL_MISSING(fn)

#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    RT_DTYPE_RULE(dtype_fn);                                                     \
    RT_SHAPE_RULE(shape_fn);                                                     \
    RT_KERNEL(kernel);                                                           \
    GRAD_DECL(grad)
#include "ops.def"
#undef X

#endif
