/*
 * test_rows.c - the row analysis (passes/rows.c): which functions compute
 * each row of a batch from that row alone. Each case is a function in the
 * IR's text form whose first parameter is batched (and the others, when
 * it has any, are not: weights), and either nothing to object to or the
 * op, the line and the reason the analysis must name.
 */
#include "test_util.h"

#include "rows.h"

#include <string.h>

typedef struct row_case {
    const char *body; /* nodes between the header and `return %99` */
    const char *params; /* after the batched %0 */
    const char *result; /* the result's type */
    const char *refusal; /* NULL: row-wise */
} row_case;

static const row_case cases[] = {
    /* row-wise */
    {"%99 = neg(%0) : f32[?,4] loc(\"m.c\":3)", "", "f32[?,4]", NULL},
    {"%99 = matmul(%0, %1) : f32[?,2] loc(\"m.c\":3)", ", %1: f32[4,2]", "f32[?,2]", NULL},
    {"%99 = add(%0, %1) : f32[?,4] loc(\"m.c\":3)", ", %1: f32[4]", "f32[?,4]", NULL},
    {"%99 = add(%0, %1) : f32[?,4] loc(\"m.c\":3)", ", %1: f32[1,4]", "f32[?,4]", NULL},
    {"%99 = reduce_sum(%0) {axis = 1, keepdims = false} : f32[?] loc(\"m.c\":3)", "", "f32[?]",
     NULL},
    {"%99 = softmax(%0) {axis = -1} : f32[?,4] loc(\"m.c\":3)", "", "f32[?,4]", NULL},
    {"%1 = reshape(%0) {shape = [-1,2,2]} : f32[?,2,2] loc(\"m.c\":3)\n"
     "  %99 = reshape(%1) {shape = [-1,4]} : f32[?,4] loc(\"m.c\":4)", "", "f32[?,4]", NULL},
    {"%99 = slice(%0) {begin = [0,1], size = [-1,2]} : f32[?,2] loc(\"m.c\":3)", "", "f32[?,2]",
     NULL},
    {"%1 = transpose(%0) {perm = [0,1]} : f32[?,4] loc(\"m.c\":3)\n"
     "  %99 = concat(%1, %0) {axis = 1} : f32[?,8] loc(\"m.c\":4)", "", "f32[?,8]", NULL},
    {"%2 = cast(%0) {dtype = i32} : i32[?,4] loc(\"m.c\":3)\n"
     "  %99 = gather(%1, %2) {axis = 0} : f32[?,4,3] loc(\"m.c\":4)", ", %1: f32[10,3]",
     "f32[?,4,3]", NULL},
    {"%99 = expand_dims(%0) {axis = 1} : f32[?,1,4] loc(\"m.c\":3)", "", "f32[?,1,4]", NULL},
    /* across the rows */
    {"%99 = reduce_sum(%0) {axis = 0, keepdims = true} : f32[1,4] loc(\"m.c\":7)", "",
     "f32[1,4]", "m.c:7: 'ag_reduce_sum' reduces along dimension 0, across the rows"},
    {"%1 = reduce_mean(%0) {axis = all, keepdims = false} : f32[] loc(\"m.c\":7)\n"
     "  %99 = sub(%0, %1) : f32[?,4] loc(\"m.c\":8)", "", "f32[?,4]",
     "m.c:7: 'ag_reduce_mean' reduces over every dimension"},
    {"%99 = softmax(%0) {axis = 0} : f32[?,4] loc(\"m.c\":7)", "", "f32[?,4]",
     "m.c:7: 'ag_softmax' normalizes along dimension 0"},
    {"%99 = matmul(%1, %0) : f32[4,4] loc(\"m.c\":7)", ", %1: f32[4,?]", "f32[4,4]",
     "m.c:7: 'ag_matmul' contracts over dimension 0 of its batched operand b"},
    {"%1 = transpose(%0) {perm = [1,0]} : f32[4,?] loc(\"m.c\":7)\n"
     "  %99 = matmul(%1, %0) : f32[4,4] loc(\"m.c\":8)", "", "f32[4,4]",
     "m.c:7: 'ag_transpose' moves dimension 0"},
    {"%99 = reshape(%0) {shape = [-1]} : f32[?] loc(\"m.c\":7)", "", "f32[?]",
     "m.c:7: 'ag_reshape' moves elements across dimension 0"},
    {"%99 = concat(%0, %0) {axis = 0} : f32[?,4] loc(\"m.c\":7)", "", "f32[?,4]",
     "m.c:7: 'ag_concat' joins along dimension 0"},
    {"%99 = slice(%0) {begin = [1,0], size = [-1,4]} : f32[?,4] loc(\"m.c\":7)", "", "f32[?,4]",
     "m.c:7: 'ag_slice' takes some of the rows"},
    {"%1 = cast(%0) {dtype = i32} : i32[?,4] loc(\"m.c\":3)\n"
     "  %99 = gather(%0, %1) {axis = 0} : f32[?,4,4] loc(\"m.c\":7)", "", "f32[?,4,4]",
     "m.c:7: 'ag_gather' gathers from the batch's rows with batched indices"},
    {"%99 = expand_dims(%0) {axis = 0} : f32[1,?,4] loc(\"m.c\":7)", "", "f32[1,?,4]",
     "m.c:7: 'ag_expand_dims' inserts a new dimension 0"},
    {"%1 = shape_of(%0) : i64[2] loc(\"m.c\":7)\n"
     "  %2 = cast(%1) {dtype = f32} : f32[2] loc(\"m.c\":8)\n"
     "  %99 = reshape(%0) {shape = [-1,4]} : f32[?,4] loc(\"m.c\":9)", "", "f32[?,4]",
     "m.c:7: 'ag_shape_of' depends on the number of rows in the batch"},
    /* a tensor that is not batched, paired with the batch row by position */
    {"%99 = add(%0, %1) : f32[?,4] loc(\"m.c\":7)", ", %1: f32[3,4]", "f32[?,4]",
     "m.c:7: 'ag_add' pairs the rows of the batch with the rows of an unbatched operand"},
    /* effects that see the whole batch */
    {"%1 = reduce_min(%0) {axis = 1, keepdims = false} : f32[?] loc(\"m.c\":6)\n"
     "  %2 = assert(%1) {text = \"positive\"} : bool[] loc(\"m.c\":7)\n"
     "  %99 = neg(%0) : f32[?,4] loc(\"m.c\":8)", "", "f32[?,4]",
     "m.c:7: 'ag_assert' checks every row of the batch"},
    /* a result the batch has no rows of */
    {"%99 = reduce_sum(%1) {axis = 0, keepdims = false} : f32[4] loc(\"m.c\":7)",
     ", %1: f32[3,4]", "f32[4]", "m.c:7: result 1 does not depend on the batched inputs"},
    /* a loop whose variable becomes batched, then mixes in its condition */
    {"%1 = const() {value = [0]} : f32[] loc(\"m.c\":3)\n"
     "  %2 = while(%1, %0) : (f32[], f32[?,4]) loc(\"m.c\":4) {\n"
     "  ^cond(%3: f32[], %4: f32[?,4]):\n"
     "    %5 = const() {value = [3]} : f32[]\n"
     "    %6 = less(%3, %5) : bool[] loc(\"m.c\":4)\n"
     "    yield %6\n"
     "  ^body(%7: f32[], %8: f32[?,4]):\n"
     "    %9 = tanh(%8) : f32[?,4] loc(\"m.c\":5)\n"
     "    %10 = const() {value = [1]} : f32[]\n"
     "    %11 = add(%7, %10) : f32[] loc(\"m.c\":6)\n"
     "    yield %11, %9\n"
     "  }\n"
     "  %99 = get(%2) {index = 1} : f32[?,4]", "", "f32[?,4]", NULL},
    {"%1 = const() {value = [0]} : f32[] loc(\"m.c\":3)\n"
     "  %2 = while(%1) : (f32[]) loc(\"m.c\":4) {\n"
     "  ^cond(%3: f32[]):\n"
     "    %5 = const() {value = [3]} : f32[]\n"
     "    %6 = less(%3, %5) : bool[] loc(\"m.c\":4)\n"
     "    yield %6\n"
     "  ^body(%7: f32[]):\n"
     "    %8 = reduce_sum(%7) {axis = all, keepdims = false} : f32[] loc(\"m.c\":5)\n"
     "    yield %8\n"
     "  }\n"
     "  %9 = get(%2) {index = 0} : f32[]\n"
     "  %99 = add(%0, %9) : f32[?,4] loc(\"m.c\":9)", "", "f32[?,4]", NULL},
    {"%1 = reduce_sum(%0) {axis = 1, keepdims = true} : f32[?,1] loc(\"m.c\":3)\n"
     "  %2 = while(%1) : (f32[?,1]) loc(\"m.c\":4) {\n"
     "  ^cond(%3: f32[?,1]):\n"
     "    %4 = reduce_max(%3) {axis = all, keepdims = false} : f32[] loc(\"m.c\":5)\n"
     "    %5 = const() {value = [3]} : f32[]\n"
     "    %6 = less(%4, %5) : bool[] loc(\"m.c\":5)\n"
     "    yield %6\n"
     "  ^body(%7: f32[?,1]):\n"
     "    %8 = sqrt(%7) : f32[?,1] loc(\"m.c\":6)\n"
     "    yield %8\n"
     "  }\n"
     "  %9 = get(%2) {index = 0} : f32[?,1]\n"
     "  %99 = mul(%0, %9) : f32[?,4] loc(\"m.c\":9)", "", "f32[?,4]",
     "m.c:5: 'ag_reduce_max' reduces over every dimension"},
};

