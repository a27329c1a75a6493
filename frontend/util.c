/*
 * util.c - byte buffers, the frontend's arena, pointer vectors, and the
 * internal-error exit, and agc -v's steps.
 */
#include "fe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "agc: out of memory\n");
        exit(2);
    }
    return q;
}

/* ------------------------------------------------------------- buffers */

static void reserve(fe_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void fe_buf_add(fe_buf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void fe_buf_puts(fe_buf *b, const char *s)
{
    fe_buf_add(b, s, strlen(s));
}

void fe_buf_putc(fe_buf *b, char c)
{
    fe_buf_add(b, &c, 1);
}

void fe_buf_vprintf(fe_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        FE_BUG("bad format '%s'", fmt);
    reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void fe_buf_printf(fe_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void fe_buf_free(fe_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* --------------------------------------------------------------- arena */

/* Chunks of at least 64 KiB; a large request gets a chunk of its own. */
typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

static chunk *arena;

void *fe_alloc(size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!arena || arena->used + n > arena->size) {
        size_t size = n > 65536 ? n : 65536;
        chunk *c = xrealloc(NULL, sizeof(chunk) + size);
        c->next = arena;
        c->used = 0;
        c->size = size;
        arena = c;
    }
    void *p = (char *)arena->data + arena->used;
    arena->used += n;
    memset(p, 0, n);
    return p;
}

void fe_arena_free(void)
{
    while (arena) {
        chunk *next = arena->next;
        free(arena);
        arena = next;
    }
}

fe_arena_state fe_arena_save(void)
{
    fe_arena_state st = {arena, arena ? arena->used : 0};
    return st;
}

/* Chunks are a stack, newest first: the ones made since `st` go, and the
 * chunk that was newest then gets back its old fill level. */
void fe_arena_restore(fe_arena_state st)
{
    while (arena && arena != st.chunk) {
        chunk *next = arena->next;
        free(arena);
        arena = next;
    }
    if (arena)
        arena->used = st.used;
}

char *fe_strndup(const char *s, size_t n)
{
    char *p = fe_alloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *fe_strdup(const char *s)
{
    return fe_strndup(s, strlen(s));
}

char *fe_format(const char *fmt, ...)
{
    fe_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    fe_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = fe_strndup(b.data ? b.data : "", b.len);
    fe_buf_free(&b);
    return s;
}

void fe_vec_push(fe_vec *v, void *item)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = fe_alloc((size_t)cap * sizeof *items);
        if (v->n)
            memcpy(items, v->items, (size_t)v->n * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = item;
}

const char *fe_c_string(const char *s)
{
    fe_buf b = {0};
    fe_buf_putc(&b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fe_buf_putc(&b, '\\');
        if (*s == '\n')
            fe_buf_puts(&b, "\\n");
        else
            fe_buf_putc(&b, *s);
    }
    fe_buf_putc(&b, '"');
    char *r = fe_strdup(b.data);
    fe_buf_free(&b);
    return r;
}

/* ----------------------------------------------------------- references */

void fe_refs_add(fe_refs *r, fe_var *v, fe_range at, int mode)
{
    for (int i = 0; i < r->n; i++) {
        if (r->items[i].var == v && r->items[i].at.begin == at.begin) {
            r->items[i].mode |= mode;
            return;
        }
    }
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        fe_ref *items = fe_alloc((size_t)cap * sizeof *items);
        if (r->n)
            memcpy(items, r->items, (size_t)r->n * sizeof *items);
        r->items = items;
        r->cap = cap;
    }
    r->items[r->n++] = (fe_ref){v, at, mode};
}

void fe_refs_merge(fe_refs *into, const fe_refs *from)
{
    for (int i = 0; i < from->n; i++)
        fe_refs_add(into, from->items[i].var, from->items[i].at, from->items[i].mode);
}

int fe_refs_mode(const fe_refs *r, const fe_var *v)
{
    int mode = 0;
    for (int i = 0; i < r->n; i++)
        if (r->items[i].var == v)
            mode |= r->items[i].mode;
    return mode;
}

/* -------------------------------------------------------- internal bugs */

bool fe_verbose;

void fe_step(const char *fmt, ...)
{
    if (!fe_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("agc: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *fe_join_args(const char *const *argv, int argc)
{
    fe_buf b = {0};
    for (int i = 0; i < argc; i++) {
        bool quote = !*argv[i] || strpbrk(argv[i], " \t\"'$") != NULL;
        fe_buf_printf(&b, quote ? "%s'%s'" : "%s%s", i ? " " : "", argv[i]);
    }
    const char *r = fe_strdup(b.data ? b.data : "");
    fe_buf_free(&b);
    return r;
}

void fe_internal_error(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "agc: internal error at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nplease report this bug with the input file\n");
    va_end(ap);
    abort();
}
