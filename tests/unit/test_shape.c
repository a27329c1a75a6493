/* test_shape.c - reshape, transpose, concat, stack, slice, gather,
 * expand_dims, squeeze, shape_of, size and one_hot. */
#include "test_util.h"

#include "op_decls.h"

#include <stdlib.h>

static const ag_dtype all_dtypes[] = {AG_F32, AG_F64, AG_BF16, AG_I32, AG_I64, AG_BOOL};
enum { NUM_DTYPES = sizeof all_dtypes / sizeof all_dtypes[0] };

/* n distinct-ish elements of dtype dt (element j derived from j), in a
 * malloc'ed buffer, so byte-level references work for every dtype. */
static void *make_seq(ag_dtype dt, int64_t n)
{
    size_t es = rt_dtype_size(dt);
    char *buf = malloc(n > 0 ? (size_t)n * es : 1);
    for (int64_t j = 0; j < n; j++) {
        switch (dt) {
        case AG_F32: ((float *)buf)[j] = (float)j + 0.5f; break;
        case AG_F64: ((double *)buf)[j] = (double)j - 0.25; break;
        case AG_BF16: ((uint16_t *)buf)[j] = ag_f32_to_bf16((float)j); break;
        case AG_I32: ((int32_t *)buf)[j] = (int32_t)(j * 7 - 3); break;
        case AG_I64: ((int64_t *)buf)[j] = j * 1000000007LL; break;
        default: ((uint8_t *)buf)[j] = (uint8_t)(j % 3 == 0); break;
        }
    }
    return buf;
}

static void unflatten(const ag_shape *s, int64_t flat, int64_t *idx)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        idx[d] = flat % s->dims[d];
        flat /= s->dims[d];
    }
}

static int64_t flatten(const ag_shape *s, const int64_t *idx)
{
    int64_t flat = 0;
    for (int d = 0; d < s->rank; d++)
        flat = flat * s->dims[d] + idx[d];
    return flat;
}

static void check_bytes(ag_tensor r, const void *want, size_t bytes, int line)
{
    if (ag_is_error(r))
        fail_msg("line %d: unexpected error: %s", line, ag_last_error());
    if (bytes > 0 && memcmp(ag_data(r), want, bytes) != 0)
        fail_msg("line %d: data differs from the reference", line);
}

/* --------------------------------------------------------------- reshape */

static void test_reshape_basic(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor r = ag_reshape(t, AG_SHAPE(3, 2));
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3, 2));
    CHECK_VALUES(r, 1, 2, 3, 4, 5, 6);
    CHECK_TYPE(ag_reshape(t, AG_SHAPE(-1)), AG_F32, AG_SHAPE(6));
    CHECK_TYPE(ag_reshape(t, AG_SHAPE(3, -1)), AG_F32, AG_SHAPE(3, 2));
    CHECK_TYPE(ag_reshape(t, AG_SHAPE(-1, 1, 3)), AG_F32, AG_SHAPE(2, 1, 3));
    /* A one-element tensor becomes a scalar and back. */
    ag_tensor one = I32(AG_SHAPE(1, 1), 42);
    ag_tensor s = ag_reshape(one, AG_SCALAR);
    CHECK_TYPE(s, AG_I32, AG_SCALAR);
    CHECK_VALUES(s, 42);
    CHECK_TYPE(ag_reshape(s, AG_SHAPE(-1)), AG_I32, AG_SHAPE(1));
    /* Empty tensors reshape freely among shapes of zero elements. */
    ag_tensor empty = ag_zeros(AG_BOOL, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_reshape(empty, AG_SHAPE(3, 0, 2)), AG_BOOL, AG_SHAPE(3, 0, 2));
}

static void test_reshape_errors(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_reshape(t, AG_SHAPE(-1, -1)), "more than one -1");
    EXPECT_ERROR(ag_reshape(t, AG_SHAPE(4, -1)), "not a multiple of 4");
    EXPECT_ERROR(ag_reshape(t, AG_SHAPE(4, 2)), "shape [2,3] (6 elements) into shape [4,2]");
    EXPECT_ERROR(ag_reshape(t, AG_SHAPE(4, 2)), "ag_reshape: ");
    EXPECT_ERROR(ag_reshape(t, AG_SHAPE(3, -2)), "negative dim -2");
    ag_tensor empty = ag_zeros(AG_F32, AG_SHAPE(0, 3));
    EXPECT_ERROR(ag_reshape(empty, AG_SHAPE(0, -1)), "cannot infer the -1");
}

/* Reshape shares storage; the result stays valid after the original is
 * freed, because the storage is reference-counted. */
static void test_reshape_alias_outlives_source(void **state)
{
    (void)state;
    ag_tensor t = I64(AG_SHAPE(2, 2), 10, 20, 30, 40);
    ag_tensor r = ag_reshape(t, AG_SHAPE(4));
    ag_tensor e = ag_expand_dims(t, 0);
    ag_tensor q = ag_squeeze(e, 0);
    assert_ptr_equal(ag_data(t), ag_data(r)); /* aliased, not copied */
    ag_free(t);
    CHECK_VALUES(r, 10, 20, 30, 40);
    ag_free(e);
    CHECK_VALUES(q, 10, 20, 30, 40);
    CHECK_TYPE(q, AG_I64, AG_SHAPE(2, 2));
}

