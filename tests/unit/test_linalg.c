/* test_linalg.c - matmul and conv2d (kernels/linalg.c). */
#include "test_util.h"

#include "op_decls.h"
#include "kernels.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* A bf16 tensor from float values (each rounded to bf16). */
static ag_tensor bf16_tensor(ag_shape s, int n, const float *vals)
{
    uint16_t buf[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        buf[i] = ag_f32_to_bf16(vals[i]);
    return ag_from_data(AG_BF16, s, buf);
}
#define BF16(shape, ...)                                                        \
    bf16_tensor(shape, (int)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)), \
                (const float[]){__VA_ARGS__})

/* Small deterministic integers in [-range, range]. */
static int32_t pseudo(uint32_t *seed, int range)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (int32_t)((*seed >> 16) % (uint32_t)(2 * range + 1)) - range;
}

/* Asserts every element of t equals want[i] (n elements). */
static void check_array(ag_tensor t, const double *want, int64_t n, double tol, int line)
{
    if (ag_is_error(t))
        fail_msg("line %d: unexpected error: %s", line, ag_last_error());
    assert_int_equal(ag_num_elements(t), n);
    const void *d = ag_data(t);
    for (int64_t i = 0; i < n; i++) {
        double got = ag_dtype_of(t) == AG_F32 ? ((const float *)d)[i]
                     : ag_dtype_of(t) == AG_I32 ? ((const int32_t *)d)[i]
                                                : ag_get_f64(t, i);
        if (!(fabs(got - want[i]) <= tol))
            fail_msg("line %d: element %lld is %.9g, expected %.9g", line, (long long)i,
                     got, want[i]);
    }
}
#define CHECK_ARRAY(t, want, n, tol) check_array((t), (want), (n), (tol), __LINE__)

/* ============================================================== matmul */

static void test_matmul_2x3_3x2_all_dtypes(void **state)
{
    (void)state;
    ag_tensor r = ag_matmul(F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                            F32(AG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 58, 64, 139, 154);
    r = ag_matmul(F64(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                  F64(AG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12));
    CHECK_TYPE(r, AG_F64, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 58, 64, 139, 154);
    r = ag_matmul(I32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                  I32(AG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12));
    CHECK_TYPE(r, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 58, 64, 139, 154);
    r = ag_matmul(I64(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                  I64(AG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12));
    CHECK_TYPE(r, AG_I64, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 58, 64, 139, 154);
    r = ag_matmul(BF16(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                  BF16(AG_SHAPE(3, 2), 7, 8, 9, 10, 11, 12));
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 58, 64, 139, 154); /* all fit bf16's 8 significant bits */
    /* 257 does not: it rounds (ties to even) to 256. */
    CHECK_VALUES(ag_matmul(BF16(AG_SHAPE(1, 2), 256, 1), BF16(AG_SHAPE(2, 1), 1, 1)), 256);
}

static void test_matmul_int_wraps(void **state)
{
    (void)state;
    CHECK_VALUES(ag_matmul(I32(AG_SHAPE(1, 1), 65536), I32(AG_SHAPE(1, 1), 65536)), 0);
    CHECK_VALUES(ag_matmul(I32(AG_SHAPE(1, 2), INT32_MAX, 1), I32(AG_SHAPE(2, 1), 1, 1)),
                 INT32_MIN);
    ag_tensor r = ag_matmul(I64(AG_SHAPE(1, 2), INT64_MAX, 2), I64(AG_SHAPE(2, 1), 1, 1));
    assert_true(ag_get_i64(r, 0) == INT64_MIN + 1);
}

/* Reference matmul in double of contiguous [m,k] x [k,n]. */
static void naive_mm(const float *a, const float *b, double *c, int m, int k, int n)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
}

static void test_matmul_rectangular_against_reference(void **state)
{
    (void)state;
    enum { M = 5, K = 7, N = 3 };
    float a[M * K], b[K * N];
    double want[M * N];
    uint32_t seed = 1;
    for (int i = 0; i < M * K; i++)
        a[i] = (float)pseudo(&seed, 9) / 4;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)pseudo(&seed, 9) / 8;
    naive_mm(a, b, want, M, K, N);
    ag_tensor r = ag_matmul(ag_from_data(AG_F32, AG_SHAPE(M, K), a),
                            ag_from_data(AG_F32, AG_SHAPE(K, N), b));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(M, N));
    CHECK_ARRAY(r, want, M * N, 0); /* small dyadic values: exact */
}

