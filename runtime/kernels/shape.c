/* shape.c - placeholder until this kernel family is written. */
#include "../core/op_decls.h"

RT_SHAPE_RULE(rt_sh_reshape)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_transpose)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_concat)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_stack)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_slice)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_gather)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_expand_dims)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_squeeze)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_shape_of)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_one_hot)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reshape)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_transpose)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_concat)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_stack)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_slice)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_gather)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_shape_of)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_size)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_one_hot)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}
