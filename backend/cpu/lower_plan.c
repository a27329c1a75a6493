/*
 * lower_plan.c - what the generated code will do, decided before any LLVM
 * IR is built.
 *
 * For every node (by id) the plan records:
 *   - whether it is live (ir/liveness.h, from the analysis manager): a
 *     node runs when it reaches a result or an effect, and a live
 *     cond/while runs its regions whole;
 *   - its static shape, or a shape key when dims are unknown (values with
 *     the same key have the same shape at run time);
 *   - its kind: native scalar arithmetic, member of a fused elementwise
 *     loop (the loops are the fusion pass's plan, passes/fusion.c, taken
 *     as they are), native matrix product, constant, or the generic
 *     fallback;
 *   - its representation (register, frame buffer, or rt_value), which is
 *     chosen from what its consumers need;
 *   - where it dies (its last use in its graph), and its error-path slot.
 */
#include "lower.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Frame buffers: one buffer at most this big; larger values are rt_values. */
enum { BUF_MAX_BYTES = 16 * 1024 };
/* Native matrix products up to this many multiply-adds; larger ones go to
 * the runtime's kernel (BLAS for floats). */
enum { MATMUL_MAX_WORK = 64 * 64 * 64 };
/* Functions with more loops or runtime calls than this keep their loops
 * out of line (see cg_plan). */
enum { OUTLINE_LOOPS_ABOVE = 64, OUTLINE_FALLBACKS_ABOVE = 256 };

/* --------------------------------------------------------------- shapes */

/* n's static shape; the fusion plan's key stands for unknown dims. */
static cg_shape shape_of_type(cg_lower *L, const ir_node *n, const ag_shape *s)
{
    cg_shape out = {.rank = s->rank, .known = rt_shape_known(s),
                    .key = L->fusion->shape_key[n->id]};
    if (s->rank > 0 && s->rank <= AG_MAX_RANK)
        memcpy(out.dims, s->dims, (size_t)s->rank * sizeof *s->dims);
    return out;
}

bool cg_shape_unit(const cg_shape *s)
{
    if (!s->known)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] != 1)
            return false;
    return true;
}

