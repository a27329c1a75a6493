/*
 * gen.c - lowers the staged control flow of one AG_FUNCTION.
 *
 * Requires: fe_analyze. Produces the body of `static T f__staged(...)` and,
 * in `lifted`, the state structs and lifted functions it calls.
 *
 * A staged construct becomes a *region*: one or two *parts* (then/else, or
 * a loop's condition and body), each lifted into a static function over a
 * state struct `struct f__<kind>_<line>`. A part's function copies the
 * variables it uses from the struct into locals of the same names, runs the
 * user's statements verbatim, and writes back the *carried* variables: the
 * tensors assigned inside and live after (or read by a later iteration).
 * Those are passed to ag_if_at / ag_while_at as `vars`, pointers into the
 * struct.
 *
 * break, continue and return inside staged control flow become boolean
 * tensor flags. After a statement that may set a flag, the rest of the
 * statement list is either moved into the branch of an if that does not
 * exit (AutoGraph's return/break restructuring), or guarded by a staged
 * `if (!flag)`; a staged loop's condition becomes `!flags && cond`.
 * Conditions combining ag_bool with &&, || and ?: stay lazy: `a && b`
 * evaluates b in a staged if taken only when a holds.
 */
#include "fe.h"

#include <stdlib.h>
#include <string.h>

/* The construct and temporary names in use, hashed: a condition of
 * 20,000 `&&` on one line names 20,000 constructs "f__cond_3_<k>", and
 * looking each one up among all the others would be quadratic. */
typedef struct name_slot {
    const char *name; /* NULL: free */
    int next;         /* the suffix to try next for this name as a base */
} name_slot;

typedef struct name_set {
    name_slot *slots;
    unsigned cap, n; /* cap: a power of two, or 0 */
} name_set;

typedef struct gen {
    fe_func *fn;
    const fe_source *src;
    fe_out *lifted;
    name_set names;
    fe_vec reported; /* fe_var*: C scalars already reported */
    /* Statements moved after an exit (into a branch, or a guard) are
     * preceded by the user's text between them and that exit (comments,
     * #define...): lead_from is where it starts, lead_stmt the first of
     * them. */
    const fe_stmt *lead_stmt;
    unsigned lead_from;
    /* The statement whose expressions are being lowered: a tensor that a
     * lazily evaluated operand assigns is carried out of its staged if
     * when this statement, or what follows it, reads it. NULL: carried. */
    const fe_stmt *stmt;
} gen;

/* The contents of one lifted function. */
typedef struct part {
    fe_stmt **stmts; /* user statements */
    int n;
    bool loop_body; /* stmts[0] is a loop body: its continue ends just the body */
    fe_stmt *loop;  /* loop body: the loop, for its continue flag */
    fe_expr *extra; /* FOR: the increment, after the statements */
    fe_cond *cond;  /* a condition: assigned to target, or returned */
    fe_expr *value; /* an expression assigned to target */
    fe_var *target;
    int line;
    fe_refs refs;
    const fe_stmt *lead_stmt; /* moved statements: see gen.lead_stmt */
    unsigned lead_from;
} part;

typedef struct region {
    const char *name;  /* f__if_12 */
    const char *local; /* ag__s_if_12: the state at the call site */
    fe_range at;       /* the construct's keyword, for notes */
    part *parts[2];
    int n_parts;
    fe_vec fields;  /* fe_var*: outer variables the parts use */
    fe_vec carried; /* fe_var*: the fields passed as vars */
    fe_stmt *loop;  /* loops: its break flag starts false */
} region;

/* `lifted`: the code runs inside a lifted function, where every return is
 * lowered to the <return value> and <returned> flags. */
static void gen_stmt(gen *g, fe_out *o, fe_stmt *s, bool lifted);
static void gen_list(gen *g, fe_out *o, fe_stmt **list, int n, bool lifted, bool loop_body,
                     fe_expr *extra);
static const char *lower(gen *g, fe_out *o, fe_cond *c, bool want_bool, const char *ind);
static void pre_terns(gen *g, fe_out *o, const fe_expr *e, const char *ind);

/* ------------------------------------------------------------- helpers */

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static name_slot *name_slot_of(const name_set *set, const char *name)
{
    unsigned i = hash_name(name) & (set->cap - 1);
    while (set->slots[i].name && strcmp(set->slots[i].name, name) != 0)
        i = (i + 1) & (set->cap - 1);
    return &set->slots[i];
}

static void name_grow(name_set *set)
{
    name_set old = *set;
    set->cap = old.cap ? old.cap * 2 : 64;
    set->slots = fe_alloc(set->cap * sizeof *set->slots); /* the arena frees the old */
    for (unsigned i = 0; i < old.cap; i++)
        if (old.slots[i].name)
            *name_slot_of(set, old.slots[i].name) = old.slots[i];
}

/* The slot of name, which is added (with suffix 2 next) when absent. */
static name_slot *name_add(name_set *set, const char *name, bool *added)
{
    if (2 * (set->n + 1) > set->cap)
        name_grow(set);
    name_slot *sl = name_slot_of(set, name);
    *added = !sl->name;
    if (*added) {
        *sl = (name_slot){name, 2};
        set->n++;
    }
    return sl;
}

/* "f__if_12", or "f__if_12_<k>" with the first k not yet used. */
static const char *unique(gen *g, const char *kind, int line)
{
    const char *base = fe_format("%s__%s_%d", g->fn->name, kind, line);
    bool added;
    name_slot *b = name_add(&g->names, base, &added);
    if (added)
        return base;
    for (;;) {
        const char *name = fe_format("%s_%d", base, b->next++);
        if (name_add(&g->names, name, &added), added)
            return name;
        b = name_slot_of(&g->names, base); /* name_add may have moved it */
    }
}

/* "ag__<suffix>" for a construct named "<fn>__<suffix>". */
static const char *local_name(gen *g, const char *prefix, const char *name)
{
    return fe_format("ag__%s%s", prefix, name + strlen(g->fn->name) + 2);
}

static const char *indent_of(gen *g, unsigned off)
{
    int line = fe_source_line(g->src, off);
    unsigned b = g->src->lines[line - 1], e = b;
    while (e < g->src->len && (g->src->text[e] == ' ' || g->src->text[e] == '\t'))
        e++;
    return fe_strndup(g->src->text + b, e - b);
}

static const char *loc_text(gen *g, int line)
{
    return fe_format("(ag_loc){%s, %d}", fe_c_string(g->src->path), line);
}

