/*
 * quantize.c - the int8 rewrite of post-training quantization (pass.h):
 * each product the converter planned (converter/quantize.c: its int8
 * weight, its scales) is replaced by the int8 ops of the method
 * (docs/quantization.md, "The arithmetic"):
 *
 *   static range   xq = quantize(x, s_in, z_in)      (or the int8 of the
 *                  chain before, when x is its dequantized result)
 *                  acc = qmatmul(xq, Wq, z_in) [+ int32 bias]
 *                  yq = requantize(acc, s_in s_w / s_out, z_out) {lo, hi}
 *                  y = dequantize(yq, s_out, z_out)   for float readers
 *   dynamic range  s = max(reduce_max(abs(x)), FLT_MIN) / 127, per row of a
 *                  matmul's x (per tensor for conv2d), at every call
 *                  y = dequantize(qmatmul(quantize(x, s, 0), Wq, 0), s s_w, 0)
 *   weights only   the weight read becomes dequantize(Wq, s_w, 0)
 *
 * A static-range chain ends at its bias add or relu, which the rewrite
 * replaces too (relu folds into requantize's clamp: lo = z_out); the
 * other methods replace the product alone, and the float bias and relu
 * stay. Chains are rewritten in graph order, so a chain that reads the
 * one before it finds the dequantize made for that one and takes its
 * int8 directly: quantize(dequantize(q, s, z), s, z) is q exactly, and
 * both sides have the same scale because calibration observed one node.
 */
#include "pass_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a rewrite of one function shares. */
typedef struct made made;
typedef struct rewriter {
    ir_function *fn;
    made *made; /* static range: the chains rewritten so far */
    int n_made;
    char *err; /* the first refusal of an op's rules, if any */
    size_t errlen;
    bool failed;
} rewriter;

/* A new node in g before `before`, its type from the op's rules on its
 * operands' types. The planner chose only products whose int8 forms the
 * rules accept; should one refuse, the rewrite fails with its message
 * (the node is still made, typed f32[], so the rest can go on). */
static ir_node *op_node(rewriter *R, ir_graph *g, ir_node *before, int op, const rt_attrs *a,
                        int n_in, ir_node *const *in, const ir_node *like)
{
    rt_value vals[4], *ptrs[4];
    for (int i = 0; i < n_in; i++) {
        vals[i] = pass_is_const(in[i])
                      ? pass_const_view(in[i])
                      : (rt_value){.kind = RT_SYMBOLIC, .dtype = in[i]->type.dtype,
                                   .elem_dtype = in[i]->type.dtype, .shape = in[i]->type.shape,
                                   .numel = rt_shape_numel(&in[i]->type.shape)};
        ptrs[i] = &vals[i];
    }
    static const rt_attrs none;
    ir_type t = {0};
    rt_err e = {{0}};
    if (!rt_infer((rt_op)op, a ? a : &none, ptrs, n_in, &t.dtype, &t.shape, &e)) {
        if (!R->failed)
            snprintf(R->err, R->errlen, "%s:%d: quantization: %s cannot take this %s's "
                     "operands: %s", like->loc.file ? like->loc.file : "<unknown>",
                     like->loc.line, rt_ops[op].name, rt_op_listed_name(like->opcode), e.msg);
        R->failed = true;
        t = (ir_type){.dtype = AG_F32, .shape = {.rank = 0}};
    }
    t.elem_dtype = t.dtype;
    return pass_new_node(g, before, op, a, n_in, in, &t, like);
}

/* A constant of dtype dt and shape (rank 0 or 1 of n) holding vals
 * converted, before `before`. */
