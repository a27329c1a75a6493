/*
 * state.c - side effects and state: print, assert, variables and tensor
 * arrays (shape rules and kernels; the public calls are in api/state.c).
 *
 * These ops are ordered in graphs (RT_F_EFFECT) or thread a list value
 * through (tensor arrays), so the kernels below are the only place where
 * output is written, variables change and lists grow: eager calls, traced
 * graphs and executors all share them.
 */
#include "../core/op_decls.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A tensor array holds at most this many elements: its index is an i32 in
 * TensorFlow, and the bound keeps a typo'd size from allocating terabytes. */
#define MAX_LIST_SIZE INT32_MAX

/* ================================================================ helpers */

static const rt_variable *var_of(const rt_attrs *a) { return a->ref; }

/* Both shapes have the same rank and no dim that is known in both and
 * differs. An unknown rank (-1) is compatible with everything. */
static bool shapes_compatible(const ag_shape *x, const ag_shape *y)
{
    if (x->rank < 0 || y->rank < 0)
        return true;
    if (x->rank != y->rank)
        return false;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] >= 0 && y->dims[i] >= 0 && x->dims[i] != y->dims[i])
            return false;
    return true;
}

/* The more precise of two compatible shapes, dim by dim. */
static ag_shape merge_shapes(const ag_shape *x, const ag_shape *y)
{
    if (x->rank < 0)
        return *y;
    ag_shape out = *x;
    for (int i = 0; y->rank == x->rank && i < x->rank; i++)
        if (out.dims[i] < 0)
            out.dims[i] = y->dims[i];
    return out;
}

/* Index operands of tensor-array ops are scalars; unknown rank is allowed
 * while tracing. */
static bool index_is_scalar(const rt_value *idx, rt_err *e)
{
    if (idx->shape.rank <= 0)
        return true;
    char buf[128];
    rt_err_set(e, "the index must be a scalar, got shape %s",
               rt_shape_str(&idx->shape, buf, sizeof buf));
    return false;
}

static int64_t index_value(const rt_value *idx)
{
    return rt_load_i64(idx->dtype, idx->data, 0);
}

/*
 * Makes `out` a fresh tensor of exactly shape s. rt_apply allocated `out`
 * from the shape rule, which for tensor-array reads may not know the
 * element shape (a list value made before its first write, or unknown
 * dims in a traced graph); the kernel knows it and fixes the output.
 * False, with the reason in e, when that tensor cannot be made.
 */
static bool reshape_output(rt_value *out, const ag_shape *s, rt_err *e)
{
    if (ag_shape_equal(out->shape, *s) && out->data)
        return true;
    rt_value *fresh = rt_value_try_new(out->dtype, s, e);
    if (!fresh)
        return false; /* a stack of many large elements may not fit */
    rt_value old = *out;
    *out = *fresh;
    *fresh = old;
    rt_value_free(fresh);
    return true;
}

/* ================================================================ print */

/*
 * Expands a print template: "{}" stands for the next formatted tensor,
 * "{{" and "}}" for literal braces. Writes into dst when it is not NULL
 * (the first call, with dst NULL, measures and validates). Returns the
 * length, or -1 with a message when the template does not match n.
 */
static int64_t expand_template(const char *tpl, char *const *strs, int n, char *dst,
                               rt_err *e)
{
    int64_t len = 0;
    int used = 0;
    for (const char *p = tpl; *p; p++) {
        const char *piece = p;
        size_t plen = 1;
        if ((p[0] == '{' || p[0] == '}') && p[1] == p[0]) {
            p++; /* a doubled brace is one literal brace */
        } else if (p[0] == '{' && p[1] == '}') {
            if (used == n) {
                rt_err_set(e, "the print template has more {} placeholders than the "
                              "%d tensor%s given", n, n == 1 ? "" : "s");
                return -1;
            }
            piece = strs[used++];
            plen = strlen(piece);
            p++;
        } else if (p[0] == '{' || p[0] == '}') {
            rt_err_set(e, "the print template has a lone '%c' at offset %d; literal "
                          "braces are written {{ and }}", p[0], (int)(p - tpl));
            return -1;
        }
        if (dst)
            memcpy(dst + len, piece, plen);
        len += (int64_t)plen;
    }
    if (used != n) {
        rt_err_set(e, "the print template has %d {} placeholder%s but %d tensor%s "
                      "given", used, used == 1 ? "" : "s", n, n == 1 ? " was" : "s were");
        return -1;
    }
    return len;
}