static void test_matmul_batched_shared_b(void **state)
{
    (void)state;
    /* [2,2,3] x [3,4]: b is shared, so the batch folds into one product. */
    ag_tensor a = F32(AG_SHAPE(2, 2, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    ag_tensor b = F32(AG_SHAPE(3, 4), 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1);
    ag_tensor r = ag_matmul(a, b);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 2, 4));
    CHECK_VALUES(r, 1, 2, 3, 6, 4, 5, 6, 15, 7, 8, 9, 24, 10, 11, 12, 33);
    /* A b batch of size 1 still folds; a gains a broadcast dim. */
    r = ag_matmul(ag_from_data(AG_F32, AG_SHAPE(2, 1, 2, 3), ag_data(a)),
                  ag_from_data(AG_F32, AG_SHAPE(1, 3, 4), ag_data(b)));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 1, 2, 4));
    CHECK_VALUES(r, 1, 2, 3, 6, 4, 5, 6, 15, 7, 8, 9, 24, 10, 11, 12, 33);
    /* b batched with a shared a does not fold: [2,3] x [2,3,4]. */
    float b2[24];
    for (int i = 0; i < 24; i++)
        b2[i] = i < 12 ? ((const float *)ag_data(b))[i] : (i == 12 ? 2.0f : 0.0f);
    r = ag_matmul(F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                  ag_from_data(AG_F32, AG_SHAPE(2, 3, 4), b2));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 2, 4));
    CHECK_VALUES(r, 1, 2, 3, 6, 4, 5, 6, 15, 2, 0, 0, 0, 8, 0, 0, 0);
}

static void test_matmul_batched_broadcast_a(void **state)
{
    (void)state;
    /* [1,2,3] x [5,3,2]: one a for five b's. b_i = (i+1) * [[1,0],[0,1],[1,1]]. */
    ag_tensor a = I32(AG_SHAPE(1, 2, 3), 1, 2, 3, 4, 5, 6);
    int32_t bd[5 * 6];
    for (int i = 0; i < 5; i++) {
        const int32_t base[6] = {1, 0, 0, 1, 1, 1};
        for (int j = 0; j < 6; j++)
            bd[i * 6 + j] = (i + 1) * base[j];
    }
    ag_tensor b = ag_from_data(AG_I32, AG_SHAPE(5, 3, 2), bd);
    ag_tensor r = ag_matmul(a, b);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(5, 2, 2));
    double want[20];
    const double one[4] = {4, 5, 10, 11};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            want[i * 4 + j] = (i + 1) * one[j];
    CHECK_ARRAY(r, want, 20, 0);
    /* A rank-2 a broadcasts the same way. */
    r = ag_matmul(I32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), b);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(5, 2, 2));
    CHECK_ARRAY(r, want, 20, 0);
}

static void test_matmul_batched_both_broadcast(void **state)
{
    (void)state;
    /* [2,1,2,3] x [3,3,2] -> [2,3,2,2]: a varies on dim 0, b on dim 1. */
    enum { AB = 2, BB = 3, M = 2, K = 3, N = 2 };
    float a[AB * M * K], b[BB * K * N];
    uint32_t seed = 7;
    for (int i = 0; i < AB * M * K; i++)
        a[i] = (float)pseudo(&seed, 5);
    for (int i = 0; i < BB * K * N; i++)
        b[i] = (float)pseudo(&seed, 5);
    double want[AB * BB * M * N];
    for (int i = 0; i < AB; i++)
        for (int j = 0; j < BB; j++)
            naive_mm(a + i * M * K, b + j * K * N, want + (i * BB + j) * M * N, M, K, N);
    ag_tensor r = ag_matmul(ag_from_data(AG_F32, AG_SHAPE(AB, 1, M, K), a),
                            ag_from_data(AG_F32, AG_SHAPE(BB, K, N), b));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(AB, BB, M, N));
    CHECK_ARRAY(r, want, AB * BB * M * N, 0);
    /* The same in f64 and i64 through the unfolded batch loop. */
    double ad[AB * M * K], bdd[BB * K * N];
    int64_t ai[AB * M * K], bi[BB * K * N];
    for (int i = 0; i < AB * M * K; i++)
        ad[i] = a[i], ai[i] = (int64_t)a[i];
    for (int i = 0; i < BB * K * N; i++)
        bdd[i] = b[i], bi[i] = (int64_t)b[i];
    r = ag_matmul(ag_from_data(AG_F64, AG_SHAPE(AB, 1, M, K), ad),
                  ag_from_data(AG_F64, AG_SHAPE(BB, K, N), bdd));
    CHECK_ARRAY(r, want, AB * BB * M * N, 0);
    r = ag_matmul(ag_from_data(AG_I64, AG_SHAPE(AB, 1, M, K), ai),
                  ag_from_data(AG_I64, AG_SHAPE(BB, K, N), bi));
    CHECK_TYPE(r, AG_I64, AG_SHAPE(AB, BB, M, N));
    CHECK_ARRAY(r, want, AB * BB * M * N, 0);
}