static ir_node *const_node(ir_graph *g, ir_node *before, ag_dtype dt, int64_t n, bool vector,
                           const double *vals, const ir_node *like)
{
    ag_shape s = {.rank = vector ? 1 : 0, .dims = {n}};
    rt_value *v = rt_value_new(dt, &s);
    for (int64_t i = 0; i < n; i++) {
        if (dt == AG_F32)
            ((float *)v->data)[i] = (float)vals[i];
        else
            ((int32_t *)v->data)[i] = (int32_t)vals[i];
    }
    ir_node *c = pass_new_const(g, before, v, like);
    rt_value_free(v);
    return c;
}

static ir_node *scalar_node(ir_graph *g, ir_node *before, ag_dtype dt, double x,
                            const ir_node *like)
{
    return const_node(g, before, dt, 1, false, &x, like);
}

/* The product's int8 weight, in its own shape. */
static ir_node *weight_node(ir_graph *g, ir_node *before, const pass_qproduct *q)
{
    const ir_node *w = q->product->in[1];
    rt_value *v = rt_value_new(AG_I8, &w->type.shape);
    memcpy(v->data, q->wq, (size_t)v->numel);
    ir_node *c = pass_new_const(g, before, v, w);
    rt_value_free(v);
    return c;
}

/* f(scale c) for each of the weight's scales: a scalar for one scale, a
 * vector along the output channels otherwise. */
static ir_node *per_scale_node(ir_graph *g, ir_node *before, ag_dtype dt, const pass_qproduct *q,
                               double (*f)(const pass_qproduct *, int64_t), const ir_node *like)
{
    double *vals = rt_xcalloc((size_t)q->n_scales, sizeof *vals);
    for (int64_t c = 0; c < q->n_scales; c++)
        vals[c] = f(q, c);
    ir_node *n = const_node(g, before, dt, q->n_scales, q->n_scales > 1, vals, like);
    free(vals);
    return n;
}

static double weight_scale(const pass_qproduct *q, int64_t c) { return q->w_scales[c]; }

static double requantize_multiplier(const pass_qproduct *q, int64_t c)
{
    return (double)q->in_scale * q->w_scales[c] / q->out_scale;
}

/* The int32 product of the int8 operands: qmatmul, or qconv2d with the
 * conv's geometry. */
static ir_node *int_product(rewriter *R, ir_graph *g, const pass_qproduct *q, ir_node *xq, ir_node *wq,
                            ir_node *zero)
{
    ir_node *p = q->product;
    ir_node *in[] = {xq, wq, zero};
    bool conv = p->opcode == RT_OP_CONV2D;
    rt_attrs a = {0};
    if (conv) {
        a.stride_h = p->attrs.stride_h;
        a.stride_w = p->attrs.stride_w;
        a.padding = p->attrs.padding;
    }
    return op_node(R, g, p, conv ? RT_OP_QCONV2D : RT_OP_QMATMUL, &a, 3, in, p);
}

/* --------------------------------------------------------- static range */

/* What a rewritten static-range chain left for the chains after it: the
 * dequantize standing for its end, and the int8 it dequantizes. */
struct made {
    ir_node *dequantized, *q;
    float scale;
    int32_t zero;
};

static ir_node *int8_input(rewriter *R, const pass_qproduct *q)
{
    ir_node *x = q->product->in[0], *p = q->product;
    for (int i = 0; i < R->n_made; i++)
        if (R->made[i].dequantized == x && R->made[i].scale == q->in_scale &&
            R->made[i].zero == q->in_zero)
            return R->made[i].q;
    ir_node *in[] = {x, scalar_node(p->graph, p, AG_F32, q->in_scale, p),
                     scalar_node(p->graph, p, AG_I32, q->in_zero, p)};
    return op_node(R, p->graph, p, RT_OP_QUANTIZE, NULL, 3, in, p);
}

static double bias_value(const pass_qproduct *q, const rt_value *b, int64_t i)
{
    double s = (double)q->in_scale * q->w_scales[q->n_scales > 1 ? i % q->n_scales : 0];
    double x = round(((const float *)b->data)[b->numel > 1 ? i : 0] / s);
    return fmin(fmax(x, -2147483647.0), 2147483647.0);
}