/* The copying kernel, as executors that cannot alias call it. */
static void test_reshape_kernel_copies(void **state)
{
    (void)state;
    ag_shape from = AG_SHAPE(2, 3), to = AG_SHAPE(3, 1, 2);
    for (int k = 0; k < NUM_DTYPES; k++) {
        ag_dtype dt = all_dtypes[k];
        rt_value *v = rt_value_new(dt, &from);
        void *seq = make_seq(dt, 6);
        memcpy(v->data, seq, rt_value_bytes(v));
        rt_value *out = rt_value_new(dt, &to);
        rt_attrs at = {.shape = to};
        rt_err e;
        assert_true(rt_k_reshape(&at, (rt_value *const[]){v}, 1, out, &e));
        assert_ptr_not_equal(out->data, v->data);
        assert_memory_equal(out->data, seq, rt_value_bytes(v));
        rt_value_free(v);
        rt_value_free(out);
        free(seq);
    }
    /* Empty and scalar values too. */
    rt_value *z = rt_value_new(AG_F32, &AG_SHAPE(0, 2));
    rt_value *zo = rt_value_new(AG_F32, &AG_SHAPE(2, 0));
    rt_err e;
    assert_true(rt_k_reshape(NULL, (rt_value *const[]){z}, 1, zo, &e));
    rt_value_free(z);
    rt_value_free(zo);
}

/* ------------------------------------------------------------- transpose */

/* Compares ag_transpose with an index-by-index reference. */
static void check_transpose(ag_dtype dt, ag_shape s, const int *perm, int line)
{
    int64_t numel = rt_shape_numel(&s);
    size_t es = rt_dtype_size(dt);
    char *src = make_seq(dt, numel);
    char *want = malloc(numel > 0 ? (size_t)numel * es : 1);
    ag_shape os = {.rank = s.rank};
    for (int d = 0; d < s.rank; d++)
        os.dims[d] = s.dims[perm[d]];
    for (int64_t o = 0; o < numel; o++) {
        int64_t oidx[AG_MAX_RANK], iidx[AG_MAX_RANK];
        unflatten(&os, o, oidx);
        for (int d = 0; d < s.rank; d++)
            iidx[perm[d]] = oidx[d];
        memcpy(want + o * (int64_t)es, src + flatten(&s, iidx) * (int64_t)es, es);
    }
    ag_tensor t = ag_from_data(dt, s, src);
    ag_tensor r = ag_transpose_at(AG_HERE, t, s.rank, perm);
    tu_check_type(r, dt, os, line);
    check_bytes(r, want, (size_t)numel * es, line);
    free(src);
    free(want);
}

static void test_transpose_2d(void **state)
{
    (void)state;
    ag_tensor t = I32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor r = ag_transpose(t, 1, 0);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(3, 2));
    CHECK_VALUES(r, 1, 4, 2, 5, 3, 6);
    CHECK_VALUES(ag_transpose(t, 0, 1), 1, 2, 3, 4, 5, 6);
    /* Sizes around and beyond the 32x32 tiles, in every element size. */
    for (int k = 0; k < NUM_DTYPES; k++) {
        check_transpose(all_dtypes[k], AG_SHAPE(67, 45), (const int[]){1, 0}, __LINE__);
        check_transpose(all_dtypes[k], AG_SHAPE(1, 9), (const int[]){1, 0}, __LINE__);
        check_transpose(all_dtypes[k], AG_SHAPE(32, 64), (const int[]){1, 0}, __LINE__);
    }
}

static void test_transpose_nd(void **state)
{
    (void)state;
    static const int perms3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int k = 0; k < NUM_DTYPES; k++)
        for (int p = 0; p < 6; p++) {
            check_transpose(all_dtypes[k], AG_SHAPE(2, 3, 4), perms3[p], __LINE__);
            check_transpose(all_dtypes[k], AG_SHAPE(5, 1, 3), perms3[p], __LINE__);
            check_transpose(all_dtypes[k], AG_SHAPE(1, 1, 7), perms3[p], __LINE__);
        }
    /* Rank 4 and 6, with size-1 dims and merges of contiguous dims. */
    check_transpose(AG_F32, AG_SHAPE(2, 3, 4, 5), (const int[]){0, 3, 1, 2}, __LINE__);
    check_transpose(AG_F64, AG_SHAPE(2, 1, 4, 3), (const int[]){2, 3, 1, 0}, __LINE__);
    check_transpose(AG_BF16, AG_SHAPE(3, 2, 1, 2, 2, 3),
                    (const int[]){5, 3, 4, 0, 2, 1}, __LINE__);
    check_transpose(AG_I64, AG_SHAPE(4, 3, 2, 2), (const int[]){0, 1, 3, 2}, __LINE__);
    /* Empty, scalar and rank-1. */
    check_transpose(AG_F32, AG_SHAPE(0, 3), (const int[]){1, 0}, __LINE__);
    check_transpose(AG_I32, AG_SHAPE(2, 0, 3), (const int[]){2, 1, 0}, __LINE__);
    check_transpose(AG_BOOL, AG_SHAPE(5), (const int[]){0}, __LINE__);
    ag_tensor s = ag_scalar_f64(2.5);
    ag_tensor r = ag_transpose_at(AG_HERE, s, 0, NULL);
    CHECK_TYPE(r, AG_F64, AG_SCALAR);
    CHECK_VALUES(r, 2.5);
}

