/*
 * listing_slice.c - what the listing (listing.c) says of a program
 * partitioned over several chips (partition.h): the slice in the header,
 * each product's split on its line, and each collective as an
 * instruction on the ICI queues after the value it carries:
 *
 *   ; slice 2x2 (4 chips over ICI): every chip runs this program on its share ...
 *
 * (with uneven shares, partition.h, the chips run several programs: the
 * listing is chip 0's, and its header says so)
 *   mxu.matmul  %4 = matmul(...) f32[64,128] ...  split N (columns)
 *   ici.all-gather %4 f32[64,512]: columns of 4 chips -> whole  131072 B  x 1460 + y 2193 cycles
 */
#include "partition.h"

#include <string.h>

static const char *layout_name(tpu_layout l)
{
    static const char *const names[] = {"whole", "rows", "columns", "images"};
    return names[l];
}

void tpu_slice_print_header(const tpu_program *p, FILE *out)
{
    const tpu_slice *s = p->slice;
    if (s->n_programs > 1)
        fprintf(out, "; slice %dx%d (%d chips over ICI): shares differ by up to %d rows or "
                     "columns, so the chips run %d programs; this is chip 0's, on its share: "
                     "types, cycles and hbm are chip 0's\n",
                s->nx, s->ny, s->chips, TPU_SHARE_UNIT, s->n_programs);
    else
        fprintf(out, "; slice %dx%d (%d chips over ICI): every chip runs this program on its "
                     "share; types, cycles and hbm are one chip's\n",
                s->nx, s->ny, s->chips);
    int count[4] = {0};
    for (int i = 0; i < s->n_ids; i++)
        if (p->inst[i].kind == TPU_MXU)
            count[s->node[i].split]++;
    fprintf(out, "; products split: %d M (rows), %d N (columns), %d K (contracting), %d none\n",
            count[TPU_SPLIT_M], count[TPU_SPLIT_N], count[TPU_SPLIT_K], count[TPU_SPLIT_NONE]);
}

static void indent(FILE *out, int depth)
{
    for (int i = 0; i < depth; i++)
        fputs("  ", out);
}

void tpu_slice_print_node(const tpu_program *p, const ir_node *n, int depth, FILE *out)
{
    const tpu_slice *s = p->slice;
    if (!s || n->id >= s->n_ids || !s->node[n->id].collective)
        return;
    const tpu_shard *x = &s->node[n->id];
    char t[128];
    indent(out, depth);
    fprintf(out, "ici.%s %%%d %s: ", tpu_coll_name(x->kind), n->id,
            ir_type_str(&x->whole, t, sizeof t));
    if (x->kind == TPU_ALL_REDUCE)
        fprintf(out, "partial sums of %d chips, added in chip order -> whole", s->chips);
    else
        fprintf(out, "%s of %d chips -> whole", layout_name(x->layout), s->chips);
    fprintf(out, "  %lld B ", (long long)x->bytes);
    for (int i = 0; i < x->n_phases; i++)
        fprintf(out, " %s%s %lld", i ? "+ " : "", x->queue[i] == TPU_UNIT_ICI_X ? "x" : "y",
                (long long)x->cycles[i]);
    fputs(" cycles\n", out);
}

void tpu_slice_splits(const tpu_program *p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const ir_node *x = p->fn->body->first; x && used < n; x = x->next) {
        if (x->opcode != RT_OP_MATMUL && x->opcode != RT_OP_CONV2D)
            continue;
        const char *file = x->loc.file ? strrchr(x->loc.file, '/') : NULL;
        file = file ? file + 1 : x->loc.file ? x->loc.file : "?";
        int k = snprintf(buf + used, n - used, "%s%s at %s:%d split %s", used ? "; " : "",
                         rt_op_listed_name(x->opcode), file, x->loc.line,
                         tpu_split_name(p->slice->node[x->id].split));
        used += k > 0 ? (size_t)k : 0;
    }
}
