/*
 * test_tpu_int8.c - int8 on the TPU-model: i8 is 1 byte in HBM ((32,128)
 * tiles), qmatmul and qconv2d run on the MXU at twice the bf16 rate (the
 * cycle formula with weight tiles twice as deep), the listing names the
 * int8 pass, the profile counts the int8 multiply-adds and the roofline
 * takes their rate, and the simulated results are the eager kernels'
 * (runtime/kernels/qgemm.c) bit for bit, extremes included.
 */
#include "test_util.h"

#include "numerics.h"
#include "program.h"
#include "tpu_util.h"

#include <string.h>

/* The instruction of the graph's first node with opcode op. */
static const tpu_inst *inst_of(const compiled *c, int op)
{
    for (const ir_node *n = c->fn->body->first; n; n = n->next)
        if (n->opcode == op)
            return &c->p->inst[n->id];
    fail_msg("no %s in the graph", rt_ops[op].name);
    return NULL;
}

static void test_i8_is_one_byte_in_hbm(void **state)
{
    (void)state;
    ir_type t = {.dtype = AG_I8, .shape = AG_SHAPE(3, 5)};
    assert_int_equal(tpu_padded_bytes(&t), 32 * 128); /* one (32,128) tile of bytes */
    t.shape = AG_SHAPE(64, 784);
    assert_int_equal(tpu_padded_bytes(&t), 64 * 896);
    /* a weight of the 8192^3 product: 4x smaller than in f32 */
    ir_type w8 = {.dtype = AG_I8, .shape = AG_SHAPE(8192, 8192)};
    ir_type w32 = {.dtype = AG_F32, .shape = AG_SHAPE(8192, 8192)};
    assert_int_equal(4 * tpu_padded_bytes(&w8), tpu_padded_bytes(&w32));
}

static const char *const qlayer =
    "func @q(%0: i8[64,512], %1: i8[512,256], %2: i32[]) -> (i32[64,256]) {\n"
    "  %3 = qmatmul(%0, %1, %2) : i32[64,256]\n"
    "  return %3\n}\n";

static const char *const bf16_layer =
    "func @b(%0: bf16[64,512], %1: bf16[512,256]) -> (bf16[64,256]) {\n"
    "  %2 = matmul(%0, %1) : bf16[64,256]\n"
    "  return %2\n}\n";

/* An int8 weight tile is 256 deep (two int8 per cell): K = 512 is 2 tiles
 * deep, N = 256 two wide; each streams the 64 rows in 2*128 + 128 + 64 - 2
 * cycles; the 4 tiles on the 4 MXUs at once. The same bf16 product has
 * 8 tiles: twice the cycles. */
static void test_qmatmul_costs_twice_the_bf16_rate(void **state)
{
    (void)state;
    compiled q = compile_v5e(qlayer), b = compile_v5e(bf16_layer);
    const tpu_inst *qi = inst_of(&q, RT_OP_QMATMUL), *bi = inst_of(&b, RT_OP_MATMUL);
    assert_int_equal(qi->kind, TPU_MXU);
    assert_true(qi->int8);
    assert_false(bi->int8);
    assert_int_equal(qi->tiles, 4);
    assert_int_equal(qi->passes, 1);
    assert_int_equal(qi->work, 2 * 128 + 128 + 64 - 2);
    assert_int_equal(bi->tiles, 8);
    assert_int_equal(bi->work, 2 * qi->work);
    assert_int_equal(qi->macs, 64 * 512 * 256);
    compiled_free(&q);
    compiled_free(&b);
}

static const char *const qconv =
    "func @c(%0: i8[2,9,9,16], %1: i8[3,3,16,200], %2: i32[]) -> (i32[2,5,5,200]) {\n"
    "  %3 = qconv2d(%0, %1, %2) {strides = [2,2], padding = SAME} : i32[2,5,5,200]\n"
    "  return %3\n}\n";

/* qconv2d as its im2col product: M = 2*5*5 = 50, K = 3*3*16 = 144 (one
 * int8 tile deep), N = 200 (two wide). */
static void test_qconv2d_costs_its_im2col_product(void **state)
{
    (void)state;
    compiled c = compile_v5e(qconv);
    const tpu_inst *x = inst_of(&c, RT_OP_QCONV2D);
    assert_int_equal(x->kind, TPU_MXU);
    assert_true(x->int8);
    assert_int_equal(x->tiles, 2);
    assert_int_equal(x->work, 2 * 128 + 128 + 56 - 2);
    compiled_free(&c);
}