static int64_t shape_numel(const cg_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

/* --------------------------------------------------------- classifying */

static bool is_nat_type(const ir_type *t)
{
    return t->dtype != RT_LIST && cg_native_dtype(t->dtype) && t->shape.rank == 0;
}

static bool operands_native(const ir_node *n, bool rank0)
{
    for (int i = 0; i < n->n_in; i++) {
        const ir_type *t = &n->in[i]->type;
        if (t->dtype == RT_LIST || !cg_native_dtype(t->dtype) || t->shape.rank < 0)
            return false;
        if (rank0 && t->shape.rank != 0)
            return false;
    }
    return true;
}

static bool matmul_native(cg_lower *L, const ir_node *n)
{
    const cg_shape *a = &L->info[n->in[0]->id].shape, *b = &L->info[n->in[1]->id].shape;
    ag_dtype dt = n->type.dtype;
    if (!(dt == AG_F32 || dt == AG_F64 || dt == AG_BF16 || dt == AG_I32 || dt == AG_I64))
        return false;
    if (!a->known || !b->known || a->rank != 2 || b->rank != 2 || a->dims[1] != b->dims[0])
        return false;
    /* bf16 products of every size use AVX512_BF16 where the CPU has it
     * (a blocked kernel, faster than widening for sgemm) */
    if (dt == AG_BF16 && L->bf16_dot)
        return true;
    double work = (double)a->dims[0] * (double)a->dims[1] * (double)b->dims[1];
    return work <= MATMUL_MAX_WORK;
}

/* Adds live node n to its loop (the fusion plan's cluster). Members
 * arrive in program order. */
static void cluster_add(cg_lower *L, const ir_node *n)
{
    int ci = L->fusion->cluster[n->id];
    cg_cluster *c = &L->clusters[ci];
    if (c->n_members == 0) {
        c->shape = L->info[n->id].shape;
        c->fallible = L->fusion->checked[n->id];
    }
    if (c->n_members == c->cap_members) {
        c->cap_members = c->cap_members ? 2 * c->cap_members : 8;
        c->members = rt_xrealloc(c->members, (size_t)c->cap_members * sizeof *c->members);
    }
    c->members[c->n_members++] = n;
    c->last = n;
    L->info[n->id].cluster = ci;
}

static void classify_graph(cg_lower *L, const ir_graph *g);

/* Region params: a cond's are its operands under new names; a while's are
 * its loop variables, in registers when they are native scalars. */
static void classify_params(cg_lower *L, const ir_graph *g)
{
    const ir_node *parent = g->parent;
    for (int i = 0; i < g->n_params; i++) {
        const ir_node *p = g->params[i];
        cg_info *pi = &L->info[p->id];
        pi->node = p;
        pi->kind = CG_K_PARAM;
        pi->live = true;
        pi->pos = -1;
        if (!parent) {
            pi->repr = CG_BOX;
            pi->shape = shape_of_type(L, p, &p->type.shape);
        } else if (parent->opcode == IR_COND) {
            const cg_info *oi = &L->info[parent->in[i + 1]->id];
            pi->repr = oi->repr == CG_NAT ? CG_NAT : CG_BOX;
            pi->shape = oi->shape;
        } else {
            pi->repr = is_nat_type(&p->type) ? CG_NAT : CG_BOX;
            pi->shape = shape_of_type(L, p, &p->type.shape);
        }
    }
}

static void classify_node(cg_lower *L, const ir_node *n)
{
    cg_info *ni = &L->info[n->id];
    ni->kind = CG_K_FALLBACK;
    ni->repr = CG_BOX;
    ni->shape = shape_of_type(L, n, &n->type.shape);
    if (n->n_in > L->max_inputs)
        L->max_inputs = n->n_in;
    if (ni->into) { /* lower_qlayer.c */
        ni->kind = CG_K_ABSORBED;
        ni->repr = CG_NONE;
        return;
    }
    if (ni->qlayer) {
        ni->kind = CG_K_QLAYER;
        if (L->max_inputs < CG_QLAYER_OPERANDS)
            L->max_inputs = CG_QLAYER_OPERANDS;
        return;
    }
    switch (n->opcode) {
    case IR_COND:
    case IR_WHILE:
        ni->kind = CG_K_REGION;
        ni->repr = CG_NONE;
        ni->res_repr = rt_xcalloc((size_t)n->n_results + 1, sizeof *ni->res_repr);
        ni->res_slot = rt_xcalloc((size_t)n->n_results + 1, sizeof *ni->res_slot);
        for (int i = 0; i < n->n_results; i++) {
            ni->res_repr[i] = is_nat_type(&n->results[i]) ? CG_NAT : CG_BOX;
            ni->res_slot[i] = -1;
        }
        classify_graph(L, n->region[0]);
        classify_graph(L, n->region[1]);
        return;
    case IR_GET:
        ni->kind = CG_K_GET;
        ni->repr = L->info[n->in[0]->id].res_repr[n->index];
        return;
    case RT_OP_CONST:
        if (is_nat_type(&n->type)) {
            ni->kind = CG_K_CONST;
            ni->repr = CG_NAT;
        } else if (cg_native_dtype(n->type.dtype) && ni->shape.known) {
            ni->kind = CG_K_CONST; /* read in place unless boxed (see decide) */
            ni->repr = CG_BUF;
        }
        return;
    case RT_OP_MATMUL:
        if (matmul_native(L, n)) {
            ni->kind = CG_K_MATMUL;
            ni->repr = CG_BUF; /* or CG_BOX (see decide) */
        }
        return;
    default:
        break;
    }
    if (!pass_fusible(pass_analyses_caps(L->am), n))
        return;
    if (is_nat_type(&n->type) && operands_native(n, true)) {
        ni->kind = CG_K_SCALAR;
        ni->repr = CG_NAT;
        return;
    }
    if (L->fusion->cluster[n->id] < 0)
        return;
    ni->kind = CG_K_FUSED;
    ni->repr = CG_BUF; /* or CG_BOX or CG_NONE (see decide) */
    cluster_add(L, n);
}

/* The members of other loops that `user` reads are stored (the plan has
 * put their loops before `user`). */
static void materialize_used(cg_lower *L, const ir_node *user)
{
    const cg_info *ui = &L->info[user->id];
    for (int i = 0; i < user->n_in; i++) {
        cg_info *mi = &L->info[user->in[i]->id];
        if (mi->kind != CG_K_FUSED)
            continue;
        if (ui->kind == CG_K_FUSED && ui->cluster == mi->cluster)
            continue;
        mi->materialize = true;
    }
}

static void classify_graph(cg_lower *L, const ir_graph *g)
{
    classify_params(L, g);
    int pos = 0;
    for (const ir_node *n = g->first; n; n = n->next) {
        cg_info *ni = &L->info[n->id];
        ni->node = n;
        ni->pos = pos++;
        ni->cluster = -1;
        ni->slot = -1;
        if (!ni->live)
            continue;
        classify_node(L, n);
        materialize_used(L, n);
    }
    for (int i = 0; i < g->n_results; i++) {
        cg_info *ri = &L->info[g->results[i]->id];
        if (ri->kind == CG_K_FUSED)
            ri->materialize = true;
    }
}

/* ------------------------------------------------------------ consumers */

/* What a consumer wants of a value. USE_LEND: an rt_value for the length
 * of a runtime call that does not keep it, which a literal lends in place
 * (a box of the frame borrowing its data) instead of being copied into a
 * tensor of its own at every call: the weights of a layer whose product
 * runs in the runtime's kernel (an unknown batch dim), 256 KB each. */
typedef enum use_kind { USE_BOX, USE_LEND, USE_NAT, USE_DATA, USE_SCALAR, USE_NONE } use_kind;

/* A value read as one element broadcast over a loop (rank 0 or unit). */
static use_kind scalar_use(const cg_info *mi)
{
    return mi->repr == CG_NAT ? USE_NAT : USE_SCALAR;
}

static use_kind operand_use(cg_lower *L, const ir_node *user, int i)
{
    const cg_info *ui = &L->info[user->id];
    const cg_info *mi = &L->info[user->in[i]->id];
    switch (ui->kind) {
    case CG_K_SCALAR:
        return USE_NAT;
    case CG_K_FUSED:
        if (mi->kind == CG_K_FUSED && mi->cluster == ui->cluster)
            return USE_NONE;
        return cg_shape_unit(&mi->shape) || mi->shape.rank == 0 ? scalar_use(mi) : USE_DATA;
    case CG_K_MATMUL:
        return USE_DATA;
    case CG_K_GET:
        return USE_NONE;
    case CG_K_REGION:
        if (user->opcode == IR_COND)
            return mi->repr == CG_NAT ? USE_NAT : USE_BOX;
        return ui->res_repr[i] == CG_NAT ? USE_NAT : USE_BOX;
    case CG_K_FALLBACK:
        return cg_keeps_operand(user, i) ? USE_BOX : USE_LEND;
    case CG_K_QLAYER: /* in[0] is absorbed; the call keeps no operand */
    case CG_K_ABSORBED:
        return mi->kind == CG_K_ABSORBED ? USE_NONE : USE_LEND;
    default:
        return USE_BOX;
    }
}

/* A region's results go to its parent's results (cond, while body), or
 * decide the loop (while cond), or are returned (top level). */
static use_kind result_use(const ir_graph *g, int i, const cg_info *parent)
{
    if (!g->parent)
        return USE_BOX;
    if (g->parent->opcode == IR_WHILE && g == g->parent->region[0])
        return USE_NAT; /* the loop condition: a bool scalar */
    return parent->res_repr[i] == CG_NAT ? USE_NAT : USE_BOX;
}

static void note_use(cg_info *mi, use_kind u)
{
    switch (u) {
    case USE_LEND: /* other values are boxes of their own */
        if (mi->kind == CG_K_CONST && mi->repr == CG_BUF)
            mi->need_data = true;
        else
            note_use(mi, USE_BOX);
        break;
    case USE_BOX:
        if (mi->repr == CG_BUF) {
            mi->repr = CG_BOX; /* a consumer needs an rt_value */
            if (mi->kind == CG_K_CONST)
                mi->kind = CG_K_FALLBACK;
        }
        break;
    case USE_NAT:
        mi->need_nat = true;
        if (mi->repr != CG_NAT)
            mi->need_data = true;
        break;
    case USE_SCALAR:
    case USE_DATA:
        mi->need_data = true;
        break;
    case USE_NONE:
        break;
    }
}

static int use_pos(cg_lower *L, const ir_node *user)
{
    const cg_info *ui = &L->info[user->id];
    if (ui->kind == CG_K_FUSED)
        return L->info[L->clusters[ui->cluster].last->id].pos;
    if (ui->kind == CG_K_ABSORBED) /* its operands are read by the layer's call */
        return L->info[ui->into->id].pos;
    return ui->pos;
}

static void uses_graph(cg_lower *L, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        cg_info *ni = &L->info[n->id];
        if (!ni->live)
            continue;
        ni->last_use = use_pos(L, n); /* dies at once unless used */
        for (int i = 0; i < n->n_in; i++) {
            cg_info *mi = &L->info[n->in[i]->id];
            note_use(mi, operand_use(L, n, i));
            int p = use_pos(L, n);
            if (p > mi->last_use)
                mi->last_use = p;
        }
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                uses_graph(L, n->region[r]);
    }
    const cg_info *parent = g->parent ? &L->info[g->parent->id] : NULL;
    for (int i = 0; i < g->n_results; i++) {
        cg_info *ri = &L->info[g->results[i]->id];
        note_use(ri, result_use(g, i, parent));
        if (ri->kind == CG_K_FUSED && ri->repr == CG_BUF)
            ri->repr = CG_BOX; /* a result is an rt_value */
        if (ri->kind == CG_K_MATMUL)
            ri->repr = CG_BOX;
        ri->last_use = INT_MAX;
    }
}

