/*
 * numerics.c - the MXU's arithmetic; numerics.h states the contract (bf16
 * parts, the per-k term, the chunked summation over k) that every function
 * here must reproduce bit for bit.
 *
 * BUILD WITH -ffp-contract=off. The contract is a fixed sequence of
 * separately rounded f32 multiplies and adds; a compiler that fuses
 * s + a*b into one FMA rounds once instead of twice and changes the bits
 * (a bf16 x bf16 product is exact, so only products that overflow or
 * underflow differ, but those must be deterministic too). GCC defaults to
 * off in ISO mode (-std=c11, which the project uses) but to "fast" in GNU
 * mode; clang defaults to "on" and also honours the STDC pragma below.
 * -ffast-math (reassociation) and x87 excess precision are refused at
 * compile time.
 *
 * How it is fast: a small BLAS-style GEMM. B is rounded and split into its
 * bf16 parts once, into panels of NR columns ([k][part][NR], zero-padded
 * on the right); A a block of rows at a time into micro-panels of MR rows
 * ([k][part][MR], zero-padded at the bottom). A micro-kernel computes an
 * MR x NR tile of C over all of k, keeping the tile's chunk sums in a
 * local array the compiler can hold in registers; its inner loops have
 * constant trip counts, so the compiler vectorizes them across j, which
 * never reorders the additions of any one output element. (Per element
 * the order is exactly numerics.h's; only the loops around it are
 * blocked: row block, B panel, chunk, k, tile row, tile column.) conv2d feeds the same GEMM with
 * im2col rows built one at a time, so no [pixels, K] buffer exists.
 */
#include "numerics.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __FAST_MATH__
#error "numerics.c needs exact IEEE f32 semantics; do not build it with -ffast-math"
#endif
/* 1 and 2 mean float arithmetic carried out in double or long double (x87);
 * 0, and 16 (GNU mode with _Float16 support), keep f32 in f32. */
#if FLT_EVAL_METHOD == 1 || FLT_EVAL_METHOD == 2
#error "numerics.c needs f32 arithmetic evaluated in f32 (e.g. SSE, not x87)"
#endif
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

enum {
    MR = 4,                    /* micro-tile rows (of A and C) */
    NR = 8,                    /* micro-tile columns (of B and C) */
    CHUNK = TPU_MXU_K_CHUNK,   /* k summed before joining the accumulator */
    A_BLOCK_BYTES = 256 << 10, /* packed A rows per block: stays in L2 */
    A_BLOCK_MAX_PANELS = 16    /* at most 64 rows per block */
};

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t max64(int64_t x, int64_t y) { return x > y ? x : y; }
static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* malloc that never returns NULL: out of memory is fatal, as in the
 * runtime's rt_xmalloc (which this libc-only module cannot call). */
static void *xmalloc(int64_t count, size_t size)
{
    size_t n = (size_t)max64(count, 1);
    if (count < 0 || n > SIZE_MAX / size) {
        fprintf(stderr, "tpu numerics: impossible allocation of %lld x %zu bytes\n",
                (long long)count, size);
        abort();
    }
    void *p = malloc(n * size);
    if (!p) {
        fprintf(stderr, "tpu numerics: out of memory (%zu bytes)\n", n * size);
        abort();
    }
    return p;
}

/* ================================================================ bf16 */

