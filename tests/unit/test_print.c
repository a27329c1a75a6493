/* test_print.c - ag_print and the tf.print-style tensor formatting. */
#include "test_util.h"

#include "rt.h"

#include <stdio.h>
#include <stdlib.h>

/* The text one print call wrote, read back from a temporary file. */
static char printed[8192];

static FILE *capture_begin(void)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    ag_set_print_stream(f);
    return f;
}

static const char *capture_end(FILE *f)
{
    ag_set_print_stream(NULL);
    long n = ftell(f);
    assert_true(n >= 0 && n < (long)sizeof printed);
    rewind(f);
    size_t got = fread(printed, 1, (size_t)n, f);
    printed[got] = '\0';
    fclose(f);
    return printed;
}

/* Prints the arguments and asserts the exact line (with its newline). */
#define EXPECT_PRINT(want, ...)                                              \
    do {                                                                     \
        FILE *f_ = capture_begin();                                          \
        ag_print(__VA_ARGS__);                                               \
        const char *got_ = capture_end(f_);                                  \
        if (strcmp(got_, want) != 0)                                         \
            fail_msg("line %d: printed \"%s\", expected \"%s\"", __LINE__, got_, \
                     want);                                                  \
    } while (0)

/* rt_format_value of a tensor, compared exactly. */
static void check_format(ag_tensor t, const char *want, int line)
{
    char *s = rt_format_value(rt_handle_get(AG_HERE, t));
    if (strcmp(s, want) != 0) {
        char msg[4096];
        snprintf(msg, sizeof msg, "line %d: formatted \"%s\", expected \"%s\"", line, s,
                 want);
        free(s);
        fail_msg("%s", msg);
    }
    free(s);
}
#define CHECK_FORMAT(t, want) check_format((t), (want), __LINE__)

/* 0, 1, 2, ... as an i32 tensor of shape s. */
static ag_tensor iota(ag_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    int32_t *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    for (int64_t i = 0; i < n; i++)
        buf[i] = (int32_t)i;
    ag_tensor t = ag_from_data(AG_I32, s, buf);
    free(buf);
    return t;
}

static void test_scalars_of_each_dtype(void **state)
{
    (void)state;
    EXPECT_PRINT("5\n", ag_scalar_f32(5));
    EXPECT_PRINT("0.5\n", ag_scalar_f64(0.5));
    EXPECT_PRINT("1.5\n", ag_scalar_bf16(1.5));
    EXPECT_PRINT("-7\n", ag_scalar_i32(-7));
    EXPECT_PRINT("9223372036854775807\n", ag_scalar_i64(INT64_MAX));
    EXPECT_PRINT("-9223372036854775808\n", ag_scalar_i64(INT64_MIN));
    EXPECT_PRINT("1\n", ag_scalar_bool(true));
    EXPECT_PRINT("0\n", ag_scalar_bool(false));
}

static void test_float_spelling(void **state)
{
    (void)state;
    EXPECT_PRINT("[0.5 1 0.333333 nan inf -inf]\n",
                 F32(AG_SHAPE(6), 0.5f, 1.0f, 1.0f / 3, NAN, INFINITY, -INFINITY));
    EXPECT_PRINT("nan\n", ag_scalar_f32(NAN));
    EXPECT_PRINT("0\n", ag_scalar_f32(0));
}

static void test_float_spelling_more(void **state)
{
    (void)state;
    /* %g: 6 significant digits, exponent form for large and small values;
     * a negative NaN still prints as "nan". */
    CHECK_FORMAT(F64(AG_SHAPE(6), 1.0 / 3, -NAN, 1e10, -2.5e-7, -0.0, 123456.7),
                 "[0.333333 nan 1e+10 -2.5e-07 -0 123457]");
    CHECK_FORMAT(ag_scalar_f64(-INFINITY), "-inf");
}

static void test_vectors_and_matrices(void **state)
{
    (void)state;
    EXPECT_PRINT("[1 2 3]\n", I32(AG_SHAPE(3), 1, 2, 3));
    EXPECT_PRINT("[[1 2] [3 4]]\n", I32(AG_SHAPE(2, 2), 1, 2, 3, 4));
    EXPECT_PRINT("[[1 2 3]]\n", I64(AG_SHAPE(1, 3), 1, 2, 3));
    EXPECT_PRINT("[[1] [2] [3]]\n", F32(AG_SHAPE(3, 1), 1, 2, 3));
    EXPECT_PRINT("[1 0 1]\n", BOOLS(AG_SHAPE(3), 1, 0, 1));
    CHECK_FORMAT(F32(AG_SHAPE(1), 7), "[7]");
    CHECK_FORMAT(F32(AG_SHAPE(1, 1), 7), "[[7]]");
}

