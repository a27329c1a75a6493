/*
 * create.c - constants and creation ops: const, fill, eye, range,
 * random_uniform.
 */
#include "../core/op_decls.h"
#include "random.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Sets every element of v to x (converted to v's dtype once). */
void rt_fill(rt_value *v, double x)
{
    size_t esize = rt_dtype_size(v->dtype);
    if (v->numel == 0)
        return;
    rt_store_f64(v->dtype, v->data, 0, x);
    for (int64_t i = 1; i < v->numel; i++)
        memcpy((char *)v->data + (size_t)i * esize, v->data, esize);
}

/* ------------------------------------------------------ const and fill */

RT_KERNEL(rt_k_const)
{
    (void)in, (void)n, (void)e;
    memcpy(out->data, a->literal->data, rt_value_bytes(out));
    return true;
}

RT_KERNEL(rt_k_fill)
{
    (void)in, (void)n, (void)e;
    rt_fill(out, a->value);
    return true;
}

RT_KERNEL(rt_k_fill_like)
{
    (void)in, (void)n, (void)e;
    rt_fill(out, a->value);
    return true;
}

/* ---------------------------------------------------------------- eye */

/* The largest n whose n * n elements still fit in int64_t. */
#define EYE_MAX_N INT64_C(3037000499)

RT_SHAPE_RULE(rt_sh_eye)
{
    (void)in, (void)n;
    if (a->n < 0 || a->n > EYE_MAX_N) {
        rt_err_set(e, "size %lld is out of range (0..%lld)", (long long)a->n,
                   (long long)EYE_MAX_N);
        return false;
    }
    out->rank = 2;
    out->dims[0] = out->dims[1] = a->n;
    return true;
}

/* Zeros (all-zero bits in every dtype) and then a one on the diagonal,
 * written as raw bytes so one loop serves every dtype. */
RT_KERNEL(rt_k_eye)
{
    (void)a, (void)in, (void)n, (void)e;
    size_t es = rt_dtype_size(out->dtype);
    int64_t size = out->shape.dims[0];
    /* Aligned storage for one element of any dtype. */
    union {
        double f64;
        float f32;
        int64_t i64;
        int32_t i32;
        uint16_t u16;
        uint8_t u8;
    } one;
    if (out->numel == 0)
        return true;
    memset(out->data, 0, rt_value_bytes(out));
    rt_store_f64(out->dtype, &one, 0, 1.0);
    for (int64_t i = 0; i < size; i++)
        memcpy((char *)out->data + (size_t)(i * (size + 1)) * es, &one, es);
    return true;
}

/* -------------------------------------------------------------- range */

/* More elements than this is almost surely a mistake (and would not fit
 * the i32 sizes that much code assumes). */
#define RANGE_MAX_ELEMS (INT64_C(1) << 31)

static const char *const range_arg[3] = {"start", "limit", "delta"};

static bool range_scalars(rt_value *const *in, rt_err *e)
{
    char buf[160];
    for (int k = 0; k < 3; k++) {
        if (in[k]->shape.rank != 0) {
            rt_err_set(e, "%s must be a scalar, got a tensor of shape %s", range_arg[k],
                       rt_shape_str(&in[k]->shape, buf, sizeof buf));
            return false;
        }
    }
    return true;
}

static bool range_concrete(rt_value *const *in)
{
    for (int k = 0; k < 3; k++)
        if (in[k]->kind != RT_CONCRETE || !in[k]->data)
            return false;
    return true;
}

static bool range_too_long(double count, const char *args, rt_err *e)
{
    rt_err_set(e, "range(%s) would have %.17g elements, more than the limit %lld", args,
               count, (long long)RANGE_MAX_ELEMS);
    return false;
}

/* The element count of an integer range: ceil((limit - start) / delta),
 * or 0 when the range is empty, computed exactly: the distance between
 * two int64 values always fits in uint64_t. */