uint16_t tpu_bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep sign and top payload, quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Round to nearest even on the dropped 16 bits; a carry out of the
     * mantissa bumps the exponent, which is right, and rounds the largest
     * values up to inf. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tpu_bf16_to_f32(uint16_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tpu_round_bf16(float x) { return tpu_bf16_to_f32(tpu_bf16_bits(x)); }

/* ======================================================= bf16 operand parts */

static int parts_of(tpu_precision p)
{
    return p == TPU_PRECISION_HIGHEST ? 3 : p == TPU_PRECISION_HIGH ? 2 : 1;
}

/* Writes x's np bf16 parts (hi; hi, lo; or hi, mid, lo) to dst[0],
 * dst[stride], ... . The differences are exact in f32 (numerics.h). */
static void split(float x, int np, float *dst, int64_t stride)
{
    float hi = tpu_round_bf16(x);
    dst[0] = hi;
    if (np == 1)
        return;
    float rest = x - hi;
    if (np == 2) {
        dst[stride] = tpu_round_bf16(rest);
        return;
    }
    float mid = tpu_round_bf16(rest);
    dst[stride] = mid;
    dst[2 * stride] = tpu_round_bf16(rest - mid);
}

/* B [k, n] into ceil(n / NR) panels, panel jb holding columns
 * [jb*NR, jb*NR + NR) as [k][part][NR]; columns past n are zero. Each
 * element is rounded and split once here, never per product. */
static float *pack_b(const float *b, int64_t k, int64_t n, int np)
{
    int64_t panels = ceil_div(n, NR), panel_size = k * np * NR;
    float *pack = xmalloc(panels * panel_size, sizeof *pack);
    for (int64_t kk = 0; kk < k; kk++) {
        for (int64_t jb = 0; jb < panels; jb++) {
            float *dst = pack + jb * panel_size + kk * np * NR;
            for (int64_t jj = 0; jj < NR; jj++) {
                int64_t col = jb * NR + jj;
                split(col < n ? b[kk * n + col] : 0.0f, np, dst + jj, NR);
            }
        }
    }
    return pack;
}

/* Where the GEMM's A rows come from: row returns a pointer to the k
 * values of row r, either in place or written into tmp (k floats). */
typedef struct row_source {
    const float *(*row)(const void *ctx, int64_t r, float *tmp);
    const void *ctx;
} row_source;

/* A rows [r0, r0 + rows) into ceil(rows / MR) micro-panels, each
 * [k][part][MR]; rows past the block are zero. */
static void pack_a(const row_source *src, int64_t r0, int64_t rows, int64_t k, int np,
                   float *tmp, float *pack)
{
    int64_t panel_size = k * np * MR;
    for (int64_t ib = 0; ib < ceil_div(rows, MR); ib++) {
        float *panel = pack + ib * panel_size;
        for (int64_t r = 0; r < MR; r++) {
            int64_t row = ib * MR + r;
            const float *x = row < rows ? src->row(src->ctx, r0 + row, tmp) : NULL;
            for (int64_t kk = 0; kk < k; kk++)
                split(x ? x[kk] : 0.0f, np, panel + kk * np * MR + r, MR);
        }
    }
}

/* ========================================================= micro-kernels */

/*
 * One chunk: s[r][j] = s[r][j] + t_k for count consecutive k, in order,
 * where t_k is numerics.h's term for the precision. ap and bp point at the
 * chunk's first k in the packed panels. s is copied into a local tile so
 * that it lives in registers for the whole chunk.
 */
typedef void (*chunk_fn)(float (*restrict s)[NR], const float *restrict ap,
                         const float *restrict bp, int64_t count);

/* Unrolling the row loop lets the whole tile live in registers (GCC
 * otherwise keeps it on the stack: 512^3 DEFAULT took 16 ms instead of
 * 10). Only speed depends on it. */
#if defined(__GNUC__)
#define UNROLL_ROWS _Pragma("GCC unroll 4") /* 4 == MR */
#else
#define UNROLL_ROWS
#endif

/* Infinities and NaNs belong to the hi*hi pass only (see numerics.h). */
static inline float finite_or_zero(float t) { return fabsf(t) <= FLT_MAX ? t : 0.0f; }

static void chunk_default(float (*restrict s)[NR], const float *restrict ap,
                          const float *restrict bp, int64_t count)
{
    float v[MR][NR];
    memcpy(v, s, sizeof v);
    for (int64_t kk = 0; kk < count; kk++, ap += MR, bp += NR)
        UNROLL_ROWS
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++)
                v[r][j] = v[r][j] + ap[r] * bp[j];
    memcpy(s, v, sizeof v);
}

static void chunk_high(float (*restrict s)[NR], const float *restrict ap,
                       const float *restrict bp, int64_t count)
{
    float v[MR][NR];
    memcpy(v, s, sizeof v);
    for (int64_t kk = 0; kk < count; kk++, ap += 2 * MR, bp += 2 * NR) {
        const float *ahi = ap, *alo = ap + MR, *bhi = bp, *blo = bp + NR;
        UNROLL_ROWS
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) {
                float t = ahi[r] * blo[j];
                t = t + alo[r] * bhi[j];
                t = finite_or_zero(t);
                t = t + ahi[r] * bhi[j];
                v[r][j] = v[r][j] + t;
            }
    }
    memcpy(s, v, sizeof v);
}