/* The bias as int32 at scale s_in s_w (zero point 0): one value per
 * output channel, or the bias's own single value. */
static ir_node *int_bias(ir_graph *g, const pass_qproduct *q, const rt_value *b)
{
    int64_t n = b->numel > 1 ? b->numel : q->n_scales;
    double *vals = rt_xcalloc((size_t)n, sizeof *vals);
    for (int64_t i = 0; i < n; i++)
        vals[i] = bias_value(q, b, i);
    ir_node *c = const_node(g, q->product, AG_I32, n, n > 1, vals, q->bias);
    free(vals);
    return c;
}

static void remember(rewriter *R, ir_node *dequantized, ir_node *yq, const pass_qproduct *q)
{
    R->made = rt_xrealloc(R->made, (size_t)(R->n_made + 1) * sizeof *R->made);
    R->made[R->n_made++] = (made){dequantized, yq, q->out_scale, q->out_zero};
}

static ir_node *static_range(rewriter *R, pass_qproduct *q, const rt_value *bias)
{
    ir_node *p = q->product, *end = q->end;
    ir_graph *g = p->graph;
    ir_node *xq = int8_input(R, q);
    ir_node *acc = int_product(R, g, q, xq, weight_node(g, p, q),
                               scalar_node(g, p, AG_I32, q->in_zero, p));
    if (q->bias) {
        ir_node *in[] = {acc, int_bias(g, q, bias)};
        acc = op_node(R, g, p, RT_OP_ADD, NULL, 2, in, q->bias);
    }
    rt_attrs range = {.lo = q->relu ? q->out_zero : -128, .hi = 127};
    ir_node *rq[] = {acc, per_scale_node(g, p, AG_F32, q, requantize_multiplier, end),
                     scalar_node(g, p, AG_I32, q->out_zero, end)};
    ir_node *yq = op_node(R, g, p, RT_OP_REQUANTIZE, &range, 3, rq, end);
    ir_node *dq[] = {yq, scalar_node(g, p, AG_F32, q->out_scale, end),
                     scalar_node(g, p, AG_I32, q->out_zero, end)};
    ir_node *y = op_node(R, g, p, RT_OP_DEQUANTIZE, NULL, 3, dq, end);
    remember(R, y, yq, q);
    q->replaced_id = yq->id; /* y goes when the next chain takes yq */
    return y;
}

/* -------------------------------------------------------- dynamic range */

static ir_node *dynamic_range(rewriter *R, const pass_qproduct *q)
{
    ir_node *p = q->product, *x = p->in[0];
    ir_graph *g = p->graph;
    /* a matrix's scale is per row, so that a batch's rows (requests, when
     * the function is batched) never change each other's results */
    bool rows = x->type.shape.rank == 2;
    rt_attrs over = {.axis = rows ? 1 : AG_ALL_AXES, .keepdims = rows};
    ir_node *absmax = op_node(R, g, p, RT_OP_REDUCE_MAX, &over, 1,
                              (ir_node *[]){op_node(R, g, p, RT_OP_ABS, NULL, 1, &x, p)}, p);
    ir_node *floor_[] = {absmax, scalar_node(g, p, AG_F32, FLT_MIN, p)};
    ir_node *div[] = {op_node(R, g, p, RT_OP_MAXIMUM, NULL, 2, floor_, p),
                      scalar_node(g, p, AG_F32, 127, p)};
    ir_node *s = op_node(R, g, p, RT_OP_DIV, NULL, 2, div, p);
    ir_node *zero = scalar_node(g, p, AG_I32, 0, p);
    ir_node *xq = op_node(R, g, p, RT_OP_QUANTIZE, NULL, 3, (ir_node *[]){x, s, zero}, p);
    ir_node *acc = int_product(R, g, q, xq, weight_node(g, p, q), zero);
    ir_node *scale[] = {s, per_scale_node(g, p, AG_F32, q, weight_scale, p)};
    ir_node *dq[] = {acc, op_node(R, g, p, RT_OP_MUL, NULL, 2, scale, p), zero};
    return op_node(R, g, p, RT_OP_DEQUANTIZE, NULL, 3, dq, p);
}

