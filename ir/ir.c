/* ir.c - arena, graph construction and queries, device names. */
#include "ir.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ arena */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

struct ir_arena {
    arena_block *head;
};

enum { BLOCK_SIZE = 64 * 1024 };

ir_arena *ir_arena_new(void) { return rt_xcalloc(1, sizeof(ir_arena)); }

void ir_arena_free(ir_arena *a)
{
    if (!a)
        return;
    for (arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

void *ir_alloc(ir_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    arena_block *b = a->head;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
        b = rt_xmalloc(sizeof *b + cap);
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *ir_strdup(ir_arena *a, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    return memcpy(ir_alloc(a, n), s, n);
}

/* ---------------------------------------------------------------- opcodes */

static const char *const structural_names[] = {
    [IR_PARAM - RT_OP_COUNT] = "param",
    [IR_COND - RT_OP_COUNT] = "cond",
    [IR_WHILE - RT_OP_COUNT] = "while",
    [IR_GET - RT_OP_COUNT] = "get",
};

const char *ir_opcode_name(int opcode)
{
    if (opcode >= 0 && opcode < RT_OP_COUNT)
        return rt_ops[opcode].name;
    if (opcode >= RT_OP_COUNT && opcode < IR_OPCODE_COUNT)
        return structural_names[opcode - RT_OP_COUNT];
    return "<invalid>";
}

/* The structural nodes as the user's C has them. */
static const char *const structural_public[] = {
    [IR_PARAM - RT_OP_COUNT] = "a parameter",
    [IR_COND - RT_OP_COUNT] = "a staged if",
    [IR_WHILE - RT_OP_COUNT] = "a staged loop",
    [IR_GET - RT_OP_COUNT] = "a result of a staged if or loop",
};

const char *ir_opcode_public_name(int opcode)
{
    if (opcode >= 0 && opcode < RT_OP_COUNT)
        return rt_op_public_name(opcode);
    if (opcode >= RT_OP_COUNT && opcode < IR_OPCODE_COUNT)
        return structural_public[opcode - RT_OP_COUNT];
    return "<invalid>";
}

bool ir_opcode_from_name(const char *name, int *out)
{
    for (int i = 0; i < IR_OPCODE_COUNT; i++) {
        if (strcmp(ir_opcode_name(i), name) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ types */

bool ir_value_has_type(const ir_type *t, const rt_value *v)
{
    if (v->kind != RT_CONCRETE || v->dtype != t->dtype)
        return false;
    if (t->dtype == RT_LIST)
        return v->elem_dtype == t->elem_dtype;
    if (t->shape.rank < 0)
        return true;
    if (v->shape.rank != t->shape.rank)
        return false;
    for (int d = 0; d < t->shape.rank; d++)
        if (t->shape.dims[d] >= 0 && t->shape.dims[d] != v->shape.dims[d])
            return false;
    return true;
}

bool ir_type_equal(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->shape.rank != b->shape.rank)
        return false;
    if (a->dtype == RT_LIST && a->elem_dtype != b->elem_dtype)
        return false;
    for (int i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] != b->shape.dims[i])
            return false;
    return true;
}

char *ir_type_str(const ir_type *t, char *buf, size_t n)
{
    char shape[160];
    if (t->dtype == RT_LIST) {
        if (t->shape.rank < 0)
            snprintf(buf, n, "list<%s>", ag_dtype_name(t->elem_dtype));
        else
            snprintf(buf, n, "list<%s>%s", ag_dtype_name(t->elem_dtype),
                     rt_shape_str(&t->shape, shape, sizeof shape));
        return buf;
    }
    snprintf(buf, n, "%s%s", ag_dtype_name(t->dtype),
             rt_shape_str(&t->shape, shape, sizeof shape));
    return buf;
}

/* --------------------------------------------------------------- building */

ir_function *ir_function_new(const char *name)
{
    ir_arena *a = ir_arena_new();
    ir_function *fn = ir_alloc(a, sizeof *fn);
    fn->arena = a;
    fn->name = ir_strdup(a, name);
    fn->body = ir_graph_new(fn);
    return fn;
}

void ir_function_free(ir_function *fn)
{
    if (!fn)
        return;
    free(fn->vars);
    ir_arena_free(fn->arena);
}

ir_graph *ir_graph_new(ir_function *fn)
{
    ir_graph *g = ir_alloc(fn->arena, sizeof *g);
    g->fn = fn;
    return g;
}

int ir_function_var_index(ir_function *fn, rt_variable *v)
{
    for (int i = 0; i < fn->n_vars; i++)
        if (fn->vars[i] == v)
            return i;
    if (fn->n_vars == fn->cap_vars) {
        fn->cap_vars = fn->cap_vars ? fn->cap_vars * 2 : 4;
        fn->vars = rt_xrealloc(fn->vars, (size_t)fn->cap_vars * sizeof *fn->vars);
    }
    fn->vars[fn->n_vars] = v;
    return fn->n_vars++;
}

/* ------------------------------------------------------------- devices */

/* Device names, appended once and never removed: a reader locks only to
 * see how many there are (the pipeline compiles on several threads). */
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static char *device_names[IR_MAX_DEVICES]; /* [0], the host, has none */
static int n_devices = 1;

ir_device ir_device_named(const char *name)
{
    if (!name || !*name)
        return IR_HOST;
    pthread_mutex_lock(&devices_lock);
    int d = 1;
    while (d < n_devices && strcmp(device_names[d], name) != 0)
        d++;
    if (d == n_devices && n_devices < IR_MAX_DEVICES)
        device_names[n_devices++] = rt_xstrdup(name);
    else if (d == n_devices)
        d = -1;
    pthread_mutex_unlock(&devices_lock);
    return d;
}

const char *ir_device_name(ir_device d)
{
    pthread_mutex_lock(&devices_lock);
    const char *name = d > 0 && d < n_devices ? device_names[d] : NULL;
    pthread_mutex_unlock(&devices_lock);
    return name;
}

/* --------------------------------------------------------------- nodes */

static ir_node *node_new(ir_graph *g, int opcode, ag_loc loc)
{
    ir_function *fn = g->fn;
    ir_node *n = ir_alloc(fn->arena, sizeof *n);
    n->opcode = opcode;
    n->id = fn->next_id++;
    n->graph = g;
    n->loc.file = ir_strdup(fn->arena, loc.file);
    n->loc.line = loc.line;
    n->device = IR_HOST;
    n->scope = fn->scope;
    return n;
}

bool ir_scope_within(const char *s, const char *outer)
{
    if (!s || !outer)
        return false;
    size_t n = strlen(outer);
    return strncmp(s, outer, n) == 0 && (s[n] == '\0' || s[n] == '/');
}

ir_node *ir_add_param(ir_graph *g, const ir_type *t)
{
    ir_node *p = node_new(g, IR_PARAM, (ag_loc){0});
    p->type = *t;
    p->index = g->n_params;
    ir_node **params = ir_alloc(g->fn->arena, (size_t)(g->n_params + 1) * sizeof *params);
    if (g->n_params)
        memcpy(params, g->params, (size_t)g->n_params * sizeof *params);
    params[g->n_params++] = p;
    g->params = params;
    return p;
}

void ir_set_results(ir_graph *g, int n, ir_node *const *values)
{
    g->n_results = n;
    g->results = ir_alloc(g->fn->arena, (size_t)(n ? n : 1) * sizeof *g->results);
    if (n)
        memcpy(g->results, values, (size_t)n * sizeof *values);
}

static void link_node(ir_graph *g, ir_node *n)
{
    n->prev = g->last;
    if (g->last)
        g->last->next = n;
    else
        g->first = n;
    g->last = n;
    if (n->effect) {
        n->ctrl = g->last_effect;
        g->last_effect = n;
    }
}

static void set_inputs(ir_graph *g, ir_node *n, int n_in, ir_node *const *in)
{
    n->n_in = n_in;
    n->in = ir_alloc(g->fn->arena, (size_t)(n_in ? n_in : 1) * sizeof *n->in);
    if (n_in)
        memcpy(n->in, in, (size_t)n_in * sizeof *in);
}

rt_value *ir_arena_value(ir_function *fn, const rt_value *v)
{
    rt_value *copy = ir_alloc(fn->arena, sizeof *copy);
    *copy = *v;
    copy->storage = NULL;
    copy->list = NULL;
    size_t bytes = rt_value_bytes(v);
    copy->data = ir_alloc(fn->arena, bytes ? bytes : 1);
    if (bytes)
        memcpy(copy->data, v->data, bytes);
    return copy;
}

/* Copies the out-of-line parts of attrs (strings, literal) into the arena. */
static void copy_attrs(ir_function *fn, rt_attrs *dst, const rt_attrs *src)
{
    *dst = *src;
    dst->text = ir_strdup(fn->arena, src->text);
    if (src->literal)
        dst->literal = ir_arena_value(fn, src->literal);
}

static void rebind_graph(ir_graph *g, rt_variable *const *from, rt_variable *const *to, int n)
{
    for (ir_node *node = g->first; node; node = node->next) {
        for (int i = 0; node->attrs.ref && i < n; i++)
            if (node->attrs.ref == from[i]) {
                node->attrs.ref = to[i];
                break;
            }
        for (int r = 0; r < 2; r++)
            if (node->region[r])
                rebind_graph(node->region[r], from, to, n);
    }
}

static void rechain_graph(ir_graph *g)
{
    ir_node *last = NULL;
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                rechain_graph(n->region[r]);
        if (n->opcode < RT_OP_COUNT)
            n->effect = (rt_ops[n->opcode].flags & RT_F_EFFECT) != 0;
        else if (n->opcode == IR_COND || n->opcode == IR_WHILE)
            n->effect = ir_graph_has_effects(n->region[0]) || ir_graph_has_effects(n->region[1]);
        n->ctrl = n->effect ? last : NULL;
        if (n->effect)
            last = n;
    }
    g->last_effect = last;
}

void ir_rechain_effects(ir_function *fn) { rechain_graph(fn->body); }

void ir_function_rebind_vars(ir_function *fn, rt_variable *const *vars)
{
    rebind_graph(fn->body, fn->vars, vars, fn->n_vars);
    for (int i = 0; i < fn->n_vars; i++)
        fn->vars[i] = vars[i];
}

ir_node *ir_append(ir_graph *g, int opcode, const rt_attrs *attrs, int n_in,
                   ir_node *const *in, const ir_type *type, ag_loc loc)
{
    ir_node *n = node_new(g, opcode, loc);
    set_inputs(g, n, n_in, in);
    if (attrs)
        copy_attrs(g->fn, &n->attrs, attrs);
    if (type)
        n->type = *type;
    n->effect = opcode < RT_OP_COUNT && (rt_ops[opcode].flags & RT_F_EFFECT);
    if (n->attrs.ref)
        ir_function_var_index(g->fn, n->attrs.ref);
    link_node(g, n);
    return n;
}

ir_node *ir_append_const(ir_graph *g, const rt_value *v, ag_loc loc)
{
    rt_attrs a = {.literal = v};
    ir_type t = {.dtype = v->dtype, .shape = v->shape};
    return ir_append(g, RT_OP_CONST, &a, 0, NULL, &t, loc);
}

ir_node *ir_append_region_op(ir_graph *g, int opcode, int n_in, ir_node *const *in,
                             ir_graph *r0, ir_graph *r1, int n_results,
                             const ir_type *results, ag_loc loc)
{
    ir_node *n = node_new(g, opcode, loc);
    set_inputs(g, n, n_in, in);
    n->region[0] = r0;
    n->region[1] = r1;
    r0->parent = n;
    r1->parent = n;
    n->n_results = n_results;
    n->results = ir_alloc(g->fn->arena, (size_t)(n_results ? n_results : 1) * sizeof(ir_type));
    if (n_results)
        memcpy(n->results, results, (size_t)n_results * sizeof *results);
    n->effect = ir_graph_has_effects(r0) || ir_graph_has_effects(r1);
    link_node(g, n);
    return n;
}

ir_node *ir_append_get(ir_graph *g, ir_node *tuple, int index, ag_loc loc)
{
    ir_node *n = ir_append(g, IR_GET, NULL, 1, &tuple, &tuple->results[index], loc);
    n->index = index;
    return n;
}

void ir_remove(ir_node *n)
{
    ir_graph *g = n->graph;
    if (n->prev)
        n->prev->next = n->next;
    else
        g->first = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        g->last = n->prev;
    n->prev = n->next = NULL;
}

bool ir_graph_has_effects(const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next)
        if (n->effect)
            return true;
    return false;
}

static int count_nodes(const ir_graph *g)
{
    int count = 0;
    for (const ir_node *n = g->first; n; n = n->next) {
        count++;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count += count_nodes(n->region[r]);
    }
    return count;
}

int ir_function_num_nodes(const ir_function *fn) { return count_nodes(fn->body); }