static void test_matmul_bf16_batched(void **state)
{
    (void)state;
    ag_tensor a = BF16(AG_SHAPE(2, 1, 2), 1, 2, 3, 4);
    ag_tensor b = BF16(AG_SHAPE(2, 1), 0.5, 0.25);
    ag_tensor r = ag_matmul(a, b);
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(2, 1, 1));
    CHECK_VALUES(r, 1, 2.5);
}

static void test_matmul_empty_dims(void **state)
{
    (void)state;
    /* k == 0: every result is an empty sum, 0. */
    ag_tensor r = ag_matmul(ag_zeros(AG_F32, AG_SHAPE(2, 0)), ag_zeros(AG_F32, AG_SHAPE(0, 3)));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 3));
    CHECK_VALUES(r, 0, 0, 0, 0, 0, 0);
    r = ag_matmul(ag_zeros(AG_I32, AG_SHAPE(1, 0)), ag_zeros(AG_I32, AG_SHAPE(0, 2)));
    CHECK_VALUES(r, 0, 0);
    r = ag_matmul(ag_zeros(AG_BF16, AG_SHAPE(3, 1, 0)), ag_zeros(AG_BF16, AG_SHAPE(0, 1)));
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(3, 1, 1));
    CHECK_VALUES(r, 0, 0, 0);
    /* m == 0, n == 0 and an empty batch give empty results. */
    r = ag_matmul(ag_zeros(AG_F32, AG_SHAPE(0, 3)), ag_ones(AG_F32, AG_SHAPE(3, 2)));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0, 2));
    r = ag_matmul(ag_ones(AG_F64, AG_SHAPE(2, 3)), ag_zeros(AG_F64, AG_SHAPE(3, 0)));
    CHECK_TYPE(r, AG_F64, AG_SHAPE(2, 0));
    r = ag_matmul(ag_zeros(AG_F32, AG_SHAPE(0, 2, 3)), ag_ones(AG_F32, AG_SHAPE(3, 2)));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0, 2, 2));
    r = ag_matmul(ag_zeros(AG_BF16, AG_SHAPE(0, 3)), ag_ones(AG_BF16, AG_SHAPE(3, 2)));
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(0, 2));
}

static void test_matmul_errors(void **state)
{
    (void)state;
    ag_tensor v = F32(AG_SHAPE(3), 1, 2, 3);
    ag_tensor m = F32(AG_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_matmul(v, m), "use ag_expand_dims or ag_reshape");
    EXPECT_ERROR(ag_matmul(m, v), "operand b has rank 1 (shape [3])");
    EXPECT_ERROR(ag_matmul(ag_scalar_f32(1), m), "operand a has rank 0");
    ag_tensor x = ag_ones(AG_F32, AG_SHAPE(2, 3));
    ag_tensor y = ag_ones(AG_F32, AG_SHAPE(4, 2));
    EXPECT_ERROR(ag_matmul(x, y), "a is [2,3] and b is [4,2]");
    EXPECT_ERROR(ag_matmul(x, y), "ag_matmul: ");
    EXPECT_ERROR(ag_matmul(ag_ones(AG_F32, AG_SHAPE(2, 2, 3)), ag_ones(AG_F32, AG_SHAPE(3, 3, 2))),
                 "batch dims of a [2,2,3] and b [3,3,2] cannot be broadcast");
    EXPECT_ERROR(ag_matmul(x, ag_ones(AG_I32, AG_SHAPE(3, 2))), "different dtypes");
    EXPECT_ERROR(ag_matmul(ag_ones(AG_BOOL, AG_SHAPE(2, 2)), ag_ones(AG_BOOL, AG_SHAPE(2, 2))),
                 "numeric");
}