bool rt_print_template_ok(const char *tpl, int n, rt_err *e)
{
    char **empty = rt_xcalloc(n > 0 ? (size_t)n : 1, sizeof *empty);
    for (int i = 0; i < n; i++)
        empty[i] = "";
    bool ok = expand_template(tpl ? tpl : "", empty, n, NULL, e) >= 0;
    free(empty);
    return ok;
}

/* One fwrite per line, so that lines printed from several threads do not
 * interleave. stdout stays buffered (printf goes through the same buffer,
 * so the order is kept); any other stream is flushed so that a file or a
 * pipe sees each line at once. */
static void write_line(const char *line, size_t len)
{
    FILE *f = rt_print_stream();
    fwrite(line, 1, len, f);
    if (f != stdout)
        fflush(f);
}

RT_KERNEL(rt_k_print)
{
    const char *tpl = a->text ? a->text : "";
    char **strs = rt_xcalloc(n > 0 ? (size_t)n : 1, sizeof *strs);
    for (int i = 0; i < n; i++)
        strs[i] = rt_format_value(in[i]);
    int64_t len = expand_template(tpl, strs, n, NULL, e);
    if (len >= 0) {
        char *line = rt_xmalloc((size_t)len + 1);
        expand_template(tpl, strs, n, line, e);
        line[len] = '\n';
        write_line(line, (size_t)len + 1);
        free(line);
    }
    for (int i = 0; i < n; i++)
        free(strs[i]);
    free(strs);
    *(uint8_t *)out->data = 1; /* the token that orders effects in graphs */
    return len >= 0;
}

/* =============================================================== assert */

RT_KERNEL(rt_k_assert)
{
    (void)n;
    /* Bools are stored as 0/1 bytes, so one memchr finds a false element. */
    if (in[0]->numel > 0 && memchr(in[0]->data, 0, (size_t)in[0]->numel)) {
        rt_err_set(e, "assertion failed: %s", a->text ? a->text : "");
        return false;
    }
    *(uint8_t *)out->data = 1;
    return true;
}

/* ============================================================ variables */

/*
 * One lock for the values of all variables: an assign must not interleave
 * with another assign or a read of the same variable. Updates are short
 * (one pass over the data), so a single lock costs little and needs no
 * field in rt_variable. The value is updated in place: its dtype and
 * shape never change, so rules may read them without the lock.
 */
static pthread_mutex_t var_lock = PTHREAD_MUTEX_INITIALIZER;

RT_SHAPE_RULE(rt_sh_variable)
{
    (void)in, (void)n, (void)e;
    *out = var_of(a)->value->shape;
    return true;
}

static void assign_shape_error(const ag_shape *var, const ag_shape *value, rt_err *e)
{
    char vb[128], xb[128];
    rt_shape_str(var, vb, sizeof vb);
    rt_err_set(e, "the value has shape %s but the variable has shape %s; TensorFlow "
                  "variables keep their shape, so assign a value of shape %s (or make "
                  "a new variable)", rt_shape_str(value, xb, sizeof xb), vb, vb);
}

RT_SHAPE_RULE(rt_sh_assign)
{
    (void)n;
    /* Unknown dims of a traced value are compatible here; the kernel checks
     * the concrete shape again. */
    const ag_shape *var = &var_of(a)->value->shape;
    if (!shapes_compatible(var, &in[0]->shape)) {
        assign_shape_error(var, &in[0]->shape, e);
        return false;
    }
    *out = *var;
    return true;
}

RT_KERNEL(rt_k_var_read)
{
    (void)in, (void)n, (void)e;
    const rt_value *v = var_of(a)->value;
    pthread_mutex_lock(&var_lock);
    memcpy(out->data, v->data, rt_value_bytes(v));
    pthread_mutex_unlock(&var_lock);
    return true;
}

