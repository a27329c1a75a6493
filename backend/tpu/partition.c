/*
 * partition.c - a placed TPU function partitioned over a slice's chips
 * (partition.h): each product's split, each value's layout, the
 * collectives between, and the function as one chip runs it (each value
 * typed as a chip holds it), which compile.c then costs as any program.
 *
 * One walk in program order: a product picks its split from the cost
 * model (or the spec's `partition`); a fused loop takes the layout of its
 * split operands when all agree and every member divides; anything else
 * needs its operands whole. A split value that a consumer needs whole is
 * all-gathered once, right after it is made (and is whole from then on).
 * The function's parameters are free: the host sends each chip the share
 * its consumers want (or the whole when they disagree), so a parameter
 * never needs a collective.
 *
 * Then the chips' programs: the dimensions split anywhere, and for each
 * chip its share of each (tpu_slice_share); chips with the same shares
 * run the same program, a copy of the function typed with them.
 */
#include "partition.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { FREE = -1 }; /* a parameter whose layout no consumer chose yet */

typedef struct partitioner {
    const ir_function *fn;
    const pass_fusion_plan *fusion;
    const ir_liveness *live;
    const tpu_spec *spec;
    ir_device device;
    tpu_slice *s;
    int *param_layout; /* by id: FREE or the layout the host sends */
    int chip;          /* the chip whose types chip_function gives */
} partitioner;

static int64_t div_up(int64_t x, int64_t m) { return (x + m - 1) / m; }
static int64_t round_up(int64_t x, int64_t m) { return div_up(x, m) * m; }

const char *tpu_split_name(tpu_split s)
{
    static const char *const names[] = {"none (whole on every chip)", "M (rows)",
                                        "N (columns)", "K (contracting)"};
    return names[s];
}

void tpu_slice_share(int64_t d, int chips, int c, int64_t *from, int64_t *to)
{
    if (d % chips == 0) {
        *from = d * c / chips;
        *to = d * (c + 1) / chips;
        return;
    }
    int64_t units = div_up(d, TPU_SHARE_UNIT);
    int64_t a = TPU_SHARE_UNIT * (units * c / chips), b = TPU_SHARE_UNIT * (units * (c + 1) / chips);
    *from = a < d ? a : d;
    *to = b < d ? b : d;
}

bool tpu_slice_can_split(int64_t d, int chips)
{
    return d > 0 && (d % chips == 0 || div_up(d, TPU_SHARE_UNIT) >= chips);
}

/* Chip c's share of d, or with c < 0 the largest share (the cost model's
 * and the HBM fit's: the slowest chip's, the fullest). */
static int64_t share_len(int64_t d, int chips, int c)
{
    int64_t from, to, most = 0;
    for (int i = c < 0 ? 0 : c; i < (c < 0 ? chips : c + 1); i++) {
        tpu_slice_share(d, chips, i, &from, &to);
        most = to - from > most ? to - from : most;
    }
    return most;
}

/* ------------------------------------------------------------- layouts */

static bool is_param(const partitioner *P, const ir_node *v)
{
    return v->opcode == IR_PARAM && v->graph == P->fn->body;
}

/* v's layout as its consumers find it now: FREE for a parameter no one
 * chose, whole once gathered. */
static int current(const partitioner *P, const ir_node *v)
{
    if (is_param(P, v))
        return P->param_layout[v->id];
    const tpu_shard *x = &P->s->node[v->id];
    return x->collective ? TPU_WHOLE : (int)x->layout;
}

/* The dimension of t that layout l splits, or -1. */
static int split_axis(const ir_type *t, tpu_layout l)
{
    int r = t->shape.rank;
    if (l == TPU_ROWS)
        return r >= 2 ? r - 2 : -1;
    if (l == TPU_COLS)
        return r >= 1 ? r - 1 : -1;
    return l == TPU_BATCH && r >= 1 ? 0 : -1;
}

