/*
 * target.c - the registry of targets, and the cost counts they share.
 *
 * Adding a target: a folder under backend/ with its CMakeLists.txt and a
 * `const tgt_target tgt_NAME`, the folder in backend/CMakeLists.txt's
 * add_subdirectory, its objects in cmake/libraries.cmake, and here its
 * `extern` and one line in `builtin` below (docs/architecture.md walks
 * through it).
 */
#include "target.h"
#include "suggest.h"

#include <pthread.h>
#include <string.h>

extern const tgt_target tgt_reference; /* backend/reference/reference.c */
extern const tgt_target tgt_cpu;       /* backend/cpu/target_cpu.c */
extern const tgt_target tgt_tpu_model; /* backend/tpu/target_tpu.c */

static const tgt_target *const builtin[] = {
    &tgt_reference,
    &tgt_cpu,
    &tgt_tpu_model,
};
enum { N_BUILTIN = sizeof builtin / sizeof builtin[0], MAX_ADDED = 16 };

/* Targets registered at run time: appended once, never removed, so a
 * reader needs the lock only to see how many there are. */
static pthread_mutex_t added_lock = PTHREAD_MUTEX_INITIALIZER;
static const tgt_target *added[MAX_ADDED];
static int n_added;

const tgt_target *tgt_at(int i)
{
    if (i < 0)
        return NULL;
    if (i < N_BUILTIN)
        return builtin[i];
    pthread_mutex_lock(&added_lock);
    const tgt_target *t = i - N_BUILTIN < n_added ? added[i - N_BUILTIN] : NULL;
    pthread_mutex_unlock(&added_lock);
    return t;
}

const tgt_target *tgt_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; tgt_at(i); i++)
        if (strcmp(tgt_at(i)->name, name) == 0)
            return tgt_at(i);
    return NULL;
}

bool tgt_register(const tgt_target *t)
{
    if (!t || !t->name || !t->compile || !t->run || !t->free || tgt_find(t->name))
        return false;
    pthread_mutex_lock(&added_lock);
    bool ok = n_added < MAX_ADDED;
    if (ok)
        added[n_added++] = t;
    pthread_mutex_unlock(&added_lock);
    return ok;
}

const char *tgt_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; tgt_at(i) && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", tgt_at(i)->name);
    return buf;
}

const char *tgt_suggest(const char *name)
{
    sg_best b;
    sg_begin(&b, name);
    for (int i = 0; tgt_at(i); i++)
        sg_consider(&b, tgt_at(i)->name);
    return b.name;
}

/* ------------------------------------------------------------------ cost */

/* Elements of a type, unknown dims counted as 1. */
static double elements(const ir_type *t)
{
    double n = 1;
    for (int i = 0; i < t->shape.rank; i++)
        n *= t->shape.dims[i] > 0 ? (double)t->shape.dims[i] : 1;
    return n;
}

static double bytes_of(const ir_type *t)
{
    size_t size = t->dtype == RT_LIST ? 0 : rt_dtype_size(t->dtype);
    return elements(t) * (double)size;
}

/* Arithmetic of one node: 2mnk for a product, the input's elements for a
 * reduction (the op table's cost class), one per output element otherwise. */
static double flops_of(const ir_node *n)
{
    if (n->opcode == RT_OP_MATMUL && n->n_in == 2 && n->in[0]->type.shape.rank >= 1) {
        const ag_shape *a = &n->in[0]->type.shape;
        int64_t k = a->dims[a->rank - 1];
        return 2.0 * elements(&n->type) * (double)(k > 0 ? k : 1);
    }
    if (n->n_in > 0 && n->opcode < RT_OP_COUNT && rt_ops[n->opcode].cost == RT_COST_REDUCTION)
        return elements(&n->in[0]->type);
    return elements(&n->type);
}

static void count_graph(const ir_graph *g, const ir_liveness *live, tgt_cost *c)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!ir_is_live(live, n) || n->opcode == IR_GET)
            continue;
        c->ops++;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count_graph(n->region[r], live, c); /* one trip of a loop */
        if (n->opcode >= RT_OP_COUNT || n->opcode == RT_OP_CONST)
            continue;
        c->flops += flops_of(n);
        c->bytes += bytes_of(&n->type);
        for (int i = 0; i < n->n_in; i++)
            c->bytes += bytes_of(&n->in[i]->type);
    }
}

tgt_cost tgt_count_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = {0};
    count_graph(fn->body, pass_analyses_liveness(am), &c);
    return c;
}
