/*
 * lower_tile.c - the tiling rule of fused loops: a nest of short rows
 * runs them in groups, one flat loop each, over tiles of its row and
 * column operands.
 *
 * Short rows. In a nest [R, C] whose rows are short (a bias of 16 added
 * to each of 1M rows), the inner loop has C trips: LLVM unrolls it
 * whole and vectorizes across rows instead, with strided accesses, and
 * tanh(x + b) ran 2x slower than the same loop with a scalar b. So when
 * every operand is either of the loop's shape, one row ([C] or [1, C]) or
 * one column ([R, 1]: a scale per row), the rows run in groups of `group`
 * (GROUP_ELEMS elements or a little more) as one flat loop, over a copy
 * of each row operand repeated `group` times (a tile in the loop
 * function's frame, made once per call of it) and of each column
 * operand's values for the group, each repeated C times (made per
 * group): every access is then contiguous. Columns only when C is a
 * multiple of COLUMN_ALIGN, so that a row of the tile is whole vectors:
 * the loop reads the tile right after it was written, and a vector load
 * over several smaller stores cannot take their data from the store
 * buffer (rows of 8, 12, 100 or 200 ran 1.2 - 1.7x slower than without
 * groups). The tiles together stay within TILES_MAX_BYTES (16 f32 rows). tanh(x + s), x [1M, 16] and s [1M, 1]: 10.3 ms before, 3.8 ms
 * after (3.5 ms with a scalar s); rows of 64: 5.5 -> 3.8 ms.
 */
#include "lower_nest.h"

#include <stdlib.h>

enum { GROUP_ELEMS = 256, COLUMN_ALIGN = 16, TILES_MAX_BYTES = 16 * 1024 };

/* Whether leaf l is one row of the [rows, c] loop. */
static bool is_row(nest *N, const leaf *l, int64_t c)
{
    const cg_shape *ls = &cg_info_of(N->L, l->node)->shape;
    return ls->known && ((ls->rank == 1 && ls->dims[0] == c) ||
                         (ls->rank == 2 && ls->dims[0] == 1 && ls->dims[1] == c));
}

/* Whether leaf l is one column of the [rows, c] loop. */
static bool is_column(nest *N, const leaf *l)
{
    const cg_shape *ls = &cg_info_of(N->L, l->node)->shape, *s = &N->c->shape;
    return ls->known && ls->rank == 2 && ls->dims[0] == s->dims[0] && ls->dims[1] == 1 &&
           s->dims[1] % COLUMN_ALIGN == 0;
}

/* The rows per group of a nest that runs its rows in groups; 0 if not. */
int64_t cg_nest_group_rows(nest *N)
{
    const cg_shape *s = &N->c->shape;
    if (N->rank != 2 || !s->known || s->dims[1] < 2 || s->dims[1] >= GROUP_ELEMS)
        return 0;
    int64_t c = s->dims[1], group = (GROUP_ELEMS + c - 1) / c, bytes = 0;
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (l->scalar || l->full)
            continue;
        if (!is_row(N, l, c) && !is_column(N, l))
            return 0;
        bytes += group * c * (int64_t)rt_dtype_size(l->dt);
    }
    /* the tiles live on the stack of whatever thread runs the loop */
    return bytes <= TILES_MAX_BYTES ? group : 0;
}

/* Fills rows [0, rows) of leaf i's tile, C elements each: its row, or
 * for a column the value of row first + r in row r. */
static void fill_tile(nest *N, int i, LLVMValueRef first, LLVMValueRef rows)
{
    cg_lower *L = N->L;
    leaf *l = &N->leaves[i];
    LLVMValueRef c = cg_i64(L, N->c->shape.dims[1]), v = NULL;
    cg_loop r, k;
    cg_loop_begin(L, &r, rows);
    if (N->columns[i])
        v = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, add(L, first, r.iv)));
    cg_loop_begin(L, &k, c);
    if (!N->columns[i])
        v = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, k.iv));
    LLVMValueRef at = add(L, mul(L, r.iv, c), k.iv);
    cg_store_elem(L, l->dt, v, elem_ptr(L, l->dt, N->tiles[i], at));
    cg_loop_end(L, &k);
    cg_loop_end(L, &r);
    /* a column's fill vectorized across rows would scatter; row by row it
     * stores a broadcast vector */
    if (N->columns[i])
        cg_loop_hints(L, r.latch, false);
}

/* The tiles of the row and column operands, in the current function's
 * entry block (the builder is there); the rows' filled there. */
void cg_nest_make_tiles(nest *N)
{
    cg_lower *L = N->L;
    int64_t n = N->group * N->c->shape.dims[1];
    N->tiles = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *N->tiles);
    N->columns = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *N->columns);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar || l->full)
            continue;
        LLVMTypeRef t = cg_mem_type(L, l->dt);
        N->tiles[i] = LLVMBuildAlloca(L->b, LLVMArrayType2(t, (uint64_t)n), "tile");
        LLVMSetAlignment(N->tiles[i], 64);
        N->columns[i] = is_column(N, l);
    }
    for (int i = 0; i < N->n_leaves; i++)
        if (N->tiles[i] && !N->columns[i])
            fill_tile(N, i, NULL, cg_i64(L, N->group));
}

/* The column operands' tiles for rows [first, first + count). */
static void fill_columns(nest *N, LLVMValueRef first, LLVMValueRef count)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->columns[i])
            fill_tile(N, i, first, count);
}

/* Rows [begin, end) of the nest in groups, each one flat loop. */
void cg_nest_groups(nest *N, LLVMValueRef begin, LLVMValueRef end)
{
    cg_lower *L = N->L;
    LLVMValueRef c = cg_i64(L, N->c->shape.dims[1]), k = cg_i64(L, N->group);
    LLVMValueRef rows = LLVMBuildNSWSub(L->b, end, begin, "");
    LLVMValueRef groups = LLVMBuildSDiv(L->b, add(L, rows, cg_i64(L, N->group - 1)), k, "");
    cg_loop g;
    cg_loop_begin(L, &g, groups);
    LLVMValueRef first = add(L, begin, mul(L, g.iv, k));
    LLVMValueRef left = LLVMBuildNSWSub(L->b, end, first, "");
    LLVMValueRef whole = LLVMBuildICmp(L->b, LLVMIntSGT, left, k, "");
    LLVMValueRef count = LLVMBuildSelect(L->b, whole, k, left, "");
    LLVMValueRef base = mul(L, first, c);
    fill_columns(N, first, count);
    if (N->prefetch) {
        LLVMValueRef *at = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *at);
        for (int i = 0; i < N->n_leaves; i++)
            at[i] = base;
        cg_nest_prefetch_ahead(N, at, N->group * N->c->shape.dims[1]);
        free(at);
    }
    cg_loop e;
    cg_loop_begin(L, &e, mul(L, count, c));
    LLVMValueRef at = add(L, base, e.iv);
    LLVMValueRef *offs = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *offs);
    LLVMValueRef *data = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *data);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        data[i] = l->data;
        if (N->tiles[i])
            l->data = N->tiles[i];
        offs[i] = N->tiles[i] ? e.iv : at;
    }
    cg_nest_body(N, at, offs);
    for (int i = 0; i < N->n_leaves; i++)
        N->leaves[i].data = data[i];
    free(offs);
    free(data);
    cg_loop_end(L, &e);
    if (cg_nest_calls_tanh(N->c))
        cg_loop_interleave(L, e.latch, TANH_INTERLEAVE);
    cg_loop_end(L, &g);
}
