/*
 * handles.c - the handle table and scopes.
 *
 * An ag_tensor is (id, gen). The table maps id to a slot holding the value,
 * the slot's current generation and the scope that owns it. Freeing bumps
 * the generation, so a stale handle is detected on its next use instead of
 * reading freed memory. Slots live in fixed chunks that never move, so a
 * lookup needs no lock; creating and freeing take a mutex.
 *
 * Scopes are per thread. A tensor made while no scope is open belongs to
 * the root scope and lives until ag_free or ag_shutdown.
 */
#include "rt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK_BITS = 12, CHUNK_SIZE = 1 << CHUNK_BITS, MAX_CHUNKS = 1 << 18 };

typedef struct rt_scope rt_scope;

typedef struct slot {
    rt_value *value; /* NULL when free */
    uint32_t gen;
    rt_scope *scope; /* NULL: the root scope */
} slot;

struct rt_scope {
    rt_scope *parent;
    ag_tensor *handles;
    size_t count, cap;
};

static slot *chunks[MAX_CHUNKS];
/* One past the largest id handed out (id 0 never is). Written under the
 * lock but read without it by lookups, so it is atomic: a lookup that
 * sees an id below it also sees the chunk made for that id, which
 * take_id publishes before it bumps the counter (release / acquire). */
static _Atomic uint32_t next_id = 1;
static uint32_t *free_ids;
static size_t free_count, free_cap;
static int64_t live_count;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local rt_scope *current_scope;

static slot *slot_of(uint32_t id)
{
    slot *c = chunks[id >> CHUNK_BITS];
    return c ? &c[id & (CHUNK_SIZE - 1)] : NULL;
}

/* A free id with its slot's chunk in place; the caller holds the lock. */
static uint32_t take_id(void)
{
    if (free_count > 0)
        return free_ids[--free_count];
    uint32_t id = atomic_load_explicit(&next_id, memory_order_relaxed);
    if ((id >> CHUNK_BITS) >= MAX_CHUNKS) {
        fprintf(stderr, "agc runtime: too many live tensors\n");
        abort();
    }
    if (!chunks[id >> CHUNK_BITS])
        chunks[id >> CHUNK_BITS] = rt_xcalloc(CHUNK_SIZE, sizeof(slot));
    atomic_store_explicit(&next_id, id + 1, memory_order_release);
    return id;
}

static void scope_append(rt_scope *s, ag_tensor t)
{
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->handles = rt_xrealloc(s->handles, s->cap * sizeof *s->handles);
    }
    s->handles[s->count++] = t;
}

ag_tensor rt_handle_new(rt_value *v)
{
    pthread_mutex_lock(&table_lock);
    uint32_t id = take_id();
    slot *sl = slot_of(id);
    /* Skip 0 and the error generation when the counter wraps. */
    do
        sl->gen++;
    while (sl->gen == 0 || sl->gen == RT_ERROR_GEN);
    sl->value = v;
    sl->scope = current_scope;
    live_count++;
    ag_tensor t = {id, sl->gen};
    pthread_mutex_unlock(&table_lock);
    if (current_scope)
        scope_append(current_scope, t);
    return t;
}

/* The slot of a live handle, or NULL. */
static slot *live_slot(ag_tensor t)
{
    if (t.id == 0 || t.id >= atomic_load_explicit(&next_id, memory_order_acquire))
        return NULL;
    slot *sl = slot_of(t.id);
    return sl && sl->value && sl->gen == t.gen ? sl : NULL;
}

rt_value *rt_handle_get(ag_loc loc, ag_tensor t)
{
    slot *sl = live_slot(t);
    if (sl)
        return sl->value;
    if (t.id == 0 && t.gen == RT_ERROR_GEN) {
        if (ag_get_error_mode() != AG_ERRORS_RETURN)
            rt_report(loc, "operand is the error result of an earlier failed call");
    } else if (t.id == 0) {
        rt_report_absent(loc, "operand is an uninitialized tensor (a zero handle)");
    } else {
        rt_report_absent(loc, "tensor used after it was freed (by ag_free, ag_scope_pop "
                              "or ag_shutdown)");
    }
    return NULL;
}