static bool infer2(rt_op op, const rt_attrs *a, ag_shape s0, ag_shape s1, ag_shape *out,
                   rt_err *e)
{
    rt_value v0 = {.kind = RT_SYMBOLIC, .dtype = AG_F32, .shape = s0};
    rt_value v1 = {.kind = RT_SYMBOLIC, .dtype = AG_F32, .shape = s1};
    rt_value *in[2] = {&v0, &v1};
    static const rt_attrs none;
    ag_dtype dt;
    return rt_infer(op, a ? a : &none, in, 2, &dt, out, e);
}

static void test_matmul_rule_unknown_dims(void **state)
{
    (void)state;
    ag_shape out;
    rt_err e;
    assert_true(infer2(RT_OP_MATMUL, NULL, AG_SHAPE(-1, 3), AG_SHAPE(3, -1), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, -1)));
    assert_true(infer2(RT_OP_MATMUL, NULL, AG_SHAPE(-1, 4, -1), AG_SHAPE(5, 2), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, 4, 2)));
    assert_true(infer2(RT_OP_MATMUL, NULL, AG_SHAPE(-1, 2, 3), AG_SHAPE(7, 3, 2), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(7, 2, 2)));
    assert_false(infer2(RT_OP_MATMUL, NULL, AG_SHAPE(-1, 3), AG_SHAPE(4, 2), &out, &e));
    assert_non_null(strstr(e.msg, "a is [?,3] and b is [4,2]"));
}

/* ============================================================== conv2d */

/* Reference conv2d in double with TF's SAME/VALID geometry. */
static void naive_conv(const double *x, const double *f, double *out, int n, int h, int w,
                       int c, int kh, int kw, int o, int sh, int sw, bool same)
{
    int oh = same ? (h + sh - 1) / sh : (h - kh + sh) / sh;
    int ow = same ? (w + sw - 1) / sw : (w - kw + sw) / sw;
    int pt = 0, pl = 0;
    if (same) {
        int th = (oh - 1) * sh + kh - h, tw = (ow - 1) * sw + kw - w;
        pt = th > 0 ? th / 2 : 0;
        pl = tw > 0 ? tw / 2 : 0;
    }
    for (int b = 0; b < n; b++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++)
                for (int q = 0; q < o; q++) {
                    double s = 0;
                    for (int u = 0; u < kh; u++)
                        for (int v = 0; v < kw; v++) {
                            int ih = i * sh - pt + u, iw = j * sw - pl + v;
                            if (ih < 0 || ih >= h || iw < 0 || iw >= w)
                                continue;
                            for (int p = 0; p < c; p++)
                                s += x[((b * h + ih) * w + iw) * c + p] *
                                     f[((u * kw + v) * c + p) * o + q];
                        }
                    out[((b * oh + i) * ow + j) * o + q] = s;
                }
}

static ag_tensor x4x4(ag_dtype dt)
{
    double d[16];
    for (int i = 0; i < 16; i++)
        d[i] = i + 1;
    ag_tensor t = ag_from_data(AG_F64, AG_SHAPE(1, 4, 4, 1), d);
    if (dt == AG_F64)
        return t;
    /* Built from typed data so as not to depend on ag_cast. */
    float fd[16];
    int32_t id[16];
    for (int i = 0; i < 16; i++)
        fd[i] = (float)d[i], id[i] = i + 1;
    return dt == AG_F32 ? ag_from_data(AG_F32, AG_SHAPE(1, 4, 4, 1), fd)
                        : ag_from_data(AG_I32, AG_SHAPE(1, 4, 4, 1), id);
}

static void test_conv2d_valid_2x2(void **state)
{
    (void)state;
    ag_tensor f = F32(AG_SHAPE(2, 2, 1, 1), 1, 2, 3, 4);
    ag_tensor r = ag_conv2d(x4x4(AG_F32), f, 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 3, 3, 1));
    CHECK_VALUES(r, 44, 54, 64, 84, 94, 104, 124, 134, 144);
    r = ag_conv2d(x4x4(AG_I32), I32(AG_SHAPE(2, 2, 1, 1), 1, 2, 3, 4), 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(1, 3, 3, 1));
    CHECK_VALUES(r, 44, 54, 64, 84, 94, 104, 124, 134, 144);
    /* VALID stride 2: ceil((4 - 2 + 1) / 2) = 2. */
    r = ag_conv2d(x4x4(AG_F32), f, 2, 2, AG_VALID);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 2, 2, 1));
    CHECK_VALUES(r, 44, 64, 124, 144);
    r = ag_conv2d(x4x4(AG_F32), f, 1, 2, AG_VALID);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 3, 2, 1));
    CHECK_VALUES(r, 44, 64, 84, 104, 124, 144);
}

