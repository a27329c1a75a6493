/* elementwise.c - placeholder until this kernel family is written. */
#include "../core/op_decls.h"

RT_KERNEL(rt_k_add)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_sub)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_mul)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_div)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_floordiv)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_mod)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_pow)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_maximum)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_minimum)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_equal)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_not_equal)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_less)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_less_equal)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_greater)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_greater_equal)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_logical_and)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_logical_or)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_logical_not)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_where)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_neg)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_abs)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_exp)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_log)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_sqrt)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_rsqrt)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_square)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_tanh)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_sigmoid)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_relu)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_floor)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_ceil)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_sign)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}

RT_KERNEL(rt_k_cast)
{
    (void)a, (void)in, (void)n, (void)out;
    rt_err_set(e, "not implemented yet");
    return false;
}