static bool range_count_int(int64_t start, int64_t limit, int64_t delta, int64_t *count,
                            rt_err *e)
{
    char args[128];
    uint64_t span, step;
    snprintf(args, sizeof args, "start=%lld, limit=%lld, delta=%lld", (long long)start,
             (long long)limit, (long long)delta);
    if (delta == 0) {
        rt_err_set(e, "range(%s): delta must not be 0", args);
        return false;
    }
    if (delta > 0 ? limit <= start : limit >= start) {
        *count = 0;
        return true;
    }
    if (delta > 0) {
        span = (uint64_t)limit - (uint64_t)start;
        step = (uint64_t)delta;
    } else {
        span = (uint64_t)start - (uint64_t)limit;
        step = 0 - (uint64_t)delta;
    }
    uint64_t c = span / step + (span % step != 0);
    if (c > (uint64_t)RANGE_MAX_ELEMS)
        return range_too_long((double)c, args, e);
    *count = (int64_t)c;
    return true;
}

/* The element count of a float range: ceil((limit - start) / delta) in
 * the dtype's own precision (f32 for f32 and bf16), as tf.range computes
 * it; so range(0, 1, 0.3) has 4 elements. */
static bool range_count_float(ag_dtype dt, double start, double limit, double delta,
                              int64_t *count, rt_err *e)
{
    char args[128];
    double q;
    snprintf(args, sizeof args, "start=%g, limit=%g, delta=%g", start, limit, delta);
    if (delta == 0) {
        rt_err_set(e, "range(%s): delta must not be 0", args);
        return false;
    }
    if (dt == AG_F64) {
        q = (limit - start) / delta;
    } else {
        float span = (float)limit - (float)start;
        q = span / (float)delta;
    }
    if (isnan(q)) {
        rt_err_set(e, "range(%s) has no defined length (it involves NaN or infinity)",
                   args);
        return false;
    }
    if (q <= 0) {
        *count = 0;
        return true;
    }
    q = ceil(q);
    if (q > (double)RANGE_MAX_ELEMS)
        return range_too_long(q, args, e);
    *count = (int64_t)q;
    return true;
}

/* The result is a vector whose length depends on the input VALUES: known
 * when all three are concrete, -1 (unknown) while tracing. */
RT_SHAPE_RULE(rt_sh_range)
{
    (void)a, (void)n;
    ag_dtype dt = in[0]->dtype;
    int64_t count = -1;
    if (!range_scalars(in, e))
        return false;
    if (range_concrete(in)) {
        bool ok = rt_is_int(dt)
                      ? range_count_int(rt_load_i64(dt, in[0]->data, 0),
                                        rt_load_i64(dt, in[1]->data, 0),
                                        rt_load_i64(dt, in[2]->data, 0), &count, e)
                      : range_count_float(dt, rt_load_f64(dt, in[0]->data, 0),
                                          rt_load_f64(dt, in[1]->data, 0),
                                          rt_load_f64(dt, in[2]->data, 0), &count, e);
        if (!ok)
            return false;
    }
    out->rank = 1;
    out->dims[0] = count;
    return true;
}

/* uint64_t to int64_t as two's complement, without implementation-defined
 * conversion. */
static int64_t u64_to_i64(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(~v) - 1;
}

/* Element i is start + i * delta (in uint64_t, so intermediate products
 * cannot overflow; every element lies between start and limit). */
static void range_i64(int64_t *dst, int64_t count, int64_t start, int64_t delta)
{
    uint64_t s = (uint64_t)start, d = (uint64_t)delta;
    for (int64_t i = 0; i < count; i++)
        dst[i] = u64_to_i64(s + (uint64_t)i * d);
}

/* |i * delta| < 2^31 * 2^31, so int64_t arithmetic is exact here. */
static void range_i32(int32_t *dst, int64_t count, int64_t start, int64_t delta)
{
    for (int64_t i = 0; i < count; i++)
        dst[i] = (int32_t)(start + i * delta);
}

/* Floats: element i = start + (T)i * delta in the dtype's precision, each
 * operation rounded separately (a compiled graph must match). */
static void range_f64(double *dst, int64_t count, double start, double delta)
{
    for (int64_t i = 0; i < count; i++) {
        double step = (double)i * delta;
        dst[i] = start + step;
    }
}