static void test_conv2d_same_2x2(void **state)
{
    (void)state;
    ag_tensor f = F32(AG_SHAPE(2, 2, 1, 1), 1, 2, 3, 4);
    /* SAME stride 2: OH = 2, pad_total = max(1*2 + 2 - 4, 0) = 0. */
    ag_tensor r = ag_conv2d(x4x4(AG_F32), f, 2, 2, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 2, 2, 1));
    CHECK_VALUES(r, 44, 64, 124, 144);
    /* SAME stride 1: pad_total = 1, all of it after (bottom/right). */
    r = ag_conv2d(x4x4(AG_F32), f, 1, 1, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 4, 4, 1));
    CHECK_VALUES(r, 44, 54, 64, 28, 84, 94, 104, 44, 124, 134, 144, 60, 41, 44, 47, 16);
}

static void test_conv2d_same_3x3(void **state)
{
    (void)state;
    ag_tensor ones = ag_ones(AG_F32, AG_SHAPE(3, 3, 1, 1));
    /* SAME stride 1 pads one row/column on each side: 3x3 box sums. */
    ag_tensor r = ag_conv2d(x4x4(AG_F32), ones, 1, 1, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 4, 4, 1));
    CHECK_VALUES(r, 14, 24, 30, 22, 33, 54, 63, 45, 57, 90, 99, 69, 46, 72, 78, 54);
    /* A filter with its only tap at the top-left reads x[i-1][j-1]: this
     * pins down the orientation and the top/left padding. */
    ag_tensor corner = F32(AG_SHAPE(3, 3, 1, 1), 1, 0, 0, 0, 0, 0, 0, 0, 0);
    r = ag_conv2d(x4x4(AG_F32), corner, 1, 1, AG_SAME);
    CHECK_VALUES(r, 0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11);
    /* SAME stride 2: OH = 2, pad_total = 1*2 + 3 - 4 = 1, all at the bottom. */
    r = ag_conv2d(x4x4(AG_F32), ones, 2, 2, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 2, 2, 1));
    CHECK_VALUES(r, 54, 45, 72, 54);
    r = ag_conv2d(x4x4(AG_I32), ag_ones(AG_I32, AG_SHAPE(3, 3, 1, 1)), 2, 2, AG_SAME);
    CHECK_VALUES(r, 54, 45, 72, 54);
    /* VALID 3x3 on 4x4: 2x2 output. */
    r = ag_conv2d(x4x4(AG_F64), ag_ones(AG_F64, AG_SHAPE(3, 3, 1, 1)), 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_F64, AG_SHAPE(1, 2, 2, 1));
    CHECK_VALUES(r, 54, 63, 90, 99);
}

