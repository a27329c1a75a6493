/*
 * cg_lookup.c - loops over one bf16 tensor computed by table lookup.
 *
 * A fused loop whose only tensor operand is bf16 (every other operand a
 * scalar) computes each element from 16 bits of input: its result is a
 * function of 65,536 possible values. When the loop is long and its body
 * costly (tanh, exp, ...), it is cheaper to run the body once over every
 * bf16 value, into a table, and then look each element up: the table costs
 * 65,536 evaluations, the lookup one load per element. The results are
 * bit for bit those of the loop itself, because the table is that same
 * loop's output, NaN payloads included.
 *
 * The table is built in parallel like any loop: for tanh(x*a + b)*c + x
 * about 60 us on 2 threads (its subnormal inputs are slow), against 2 ms
 * or more for the lookups of 16M elements. When the scalars are run-time
 * values it is built at every call, and below LOOKUP_MIN elements, where
 * it would be more than 1/16 of the work, the loop runs as it is. When
 * they are constants of the code (an activation's coefficients), the code
 * gives a cache of its own: the first call of at least LOOKUP_MIN_CACHED
 * elements builds the table there, and every call after it only looks up.
 */
#include "cg_runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum {
    BF16_VALUES = 1 << 16,
    LOOKUP_MIN = 16 * BF16_VALUES,
    LOOKUP_MIN_CACHED = BF16_VALUES,
    LOOKUP_GRAIN = 1 << 14,
    TABLE_PAD = 64, /* the gathers read 4 bytes at every 2-byte entry */
    CACHE_HEADER = 64
};

/* A cache's state, in its first bytes. */
enum { CACHE_EMPTY, CACHE_BUILDING, CACHE_READY };
_Static_assert(CG_RT_LOOKUP_CACHE_BYTES(4) == CACHE_HEADER + BF16_VALUES * 4 + TABLE_PAD,
               "the code's cache holds the header, the table and its padding");

/* Every bf16 bit pattern in order: the operand the table is built from. */
static uint16_t all_bf16[BF16_VALUES];
static pthread_once_t all_bf16_once = PTHREAD_ONCE_INIT;

static void fill_all_bf16(void)
{
    for (int i = 0; i < BF16_VALUES; i++)
        all_bf16[i] = (uint16_t)i;
}

/*
 * The lookups go one cache line of the operand (32 elements) at a time and
 * first prefetch the line PREFETCH_AHEAD bytes ahead: a gather per 16
 * elements is enough work that the hardware's prefetchers fall behind, as
 * in the hot loops of lower_loop.c. 16M elements on 2 threads of a
 * Sapphire Rapids Xeon: 3.3 ms without, 2.2 - 2.6 ms with (the f32 loop
 * it replaces: 5.0 - 5.4 ms); AVX2's gathers 2.6 ms.
 */
enum { PREFETCH_AHEAD = 4096, LINE = 32 /* 2-byte elements per 64-byte line */ };

static inline void prefetch_ahead(const uint16_t *x)
{
    __builtin_prefetch((const char *)x + PREFETCH_AHEAD, 0, 3);
}

typedef struct lookup {
    const uint16_t *x;
    const void *table;
    void *out;
} lookup;

/* ------------------------------------------------------------ kernels */

static void lookup_portable(const lookup *k, int64_t i, int64_t end, int size)
{
    const uint16_t *x = k->x;
    const uint16_t *t16 = k->table;
    const uint32_t *t32 = k->table;
    uint16_t *out16 = k->out;
    uint32_t *out32 = k->out;
    while (i < end) {
        int64_t stop = end - i > LINE ? i + LINE : end;
        prefetch_ahead(x + i);
        if (size == 2)
            for (; i < stop; i++)
                out16[i] = t16[x[i]];
        else
            for (; i < stop; i++)
                out32[i] = t32[x[i]];
    }
}

#if defined(__x86_64__)
/* 16 lanes per vpgatherdd: 1.9 ms for 16M elements on 2 threads, against
 * 2.5 ms with scalar loads. A 2-byte entry is the low half of the 4 bytes
 * gathered at its address (the table has room past its end). */
__attribute__((target("avx512f,avx512bw"))) static void lookup_avx512(const lookup *k,
                                                                      int64_t i, int64_t end,
                                                                      int size)
{
    for (; end - i >= LINE; i += LINE) {
        prefetch_ahead(k->x + i);
        for (int j = 0; j < LINE; j += 16) {
            __m512i idx =
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)(k->x + i + j)));
            if (size == 2) {
                __m512i v = _mm512_i32gather_epi32(idx, k->table, 2);
                _mm256_storeu_si256((void *)((uint16_t *)k->out + i + j),
                                    _mm512_cvtepi32_epi16(v));
            } else {
                __m512i v = _mm512_i32gather_epi32(idx, k->table, 4);
                _mm512_storeu_si512((void *)((uint32_t *)k->out + i + j), v);
            }
        }
    }
    lookup_portable(k, i, end, size);
}