static void test_rank3_and_higher(void **state)
{
    (void)state;
    EXPECT_PRINT("[[[0 1] [2 3]] [[4 5] [6 7]]]\n", iota(AG_SHAPE(2, 2, 2)));
    CHECK_FORMAT(iota(AG_SHAPE(1, 1, 1, 2)), "[[[[0 1]]]]");
    CHECK_FORMAT(iota(AG_SHAPE(2, 1, 3)), "[[[0 1 2]] [[3 4 5]]]");
}

static void test_empty(void **state)
{
    (void)state;
    EXPECT_PRINT("[]\n", ag_zeros(AG_F32, AG_SHAPE(0)));
    CHECK_FORMAT(ag_zeros(AG_I32, AG_SHAPE(2, 0)), "[]");
    CHECK_FORMAT(ag_zeros(AG_BOOL, AG_SHAPE(0, 3, 4)), "[]");
    EXPECT_PRINT("a [] b\n", "a", ag_zeros(AG_F64, AG_SHAPE(0)), "b");
}

static void test_summarize_vector(void **state)
{
    (void)state;
    EXPECT_PRINT("[0 1 2 ... 7 8 9]\n", iota(AG_SHAPE(10)));
    /* 7 elements is the first length that is summarized; 6 is not. */
    CHECK_FORMAT(iota(AG_SHAPE(7)), "[0 1 2 ... 4 5 6]");
    CHECK_FORMAT(iota(AG_SHAPE(6)), "[0 1 2 3 4 5]");
    ag_tensor big = ag_zeros(AG_F32, AG_SHAPE(1000000));
    CHECK_FORMAT(big, "[0 0 0 ... 0 0 0]");
}

static void test_summarize_matrix(void **state)
{
    (void)state;
    EXPECT_PRINT("[[0 1 2 ... 7 8 9] [10 11 12 ... 17 18 19] [20 21 22 ... 27 28 29] ... "
                 "[70 71 72 ... 77 78 79] [80 81 82 ... 87 88 89] "
                 "[90 91 92 ... 97 98 99]]\n",
                 iota(AG_SHAPE(10, 10)));
    /* Only the long dim is summarized. */
    CHECK_FORMAT(iota(AG_SHAPE(2, 7)), "[[0 1 2 ... 4 5 6] [7 8 9 ... 11 12 13]]");
    CHECK_FORMAT(iota(AG_SHAPE(7, 1)), "[[0] [1] [2] ... [4] [5] [6]]");
    CHECK_FORMAT(iota(AG_SHAPE(7, 1, 1)),
                 "[[[0]] [[1]] [[2]] ... [[4]] [[5]] [[6]]]");
}

static void test_mixed_strings_and_tensors(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(2), 1, 2);
    EXPECT_PRINT("x = [1 2] and y = 5\n", "x =", x, "and y =", ag_scalar_i32(5));
    EXPECT_PRINT("[1 2] [1 2]\n", x, x);
    EXPECT_PRINT("[1 2]\n", x);
    EXPECT_PRINT(" [1 2] \n", "", x, "");
    const char *dynamic = "step";
    EXPECT_PRINT("step 3\n", dynamic, ag_scalar_i64(3));
}

static void test_braces_in_strings(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(2), 1, 2);
    EXPECT_PRINT("{} [1 2] {{a}} }{\n", "{}", x, "{{a}}", "}{");
    EXPECT_PRINT("{\n", "{");
    EXPECT_PRINT("dict {x: [1 2] }\n", "dict {x:", x, "}");
}

static void test_bf16(void **state)
{
    (void)state;
    /* bf16 keeps 8 significant bits: 0.1 becomes 0.100098. */
    uint16_t data[4] = {ag_f32_to_bf16(0.1f), ag_f32_to_bf16(1.0f),
                        ag_f32_to_bf16(-3.0f), ag_f32_to_bf16(NAN)};
    EXPECT_PRINT("[0.100098 1 -3 nan]\n", ag_from_data(AG_BF16, AG_SHAPE(4), data));
}

