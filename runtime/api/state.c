/*
 * state.c - the public calls for side effects and state: ag_print,
 * ag_assert, variables and tensor arrays.
 *
 * Every call that does something goes through rt_apply with its op, never
 * doing the work here: the tracer hooks rt_apply to record these calls as
 * graph nodes, and the kernels in kernels/state.c do the printing,
 * assigning and list updates for eager calls and graphs alike.
 */
#include "../core/rt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================== helpers */

/* The value behind a tensor handle, which must not be a tensor array;
 * NULL if reported (or an error tensor in AG_ERRORS_RETURN mode). */
static rt_value *tensor_value(ag_loc loc, const char *fn, ag_tensor t)
{
    rt_value *v = rt_handle_get(loc, t);
    if (v && v->dtype == RT_LIST) {
        rt_report(loc, "%s: a tensor array was passed where a tensor is expected", fn);
        return NULL;
    }
    return v;
}

static rt_value *list_value(ag_loc loc, const char *fn, ag_tensor_array ta)
{
    rt_value *v = rt_handle_get(loc, ta.list);
    if (v && v->dtype != RT_LIST) {
        rt_report(loc, "%s: expects a tensor array, got a %s tensor", fn,
                  ag_dtype_name(v->dtype));
        return NULL;
    }
    return v;
}

static ag_tensor wrap(rt_value *v) { return v ? rt_handle_new(v) : rt_error_tensor(); }

static ag_tensor_array wrap_list(rt_value *v)
{
    ag_tensor_array ta = {wrap(v)};
    return ta;
}

/* =============================================================== ag_print */

static _Atomic(FILE *) print_stream; /* NULL: stdout */

FILE *rt_print_stream(void)
{
    FILE *f = atomic_load(&print_stream);
    return f ? f : stdout;
}

void ag_set_print_stream(FILE *out) { atomic_store(&print_stream, out); }

/* Length of s once its braces are doubled. */
static size_t escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += (*s == '{' || *s == '}') ? 2 : 1;
    return n;
}

static char *append_escaped(char *dst, const char *s)
{
    for (; *s; s++) {
        *dst++ = *s;
        if (*s == '{' || *s == '}')
            *dst++ = *s;
    }
    return dst;
}

/* The print op's template: the strings with braces doubled and "{}" for
 * each tensor, joined by single spaces. The kernel expands it, so a
 * traced print keeps its text as an attribute. */
static char *print_template(int n, const ag_print_arg *args)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += (i > 0) + (args[i].text ? escaped_len(args[i].text) : 2);
    char *tpl = rt_xmalloc(len), *p = tpl;
    for (int i = 0; i < n; i++) {
        if (i > 0)
            *p++ = ' ';
        if (args[i].text)
            p = append_escaped(p, args[i].text);
        else
            *p++ = '{', *p++ = '}';
    }
    *p = '\0';
    return tpl;
}

void ag_print_at(ag_loc loc, int n, const ag_print_arg *args)
{
    rt_value *stack_vals[16];
    rt_value **vals = n <= 16 ? stack_vals : rt_xmalloc((size_t)n * sizeof *vals);
    int count = 0;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        if (args[i].text)
            continue;
        vals[count] = tensor_value(loc, "ag_print", args[i].tensor);
        ok = vals[count++] != NULL;
    }
    if (ok) {
        char *tpl = print_template(n, args);
        rt_attrs a = {.text = tpl};
        rt_value_free(rt_apply(loc, RT_OP_PRINT, &a, vals, count));
        free(tpl);
    }
    if (vals != stack_vals)
        free(vals);
}

/* ============================================================== ag_assert */

void ag_assert_at(ag_loc loc, ag_tensor cond, const char *message)
{
    rt_value *c = tensor_value(loc, "ag_assert", cond);
    if (!c)
        return;
    rt_attrs a = {.text = message ? message : ""};
    rt_value_free(rt_apply(loc, RT_OP_ASSERT, &a, &c, 1));
}

/* ============================================================== variables */

