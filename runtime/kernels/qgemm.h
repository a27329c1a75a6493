/*
 * qgemm.h - int8 matrix products with int32 sums, the arithmetic of every
 * quantized product (docs/quantization.md):
 *
 *     c[i,j] = sum_p (a[i,p] - a_zero) * b[p,j]        (int32)
 *
 * a is an int8 activation with its zero point, b an int8 weight
 * (symmetric, zero point 0). The sums are exact: |a - a_zero| <= 255 and
 * |b| <= 128, so k up to 65793 cannot overflow int32 (callers check
 * RT_QGEMM_MAX_K). Every path (scalar, AVX2, AVX-VNNI, AVX-512 VNNI, AMX)
 * gives the same bits; tests/unit/test_qgemm.c holds them to the scalar
 * one. (A zero point outside [-128, 127] or a k past the bound can make
 * the true sum leave int32: every path then gives it modulo 2^32, the
 * same bits still.) Row-major, dense: a is [m,k], b is [k,n], c is [m,n].
 *
 * The paths (qgemm_x86.c, qgemm_amx.c) are chosen once per process by
 * what the CPU and the OS support (CPUID, XCR0, and for AMX Linux's tile
 * data permission: qgemm_probe.c); AG_QGEMM_PATH (runtime/core/config.def)
 * forces one. The AMX path (tdpbusd) is written against a small set of
 * tile operations (qgemm_amx.inc) so that tests/unit/test_qgemm_amx.c can
 * run the same kernel on a plain C emulation of the tiles, bit for bit
 * against the scalar path, on CPUs without AMX; on a CPU with it,
 * test_qgemm runs the real instructions.
 *
 * A weight that many products read (a constant of compiled code) can be
 * packed once into the layout a path's kernel reads (rt_qgemm_pack), and
 * each product told to read it (rt_qgemm_use_packed) instead of packing
 * its panels of b again: the same bits, a third less work for the MLP.
 */
#ifndef RT_QGEMM_H
#define RT_QGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest k whose sums cannot overflow: 255 * 128 * k < 2^31. */
enum { RT_QGEMM_MAX_K = 65793 };

/* The product on the fastest path this CPU has (chosen once per
 * process, as the bf16 products choose theirs). */
void rt_qgemm_s8(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                 const int8_t *b, int32_t *c);

/* The plain C product every other path must equal, bit for bit. */
void rt_qgemm_s8_scalar(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                        const int8_t *b, int32_t *c);

/* The name of the path rt_qgemm_s8 runs now ("scalar", "avx2",
 * "avx-vnni", "avx512-vnni", "amx"), for benchmarks and listings. */
const char *rt_qgemm_path(void);

/* The paths, slowest first. */
typedef enum rt_qgemm_kind {
    RT_QGEMM_SCALAR,
    RT_QGEMM_AVX2,
    RT_QGEMM_AVX_VNNI,
    RT_QGEMM_AVX512_VNNI,
    RT_QGEMM_AMX,
    RT_QGEMM_NUM_KINDS
} rt_qgemm_kind;

const char *rt_qgemm_kind_name(rt_qgemm_kind kind);

/* Why this process cannot run `kind` (a sentence, for skips and
 * benchmarks), or NULL when it can. Never faults. */
const char *rt_qgemm_why_not(rt_qgemm_kind kind);

/* The path rt_qgemm_s8 takes now: AG_QGEMM_PATH's when it names one
 * this process can run (read at each call, so a program can compare
 * the paths), else the fastest; a name the CPU cannot run, or no path's
 * name, gives the scalar path. */
rt_qgemm_kind rt_qgemm_chosen(void);

/* The product on `kind`, which must be one rt_qgemm_why_not allows. */
void rt_qgemm_s8_on(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                    int32_t a_zero, const int8_t *b, int32_t *c);

/* A product in parts, for a caller that runs chunks of columns on
 * threads of its own: rt_qgemm_begin (false, with nothing to free: no
 * memory for the packed a, run rt_qgemm_s8_scalar), rt_qgemm_columns
 * over disjoint column ranges from any threads (each range starts on a
 * multiple of RT_QGEMM_PANEL; each packs its own panels of b, so the
 * results cannot depend on how the columns are split), rt_qgemm_end. */
enum { RT_QGEMM_PANEL = 64 };