/* --------------------------------------------------------- weights only */

static void weights_only(rewriter *R, const pass_qproduct *q)
{
    ir_node *p = q->product;
    ir_graph *g = p->graph;
    ir_node *in[] = {weight_node(g, p, q), per_scale_node(g, p, AG_F32, q, weight_scale, p),
                     scalar_node(g, p, AG_I32, 0, p)};
    ir_node *w = op_node(R, g, p, RT_OP_DEQUANTIZE, NULL, 3, in, q->product->in[1]);
    ir_node *operands[] = {p->in[0], w};
    pass_set_inputs(p, 2, operands);
}

/* ------------------------------------------------------------- clean-up */

/* Removes n, then the operands it alone read, while nothing reads them
 * (the replaced chain, its weight and bias reads). */
static void remove_if_unused(ir_node *n)
{
    ir_graph *g = n->graph;
    if (!g || pass_graph_uses(g, n) || n->opcode >= RT_OP_COUNT ||
        !(rt_ops[n->opcode].flags & RT_F_PURE || n->opcode == RT_OP_VAR_READ))
        return;
    int k = n->n_in;
    ir_node **in = n->in;
    ir_remove(n);
    n->graph = NULL;
    for (int i = 0; i < k; i++)
        remove_if_unused(in[i]);
}

static bool reads_var(const ir_graph *g, const rt_variable *v)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->attrs.ref == v && (n->opcode == RT_OP_VAR_READ || n->opcode == RT_OP_ASSIGN ||
                                  n->opcode == RT_OP_ASSIGN_ADD || n->opcode == RT_OP_ASSIGN_SUB))
            return true;
        for (int r = 0; r < 2; r++)
            if (n->region[r] && reads_var(n->region[r], v))
                return true;
    }
    return false;
}

/* The variables the function still reads, in order: a weight the rewrite
 * replaced by its int8 constant is no longer one of them. */
static void keep_read_vars(ir_function *fn)
{
    int kept = 0;
    for (int i = 0; i < fn->n_vars; i++)
        if (reads_var(fn->body, fn->vars[i]))
            fn->vars[kept++] = fn->vars[i];
    fn->n_vars = kept;
}

bool pass_quantize_products(ir_function *fn, pass_qmethod method, pass_qproduct *p, int n,
                            char *err, size_t errlen)
{
    rewriter R = {.fn = fn, .err = err, .errlen = errlen};
    for (int i = 0; i < n; i++) {
        pass_qproduct *q = &p[i];
        ir_node *old = method == PASS_Q_STATIC_RANGE ? q->end : q->product;
        if (method == PASS_Q_WEIGHT_ONLY) {
            ir_node *w = q->product->in[1];
            weights_only(&R, q);
            remove_if_unused(w);
            q->replaced_id = q->product->id;
            continue;
        }
        const rt_value *bias = NULL;
        if (q->bias) {
            ir_node *b = q->bias->in[q->bias->in[0] == q->product ? 1 : 0];
            bias = b->opcode == RT_OP_CONST ? b->attrs.literal
                                            : ((const rt_variable *)b->attrs.ref)->value;
        }
        ir_node *y = method == PASS_Q_STATIC_RANGE ? static_range(&R, q, bias) : dynamic_range(&R, q);
        if (method == PASS_Q_DYNAMIC_RANGE)
            q->replaced_id = y->id;
        pass_replace_uses(old->graph, old, y, true);
        remove_if_unused(old);
    }
    free(R.made);
    ir_rechain_effects(fn);
    keep_read_vars(fn);
    return !R.failed;
}
