/* deep_nesting: a polynomial of degree 15 in Horner form, ag_ ops nested
 * 30 deep. Each op macro expands its operands once (ag.h, AG_OPERAND), so
 * the text the compiler (and agc's libclang) reads grows linearly with the
 * depth; it used to double at every level (2^30 copies of x here). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("f32[?]")
ag_tensor horner(ag_tensor x)
{
    /* 1 + 2x + 3x^2 + ... + 16x^15 */
    return ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(ag_add(ag_mul(15, x), 15), x), 14), x), 13), x), 12), x), 11), x), 10), x), 9), x), 8), x), 7), x), 6), x), 5), x), 4), x), 3), x), 2), x), 1);
}

int main(void)
{
    static const float xs[] = {0.5f, -1.0f, 0.25f, -0.75f};
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(4), xs);
    ag_print(horner(x));
    return 0;
}