static void test_listing_names_the_int8_pass(void **state)
{
    (void)state;
    compiled c = compile_v5e(qlayer);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_program_print(c.p, f);
    fclose(f);
    if (!strstr(text, "mxu.qmatmul") || !strstr(text, "4 tiles x 1 int8 pass"))
        fail_msg("listing:\n%s", text);
    free(text);
    compiled_free(&c);
}

/* Random int8 values, every tenth an extreme (-128 or 127). */
static rt_value *random_i8(ag_shape s, uint32_t seed)
{
    rt_value *v = rt_value_new(AG_I8, &s);
    int8_t *x = v->data;
    for (int64_t i = 0; i < v->numel; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = i % 10 == 0 ? (seed >> 31 ? 127 : -128) : (int8_t)(seed >> 24);
    }
    return v;
}

static rt_value *i32_scalar(int32_t v)
{
    rt_value *s = rt_value_new(AG_I32, &AG_SCALAR);
    *(int32_t *)s->data = v;
    return s;
}

/* The simulated run of c on args equals the eager op's, bit for bit; the
 * profile counts the int8 multiply-adds. */
static void check_exact(const char *text, int op, rt_value **args, int64_t macs)
{
    compiled c = compile_v5e(text);
    rt_value *got = NULL;
    tpu_profile prof;
    assert_true(tpu_run(c.p, args, 3, &got, &prof, NULL));
    const ir_node *n = c.fn->body->first;
    while (n->opcode != op)
        n = n->next;
    rt_value *want = rt_apply_eager((ag_loc){0}, op, &n->attrs, args, 3);
    assert_non_null(want);
    assert_int_equal(got->dtype, AG_I32);
    assert_int_equal(got->numel, want->numel);
    assert_memory_equal(got->data, want->data, (size_t)want->numel * 4);
    assert_int_equal(prof.macs, macs);
    assert_int_equal(prof.int8_macs, macs);
    rt_value_free(got);
    rt_value_free(want);
    compiled_free(&c);
}

static void test_simulated_int8_is_the_eager_kernels(void **state)
{
    (void)state;
    static const int32_t zeros[] = {-128, 127, 0, 17};
    for (int z = 0; z < 4; z++) {
        rt_value *mm[3] = {random_i8(AG_SHAPE(64, 512), 1 + z), random_i8(AG_SHAPE(512, 256), 9),
                           i32_scalar(zeros[z])};
        check_exact(qlayer, RT_OP_QMATMUL, mm, 64 * 512 * 256);
        rt_value *cv[3] = {random_i8(AG_SHAPE(2, 9, 9, 16), 5 + z),
                           random_i8(AG_SHAPE(3, 3, 16, 200), 3), i32_scalar(zeros[z])};
        check_exact(qconv, RT_OP_QCONV2D, cv, 50LL * 144 * 200);
        for (int i = 0; i < 3; i++) {
            rt_value_free(mm[i]);
            rt_value_free(cv[i]);
        }
    }
}

/* The roofline counts int8 multiply-adds at twice the bf16 peak, and an
 * 8192^3 product comes within 5% of it (the goal). */
static void test_roofline_takes_the_int8_rate(void **state)
{
    (void)state;
    static const char *const big =
        "func @q(%0: i8[8192,8192], %1: i8[8192,8192], %2: i32[]) -> (i32[8192,8192]) {\n"
        "  %3 = qmatmul(%0, %1, %2) : i32[8192,8192]\n"
        "  return %3\n}\n";
    compiled c = compile_v5e(big);
    tpu_profile prof;
    tpu_time(c.p, &prof);
    double peak = 2 * tpu_spec_macs_per_cycle(&c.p->spec) * c.p->spec.clock_hz;
    double compute = (double)prof.macs / peak;
    assert_true(prof.roofline_seconds >= compute * 0.999);
    assert_true(prof.device_seconds >= prof.roofline_seconds);
    assert_true(prof.device_seconds <= 1.05 * prof.roofline_seconds); /* the 8192^3 goal */
    compiled_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_i8_is_one_byte_in_hbm),
        TU_TEST(test_qmatmul_costs_twice_the_bf16_rate),
        TU_TEST(test_qconv2d_costs_its_im2col_product),
        TU_TEST(test_listing_names_the_int8_pass),
        TU_TEST(test_simulated_int8_is_the_eager_kernels),
        TU_TEST(test_roofline_takes_the_int8_rate),
    };
    TU_RUN(tests);
}
