/* reduce.c - placeholder until this kernel family is written. */
#include "../core/op_decls.h"

RT_SHAPE_RULE(rt_sh_reduce)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_argmax)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_softmax)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reduce_sum)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reduce_mean)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reduce_max)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reduce_min)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_reduce_prod)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_argmax)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_softmax)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}