/* v's type with layout l on chip `chip` (< 0: the largest share). */
static ir_type chip_type(const partitioner *P, const ir_type *t, tpu_layout l, int chip)
{
    ir_type c = *t;
    int d = split_axis(t, l);
    if (d >= 0)
        c.shape.dims[d] = share_len(c.shape.dims[d], P->s->chips, chip);
    return c;
}

/* Whether t splits with layout l (a conv2d's images: rank 3 or more). */
static bool divides(const partitioner *P, const ir_type *t, tpu_layout l)
{
    if (l == TPU_WHOLE)
        return true;
    int d = l == TPU_BATCH && t->shape.rank < 3 ? -1 : split_axis(t, l);
    return d >= 0 && tpu_slice_can_split(t->shape.dims[d], P->s->chips);
}

/* A consumer needs v with layout l (whole always does: a chip takes its
 * share of a whole value locally). */
static void need(partitioner *P, const ir_node *v, tpu_layout l)
{
    if (is_param(P, v)) {
        int *p = &P->param_layout[v->id];
        *p = *p == FREE || *p == (int)l ? (int)l : TPU_WHOLE;
        return;
    }
    tpu_shard *x = &P->s->node[v->id];
    if (x->layout != TPU_WHOLE && x->layout != l && !x->collective) {
        x->collective = true;
        x->kind = TPU_ALL_GATHER;
    }
}

static void need_all_whole(partitioner *P, const ir_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        need(P, n->in[i], TPU_WHOLE);
}

/* ------------------------------------------------------------- products */

static bool is_float(ag_dtype dt) { return dt == AG_F32 || dt == AG_BF16; }

static bool splittable_product(const ir_node *n)
{
    if (!is_float(n->type.dtype))
        return false;
    if (n->opcode == RT_OP_CONV2D)
        return n->type.shape.rank == 4;
    return n->opcode == RT_OP_MATMUL && n->in[0]->type.shape.rank == 2 &&
           n->in[1]->type.shape.rank == 2;
}

/* The layouts a split wants of a product's operands (a conv2d's M split
 * takes its images, the input's first dim, with the filter whole). */
static void wants(const ir_node *n, tpu_split s, tpu_layout *a, tpu_layout *b)
{
    static const tpu_layout mm[4][2] = {{TPU_WHOLE, TPU_WHOLE}, {TPU_ROWS, TPU_WHOLE},
                                        {TPU_WHOLE, TPU_COLS}, {TPU_COLS, TPU_ROWS}};
    bool conv = n->opcode == RT_OP_CONV2D;
    *a = conv ? (s == TPU_SPLIT_M ? TPU_BATCH : TPU_WHOLE) : mm[s][0];
    *b = conv ? TPU_WHOLE : mm[s][1];
}

static tpu_layout result_layout(const ir_node *n, tpu_split s)
{
    if (n->opcode == RT_OP_CONV2D)
        return s == TPU_SPLIT_M ? TPU_BATCH : TPU_WHOLE;
    return s == TPU_SPLIT_M ? TPU_ROWS : s == TPU_SPLIT_N ? TPU_COLS : TPU_WHOLE;
}

static bool split_valid(const partitioner *P, const ir_node *n, tpu_split s)
{
    int c = P->s->chips;
    if (s == TPU_SPLIT_NONE)
        return true;
    if (n->opcode == RT_OP_CONV2D)
        return s == TPU_SPLIT_M && tpu_slice_can_split(n->in[0]->type.shape.dims[0], c);
    const int64_t *a = n->in[0]->type.shape.dims, *b = n->in[1]->type.shape.dims;
    int64_t dim = s == TPU_SPLIT_M ? a[0] : s == TPU_SPLIT_N ? b[1] : a[1];
    return tpu_slice_can_split(dim, c);
}

static int64_t coll_cycles(const partitioner *P, tpu_collective kind, int64_t bytes)
{
    const tpu_spec *sp = P->spec;
    double t = tpu_coll_mesh_seconds(sp, kind, bytes, (int)sp->mesh.x, (int)sp->mesh.y);
    return (int64_t)ceil(t * sp->clock_hz);
}