typedef struct rt_qgemm rt_qgemm;

/* A fused epilogue: instead of storing the sums in c, the product hands
 * them over block by block as it computes them, while they are in the
 * first-level cache: block[r * ldb + j] is c[i0 + r, j0 + j] for r <
 * rows (at most 16) and j < cols (at most RT_QGEMM_PANEL). Every element
 * of c is handed over exactly once; blocks of different column ranges may
 * come from different threads at once. */
typedef void (*rt_qgemm_epilogue)(const rt_qgemm *p, const int32_t *block, int64_t ldb,
                                  int64_t i0, int64_t rows, int64_t j0, int64_t cols);

struct rt_qgemm {
    rt_qgemm_kind kind;
    int64_t m, n, k;
    const int8_t *a, *b;
    int32_t a_zero;
    int32_t *c;       /* unused when epilogue is set */
    rt_qgemm_epilogue epilogue; /* NULL (rt_qgemm_begin's): sums into c */
    void *epilogue_ctx;
    void *a_packed; /* a as the path's kernel reads it; NULL on the scalar path */
    int64_t a_stride; /* bytes between rows of a_packed */
    /* b packed ahead (rt_qgemm_use_packed): its panels and column sums;
     * NULL: each call of rt_qgemm_columns packs the panels it reads */
    const uint8_t *b_panels;
    const int32_t *b_sums;
};

/* How rt_qgemm_s8 runs a large product's column chunks on threads:
 * body(ctx, begin, end) over [0, n), each chunk starting on a multiple of
 * RT_QGEMM_PANEL and at least `grain` wide. The cpu target installs its
 * thread pool's loop when it compiles (backend/cpu/target_cpu.c); unset,
 * every product runs on the calling thread. The bits are the same either
 * way (each chunk packs its own panels). */
typedef void (*rt_qgemm_body)(void *ctx, int64_t begin, int64_t end);
typedef void (*rt_qgemm_parallel_fn)(rt_qgemm_body body, void *ctx, int64_t n, int64_t grain);
extern rt_qgemm_parallel_fn _Atomic rt_qgemm_parallel_hook;

/* Products of at least this many multiply-adds (and more than one panel
 * of columns) run through the hook: below it, waking threads costs more
 * than they save. */
#define RT_QGEMM_PARALLEL_MACS (4.0 * 1024 * 1024)

bool rt_qgemm_begin(rt_qgemm *p, rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k,
                    const int8_t *a, int32_t a_zero, const int8_t *b, int32_t *c);
void rt_qgemm_columns(const rt_qgemm *p, int64_t begin, int64_t end);
/* Every column of a begun product: on the hook's threads when the
 * product is large enough, else on the calling thread. */
void rt_qgemm_run(const rt_qgemm *p);
void rt_qgemm_end(rt_qgemm *p);

/*
 * b packed ahead, for a weight that many products read. The block is
 * self-describing (the path, k and n it was packed for), so it can be
 * a constant of compiled code, made when the code was compiled
 * (backend/cpu/lower_qpack.c) and read by any thread at once.
 *
 * rt_qgemm_packed_bytes: the bytes of b packed for `kind` (0: the path
 * reads b as it is, the scalar one; and every path on other hosts).
 * rt_qgemm_pack: the packing into dst (that many bytes, 64-byte aligned
 * for the vector loads); `kind` must be one this process can run
 * (rt_qgemm_why_not), as its packing uses its instructions.
 * rt_qgemm_use_packed, after rt_qgemm_begin: the product reads `packed`
 * when it was made for the product's path, k and n, and says so; any
 * other block (NULL included) is ignored and the product packs b itself.
 * Either way the bits are the same.
 */
size_t rt_qgemm_packed_bytes(rt_qgemm_kind kind, int64_t k, int64_t n);
void rt_qgemm_pack(rt_qgemm_kind kind, const int8_t *b, int64_t k, int64_t n, void *dst);
bool rt_qgemm_use_packed(rt_qgemm *p, const void *packed);

/* rt_qgemm_s8_on reading b from `packed` when it fits the product
 * (rt_qgemm_use_packed); b itself otherwise. */
void rt_qgemm_s8_packed(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                        int32_t a_zero, const int8_t *b, const void *packed, int32_t *c);

#endif
