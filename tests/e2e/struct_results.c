/* struct_results: an AG_FUNCTION returning a struct of tensors (several
 * outputs), from staged branches and after a staged loop. */
#include "e2e.h"

typedef struct stats {
    ag_tensor count, total, largest;
} stats;

AG_FUNCTION AG_SIGNATURE("i32[6], i32[]")
stats summarize(ag_tensor v, ag_tensor threshold)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor count = ag_scalar_i32(0), total = ag_scalar_i32(0);
    ag_tensor largest = ag_scalar_i32(-1000000);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor x = ag_gather(v, i, 0);
        if (ag_bool(ag_less(x, threshold)))
            continue;
        count = ag_add(count, 1);
        total = ag_add(total, x);
        largest = ag_maximum(largest, x);
    }
    stats s = {count, total, largest};
    return s;
}

typedef struct divmod {
    ag_tensor q, r;
} divmod;

AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
divmod safe_divmod(ag_tensor a, ag_tensor b)
{
    if (ag_bool(ag_equal(b, 0)))
        return (divmod){ag_zeros_like(a), a};
    return (divmod){ag_floordiv(a, b), ag_mod(a, b)};
}

int main(void)
{
    const int32_t d[6] = {4, 9, 1, 12, 7, 3};
    stats s = summarize(ag_from_data(AG_I32, AG_SHAPE(6), d), ag_scalar_i32(5));
    ag_print("count, total, largest =", s.count, s.total, s.largest);
    divmod m = safe_divmod(ag_scalar_i32(17), ag_scalar_i32(5));
    ag_print("safe_divmod(17, 5) =", m.q, m.r);
    m = safe_divmod(ag_scalar_i32(17), ag_scalar_i32(0));
    ag_print("safe_divmod(17, 0) =", m.q, m.r);
    ag_shutdown();
    return 0;
}