/* The MXU's cycles for a chip's share (compile.c's formula), and its
 * operands' staging at the staging bandwidth: an estimate to compare
 * splits, not the instruction's cost (compile.c gives that). */
static int64_t product_cycles(const partitioner *P, int64_t m, int64_t k, int64_t n,
                              ag_dtype dt, int64_t bytes)
{
    const tpu_spec *s = P->spec;
    static const int passes[] = {1, 3, 6};
    int64_t tiles = div_up(k, s->mxu.rows) * div_up(n, s->mxu.cols);
    int p = dt == AG_F32 ? passes[s->precision] : 1;
    int64_t per_tile = 2 * s->mxu.rows + s->mxu.cols + round_up(m, 8) - 2;
    int64_t mxu = div_up(tiles * p, s->mxu.count) * per_tile;
    int64_t dma = (int64_t)ceil((double)bytes / tpu_spec_staging_bandwidth(s) * s->clock_hz);
    return mxu > dma ? mxu : dma;
}

/* Gathering operand v, if split s needs it another way than it lies. */
static int64_t fixup_cycles(const partitioner *P, const ir_node *v, tpu_layout want)
{
    int l = current(P, v);
    if (l == FREE || l == TPU_WHOLE || l == (int)want)
        return 0;
    return coll_cycles(P, TPU_ALL_GATHER, tpu_padded_bytes(&v->type));
}

typedef struct estimate {
    int64_t cycles, chip_bytes;
} estimate;

static estimate estimate_split(const partitioner *P, const ir_node *n, tpu_split s)
{
    tpu_layout la, lb;
    wants(n, s, &la, &lb);
    ir_type a = chip_type(P, &n->in[0]->type, la, -1), b = chip_type(P, &n->in[1]->type, lb, -1);
    ir_type o = chip_type(P, &n->type, result_layout(n, s), -1);
    estimate e = {.chip_bytes = tpu_padded_bytes(&a) + tpu_padded_bytes(&b) +
                                tpu_padded_bytes(&o)};
    int64_t m, k, nn;
    if (n->opcode == RT_OP_CONV2D) { /* its im2col product (compile.c) */
        m = o.shape.dims[0] * o.shape.dims[1] * o.shape.dims[2];
        k = b.shape.dims[0] * b.shape.dims[1] * b.shape.dims[2];
        nn = b.shape.dims[3];
    } else {
        m = a.shape.dims[0];
        k = a.shape.dims[1];
        nn = b.shape.dims[1];
    }
    e.cycles = product_cycles(P, m, k, nn, n->in[0]->type.dtype, e.chip_bytes) +
               fixup_cycles(P, n->in[0], la) + fixup_cycles(P, n->in[1], lb);
    if (s == TPU_SPLIT_K)
        e.cycles += coll_cycles(P, TPU_ALL_REDUCE, tpu_padded_bytes(&n->type));
    return e;
}

/* The spec's `partition`, as a split: TPU_SPLIT_NONE for REPLICATED,
 * -1 for AUTO. */
static int forced(const tpu_spec *s)
{
    static const int of[] = {-1, TPU_SPLIT_M, TPU_SPLIT_N, TPU_SPLIT_K, TPU_SPLIT_NONE};
    return of[s->partition];
}

/* The split forced when it divides, else the fitting one of least
 * cycles (ties to the earlier: M, N, K, none), else the one needing
 * the least HBM a chip. */