static void test_only_strings(void **state)
{
    (void)state;
    EXPECT_PRINT("hello world\n", "hello", "world");
    EXPECT_PRINT("fizzbuzz\n", "fizzbuzz");
    EXPECT_PRINT("\n", "");
}

static void test_print_order_with_stdio(void **state)
{
    (void)state;
    /* ag_print and fprintf share the stream's buffer, so lines keep the
     * program order. */
    FILE *f = capture_begin();
    fprintf(f, "a\n");
    ag_print("b", ag_scalar_i32(1));
    fprintf(f, "c\n");
    ag_print("d");
    assert_string_equal(capture_end(f), "a\nb 1\nc\nd\n");
}

static void test_print_stream_default(void **state)
{
    (void)state;
    assert_ptr_equal(rt_print_stream(), stdout);
    FILE *f = capture_begin();
    assert_ptr_equal(rt_print_stream(), f);
    capture_end(f);
    assert_ptr_equal(rt_print_stream(), stdout);
}

static void test_print_errors(void **state)
{
    (void)state;
    /* An error tensor makes the print fail: nothing is written. */
    ag_tensor bad = ag_from_data(AG_F32, AG_SHAPE(2), NULL);
    assert_true(ag_is_error(bad));
    EXPECT_PRINT("", "x", bad);
    /* A freed tensor is reported. */
    ag_tensor x = ag_scalar_f32(1);
    ag_free(x);
    ag_clear_error();
    EXPECT_PRINT("", "x", x);
    assert_non_null(strstr(ag_last_error(), "used after it was freed"));
    /* A tensor array is not printable. */
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 1, false);
    ag_clear_error();
    EXPECT_PRINT("", (ag_tensor)ta.list);
    assert_non_null(strstr(ag_last_error(), "tensor array"));
}

/* The kernel checks its template against its inputs (a parsed graph could
 * hold any text). */
static void test_template_mismatch(void **state)
{
    (void)state;
    rt_value *x = rt_value_scalar(AG_I32, 4);
    struct {
        const char *text;
        int n;
        const char *needle;
    } cases[] = {
        {"{} {}", 1, "more {} placeholders than the 1 tensor given"},
        {"no placeholder", 1, "has 0 {} placeholders but 1 tensor was given"},
        {"a { b", 0, "lone '{' at offset 2"},
        {"}", 0, "lone '}'"},
    };
    FILE *f = capture_begin();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rt_attrs a = {.text = cases[i].text};
        ag_clear_error();
        assert_null(rt_apply(AG_HERE, RT_OP_PRINT, &a, &x, cases[i].n));
        assert_non_null(ag_last_error());
        if (!strstr(ag_last_error(), cases[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, ag_last_error(), cases[i].needle);
        assert_non_null(strstr(ag_last_error(), "ag_print: "));
    }
    rt_attrs ok = {.text = "v={}"};
    rt_value *token = rt_apply(AG_HERE, RT_OP_PRINT, &ok, &x, 1);
    assert_non_null(token);
    assert_int_equal(token->dtype, AG_BOOL);
    assert_int_equal(*(uint8_t *)token->data, 1);
    rt_value_free(token);
    assert_string_equal(capture_end(f), "v=4\n");
    rt_value_free(x);
}

static void test_format_non_tensors(void **state)
{
    (void)state;
    rt_value *l = rt_value_new_list(AG_F32, 2, false);
    char *s = rt_format_value(l);
    assert_string_equal(s, "<tensor array>");
    free(s);
    rt_value_free(l);
    rt_value sym = {.kind = RT_SYMBOLIC, .dtype = AG_F32, .shape = {1, {-1}}, .numel = -1};
    s = rt_format_value(&sym);
    assert_string_equal(s, "<symbolic tensor>");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_scalars_of_each_dtype),
        TU_TEST(test_float_spelling),
        TU_TEST(test_float_spelling_more),
        TU_TEST(test_vectors_and_matrices),
        TU_TEST(test_rank3_and_higher),
        TU_TEST(test_empty),
        TU_TEST(test_summarize_vector),
        TU_TEST(test_summarize_matrix),
        TU_TEST(test_mixed_strings_and_tensors),
        TU_TEST(test_braces_in_strings),
        TU_TEST(test_bf16),
        TU_TEST(test_only_strings),
        TU_TEST(test_print_order_with_stdio),
        TU_TEST(test_print_stream_default),
        TU_TEST(test_print_errors),
        TU_TEST(test_template_mismatch),
        TU_TEST(test_format_non_tensors),
    };
    TU_RUN(tests);
}
