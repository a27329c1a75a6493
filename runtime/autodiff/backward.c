/*
 * backward.c - a tape's gradients: reverse-mode accumulation over what it
 * recorded (ag_tape_gradient and friends).
 *
 * The target's gradient starts as ones (the gradient of its sum, as TF),
 * and each recorded op, last to first, hands its result's gradient to its
 * rule (grad_rules.c), which adds to its operands'. Only ops on a path
 * from a source to the target are visited. The rules apply ops through
 * rt_apply, so the same code runs eagerly, or adds the backward nodes to
 * the graph being traced; other live tapes record them, which is how a
 * gradient of a gradient is taken. The tape answering does not record its
 * own work.
 */
#include "grad.h"
#include "tape.h"

#include <stdlib.h>
#include <string.h>

typedef struct backward {
    rt_tape *tape;
    ag_loc loc;       /* the ag_tape_gradient call */
    id_map reaches;   /* ids that depend on a source */
    id_map grads;     /* id -> its accumulated gradient (owned) */
    bool failed;
} backward;

/* ---------------------------------------------------------- which ops */

static bool entry_reaches(const backward *b, const tape_entry *e)
{
    if (e->op == RT_OP_COUNT)
        return true; /* custom: its captures may depend on anything */
    for (int i = 0; i < e->n_in; i++)
        if (e->in_id[i] && id_map_has(&b->reaches, e->in_id[i]))
            return true;
    return false;
}

/* Marks every value that depends on one of the sources. */
static void find_paths(backward *b, const rt_grad_source *src, int n_src)
{
    for (int i = 0; i < n_src; i++)
        for (int j = 0; j < src[i].n_ids; j++)
            id_map_put(&b->reaches, src[i].ids[j], NULL);
    const rt_tape *t = b->tape;
    for (int k = 0; k < t->n_entries; k++) {
        const tape_entry *e = &t->entries[k];
        if (entry_reaches(b, e))
            for (int j = 0; j < e->n_out; j++)
                id_map_put(&b->reaches, e->out_id[j], NULL);
    }
}

/* -------------------------------------------------------- accumulating */

/* Adds g (owned) to the gradient of id. */
static void accumulate(backward *b, uint64_t id, rt_value *g, ag_loc loc)
{
    rt_value *have = id_map_get(&b->grads, id);
    if (!have) {
        id_map_put(&b->grads, id, g);
        return;
    }
    rt_value *in[2] = {have, g};
    rt_value *sum = rt_apply(loc, RT_OP_ADD, NULL, in, 2);
    rt_value_free(g);
    if (!sum) {
        b->failed = true;
        return;
    }
    rt_value_free(have);
    id_map_put(&b->grads, id, sum);
}

/* dx from a rule: owned when a helper made it, else (dy itself, an
 * operand) an alias of it. Removes it from the rule's list. */
static rt_value *take(rt_grad_args *g, rt_value *v)
{
    for (int i = 0; i < g->n_made; i++) {
        if (g->made[i] == v) {
            g->made[i] = g->made[--g->n_made];
            return v;
        }
    }
    return rt_tape_alias(v);
}

static bool refuse(backward *b, const tape_entry *e)
{
    if (e->op == RT_OP_COUNT)
        rt_report(e->loc, "ag_tape_gradient: the gradient reaches %s, which agc cannot "
                          "differentiate yet when it is staged; run it eagerly on the "
                          "tape (a C condition, or ag_run_functions_eagerly) or keep it "
                          "off the path from the sources to the target", e->what);
    else
        rt_report(e->loc, "ag_tape_gradient: the gradient reaches ag_%s, which has no "
                          "gradient rule yet; keep it off the path from the sources to "
                          "the target", rt_ops[e->op].name);
    b->failed = true;
    return false;
}

/* Whether v can have a gradient: a float tensor, or a tensor array of
 * floats (its gradient a dense tensor, grad_rules_list.c). */
static bool differentiable(const rt_value *v)
{
    return rt_is_float(v->dtype) || (v->dtype == RT_LIST && rt_is_float(v->elem_dtype));
}

static bool *wanted(const backward *b, const tape_entry *e)
{
    bool *want = rt_xcalloc((size_t)e->n_in + 1, sizeof *want);
    for (int i = 0; i < e->n_in; i++)
        want[i] = e->in_id[i] && id_map_has(&b->reaches, e->in_id[i]) &&
                  differentiable(e->in[i]);
    return want;
}