/* ag_transpose(t) with no permutation reverses the axes, as TensorFlow. */
static void test_transpose_default(void **state)
{
    (void)state;
    ag_tensor t = I32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor r = ag_transpose(t);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(3, 2));
    CHECK_VALUES(r, 1, 4, 2, 5, 3, 6);
    /* rank 3: [2,3,4] -> [4,3,2], the same as the explicit (2, 1, 0) */
    int32_t seq[24];
    for (int i = 0; i < 24; i++)
        seq[i] = i;
    ag_tensor u = ag_from_data(AG_I32, AG_SHAPE(2, 3, 4), seq);
    ag_tensor want = ag_transpose(u, 2, 1, 0);
    ag_tensor got = ag_transpose(u);
    CHECK_TYPE(got, AG_I32, AG_SHAPE(4, 3, 2));
    for (int i = 0; i < 24; i++)
        assert_int_equal(ag_get_i32(got, i), ag_get_i32(want, i));
    /* rank 1 and 0: nothing to reverse; also ag_transpose_at's n == 0 */
    CHECK_VALUES(ag_transpose(F32(AG_SHAPE(3), 1, 2, 3)), 1, 2, 3);
    CHECK_VALUES(ag_transpose(ag_scalar_f32(7)), 7);
    CHECK_VALUES(ag_transpose_at(AG_HERE, t, 0, NULL), 1, 4, 2, 5, 3, 6);
    /* an error tensor stays one, without a new message */
    ag_clear_error();
    assert_true(ag_is_error(ag_transpose(rt_error_tensor())));
    assert_null(ag_last_error());
}

static void test_transpose_errors(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_transpose(t, 0, 0), "perm [0,0] is not a permutation of 0..1");
    EXPECT_ERROR(ag_transpose(t, 1, 2), "not a permutation");
    EXPECT_ERROR(ag_transpose(t, -1, 0), "entry 0 is -1");
    EXPECT_ERROR(ag_transpose(t, 2, 1, 0), "has 3 entries but the tensor has rank 2");
    EXPECT_ERROR(ag_transpose(t, 0), "ag_transpose: perm [0] has 1 entry");
}

/* ---------------------------------------------------------------- concat */