static tpu_split choose_split(const partitioner *P, const ir_node *n)
{
    static const tpu_split order[] = {TPU_SPLIT_M, TPU_SPLIT_N, TPU_SPLIT_K, TPU_SPLIT_NONE};
    int f = forced(P->spec);
    if (f >= 0)
        return split_valid(P, n, (tpu_split)f) ? (tpu_split)f : TPU_SPLIT_NONE;
    tpu_split best = TPU_SPLIT_NONE, least = TPU_SPLIT_NONE;
    estimate be = {-1, 0}, le = {0, -1};
    for (int i = 0; i < 4; i++) {
        if (!split_valid(P, n, order[i]))
            continue;
        estimate e = estimate_split(P, n, order[i]);
        bool fits = e.chip_bytes <= P->spec->hbm.capacity_bytes;
        if (fits && (be.cycles < 0 || e.cycles < be.cycles)) {
            best = order[i];
            be = e;
        }
        if (le.chip_bytes < 0 || e.chip_bytes < le.chip_bytes) {
            least = order[i];
            le = e;
        }
    }
    return be.cycles >= 0 ? best : least;
}

static void partition_product(partitioner *P, const ir_node *n)
{
    tpu_shard *x = &P->s->node[n->id];
    x->split = choose_split(P, n);
    tpu_layout la, lb;
    wants(n, x->split, &la, &lb);
    need(P, n->in[0], la);
    need(P, n->in[1], lb);
    for (int i = 2; i < n->n_in; i++)
        need(P, n->in[i], TPU_WHOLE);
    x->layout = result_layout(n, x->split);
    if (x->split == TPU_SPLIT_K) {
        x->collective = true;
        x->kind = TPU_ALL_REDUCE;
    }
}

/* ---------------------------------------------------------------- loops */

static bool in_loop(const partitioner *P, const ir_node *v, int c)
{
    return v->id < P->fusion->n_ids && P->fusion->cluster[v->id] == c;
}

static bool same_shape(const ir_type *a, const ir_type *b)
{
    return ag_shape_equal(a->shape, b->shape);
}

/* The layout loop c (from head on) can run with: the one its split
 * operands share, when every member divides by it and every split
 * operand has its reader's shape; else whole. */
static tpu_layout loop_layout(const partitioner *P, const ir_node *head, int c)
{
    int l = TPU_WHOLE;
    for (const ir_node *m = head; m; m = m->next)
        for (int i = 0; in_loop(P, m, c) && i < m->n_in; i++) {
            int v = in_loop(P, m->in[i], c) ? TPU_WHOLE : current(P, m->in[i]);
            if (v != TPU_WHOLE && v != FREE && l == TPU_WHOLE)
                l = v;
        }
    for (const ir_node *m = head; m && l != TPU_WHOLE; m = m->next) {
        if (!in_loop(P, m, c))
            continue;
        if (!divides(P, &m->type, (tpu_layout)l))
            return TPU_WHOLE;
        for (int i = 0; i < m->n_in; i++) {
            int v = in_loop(P, m->in[i], c) ? TPU_WHOLE : current(P, m->in[i]);
            if (v != TPU_WHOLE && v != FREE && (v != l || !same_shape(&m->in[i]->type, &m->type)))
                return TPU_WHOLE;
        }
    }
    return (tpu_layout)l;
}

static void partition_loop(partitioner *P, const ir_node *head, int c)
{
    tpu_layout l = loop_layout(P, head, c);
    for (const ir_node *m = head; m; m = m->next) {
        if (!in_loop(P, m, c))
            continue;
        P->s->node[m->id].layout = l;
        for (int i = 0; i < m->n_in; i++) {
            const ir_node *v = m->in[i];
            if (!in_loop(P, v, c))
                need(P, v, l != TPU_WHOLE && same_shape(&v->type, &m->type) ? l : TPU_WHOLE);
        }
    }
}

/* ----------------------------------------------------------------- walk */

static bool loop_member(const partitioner *P, const ir_node *n)
{
    return n->id < P->fusion->n_ids && P->fusion->cluster[n->id] >= 0;
}

/* Whether an earlier node of g is in n's loop (n is not its head). */
static bool loop_seen(const partitioner *P, const ir_node *n)
{
    for (const ir_node *m = n->graph->first; m != n; m = m->next)
        if (in_loop(P, m, P->fusion->cluster[n->id]))
            return true;
    return false;
}