/* A call of an AG_FUNCTION (an entry that owns its context,
 * pipeline/function_grad.c) whose result j is a tensor array that a
 * gradient reached: its backward carries no gradient for arrays yet, so
 * the gradient would be lost. A staged loop's or if's backward carries
 * an array's dense gradient (ir/loop_grad.c, ir/staged_grad.c). */
static bool array_result_reached(backward *b, const tape_entry *e)
{
    for (int j = 0; e->owned && j < e->n_out; j++) {
        if (e->out[j]->dtype != RT_LIST || !id_map_get(&b->grads, e->out_id[j]))
            continue;
        rt_report(e->loc, "ag_tape_gradient: the gradient reaches a tensor array that %s "
                          "carries, which agc cannot differentiate yet; stack the array "
                          "(ag_tensor_array_stack) inside it and carry the tensor, or "
                          "run it eagerly on the tape (ag_run_functions_eagerly)",
                  e->what);
        b->failed = true;
        return true;
    }
    return false;
}

/* A custom entry's own backward: dx are new values it made. */
static bool apply_custom(backward *b, const tape_entry *e)
{
    if (array_result_reached(b, e))
        return false;
    rt_value **dy = rt_xcalloc((size_t)e->n_out + 1, sizeof *dy);
    rt_value **dx = rt_xcalloc((size_t)e->n_in + 1, sizeof *dx);
    bool *want = wanted(b, e);
    for (int j = 0; j < e->n_out; j++)
        dy[j] = id_map_get(&b->grads, e->out_id[j]);
    bool ok = e->backward(e->ctx, e->loc, e->in, e->n_in, e->out, dy, e->n_out, want, dx);
    for (int i = 0; i < e->n_in; i++) {
        if (ok && dx[i] && want[i])
            accumulate(b, e->in_id[i], dx[i], e->loc);
        else
            rt_value_free(dx[i]);
    }
    free(dy);
    free(dx);
    free(want);
    b->failed |= !ok;
    return ok;
}

/* Runs e's rule on its result's gradient dy and adds to its operands'. */
static bool apply_rule(backward *b, const tape_entry *e, rt_value *dy)
{
    if (e->op == RT_OP_COUNT && e->backward)
        return apply_custom(b, e);
    if (e->op == RT_OP_COUNT || rt_ops[e->op].grad_kind != RT_GRAD_RULE)
        return refuse(b, e);
    rt_value **slots = rt_xcalloc((size_t)e->n_in + 1, sizeof *slots);
    bool *want = wanted(b, e);
    rt_grad_args g = {.loc = e->loc, .attrs = &e->attrs, .in = e->in, .n = e->n_in,
                      .out = e->out[0], .dy = dy, .dx = slots, .want = want};
    bool ok = rt_ops[e->op].grad(&g) && !g.failed;
    for (int i = 0; ok && i < e->n_in; i++) {
        if (slots[i] && want[i])
            accumulate(b, e->in_id[i], take(&g, slots[i]), e->loc);
    }
    for (int i = 0; i < g.n_made; i++)
        rt_value_free(g.made[i]);
    free(g.made);
    free(slots);
    free(want);
    b->failed |= !ok;
    return ok;
}

static void run_backward(backward *b)
{
    const rt_tape *t = b->tape;
    for (int k = t->n_entries - 1; k >= 0 && !b->failed; k--) {
        const tape_entry *e = &t->entries[k];
        rt_value *dy = id_map_get(&b->grads, e->out_id[0]);
        bool any = dy != NULL;
        for (int j = 1; j < e->n_out; j++)
            any |= id_map_get(&b->grads, e->out_id[j]) != NULL;
        if (!any || !entry_reaches(b, e))
            continue;
        if ((e->n_out != 1 && !e->backward) || !apply_rule(b, e, dy))
            if (!b->failed)
                refuse(b, e);
    }
}

/* ------------------------------------------------------------ the calls */

static void free_grads(backward *b)
{
    for (size_t i = 0; i < b->grads.cap; i++)
        if (b->grads.keys[i])
            rt_value_free(b->grads.vals[i]);
    id_map_free(&b->grads);
    id_map_free(&b->reaches);
}

