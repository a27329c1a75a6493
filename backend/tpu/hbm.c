/*
 * hbm.c - HBM buffers for a TPU program: every value the device keeps gets
 * a place, and a place is reused once nothing reads its value any more.
 *
 * Lifetimes are positions in the function's top-level program order: a
 * value lives from the instruction that makes it to the last one that
 * reads it. A node inside a cond or while region counts as its region
 * instruction: the regions run there (a loop's many times), so their
 * values are all live for the whole of it and die with it. The function's
 * parameters and constants are born at the start (they arrive before the
 * first instruction, or are resident with the program), its results live
 * to the end. A reshape shares its input's buffer, so its readers keep
 * the input alive. A value of a fused loop that only the loop reads lives
 * in vregs and has no buffer; a host value has none either, nor a value
 * that stays in VMEM (vmem.c).
 *
 * Placement is a linear scan in birth order, first fit in address order
 * among the buffers live at that moment, each buffer aligned to 4 KiB.
 * p->hbm_bytes is the high-water mark: the HBM the program needs.
 */
#include "program.h"

#include <stdlib.h>
#include <string.h>

enum { HBM_ALIGN = 4096 };

typedef struct lifetime {
    const ir_node *n;
    int64_t birth, death; /* top-level positions, both inclusive */
    int64_t size;         /* padded and aligned */
    int64_t addr;
} lifetime;

typedef struct allocator {
    tpu_program *p;
    const ir_liveness *live;
    int64_t *pos;   /* by node id: its top-level position */
    int64_t *death; /* by node id: the last position that reads it */
    int64_t *loop_pos; /* by fusion loop: its instruction's position, or 0 */
    int64_t end;    /* after the last instruction: results live to here */
    lifetime *v;
    int n;
} allocator;

static bool is_alias(const ir_node *n)
{
    return n->opcode < RT_OP_COUNT && (rt_ops[n->opcode].flags & RT_F_ALIAS) &&
           n->opcode != RT_OP_TO_DEVICE;
}

const ir_node *tpu_buffer_of(const ir_node *v)
{
    while (is_alias(v))
        v = v->in[0];
    return v;
}

/* ------------------------------------------------------------ lifetimes */

/* Every node of g (regions included) at position `at`, or, for the body
 * (at < 0), each top-level node at its own, except that the members of a
 * fused loop are one instruction: they all count at its first member's
 * position (the loop reads its inputs while it writes its outputs). */
static void number(allocator *A, const ir_graph *g, int64_t at)
{
    int64_t i = 1;
    for (int k = 0; k < g->n_params; k++)
        A->pos[g->params[k]->id] = at < 0 ? 0 : at;
    for (const ir_node *n = g->first; n; n = n->next, i++) {
        int64_t here = at < 0 ? i : at;
        const tpu_inst *x = &A->p->inst[n->id];
        if (at < 0 && x->kind == TPU_VPU_LOOP && x->loop >= 0) {
            if (!A->loop_pos[x->loop])
                A->loop_pos[x->loop] = here;
            here = A->loop_pos[x->loop];
        }
        A->pos[n->id] = here;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                number(A, n->region[r], here);
    }
    if (at < 0)
        A->end = i;
}

static void read_at(allocator *A, const ir_node *v, int64_t when)
{
    int64_t *d = &A->death[tpu_buffer_of(v)->id];
    if (*d < when)
        *d = when;
}

static void note_reads(allocator *A, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int i = 0; i < n->n_in; i++)
            read_at(A, n->in[i], A->pos[n->id]);
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                note_reads(A, n->region[r]);
    }
    for (int i = 0; i < g->n_results; i++) /* a region's results: read by its instruction */
        read_at(A, g->results[i], g->parent ? A->pos[g->parent->id] : A->end);
}

/* ---------------------------------------------------- what needs a place */

