/*
 * qgemm.c - int8 products with int32 sums (qgemm.h): the scalar path,
 * the choice of path, the product in parts that every path runs through,
 * and b packed ahead (the vector kernels: qgemm_x86.c, qgemm_amx.c; what
 * the CPU has: qgemm_probe.c).
 */
#include "qgemm_impl.h"

#include "config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[RT_QGEMM_NUM_KINDS] = {
    [RT_QGEMM_SCALAR] = "scalar",
    [RT_QGEMM_AVX2] = "avx2",
    [RT_QGEMM_AVX_VNNI] = "avx-vnni",
    [RT_QGEMM_AVX512_VNNI] = "avx512-vnni",
    [RT_QGEMM_AMX] = "amx",
};

const char *rt_qgemm_kind_name(rt_qgemm_kind kind)
{
    return kind >= RT_QGEMM_SCALAR && kind < RT_QGEMM_NUM_KINDS ? names[kind] : "?";
}

const rt_qgemm_isa *rt_qgemm_isa_of(rt_qgemm_kind kind)
{
    return kind == RT_QGEMM_AMX ? rt_qgemm_amx_isa : rt_qgemm_x86_isa(kind);
}

const char *rt_qgemm_why_not(rt_qgemm_kind kind)
{
    if (kind == RT_QGEMM_SCALAR)
        return NULL;
    if (kind < RT_QGEMM_SCALAR || kind >= RT_QGEMM_NUM_KINDS)
        return "no such path";
    return rt_qgemm_probe(kind);
}

/* Columns [begin, end) in plain C. The sums are taken modulo 2^32
 * (unsigned), as the vector paths' are: the same bits even where the
 * true sum would not fit (qgemm.h), and no undefined behaviour. */
/* out[j - begin] = c[i, j] for j in [begin, end). */
static void scalar_row(const rt_qgemm *p, int64_t i, int64_t begin, int64_t end, uint32_t *out)
{
    int64_t n = p->n, k = p->k;
    memset(out, 0, (size_t)(end - begin) * sizeof *out);
    for (int64_t q = 0; q < k; q++) {
        uint32_t x = (uint32_t)p->a[i * k + q] - (uint32_t)p->a_zero;
        const int8_t *brow = p->b + q * n + begin;
        for (int64_t j = 0; j < end - begin; j++)
            out[j] += x * (uint32_t)brow[j];
    }
}

/* With an epilogue, a row at a time in pieces of one panel's width. */
static void scalar_columns(const rt_qgemm *p, int64_t begin, int64_t end)
{
    uint32_t piece[RT_QGEMM_PANEL];
    for (int64_t i = 0; i < p->m; i++) {
        if (!p->epilogue) {
            scalar_row(p, i, begin, end, (uint32_t *)p->c + i * p->n + begin);
            continue;
        }
        for (int64_t j0 = begin; j0 < end; j0 += RT_QGEMM_PANEL) {
            int64_t cols = end - j0 < RT_QGEMM_PANEL ? end - j0 : RT_QGEMM_PANEL;
            scalar_row(p, i, j0, j0 + cols, piece);
            p->epilogue(p, (const int32_t *)piece, RT_QGEMM_PANEL, i, 1, j0, cols);
        }
    }
}

/*
 * Scratch memory, kept by each thread between products: a's packed rows
 * (slot A) and a panel of b (slot PANEL). Taking 100 KB blocks from malloc
 * and freeing them on every call made glibc give them back to the OS and
 * fault them in again each time (a 120-row product of the MLP's first
 * layer took 320 us instead of 135). A block is the thread's again when
 * the product gives it back; a thread's blocks are freed when it exits.
 */
enum { SLOT_A, SLOT_PANEL, N_SLOTS };
typedef struct block {
    size_t size;
    unsigned char data[];
} block;

static pthread_key_t slot_keys[N_SLOTS];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static bool keys_made;

static void make_keys(void)
{
    keys_made = pthread_key_create(&slot_keys[SLOT_A], free) == 0 &&
                pthread_key_create(&slot_keys[SLOT_PANEL], free) == 0;
}

/* At least `bytes` of scratch for the caller alone (NULL: no memory). */
static void *take(int slot, size_t bytes)
{
    pthread_once(&keys_once, make_keys);
    block *b = keys_made ? pthread_getspecific(slot_keys[slot]) : NULL;
    if (b && b->size >= bytes) {
        pthread_setspecific(slot_keys[slot], NULL);
        return b->data;
    }
    b = malloc(sizeof *b + bytes);
    if (b)
        b->size = bytes;
    return b ? b->data : NULL;
}

