/*
 * bf16.c - bfloat16 conversion: f32 values and ops become bf16, as
 * TensorFlow's auto mixed precision and the TPU converter's
 * bfloat16_optimization do.
 *
 * Every op computing an f32 value, in scope and not in the filterlist,
 * computes a bf16 one instead; its f32 operands are cast to bf16 first
 * (once per value), and a user that stays f32 - a filterlisted op, an
 * op out of scope, a cond or while, a state update, a graph's result -
 * gets the value cast back to f32. The runtime's bf16 kernels already
 * accumulate in f32 where precision matters (matmul and conv2d multiply
 * bf16 values and sum in f32; reductions and softmax sum in f32 and round
 * once), so the converted graph has the accumulation the design asks for.
 *
 * Elementwise ops (arithmetic, comparisons, where, casts) stay f32 unless
 * options.elementwise is bf16: a chain of them widens its bf16 operands
 * (exactly) and rounds once, where a converted op or a bf16 result reads
 * it, as XLA does for bf16 and as the TPU's vector unit computes. The
 * casts are elementwise too, so a target's fusion puts them in the
 * chain's loop: it loads bf16, computes in f32 and rounds on the store,
 * half the bytes of f32 without a rounding per op. Rounding each op's
 * result (elementwise = bf16) is what eager bf16 code computes, slower.
 *
 * Each graph (the function's body, each region) is converted on its own:
 * its parameters and results keep their dtypes, so cond and while need no
 * change of their types. Parameters and results of the whole function
 * keep the user's dtypes unless options.io says otherwise.
 *
 * Nothing is cast twice: bf16 of cast(x: bf16 -> f32) is x itself (the
 * widening is exact), and each value has at most one cast per direction.
 * The safety check refuses a function that already computes in bf16
 * (rounding again would hide where precision is lost) unless
 * skip_safety_checks.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct converter {
    pass_ctx *ctx;
    const pass_bf16_options *o;
    pass_map to_bf16; /* f32 value -> its bf16 cast */
    pass_map to_f32;  /* converted value -> its f32 cast */
    bool changed;
} converter;

/* ------------------------------------------------------------- choosing */

static bool filtered(const pass_bf16_options *o, int op)
{
    const char *name = rt_ops[op].name;
    size_t n = strlen(name);
    for (const char *p = o->filterlist; *p;) {
        size_t len = strcspn(p, ", ");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len;
        p += strspn(p, ", ");
    }
    return false;
}

/* Whether n computes in bf16 after the conversion. */
static bool converts(const converter *C, const ir_node *n)
{
    if (n->opcode >= RT_OP_COUNT || n->type.dtype != AG_F32)
        return false;
    unsigned flags = rt_ops[n->opcode].flags;
    if (flags & (RT_F_EFFECT | RT_F_RANDOM) || pass_touches_list(n))
        return false; /* state and random streams keep their dtypes */
    if (n->opcode == RT_OP_CONST)
        return false; /* its users' casts fold into bf16 constants */
    if (n->opcode == RT_OP_DEQUANTIZE)
        return false; /* quantized arithmetic is f32 by definition (its scales too) */
    if (n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST)
        return false; /* a transfer moves a value as it is: the casts stay on the device */
    if (C->o->scope == PASS_BF16_SCOPE_DEVICE && n->device == IR_HOST)
        return false;
    if ((flags & RT_F_ELEMENTWISE) && C->o->elementwise == PASS_BF16_ELEMENTWISE_F32)
        return false; /* computes in f32 between bf16 values: one rounding per chain */
    return !filtered(C->o, n->opcode);
}

/* ---------------------------------------------------------------- casts */

static ir_node *new_cast(ir_graph *g, ir_node *before, ir_node *v, ag_dtype to)
{
    rt_attrs a = {.dtype = to};
    ir_type t = v->type;
    t.dtype = to;
    return pass_new_node(g, before, RT_OP_CAST, &a, 1, &v, &t, v);
}

static bool is_widening(const ir_node *v)
{
    return v->opcode == RT_OP_CAST && v->type.dtype == AG_F32 &&
           v->in[0]->type.dtype == AG_BF16;
}

/* The bf16 form of f32 value v, for a user at `before`. */
static ir_node *as_bf16(converter *C, ir_graph *g, ir_node *before, ir_node *v)
{
    if (v->type.dtype != AG_F32)
        return v;
    if (is_widening(v))
        return v->in[0]; /* bf16 -> f32 -> bf16 is the bf16 value */
    ir_node *c = pass_map_get(&C->to_bf16, v);
    if (!c) {
        c = new_cast(g, before, v, AG_BF16);
        pass_map_set(&C->to_bf16, v, c);
    }
    return c;
}