static void test_conv2d_channels(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    /* 1x1 filter [2, 3]: (c0, c1, c0 + c1) per pixel. */
    ag_tensor f = F32(AG_SHAPE(1, 1, 2, 3), 1, 0, 1, 0, 1, 1);
    ag_tensor r = ag_conv2d(x, f, 1, 1, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 2, 2, 3));
    CHECK_VALUES(r, 1, 2, 3, 3, 4, 7, 5, 6, 11, 7, 8, 15);
    r = ag_conv2d(x, f, 2, 1, AG_VALID); /* 1x1 with a stride: im2col path */
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 1, 2, 3));
    CHECK_VALUES(r, 1, 2, 3, 3, 4, 7);
    /* A 2x2x2 filter covering the whole input: sum of i * i for 1..8. */
    r = ag_conv2d(x, F32(AG_SHAPE(2, 2, 2, 1), 1, 2, 3, 4, 5, 6, 7, 8), 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 1, 1, 1));
    CHECK_VALUES(r, 204);
    r = ag_conv2d(I64(AG_SHAPE(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8),
                  I64(AG_SHAPE(2, 2, 2, 1), 1, 2, 3, 4, 5, 6, 7, 8), 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(1, 1, 1, 1));
    CHECK_VALUES(r, 204);
    r = ag_conv2d(BF16(AG_SHAPE(1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8),
                  BF16(AG_SHAPE(1, 1, 2, 3), 1, 0, 1, 0, 1, 1), 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(1, 2, 2, 3));
    CHECK_VALUES(r, 1, 2, 3, 3, 4, 7, 5, 6, 11, 7, 8, 15);
}

/* Runs one conv2d configuration in f32, i32 and f64 and compares each with
 * the reference. Values are small integers, so every result is exact. */
static void check_conv_config(int n, int h, int w, int c, int kh, int kw, int o, int sh,
                              int sw, bool same)
{
    int64_t xn = (int64_t)n * h * w * c, fn = (int64_t)kh * kw * c * o;
    double *xd = malloc((size_t)xn * sizeof *xd), *fd = malloc((size_t)fn * sizeof *fd);
    float *xf = malloc((size_t)xn * sizeof *xf), *ff = malloc((size_t)fn * sizeof *ff);
    int32_t *xi = malloc((size_t)xn * sizeof *xi), *fi = malloc((size_t)fn * sizeof *fi);
    uint32_t seed = (uint32_t)(n * 131 + h * 17 + kh * 5 + sh);
    for (int64_t i = 0; i < xn; i++)
        xi[i] = pseudo(&seed, 3), xd[i] = xi[i], xf[i] = (float)xi[i];
    for (int64_t i = 0; i < fn; i++)
        fi[i] = pseudo(&seed, 2), fd[i] = fi[i], ff[i] = (float)fi[i];
    ag_padding pad = same ? AG_SAME : AG_VALID;
    ag_tensor rf = ag_conv2d(ag_from_data(AG_F32, AG_SHAPE(n, h, w, c), xf),
                             ag_from_data(AG_F32, AG_SHAPE(kh, kw, c, o), ff), sh, sw, pad);
    ag_tensor ri = ag_conv2d(ag_from_data(AG_I32, AG_SHAPE(n, h, w, c), xi),
                             ag_from_data(AG_I32, AG_SHAPE(kh, kw, c, o), fi), sh, sw, pad);
    ag_tensor rd = ag_conv2d(ag_from_data(AG_F64, AG_SHAPE(n, h, w, c), xd),
                             ag_from_data(AG_F64, AG_SHAPE(kh, kw, c, o), fd), sh, sw, pad);
    int64_t on = ag_num_elements(rf);
    double *want = malloc((size_t)(on > 0 ? on : 1) * sizeof *want);
    naive_conv(xd, fd, want, n, h, w, c, kh, kw, o, sh, sw, same);
    CHECK_ARRAY(rf, want, on, 0);
    CHECK_ARRAY(ri, want, on, 0);
    CHECK_ARRAY(rd, want, on, 0);
    free(want);
    free(xd), free(fd), free(xf), free(ff), free(xi), free(fi);
}

static void test_conv2d_against_reference(void **state)
{
    (void)state;
    check_conv_config(2, 5, 5, 3, 3, 3, 4, 2, 2, true);  /* pad_top 1 */
    check_conv_config(2, 5, 6, 3, 3, 2, 4, 2, 3, false);
    check_conv_config(3, 7, 4, 2, 4, 3, 1, 3, 1, true);  /* uneven split */
    check_conv_config(1, 6, 6, 5, 1, 1, 3, 1, 1, false); /* pointwise */
    check_conv_config(1, 3, 3, 1, 5, 5, 2, 1, 1, true);  /* kernel > input */
    check_conv_config(2, 9, 9, 2, 2, 2, 3, 4, 4, false);
}

static void test_conv2d_chunked_f32_matches_i32(void **state)
{
    (void)state;
    /* 2 x 122 x 122 output pixels by 3*3*64 taps is far more im2col than
     * the kernel's bounded buffer, so the rows are built in chunks, some
     * starting in the middle of an image. */
    enum { N = 2, H = 122, W = 122, C = 64, KH = 3, KW = 3, O = 2 };
    int64_t xn = (int64_t)N * H * W * C, fn = KH * KW * C * O;
    float *xf = malloc((size_t)xn * sizeof *xf), *ff = malloc((size_t)fn * sizeof *ff);
    int32_t *xi = malloc((size_t)xn * sizeof *xi), *fi = malloc((size_t)fn * sizeof *fi);
    uint32_t seed = 99;
    for (int64_t i = 0; i < xn; i++)
        xi[i] = pseudo(&seed, 2), xf[i] = (float)xi[i];
    for (int64_t i = 0; i < fn; i++)
        fi[i] = pseudo(&seed, 1), ff[i] = (float)fi[i];
    ag_tensor rf = ag_conv2d(ag_from_data(AG_F32, AG_SHAPE(N, H, W, C), xf),
                             ag_from_data(AG_F32, AG_SHAPE(KH, KW, C, O), ff), 1, 1, AG_SAME);
    ag_tensor ri = ag_conv2d(ag_from_data(AG_I32, AG_SHAPE(N, H, W, C), xi),
                             ag_from_data(AG_I32, AG_SHAPE(KH, KW, C, O), fi), 1, 1, AG_SAME);
    CHECK_TYPE(rf, AG_F32, AG_SHAPE(N, H, W, O));
    CHECK_TYPE(ri, AG_I32, AG_SHAPE(N, H, W, O));
    const float *pf = ag_data(rf);
    const int32_t *pi = ag_data(ri);
    int64_t on = ag_num_elements(rf), nonzero = 0;
    for (int64_t i = 0; i < on; i++) {
        if (pf[i] != (float)pi[i])
            fail_msg("element %lld: f32 %g, i32 %d", (long long)i, pf[i], pi[i]);
        nonzero += pi[i] != 0;
    }
    assert_true(nonzero > on / 2);
    free(xf), free(ff), free(xi), free(fi);
}

static void test_conv2d_direct_f32_entry(void **state)
{
    (void)state;
    rt_conv2d_geom g;
    rt_err e;
    ag_shape xs = AG_SHAPE(1, 4, 4, 1), fs = AG_SHAPE(2, 2, 1, 1);
    assert_true(rt_conv2d_geometry(&xs, &fs, 1, 1, AG_SAME, &g, &e));
    assert_int_equal(g.oh, 4);
    assert_int_equal(g.ow, 4);
    assert_int_equal(g.pad_top, 0);
    float x[16], out[16];
    const float f[4] = {1, 2, 3, 4};
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    rt_conv2d_f32(&g, x, f, out);
    assert_float_equal(out[0], 44, 0);
    assert_float_equal(out[3], 28, 0);
    assert_float_equal(out[15], 16, 0);
    ag_shape big = AG_SHAPE(5, 5, 1, 1);
    assert_false(rt_conv2d_geometry(&xs, &big, 1, 1, AG_VALID, &g, &e));
    assert_non_null(strstr(e.msg, "must fit"));
}

static void test_conv2d_empty(void **state)
{
    (void)state;
    ag_tensor f = ag_ones(AG_F32, AG_SHAPE(2, 2, 1, 3));
    ag_tensor r = ag_conv2d(ag_zeros(AG_F32, AG_SHAPE(0, 4, 4, 1)), f, 1, 1, AG_VALID);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0, 3, 3, 3));
    r = ag_conv2d(ag_zeros(AG_F32, AG_SHAPE(2, 0, 4, 1)), f, 1, 1, AG_SAME);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 0, 4, 3));
    r = ag_conv2d(ag_zeros(AG_I32, AG_SHAPE(0, 4, 4, 1)), ag_ones(AG_I32, AG_SHAPE(2, 2, 1, 3)),
                  2, 2, AG_SAME);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(0, 2, 2, 3));
}