RT_KERNEL(rt_k_assign)
{
    (void)n;
    rt_value *v = var_of(a)->value;
    if (!ag_shape_equal(v->shape, in[0]->shape)) {
        assign_shape_error(&v->shape, &in[0]->shape, e);
        return false;
    }
    pthread_mutex_lock(&var_lock);
    memcpy(v->data, in[0]->data, rt_value_bytes(v));
    memcpy(out->data, v->data, rt_value_bytes(v));
    pthread_mutex_unlock(&var_lock);
    return true;
}

/* dst[i] += src[i] (or -=), in the dtype's own arithmetic: integers wrap
 * (computed unsigned, since signed overflow is undefined), bf16 rounds
 * each result from f32. */
#define UPDATE_LOOP(T, expr)                                   \
    do {                                                       \
        T *d_ = dst;                                           \
        const T *s_ = src;                                     \
        for (int64_t i = 0; i < count; i++) {                  \
            T x = d_[i], y = s_[i];                            \
            d_[i] = (expr);                                    \
        }                                                      \
    } while (0)

static void add_in_place(ag_dtype dt, void *dst, const void *src, int64_t count)
{
    switch (dt) {
    case AG_F32: UPDATE_LOOP(float, x + y); break;
    case AG_F64: UPDATE_LOOP(double, x + y); break;
    case AG_BF16:
        UPDATE_LOOP(uint16_t, ag_f32_to_bf16(ag_bf16_to_f32(x) + ag_bf16_to_f32(y)));
        break;
    case AG_I32: UPDATE_LOOP(int32_t, (int32_t)((uint32_t)x + (uint32_t)y)); break;
    case AG_I64: UPDATE_LOOP(int64_t, (int64_t)((uint64_t)x + (uint64_t)y)); break;
    case AG_I8: UPDATE_LOOP(int8_t, (int8_t)(uint8_t)((uint8_t)x + (uint8_t)y)); break;
    default: break;
    }
}

static void sub_in_place(ag_dtype dt, void *dst, const void *src, int64_t count)
{
    switch (dt) {
    case AG_F32: UPDATE_LOOP(float, x - y); break;
    case AG_F64: UPDATE_LOOP(double, x - y); break;
    case AG_BF16:
        UPDATE_LOOP(uint16_t, ag_f32_to_bf16(ag_bf16_to_f32(x) - ag_bf16_to_f32(y)));
        break;
    case AG_I32: UPDATE_LOOP(int32_t, (int32_t)((uint32_t)x - (uint32_t)y)); break;
    case AG_I64: UPDATE_LOOP(int64_t, (int64_t)((uint64_t)x - (uint64_t)y)); break;
    case AG_I8: UPDATE_LOOP(int8_t, (int8_t)(uint8_t)((uint8_t)x - (uint8_t)y)); break;
    default: break;
    }
}

/* assign_add and assign_sub: v = v op value, then out = the new value. */
static bool update_variable(const rt_attrs *a, const rt_value *value, rt_value *out,
                            bool subtract, rt_err *e)
{
    rt_value *v = var_of(a)->value;
    if (!rt_is_numeric(v->dtype)) {
        /* rt_dt_assign admits every dtype; arithmetic needs a number. */
        rt_err_set(e, "needs a numeric variable, but it holds %s",
                   ag_dtype_name(v->dtype));
        return false;
    }
    if (!ag_shape_equal(v->shape, value->shape)) {
        assign_shape_error(&v->shape, &value->shape, e);
        return false;
    }
    pthread_mutex_lock(&var_lock);
    if (subtract)
        sub_in_place(v->dtype, v->data, value->data, v->numel);
    else
        add_in_place(v->dtype, v->data, value->data, v->numel);
    memcpy(out->data, v->data, rt_value_bytes(v));
    pthread_mutex_unlock(&var_lock);
    return true;
}

RT_KERNEL(rt_k_assign_add)
{
    (void)n;
    return update_variable(a, in[0], out, false, e);
}

RT_KERNEL(rt_k_assign_sub)
{
    (void)n;
    return update_variable(a, in[0], out, true, e);
}

/* ======================================================== tensor arrays */

