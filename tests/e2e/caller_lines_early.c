/* caller_lines_early: calls written before an AG_FUNCTION's definition,
 * after its prototype (C style with main first), report a call that does
 * not match the signature at the caller's line, as calls after the
 * definition do (frontend/emit.c declares f__at and the caller macro
 * after the prototype). A call that matches runs as usual. Eagerly
 * nothing is checked (caller_lines_early.eager.expected). */
#include "e2e.h"

ag_tensor doubled(ag_tensor v);
static ag_tensor halved(ag_tensor v);
void no_tensors(void);

static void try_halved(ag_tensor v)
{
    ag_tensor r = halved(v); /* line 15: the error's line when v is not f32[?] */
    if (!ag_is_error(r))
        ag_print("halved", v, "=", r);
    e2e_print_error("halved");
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    const float d[3] = {1, 2, 4};
    ag_tensor v = ag_from_data(AG_F32, AG_SHAPE(3), d);
    ag_print("doubled", v, "=", doubled(v));
    ag_tensor r = doubled(ag_scalar_i32(3)); /* line 27 */
    if (!ag_is_error(r))
        ag_print("doubled(3) =", r);
    e2e_print_error("doubled(i32[])");
    try_halved(v);
    try_halved(ag_from_data(AG_F32, AG_SHAPE(1, 3), d));
    no_tensors();
    ag_shutdown();
    return 0;
}

AG_FUNCTION AG_SIGNATURE("f32[?]")
ag_tensor doubled(ag_tensor v)
{
    return ag_add(v, v);
}

AG_FUNCTION AG_SIGNATURE("f32[?]")
static ag_tensor halved(ag_tensor v)
{
    return ag_div(v, ag_scalar_f32(2));
}

AG_FUNCTION void no_tensors(void)
{
    printf("no_tensors ran\n");
}