static void test_conv2d_errors(void **state)
{
    (void)state;
    ag_tensor x = ag_ones(AG_F32, AG_SHAPE(1, 4, 4, 3));
    ag_tensor f = ag_ones(AG_F32, AG_SHAPE(2, 2, 3, 1));
    EXPECT_ERROR(ag_conv2d(ag_ones(AG_F32, AG_SHAPE(4, 4, 3)), f, 1, 1, AG_SAME),
                 "the input must have rank 4 (NHWC");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F32, AG_SHAPE(2, 2, 3)), 1, 1, AG_SAME),
                 "the filter must have rank 4 (HWIO");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F32, AG_SHAPE(2, 2, 2, 1)), 1, 1, AG_SAME),
                 "the input has 3 channels (shape [1,4,4,3], NHWC) but the filter "
                 "expects 2");
    EXPECT_ERROR(ag_conv2d(x, f, 0, 1, AG_SAME), "strides must be at least 1, got 0 and 1");
    EXPECT_ERROR(ag_conv2d(x, f, 1, -2, AG_VALID), "got 1 and -2");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F32, AG_SHAPE(5, 2, 3, 1)), 1, 1, AG_VALID),
                 "the 5x2 filter window must fit in the 4x4 input");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F32, AG_SHAPE(2, 5, 3, 1)), 1, 1, AG_VALID),
                 "use AG_SAME");
    EXPECT_ERROR(ag_conv2d(x, f, 1, 1, (ag_padding)7), "invalid padding 7");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F32, AG_SHAPE(2, 2, 3, 0)), 1, 1, AG_SAME),
                 "must not have zero elements");
    EXPECT_ERROR(ag_conv2d(x, ag_ones(AG_F64, AG_SHAPE(2, 2, 3, 1)), 1, 1, AG_SAME),
                 "different dtypes");
    EXPECT_ERROR(ag_conv2d(ag_ones(AG_BOOL, AG_SHAPE(1, 2, 2, 1)),
                           ag_ones(AG_BOOL, AG_SHAPE(1, 1, 1, 1)), 1, 1, AG_SAME),
                 "numeric");
    EXPECT_ERROR(ag_conv2d(x, f, 0, 1, AG_SAME), "ag_conv2d: ");
}

