/*
 * config.c - the settings' layers and their snapshots (config.h).
 *
 * The layers are arrays of malloc'ed strings indexed by setting, under one
 * lock. Every change makes the next snapshot at once, so taking one
 * (rt_config_get) is a lock and a reference count: the function cache
 * takes one per call. A snapshot owns copies of its values; the last
 * reference frees it.
 */
#include "config.h"

#include "rt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the table */

typedef struct row {
    const char *name, *env, *def, *doc;
    rt_config_type type;
} row;

static const row rows[RT_CFG_COUNT] = {
#define RT_CONFIG(id, name, type, env, def, doc) [RT_CFG_##id] = {name, env, def, doc, type},
#include "config.def"
#undef RT_CONFIG
};

const char *rt_config_name(rt_config_id id) { return rows[id].name; }
const char *rt_config_env(rt_config_id id) { return rows[id].env; }
rt_config_type rt_config_type_of(rt_config_id id) { return rows[id].type; }
const char *rt_config_default(rt_config_id id) { return rows[id].def; }
const char *rt_config_doc(rt_config_id id) { return rows[id].doc; }

int rt_config_find(const char *name)
{
    for (int i = 0; i < RT_CFG_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0)
            return i;
    return -1;
}

const char *rt_config_source_name(rt_config_source s)
{
    static const char *const names[] = {"default", "environment", "setter", "flag"};
    return names[s];
}

/* ------------------------------------------------------------ snapshots */

struct rt_config {
    atomic_int refs;
    char *value[RT_CFG_COUNT];
    rt_config_source source[RT_CFG_COUNT];
};

const rt_config *rt_config_ref(const rt_config *c)
{
    if (c)
        atomic_fetch_add(&((rt_config *)c)->refs, 1);
    return c;
}

void rt_config_release(const rt_config *c)
{
    rt_config *m = (rt_config *)c;
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    for (int i = 0; i < RT_CFG_COUNT; i++)
        free(m->value[i]);
    free(m);
}

const char *rt_config_str(const rt_config *c, rt_config_id id)
{
    return c ? c->value[id] : rows[id].def;
}

bool rt_config_on(const rt_config *c, rt_config_id id)
{
    const char *v = rt_config_str(c, id);
    return v && *v && strcmp(v, "0") != 0;
}

rt_config_source rt_config_source_of(const rt_config *c, rt_config_id id)
{
    return c ? c->source[id] : RT_SRC_DEFAULT;
}

const rt_config *rt_config_with(const rt_config *base, rt_config_id id, const char *value)
{
    const rt_config *from = base ? rt_config_ref(base) : rt_config_get();
    rt_config *c = rt_xcalloc(1, sizeof *c);
    atomic_init(&c->refs, 1);
    for (int i = 0; i < RT_CFG_COUNT; i++) {
        c->value[i] = from->value[i] ? rt_xstrdup(from->value[i]) : NULL;
        c->source[i] = from->source[i];
    }
    free(c->value[id]);
    c->value[id] = value ? rt_xstrdup(value) : NULL;
    c->source[id] = RT_SRC_FLAG;
    rt_config_release(from);
    return c;
}

/* -------------------------------------------------------------- layers */