static bool body_param_on_device(const tpu_program *p, const ir_node *v)
{
    const ir_graph *body = p->fn->body;
    for (int i = 0; i < body->n_params; i++)
        if (body->params[i] == v)
            return p->params[i].cycles > 0; /* only host ops read it: it stays there */
    return true;
}

static bool needs_buffer(const allocator *A, const ir_node *n)
{
    const tpu_inst *x = &A->p->inst[n->id];
    if (x->padded_bytes <= 0 || is_alias(n) || x->vmem)
        return false; /* a view's place is its input's; VMEM keeps what vmem.c chose */
    if (n->opcode == IR_PARAM)
        return n->graph->parent || body_param_on_device(A->p, n);
    if (!ir_is_live(A->live, n))
        return false;
    if (x->kind == TPU_VPU_LOOP && x->loop >= 0)
        return x->stored;
    return true;
}

static void collect(allocator *A, const ir_graph *g)
{
    for (int k = 0; k < g->n_params; k++)
        if (needs_buffer(A, g->params[k]))
            A->v[A->n++] = (lifetime){.n = g->params[k]};
    for (const ir_node *n = g->first; n; n = n->next) {
        if (needs_buffer(A, n))
            A->v[A->n++] = (lifetime){.n = n};
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                collect(A, n->region[r]);
    }
}

static void span(allocator *A, lifetime *l)
{
    const ir_node *n = l->n;
    bool resident = n->opcode == RT_OP_CONST && !n->graph->parent;
    l->birth = resident ? 0 : A->pos[n->id];
    l->death = resident ? A->end : A->death[n->id];
    if (l->death < l->birth)
        l->death = l->birth; /* made and never read: it still needs a place to be written */
    int64_t b = A->p->inst[n->id].padded_bytes;
    l->size = (b + HBM_ALIGN - 1) / HBM_ALIGN * HBM_ALIGN;
}

/* ------------------------------------------------------------- placing */

static int by_birth(const void *a, const void *b)
{
    const lifetime *x = a, *y = b;
    if (x->birth != y->birth)
        return x->birth < y->birth ? -1 : 1;
    return x->n->id < y->n->id ? -1 : x->n->id > y->n->id;
}

/* First fit among `live` (sorted by address, n_live of them). */
static int64_t first_fit(lifetime *const *live, int n_live, int64_t size)
{
    int64_t at = 0;
    for (int i = 0; i < n_live; i++) {
        if (live[i]->addr - at >= size)
            return at;
        if (live[i]->addr + live[i]->size > at)
            at = live[i]->addr + live[i]->size;
    }
    return at;
}

/* Places every lifetime; returns the high-water mark. */
static int64_t place_all(lifetime *v, int n)
{
    lifetime **live = rt_xcalloc((size_t)n + 1, sizeof *live);
    int n_live = 0;
    int64_t peak = 0;
    for (int i = 0; i < n; i++) {
        int kept = 0; /* drop what died before this birth */
        for (int j = 0; j < n_live; j++)
            if (live[j]->death >= v[i].birth)
                live[kept++] = live[j];
        n_live = kept;
        v[i].addr = first_fit(live, n_live, v[i].size);
        int at = n_live;
        while (at > 0 && live[at - 1]->addr > v[i].addr)
            at--;
        memmove(live + at + 1, live + at, (size_t)(n_live - at) * sizeof *live);
        live[at] = &v[i];
        n_live++;
        if (v[i].addr + v[i].size > peak)
            peak = v[i].addr + v[i].size;
    }
    free(live);
    return peak;
}

/* ------------------------------------------------------- too little HBM */

static void put_size(char *buf, size_t len, int64_t bytes)
{
    if (bytes >= 1LL << 30)
        snprintf(buf, len, "%.2f GiB", (double)bytes / (1 << 30));
    else if (bytes >= 1 << 20)
        snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
    else
        snprintf(buf, len, "%.1f KiB", (double)bytes / (1 << 10));
}

static int by_size_desc(const void *a, const void *b)
{
    const lifetime *x = *(lifetime *const *)a, *y = *(lifetime *const *)b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->n->id - y->n->id;
}