static void test_concat_axes(void **state)
{
    (void)state;
    ag_tensor a = I32(AG_SHAPE(2, 2), 1, 2, 3, 4);
    ag_tensor b = I32(AG_SHAPE(1, 2), 5, 6);
    ag_tensor c = I32(AG_SHAPE(2, 1), 7, 8);
    ag_tensor r0 = ag_concat(0, 2, ((ag_tensor[]){a, b}));
    CHECK_TYPE(r0, AG_I32, AG_SHAPE(3, 2));
    CHECK_VALUES(r0, 1, 2, 3, 4, 5, 6);
    ag_tensor r1 = ag_concat(1, 3, ((ag_tensor[]){a, c, a}));
    CHECK_TYPE(r1, AG_I32, AG_SHAPE(2, 5));
    CHECK_VALUES(r1, 1, 2, 7, 1, 2, 3, 4, 8, 3, 4);
    ag_tensor rn = ag_concat(-1, 2, ((ag_tensor[]){c, a}));
    CHECK_TYPE(rn, AG_I32, AG_SHAPE(2, 3));
    CHECK_VALUES(rn, 7, 1, 2, 8, 3, 4);
    ag_tensor rn2 = ag_concat(-2, 2, ((ag_tensor[]){b, a}));
    CHECK_VALUES(rn2, 5, 6, 1, 2, 3, 4);
    /* A single input is a copy. */
    ag_tensor one = ag_concat(0, 1, &a);
    CHECK_TYPE(one, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(one, 1, 2, 3, 4);
    assert_ptr_not_equal(ag_data(one), ag_data(a));
}

static void test_concat_dtypes_and_empty(void **state)
{
    (void)state;
    ag_tensor e = ag_zeros(AG_F64, AG_SHAPE(0, 2));
    ag_tensor x = F64(AG_SHAPE(1, 2), 1.5, 2.5);
    ag_tensor r = ag_concat(0, 3, ((ag_tensor[]){e, x, e}));
    CHECK_TYPE(r, AG_F64, AG_SHAPE(1, 2));
    CHECK_VALUES(r, 1.5, 2.5);
    CHECK_TYPE(ag_concat(1, 2, ((ag_tensor[]){e, e})), AG_F64, AG_SHAPE(0, 4));
    ag_tensor bools = ag_concat(0, 2, ((ag_tensor[]){BOOLS(AG_SHAPE(2), 1, 0),
                                                     BOOLS(AG_SHAPE(1), 1)}));
    CHECK_TYPE(bools, AG_BOOL, AG_SHAPE(3));
    CHECK_VALUES(bools, 1, 0, 1);
    uint16_t h[3] = {0x3F80, 0x4000, 0xC040}; /* 1, 2, -3 */
    ag_tensor bf = ag_concat(0, 2, ((ag_tensor[]){ag_from_data(AG_BF16, AG_SHAPE(2), h),
                                                  ag_from_data(AG_BF16, AG_SHAPE(1), h + 2)}));
    CHECK_TYPE(bf, AG_BF16, AG_SHAPE(3));
    CHECK_VALUES(bf, 1, 2, -3);
    /* Middle axis of a rank-3 tensor. */
    ag_tensor p = I64(AG_SHAPE(2, 1, 2), 1, 2, 3, 4);
    ag_tensor q = I64(AG_SHAPE(2, 2, 2), 5, 6, 7, 8, 9, 10, 11, 12);
    ag_tensor pq = ag_concat(1, 2, ((ag_tensor[]){p, q}));
    CHECK_TYPE(pq, AG_I64, AG_SHAPE(2, 3, 2));
    CHECK_VALUES(pq, 1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12);
}

static void test_concat_errors(void **state)
{
    (void)state;
    ag_tensor a = F32(AG_SHAPE(2, 2), 1, 2, 3, 4);
    ag_tensor b = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor v = F32(AG_SHAPE(2), 1, 2);
    EXPECT_ERROR(ag_concat(0, 2, ((ag_tensor[]){a, b})),
                 "input 1 has shape [2,3] but input 0 has shape [2,2]: dim 1 differs (3 vs 2)");
    EXPECT_ERROR(ag_concat(0, 2, ((ag_tensor[]){a, v})), "same rank");
    EXPECT_ERROR(ag_concat(2, 1, &a), "axis 2 is out of range");
    EXPECT_ERROR(ag_concat(-3, 1, &a), "axis -3 is out of range");
    ag_tensor s = ag_scalar_f32(1);
    EXPECT_ERROR(ag_concat(0, 2, ((ag_tensor[]){s, s})), "cannot concatenate scalars");
    EXPECT_ERROR(ag_concat(0, 2, ((ag_tensor[]){a, I32(AG_SHAPE(2, 2), 1, 2, 3, 4)})),
                 "different dtypes");
    EXPECT_ERROR(ag_concat(0, 0, &a), "at least one");
}

/* ----------------------------------------------------------------- stack */

static void test_stack(void **state)
{
    (void)state;
    ag_tensor a = I32(AG_SHAPE(2), 1, 2);
    ag_tensor b = I32(AG_SHAPE(2), 3, 4);
    ag_tensor c = I32(AG_SHAPE(2), 5, 6);
    ag_tensor r0 = ag_stack(0, 3, ((ag_tensor[]){a, b, c}));
    CHECK_TYPE(r0, AG_I32, AG_SHAPE(3, 2));
    CHECK_VALUES(r0, 1, 2, 3, 4, 5, 6);
    ag_tensor r1 = ag_stack(1, 3, ((ag_tensor[]){a, b, c}));
    CHECK_TYPE(r1, AG_I32, AG_SHAPE(2, 3));
    CHECK_VALUES(r1, 1, 3, 5, 2, 4, 6);
    ag_tensor rn = ag_stack(-1, 2, ((ag_tensor[]){a, b}));
    CHECK_TYPE(rn, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(rn, 1, 3, 2, 4);
    /* Scalars stack into a vector. */
    ag_tensor s = ag_stack(0, 3, ((ag_tensor[]){ag_scalar_f32(1), ag_scalar_f32(2),
                                                ag_scalar_f32(3)}));
    CHECK_TYPE(s, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(s, 1, 2, 3);
    /* Rank 2 on the last and the middle axis. */
    ag_tensor m = F64(AG_SHAPE(2, 2), 1, 2, 3, 4);
    ag_tensor m2 = F64(AG_SHAPE(2, 2), 5, 6, 7, 8);
    ag_tensor last = ag_stack(2, 2, ((ag_tensor[]){m, m2}));
    CHECK_TYPE(last, AG_F64, AG_SHAPE(2, 2, 2));
    CHECK_VALUES(last, 1, 5, 2, 6, 3, 7, 4, 8);
    ag_tensor mid = ag_stack(-2, 2, ((ag_tensor[]){m, m2}));
    CHECK_TYPE(mid, AG_F64, AG_SHAPE(2, 2, 2));
    CHECK_VALUES(mid, 1, 2, 5, 6, 3, 4, 7, 8);
    /* Empty elements. */
    ag_tensor e = ag_zeros(AG_BOOL, AG_SHAPE(0));
    CHECK_TYPE(ag_stack(1, 2, ((ag_tensor[]){e, e})), AG_BOOL, AG_SHAPE(0, 2));
}

static void test_stack_errors(void **state)
{
    (void)state;
    ag_tensor a = I32(AG_SHAPE(2), 1, 2);
    ag_tensor b = I32(AG_SHAPE(3), 1, 2, 3);
    EXPECT_ERROR(ag_stack(0, 2, ((ag_tensor[]){a, b})),
                 "input 1 has shape [3] but input 0 has shape [2]");
    EXPECT_ERROR(ag_stack(2, 1, &a), "axis 2 is out of range");
    EXPECT_ERROR(ag_stack(-3, 1, &a), "(valid: -2..1)");
    ag_tensor big = ag_zeros(AG_F32, AG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    EXPECT_ERROR(ag_stack(0, 1, &big), "rank 9");
}

/* ----------------------------------------------------------------- slice */

static void test_slice(void **state)
{
    (void)state;
    ag_tensor t = I32(AG_SHAPE(3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    ag_tensor r = ag_slice(t, AG_INDEX(1, 1), AG_INDEX(2, 2));
    CHECK_TYPE(r, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(r, 5, 6, 9, 10);
    ag_tensor tail = ag_slice(t, AG_INDEX(1, 2), AG_INDEX(-1, -1));
    CHECK_TYPE(tail, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(tail, 6, 7, 10, 11);
    ag_tensor rows = ag_slice(t, AG_INDEX(1, 0), AG_INDEX(2, -1));
    CHECK_VALUES(rows, 4, 5, 6, 7, 8, 9, 10, 11);
    ag_tensor col = ag_slice(t, AG_INDEX(0, 3), AG_INDEX(-1, 1));
    CHECK_TYPE(col, AG_I32, AG_SHAPE(3, 1));
    CHECK_VALUES(col, 3, 7, 11);
    /* Empty slices: size 0, or begin at the end with size -1. */
    CHECK_TYPE(ag_slice(t, AG_INDEX(1, 1), AG_INDEX(0, 2)), AG_I32, AG_SHAPE(0, 2));
    CHECK_TYPE(ag_slice(t, AG_INDEX(3, 4), AG_INDEX(-1, -1)), AG_I32, AG_SHAPE(0, 0));
    /* Whole tensor and scalars. */
    CHECK_VALUES(ag_slice(t, AG_INDEX(0, 0), AG_INDEX(3, 4)), 0, 1, 2, 3, 4, 5, 6, 7, 8,
                 9, 10, 11);
    ag_tensor s = ag_slice(ag_scalar_f32(4), AG_SCALAR, AG_SCALAR);
    CHECK_TYPE(s, AG_F32, AG_SCALAR);
    CHECK_VALUES(s, 4);
}

/* A 4-D slice of every dtype against an index-by-index reference. */
static void test_slice_reference(void **state)
{
    (void)state;
    ag_shape s = AG_SHAPE(3, 4, 2, 5);
    ag_shape begin = AG_INDEX(1, 0, 1, 2), size = AG_INDEX(2, 3, 1, 3);
    ag_shape os = AG_SHAPE(2, 3, 1, 3);
    for (int k = 0; k < NUM_DTYPES; k++) {
        ag_dtype dt = all_dtypes[k];
        size_t es = rt_dtype_size(dt);
        int64_t numel = rt_shape_numel(&s), onumel = rt_shape_numel(&os);
        char *src = make_seq(dt, numel), *want = malloc((size_t)onumel * es);
        for (int64_t o = 0; o < onumel; o++) {
            int64_t idx[AG_MAX_RANK];
            unflatten(&os, o, idx);
            for (int d = 0; d < 4; d++)
                idx[d] += begin.dims[d];
            memcpy(want + o * (int64_t)es, src + flatten(&s, idx) * (int64_t)es, es);
        }
        ag_tensor r = ag_slice(ag_from_data(dt, s, src), begin, size);
        CHECK_TYPE(r, dt, os);
        check_bytes(r, want, (size_t)onumel * es, __LINE__);
        free(src);
        free(want);
    }
}

static void test_slice_errors(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    EXPECT_ERROR(ag_slice(t, AG_INDEX(0, 3), AG_INDEX(1, 2)),
                 "axis 1: begin 3 + size 2 exceeds the dim 4");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(-1, 0), AG_INDEX(1, 1)), "axis 0: begin -1");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(4, 0), AG_INDEX(-1, 1)),
                 "axis 0: begin 4 is past the end of the dim 3");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(0, 0), AG_INDEX(1, -2)), "size -2");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(0), AG_INDEX(1)), "one entry per axis");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(0, 0), AG_INDEX(1, 2, 3)), "one entry per axis");
    EXPECT_ERROR(ag_slice(t, AG_INDEX(0, 1), AG_INDEX(1, INT64_MAX)), "exceeds");
}