static void test_conv2d_rule_unknown_dims(void **state)
{
    (void)state;
    ag_shape out;
    rt_err e;
    rt_attrs a = {.stride_h = 2, .stride_w = 2, .padding = AG_SAME};
    assert_true(infer2(RT_OP_CONV2D, &a, AG_SHAPE(-1, 28, -1, 3), AG_SHAPE(3, 3, 3, 8),
                       &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, 14, -1, 8)));
    a.padding = AG_VALID;
    assert_true(infer2(RT_OP_CONV2D, &a, AG_SHAPE(-1, 28, 28, -1), AG_SHAPE(-1, 3, 3, -1),
                       &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, -1, 13, -1)));
    assert_false(infer2(RT_OP_CONV2D, &a, AG_SHAPE(-1, 2, -1, 3), AG_SHAPE(3, 3, 3, 8),
                        &out, &e));
    assert_non_null(strstr(e.msg, "must fit"));
    assert_false(infer2(RT_OP_CONV2D, &a, AG_SHAPE(-1, 8, 8, 4), AG_SHAPE(3, 3, 3, 8),
                        &out, &e));
    assert_non_null(strstr(e.msg, "4 channels"));
}

/* ------------------------------------------- under a memory limit */

/* The process's mapped bytes now (the first field of /proc/self/statm). */
static size_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* In a child under `ulimit -v` with 96 MiB to spare (less than OpenBLAS's
 * work buffer): the product is an error in AG_ERRORS_RETURN mode, where
 * OpenBLAS alone retries its allocation forever. Exit status 0: the
 * expected error; 1: anything else; killed by the alarm: it hung. */
static void matmul_under_limit(void)
{
    alarm(30);
    struct rlimit r = {.rlim_cur = mapped_bytes() + ((size_t)96 << 20)};
    r.rlim_max = r.rlim_cur;
    if (setrlimit(RLIMIT_AS, &r) != 0)
        _exit(2);
    ag_tensor a = ag_ones(AG_F32, AG_SHAPE(64, 64));
    ag_tensor c = ag_matmul(a, a);
    bool ok = ag_is_error(c) && strstr(ag_last_error(), "OpenBLAS needs") &&
              strstr(ag_last_error(), "ulimit -v");
    _exit(ok ? 0 : 1);
}

static void test_matmul_under_a_memory_limit_is_an_error(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        matmul_under_limit();
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the product under a memory limit was killed by signal %d (%s)",
                 WTERMSIG(status), WTERMSIG(status) == SIGALRM ? "it hung" : "crashed");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_matmul_2x3_3x2_all_dtypes),
        TU_TEST(test_matmul_int_wraps),
        TU_TEST(test_matmul_rectangular_against_reference),
        TU_TEST(test_matmul_batched_shared_b),
        TU_TEST(test_matmul_batched_broadcast_a),
        TU_TEST(test_matmul_batched_both_broadcast),
        TU_TEST(test_matmul_bf16_batched),
        TU_TEST(test_matmul_empty_dims),
        TU_TEST(test_matmul_errors),
        TU_TEST(test_matmul_rule_unknown_dims),
        TU_TEST(test_conv2d_valid_2x2),
        TU_TEST(test_conv2d_same_2x2),
        TU_TEST(test_conv2d_same_3x3),
        TU_TEST(test_conv2d_channels),
        TU_TEST(test_conv2d_against_reference),
        TU_TEST(test_conv2d_chunked_f32_matches_i32),
        TU_TEST(test_conv2d_direct_f32_entry),
        TU_TEST(test_conv2d_empty),
        TU_TEST(test_conv2d_errors),
        TU_TEST(test_conv2d_rule_unknown_dims),
        TU_TEST(test_matmul_under_a_memory_limit_is_an_error),
    };
    TU_RUN(tests);
}