static fe_var *temp_var(gen *g, const char *name, const char *display)
{
    fe_var *v = fe_alloc(sizeof *v);
    v->name = name;
    v->display = display;
    v->tclass = FE_TY_TENSOR;
    v->type_name = "ag_tensor";
    v->field_decl = fe_format("ag_tensor %s", name);
    v->local_decl = v->field_decl;
    v->synthetic = true;
    fe_vec_push(&g->fn->vars, v);
    return v;
}

/* ---------------------------------------------------------- user text */

typedef struct hole {
    fe_range r;
    const char *text;
} hole;

static int hole_cmp(const void *a, const void *b)
{
    const hole *x = a, *y = b;
    return x->r.begin < y->r.begin ? -1 : x->r.begin > y->r.begin;
}

#define MAX_HOLES 64 /* rewritten pieces in one statement */

/* Adds the staged ?: of e (replaced by their temporaries) to h[n...]. */
static int add_terns(hole *h, int n, const fe_expr *e)
{
    for (int i = 0; e && i < e->terns.n; i++) {
        const fe_ternary *t = e->terns.items[i];
        if (n == MAX_HOLES) {
            fe_error(t->range, "too many staged '?:' in one statement; split it");
            break;
        }
        h[n++] = (hole){t->range, t->temp ? t->temp : "/* ?: */"};
    }
    return n;
}

/* User text with holes replaced (ternaries by their temporaries). */
static void copy_holes(fe_out *o, fe_range r, hole *h, int n)
{
    qsort(h, (size_t)n, sizeof *h, hole_cmp);
    unsigned pos = r.begin;
    for (int i = 0; i < n; i++) {
        if (h[i].r.begin < pos || h[i].r.end > r.end)
            continue;
        fe_out_user(o, (fe_range){pos, h[i].r.begin});
        fe_out_inline(o, h[i].text);
        pos = h[i].r.end;
    }
    fe_out_user(o, (fe_range){pos, r.end});
}

/* The text of an expression on one line: ternaries replaced, comments
 * dropped, newlines made spaces. */
static const char *expr_text(gen *g, const fe_expr *e)
{
    hole h[MAX_HOLES];
    int n = add_terns(h, 0, e);
    qsort(h, (size_t)n, sizeof *h, hole_cmp);
    fe_buf b = {0};
    const char *t = g->src->text;
    unsigned off = e->range.begin;
    int k = 0;
    while (off < e->range.end) {
        if (k < n && off == h[k].r.begin) {
            fe_buf_puts(&b, h[k].text);
            off = h[k++].r.end;
            continue;
        }
        unsigned next = fe_skip_literal(g->src, off);
        if (next != off && t[off] == '/') {
            fe_buf_putc(&b, ' ');
            off = next;
        } else if (next != off) {
            fe_buf_add(&b, t + off, next - off);
            off = next;
        } else if (t[off] == '\n' || t[off] == '\r' || t[off] == '\t' || t[off] == ' ') {
            if (b.len && b.data[b.len - 1] != ' ') /* runs of space make one */
                fe_buf_putc(&b, ' ');
            off++;
        } else {
            fe_buf_putc(&b, t[off++]);
        }
    }
    char *r = fe_strdup(b.data ? b.data : "");
    fe_buf_free(&b);
    return r;
}

/* ------------------------------------------------------------- regions */

static void part_refs(part *pt)
{
    pt->refs = (fe_refs){0};
    for (int i = 0; i < pt->n; i++)
        fe_stmt_refs(pt->stmts[i], &pt->refs);
    if (pt->extra)
        fe_refs_merge(&pt->refs, &pt->extra->refs);
    fe_cond_refs(pt->cond, &pt->refs);
    if (pt->value)
        fe_refs_merge(&pt->refs, &pt->value->refs);
    if (pt->target)
        fe_refs_add(&pt->refs, pt->target, (fe_range){0, 0}, FE_WRITE);
}

static bool declared_in(const region *R, const fe_var *v)
{
    for (int p = 0; p < R->n_parts; p++)
        for (int i = 0; i < R->parts[p]->n; i++) {
            fe_range r = R->parts[p]->stmts[i]->range;
            if (v->decl_off >= r.begin && v->decl_off < r.end)
                return true;
        }
    return false;
}

static bool vec_has(const fe_vec *v, const void *x)
{
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == x)
            return true;
    return false;
}

static int region_mode(const region *R, const fe_var *v)
{
    int m = 0;
    for (int p = 0; p < R->n_parts; p++)
        m |= fe_refs_mode(&R->parts[p]->refs, v);
    return m;
}

static const fe_ref *first_write(const region *R, const fe_var *v)
{
    for (int p = 0; p < R->n_parts; p++)
        for (int i = 0; i < R->parts[p]->refs.n; i++)
            if (R->parts[p]->refs.items[i].var == v && (R->parts[p]->refs.items[i].mode & FE_WRITE))
                return &R->parts[p]->refs.items[i];
    return NULL;
}

/* The ag_scalar call that makes a tensor of a C scalar's value. */
static const char *scalar_maker(const fe_var *v)
{
    if (v->tclass == FE_TY_FLOAT)
        return v->bits == 32 ? "ag_scalar_f32" : "ag_scalar_f64";
    if (v->tclass == FE_TY_INT)
        return v->bits == 1 ? "ag_scalar_bool" : v->bits > 32 ? "ag_scalar_i64" : "ag_scalar_i32";
    return NULL;
}

/* `int steps = 0` -> `ag_tensor steps = ag_scalar_i32(0)`: a fix-it that
 * compiles (only the declaration: its uses are the user's to change).
 * None for pointers and structs, nor when the type is shared with other
 * declarators (`int a = 0, steps = 0`). */
static bool tensor_decl_fixit(gen *g, const fe_var *v, fe_fixit *fix)
{
    const char *maker = scalar_maker(v);
    if (!maker || v->is_param || v->type_range.end <= v->type_range.begin)
        return false;
    unsigned after = fe_skip_space(g->src, v->has_init ? v->init_range.end : v->decl_range.end);
    if (after < g->src->len && g->src->text[after] == ',')
        return false; /* more declarators share the type */
    const char *t = g->src->text;
    fe_range r = v->type_range;
    if (!v->has_init) { /* through the declarator: "ag_tensor count" */
        unsigned end = v->decl_range.end;
        if (end < r.end || end > v->decl_off + strlen(v->name))
            return false;
        fix->range = (fe_range){r.begin, end};
        fix->text = fe_format("ag_tensor%.*s", (int)(end - r.end), t + r.end);
        return true;
    }
    fe_range in = v->init_range;
    if (in.end <= in.begin || in.begin < r.end)
        return false;
    r.end = in.end;
    fix->range = r;
    fix->text = fe_format("ag_tensor%.*s%s(%.*s)", (int)(in.begin - v->type_range.end),
                          t + v->type_range.end, maker, (int)(in.end - in.begin), t + in.begin);
    return true;
}