static void chunk_highest(float (*restrict s)[NR], const float *restrict ap,
                          const float *restrict bp, int64_t count)
{
    float v[MR][NR];
    memcpy(v, s, sizeof v);
    for (int64_t kk = 0; kk < count; kk++, ap += 3 * MR, bp += 3 * NR) {
        const float *ahi = ap, *amid = ap + MR, *alo = ap + 2 * MR;
        const float *bhi = bp, *bmid = bp + NR, *blo = bp + 2 * NR;
        UNROLL_ROWS
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) {
                float t = ahi[r] * blo[j];
                t = t + alo[r] * bhi[j];
                t = t + amid[r] * bmid[j];
                t = t + ahi[r] * bmid[j];
                t = t + amid[r] * bhi[j];
                t = finite_or_zero(t);
                t = t + ahi[r] * bhi[j];
                v[r][j] = v[r][j] + t;
            }
    }
    memcpy(s, v, sizeof v);
}

static chunk_fn chunk_for(tpu_precision p)
{
    return p == TPU_PRECISION_HIGHEST ? chunk_highest
           : p == TPU_PRECISION_HIGH  ? chunk_high
                                      : chunk_default;
}

/* The MR x NR tile of C from one A micro-panel and one B panel: the
 * chunked summation of numerics.h, each chunk from +0, each chunk sum
 * added to the accumulator (from +0) in chunk order. */
static void tile(chunk_fn chunk, int np, const float *ap, const float *bp, int64_t k,
                 float acc[MR][NR])
{
    memset(acc, 0, sizeof(float[MR][NR]));
    for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
        float s[MR][NR] = {{0}};
        chunk(s, ap + k0 * np * MR, bp + k0 * np * NR, min64(CHUNK, k - k0));
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++)
                acc[r][j] = acc[r][j] + s[r][j];
    }
}

/* Stores the part of a tile that lies inside C [m, n] at (row0, col0). */
static void store_tile(float acc[MR][NR], float *c, int64_t m, int64_t n, int64_t row0,
                       int64_t col0)
{
    int64_t rows = min64(MR, m - row0), cols = min64(NR, n - col0);
    for (int64_t r = 0; r < rows; r++)
        memcpy(c + (row0 + r) * n + col0, acc[r], (size_t)cols * sizeof(float));
}

/* ================================================================= GEMM */

/* How many A rows to pack at a time: a multiple of MR whose packed parts
 * fit in A_BLOCK_BYTES (at least MR rows, however long k is). */
static int64_t a_block_rows(int64_t k, int np)
{
    int64_t panel_bytes = max64(1, k * np * MR * (int64_t)sizeof(float));
    int64_t panels = A_BLOCK_BYTES / panel_bytes;
    return MR * min64(A_BLOCK_MAX_PANELS, max64(1, panels));
}

/* C [m, n] = rows of src [m, k] x the packed B, for precision p. Within an
 * A block, each B panel is used for all of the block's micro-panels while
 * it is still in cache. */
static void gemm(const row_source *src, int64_t m, int64_t k, const float *bpack,
                 int64_t n, float *c, tpu_precision p)
{
    int np = parts_of(p);
    chunk_fn chunk = chunk_for(p);
    int64_t block = a_block_rows(k, np), panels = ceil_div(n, NR);
    float *apack = xmalloc(block * k * np, sizeof *apack);
    float *tmp = xmalloc(k, sizeof *tmp);
    float acc[MR][NR];
    for (int64_t r0 = 0; r0 < m; r0 += block) {
        int64_t rows = min64(block, m - r0);
        pack_a(src, r0, rows, k, np, tmp, apack);
        for (int64_t jb = 0; jb < panels; jb++) {
            const float *bp = bpack + jb * k * np * NR;
            for (int64_t ib = 0; ib < ceil_div(rows, MR); ib++) {
                tile(chunk, np, apack + ib * k * np * MR, bp, k, acc);
                store_tile(acc, c, m, n, r0 + ib * MR, jb * NR);
            }
        }
    }
    free(tmp);
    free(apack);
}