static void partition_node(partitioner *P, const ir_node *n)
{
    if (n->device != P->device) {
        need_all_whole(P, n); /* host ops and transfers */
        return;
    }
    if (n->opcode < RT_OP_COUNT && tpu_ops[n->opcode] == TPU_OP_MXU && splittable_product(n)) {
        partition_product(P, n);
        return;
    }
    if (n->opcode < RT_OP_COUNT && tpu_ops[n->opcode] == TPU_OP_VPU && loop_member(P, n)) {
        if (!loop_seen(P, n))
            partition_loop(P, n, P->fusion->cluster[n->id]);
        return;
    }
    need_all_whole(P, n);
}

/* --------------------------------------------------- the collectives' cost */

static void add_phase(partitioner *P, tpu_shard *x, tpu_collective kind, int64_t bytes, int n,
                      tpu_unit q)
{
    double t = tpu_coll_axis_seconds(P->spec, kind, bytes, n);
    if (t <= 0)
        return;
    x->formula_seconds += tpu_coll_ring_formula(P->spec, kind, bytes, n);
    x->queue[x->n_phases] = q;
    x->cycles[x->n_phases++] = (int64_t)ceil(t * P->spec->clock_hz);
}

/* collective.c's mesh order: a reduce-scatter along y then x, an
 * all-gather along x then y; an all-reduce is both. */
static void cost_collective(partitioner *P, const ir_node *n, tpu_shard *x)
{
    int nx = (int)P->spec->mesh.x, ny = (int)P->spec->mesh.y;
    x->whole = n->type;
    x->bytes = tpu_padded_bytes(&n->type);
    int64_t part = div_up(x->bytes, ny);
    if (x->kind == TPU_ALL_REDUCE) {
        add_phase(P, x, TPU_REDUCE_SCATTER, x->bytes, ny, TPU_UNIT_ICI_Y);
        add_phase(P, x, TPU_REDUCE_SCATTER, part, nx, TPU_UNIT_ICI_X);
    }
    add_phase(P, x, TPU_ALL_GATHER, part, nx, TPU_UNIT_ICI_X);
    add_phase(P, x, TPU_ALL_GATHER, x->bytes, ny, TPU_UNIT_ICI_Y);
}

/* ----------------------------------------------------- the chip's function */

/* The share of v its producer makes on a chip (a gathered value: before
 * the gather, which fills in the rest of its buffer). */
static tpu_layout held(const partitioner *P, const ir_node *v)
{
    int l = is_param(P, v) ? P->param_layout[v->id] : (int)P->s->node[v->id].layout;
    return l == FREE ? TPU_WHOLE : (tpu_layout)l;
}

static void type_chip_node(const partitioner *P, ir_node *c)
{
    c->type = chip_type(P, &c->type, held(P, c), P->chip);
}

/*
 * What a node of the copy reads of operand v (typed as its producer makes
 * it) when it wants another layout l: the whole of a gathered value, or a
 * chip's share of a whole one, taken in place. A stand-in with v's id (so
 * every table by id is v's) and type t, which compile.c costs the
 * consumer with. One per (v, l) in each chip function (v's graph is its).
 */
static ir_node *share_of(partitioner *P, ir_node *v, tpu_layout l, ir_type t)
{
    tpu_slice *s = P->s;
    for (int i = 0; i < s->n_stand_ins; i++)
        if (s->stand_in[i]->id == v->id && s->stand_in[i]->graph == v->graph &&
            s->stand_in_layout[i] == l)
            return s->stand_in[i];
    ir_node *x = rt_xmalloc(sizeof *x);
    *x = *v;
    x->type = t;
    s->stand_in = rt_xrealloc(s->stand_in, (size_t)(s->n_stand_ins + 1) * sizeof *s->stand_in);
    s->stand_in_layout = rt_xrealloc(s->stand_in_layout,
                                     (size_t)(s->n_stand_ins + 1) * sizeof *s->stand_in_layout);
    s->stand_in[s->n_stand_ins] = x;
    s->stand_in_layout[s->n_stand_ins++] = l;
    return x;
}