static void report_scalar(gen *g, const region *R, fe_var *v)
{
    if (v->reported || vec_has(&g->reported, v))
        return;
    fe_vec_push(&g->reported, v);
    const fe_ref *w = first_write(R, v);
    fe_error(w ? w->at : R->at,
             "'%s' is a C '%s' assigned inside staged control flow and used after it; a C "
             "variable keeps the one value it has while tracing: make it an ag_tensor",
             v->name, v->type_name);
    fe_note(R->at, "the staged control flow is here");
    if (v->is_param || v->type_range.end <= v->type_range.begin)
        return;
    fe_fixit fix;
    if (tensor_decl_fixit(g, v, &fix))
        fe_note_fix(v->type_range, fix, "declare '%s' as an ag_tensor", v->name);
    else
        fe_note(v->type_range, "declare '%s' as an ag_tensor", v->name);
}

/* Fields in the order of the variables' declarations. */
static int by_declaration(const void *a, const void *b)
{
    const fe_var *x = *(fe_var *const *)a, *y = *(fe_var *const *)b;
    if (x->decl_off != y->decl_off)
        return x->decl_off < y->decl_off ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether v, assigned in a lazily evaluated operand of g->stmt, is read
 * later: by the statement itself (an if's branches, a loop's next
 * iteration) or after it. */
static bool lazy_live(const gen *g, const fe_var *v)
{
    if (!g->stmt)
        return true;
    fe_refs r = {0};
    fe_stmt_refs(g->stmt, &r);
    return (fe_refs_mode(&r, v) & FE_READ) || fe_live_after(v, g->stmt);
}

/* Fields and carried variables. `after` is the statement control reaches
 * the region's end from (ifs), or `loop`; both NULL for the staged if of
 * a lazily evaluated operand (g->stmt). */
static void region_vars(gen *g, region *R, const fe_stmt *after, const fe_stmt *loop)
{
    for (int p = 0; p < R->n_parts; p++) {
        part_refs(R->parts[p]);
        const fe_refs *r = &R->parts[p]->refs;
        for (int i = 0; i < r->n; i++) {
            fe_var *v = r->items[i].var;
            if (!declared_in(R, v) && !vec_has(&R->fields, v))
                fe_vec_push(&R->fields, v);
        }
    }
    if (R->fields.n > 1)
        qsort(R->fields.items, (size_t)R->fields.n, sizeof *R->fields.items, by_declaration);
    for (int i = 0; i < R->fields.n; i++) {
        fe_var *v = R->fields.items[i];
        if (!(region_mode(R, v) & FE_WRITE))
            continue;
        bool live = v->synthetic || (loop    ? fe_live_after(v, loop) || fe_loop_exposed(v, loop)
                                     : after ? fe_live_after(v, after)
                                             : lazy_live(g, v));
        if (!live)
            continue;
        if (!fe_is_carriable(v)) {
            report_scalar(g, R, v);
            continue;
        }
        fe_vec_push(&R->carried, v);
    }
}

static void emit_struct(gen *g, const region *R)
{
    if (!R->fields.n)
        return;
    fe_out_gen(g->lifted, "struct %s {\n", R->name);
    for (int i = 0; i < R->fields.n; i++)
        fe_out_gen(g->lifted, "    %s;\n", ((fe_var *)R->fields.items[i])->field_decl);
    fe_out_gen(g->lifted, "};\n\n");
}

static void emit_part(gen *g, fe_out *o, part *pt)
{
    const char *ind = "    ";
    if (pt->n || pt->extra) {
        gen_list(g, o, pt->stmts, pt->n, true, pt->loop_body, pt->extra);
    } else if (pt->value) {
        pre_terns(g, o, pt->value, ind); /* ternaries nested in the value */
        fe_out_at(o, pt->line, "%s%s = %s;", ind, pt->target->name, expr_text(g, pt->value));
    } else if (pt->cond) {
        const char *t = lower(g, o, pt->cond, pt->target != NULL, ind);
        if (pt->target)
            fe_out_at(o, pt->line, "%s%s = %s;", ind, pt->target->name, t);
        else
            fe_out_at(o, pt->line, "%sreturn %s;", ind, t);
    }
}

/* One lifted function: static void name(void *ag__state), or a loop's
 * condition returning ag_tensor. */
static void lift(gen *g, const region *R, part *pt, const char *fname, bool is_cond)
{
    fe_out o;
    fe_out_init(&o, g->src);
    fe_out_gen(&o, "static %s %s(void *ag__state)\n{\n", is_cond ? "ag_tensor" : "void", fname);
    fe_vec used = {0};
    for (int i = 0; i < R->fields.n; i++)
        if (fe_refs_mode(&pt->refs, R->fields.items[i]))
            fe_vec_push(&used, R->fields.items[i]);
    if (!used.n) {
        fe_out_gen(&o, "    (void)ag__state;\n");
    } else {
        fe_out_gen(&o, "    struct %s *ag__s = ag__state;\n", R->name);
        for (int i = 0; i < used.n; i++) {
            fe_var *v = used.items[i];
            fe_out_gen(&o, "    %s = ag__s->%s;\n", v->local_decl, v->name);
        }
    }
    fe_var *cont = pt->loop ? pt->loop->cont : NULL;
    if (cont)
        fe_out_gen(&o, "    ag_tensor %s = ag_scalar_bool(false);\n", cont->name);
    const fe_stmt *saved_stmt = g->lead_stmt;
    unsigned saved_from = g->lead_from;
    g->lead_stmt = pt->lead_stmt;
    g->lead_from = pt->lead_from;
    emit_part(g, &o, pt);
    g->lead_stmt = saved_stmt;
    g->lead_from = saved_from;
    if (!is_cond) {
        for (int i = 0; i < used.n; i++) {
            fe_var *v = used.items[i];
            if (!(fe_refs_mode(&pt->refs, v) & FE_WRITE))
                continue;
            if (vec_has(&R->carried, v))
                fe_out_gen(&o, "    ag__s->%s = %s;\n", v->name, v->name);
            else
                fe_out_gen(&o, "    (void)%s;\n", v->name);
        }
        if (cont)
            fe_out_gen(&o, "    (void)%s;\n", cont->name);
    }
    fe_out_gen(&o, "}\n\n");
    fe_out_append(g->lifted, &o);
    fe_buf_free(&o.buf);
}

/* The state, the vars and names arrays, and the write-back of the call
 * `call` (printed on a line mapped to the user's `line`, after `first`
 * when not NULL). */
static void call_site(gen *g, fe_out *o, const region *R, const char *ind, int line,
                      const char *first, const char *call)
{
    if (R->fields.n) {
        fe_buf init = {0};
        for (int i = 0; i < R->fields.n; i++) {
            fe_var *v = R->fields.items[i];
            bool starts_false = R->loop && v == R->loop->brk;
            fe_buf_printf(&init, "%s.%s = %s", i ? ", " : "", v->name,
                          starts_false ? "ag_scalar_bool(false)" : v->name);
        }
        fe_out_gen(o, "%sstruct %s %s = {%s};\n", ind, R->name, R->local, init.data);
        fe_buf_free(&init);
    }
    if (R->carried.n) {
        fe_buf vars = {0}, names = {0};
        for (int i = 0; i < R->carried.n; i++) {
            fe_var *v = R->carried.items[i];
            const char *sep = i ? ", " : "";
            if (v->tclass == FE_TY_STRUCT) {
                for (int f = 0; f < g->fn->n_ret_fields; f++) {
                    fe_buf_printf(&vars, "%s&%s.%s.%s", f || i ? ", " : "", R->local, v->name,
                                  g->fn->ret_fields[f]);
                    fe_buf_printf(&names, "%s\"%s.%s\"", f || i ? ", " : "", v->display,
                                  g->fn->ret_fields[f]);
                }
                continue;
            }
            fe_buf_printf(&vars, "%s&%s.%s%s", sep, R->local, v->name,
                          v->tclass == FE_TY_TENSOR_ARRAY ? ".list" : "");
            fe_buf_printf(&names, "%s%s", sep, fe_c_string(v->display));
        }
        fe_out_gen(o, "%sag_tensor *%s_vars[] = {%s};\n", ind, R->local, vars.data);
        fe_out_gen(o, "%sstatic const char *const %s_names[] = {%s};\n", ind, R->local, names.data);
        fe_buf_free(&vars);
        fe_buf_free(&names);
    }
    if (first)
        fe_out_at(o, line, "%s%s", ind, first);
    fe_out_at(o, line, "%s%s", ind, call);
    for (int i = 0; i < R->carried.n; i++) {
        fe_var *v = R->carried.items[i];
        if (!(R->loop && v == R->loop->brk))
            fe_out_gen(o, "%s%s = %s.%s;\n", ind, v->name, R->local, v->name);
    }
}

static int n_vars(gen *g, const region *R)
{
    int n = 0;
    for (int i = 0; i < R->carried.n; i++)
        n += ((fe_var *)R->carried.items[i])->tclass == FE_TY_STRUCT ? g->fn->n_ret_fields : 1;
    return n;
}

static const char *vars_args(gen *g, const region *R)
{
    if (!R->carried.n)
        return "0, NULL, NULL";
    return fe_format("%d, %s_vars, %s_names", n_vars(g, R), R->local, R->local);
}

static const char *state_arg(const region *R)
{
    return R->fields.n ? fe_format("&%s", R->local) : "NULL";
}

static part *new_part(void)
{
    return fe_alloc(sizeof(part));
}

/* A staged if over the prepared parts (then, optional else); pred is the
 * condition's text, already evaluated into the current function. */
static void staged_if(gen *g, fe_out *o, region *R, const fe_stmt *after, int line, const char *ind,
                      const char *pred)
{
    region_vars(g, R, after, NULL);
    emit_struct(g, R);
    const char *then_fn = fe_format("%s_then", R->name);
    lift(g, R, R->parts[0], then_fn, false);
    const char *else_fn = "NULL";
    if (R->n_parts > 1) {
        else_fn = fe_format("%s_else", R->name);
        lift(g, R, R->parts[1], else_fn, false);
    }
    call_site(g, o, R, ind, line, NULL,
              fe_format("ag_if_at(%s, %s, %s, %s, %s, %s);", loc_text(g, line), pred,
                        vars_args(g, R), then_fn, else_fn, state_arg(R)));
}

static region *new_region(gen *g, const char *name, fe_range at)
{
    region *R = fe_alloc(sizeof *R);
    R->name = name;
    R->local = local_name(g, "s_", R->name);
    R->at = at;
    return R;
}

/* ---------------------------------------------------------- conditions */

static bool is_c_leaf(const fe_cond *c)
{
    return c->kind == FE_COND_C;
}

/* a && b, a || b, a ? b : c with staged parts: a temporary assigned lazily.
 * A C first operand picks the branch at trace time; a staged one becomes a
 * staged if that evaluates the rest only when needed. */
static const char *lower_lazy(gen *g, fe_out *o, fe_cond *c, const char *ind)
{
    const char *kind = c->kind == FE_COND_AND ? "and" : c->kind == FE_COND_OR ? "or" : "select";
    const char *cname = unique(g, kind, c->line);
    const char *tmp = local_name(g, "", cname);
    const char *ind2 = fe_format("%s    ", ind);
    if (is_c_leaf(c->a)) {
        pre_terns(g, o, c->a->e, ind);
        fe_out_at(o, c->line, "%sag_tensor %s;", ind, tmp);
        fe_out_at(o, c->line, "%sif (%s) {", ind, expr_text(g, c->a->e));
        if (c->kind == FE_COND_OR)
            fe_out_gen(o, "%s%s = ag_scalar_bool(true);\n", ind2, tmp);
        else
            fe_out_gen(o, "%s%s = %s;\n", ind2, tmp, lower(g, o, c->b, true, ind2));
        fe_out_gen(o, "%s} else {\n", ind);
        if (c->kind == FE_COND_AND)
            fe_out_gen(o, "%s%s = ag_scalar_bool(false);\n", ind2, tmp);
        else
            fe_out_gen(o, "%s%s = %s;\n", ind2, tmp,
                       lower(g, o, c->kind == FE_COND_OR ? c->b : c->c, true, ind2));
        fe_out_gen(o, "%s}\n", ind);
        return tmp;
    }
    const char *display = c->kind == FE_COND_AND ? "<&&>" : c->kind == FE_COND_OR ? "<||>" : "<?:>";
    fe_var *t = temp_var(g, tmp, display);
    region *R = new_region(g, cname, c->range);
    part *p1 = new_part(), *p2 = NULL;
    p1->cond = c->b;
    p1->target = t;
    p1->line = c->b->line;
    R->parts[R->n_parts++] = p1;
    const char *pred;
    if (c->kind == FE_COND_SELECT) {
        p2 = new_part();
        p2->cond = c->c;
        p2->target = t;
        p2->line = c->c->line;
        R->parts[R->n_parts++] = p2;
        pred = lower(g, o, c->a, false, ind);
        fe_out_at(o, c->line, "%sag_tensor %s = {0, 0};", ind, tmp);
    } else {
        fe_out_at(o, c->line, "%sag_tensor %s = %s;", ind, tmp, lower(g, o, c->a, true, ind));
        pred = c->kind == FE_COND_AND ? tmp : fe_format("ag_logical_not(%s)", tmp);
    }
    fe_out_gen(o, "%s{\n", ind);
    staged_if(g, o, R, NULL, c->line, ind2, pred);
    fe_out_gen(o, "%s}\n", ind);
    return tmp;
}

/* The text of a tensor holding condition c, after emitting into o what
 * computes it. want_bool: the tensor must have dtype bool (ag_bool(e)
 * accepts any dtype: non-zero is true). */
static const char *lower(gen *g, fe_out *o, fe_cond *c, bool want_bool, const char *ind)
{
    switch (c->kind) {
    case FE_COND_BOOL: {
        pre_terns(g, o, c->e, ind);
        const char *t = expr_text(g, c->e);
        return want_bool && !c->is_bool ? fe_format("ag_not_equal(%s, 0)", t) : t;
    }
    case FE_COND_TENSOR:
        return c->text;
    case FE_COND_C:
        pre_terns(g, o, c->e, ind);
        return fe_format("ag_scalar_bool(%s)", expr_text(g, c->e));
    case FE_COND_NOT:
        if (is_c_leaf(c->a)) {
            pre_terns(g, o, c->a->e, ind);
            return fe_format("ag_scalar_bool(!(%s))", expr_text(g, c->a->e));
        }
        return fe_format("ag_logical_not(%s)", lower(g, o, c->a, true, ind));
    case FE_COND_AND:
    case FE_COND_OR:
    case FE_COND_SELECT:
        return lower_lazy(g, o, c, ind);
    }
    FE_BUG("bad condition kind %d", (int)c->kind);
}

/* Staged ?: inside e: each becomes a temporary set by a staged if. */
static void pre_terns(gen *g, fe_out *o, const fe_expr *e, const char *ind)
{
    for (int i = 0; e && i < e->terns.n; i++) {
        fe_ternary *t = e->terns.items[i];
        const char *cname = unique(g, "cond", t->line);
        t->temp = local_name(g, "", cname);
        fe_var *tv = temp_var(g, t->temp, "<?: value>");
        region *R = new_region(g, cname, t->range);
        part *p1 = new_part(), *p2 = new_part();
        p1->value = t->then_e;
        p2->value = t->else_e;
        p1->target = p2->target = tv;
        p1->line = fe_source_line(g->src, t->then_e->range.begin);
        p2->line = fe_source_line(g->src, t->else_e->range.begin);
        R->parts[0] = p1;
        R->parts[1] = p2;
        R->n_parts = 2;
        fe_out_at(o, t->line, "%sag_tensor %s = {0, 0};", ind, t->temp);
        fe_out_gen(o, "%s{\n", ind);
        const char *ind2 = fe_format("%s    ", ind);
        const char *pred = lower(g, o, t->cond, false, ind2);
        staged_if(g, o, R, NULL, t->line, ind2, pred);
        fe_out_gen(o, "%s}\n", ind);
    }
}

/* ---------------------------------------------------------- statements */

static const fe_stmt *enclosing_staged_loop(const fe_stmt *s)
{
    for (const fe_stmt *p = s->parent; p; p = p->parent)
        if ((p->kind == FE_WHILE || p->kind == FE_DO || p->kind == FE_FOR) && p->staged)
            return p;
    return NULL;
}

/* The flags that statement s may set (exits ex), or'ed: a tensor text. */
static fe_cond *flags_cond(gen *g, const fe_stmt *s, unsigned ex, int line, fe_range at)
{
    const fe_stmt *loop = enclosing_staged_loop(s);
    fe_var *f[3];
    int n = 0;
    if ((ex & FE_EXIT_BREAK) && loop && loop->brk)
        f[n++] = loop->brk;
    if ((ex & FE_EXIT_CONTINUE) && loop && loop->cont)
        f[n++] = loop->cont;
    if ((ex & FE_EXIT_RETURN) && g->fn->returned)
        f[n++] = g->fn->returned;
    if (!n && !fe_diag_errors())
        FE_BUG("no flag for exits %u at line %d", ex, line);
    if (!n) /* analyze.c rejected that exit: the output is dropped anyway */
        f[n++] = temp_var(g, "ag__none", "<none>");
    fe_cond *c = fe_alloc(sizeof *c);
    c->kind = FE_COND_TENSOR;
    c->line = line;
    c->range = at;
    c->staged = true;
    const char *text = f[0]->name;
    for (int i = 1; i < n; i++)
        text = fe_format("ag_logical_or(%s, %s)", text, f[i]->name);
    c->text = text;
    for (int i = 0; i < n; i++)
        fe_refs_add(&c->refs, f[i], at, FE_READ);
    return c;
}

/* Where the user's text that leads to `first` starts: the end of the
 * statement before it in its block (or the block's '{'). Not the end of
 * the exit that moved it: a statement absorbed into a branch already left
 * its source neighbours (`if (c) { if (d) break; } else continue; rest`
 * moves `rest` into the then branch, after the inner if, but the text
 * before `rest` is the else branch's end, not the inner if's). */
static unsigned lead_start(const fe_stmt *first)
{
    const fe_stmt *b = first->parent;
    if (!b || b->kind != FE_BLOCK)
        return first->range.begin;
    for (int i = 0; i < b->n_kids; i++)
        if (b->kids[i] == first)
            return i ? b->kids[i - 1]->range.end : b->range.begin + 1;
    return first->range.begin;
}

static void set_lead(gen *g, const fe_stmt *first)
{
    g->lead_stmt = first;
    g->lead_from = lead_start(first);
}

/* agc moves the parts of a staged construct, and the statements after an
 * exit, into other C functions: a preprocessor conditional must not cross
 * the boundary of such text. r: the text that moves; at: the construct. */
static void check_directives(gen *g, fe_range r, fe_range at, const char *what)
{
    unsigned bad = fe_unbalanced_directive(g->src, r);
    if (bad >= r.end)
        return;
    fe_error(fe_range_at(bad, 1),
             "this preprocessor conditional crosses the boundary of %s, which agc moves into "
             "another C function; keep each #if ... #endif inside one branch or loop body, or "
             "around the whole statement",
             what);
    fe_note(at, "the staged control flow is here");
}

/* The rest of a list after s, run only while no flag s may set is set. */
static void gen_guard(gen *g, fe_out *o, const fe_stmt *s, unsigned ex, fe_stmt **rest, int n,
                      fe_expr *extra)
{
    unsigned first = n ? rest[0]->range.begin : extra->range.begin;
    int line = fe_source_line(g->src, first);
    fe_range at = {first, first + 1};
    fe_cond *flags = flags_cond(g, s, ex, line, at);
    const char *ind = indent_of(g, first);
    region *R = new_region(g, unique(g, "guard", line), at);
    part *p = new_part();
    p->stmts = rest;
    p->n = n;
    p->extra = extra;
    if (n) {
        p->lead_stmt = rest[0];
        p->lead_from = lead_start(rest[0]);
        check_directives(g, (fe_range){p->lead_from, rest[n - 1]->range.end}, at,
                         "the statements after a staged exit");
    }
    R->parts[R->n_parts++] = p;
    fe_out_gen(o, "%s{\n", ind);
    staged_if(g, o, R, n ? rest[n - 1] : s, line, fe_format("%s    ", ind),
              fe_format("ag_logical_not(%s)", flags->text));
    fe_out_gen(o, "%s}\n", ind);
}

/* A staged if; `rest` (the statements after it) goes into the then
 * (side 2) or else (side 1) branch. */
static void gen_staged_if(gen *g, fe_out *o, fe_stmt *s, fe_stmt **rest, int n_rest, fe_expr *extra,
                          int side)
{
    g->stmt = s;
    const char *ind = indent_of(g, s->range.begin);
    const char *ind2 = fe_format("%s    ", ind);
    region *R = new_region(g, unique(g, "if", s->line), fe_range_at(s->range.begin, 2));
    check_directives(g, s->range, R->at, "this staged if");
    if (n_rest)
        check_directives(g, (fe_range){lead_start(rest[0]), rest[n_rest - 1]->range.end}, R->at,
                         "the statements after this staged if");
    for (int b = 0; b < 2; b++) {
        fe_stmt *branch = b ? s->else_s : s->then_s;
        bool gets_rest = side == (b ? 1 : 2);
        int n = (branch ? 1 : 0) + (gets_rest ? n_rest : 0);
        if (!n && !(gets_rest && extra))
            continue;
        part *p = new_part();
        p->stmts = fe_alloc((size_t)(n + 1) * sizeof *p->stmts);
        if (branch)
            p->stmts[p->n++] = branch;
        for (int i = 0; gets_rest && i < n_rest; i++)
            p->stmts[p->n++] = rest[i];
        if (gets_rest && n_rest) {
            p->lead_stmt = rest[0];
            p->lead_from = lead_start(rest[0]);
        }
        p->extra = gets_rest ? extra : NULL;
        R->parts[R->n_parts++] = p;
    }
    fe_out_gen(o, "%s{\n", ind);
    const char *pred = lower(g, o, s->cond, false, ind2);
    staged_if(g, o, R, n_rest ? rest[n_rest - 1] : s, s->line, ind2, pred);
    fe_out_gen(o, "%s}\n", ind);
}

static fe_cond *and_not_flags(gen *g, fe_stmt *loop, fe_cond *user)
{
    unsigned ex = 0;
    if (loop->brk)
        ex |= FE_EXIT_BREAK;
    if (g->fn->returned && (fe_exits(loop->body, true) & FE_EXIT_RETURN))
        ex |= FE_EXIT_RETURN;
    if (!ex)
        return user;
    fe_range at = fe_range_at(loop->range.begin, 1);
    /* flags_cond looks for the loop enclosing its statement: the body */
    fe_cond *flags = flags_cond(g, loop->body, ex, loop->line, at);
    fe_cond *not = fe_alloc(sizeof *not );
    not ->kind = FE_COND_NOT;
    not ->a = flags;
    not ->line = loop->line;
    not ->range = at;
    not ->staged = true;
    fe_cond *and = fe_alloc(sizeof *and);
    and->kind = FE_COND_AND;
    and->a = not ;
    and->b = user;
    and->line = loop->line;
    and->range = user->range;
    and->staged = true;
    return and;
}

/* The region of a staged loop: its condition and its body (with the
 * increment of a for). */
static region *loop_region(gen *g, fe_stmt *s, const char *kind)
{
    region *R = new_region(g, unique(g, kind, s->line),
                           fe_range_at(s->range.begin, (unsigned)strlen(kind)));
    R->loop = s;
    part *pc = new_part(), *pb = new_part();
    pc->cond = and_not_flags(g, s, s->cond);
    pc->line = s->cond->line;
    pb->stmts = fe_alloc(sizeof *pb->stmts);
    pb->stmts[pb->n++] = s->body;
    pb->loop_body = true;
    pb->loop = s;
    pb->extra = s->inc;
    R->parts[R->n_parts++] = pc;
    R->parts[R->n_parts++] = pb;
    region_vars(g, R, NULL, s);
    return R;
}

static void gen_loop(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    g->stmt = s;
    const char *kind = s->kind == FE_FOR ? "for" : s->kind == FE_DO ? "do" : "while";
    const char *ind = indent_of(g, s->range.begin);
    fe_out_gen(o, "%s{\n", ind);
    if (s->kind == FE_FOR && s->init)
        gen_stmt(g, o, s->init, lifted);
    region *R = loop_region(g, s, kind);
    check_directives(g, s->range, R->at, fe_format("this staged %s", kind));
    emit_struct(g, R);
    const char *cond_fn = fe_format("%s_cond", R->name);
    const char *body_fn = fe_format("%s_body", R->name);
    lift(g, R, R->parts[0], cond_fn, true);
    lift(g, R, R->parts[1], body_fn, false);
    /* a do/while's body runs once before the first test */
    const char *first = s->kind == FE_DO ? fe_format("%s(%s);", body_fn, state_arg(R)) : NULL;
    call_site(g, o, R, fe_format("%s    ", ind), s->line, first,
              fe_format("ag_while_at(%s, %s, %s, %s, %s);", loc_text(g, s->line),
                        vars_args(g, R), cond_fn, body_fn, state_arg(R)));
    fe_out_gen(o, "%s}\n", ind);
}

static void gen_return(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    g->stmt = s;
    const char *ind = indent_of(g, s->range.begin);
    if (!lifted) {
        hole h[MAX_HOLES];
        int n = 0;
        if (s->expr) {
            pre_terns(g, o, s->expr, ind);
            n = add_terns(h, 0, s->expr);
        }
        copy_holes(o, s->range, h, n);
        return;
    }
    if (s->expr)
        pre_terns(g, o, s->expr, ind);
    if (g->fn->retval && s->expr)
        fe_out_at(o, s->line, "%sag__retval = %s; ag__returned = ag_scalar_bool(true);", ind,
                  expr_text(g, s->expr));
    else
        fe_out_at(o, s->line, "%sag__returned = ag_scalar_bool(true);", ind);
}

/* Expression statements and declarations: staged ?: and the "undefined"
 * initializer of uninitialized tensors. */
static void gen_simple(gen *g, fe_out *o, fe_stmt *s)
{
    g->stmt = s;
    const char *ind = indent_of(g, s->range.begin);
    hole h[MAX_HOLES];
    int n = 0;
    if (s->expr) {
        pre_terns(g, o, s->expr, ind);
        n = add_terns(h, n, s->expr);
    }
    for (int i = 0; i < s->n_decls; i++) {
        if (s->inits[i]) {
            pre_terns(g, o, s->inits[i], ind);
            n = add_terns(h, n, s->inits[i]);
        }
        fe_var *v = s->decls[i];
        if (v->zero_init && n < MAX_HOLES) {
            unsigned at = v->decl_range.end;
            h[n++] = (hole){{at, at}, v->tclass == FE_TY_TENSOR ? " = {0, 0}" : " = {{0, 0}}"};
        }
    }
    copy_holes(o, s->range, h, n);
}

static bool has_terns(const fe_stmt *s)
{
    if (s->expr && s->expr->terns.n)
        return true;
    return s->kind == FE_IF && s->cond->kind == FE_COND_C && s->cond->e->terns.n;
}

/* Whether gen_stmt makes several statements of s (staged constructs
 * already come as one block). */
static bool several_statements(const fe_stmt *s, bool lifted)
{
    switch (s->kind) {
    case FE_RETURN:
        return lifted || has_terns(s);
    case FE_EXPR:
    case FE_OTHER:
        return has_terns(s);
    case FE_IF:
        return !s->staged && has_terns(s);
    default:
        return false;
    }
}

/* A statement of a C construct (then, else, body): braces when it becomes
 * several statements. */
static void gen_sub(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    if (!s->rewrite || !several_statements(s, lifted)) {
        gen_stmt(g, o, s, lifted);
        return;
    }
    const char *ind = indent_of(g, s->range.begin);
    fe_out_inline(o, " {");
    fe_out_eol(o);
    gen_stmt(g, o, s, lifted);
    fe_out_gen(o, "%s}", ind);
}

/* A C construct with something to rewrite inside: its text, with its
 * statements generated in place. */
static void gen_c_stmt(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    g->stmt = s;
    fe_stmt *h[3];
    int n = 0;
    if (s->kind == FE_FOR && s->init)
        h[n++] = s->init;
    if (s->then_s)
        h[n++] = s->then_s;
    if (s->else_s)
        h[n++] = s->else_s;
    if (s->body)
        h[n++] = s->body;
    for (int i = 0; i < s->n_kids && n < 3; i++)
        h[n++] = s->kids[i];
    const char *ind = indent_of(g, s->range.begin);
    const fe_expr *ce = s->kind == FE_IF && s->cond->kind == FE_COND_C ? s->cond->e : NULL;
    if (ce)
        pre_terns(g, o, ce, ind);
    unsigned pos = s->range.begin;
    for (int i = 0; i < n; i++) {
        hole th[MAX_HOLES];
        int nt = add_terns(th, 0, ce);
        copy_holes(o, (fe_range){pos, h[i]->range.begin}, th, nt);
        if (h[i] == s->init)
            gen_stmt(g, o, h[i], lifted);
        else
            gen_sub(g, o, h[i], lifted);
        pos = h[i]->range.end;
    }
    fe_out_user(o, (fe_range){pos, s->range.end});
}

/* A branch followed by the statements moved after it, as one list: a
 * lowered exit in the branch then guards them (gen_list), as it would
 * have where they were. */
static void gen_branch_and_rest(gen *g, fe_out *o, fe_stmt *branch, fe_stmt **rest, int n_rest,
                                fe_expr *extra, bool lifted)
{
    fe_stmt **list = fe_alloc((size_t)(n_rest + 1) * sizeof *list);
    int n = 0;
    if (branch)
        list[n++] = branch;
    for (int i = 0; i < n_rest; i++)
        list[n++] = rest[i];
    if (n_rest)
        set_lead(g, rest[0]);
    gen_list(g, o, list, n, lifted, false, extra);
}

/* A C if whose one branch always exits: the rest of the list goes into
 * the other branch. */
static void gen_c_if_absorb(gen *g, fe_out *o, fe_stmt *s, fe_stmt **rest, int n_rest,
                            fe_expr *extra, int side, bool lifted)
{
    g->stmt = s;
    const char *ind = indent_of(g, s->range.begin);
    const fe_expr *ce = s->cond->kind == FE_COND_C ? s->cond->e : NULL;
    if (ce)
        pre_terns(g, o, ce, ind);
    hole th[MAX_HOLES];
    int nt = add_terns(th, 0, ce);
    copy_holes(o, (fe_range){s->range.begin, s->then_s->range.begin}, th, nt);
    if (side == 2) {
        fe_out_inline(o, " {");
        fe_out_eol(o);
        gen_branch_and_rest(g, o, s->then_s, rest, n_rest, extra, lifted);
        fe_out_gen(o, "%s}\n", ind);
    } else {
        gen_sub(g, o, s->then_s, lifted);
    }
    if (s->else_s) {
        fe_out_user(o, (fe_range){s->then_s->range.end, s->else_s->range.begin});
    } else {
        fe_out_gen(o, "%selse", ind);
    }
    if (side == 1) {
        fe_out_inline(o, " {");
        fe_out_eol(o);
        gen_branch_and_rest(g, o, s->else_s, rest, n_rest, extra, lifted);
        fe_out_gen(o, "%s}\n", ind);
    } else if (s->else_s) {
        gen_sub(g, o, s->else_s, lifted);
    }
}

static void gen_block(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    if (!s->n_kids) {
        fe_out_user(o, s->range);
        return;
    }
    fe_out_user(o, (fe_range){s->range.begin, s->range.begin + 1});
    fe_out_gap(o, (fe_range){s->range.begin + 1, s->kids[0]->range.begin});
    gen_list(g, o, s->kids, s->n_kids, lifted, false, NULL);
    fe_out_gap(o, (fe_range){s->kids[s->n_kids - 1]->range.end, s->range.end - 1});
    fe_out_user(o, (fe_range){s->range.end - 1, s->range.end});
}

static void gen_stmt(gen *g, fe_out *o, fe_stmt *s, bool lifted)
{
    if (!s->rewrite) {
        fe_out_user(o, s->range);
        return;
    }
    switch (s->kind) {
    case FE_IF:
        if (s->staged)
            gen_staged_if(g, o, s, NULL, 0, NULL, 0);
        else
            gen_c_stmt(g, o, s, lifted);
        return;
    case FE_WHILE:
    case FE_DO:
    case FE_FOR:
        if (s->staged)
            gen_loop(g, o, s, lifted);
        else
            gen_c_stmt(g, o, s, lifted);
        return;
    case FE_BLOCK:
        gen_block(g, o, s, lifted);
        return;
    case FE_BREAK:
    case FE_CONTINUE:
        if (s->lowered)
            fe_out_at(o, s->line, "%s%s = ag_scalar_bool(true);", indent_of(g, s->range.begin),
                      (s->kind == FE_BREAK ? s->target->brk : s->target->cont)->name);
        else
            fe_out_user(o, s->range);
        return;
    case FE_RETURN:
        gen_return(g, o, s, lifted);
        return;
    case FE_EXPR:
    case FE_DECL:
    case FE_OTHER:
        gen_simple(g, o, s);
        return;
    case FE_SWITCH:
    case FE_LABEL:
    case FE_CASE:
        gen_c_stmt(g, o, s, lifted);
        return;
    default:
        fe_out_user(o, s->range);
        return;
    }
}

/* For an if with one branch that always exits: which branch gets the
 * statements after it (1: else, 2: then), or 0. */
static int absorb_side(const fe_stmt *s, bool lifted)
{
    if (s->kind != FE_IF)
        return 0;
    bool rl = lifted || s->staged;
    bool t = fe_always_exits(s->then_s, rl), e = s->else_s && fe_always_exits(s->else_s, rl);
    if (t && !e)
        return 1;
    if (e && !t)
        return 2;
    return 0;
}

/* The for loop whose increment is inc. */
static const fe_stmt *loop_of_inc(const fe_stmt *s, const fe_expr *inc)
{
    if (!s)
        return NULL;
    if (s->inc == inc)
        return s;
    const fe_stmt *r = NULL;
    for (int i = 0; i < s->n_kids && !r; i++)
        r = loop_of_inc(s->kids[i], inc);
    const fe_stmt *parts[] = {s->then_s, s->else_s, s->body};
    for (int i = 0; i < 3 && !r; i++)
        r = loop_of_inc(parts[i], inc);
    return r;
}

static void gen_extra(gen *g, fe_out *o, fe_expr *extra)
{
    g->stmt = loop_of_inc(g->fn->body, extra); /* as analyze.c's check_lazy_stmt */
    const char *ind = indent_of(g, extra->range.begin);
    pre_terns(g, o, extra, "    ");
    fe_out_at(o, fe_source_line(g->src, extra->range.begin), "%s%s;", ind, expr_text(g, extra));
}

static void gen_list(gen *g, fe_out *o, fe_stmt **list, int n, bool lifted, bool loop_body,
                     fe_expr *extra)
{
    for (int i = 0; i < n; i++) {
        fe_stmt *s = list[i];
        if (s == g->lead_stmt) {
            g->lead_stmt = NULL;
            fe_out_gap(o, (fe_range){g->lead_from, s->range.begin});
        } else if (i > 0 && list[i - 1]->parent == s->parent) {
            fe_out_gap(o, (fe_range){list[i - 1]->range.end, s->range.begin});
        }
        bool body = i == 0 && loop_body;
        unsigned ex = fe_exits(s, lifted) & ~(body ? (unsigned)FE_EXIT_CONTINUE : 0u);
        bool has_rest = i + 1 < n || extra;
        if (has_rest && ex) {
            int side = body ? 0 : absorb_side(s, lifted);
            if (side && s->staged) {
                gen_staged_if(g, o, s, list + i + 1, n - i - 1, extra, side);
            } else if (side) {
                gen_c_if_absorb(g, o, s, list + i + 1, n - i - 1, extra, side, lifted);
            } else {
                gen_stmt(g, o, s, lifted);
                gen_guard(g, o, s, ex, list + i + 1, n - i - 1, extra);
            }
            return;
        }
        gen_stmt(g, o, s, lifted);
        if (lifted && !body && fe_always_exits(s, lifted))
            return; /* the rest cannot run */
    }
    if (extra)
        gen_extra(g, o, extra);
}

/* ------------------------------------------------------------- driver */

void fe_gen_function(fe_func *fn, const fe_source *src, fe_out *lifted, fe_out *body)
{
    gen g = {fn, src, lifted, {0}, {0}, NULL, 0, NULL};
    fe_set_current_function(fn);
    fe_expr params = {.range = fn->params_text};
    fe_out_gen(body, "static %s %s__staged(%s)\n{\n", fn->ret_type, fn->name,
               fn->n_params ? expr_text(&g, &params) : "void");
    if (fn->returned) {
        fe_out_gen(body, "    ag_tensor ag__returned = ag_scalar_bool(false);\n");
        if (fn->ret == FE_RET_TENSOR)
            fe_out_gen(body, "    ag_tensor ag__retval = {0, 0};\n");
        else if (fn->ret == FE_RET_STRUCT)
            fe_out_gen(body, "    %s ag__retval = {0};\n", fn->ret_type);
    }
    fe_stmt *b = fn->body;
    if (b->n_kids) {
        fe_out_gap(body, (fe_range){b->range.begin + 1, b->kids[0]->range.begin});
        gen_list(&g, body, b->kids, b->n_kids, false, false, NULL);
        fe_out_gap(body, (fe_range){b->kids[b->n_kids - 1]->range.end, b->range.end - 1});
    }
    if (fn->returned) {
        fe_out_gen(body, "    (void)ag__returned;\n");
        if (fn->retval)
            fe_out_gen(body, "    return ag__retval;\n");
    }
    fe_out_gen(body, "}\n\n");
}