static void range_f32(float *dst, int64_t count, float start, float delta)
{
    for (int64_t i = 0; i < count; i++) {
        float step = (float)i * delta;
        dst[i] = start + step;
    }
}

/* bf16 computes in f32 and rounds each element once. */
static void range_bf16(uint16_t *dst, int64_t count, float start, float delta)
{
    for (int64_t i = 0; i < count; i++) {
        float step = (float)i * delta;
        dst[i] = ag_f32_to_bf16(start + step);
    }
}

RT_KERNEL(rt_k_range)
{
    (void)a, (void)n, (void)e;
    ag_dtype dt = out->dtype;
    int64_t count = out->numel;
    switch (dt) {
    case AG_I64:
        range_i64(out->data, count, rt_load_i64(dt, in[0]->data, 0),
                  rt_load_i64(dt, in[2]->data, 0));
        break;
    case AG_I32:
        range_i32(out->data, count, rt_load_i64(dt, in[0]->data, 0),
                  rt_load_i64(dt, in[2]->data, 0));
        break;
    case AG_F64:
        range_f64(out->data, count, rt_load_f64(dt, in[0]->data, 0),
                  rt_load_f64(dt, in[2]->data, 0));
        break;
    case AG_F32:
        range_f32(out->data, count, (float)rt_load_f64(dt, in[0]->data, 0),
                  (float)rt_load_f64(dt, in[2]->data, 0));
        break;
    default: /* AG_BF16; bool is rejected by the dtype rule */
        range_bf16(out->data, count, (float)rt_load_f64(dt, in[0]->data, 0),
                   (float)rt_load_f64(dt, in[2]->data, 0));
        break;
    }
    return true;
}

/* ----------------------------------------------------- random_uniform */

/* The generator; random.h documents the exact formulas. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The seed is hashed once into a key; kernels compute it outside their
 * loops and call keyed_bits per element. */
static inline uint64_t seed_key(uint64_t seed)
{
    return mix64(seed ^ UINT64_C(0x6A09E667F3BCC909));
}

static inline uint64_t keyed_bits(uint64_t key, uint64_t i)
{
    return mix64(key + i * UINT64_C(0x9E3779B97F4A7C15));
}

uint64_t rt_random_bits(uint64_t seed, uint64_t i)
{
    return keyed_bits(seed_key(seed), i);
}

static inline float unit24(uint64_t bits)
{
    return (float)(bits >> 40) * 0x1p-24f;
}

static inline double unit53(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1p-53;
}

/* The extern versions, for other layers; the kernels below use the
 * static ones, which the compiler can inline into their loops (an
 * exported function in a shared library cannot be, as it may be
 * interposed). */
float rt_random_unit24(uint64_t bits)
{
    return unit24(bits);
}

double rt_random_unit53(uint64_t bits)
{
    return unit53(bits);
}

static void uniform_f64(double *dst, int64_t count, double lo, double hi, uint64_t key)
{
    double span = hi - lo, below_hi = nextafter(hi, -INFINITY);
    for (int64_t i = 0; i < count; i++) {
        double step = span * unit53(keyed_bits(key, (uint64_t)i));
        double r = lo + step;
        dst[i] = r >= hi ? below_hi : r;
    }
}

static void uniform_f32(float *dst, int64_t count, double lo, double hi, uint64_t key)
{
    double span = hi - lo;
    for (int64_t i = 0; i < count; i++) {
        double step = span * (double)unit24(keyed_bits(key, (uint64_t)i));
        float r = (float)(lo + step);
        dst[i] = (double)r >= hi ? nextafterf(r, -INFINITY) : r;
    }
}

/* The bf16 value just below b (towards -infinity). */
static uint16_t bf16_next_down(uint16_t b)
{
    if ((b & 0x7FFFu) == 0)
        return 0x8001u; /* below +-0: the smallest negative subnormal */
    return (b & 0x8000u) ? (uint16_t)(b + 1u) : (uint16_t)(b - 1u);
}

static void uniform_bf16(uint16_t *dst, int64_t count, double lo, double hi,
                         uint64_t key)
{
    double span = hi - lo;
    for (int64_t i = 0; i < count; i++) {
        double step = span * (double)unit24(keyed_bits(key, (uint64_t)i));
        uint16_t r = ag_f32_to_bf16((float)(lo + step));
        dst[i] = (double)ag_bf16_to_f32(r) >= hi ? bf16_next_down(r) : r;
    }
}