/* The layout n (of the original) reads operand i with. */
static tpu_layout reads(const partitioner *P, const ir_node *n, int i)
{
    const tpu_shard *x = &P->s->node[n->id];
    if (x->split != TPU_SPLIT_NONE) {
        tpu_layout a, b;
        wants(n, x->split, &a, &b);
        return i == 0 ? a : i == 1 ? b : TPU_WHOLE;
    }
    bool member = n->opcode < RT_OP_COUNT && tpu_ops[n->opcode] == TPU_OP_VPU &&
                  loop_member(P, n) && !in_loop(P, n->in[i], P->fusion->cluster[n->id]);
    if (member && x->layout != TPU_WHOLE && same_shape(&n->in[i]->type, &n->type))
        return x->layout;
    return TPU_WHOLE;
}

/* Every node of the copy reads its operands as it wants them: split
 * products and loops their shares, the others gathered values whole. */
static void read_shares(partitioner *P, ir_function *c)
{
    const ir_node *o = P->fn->body->first;
    for (ir_node *n = c->body->first; n && o; n = n->next, o = o->next)
        for (int i = 0; i < n->n_in; i++) {
            tpu_layout l = reads(P, o, i);
            if (l != held(P, o->in[i]))
                n->in[i] = share_of(P, n->in[i], l, chip_type(P, &o->in[i]->type, l, P->chip));
        }
}

static ir_function *chip_function(partitioner *P, tgt_diag *diag)
{
    ir_function *c = ir_copy(P->fn, diag->msg, sizeof diag->msg);
    if (!c)
        return NULL;
    for (int i = 0; i < c->body->n_params; i++)
        type_chip_node(P, c->body->params[i]);
    for (ir_node *n = c->body->first; n; n = n->next)
        if (n->id < P->s->n_ids && n->opcode != IR_COND && n->opcode != IR_WHILE)
            type_chip_node(P, n);
    read_shares(P, c);
    return c;
}

/* ------------------------------------------------------- the programs */

typedef struct dims {
    int64_t *d;
    int n;
} dims;

static void add_dim(dims *D, const ir_type *t, tpu_layout l)
{
    int a = split_axis(t, l);
    if (l == TPU_WHOLE || a < 0)
        return;
    for (int i = 0; i < D->n; i++)
        if (D->d[i] == t->shape.dims[a])
            return;
    D->d = rt_xrealloc(D->d, (size_t)(D->n + 1) * sizeof *D->d);
    D->d[D->n++] = t->shape.dims[a];
}

/* Every dimension a chip holds or reads a share of. */
static dims split_dims(const partitioner *P)
{
    dims D = {0};
    const ir_graph *g = P->fn->body;
    for (int i = 0; i < g->n_params; i++)
        add_dim(&D, &g->params[i]->type, held(P, g->params[i]));
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->id < P->s->n_ids && n->opcode != IR_COND && n->opcode != IR_WHILE)
            add_dim(&D, &n->type, held(P, n));
        for (int i = 0; i < n->n_in; i++)
            add_dim(&D, &n->in[i]->type, reads(P, n, i));
    }
    return D;
}

static bool same_shares(const dims *D, int chips, int a, int b)
{
    for (int i = 0; i < D->n; i++)
        if (share_len(D->d[i], chips, a) != share_len(D->d[i], chips, b))
            return false;
    return true;
}

/* Which program each chip runs: the first chip's with the same shares. */
static void group_chips(partitioner *P)
{
    tpu_slice *s = P->s;
    dims D = split_dims(P);
    s->program_of = rt_xmalloc((size_t)s->chips * sizeof *s->program_of);
    s->first_chip = rt_xmalloc((size_t)s->chips * sizeof *s->first_chip);
    for (int c = 0; c < s->chips; c++) {
        int k = 0;
        while (k < s->n_programs && !same_shares(&D, s->chips, s->first_chip[k], c))
            k++;
        if (k == s->n_programs)
            s->first_chip[s->n_programs++] = c;
        s->program_of[c] = k;
    }
    free(D.d);
}