static ir_function *parse_case(const row_case *c)
{
    char text[4096], err[512];
    snprintf(text, sizeof text, "func @f(%%0: f32[?,4]%s) -> (%s) {\n  %s\n  return %%99\n}\n",
             c->params, c->result, c->body);
    ir_function *fn = ir_parse(text, "case.ir", err, sizeof err);
    if (!fn)
        fail_msg("%s\n%s", err, text);
    return fn;
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ir_function *fn = parse_case(&cases[i]);
        bool batched[4] = {true, false, false, false};
        char err[512] = "";
        bool ok = pass_rows_check(fn, batched, err, sizeof err);
        ir_function_free(fn);
        if (!cases[i].refusal && !ok)
            fail_msg("case %zu: refused, expected row-wise: %s", i, err);
        if (cases[i].refusal && ok)
            fail_msg("case %zu: row-wise, expected \"%s\"", i, cases[i].refusal);
        if (cases[i].refusal && !strstr(err, cases[i].refusal))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].refusal);
    }
}

/* NULL batches every parameter: a second batched operand is no weight. */
static void test_every_parameter_batched(void **state)
{
    (void)state;
    ir_function *fn = parse_case(&cases[1]); /* matmul(%0, %1) */
    char err[512];
    assert_false(pass_rows_check(fn, NULL, err, sizeof err));
    assert_non_null(strstr(err, "'ag_matmul' contracts over dimension 0"));
    ir_function_free(fn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_cases),
        TU_TEST(test_every_parameter_batched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