/*
 * A list value's `shape` is the element shape, rank -1 until the first
 * write. Every write goes through rt_k_ta_write, which keeps all elements
 * of a list at one shape; a value made before the first write still has
 * rank -1 though its list may have elements by now (the handles of one
 * tensor array share the list, as in TensorFlow's eager mode), so the
 * written elements are the authority.
 */
static bool list_elem_shape(const rt_value *lv, ag_shape *out)
{
    if (rt_shape_known(&lv->shape)) {
        *out = lv->shape;
        return true;
    }
    if (lv->kind != RT_CONCRETE || !lv->list)
        return false;
    for (int64_t i = 0; i < lv->list->size; i++) {
        if (lv->list->elems[i]) {
            *out = lv->list->elems[i]->shape;
            return true;
        }
    }
    return false;
}

/* Makes `out` another value of list l (sharing it: one more reference). */
static void attach_list(rt_value *out, rt_list *l, const ag_shape *elem_shape)
{
    atomic_fetch_add(&l->refs, 1);
    out->list = l;
    out->elem_dtype = l->elem_dtype;
    out->shape = *elem_shape;
    out->numel = 0;
}

RT_SHAPE_RULE(rt_sh_list_new)
{
    (void)in, (void)n;
    if (a->n < 0 || a->n > MAX_LIST_SIZE) {
        rt_err_set(e, "size %lld is %s; a tensor array has 0 to %d elements "
                      "(pass dynamic_size true to let it grow)", (long long)a->n,
                   a->n < 0 ? "negative" : "too large", MAX_LIST_SIZE);
        return false;
    }
    *out = (ag_shape){.rank = -1};
    return true;
}

RT_KERNEL(rt_k_ta_new)
{
    (void)in, (void)n, (void)e;
    /* Take the list of a freshly made list value, so its setup stays in
     * value.c. */
    rt_value *tmp = rt_value_new_list(a->dtype, a->n, a->dynamic);
    ag_shape unknown = {.rank = -1};
    attach_list(out, tmp->list, &unknown);
    rt_value_free(tmp); /* drops tmp's reference; out keeps the list */
    return true;
}

static void elem_shape_error(const ag_shape *elem, const ag_shape *value, rt_err *e)
{
    char eb[128], vb[128];
    rt_err_set(e, "cannot write a value of shape %s into a tensor array whose "
                  "elements have shape %s; all elements of a tensor array have the "
                  "same shape", rt_shape_str(value, vb, sizeof vb),
               rt_shape_str(elem, eb, sizeof eb));
}

/* ta_write(list, index, value) */
RT_SHAPE_RULE(rt_sh_ta_write)
{
    (void)a, (void)n;
    if (!index_is_scalar(in[1], e))
        return false;
    if (!shapes_compatible(&in[0]->shape, &in[2]->shape)) {
        elem_shape_error(&in[0]->shape, &in[2]->shape, e);
        return false;
    }
    *out = merge_shapes(&in[0]->shape, &in[2]->shape);
    return true;
}

/* Makes room for index idx in a dynamic list. */
static void grow_list(rt_list *l, int64_t idx)
{
    if (idx >= l->cap) {
        int64_t cap = l->cap * 2 > idx + 1 ? l->cap * 2 : idx + 1;
        l->elems = rt_xrealloc(l->elems, (size_t)cap * sizeof *l->elems);
        memset(l->elems + l->cap, 0, (size_t)(cap - l->cap) * sizeof *l->elems);
        l->cap = cap;
    }
    l->size = idx + 1;
}

static bool check_write_index(const rt_list *l, int64_t idx, rt_err *e)
{
    if (idx < 0) {
        rt_err_set(e, "index %lld is negative", (long long)idx);
        return false;
    }
    if (idx >= l->size && !l->dynamic_size) {
        rt_err_set(e, "index %lld is out of range for a tensor array of size %lld; "
                      "make it with dynamic_size true to let it grow",
                   (long long)idx, (long long)l->size);
        return false;
    }
    if (idx >= MAX_LIST_SIZE) {
        rt_err_set(e, "index %lld is too large; a tensor array has at most %d "
                      "elements", (long long)idx, MAX_LIST_SIZE);
        return false;
    }
    return true;
}