typedef struct matrix_rows {
    const float *a;
    int64_t k;
} matrix_rows;

static const float *matrix_row(const void *ctx, int64_t r, float *tmp)
{
    (void)tmp; /* a row-major matrix's rows are already contiguous */
    const matrix_rows *mr = ctx;
    return mr->a + r * mr->k;
}

void tpu_mxu_matmul_batched_f32(const float *a, const float *b, float *c, int64_t batch,
                                int64_t m, int64_t k, int64_t n, int64_t b_batch_stride,
                                tpu_precision p)
{
    if (batch <= 0 || m <= 0 || n <= 0)
        return;
    int np = parts_of(p);
    float *bpack = NULL;
    for (int64_t bi = 0; bi < batch; bi++) {
        if (!bpack || b_batch_stride != 0) { /* a shared B is packed once */
            free(bpack);
            bpack = pack_b(b + bi * b_batch_stride, k, n, np);
        }
        matrix_rows rows = {a + bi * m * k, k};
        row_source src = {matrix_row, &rows};
        gemm(&src, m, k, bpack, n, c + bi * m * n, p);
    }
    free(bpack);
}

void tpu_mxu_matmul_f32(const float *a, const float *b, float *c, int64_t m, int64_t k,
                        int64_t n, tpu_precision p)
{
    tpu_mxu_matmul_batched_f32(a, b, c, 1, m, k, n, 0, p);
}

/* ========================================================== int32 matmul */

/* Unsigned arithmetic wraps where signed would overflow; int32_t and
 * uint32_t may alias each other, so the operands are read as uint32_t. */
void tpu_mxu_matmul_i32(const int32_t *a, const int32_t *b, int32_t *c, int64_t m,
                        int64_t k, int64_t n)
{
    const uint32_t *ua = (const uint32_t *)a, *ub = (const uint32_t *)b;
    uint32_t *uc = (uint32_t *)c;
    for (int64_t i = 0; i < m; i++) {
        uint32_t *crow = uc + i * n;
        for (int64_t j = 0; j < n; j++)
            crow[j] = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            uint32_t x = ua[i * k + kk];
            const uint32_t *brow = ub + kk * n;
            for (int64_t j = 0; j < n; j++)
                crow[j] += x * brow[j];
        }
    }
}

/* ================================================================ conv2d */

/* One spatial dim, as the runtime's conv_out_dim (TF's rule). */
static int64_t conv_out_dim(int64_t in, int64_t k, int64_t stride, bool same)
{
    if (same)
        return ceil_div(in, stride);
    return in >= k ? (in - k) / stride + 1 : 0;
}

/* SAME's padding before (top / left): half the total, rounded down; the
 * odd one goes after, as in TF and the runtime's conv_pad_before. */
static int64_t conv_pad_before(int64_t in, int64_t k, int64_t stride, int64_t out,
                               bool same)
{
    if (!same)
        return 0;
    int64_t total = (out - 1) * stride + k - in;
    return total > 0 ? total / 2 : 0;
}

void tpu_conv2d_out_dims(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                         int64_t sw, bool pad_same, int64_t *oh, int64_t *ow)
{
    *oh = conv_out_dim(h, kh, sh, pad_same);
    *ow = conv_out_dim(w, kw, sw, pad_same);
}

typedef struct conv_geom {
    const float *in;
    int64_t h, w, cin, kh, kw, sh, sw;
    int64_t oh, ow, pad_top, pad_left;
} conv_geom;

/* The im2col row of output pixel r = (b, y, x) flattened: the window's
 * values in (kh, kw, cin) order, zero where it hangs over the padding.
 * Each in-bounds tap's cin values are contiguous in NHWC. */
static const float *conv_row(const void *ctx, int64_t r, float *tmp)
{
    const conv_geom *g = ctx;
    int64_t b = r / (g->oh * g->ow), y = r / g->ow % g->oh, x = r % g->ow;
    size_t tap_bytes = (size_t)g->cin * sizeof(float);
    for (int64_t dy = 0; dy < g->kh; dy++) {
        int64_t iy = y * g->sh - g->pad_top + dy;
        for (int64_t dx = 0; dx < g->kw; dx++) {
            int64_t ix = x * g->sw - g->pad_left + dx;
            float *dst = tmp + (dy * g->kw + dx) * g->cin;
            if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
                memset(dst, 0, tap_bytes);
            else
                memcpy(dst, g->in + ((b * g->h + iy) * g->w + ix) * g->cin, tap_bytes);
        }
    }
    return tmp;
}