/* The integers of [lo, hi) that dtype dt can hold are first .. first + m;
 * false when there are none. See random.h. */
static bool int_bounds(ag_dtype dt, double lo, double hi, int64_t *first, uint64_t *m)
{
    double tmin = dt == AG_I32 ? (double)INT32_MIN : -0x1p63;
    double tmax_plus1 = dt == AG_I32 ? 0x1p31 : 0x1p63;
    double first_d = fmax(ceil(lo), tmin), end_d = fmin(ceil(hi), tmax_plus1);
    if (!(first_d < end_d))
        return false;
    int64_t last = end_d >= 0x1p63 ? INT64_MAX : (int64_t)end_d - 1;
    *first = (int64_t)first_d;
    *m = (uint64_t)last - (uint64_t)*first;
    return true;
}

/* The offset of element i in [0, m]: floor(u * (m + 1)), clamped. The
 * product is >= 0 and below 2^64 (u < 1), so converting it to uint64_t
 * truncates, which is floor, exactly and without a libm call. */
static inline uint64_t int_offset(uint64_t key, int64_t i, double count, uint64_t m)
{
    uint64_t o = (uint64_t)(unit53(keyed_bits(key, (uint64_t)i)) * count);
    return o > m ? m : o;
}

static void uniform_i64(int64_t *dst, int64_t count, int64_t first, uint64_t m,
                        uint64_t key)
{
    double count_d = (double)m + 1.0;
    for (int64_t i = 0; i < count; i++)
        dst[i] = u64_to_i64((uint64_t)first + int_offset(key, i, count_d, m));
}

static void uniform_i32(int32_t *dst, int64_t count, int64_t first, uint64_t m,
                        uint64_t key)
{
    double count_d = (double)m + 1.0;
    for (int64_t i = 0; i < count; i++)
        dst[i] = (int32_t)(first + (int64_t)int_offset(key, i, count_d, m));
}

/* ag_random_uniform checks lo < hi, but graphs may reach the kernel with
 * attributes of their own; the rest depends on the dtype, which only the
 * kernel sees together with the bounds. */
static bool uniform_bounds_ok(ag_dtype dt, double lo, double hi, rt_err *e)
{
    if (!(lo < hi)) {
        rt_err_set(e, "the range [%g, %g) is empty", lo, hi);
        return false;
    }
    if (rt_is_float(dt) && !isfinite(hi - lo)) {
        rt_err_set(e, "the range [%g, %g) is not finite; give finite bounds", lo, hi);
        return false;
    }
    if (dt != AG_F64 && rt_is_float(dt) && (fabs(lo) > FLT_MAX || fabs(hi) > FLT_MAX)) {
        rt_err_set(e, "the range [%g, %g) goes beyond what %s can hold", lo, hi,
                   ag_dtype_name(dt));
        return false;
    }
    return true;
}

RT_KERNEL(rt_k_random_uniform)
{
    (void)in, (void)n;
    ag_dtype dt = out->dtype;
    double lo = a->lo, hi = a->hi;
    int64_t first = 0;
    uint64_t m = 0;
    if (!uniform_bounds_ok(dt, lo, hi, e))
        return false;
    if (rt_is_int(dt) && !int_bounds(dt, lo, hi, &first, &m)) {
        rt_err_set(e, "no %s value lies in [%g, %g); widen the range", ag_dtype_name(dt),
                   lo, hi);
        return false;
    }
    uint64_t key = seed_key(a->seed);
    switch (dt) {
    case AG_F64: uniform_f64(out->data, out->numel, lo, hi, key); break;
    case AG_F32: uniform_f32(out->data, out->numel, lo, hi, key); break;
    case AG_BF16: uniform_bf16(out->data, out->numel, lo, hi, key); break;
    case AG_I64: uniform_i64(out->data, out->numel, first, m, key); break;
    default: uniform_i32(out->data, out->numel, first, m, key); break;
    }
    return true;
}