RT_KERNEL(rt_k_ta_write)
{
    (void)a, (void)n;
    rt_list *l = in[0]->list;
    const rt_value *value = in[2];
    int64_t idx = index_value(in[1]);
    ag_shape elem;
    if (list_elem_shape(in[0], &elem)) {
        if (!ag_shape_equal(elem, value->shape)) {
            elem_shape_error(&elem, &value->shape, e);
            return false;
        }
    } else {
        elem = value->shape; /* the first write fixes the element shape */
    }
    if (!check_write_index(l, idx, e))
        return false;
    if (idx >= l->size)
        grow_list(l, idx);
    /* Tensors are immutable, so the element shares the value's storage
     * (refcounted) instead of copying it. */
    rt_value *old = l->elems[idx];
    l->elems[idx] = rt_value_alias(value, &value->shape);
    rt_value_free(old);
    attach_list(out, l, &elem);
    return true;
}

/* ta_read(list, index): the element shape, when it can be known. */
RT_SHAPE_RULE(rt_sh_ta_read)
{
    (void)a, (void)n;
    if (!index_is_scalar(in[1], e))
        return false;
    if (!list_elem_shape(in[0], out))
        *out = in[0]->shape; /* partly known, or unknown rank */
    return true;
}

RT_KERNEL(rt_k_ta_read)
{
    (void)a, (void)n;
    const rt_list *l = in[0]->list;
    int64_t idx = index_value(in[1]);
    if (idx < 0 || idx >= l->size) {
        rt_err_set(e, "index %lld is out of range for a tensor array of size %lld",
                   (long long)idx, (long long)l->size);
        return false;
    }
    const rt_value *elem = l->elems[idx];
    if (!elem) {
        rt_err_set(e, "element %lld of the tensor array was never written",
                   (long long)idx);
        return false;
    }
    if (!reshape_output(out, &elem->shape, e))
        return false;
    memcpy(out->data, elem->data, rt_value_bytes(elem));
    return true;
}

/* ta_stack(list): [size, element shape...]. */
RT_SHAPE_RULE(rt_sh_ta_stack)
{
    (void)a, (void)n;
    ag_shape elem;
    bool concrete = in[0]->kind == RT_CONCRETE && in[0]->list;
    int64_t size = concrete ? in[0]->list->size : -1;
    if (!list_elem_shape(in[0], &elem))
        elem = in[0]->shape;
    if (elem.rank < 0) {
        /* Nothing written yet: an empty list stacks to [0]; otherwise the
         * kernel reports the unwritten element. */
        *out = size == 0 ? AG_SHAPE(0) : elem;
        return true;
    }
    if (elem.rank >= AG_MAX_RANK) {
        rt_err_set(e, "cannot stack elements of rank %d: the result would exceed "
                      "the maximum rank %d", elem.rank, AG_MAX_RANK);
        return false;
    }
    out->rank = elem.rank + 1;
    out->dims[0] = size;
    memcpy(out->dims + 1, elem.dims, (size_t)elem.rank * sizeof elem.dims[0]);
    return true;
}

RT_KERNEL(rt_k_ta_stack)
{
    (void)a, (void)n;
    const rt_list *l = in[0]->list;
    ag_shape elem, result = AG_SHAPE(0);
    for (int64_t i = 0; i < l->size; i++) {
        if (!l->elems[i]) {
            rt_err_set(e, "element %lld of the tensor array was never written; "
                          "ag_tensor_array_stack needs every element",
                       (long long)i);
            return false;
        }
    }
    if (list_elem_shape(in[0], &elem)) {
        result.rank = elem.rank + 1;
        memcpy(result.dims + 1, elem.dims, (size_t)elem.rank * sizeof elem.dims[0]);
    }
    result.dims[0] = l->size;
    if (!reshape_output(out, &result, e))
        return false;
    char *dst = out->data;
    for (int64_t i = 0; i < l->size; i++) {
        size_t bytes = rt_value_bytes(l->elems[i]);
        memcpy(dst, l->elems[i]->data, bytes);
        dst += bytes;
    }
    return true;
}

RT_KERNEL(rt_k_ta_size)
{
    (void)a, (void)n, (void)e;
    rt_store_i64(AG_I32, out->data, 0, in[0]->list->size);
    return true;
}
