/*
 * numerics.h - the TPU-model's matrix unit (MXU) arithmetic (prefix tpu_):
 * bf16 rounding, f32 matmul / batched matmul / conv2d with the MXU's
 * rounding and summation order, wrapping int32 matmul, and the int8
 * products (qmatmul, qconv2d) with int32 sums.
 *
 * Every result is a pure function of the inputs: the same bits on every
 * run, machine and thread count, because the order of every f32 addition
 * is fixed below. This header depends on nothing but libc.
 *
 * ---------------------------------------------------------------- bf16
 *
 * f32 -> bf16 rounds to nearest, ties to even, on the bit pattern (the top
 * 16 bits of the f32 are kept). Finite values beyond the largest bf16
 * (0x7F7F, about 3.39e38) round to +-inf, inf stays inf, NaN stays NaN
 * (made quiet, sign kept; the same rule as the runtime's ag_f32_to_bf16),
 * -0 stays -0, and subnormals are rounded like any other value, not
 * flushed.
 *
 * ------------------------------------------------ f32 products, per pass
 *
 * Each f32 operand x is split into bf16 parts (each part is exactly a
 * bf16 value held in an f32):
 *
 *   DEFAULT:  hi = bf16(x)
 *   HIGH:     hi = bf16(x), lo = bf16(x - hi)
 *   HIGHEST:  hi = bf16(x), mid = bf16(x - hi), lo = bf16((x - hi) - mid)
 *
 * (x - hi and (x - hi) - mid are exact in f32, so HIGHEST's three parts
 * sum to x exactly when 2^-110 <= |x| < 0x1.fep127; below that lo loses
 * bits to bf16's subnormal range, above it hi overflows to inf.) A
 * product of two bf16 values is exact in f32 (8 + 8 significant bits,
 * same exponent range; only results that overflow or fall below the
 * normal range round).
 *
 * For one output element C[i][j] and one k, the "term" t_k is computed
 * from a = A[i][k] and b = B[k][j] by these f32 operations, in exactly
 * this order (smallest magnitude class first, hi*hi last):
 *
 *   DEFAULT:  t = a.hi*b.hi
 *
 *   HIGH:     t = a.hi*b.lo
 *             t = t + a.lo*b.hi
 *             t = finite(t) ? t : 0
 *             t = t + a.hi*b.hi
 *
 *   HIGHEST:  t = a.hi*b.lo
 *             t = t + a.lo*b.hi
 *             t = t + a.mid*b.mid
 *             t = t + a.hi*b.mid
 *             t = t + a.mid*b.hi
 *             t = finite(t) ? t : 0
 *             t = t + a.hi*b.hi
 *
 * The finite() step keeps infinities and NaNs in the hi*hi pass alone: the
 * low parts of an infinite (or bf16-overflowing) operand are NaN or inf,
 * and would otherwise turn a DEFAULT inf into NaN. With it HIGH and
 * HIGHEST give the same non-finite results as DEFAULT. (Triton's bf16x3 /
 * bf16x6 dot does the same with its NaN select before the hi*hi dot.)
 *
 * -------------------------------------------- summation over k (all passes)
 *
 *   acc = +0
 *   for each chunk [k0, min(k0 + 128, K)) of consecutive k, k0 = 0, 128, ...:
 *       s = +0
 *       for k = k0, k0 + 1, ..., in increasing order:  s = s + t_k
 *       acc = acc + s
 *   C[i][j] = acc
 *
 * All operations are single f32 roundings (no FMA contraction, no
 * reassociation, no wider intermediates). For inputs that are exactly
 * bf16, HIGH and HIGHEST give bit for bit the DEFAULT result (their extra
 * terms are zeros, and s and acc, starting at +0, never become -0).
 *
 * Integer matmul wraps modulo 2^32 (two's complement), which is exact, so
 * its order does not matter.
 *
 * ---------------------------------------------------------------- int8
 *
 * The MXU's int8 passes (qmatmul, qconv2d) multiply int8 operands and sum
 * in int32: C = sum (A - a_zero) * B, wrapping modulo 2^32 like the
 * runtime's rt_qgemm_s8 (runtime/kernels/qgemm.h), so the order does not
 * matter and every target gives the same bits. conv2d's padding taps are
 * the zero point itself: they add nothing.
 */
#ifndef TPU_NUMERICS_H
#define TPU_NUMERICS_H

