/*
 * value.c - tensor values and their storage.
 *
 * A value owns one reference to its storage; aliases (reshape, squeeze,
 * expand_dims) share the storage and bump the count. Data is 64-byte
 * aligned so that kernels and generated code can use aligned vector loads.
 */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Storage of `bytes`, or NULL when the memory is not there. */
static rt_storage *storage_new(size_t bytes)
{
    rt_storage *s = rt_xmalloc(sizeof *s);
    s->data = rt_data_alloc(bytes, &s->capacity);
    if (!s->data) {
        free(s);
        return NULL;
    }
    s->bytes = bytes;
    atomic_init(&s->refs, 1);
    return s;
}

static void storage_release(rt_storage *s)
{
    if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
        rt_data_free(s->data, s->capacity);
        free(s);
    }
}

rt_value *rt_value_try_new(ag_dtype dt, const ag_shape *s, rt_err *e)
{
    if (!rt_shape_size_ok(s, dt, e))
        return NULL;
    rt_value *v = rt_xcalloc(1, sizeof *v);
    v->kind = RT_CONCRETE;
    v->dtype = dt;
    v->shape = *s;
    v->numel = rt_shape_numel(s);
    /* A list: the kernel attaches it. An unknown shape (a tensor-array
     * read before the element shape is known): the kernel sizes it. */
    if (dt == RT_LIST || v->numel < 0)
        return v;
    /* Cannot overflow: the size check bounds it by RT_MAX_TENSOR_BYTES. */
    size_t bytes = (size_t)v->numel * rt_dtype_size(dt);
    v->storage = storage_new(bytes);
    if (!v->storage) {
        char buf[192];
        rt_err_set(e, "out of memory allocating %zu bytes for a %s%s tensor", bytes,
                   ag_dtype_name(dt), rt_shape_str(s, buf, sizeof buf));
        free(v);
        return NULL;
    }
    v->data = v->storage->data;
    return v;
}

rt_value *rt_value_new(ag_dtype dt, const ag_shape *s)
{
    rt_err e;
    rt_value *v = rt_value_try_new(dt, s, &e);
    if (!v) {
        /* Only small internal values come here; a user's tensors take
         * rt_value_try_new's failing path. */
        fprintf(stderr, "agc runtime: %s\n", e.msg);
        abort();
    }
    return v;
}

rt_value *rt_value_alias(const rt_value *src, const ag_shape *s)
{
    rt_value *v = rt_xcalloc(1, sizeof *v);
    *v = *src;
    v->shape = *s;
    v->tape_id = 0; /* a new value to the tapes: the op making it is recorded */
    v->numel = rt_shape_numel(s);
    if (v->storage)
        atomic_fetch_add(&v->storage->refs, 1);
    if (v->list)
        atomic_fetch_add(&v->list->refs, 1);
    return v;
}

rt_value *rt_value_zeros(ag_dtype dt, const ag_shape *s)
{
    rt_value *v = rt_value_new(dt, s);
    if (v->data)
        memset(v->data, 0, rt_value_bytes(v));
    return v;
}

rt_value *rt_value_scalar(ag_dtype dt, double x)
{
    rt_value *v = rt_value_new(dt, &AG_SCALAR);
    rt_store_f64(dt, v->data, 0, x);
    return v;
}

rt_value *rt_value_new_list(ag_dtype elem, int64_t size, bool dynamic)
{
    ag_shape unknown = {.rank = -1};
    rt_value *v = rt_value_new(RT_LIST, &AG_SCALAR);
    rt_list *l = rt_xcalloc(1, sizeof *l);
    atomic_init(&l->refs, 1);
    l->elem_dtype = elem;
    l->dynamic_size = dynamic;
    l->size = size;
    l->cap = size > 4 ? size : 4;
    l->elems = rt_xcalloc((size_t)l->cap, sizeof *l->elems);
    v->list = l;
    v->elem_dtype = elem;
    v->shape = unknown; /* a list value's shape is its element shape */
    v->numel = 0;
    return v;
}

static void list_release(rt_list *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    for (int64_t i = 0; i < l->size; i++)
        rt_value_free(l->elems[i]);
    free(l->elems);
    free(l);
}

void rt_value_free(rt_value *v)
{
    if (!v)
        return;
    storage_release(v->storage);
    list_release(v->list);
    free(v);
}

size_t rt_value_bytes(const rt_value *v)
{
    return v->numel > 0 ? (size_t)v->numel * rt_dtype_size(v->dtype) : 0;
}