__attribute__((target("avx2"))) static void lookup_avx2(const lookup *k, int64_t i,
                                                       int64_t end, int size)
{
    const __m256i low = _mm256_set1_epi32(0xffff);
    for (; end - i >= LINE; i += LINE) {
        prefetch_ahead(k->x + i);
        for (int j = 0; j < LINE; j += 8) {
            __m256i idx =
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(k->x + i + j)));
            if (size == 2) {
                __m256i v = _mm256_and_si256(_mm256_i32gather_epi32(k->table, idx, 2), low);
                __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v),
                                             _mm256_extracti128_si256(v, 1));
                _mm_storeu_si128((void *)((uint16_t *)k->out + i + j), w);
            } else {
                __m256i v = _mm256_i32gather_epi32(k->table, idx, 4);
                _mm256_storeu_si256((void *)((uint32_t *)k->out + i + j), v);
            }
        }
    }
    lookup_portable(k, i, end, size);
}
#endif

typedef void (*lookup_fn)(const lookup *k, int64_t i, int64_t end, int size);

static lookup_fn pick_kernel(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        return lookup_avx512;
    if (__builtin_cpu_supports("avx2"))
        return lookup_avx2;
#endif
    return lookup_portable;
}

static lookup_fn kernel;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void init_kernel(void)
{
    if (!kernel)
        kernel = pick_kernel();
}

bool cg_lookup_use_kernel(const char *name)
{
    pthread_once(&kernel_once, init_kernel);
    if (!name) {
        kernel = pick_kernel();
        return true;
    }
    if (strcmp(name, "portable") == 0) {
        kernel = lookup_portable;
        return true;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (strcmp(name, "avx512") == 0 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw")) {
        kernel = lookup_avx512;
        return true;
    }
    if (strcmp(name, "avx2") == 0 && __builtin_cpu_supports("avx2")) {
        kernel = lookup_avx2;
        return true;
    }
#endif
    return false;
}

int64_t cg_lookup_min(void) { return LOOKUP_MIN; }

int64_t cg_lookup_min_cached(void) { return LOOKUP_MIN_CACHED; }

static void lookup2_body(void *ctx, int64_t begin, int64_t end)
{
    kernel(ctx, begin, end, 2);
}

static void lookup4_body(void *ctx, int64_t begin, int64_t end)
{
    kernel(ctx, begin, end, 4);
}

/* ------------------------------------------------------------- the loop */

/* Runs body over every bf16 value into table (with the padding the
 * gathers read past its end zeroed): the loop's context with its operand
 * and result slots pointed at all_bf16 and table for the time. */
static void build_table(cg_rt_body body, void **slots, int32_t x_slot, int32_t out_slot,
                        int32_t out_size, void *table)
{
    void *x = slots[x_slot], *out = slots[out_slot];
    slots[x_slot] = all_bf16;
    slots[out_slot] = table;
    cg_rt_parallel_for(body, slots, BF16_VALUES, LOOKUP_GRAIN);
    slots[x_slot] = x;
    slots[out_slot] = out;
    memset((char *)table + (size_t)BF16_VALUES * (size_t)out_size, 0, TABLE_PAD);
}

static void look_up(void **slots, int32_t x_slot, int32_t out_slot, int32_t out_size,
                    const void *table, int64_t n, int64_t grain)
{
    lookup k = {.x = slots[x_slot], .table = table, .out = slots[out_slot]};
    cg_rt_parallel_for(out_size == 2 ? lookup2_body : lookup4_body, &k, n, grain);
}

/* The table in the code's cache: ready, or built now by the first caller
 * that gets to it; NULL when not (callers meanwhile go on as without a
 * cache). */
static const void *cached_table(cg_rt_body body, void **slots, int32_t x_slot,
                                int32_t out_slot, int32_t out_size, void *cache, int64_t n)
{
    _Atomic int32_t *state = cache;
    char *table = (char *)cache + CACHE_HEADER;
    if (atomic_load_explicit(state, memory_order_acquire) == CACHE_READY)
        return table;
    int32_t empty = CACHE_EMPTY;
    if (n < LOOKUP_MIN_CACHED ||
        !atomic_compare_exchange_strong(state, &empty, CACHE_BUILDING))
        return NULL;
    build_table(body, slots, x_slot, out_slot, out_size, table);
    atomic_store_explicit(state, CACHE_READY, memory_order_release);
    return table;
}

void cg_rt_parallel_lookup(cg_rt_body body, void *ctx, int64_t n, int64_t grain,
                           int32_t x_slot, int32_t out_slot, int32_t out_size, void *cache)
{
    void **slots = ctx;
    if (out_size != 2 && out_size != 4) {
        cg_rt_parallel_for(body, ctx, n, grain);
        return;
    }
    pthread_once(&all_bf16_once, fill_all_bf16);
    pthread_once(&kernel_once, init_kernel);
    const void *shared = cache ? cached_table(body, slots, x_slot, out_slot, out_size, cache, n)
                               : NULL;
    if (shared) {
        look_up(slots, x_slot, out_slot, out_size, shared, n, grain);
        return;
    }
    void *table = NULL;
    if (n >= LOOKUP_MIN)
        table = aligned_alloc(64, (size_t)BF16_VALUES * (size_t)out_size + TABLE_PAD);
    if (!table) { /* short, or no memory for the table: the loop as it is */
        cg_rt_parallel_for(body, ctx, n, grain);
        return;
    }
    build_table(body, slots, x_slot, out_slot, out_size, table);
    look_up(slots, x_slot, out_slot, out_size, table, n, grain);
    free(table);
}
