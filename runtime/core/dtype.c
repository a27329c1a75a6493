/* dtype.c - dtype facts, bfloat16 conversion, and typed element access. */
#include "rt.h"
#include "suggest.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[AG_NUM_DTYPES + 1] = {
    [AG_F32] = {"f32", 4},  [AG_F64] = {"f64", 8}, [AG_BF16] = {"bf16", 2},
    [AG_I32] = {"i32", 4},  [AG_I64] = {"i64", 8}, [AG_BOOL] = {"bool", 1},
    [AG_I8] = {"i8", 1},
    [AG_NUM_DTYPES] = {"list", sizeof(void *)},
};

const char *ag_dtype_name(ag_dtype dt)
{
    if ((unsigned)dt > AG_NUM_DTYPES)
        return "invalid";
    return dtype_info[dt].name;
}

size_t rt_dtype_size(ag_dtype dt)
{
    return (unsigned)dt <= AG_NUM_DTYPES ? dtype_info[dt].size : 0;
}

bool rt_dtype_from_name(const char *name, ag_dtype *out)
{
    for (int i = 0; i < AG_NUM_DTYPES; i++) {
        if (strcmp(dtype_info[i].name, name) == 0) {
            *out = (ag_dtype)i;
            return true;
        }
    }
    return false;
}

const char *rt_dtype_suggest(const char *name)
{
    sg_best b;
    sg_begin(&b, name);
    for (int i = 0; i < AG_NUM_DTYPES; i++)
        sg_consider(&b, dtype_info[i].name);
    return b.name;
}

bool rt_is_float(ag_dtype dt) { return dt == AG_F32 || dt == AG_F64 || dt == AG_BF16; }
bool rt_is_int(ag_dtype dt) { return dt == AG_I32 || dt == AG_I64 || dt == AG_I8; }
bool rt_is_index(ag_dtype dt) { return dt == AG_I32 || dt == AG_I64; }
bool rt_is_numeric(ag_dtype dt) { return rt_is_float(dt) || rt_is_int(dt); }

bool rt_domain_has(rt_domain d, ag_dtype dt)
{
    switch (d) {
    case RT_DOM_NUM: return rt_is_numeric(dt);
    case RT_DOM_FLOAT: return rt_is_float(dt);
    case RT_DOM_BOOL: return dt == AG_BOOL;
    case RT_DOM_ANY: return (unsigned)dt < AG_NUM_DTYPES; /* not RT_LIST */
    default: return false;
    }
}

/*
 * bfloat16 is the top half of an IEEE f32. Rounding adds 0x7FFF plus the
 * lowest kept bit, which rounds to nearest with ties to even; a carry out of
 * the largest finite value gives infinity, as IEEE rounding does. NaN is
 * handled first so that the carry cannot turn it into infinity, and its
 * quiet bit is set so a signaling NaN stays a NaN.
 */
uint16_t ag_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/*
 * A double rounded once to bf16. Going through f32 would round twice: when
 * the f32 lands exactly on a bf16 tie but the double was not on it, the
 * f32 is nudged one ulp toward the double so the tie breaks the right way.
 */
uint16_t rt_f64_to_bf16(double d)
{
    float f = (float)d;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (!isnan(d) && (double)f != d && (bits & 0xFFFFu) == 0x8000u)
        f = nextafterf(f, d > (double)f ? INFINITY : -INFINITY);
    return ag_f32_to_bf16(f);
}

float ag_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double rt_load_f64(ag_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case AG_F32: return ((const float *)data)[i];
    case AG_F64: return ((const double *)data)[i];
    case AG_BF16: return ag_bf16_to_f32(((const uint16_t *)data)[i]);
    case AG_I32: return ((const int32_t *)data)[i];
    case AG_I64: return (double)((const int64_t *)data)[i];
    case AG_BOOL: return ((const uint8_t *)data)[i] ? 1.0 : 0.0;
    case AG_I8: return ((const int8_t *)data)[i];
    default: return 0.0;
    }
}

/* Float to int conversion truncates toward zero, like C and tf.cast;
 * values outside the target range saturate instead of being undefined. */
static int64_t f64_to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t rt_load_i64(ag_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case AG_I32: return ((const int32_t *)data)[i];
    case AG_I64: return ((const int64_t *)data)[i];
    case AG_BOOL: return ((const uint8_t *)data)[i] != 0;
    case AG_I8: return ((const int8_t *)data)[i];
    default: return f64_to_i64(rt_load_f64(dt, data, i));
    }
}

static int32_t i64_to_i32(int64_t v)
{
    /* Wraps modulo 2^32 like a two's-complement narrowing cast. */
    return (int32_t)(uint32_t)(uint64_t)v;
}

static int8_t i64_to_i8(int64_t v) { return (int8_t)(uint8_t)(uint64_t)v; } /* mod 2^8 */

/* Float to i8 saturates like float to i32 (truncating, NaN gives 0). */
static int8_t f64_to_i8(double v)
{
    if (isnan(v))
        return 0;
    return (int8_t)(v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v);
}

void rt_store_f64(ag_dtype dt, void *data, int64_t i, double v)
{
    switch (dt) {
    case AG_F32: ((float *)data)[i] = (float)v; break;
    case AG_F64: ((double *)data)[i] = v; break;
    case AG_BF16: ((uint16_t *)data)[i] = rt_f64_to_bf16(v); break;
    case AG_I32: {
        double c = isnan(v) ? 0 : v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
        ((int32_t *)data)[i] = (int32_t)c;
        break;
    }
    case AG_I64: ((int64_t *)data)[i] = f64_to_i64(v); break;
    case AG_BOOL: ((uint8_t *)data)[i] = v != 0.0; break;
    case AG_I8: ((int8_t *)data)[i] = f64_to_i8(v); break;
    default: break;
    }
}

void rt_store_i64(ag_dtype dt, void *data, int64_t i, int64_t v)
{
    switch (dt) {
    case AG_I32: ((int32_t *)data)[i] = i64_to_i32(v); break;
    case AG_I64: ((int64_t *)data)[i] = v; break;
    case AG_BOOL: ((uint8_t *)data)[i] = v != 0; break;
    case AG_I8: ((int8_t *)data)[i] = i64_to_i8(v); break;
    default: rt_store_f64(dt, data, i, (double)v); break;
    }
}
