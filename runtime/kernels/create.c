/* create.c - constants and creation ops: const, fill, eye, range, random_uniform. */
#include "../core/op_decls.h"

#include <string.h>

/* Sets every element of v to x (converted to v's dtype once). */
void rt_fill(rt_value *v, double x)
{
    size_t esize = rt_dtype_size(v->dtype);
    if (v->numel == 0)
        return;
    rt_store_f64(v->dtype, v->data, 0, x);
    for (int64_t i = 1; i < v->numel; i++)
        memcpy((char *)v->data + (size_t)i * esize, v->data, esize);
}

RT_SHAPE_RULE(rt_sh_eye)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_range)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_const)
{
    (void)in, (void)n, (void)e;
    memcpy(out->data, a->literal->data, rt_value_bytes(out));
    return true;
}

RT_KERNEL(rt_k_fill)
{
    (void)in, (void)n, (void)e;
    rt_fill(out, a->value);
    return true;
}

RT_KERNEL(rt_k_fill_like)
{
    (void)in, (void)n, (void)e;
    rt_fill(out, a->value);
    return true;
}

RT_KERNEL(rt_k_eye)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_range)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_random_uniform)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}