#include <stdbool.h>
#include <stdint.h>

/* The MXU chunk: the K extent summed before joining the accumulator. */
#define TPU_MXU_K_CHUNK 128

/* Any value other than HIGH and HIGHEST is taken as DEFAULT. */
typedef enum tpu_precision {
    TPU_PRECISION_DEFAULT, /* 1 bf16 pass */
    TPU_PRECISION_HIGH,    /* 3 passes (bf16_3x) */
    TPU_PRECISION_HIGHEST  /* 6 passes (bf16_6x) */
} tpu_precision;

/* x rounded to the nearest bf16 (ties to even), returned as the f32 it equals. */
float tpu_round_bf16(float x);
/* The bf16 bit pattern of tpu_round_bf16(x). */
uint16_t tpu_bf16_bits(float x);
/* The f32 a bf16 bit pattern stands for (exact). */
float tpu_bf16_to_f32(uint16_t bits);

/*
 * C[m,n] = A[m,k] * B[k,n], all row-major f32, with the numerics above.
 * C must not alias A or B. k == 0 gives +0 everywhere. Dims must be >= 0.
 */
void tpu_mxu_matmul_f32(const float *a, const float *b, float *c, int64_t m, int64_t k,
                        int64_t n, tpu_precision p);

/*
 * The same for a batch: A is [batch][m][k] and C [batch][m][n], contiguous;
 * B number bi starts at b + bi * b_batch_stride (elements), so
 * b_batch_stride == k * n is one B per batch and 0 is one B shared by all.
 */
void tpu_mxu_matmul_batched_f32(const float *a, const float *b, float *c, int64_t batch,
                                int64_t m, int64_t k, int64_t n, int64_t b_batch_stride,
                                tpu_precision p);

/* C[m,n] = A[m,k] * B[k,n] in int32, wrapping modulo 2^32. C must not alias. */
void tpu_mxu_matmul_i32(const int32_t *a, const int32_t *b, int32_t *c, int64_t m,
                        int64_t k, int64_t n);

/*
 * conv2d: NHWC input [n,h,w,cin], HWIO filter [kh,kw,cin,cout], strides
 * sh, sw >= 1, output [n,oh,ow,cout] with oh, ow from tpu_conv2d_out_dims.
 * SAME padding (pad_same) follows TF and the runtime's rt_k_conv2d: total
 * padding max(0, (out - 1) * stride + k - in), half (rounded down) before
 * (top / left) and the rest after (bottom / right); VALID pads nothing.
 *
 * Computed as the MXU does, as the im2col product [n*oh*ow, K] x [K, cout]
 * whose K index runs over (kh, kw, cin), in that order (K = kh*kw*cin,
 * exactly the filter's row-major layout), with the matmul numerics above,
 * chunks of 128 included. Padding taps are real zero operands. The im2col
 * rows are built a few at a time; no [n*oh*ow, K] buffer is made.
 */
void tpu_mxu_conv2d_f32(const float *in, const float *filter, float *out, int64_t n,
                        int64_t h, int64_t w, int64_t cin, int64_t kh, int64_t kw,
                        int64_t cout, int64_t sh, int64_t sw, bool pad_same,
                        tpu_precision p);

/* C[m,n] = (A[m,k] - a_zero) * B[k,n], int8 operands, int32 sums (wrapping). */
void tpu_mxu_qmatmul_s8(const int8_t *a, int32_t a_zero, const int8_t *b, int32_t *c, int64_t m,
                        int64_t k, int64_t n);

/* qconv2d: conv2d's geometry (above), int8 NHWC input with its zero point
 * and int8 HWIO filter, int32 NHWC output as qmatmul sums. */
void tpu_mxu_qconv2d_s8(const int8_t *in, int32_t in_zero, const int8_t *filter, int32_t *out,
                        int64_t n, int64_t h, int64_t w, int64_t cin, int64_t kh, int64_t kw,
                        int64_t cout, int64_t sh, int64_t sw, bool pad_same);

/*
 * The spatial output dims of conv2d: SAME gives ceil(in / stride); VALID
 * gives floor((in - k) / stride) + 1 when in >= k, and 0 when the window
 * does not fit (the runtime rejects that case with an error instead).
 */
void tpu_conv2d_out_dims(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                         int64_t sw, bool pad_same, int64_t *oh, int64_t *ow);

#endif