/* Names the largest tensors live where the peak is reached (at most 4). */
static void name_live_tensors(const lifetime *v, int n, const lifetime *top, char *buf,
                              size_t len)
{
    const lifetime **at = rt_xcalloc((size_t)n + 1, sizeof *at);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i].birth <= top->birth && v[i].death >= top->birth)
            at[k++] = &v[i];
    qsort(at, (size_t)k, sizeof *at, by_size_desc);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k && i < 4 && used < len; i++) {
        const ir_node *t = at[i]->n;
        char type[128], size[32];
        ir_type_str(&t->type, type, sizeof type);
        put_size(size, sizeof size, at[i]->size);
        used += (size_t)snprintf(buf + used, len - used, "%s%%%d (%s %s, %s)", i ? ", " : "",
                                 t->id, t->opcode == IR_PARAM ? "parameter"
                                        : t->opcode < RT_OP_COUNT ? rt_op_listed_name(t->opcode)
                                                                  : ir_opcode_name(t->opcode),
                                 type, size);
    }
    if (k > 4 && used < len)
        snprintf(buf + used, len - used, " and %d more", k - 4);
    free(at);
}

static bool report_capacity(const tpu_program *p, const lifetime *v, int n, int64_t peak,
                            tgt_diag *diag)
{
    const lifetime *top = &v[0]; /* where the peak is first reached */
    for (int i = n - 1; i >= 0; i--)
        if (v[i].addr + v[i].size == peak)
            top = &v[i];
    char need[32], have[32], names[700];
    put_size(need, sizeof need, peak);
    put_size(have, sizeof have, p->spec.hbm.capacity_bytes);
    name_live_tensors(v, n, top, names, sizeof names);
    const ir_node *at = top->n->opcode == IR_PARAM ? p->fn->body->first : top->n;
    if (at)
        diag->loc = at->loc;
    snprintf(diag->msg, sizeof diag->msg,
             "the program needs %s of HBM at its peak, and the device has %s; live there: %s",
             need, have, names);
    return false;
}

/* ----------------------------------------------------------------- entry */

/* A reshape's place is its input's (which may be a reshape's). */
static void share_views(tpu_program *p, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (is_alias(n) && p->inst[n->id].padded_bytes > 0)
            p->inst[n->id].hbm_addr = p->inst[tpu_buffer_of(n)->id].hbm_addr;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                share_views(p, n->region[r]);
    }
}

bool tpu_allocate_hbm(tpu_program *p, const ir_liveness *live, tgt_diag *diag)
{
    allocator A = {.p = p, .live = live};
    A.pos = rt_xcalloc((size_t)p->n_ids, sizeof *A.pos);
    A.death = rt_xcalloc((size_t)p->n_ids, sizeof *A.death);
    A.loop_pos = rt_xcalloc((size_t)p->n_ids, sizeof *A.loop_pos);
    A.v = rt_xcalloc((size_t)p->n_ids + 1, sizeof *A.v);
    number(&A, p->fn->body, -1);
    note_reads(&A, p->fn->body);
    collect(&A, p->fn->body);
    for (int i = 0; i < A.n; i++)
        span(&A, &A.v[i]);
    qsort(A.v, (size_t)A.n, sizeof *A.v, by_birth);
    p->hbm_bytes = place_all(A.v, A.n);
    for (int id = 0; id < p->n_ids; id++)
        p->inst[id].hbm_addr = -1;
    for (int i = 0; i < A.n; i++)
        p->inst[A.v[i].n->id].hbm_addr = A.v[i].addr;
    share_views(p, p->fn->body);
    bool ok = p->hbm_bytes <= p->spec.hbm.capacity_bytes ||
              report_capacity(p, A.v, A.n, p->hbm_bytes, diag);
    free(A.pos);
    free(A.death);
    free(A.loop_pos);
    free(A.v);
    return ok;
}