/* The f32 form of converted value v, for a user at `before` (NULL: the
 * end of the graph). */
static ir_node *as_f32(converter *C, ir_graph *g, ir_node *before, ir_node *v)
{
    ir_node *c = pass_map_get(&C->to_f32, v);
    if (!c) {
        c = new_cast(g, before, v, AG_F32);
        pass_map_set(&C->to_f32, v, c);
    }
    return c;
}

/* ------------------------------------------------------------ rewriting */

/* Whether this run made v bf16 (its users that stay f32 need a cast). */
static bool converted(const converter *C, const ir_node *v)
{
    return v->aux == (void *)C;
}

static void convert_node(converter *C, ir_graph *g, ir_node *n)
{
    ir_node **in = rt_xmalloc((size_t)(n->n_in + 1) * sizeof *in);
    for (int i = 0; i < n->n_in; i++)
        in[i] = converted(C, n->in[i]) ? n->in[i] : as_bf16(C, g, n, n->in[i]);
    pass_set_inputs(n, n->n_in, in);
    free(in);
    n->type.dtype = AG_BF16;
    if (rt_ops[n->opcode].attrs & RT_A_DTYPE)
        n->attrs.dtype = AG_BF16; /* cast, fill, eye: made in bf16 */
    n->aux = C;                   /* marks it converted during this run */
    C->changed = true;
}

/* A user that stays as it is reads converted operands back in f32. */
static void keep_node(converter *C, ir_graph *g, ir_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (converted(C, n->in[i])) {
            ir_node **in = rt_xmalloc((size_t)(n->n_in + 1) * sizeof *in);
            for (int j = 0; j < n->n_in; j++)
                in[j] = converted(C, n->in[j]) ? as_f32(C, g, n, n->in[j]) : n->in[j];
            pass_set_inputs(n, n->n_in, in);
            free(in);
            return;
        }
}

static void convert_results(converter *C, ir_graph *g, bool io)
{
    for (int i = 0; i < g->n_results; i++) {
        ir_node *r = g->results[i];
        if (io && r->type.dtype == AG_F32)
            g->results[i] = as_bf16(C, g, NULL, r);
        else if (!io && converted(C, r))
            g->results[i] = as_f32(C, g, NULL, r);
    }
}

static void convert_graph(converter *C, ir_graph *g)
{
    /* casts go in before the node being converted, so the walk never
     * meets one */
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r]) {
                convert_graph(C, n->region[r]);
                convert_results(C, n->region[r], false);
            }
        if (converts(C, n))
            convert_node(C, g, n);
        else
            keep_node(C, g, n);
    }
}

/* The function's own parameters, when options.io asks: the caller passes
 * bf16 tensors. */
static void convert_params(converter *C, ir_graph *body)
{
    for (int i = 0; i < body->n_params; i++)
        if (body->params[i]->type.dtype == AG_F32) {
            body->params[i]->type.dtype = AG_BF16;
            body->params[i]->aux = C;
            C->changed = true;
        }
}

/* -------------------------------------------------------- safety check */

static const ir_node *first_bf16(const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        if (g->params[i]->type.dtype == AG_BF16)
            return g->params[i];
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->opcode < RT_OP_COUNT && n->type.dtype == AG_BF16)
            return n;
        for (int r = 0; r < 2; r++) {
            const ir_node *in = n->region[r] ? first_bf16(n->region[r]) : NULL;
            if (in)
                return in;
        }
    }
    return NULL;
}

static void clear_marks(ir_graph *g, const converter *C)
{
    for (int i = 0; i < g->n_params; i++)
        if (g->params[i]->aux == (void *)C)
            g->params[i]->aux = NULL;
    for (ir_node *n = g->first; n; n = n->next) {
        if (n->aux == (void *)C)
            n->aux = NULL;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                clear_marks(n->region[r], C);
    }
}

bool pass_bf16(ir_function *fn, pass_ctx *ctx)
{
    const pass_bf16_options *o = &ctx->opt.bf16;
    const ir_node *already = first_bf16(fn->body);
    if (already && !o->skip_safety_checks) {
        pass_diag(ctx, already, "the function already computes in bf16, so converting it "
                                "would round values that were rounded on purpose; convert "
                                "it anyway with skip_safety_checks");
        return false;
    }
    converter C = {.ctx = ctx, .o = o};
    pass_map_init(&C.to_bf16, fn);
    pass_map_init(&C.to_f32, fn);
    if (o->io)
        convert_params(&C, fn->body);
    convert_graph(&C, fn->body);
    convert_results(&C, fn->body, o->io);
    clear_marks(fn->body, &C);
    pass_map_free(&C.to_bf16);
    pass_map_free(&C.to_f32);
    return C.changed;
}
