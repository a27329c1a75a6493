/*
 * tiles.c - the tiled layout of tensors in a TPU's memory (program.h's
 * tpu_padded_bytes): the last two dims pad up to a tile of (8, 128)
 * 32-bit slots ((16, 128) for bf16, (32, 128) for i8), so every byte
 * stored or moved pays for the padding. The compiler (compile.c) and the
 * partitioner (partition.c) size values with it.
 */
#include "program.h"

enum { LANES_TILE = 128 };

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

bool tpu_shape_static(const ir_type *t)
{
    if (t->dtype == RT_LIST || t->shape.rank < 0)
        return false;
    for (int i = 0; i < t->shape.rank; i++)
        if (t->shape.dims[i] < 0)
            return false;
    return true;
}

/* A 32-bit slot per element, 16-bit for bf16 (two to a sublane), 8-bit
 * for i8 (four to a sublane): memory holds the packed tiles, (16, 128)
 * for bf16 and (32, 128) for i8. */
static int64_t slot_bytes(ag_dtype dt)
{
    return dt == AG_I8 ? 1 : dt == AG_BF16 ? 2 : dt == AG_F64 || dt == AG_I64 ? 8 : 4;
}
static int64_t tile_rows(ag_dtype dt) { return dt == AG_I8 ? 32 : dt == AG_BF16 ? 16 : 8; }

int64_t tpu_padded_bytes(const ir_type *t)
{
    if (!tpu_shape_static(t))
        return -1;
    const ag_shape *s = &t->shape;
    int64_t rows = s->rank >= 2 ? s->dims[s->rank - 2] : 1;
    int64_t cols = s->rank >= 1 ? s->dims[s->rank - 1] : 1;
    int64_t lead = 1;
    for (int i = 0; i + 2 < s->rank; i++)
        lead *= s->dims[i];
    return lead * round_up(rows, tile_rows(t->dtype)) * round_up(cols, LANES_TILE) *
           slot_bytes(t->dtype);
}