/*
 * The registry of live variables: a sorted array of their addresses. An
 * ag_variable is a plain pointer, so a freed or made-up one can only be
 * recognized by looking it up before touching it. Creation and freeing
 * are rare; lookups are a binary search under the lock.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *registry;
static size_t registry_count, registry_cap;

/* The position of key in the registry, or where it would go. */
static size_t registry_find(uintptr_t key, bool *found)
{
    size_t lo = 0, hi = registry_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (registry[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < registry_count && registry[lo] == key;
    return lo;
}

static void registry_add(rt_variable *v)
{
    bool found;
    pthread_mutex_lock(&registry_lock);
    size_t at = registry_find((uintptr_t)v, &found);
    if (registry_count == registry_cap) {
        registry_cap = registry_cap ? registry_cap * 2 : 16;
        registry = rt_xrealloc(registry, registry_cap * sizeof *registry);
    }
    memmove(registry + at + 1, registry + at, (registry_count - at) * sizeof *registry);
    registry[at] = (uintptr_t)v;
    registry_count++;
    pthread_mutex_unlock(&registry_lock);
}

/* Removes v; false if it was not registered. */
static bool registry_remove(ag_variable v)
{
    bool found;
    pthread_mutex_lock(&registry_lock);
    size_t at = registry_find((uintptr_t)v, &found);
    if (found) {
        memmove(registry + at, registry + at + 1,
                (registry_count - at - 1) * sizeof *registry);
        registry_count--;
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

/* v if it is a live variable; otherwise reports and gives NULL. */
static rt_variable *live_variable(ag_loc loc, const char *fn, ag_variable v)
{
    bool found;
    pthread_mutex_lock(&registry_lock);
    registry_find((uintptr_t)v, &found);
    pthread_mutex_unlock(&registry_lock);
    if (found && v->magic == RT_VARIABLE_MAGIC)
        return v;
    rt_report_absent(loc, "%s: not a live variable (freed, or never created)", fn);
    return NULL;
}

static void variable_destroy(rt_variable *v)
{
    v->magic = 0;
    rt_value_free(v->value);
    free(v);
}

/* A variable's value is its own copy of init: it is updated in place, so
 * it must never share storage with a tensor. */
ag_variable ag_variable_new_at(ag_loc loc, ag_tensor init)
{
    rt_value *x = tensor_value(loc, "ag_variable_new", init);
    if (!x)
        return NULL;
    /* Made while tracing: the tracer computes the initial value once (it
     * allows this on a function's first trace only, as tf.function). */
    rt_value *computed = NULL;
    if (x->kind != RT_CONCRETE) {
        if (!rt_trace_concretize) {
            rt_report(loc, "ag_variable_new: the initial value must be a concrete tensor");
            return NULL;
        }
        if (!(computed = rt_trace_concretize(loc, x)))
            return NULL;
        x = computed;
    }
    rt_err e;
    rt_value *copy = rt_value_try_new(x->dtype, &x->shape, &e);
    if (!copy) {
        rt_report(loc, "ag_variable_new: %s", e.msg);
        rt_value_free(computed);
        return NULL;
    }
    memcpy(copy->data, x->data, rt_value_bytes(x));
    rt_variable *v = rt_xcalloc(1, sizeof *v);
    v->magic = RT_VARIABLE_MAGIC;
    v->value = copy;
    v->created_at = loc;
    registry_add(v);
    rt_value_free(computed);
    return v;
}

ag_tensor ag_variable_read_at(ag_loc loc, ag_variable v)
{
    if (!live_variable(loc, "ag_variable_read", v))
        return rt_error_tensor();
    rt_attrs a = {.ref = v};
    return wrap(rt_apply(loc, RT_OP_VAR_READ, &a, NULL, 0));
}

/* The three assigns: the op's result (the new value) is not returned, as
 * the public calls return void; a failure was reported by rt_apply. */
static void assign_op(ag_loc loc, rt_op op, const char *fn, ag_variable v,
                      ag_tensor value)
{
    if (!live_variable(loc, fn, v))
        return;
    rt_value *x = tensor_value(loc, fn, value);
    if (!x)
        return;
    rt_attrs a = {.ref = v};
    rt_value_free(rt_apply(loc, op, &a, &x, 1));
}

void ag_assign_at(ag_loc loc, ag_variable v, ag_tensor value)
{
    assign_op(loc, RT_OP_ASSIGN, "ag_assign", v, value);
}

void ag_assign_add_at(ag_loc loc, ag_variable v, ag_tensor value)
{
    assign_op(loc, RT_OP_ASSIGN_ADD, "ag_assign_add", v, value);
}

void ag_assign_sub_at(ag_loc loc, ag_variable v, ag_tensor value)
{
    assign_op(loc, RT_OP_ASSIGN_SUB, "ag_assign_sub", v, value);
}

void ag_variable_free_at(ag_loc loc, ag_variable v)
{
    if (!v)
        return; /* like free(NULL); also what a failed ag_variable_new returned */
    if (!registry_remove(v)) {
        rt_report(loc, "ag_variable_free: not a live variable (freed, or never created)");
        return;
    }
    variable_destroy(v);
}

/* ag_shutdown: frees the variables still alive and resets the stream. */
void rt_state_shutdown(void)
{
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < registry_count; i++)
        variable_destroy((rt_variable *)registry[i]);
    free(registry);
    registry = NULL;
    registry_count = registry_cap = 0;
    pthread_mutex_unlock(&registry_lock);
    atomic_store(&print_stream, NULL);
}

/* ========================================================= tensor arrays */

ag_tensor_array ag_tensor_array_new_at(ag_loc loc, ag_dtype dt, int64_t size,
                                       bool dynamic_size)
{
    rt_attrs a = {.dtype = dt, .n = size, .dynamic = dynamic_size};
    return wrap_list(rt_apply(loc, RT_OP_TA_NEW, &a, NULL, 0));
}

/*
 * Applies a tensor-array op to (list, index[, value]). A C number index
 * becomes an i32 scalar (i64 is not needed: sizes stop at INT32_MAX); a
 * float index reaches the dtype rule as f32 and is rejected there.
 */
static rt_value *apply_indexed(ag_loc loc, rt_op op, const char *fn, ag_tensor_array ta,
                               ag_operand index, const ag_tensor *value)
{
    rt_value *in[3];
    rt_operand_values idx;
    if (!(in[0] = list_value(loc, fn, ta)))
        return NULL;
    if (value && !(in[2] = tensor_value(loc, fn, *value)))
        return NULL;
    if (!rt_operands_to_values(loc, fn, &index, 1, &idx))
        return NULL;
    in[1] = idx.v[0];
    return rt_apply(loc, op, NULL, in, value ? 3 : 2);
}

ag_tensor_array ag_tensor_array_write_at(ag_loc loc, ag_tensor_array ta,
                                         ag_operand index, ag_tensor value)
{
    return wrap_list(apply_indexed(loc, RT_OP_TA_WRITE, "ag_tensor_array_write", ta,
                                   index, &value));
}

ag_tensor ag_tensor_array_read_at(ag_loc loc, ag_tensor_array ta, ag_operand index)
{
    return wrap(apply_indexed(loc, RT_OP_TA_READ, "ag_tensor_array_read", ta, index,
                              NULL));
}

static ag_tensor apply_whole(ag_loc loc, rt_op op, const char *fn, ag_tensor_array ta)
{
    rt_value *l = list_value(loc, fn, ta);
    return l ? wrap(rt_apply(loc, op, NULL, &l, 1)) : rt_error_tensor();
}

ag_tensor ag_tensor_array_stack_at(ag_loc loc, ag_tensor_array ta)
{
    return apply_whole(loc, RT_OP_TA_STACK, "ag_tensor_array_stack", ta);
}

ag_tensor ag_tensor_array_size_at(ag_loc loc, ag_tensor_array ta)
{
    return apply_whole(loc, RT_OP_TA_SIZE, "ag_tensor_array_size", ta);
}