/* A cond/while's results die with the last use of any of its gets. */
static void fold_gets(cg_lower *L, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        const cg_info *ni = &L->info[n->id];
        if (!ni->live)
            continue;
        if (n->opcode == IR_GET) {
            cg_info *ti = &L->info[n->in[0]->id];
            if (ni->last_use > ti->last_use)
                ti->last_use = ni->last_use;
        }
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                fold_gets(L, n->region[r]);
    }
}

/* ------------------------------------------------------ representations */

static int new_slot(cg_lower *L) { return L->n_slots++; }

/* Final representations, ownership and slots. */
static void decide_graph(cg_lower *L, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        cg_info *ni = &L->info[n->id];
        if (!ni->live)
            continue;
        switch (ni->kind) {
        case CG_K_FUSED:
            if (!ni->materialize)
                ni->repr = CG_NONE;
            else if (ni->repr == CG_BUF && (!ni->shape.known ||
                     shape_numel(&ni->shape) * (int64_t)rt_dtype_size(n->type.dtype) >
                         BUF_MAX_BYTES))
                ni->repr = CG_BOX;
            break;
        case CG_K_MATMUL:
            if (ni->repr == CG_BUF &&
                shape_numel(&ni->shape) * (int64_t)rt_dtype_size(n->type.dtype) > BUF_MAX_BYTES)
                ni->repr = CG_BOX;
            break;
        default:
            break;
        }
        if (ni->kind == CG_K_REGION) {
            ni->owned = true;
            for (int i = 0; i < n->n_results; i++)
                if (ni->res_repr[i] == CG_BOX)
                    ni->res_slot[i] = new_slot(L);
            decide_graph(L, n->region[0]);
            decide_graph(L, n->region[1]);
        } else if (ni->repr == CG_BOX && ni->kind != CG_K_GET) {
            L->n_fallbacks += ni->kind == CG_K_FALLBACK;
            ni->owned = true;
            ni->slot = new_slot(L);
            ni->check_type = ni->kind == CG_K_FALLBACK && (ni->need_data || ni->need_nat);
        } else if (ni->repr == CG_BUF && ni->kind != CG_K_CONST) {
            /* a frame buffer, or a box when the frame is full */
            ni->owned = true;
            ni->slot = new_slot(L);
        }
    }
}