static bool check_float(ag_loc loc, const char *what, const rt_value *v)
{
    if (rt_is_float(v->dtype))
        return true;
    rt_report(loc, "ag_tape_gradient: the %s is %s; gradients are defined for float "
                   "tensors (f32, f64, bf16): cast it to a float before the tape "
                   "records the ops that use it", what,
              v->dtype == RT_LIST ? "a tensor array" : ag_dtype_name(v->dtype));
    return false;
}

/* A tensor array of floats the tape was told to follow as a source
 * (rt_tape_watch_array: the staged loop's and if's backward): its
 * gradient is its dense tensor [size, element...]. */
static bool array_source(const rt_tape *t, const rt_value *v)
{
    return t->array_sources && v->dtype == RT_LIST && rt_is_float(v->elem_dtype);
}

/* Zeros like src: for an array, like its dense gradient. */
static rt_value *zeros_like(backward *b, rt_value *like)
{
    rt_attrs a = {.value = 0.0};
    rt_value *stacked = NULL;
    if (like->dtype == RT_LIST) {
        like = stacked = rt_apply(b->loc, RT_OP_TA_STACK, NULL, &like, 1);
        if (!like)
            return NULL;
    }
    rt_value *z = rt_apply(b->loc, RT_OP_FILL_LIKE, &a, &like, 1);
    rt_value_free(stacked);
    return z;
}

/* The gradient of a source: the sum of its ids' (a variable read several
 * times has one id a read), or the unconnected result. */
static ag_tensor result_for(backward *b, const rt_grad_source *src)
{
    rt_value *sum = NULL;
    for (int j = 0; j < src->n_ids && !b->failed; j++) {
        rt_value *g = id_map_get(&b->grads, src->ids[j]);
        if (!g)
            continue;
        if (!sum) {
            sum = rt_tape_alias(g); /* the map keeps its own: a source may repeat */
            continue;
        }
        rt_value *in[2] = {sum, g}, *s = rt_apply(b->loc, RT_OP_ADD, NULL, in, 2);
        rt_value_free(sum);
        sum = s;
        b->failed |= !s;
    }
    if (sum || b->failed)
        return sum ? rt_handle_new(sum) : rt_error_tensor();
    if (!b->tape->zero_unconnected)
        return (ag_tensor){0, 0};
    rt_value *z = zeros_like(b, src->like);
    return z ? rt_handle_new(z) : rt_error_tensor();
}

/* Seeds the target's gradient with ones; false if it is not followed. */
static bool seed(backward *b, rt_value *target)
{
    uint64_t id = rt_tape_peek_id(target);
    if (!id || !id_map_has(&b->reaches, id))
        return false;
    rt_attrs a = {.value = 1.0};
    rt_value *ones = rt_apply(b->loc, RT_OP_FILL_LIKE, &a, &target, 1);
    if (!ones) {
        b->failed = true;
        return false;
    }
    id_map_put(&b->grads, id, ones);
    return true;
}

bool rt_tape_gradients(ag_loc loc, ag_tape tape, ag_tensor target, int n,
                       const rt_grad_source *src, ag_tensor *out)
{
    for (int i = 0; i < n; i++)
        out[i] = rt_error_tensor();
    rt_tape *t = rt_tape_live(loc, "ag_tape_gradient", tape);
    rt_value *y = t ? rt_handle_get(loc, target) : NULL;
    if (!y)
        return false;
    if (t->used) {
        rt_report(loc, "ag_tape_gradient: this tape has already given its gradients; a "
                       "tape answers once unless made with ag_tape_new_persistent (as "
                       "tf.GradientTape(persistent=True)), or ask for every source in "
                       "one ag_tape_gradients call");
        return false;
    }
    if (!check_float(loc, "target", y))
        return false;
    for (int i = 0; i < n; i++)
        if (!array_source(t, src[i].like) && !check_float(loc, "source", src[i].like))
            return false;
    backward b = {.tape = t, .loc = loc};
    rt_tape_pause(t, true);
    find_paths(&b, src, n);
    if (seed(&b, y))
        run_backward(&b);
    for (int i = 0; i < n && !b.failed; i++)
        out[i] = result_for(&b, &src[i]);
    free_grads(&b);
    if (t->persistent)
        rt_tape_pause(t, false);
    else
        rt_tape_retire(t);
    return !b.failed;
}