void tpu_mxu_conv2d_f32(const float *in, const float *filter, float *out, int64_t n,
                        int64_t h, int64_t w, int64_t cin, int64_t kh, int64_t kw,
                        int64_t cout, int64_t sh, int64_t sw, bool pad_same,
                        tpu_precision p)
{
    conv_geom g = {in, h, w, cin, kh, kw, sh, sw, 0, 0, 0, 0};
    tpu_conv2d_out_dims(h, w, kh, kw, sh, sw, pad_same, &g.oh, &g.ow);
    int64_t pixels = n * g.oh * g.ow, k = kh * kw * cin;
    if (pixels <= 0 || cout <= 0)
        return;
    g.pad_top = conv_pad_before(h, kh, sh, g.oh, pad_same);
    g.pad_left = conv_pad_before(w, kw, sw, g.ow, pad_same);
    /* HWIO is already the row-major [K, cout] matrix of the im2col product. */
    float *bpack = pack_b(filter, k, cout, parts_of(p));
    row_source src = {conv_row, &g};
    gemm(&src, pixels, k, bpack, cout, out, p);
    free(bpack);
}

/* ================================================================ int8 */

/* c[0..n) = sum over k of x[kk] * b[kk][j] in wrapping uint32 (x: one row
 * of a with its zero point taken off, 0 at a padding tap). */
static void qrow(const uint32_t *x, const int8_t *b, uint32_t *c, int64_t k, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        c[j] = 0;
    for (int64_t kk = 0; kk < k; kk++) {
        const int8_t *brow = b + kk * n;
        for (int64_t j = 0; j < n; j++)
            c[j] += x[kk] * (uint32_t)brow[j];
    }
}

void tpu_mxu_qmatmul_s8(const int8_t *a, int32_t a_zero, const int8_t *b, int32_t *c, int64_t m,
                        int64_t k, int64_t n)
{
    uint32_t *x = xmalloc(k, sizeof *x);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t kk = 0; kk < k; kk++)
            x[kk] = (uint32_t)a[i * k + kk] - (uint32_t)a_zero;
        qrow(x, b, (uint32_t *)c + i * n, k, n);
    }
    free(x);
}

void tpu_mxu_qconv2d_s8(const int8_t *in, int32_t in_zero, const int8_t *filter, int32_t *out,
                        int64_t n, int64_t h, int64_t w, int64_t cin, int64_t kh, int64_t kw,
                        int64_t cout, int64_t sh, int64_t sw, bool pad_same)
{
    int64_t oh, ow;
    tpu_conv2d_out_dims(h, w, kh, kw, sh, sw, pad_same, &oh, &ow);
    int64_t top = conv_pad_before(h, kh, sh, oh, pad_same);
    int64_t left = conv_pad_before(w, kw, sw, ow, pad_same);
    int64_t k = kh * kw * cin;
    uint32_t *x = xmalloc(k, sizeof *x);
    for (int64_t r = 0; r < n * oh * ow; r++) {
        int64_t b = r / (oh * ow), y = r / ow % oh, xx = r % ow;
        for (int64_t dy = 0; dy < kh; dy++)
            for (int64_t dx = 0; dx < kw; dx++) {
                int64_t iy = y * sh - top + dy, ix = xx * sw - left + dx;
                uint32_t *dst = x + (dy * kw + dx) * cin;
                bool pad = iy < 0 || iy >= h || ix < 0 || ix >= w;
                const int8_t *src = pad ? NULL : in + ((b * h + iy) * w + ix) * cin;
                for (int64_t c = 0; c < cin; c++) /* a padding tap is the zero point: 0 */
                    dst[c] = pad ? 0 : (uint32_t)src[c] - (uint32_t)in_zero;
            }
        qrow(x, filter, (uint32_t *)out + r * cout, k, cout);
    }
    free(x);
}