/* ---------------------------------------------------------------- gather */

static void test_gather(void **state)
{
    (void)state;
    ag_tensor v = F32(AG_SHAPE(4), 10, 11, 12, 13);
    ag_tensor r = ag_gather(v, I32(AG_SHAPE(3), 3, 0, 3), 0);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(r, 13, 10, 13);
    ag_tensor m = I32(AG_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    /* 1-D indices along axis 0: rows. */
    ag_tensor rows = ag_gather(m, I64(AG_SHAPE(2), 2, 0), 0);
    CHECK_TYPE(rows, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(rows, 5, 6, 1, 2);
    /* 2-D indices along axis 0: shape [2,2] + [2]. */
    ag_tensor r2 = ag_gather(m, I32(AG_SHAPE(2, 2), 0, 1, 2, 2), 0);
    CHECK_TYPE(r2, AG_I32, AG_SHAPE(2, 2, 2));
    CHECK_VALUES(r2, 1, 2, 3, 4, 5, 6, 5, 6);
    /* Along axis 1 (and -1): [3] + indices shape. */
    ag_tensor c = ag_gather(m, I32(AG_SHAPE(3), 1, 1, 0), 1);
    CHECK_TYPE(c, AG_I32, AG_SHAPE(3, 3));
    CHECK_VALUES(c, 2, 2, 1, 4, 4, 3, 6, 6, 5);
    ag_tensor c2 = ag_gather(m, I64(AG_SHAPE(2, 1), 1, 0), -1);
    CHECK_TYPE(c2, AG_I32, AG_SHAPE(3, 2, 1));
    CHECK_VALUES(c2, 2, 1, 4, 3, 6, 5);
    /* A scalar index drops the axis. */
    ag_tensor sc = ag_gather(m, ag_scalar_i32(1), 0);
    CHECK_TYPE(sc, AG_I32, AG_SHAPE(2));
    CHECK_VALUES(sc, 3, 4);
    /* Empty indices; rank-3 middle axis with row copies. */
    CHECK_TYPE(ag_gather(m, ag_zeros(AG_I32, AG_SHAPE(0)), 0), AG_I32, AG_SHAPE(0, 2));
    ag_tensor t3 = I64(AG_SHAPE(2, 3, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    ag_tensor g3 = ag_gather(t3, I32(AG_SHAPE(2), 2, 1), 1);
    CHECK_TYPE(g3, AG_I64, AG_SHAPE(2, 2, 2));
    CHECK_VALUES(g3, 4, 5, 2, 3, 10, 11, 8, 9);
}

static void test_gather_dtypes(void **state)
{
    (void)state;
    for (int k = 0; k < NUM_DTYPES; k++) {
        ag_dtype dt = all_dtypes[k];
        size_t es = rt_dtype_size(dt);
        char *src = make_seq(dt, 6), *want = malloc(4 * es);
        /* Columns 2, 0 of a [2,3] tensor: elements 2, 0, 5, 3. */
        const int order[4] = {2, 0, 5, 3};
        for (int j = 0; j < 4; j++)
            memcpy(want + j * (int)es, src + order[j] * (int)es, es);
        ag_tensor r = ag_gather(ag_from_data(dt, AG_SHAPE(2, 3), src),
                                I32(AG_SHAPE(2), 2, 0), 1);
        CHECK_TYPE(r, dt, AG_SHAPE(2, 2));
        check_bytes(r, want, 4 * es, __LINE__);
        free(src);
        free(want);
    }
}

static void test_gather_errors(void **state)
{
    (void)state;
    ag_tensor m = F32(AG_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_gather(m, I32(AG_SHAPE(2), 1, 3), 0),
                 "index 3 (at position 1 of the indices) is out of range for axis 0 of "
                 "size 3; valid indices are 0..2");
    EXPECT_ERROR(ag_gather(m, I64(AG_SHAPE(1), -1), 1), "index -1");
    EXPECT_ERROR(ag_gather(m, I64(AG_SHAPE(1), -1), 1), "axis 1 of size 2");
    EXPECT_ERROR(ag_gather(ag_zeros(AG_F32, AG_SHAPE(0, 2)), ag_scalar_i32(0), 0),
                 "axis 0 has size 0");
    EXPECT_ERROR(ag_gather(m, F32(AG_SHAPE(1), 0), 0), "i32 or i64 indices");
    EXPECT_ERROR(ag_gather(m, ag_scalar_i32(0), 2), "axis 2 is out of range");
    EXPECT_ERROR(ag_gather(ag_scalar_f32(1), ag_scalar_i32(0), 0), "from a scalar");
}

/* --------------------------------------------------- expand_dims, squeeze */

static void test_expand_dims(void **state)
{
    (void)state;
    ag_tensor t = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    CHECK_TYPE(ag_expand_dims(t, 0), AG_F32, AG_SHAPE(1, 2, 3));
    CHECK_TYPE(ag_expand_dims(t, 1), AG_F32, AG_SHAPE(2, 1, 3));
    CHECK_TYPE(ag_expand_dims(t, 2), AG_F32, AG_SHAPE(2, 3, 1));
    CHECK_TYPE(ag_expand_dims(t, -1), AG_F32, AG_SHAPE(2, 3, 1));
    CHECK_TYPE(ag_expand_dims(t, -3), AG_F32, AG_SHAPE(1, 2, 3));
    CHECK_VALUES(ag_expand_dims(t, 1), 1, 2, 3, 4, 5, 6);
    ag_tensor s = ag_expand_dims(ag_scalar_i32(7), 0);
    CHECK_TYPE(s, AG_I32, AG_SHAPE(1));
    CHECK_VALUES(s, 7);
    EXPECT_ERROR(ag_expand_dims(t, 3), "axis 3 is out of range for a tensor of rank 2 "
                                       "(valid: -3..2)");
    EXPECT_ERROR(ag_expand_dims(t, -4), "axis -4");
    ag_tensor big = ag_zeros(AG_F32, AG_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    EXPECT_ERROR(ag_expand_dims(big, 0), "rank 9");
}

static void test_squeeze(void **state)
{
    (void)state;
    ag_tensor t = I32(AG_SHAPE(1, 3, 1), 1, 2, 3);
    CHECK_TYPE(ag_squeeze(t, 0), AG_I32, AG_SHAPE(3, 1));
    CHECK_TYPE(ag_squeeze(t, 2), AG_I32, AG_SHAPE(1, 3));
    CHECK_TYPE(ag_squeeze(t, -1), AG_I32, AG_SHAPE(1, 3));
    CHECK_TYPE(ag_squeeze(t, -3), AG_I32, AG_SHAPE(3, 1));
    ag_tensor all = ag_squeeze(t, AG_ALL_AXES);
    CHECK_TYPE(all, AG_I32, AG_SHAPE(3));
    CHECK_VALUES(all, 1, 2, 3);
    CHECK_TYPE(ag_squeeze(ag_zeros(AG_F32, AG_SHAPE(1, 1)), AG_ALL_AXES), AG_F32,
               AG_SCALAR);
    CHECK_TYPE(ag_squeeze(ag_zeros(AG_F32, AG_SHAPE(2, 0)), AG_ALL_AXES), AG_F32,
               AG_SHAPE(2, 0));
    CHECK_TYPE(ag_squeeze(ag_scalar_f32(1), AG_ALL_AXES), AG_F32, AG_SCALAR);
    EXPECT_ERROR(ag_squeeze(t, 1), "cannot squeeze axis 1 of shape [1,3,1]: its size is 3");
    EXPECT_ERROR(ag_squeeze(t, 3), "axis 3 is out of range");
    EXPECT_ERROR(ag_squeeze(t, -4), "axis -4 is out of range");
    EXPECT_ERROR(ag_squeeze(ag_scalar_f32(1), 0), "of a scalar");
}

/* ---------------------------------------------------- shape_of and size */

static void test_shape_of_and_size(void **state)
{
    (void)state;
    ag_tensor t = ag_zeros(AG_BF16, AG_SHAPE(2, 3, 4));
    ag_tensor s = ag_shape_of(t);
    CHECK_TYPE(s, AG_I64, AG_SHAPE(3));
    CHECK_VALUES(s, 2, 3, 4);
    ag_tensor n = ag_size(t);
    CHECK_TYPE(n, AG_I64, AG_SCALAR);
    CHECK_VALUES(n, 24);
    ag_tensor sc = ag_shape_of(ag_scalar_bool(true));
    CHECK_TYPE(sc, AG_I64, AG_SHAPE(0));
    CHECK_VALUES(ag_size(ag_scalar_bool(true)), 1);
    ag_tensor e = ag_zeros(AG_I32, AG_SHAPE(5, 0));
    CHECK_VALUES(ag_shape_of(e), 5, 0);
    CHECK_VALUES(ag_size(e), 0);
}

/* --------------------------------------------------------------- one_hot */

static void test_one_hot(void **state)
{
    (void)state;
    ag_tensor r = ag_one_hot(I32(AG_SHAPE(4), 0, 2, -1, 3), 3);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(4, 3));
    CHECK_VALUES(r, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0);
    ag_tensor r2 = ag_one_hot(I64(AG_SHAPE(2, 2), 1, 0, 5, 1), 2);
    CHECK_TYPE(r2, AG_F32, AG_SHAPE(2, 2, 2));
    CHECK_VALUES(r2, 0, 1, 1, 0, 0, 0, 0, 1);
    ag_tensor s = ag_one_hot(ag_scalar_i64(1), 4);
    CHECK_TYPE(s, AG_F32, AG_SHAPE(4));
    CHECK_VALUES(s, 0, 1, 0, 0);
    CHECK_TYPE(ag_one_hot(I32(AG_SHAPE(2), 0, 1), 0), AG_F32, AG_SHAPE(2, 0));
    CHECK_TYPE(ag_one_hot(ag_zeros(AG_I32, AG_SHAPE(0)), 3), AG_F32, AG_SHAPE(0, 3));
    EXPECT_ERROR(ag_one_hot(I32(AG_SHAPE(1), 0), -1), "depth -1 is negative");
    EXPECT_ERROR(ag_one_hot(F32(AG_SHAPE(1), 0), 2), "i32 or i64 indices");
}

/* ------------------------------------------- shape rules on symbolic values */

static rt_value sym(ag_dtype dt, ag_shape s)
{
    rt_value v = {.kind = RT_SYMBOLIC, .dtype = dt, .shape = s};
    v.numel = rt_shape_numel(&s);
    return v;
}

/* Runs op's rules on the values and checks the resulting shape. */
static void check_infer(rt_op op, const rt_attrs *a, rt_value **vals, int n, ag_shape want,
                        int line)
{
    ag_dtype dt;
    ag_shape got;
    rt_err e;
    char b1[128], b2[128];
    if (!rt_infer(op, a, vals, n, &dt, &got, &e))
        fail_msg("line %d: unexpected error: %s", line, e.msg);
    if (!ag_shape_equal(got, want))
        fail_msg("line %d: shape %s, expected %s", line, rt_shape_str(&got, b1, sizeof b1),
                 rt_shape_str(&want, b2, sizeof b2));
}

static void check_infer_fails(rt_op op, const rt_attrs *a, rt_value **vals, int n,
                              const char *needle, int line)
{
    ag_dtype dt;
    ag_shape got;
    rt_err e;
    if (rt_infer(op, a, vals, n, &dt, &got, &e))
        fail_msg("line %d: expected an error containing \"%s\"", line, needle);
    if (!strstr(e.msg, needle))
        fail_msg("line %d: error \"%s\" lacks \"%s\"", line, e.msg, needle);
}

/* One- and two-input forms; the attrs are built beforehand because their
 * braces would not protect commas inside a macro argument list. */
#define INFER1(op, a, want, x) check_infer(RT_OP_##op, (a), (rt_value *[]){x}, 1, (want), __LINE__)
#define INFER2(op, a, want, x, y) \
    check_infer(RT_OP_##op, (a), (rt_value *[]){x, y}, 2, (want), __LINE__)
#define INFER1_FAILS(op, a, needle, x) \
    check_infer_fails(RT_OP_##op, (a), (rt_value *[]){x}, 1, (needle), __LINE__)
#define INFER2_FAILS(op, a, needle, x, y) \
    check_infer_fails(RT_OP_##op, (a), (rt_value *[]){x, y}, 2, (needle), __LINE__)

static void test_rules_with_unknown_dims(void **state)
{
    (void)state;
    rt_value x = sym(AG_F32, AG_SHAPE(-1, 6)), y = sym(AG_F32, AG_SHAPE(2, -1));
    rt_value z = sym(AG_F32, AG_SHAPE(4, 6)), w = sym(AG_F32, AG_SHAPE(-1, 5));
    rt_value idx = sym(AG_I32, AG_SHAPE(-1));
    rt_attrs flat = {.shape = AG_SHAPE(-1)}, by3 = {.shape = AG_SHAPE(-1, 3)};
    rt_attrs known = {.shape = AG_SHAPE(3, 4)}, bad = {.shape = AG_SHAPE(2, 5)};
    rt_attrs perm = {.perm = AG_SHAPE(1, 0)};
    rt_attrs ax0 = {.axis = 0}, ax1 = {.axis = 1}, all = {.axis = AG_ALL_AXES};
    rt_attrs sl1 = {.begin = AG_INDEX(1, 2), .size = AG_INDEX(-1, 3)};
    rt_attrs sl2 = {.begin = AG_INDEX(5, 2), .size = AG_INDEX(2, -1)};
    rt_attrs sl3 = {.begin = AG_INDEX(0, 2), .size = AG_INDEX(1, 5)};
    rt_attrs depth = {.n = 5};
    INFER1(RESHAPE, &flat, AG_SHAPE(-1), &x);
    INFER1(RESHAPE, &by3, AG_SHAPE(-1, 3), &x);
    INFER1(RESHAPE, &known, AG_SHAPE(3, 4), &x);
    INFER1_FAILS(RESHAPE, &bad, "a multiple of 6", &x);
    INFER1(TRANSPOSE, &perm, AG_SHAPE(-1, 2), &y);
    INFER2(CONCAT, &ax0, AG_SHAPE(-1, 6), &x, &z);
    INFER2(CONCAT, &ax1, AG_SHAPE(4, 12), &z, &x);
    INFER2(CONCAT, &ax1, AG_SHAPE(2, -1), &y, &y);
    INFER2(CONCAT, &ax0, AG_SHAPE(6, 6), &z, &y);
    INFER2_FAILS(CONCAT, &ax0, "dim 1 differs", &z, &w);
    INFER2(STACK, &ax0, AG_SHAPE(2, 2, 6), &x, &y);
    INFER2_FAILS(STACK, &ax0, "the same shape", &x, &w);
    INFER1(SLICE, &sl1, AG_SHAPE(-1, 3), &x);
    INFER1(SLICE, &sl2, AG_SHAPE(2, 4), &x);
    INFER1_FAILS(SLICE, &sl3, "axis 1: begin 2 + size 5 exceeds the dim 6", &x);
    INFER2(GATHER, &ax1, AG_SHAPE(-1, -1), &x, &idx);
    INFER1(EXPAND_DIMS, &ax1, AG_SHAPE(-1, 1, 6), &x);
    INFER1(SQUEEZE, &ax1, AG_SHAPE(2), &y);
    INFER1_FAILS(SQUEEZE, &all, "dim 0 is unknown", &x);
    INFER1(SHAPE_OF, NULL, AG_SHAPE(2), &x);
    INFER1(SIZE, NULL, AG_SCALAR, &x);
    INFER1(ONE_HOT, &depth, AG_SHAPE(-1, 5), &idx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_reshape_basic),
        TU_TEST(test_reshape_errors),
        TU_TEST(test_reshape_alias_outlives_source),
        TU_TEST(test_reshape_kernel_copies),
        TU_TEST(test_transpose_2d),
        TU_TEST(test_transpose_default),
        TU_TEST(test_transpose_nd),
        TU_TEST(test_transpose_errors),
        TU_TEST(test_concat_axes),
        TU_TEST(test_concat_dtypes_and_empty),
        TU_TEST(test_concat_errors),
        TU_TEST(test_stack),
        TU_TEST(test_stack_errors),
        TU_TEST(test_slice),
        TU_TEST(test_slice_reference),
        TU_TEST(test_slice_errors),
        TU_TEST(test_gather),
        TU_TEST(test_gather_dtypes),
        TU_TEST(test_gather_errors),
        TU_TEST(test_expand_dims),
        TU_TEST(test_squeeze),
        TU_TEST(test_shape_of_and_size),
        TU_TEST(test_one_hot),
        TU_TEST(test_rules_with_unknown_dims),
    };
    TU_RUN(tests);
}
