/* linalg.c - placeholder until this kernel family is written. */
#include "../core/op_decls.h"

RT_SHAPE_RULE(rt_sh_matmul)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_SHAPE_RULE(rt_sh_conv2d)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_matmul)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_conv2d)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}