static bool chip_functions(partitioner *P, tgt_diag *diag)
{
    tpu_slice *s = P->s;
    s->chip_fn = rt_xcalloc((size_t)s->n_programs, sizeof *s->chip_fn);
    for (int k = 0; k < s->n_programs; k++) {
        P->chip = s->first_chip[k];
        if (!(s->chip_fn[k] = chip_function(P, diag)))
            return false;
    }
    return true;
}

tpu_slice *tpu_slice_new(const ir_function *fn, pass_analyses *am, const tpu_spec *spec,
                         tgt_diag *diag)
{
    tpu_slice *s = rt_xcalloc(1, sizeof *s);
    s->chips = (int)spec->chips;
    s->nx = (int)spec->mesh.x;
    s->ny = (int)spec->mesh.y;
    s->n_ids = fn->next_id > 0 ? fn->next_id : 1;
    s->node = rt_xcalloc((size_t)s->n_ids, sizeof *s->node);
    partitioner P = {.fn = fn, .fusion = pass_analyses_fusion(am),
                     .live = pass_analyses_liveness(am), .spec = spec,
                     .device = ir_device_named(TPU_TARGET), .s = s};
    P.param_layout = rt_xmalloc((size_t)s->n_ids * sizeof *P.param_layout);
    for (int i = 0; i < s->n_ids; i++)
        P.param_layout[i] = FREE;
    for (const ir_node *n = fn->body->first; n; n = n->next)
        if (ir_is_live(P.live, n))
            partition_node(&P, n);
    for (const ir_node *n = fn->body->first; n; n = n->next)
        if (s->node[n->id].collective)
            cost_collective(&P, n, &s->node[n->id]);
    for (int i = 0; i < fn->body->n_params; i++) {
        int id = fn->body->params[i]->id;
        s->node[id].layout = P.param_layout[id] == FREE ? TPU_WHOLE : (tpu_layout)P.param_layout[id];
    }
    group_chips(&P);
    bool made = chip_functions(&P, diag);
    free(P.param_layout);
    if (!made) {
        tpu_slice_free(s);
        return NULL;
    }
    return s;
}

/* Node i's multiply-adds and flops over the slice: every chip's share. */
static void slice_work(const tpu_program *p, int i, int64_t *macs, int64_t *flops)
{
    const tpu_slice *s = p->slice;
    *macs = *flops = 0;
    for (int c = 0; c < s->chips; c++) {
        const tpu_inst *x = &p->programs[s->program_of[c]]->inst[i];
        *macs += x->macs;
        *flops += x->flops;
    }
}

void tpu_slice_count(tpu_program *p)
{
    const tpu_slice *s = p->slice;
    for (int i = 0; i < p->n_ids && i < s->n_ids; i++) {
        const tpu_shard *x = &s->node[i];
        int64_t macs = 0, flops = 0;
        if (x->split != TPU_SPLIT_NONE)
            slice_work(p, i, &macs, &flops);
        for (int k = 0; k < s->n_programs; k++) {
            tpu_inst *in = &p->programs[k]->inst[i];
            if (x->split != TPU_SPLIT_NONE) {
                in->macs = macs;
                in->flops = flops;
            }
            if (x->collective && in->padded_bytes > 0)
                in->padded_bytes = x->bytes;
        }
    }
}

void tpu_slice_free(tpu_slice *s)
{
    if (!s)
        return;
    for (int k = 0; s->chip_fn && k < s->n_programs; k++)
        if (s->chip_fn[k])
            ir_function_free(s->chip_fn[k]);
    free(s->chip_fn);
    free(s->program_of);
    free(s->first_chip);
    for (int i = 0; i < s->n_stand_ins; i++)
        free(s->stand_in[i]);
    free(s->stand_in);
    free(s->stand_in_layout);
    free(s->node);
    free(s);
}