enum { N_LAYERS = RT_SRC_FLAG + 1 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_read;
/* layer[RT_SRC_DEFAULT] stays empty: the table holds the defaults */
static char *layer[N_LAYERS][RT_CFG_COUNT];
static rt_config *current; /* the layers merged; remade on every change */

static char *dup_or_null(const char *s) { return s ? rt_xstrdup(s) : NULL; }

/* The snapshot of the layers as they are (under lock). */
static rt_config *merge(void)
{
    rt_config *c = rt_xcalloc(1, sizeof *c);
    atomic_init(&c->refs, 1);
    for (int i = 0; i < RT_CFG_COUNT; i++) {
        const char *v = rows[i].def;
        for (int l = RT_SRC_ENV; l < N_LAYERS; l++)
            if (layer[l][i])
                v = layer[l][i], c->source[i] = (rt_config_source)l;
        c->value[i] = dup_or_null(v);
    }
    return c;
}

/* Bumped at every change of current (under lock), so that a thread's
 * cached snapshot (rt_config_get) knows when it is stale. */
static atomic_uint_fast64_t generation = 1;

static void remake(void)
{
    rt_config_release(current);
    current = merge();
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}

/* The environment's layer: an empty variable counts as set (AG_CACHE_DIR=
 * turns a setter's NULL back into "no cache" as it always did). */
static void read_env(void)
{
    for (int i = 0; i < RT_CFG_COUNT; i++) {
        free(layer[RT_SRC_ENV][i]);
        const char *v = rows[i].env ? getenv(rows[i].env) : NULL;
        layer[RT_SRC_ENV][i] = dup_or_null(v);
    }
    env_read = true;
}

static void ensure_current(void)
{
    if (!env_read) {
        read_env();
        remake();
    }
}

/*
 * Every AG_FUNCTION call asks for the settings, from as many threads as
 * serve: each thread keeps the snapshot it last got, with a reference of
 * its own, and takes the lock only when the layers changed since (the
 * generation moved). A thread that exits gives its reference back
 * (cache_key's destructor).
 */
static _Thread_local const rt_config *thread_snapshot;
static _Thread_local uint_fast64_t thread_generation;
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void release_thread_snapshot(void *c) { rt_config_release(c); }
static void make_cache_key(void) { pthread_key_create(&cache_key, release_thread_snapshot); }

static void refresh_thread_snapshot(void)
{
    pthread_once(&cache_key_once, make_cache_key);
    pthread_mutex_lock(&lock);
    ensure_current();
    const rt_config *fresh = rt_config_ref(current);
    uint_fast64_t g = atomic_load_explicit(&generation, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    rt_config_release(thread_snapshot);
    thread_snapshot = fresh;
    thread_generation = g;
    pthread_setspecific(cache_key, (void *)fresh);
}

const rt_config *rt_config_get(void)
{
    if (!thread_snapshot ||
        thread_generation != atomic_load_explicit(&generation, memory_order_acquire))
        refresh_thread_snapshot();
    return rt_config_ref(thread_snapshot);
}

static void set_layer(rt_config_source l, rt_config_id id, const char *value)
{
    pthread_mutex_lock(&lock);
    if (!env_read)
        read_env();
    free(layer[l][id]);
    layer[l][id] = dup_or_null(value);
    remake();
    pthread_mutex_unlock(&lock);
}

void rt_config_set(rt_config_id id, const char *value) { set_layer(RT_SRC_SETTER, id, value); }

void rt_config_set_flag(rt_config_id id, const char *value) { set_layer(RT_SRC_FLAG, id, value); }

void rt_config_reload_env(void)
{
    pthread_mutex_lock(&lock);
    read_env();
    remake();
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ printing */

/* "environment (AG_TARGET)", "setter", ... */
static void source_text(const rt_config *c, int i, char *buf, size_t n)
{
    rt_config_source s = rt_config_source_of(c, (rt_config_id)i);
    if (s == RT_SRC_ENV)
        snprintf(buf, n, "environment %s", rows[i].env);
    else
        snprintf(buf, n, "%s", rt_config_source_name(s));
}

void rt_config_print(const rt_config *c, FILE *out)
{
    for (int i = 0; i < RT_CFG_COUNT; i++) {
        const char *v = rt_config_str(c, (rt_config_id)i);
        char src[64];
        source_text(c, i, src, sizeof src);
        fprintf(out, "%-24s %-14s %-31s %s\n", rows[i].name, v ? v : "(unset)", src,
                rows[i].doc);
    }
}

/* "name = value (source)" for a setting that is not its default. */
static bool changed_line(const rt_config *c, int i, char *buf, size_t n)
{
    if (rt_config_source_of(c, (rt_config_id)i) == RT_SRC_DEFAULT)
        return false;
    const char *v = rt_config_str(c, (rt_config_id)i);
    char src[64];
    source_text(c, i, src, sizeof src);
    snprintf(buf, n, "%s = %s (%s)", rows[i].name, v ? v : "(unset)", src);
    return true;
}

void rt_config_print_changed(const rt_config *c, const char *prefix, FILE *out)
{
    char line[4096 + 128];
    for (int i = 0; i < RT_CFG_COUNT; i++)
        if (changed_line(c, i, line, sizeof line))
            fprintf(out, "%s%s\n", prefix, line);
}

char *rt_config_changed_text(const rt_config *c)
{
    char line[4096 + 128];
    size_t len = 0;
    char *text = rt_xcalloc(1, 1);
    for (int i = 0; i < RT_CFG_COUNT; i++) {
        if (!changed_line(c, i, line, sizeof line))
            continue;
        size_t n = strlen(line);
        text = rt_xrealloc(text, len + n + 2);
        if (len)
            text[len++] = '\n';
        memcpy(text + len, line, n + 1);
        len += n;
    }
    return text;
}