bool cg_plan(cg_lower *L)
{
    L->n_ids = L->fn->next_id;
    L->info = rt_xcalloc((size_t)(L->n_ids ? L->n_ids : 1), sizeof *L->info);
    L->max_inputs = 1;
    /* the plans the passes made for this version of fn (computed now if
     * the pipeline that ran did not plan) */
    L->fusion = pass_analyses_fusion(L->am);
    L->clusters = rt_xcalloc((size_t)L->fusion->n_clusters + 1, sizeof *L->clusters);
    L->memory = pass_analyses_memory(L->am);
    L->buf_ptr = rt_xcalloc((size_t)L->memory->n_buffers + 1, sizeof *L->buf_ptr);
    L->buf_full = rt_xcalloc((size_t)L->memory->n_buffers + 1, sizeof *L->buf_full);
    const ir_liveness *live = pass_analyses_liveness(L->am);
    for (int i = 0; i < L->n_ids && i < live->n; i++)
        L->info[i].live = live->live[i];
    cg_plan_qlayers(L);
    classify_graph(L, L->fn->body);
    uses_graph(L, L->fn->body);
    fold_gets(L, L->fn->body);
    decide_graph(L, L->fn->body);
    /* In a large function, loops stay out of line: LLVM's loop analyses
     * walk every dominating branch (one per runtime call), so loops in
     * a long function cost time quadratic in its length. */
    L->outline_loops = L->fusion->n_clusters > OUTLINE_LOOPS_ABOVE ||
                       L->n_fallbacks > OUTLINE_FALLBACKS_ABOVE;
    return !L->failed;
}

void cg_plan_free(cg_lower *L)
{
    if (L->info) {
        for (int i = 0; i < L->n_ids; i++) {
            free(L->info[i].res_repr);
            free(L->info[i].res_slot);
            free(L->info[i].res_val);
        }
    }
    free(L->info);
    for (int i = 0; L->fusion && i < L->fusion->n_clusters; i++)
        free(L->clusters[i].members);
    free(L->clusters);
    free(L->buf_ptr);
    free(L->buf_full);
    L->memory = NULL;
    L->buf_ptr = NULL;
    L->buf_full = NULL;
    L->info = NULL;
    L->clusters = NULL;
    L->fusion = NULL;
}