rt_value *rt_handle_peek(ag_tensor t)
{
    slot *sl = live_slot(t);
    return sl ? sl->value : NULL;
}

void rt_handle_set(ag_tensor t, rt_value *v)
{
    slot *sl = live_slot(t);
    if (sl && sl->value != v) {
        rt_value_free(sl->value);
        sl->value = v;
    }
}

/* Frees the slot of a live handle; the caller holds the lock. */
static void release_locked(slot *sl, uint32_t id)
{
    rt_value_free(sl->value);
    sl->value = NULL;
    sl->scope = NULL;
    live_count--;
    if (free_count == free_cap) {
        free_cap = free_cap ? free_cap * 2 : 1024;
        free_ids = rt_xrealloc(free_ids, free_cap * sizeof *free_ids);
    }
    free_ids[free_count++] = id;
}

void ag_free_at(ag_loc loc, ag_tensor t)
{
    if (t.id == 0)
        return; /* an error tensor or the zero handle: harmless, like free(NULL) */
    pthread_mutex_lock(&table_lock);
    slot *sl = live_slot(t);
    if (sl)
        release_locked(sl, t.id);
    pthread_mutex_unlock(&table_lock);
    if (!sl)
        rt_report(loc, "ag_free: tensor already freed (by ag_free, ag_scope_pop or "
                       "ag_shutdown)");
}

void ag_scope_push(void)
{
    rt_scope *s = rt_xcalloc(1, sizeof *s);
    s->parent = current_scope;
    current_scope = s;
}

/* Frees the innermost scope and every tensor still in it. */
static void pop_scope(rt_scope *s)
{
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < s->count; i++) {
        slot *sl = live_slot(s->handles[i]);
        if (sl && sl->scope == s)
            release_locked(sl, s->handles[i].id);
    }
    pthread_mutex_unlock(&table_lock);
    current_scope = s->parent;
    free(s->handles);
    free(s);
}

void ag_scope_pop_at(ag_loc loc)
{
    if (!current_scope) {
        rt_report(loc, "ag_scope_pop without a matching ag_scope_push");
        return;
    }
    pop_scope(current_scope);
}

bool rt_handle_keep(ag_tensor t)
{
    slot *sl = live_slot(t);
    if (!sl || !current_scope || sl->scope != current_scope)
        return false;
    rt_scope *parent = current_scope->parent;
    sl->scope = parent;
    if (parent)
        scope_append(parent, t);
    return true;
}

ag_tensor ag_keep(ag_tensor t)
{
    rt_handle_keep(t);
    return t;
}

int64_t ag_live_tensors(void)
{
    pthread_mutex_lock(&table_lock);
    int64_t n = live_count;
    pthread_mutex_unlock(&table_lock);
    return n;
}

/* Frees every tensor, the scopes of this thread, and the table itself.
 * Other threads must be done with the runtime. */
void rt_handles_shutdown(void)
{
    while (current_scope)
        pop_scope(current_scope);
    pthread_mutex_lock(&table_lock);
    uint32_t end = atomic_load_explicit(&next_id, memory_order_relaxed);
    for (uint32_t id = 1; id < end; id++) {
        slot *sl = slot_of(id);
        if (sl && sl->value) {
            rt_value_free(sl->value);
            sl->value = NULL;
        }
    }
    for (size_t c = 0; c < MAX_CHUNKS && chunks[c]; c++) {
        free(chunks[c]);
        chunks[c] = NULL;
    }
    free(free_ids);
    free_ids = NULL;
    free_count = free_cap = 0;
    atomic_store_explicit(&next_id, 1, memory_order_release);
    live_count = 0;
    pthread_mutex_unlock(&table_lock);
}