/* Gives scratch back to the calling thread, which keeps the larger block. */
static void give_back(int slot, void *data)
{
    if (!data)
        return;
    block *b = (block *)(void *)((unsigned char *)data - offsetof(block, data));
    block *kept = keys_made ? pthread_getspecific(slot_keys[slot]) : NULL;
    if (kept && kept->size >= b->size) {
        free(b);
        return;
    }
    free(kept);
    if (!keys_made || pthread_setspecific(slot_keys[slot], b) != 0)
        free(b);
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* Groups of k the path reads (a_stride / 4), padding included. */
static int64_t groups_of(const rt_qgemm_isa *isa, int64_t k)
{
    return round_up((k + isa->per_group - 1) / isa->per_group, isa->group_multiple);
}

bool rt_qgemm_begin(rt_qgemm *p, rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k,
                    const int8_t *a, int32_t a_zero, const int8_t *b, int32_t *c)
{
    *p = (rt_qgemm){.kind = kind, .m = m, .n = n, .k = k, .a = a, .b = b, .a_zero = a_zero, .c = c};
    const rt_qgemm_isa *isa = rt_qgemm_isa_of(kind);
    if (!isa || m == 0 || n == 0)
        return p->kind = RT_QGEMM_SCALAR, true;
    int64_t groups = groups_of(isa, k);
    p->a_stride = 4 * groups;
    p->a_packed = take(SLOT_A, (size_t)(round_up(m, isa->row_multiple) * p->a_stride));
    if (!p->a_packed)
        return false;
    isa->pack_a(a, m, k, groups, p->a_packed);
    return true;
}

void rt_qgemm_columns(const rt_qgemm *p, int64_t begin, int64_t end)
{
    const rt_qgemm_isa *isa = rt_qgemm_isa_of(p->kind);
    if (isa && p->b_panels) {
        isa->columns(p, begin, end, NULL);
        return;
    }
    uint8_t *scratch = isa ? take(SLOT_PANEL, isa->scratch_bytes(p->a_stride / 4)) : NULL;
    if (scratch)
        isa->columns(p, begin, end, scratch);
    else
        scalar_columns(p, begin, end);
    give_back(SLOT_PANEL, scratch);
}

void rt_qgemm_end(rt_qgemm *p)
{
    give_back(SLOT_A, p->a_packed);
    p->a_packed = NULL;
}

rt_qgemm_parallel_fn _Atomic rt_qgemm_parallel_hook;

static void columns_body(void *ctx, int64_t begin, int64_t end)
{
    rt_qgemm_columns(ctx, begin, end);
}


void rt_qgemm_s8_on(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                    int32_t a_zero, const int8_t *b, int32_t *c)
{
    rt_qgemm p;
    if (!rt_qgemm_begin(&p, kind, m, n, k, a, a_zero, b, c))
        rt_qgemm_begin(&p, RT_QGEMM_SCALAR, m, n, k, a, a_zero, b, c);
    rt_qgemm_run(&p);
    rt_qgemm_end(&p);
}

void rt_qgemm_s8_packed(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                        int32_t a_zero, const int8_t *b, const void *packed, int32_t *c)
{
    rt_qgemm p;
    if (!rt_qgemm_begin(&p, kind, m, n, k, a, a_zero, b, c))
        rt_qgemm_begin(&p, RT_QGEMM_SCALAR, m, n, k, a, a_zero, b, c);
    rt_qgemm_use_packed(&p, packed);
    rt_qgemm_run(&p);
    rt_qgemm_end(&p);
}

void rt_qgemm_run(const rt_qgemm *p)
{
    int64_t m = p->m, n = p->n, k = p->k;
    rt_qgemm_parallel_fn parallel = rt_qgemm_parallel_hook;
    if (parallel && n > RT_QGEMM_PANEL && (double)m * (double)n * (double)k >= RT_QGEMM_PARALLEL_MACS)
        parallel(columns_body, (void *)p, n, RT_QGEMM_PANEL);
    else
        rt_qgemm_columns(p, 0, n);
}

/* The oracle stays on the calling thread, whatever the hook. */
void rt_qgemm_s8_scalar(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                        const int8_t *b, int32_t *c)
{
    rt_qgemm p;
    rt_qgemm_begin(&p, RT_QGEMM_SCALAR, m, n, k, a, a_zero, b, c);
    scalar_columns(&p, 0, n);
}

static pthread_once_t fastest_once = PTHREAD_ONCE_INIT;
static rt_qgemm_kind fastest_kind;

static void find_fastest(void)
{
    fastest_kind = RT_QGEMM_NUM_KINDS - 1;
    while (fastest_kind > RT_QGEMM_SCALAR && rt_qgemm_why_not(fastest_kind))
        fastest_kind--;
}

/* AG_QGEMM_PATH, read at each call: the settings in force now (the
 * kernel runs from compiled code, which has no compile's snapshot). */
static rt_qgemm_kind forced(void)
{
    const rt_config *c = rt_config_get();
    const char *name = rt_config_str(c, RT_CFG_QGEMM_PATH);
    rt_qgemm_kind kind = RT_QGEMM_NUM_KINDS;
    if (name && *name) {
        for (kind = RT_QGEMM_SCALAR; kind < RT_QGEMM_NUM_KINDS; kind++)
            if (strcmp(name, names[kind]) == 0)
                break;
        if (kind == RT_QGEMM_NUM_KINDS || rt_qgemm_why_not(kind))
            kind = RT_QGEMM_SCALAR;
    }
    rt_config_release(c);
    return kind;
}

rt_qgemm_kind rt_qgemm_chosen(void)
{
    rt_qgemm_kind kind = forced();
    if (kind != RT_QGEMM_NUM_KINDS)
        return kind;
    pthread_once(&fastest_once, find_fastest);
    return fastest_kind;
}

void rt_qgemm_s8(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                 const int8_t *b, int32_t *c)
{
    rt_qgemm_s8_on(rt_qgemm_chosen(), m, n, k, a, a_zero, b, c);
}

const char *rt_qgemm_path(void)
{
    return names[rt_qgemm_chosen()];
}

/*
 * b packed ahead: a header naming what it was packed for, then every
 * panel of b as the path's columns pack it, one after the other
 * (groups * panel * 4 bytes each), then the column sums (int32, zeros
 * past n), so that a product reads both instead of making them.
 */
static const uint64_t PACKED_MAGIC = 0x6b63617038733071u; /* "q0s8pack" */
typedef struct packed_head {
    uint64_t magic;
    int64_t kind, k, n, groups, panel, unused[2];
} packed_head;
_Static_assert(sizeof(packed_head) == 64, "the panels stay 64-byte aligned");

static int64_t panels_of(const rt_qgemm_isa *isa, int64_t n)
{
    return (n + isa->panel - 1) / isa->panel;
}

size_t rt_qgemm_packed_bytes(rt_qgemm_kind kind, int64_t k, int64_t n)
{
    const rt_qgemm_isa *isa = rt_qgemm_isa_of(kind);
    if (!isa || k <= 0 || n <= 0)
        return 0;
    int64_t panels = panels_of(isa, n), per_panel = (groups_of(isa, k) + 1) * isa->panel * 4;
    return sizeof(packed_head) + (size_t)(panels * per_panel);
}

void rt_qgemm_pack(rt_qgemm_kind kind, const int8_t *b, int64_t k, int64_t n, void *dst)
{
    const rt_qgemm_isa *isa = rt_qgemm_isa_of(kind);
    if (!rt_qgemm_packed_bytes(kind, k, n))
        return;
    int64_t groups = groups_of(isa, k), panels = panels_of(isa, n), bytes = groups * isa->panel * 4;
    packed_head head = {PACKED_MAGIC, kind, k, n, groups, isa->panel, {0, 0}};
    memcpy(dst, &head, sizeof head);
    uint8_t *panel = (uint8_t *)dst + sizeof head;
    int32_t *sums = (int32_t *)(void *)(panel + panels * bytes);
    for (int64_t j0 = 0; j0 < n; j0 += isa->panel, panel += bytes) {
        int64_t cols = n - j0 < isa->panel ? n - j0 : isa->panel;
        isa->pack_b(b, n, k, j0, cols, groups, isa->panel, panel);
        isa->colsums(panel, groups, sums + j0);
    }
}

bool rt_qgemm_use_packed(rt_qgemm *p, const void *packed)
{
    const rt_qgemm_isa *isa = rt_qgemm_isa_of(p->kind);
    if (!packed || !isa)
        return false;
    packed_head head;
    memcpy(&head, packed, sizeof head);
    if (head.magic != PACKED_MAGIC || head.kind != p->kind || head.k != p->k ||
        head.n != p->n || head.groups != p->a_stride / 4 || head.panel != isa->panel)
        return false;
    int64_t bytes = head.groups * head.panel * 4 * panels_of(isa, p->n);
    p->b_panels = (const uint8_t *)packed + sizeof head;
    p->b_sums = (const int32_t *)(const void *)(p->b_panels + bytes);
    return true;
}
