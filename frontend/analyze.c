/*
 * analyze.c - what can be staged, and the facts gen.c needs.
 *
 * Requires: the fe_func tree of ast.c. Sets: BREAK/CONTINUE targets and
 * `lowered`, the loops' flag variables (brk, cont), fn->retval/returned,
 * `zero_init` on uninitialized tensors, `rewrite` on every statement that
 * gen.c cannot copy verbatim. Reports (with fe_error) the programs dsl.md
 * rejects at compile time: break/continue/return under a staged condition
 * inside a loop that is not staged, goto into or out of staged control
 * flow, a variable initialized in only one branch of a staged if and used
 * after it, a staged return in one branch only with no return after.
 *
 * Also the dataflow queries of gen.c: which lowered exits a statement may
 * take (fe_exits), and liveness (fe_live_after, fe_loop_exposed), both
 * conservative: when unsure, a variable is live.
 */
#include "fe.h"

#include <string.h>

static bool is_loop(const fe_stmt *s)
{
    return s->kind == FE_WHILE || s->kind == FE_DO || s->kind == FE_FOR;
}

static bool is_staged(const fe_stmt *s)
{
    return s->staged && (s->kind == FE_IF || is_loop(s));
}

/* The innermost staged if or loop strictly between s and stop. */
static const fe_stmt *staged_between(const fe_stmt *s, const fe_stmt *stop)
{
    for (const fe_stmt *p = s->parent; p && p != stop; p = p->parent)
        if (is_staged(p))
            return p;
    return NULL;
}

/* The innermost C (unstaged) loop or switch strictly between s and stop. */
static const fe_stmt *c_loop_between(const fe_stmt *s, const fe_stmt *stop)
{
    for (const fe_stmt *p = s->parent; p && p != stop; p = p->parent)
        if ((is_loop(p) && !p->staged) || p->kind == FE_SWITCH)
            return p;
    return NULL;
}

static const char *kind_name(const fe_stmt *s)
{
    switch (s->kind) {
    case FE_WHILE:
        return "while";
    case FE_DO:
        return "do";
    case FE_FOR:
        return "for";
    case FE_SWITCH:
        return "switch";
    case FE_IF:
        return "if";
    default:
        return "statement";
    }
}

bool fe_is_carriable(const fe_var *v)
{
    return v->synthetic || v->tclass == FE_TY_TENSOR || v->tclass == FE_TY_TENSOR_ARRAY;
}

/* --------------------------------------------------------------- walks */

typedef void (*stmt_fn)(fe_stmt *s, void *data);

static void each_stmt(fe_stmt *s, stmt_fn f, void *data)
{
    if (!s)
        return;
    f(s, data);
    for (int i = 0; i < s->n_kids; i++)
        each_stmt(s->kids[i], f, data);
    each_stmt(s->then_s, f, data);
    each_stmt(s->else_s, f, data);
    each_stmt(s->init, f, data);
    each_stmt(s->body, f, data);
}

void fe_cond_refs(const fe_cond *c, fe_refs *out)
{
    if (!c)
        return;
    if (c->e)
        fe_refs_merge(out, &c->e->refs);
    fe_refs_merge(out, &c->refs);
    fe_cond_refs(c->a, out);
    fe_cond_refs(c->b, out);
    fe_cond_refs(c->c, out);
}

static const fe_func *current_fn; /* the function being analyzed or generated */

static void stmt_own_refs(fe_stmt *s, void *data)
{
    fe_refs *out = data;
    fe_cond_refs(s->cond, out);
    if (s->expr)
        fe_refs_merge(out, &s->expr->refs);
    if (s->inc)
        fe_refs_merge(out, &s->inc->refs);
    for (int i = 0; i < s->n_decls; i++)
        if (s->inits[i])
            fe_refs_merge(out, &s->inits[i]->refs);
    fe_range at = fe_range_at(s->range.begin, 1);
    if (s->kind == FE_BREAK && s->lowered)
        fe_refs_add(out, s->target->brk, at, FE_WRITE);
    if (s->kind == FE_CONTINUE && s->lowered)
        fe_refs_add(out, s->target->cont, at, FE_WRITE);
    if (s->kind == FE_RETURN && current_fn && current_fn->returned) {
        fe_refs_add(out, current_fn->returned, at, FE_WRITE);
        if (current_fn->retval)
            fe_refs_add(out, current_fn->retval, at, FE_WRITE);
    }
}

void fe_stmt_refs(const fe_stmt *s, fe_refs *out)
{
    each_stmt((fe_stmt *)s, stmt_own_refs, out);
}

static int mode_in(const fe_var *v, const fe_stmt *s)
{
    fe_refs r = {0};
    fe_stmt_refs(s, &r);
    return fe_refs_mode(&r, v);
}

static int mode_in_cond(const fe_var *v, const fe_cond *c)
{
    fe_refs r = {0};
    fe_cond_refs(c, &r);
    return fe_refs_mode(&r, v);
}

/* ---------------------------------------------------------------- exits */

unsigned fe_exits(const fe_stmt *s, bool rl)
{
    if (!s)
        return 0;
    unsigned m = 0;
    switch (s->kind) {
    case FE_BREAK:
        return s->lowered ? FE_EXIT_BREAK : 0;
    case FE_CONTINUE:
        return s->lowered ? FE_EXIT_CONTINUE : 0;
    case FE_RETURN:
        return rl ? FE_EXIT_RETURN : 0;
    case FE_BLOCK:
        for (int i = 0; i < s->n_kids; i++) {
            m |= fe_exits(s->kids[i], rl);
            if (fe_always_exits(s->kids[i], rl))
                break;
        }
        return m;
    case FE_IF:
        rl |= s->staged;
        return fe_exits(s->then_s, rl) | fe_exits(s->else_s, rl);
    case FE_WHILE:
    case FE_DO:
    case FE_FOR:
        /* lowered breaks and continues inside leave this loop or an inner one */
        return fe_exits(s->body, rl || s->staged) & FE_EXIT_RETURN;
    case FE_SWITCH:
        return fe_exits(s->body, rl);
    case FE_LABEL:
    case FE_CASE:
        return s->n_kids ? fe_exits(s->kids[0], rl) : 0;
    default:
        return 0;
    }
}

bool fe_always_exits(const fe_stmt *s, bool rl)
{
    if (!s)
        return false;
    switch (s->kind) {
    case FE_BREAK:
    case FE_CONTINUE:
        return s->lowered;
    case FE_RETURN:
        return rl;
    case FE_BLOCK:
        for (int i = 0; i < s->n_kids; i++)
            if (fe_always_exits(s->kids[i], rl))
                return true;
        return false;
    case FE_IF:
        rl |= s->staged;
        return s->else_s && fe_always_exits(s->then_s, rl) && fe_always_exits(s->else_s, rl);
    case FE_LABEL:
    case FE_CASE:
        return s->n_kids && fe_always_exits(s->kids[0], rl);
    default:
        return false;
    }
}

/* Every path through s ends in a return (staged or not). */
static bool always_returns(const fe_stmt *s)
{
    if (!s)
        return false;
    switch (s->kind) {
    case FE_RETURN:
        return true;
    case FE_BLOCK:
        for (int i = 0; i < s->n_kids; i++)
            if (always_returns(s->kids[i]))
                return true;
        return false;
    case FE_IF:
        return s->else_s && always_returns(s->then_s) && always_returns(s->else_s);
    case FE_LABEL:
    case FE_CASE:
        return s->n_kids && always_returns(s->kids[0]);
    default:
        return false;
    }
}

/* ------------------------------------------------------------- liveness */

typedef enum access { ACC_NONE, ACC_READ, ACC_KILL } access;

static access first_access(const fe_var *v, const fe_stmt *s);

static access first_access_list(const fe_var *v, fe_stmt *const *list, int n)
{
    for (int i = 0; i < n; i++) {
        access a = first_access(v, list[i]);
        if (a != ACC_NONE)
            return a;
    }
    return ACC_NONE;
}

/* Whether s reads v before any assignment that certainly happens (READ),
 * certainly assigns v (or returns) before reading it (KILL), or neither. */
static access first_access(const fe_var *v, const fe_stmt *s)
{
    if (!s)
        return ACC_NONE;
    int mode = mode_in(v, s);
    switch (s->kind) {
    case FE_RETURN:
        return (mode & FE_READ) ? ACC_READ : ACC_KILL;
    case FE_EXPR:
        if (s->expr->assign_to == v && !s->expr->rhs_reads_target)
            return ACC_KILL;
        return (mode & FE_READ) ? ACC_READ : ACC_NONE;
    case FE_BLOCK:
        return first_access_list(v, s->kids, s->n_kids);
    case FE_IF: {
        if (mode_in_cond(v, s->cond) & FE_READ)
            return ACC_READ;
        access t = first_access(v, s->then_s), e = first_access(v, s->else_s);
        if (t == ACC_READ || e == ACC_READ)
            return ACC_READ;
        return t == ACC_KILL && e == ACC_KILL ? ACC_KILL : ACC_NONE;
    }
    case FE_LABEL:
    case FE_CASE:
        return first_access_list(v, s->kids, s->n_kids);
    default:
        return (mode & FE_READ) ? ACC_READ : ACC_NONE;
    }
}

bool fe_live_after(const fe_var *v, const fe_stmt *s)
{
    /* A goto may go anywhere: then any variable read anywhere is live. */
    if (current_fn && current_fn->has_goto)
        return (mode_in(v, current_fn->body) & FE_READ) != 0;
    for (const fe_stmt *cur = s; cur->parent; cur = cur->parent) {
        const fe_stmt *p = cur->parent;
        if (is_loop(p) && (mode_in(v, p) & FE_READ))
            return true; /* the next iteration may read it */
        if (p->kind != FE_BLOCK)
            continue;
        int i = 0;
        while (i < p->n_kids && p->kids[i] != cur)
            i++;
        access a = first_access_list(v, p->kids + i + 1, p->n_kids - i - 1);
        if (a != ACC_NONE)
            return a == ACC_READ;
    }
    return false;
}

bool fe_loop_exposed(const fe_var *v, const fe_stmt *loop)
{
    bool cond_reads = loop->cond && (mode_in_cond(v, loop->cond) & FE_READ);
    if (loop->kind != FE_DO && cond_reads)
        return true;
    access a = first_access(v, loop->body);
    if (a == ACC_NONE && loop->inc && (fe_refs_mode(&loop->inc->refs, v) & FE_READ))
        a = ACC_READ;
    if (a != ACC_NONE)
        return a == ACC_READ;
    return cond_reads;
}

/* --------------------------------------------------------------- checks */

static fe_var *flag(fe_func *fn, const char *name, const char *display, unsigned decl_off)
{
    fe_var *v = fe_alloc(sizeof *v);
    v->name = name;
    v->display = display;
    v->decl_off = decl_off;
    v->decl_range = (fe_range){decl_off, decl_off};
    v->tclass = FE_TY_TENSOR;
    v->type_name = "ag_tensor";
    v->field_decl = fe_format("ag_tensor %s", name);
    v->local_decl = v->field_decl;
    v->synthetic = true;
    fe_vec_push(&fn->vars, v);
    return v;
}

static const fe_stmt *innermost_loop(const fe_stmt *s, bool or_switch)
{
    for (const fe_stmt *p = s->parent; p; p = p->parent)
        if (is_loop(p) || (or_switch && p->kind == FE_SWITCH))
            return p;
    return NULL;
}

static void not_staged_note(const fe_stmt *loop)
{
    if (loop->kind == FE_SWITCH)
        fe_note(fe_range_at(loop->range.begin, 6), "inside this switch, which agc cannot stage");
    else
        fe_note(fe_range_at(loop->range.begin, (unsigned)strlen(kind_name(loop))),
                "this loop is not staged: its condition does not use ag_bool()");
}

static void check_break(fe_func *fn, fe_stmt *s)
{
    bool is_break = s->kind == FE_BREAK;
    const char *what = is_break ? "break" : "continue";
    fe_stmt *t = (fe_stmt *)innermost_loop(s, is_break);
    if (!t)
        return; /* clang already rejected it */
    s->target = t;
    const fe_stmt *staged = staged_between(s, t);
    if (t->staged && is_loop(t)) {
        const fe_stmt *sw = c_loop_between(s, t);
        if (sw) {
            fe_error(fe_range_at(s->range.begin, (unsigned)strlen(what)),
                     "'%s' inside a switch cannot leave a staged loop; use if / else if", what);
            not_staged_note(sw);
            return;
        }
        s->lowered = true;
        unsigned body = t->body->range.begin;
        if (is_break && !t->brk)
            t->brk = flag(fn, fe_format("ag__break_%d", t->line), "<break>", t->range.begin);
        if (!is_break && !t->cont)
            t->cont = flag(fn, fe_format("ag__continue_%d", t->line), "<continue>", body);
        return;
    }
    if (staged) {
        fe_error(fe_range_at(s->range.begin, (unsigned)strlen(what)),
                 "'%s' under a staged condition cannot leave a loop that is not staged", what);
        fe_note(fe_range_at(staged->range.begin, 2), "the staged condition is here");
        not_staged_note(t);
    }
}

static void check_return(fe_func *fn, fe_stmt *s)
{
    const fe_stmt *staged = staged_between(s, NULL);
    if (!staged)
        return;
    const fe_stmt *c_loop = c_loop_between(s, NULL);
    if (c_loop) {
        fe_error(fe_range_at(s->range.begin, 6),
                 "'return' under a staged condition cannot leave a %s",
                 c_loop->kind == FE_SWITCH ? "switch" : "loop that is not staged");
        fe_note(fe_range_at(staged->range.begin, (unsigned)strlen(kind_name(staged))),
                "the staged condition is here");
        not_staged_note(c_loop);
        return;
    }
    if (!fn->returned) {
        unsigned at = fn->body->range.begin;
        fn->returned = flag(fn, "ag__returned", "<returned>", at);
        if (fn->ret != FE_RET_VOID) {
            fn->retval = flag(fn, "ag__retval", "<return value>", at);
            if (fn->ret == FE_RET_STRUCT) {
                fn->retval->tclass = FE_TY_STRUCT;
                fn->retval->field_decl = fe_format("%s ag__retval", fn->ret_type);
                fn->retval->local_decl = fn->retval->field_decl;
            }
        }
    }
}

static void check_exit(fe_stmt *s, void *data)
{
    fe_func *fn = data;
    if (s->kind == FE_BREAK || s->kind == FE_CONTINUE)
        check_break(fn, s);
}

static void check_return_stmt(fe_stmt *s, void *data)
{
    if (s->kind == FE_RETURN)
        check_return(data, s);
}

/* goto into or out of staged control flow. */
typedef struct labels {
    fe_vec labels, gotos;
} labels;

static void collect_labels(fe_stmt *s, void *data)
{
    labels *l = data;
    if (s->kind == FE_LABEL)
        fe_vec_push(&l->labels, s);
    if (s->kind == FE_GOTO)
        fe_vec_push(&l->gotos, s);
}

static bool inside(const fe_stmt *s, const fe_stmt *construct)
{
    for (const fe_stmt *p = s; p; p = p->parent)
        if (p == construct)
            return true;
    return false;
}

static void check_gotos(fe_func *fn)
{
    labels l = {{0}, {0}};
    each_stmt(fn->body, collect_labels, &l);
    for (int i = 0; i < l.gotos.n; i++) {
        fe_stmt *g = l.gotos.items[i];
        fe_stmt *label = NULL;
        for (int j = 0; j < l.labels.n && !label; j++)
            if (strcmp(((fe_stmt *)l.labels.items[j])->label, g->label) == 0)
                label = l.labels.items[j];
        if (!label)
            continue;
        const fe_stmt *sg = staged_between(g, NULL), *sl = staged_between(label, NULL);
        if (sg == sl)
            continue;
        /* into: the label is inside a staged construct the goto is not in */
        bool into = sl && !inside(g, sl);
        fe_error(fe_range_at(g->range.begin, 4),
                 "'goto %s' jumps %s staged control flow; agc cannot stage it", g->label,
                 into ? "into" : "out of");
        fe_note(fe_range_at(label->range.begin, (unsigned)strlen(label->label)),
                "label '%s' is here", label->label);
        const fe_stmt *st = into ? sl : sg;
        fe_note(fe_range_at(st->range.begin, (unsigned)strlen(kind_name(st))),
                "the staged %s is here", kind_name(st));
    }
}

/* The else (or then) branch misses a return, and nothing follows. */
static const fe_stmt *one_sided_return(const fe_stmt *s)
{
    if (!s)
        return NULL;
    if (s->kind == FE_IF) {
        bool t = always_returns(s->then_s), e = always_returns(s->else_s);
        if (s->staged && t != e && fe_exits(s, true))
            return s;
        const fe_stmt *r = one_sided_return(s->then_s);
        return r ? r : one_sided_return(s->else_s);
    }
    if (is_loop(s) && s->staged && fe_exits(s->body, true))
        return s;
    for (int i = 0; i < s->n_kids; i++) {
        const fe_stmt *r = one_sided_return(s->kids[i]);
        if (r)
            return r;
    }
    return one_sided_return(s->body);
}

static void report_missing_return(const fe_func *fn, const fe_stmt *s)
{
    const fe_stmt *site = one_sided_return(s);
    if (!site)
        site = s;
    if (site->kind == FE_IF) {
        bool then_returns = always_returns(site->then_s);
        const char *branch = then_returns ? "else" : "then";
        if (!site->else_s) {
            fe_error(fe_range_at(site->range.begin, 2),
                     "the else branch must also have a return statement");
            fe_note((fe_range){site->then_s->range.end, site->then_s->range.end},
                    "add an else branch that returns, or a return after the if");
        } else {
            fe_error(fe_range_at(site->range.begin, 2),
                     "the %s branch must also have a return statement", branch);
        }
    } else {
        fe_error(fe_range_at(site->range.begin, (unsigned)strlen(kind_name(site))),
                 "this staged %s may return, so the code after it must also end with a "
                 "return statement",
                 kind_name(site));
    }
    unsigned close = fn->body->range.end ? fn->body->range.end - 1 : 0;
    fe_note((fe_range){close, close + 1}, "'%s' can reach its end without returning a value",
            fn->name);
}

static void check_returns(fe_func *fn)
{
    if (fn->ret == FE_RET_VOID || !fn->returned)
        return;
    fe_stmt *b = fn->body;
    for (int i = 0; i < b->n_kids; i++) {
        fe_stmt *s = b->kids[i];
        if (always_returns(s))
            return;
        if ((fe_exits(s, false) & FE_EXIT_RETURN)) {
            bool later = false;
            for (int j = i + 1; j < b->n_kids && !later; j++)
                later = always_returns(b->kids[j]);
            if (!later)
                report_missing_return(fn, s);
            return;
        }
    }
}

/* Whether offset `at` is in the other branch of an if that s is in: code
 * there runs instead of s, not before it (`else if` chains: the first
 * branch's assignment does not reach the last if). */
static bool in_other_branch(unsigned at, const fe_stmt *s)
{
    for (const fe_stmt *cur = s; cur->parent; cur = cur->parent) {
        const fe_stmt *p = cur->parent;
        if (p->kind != FE_IF)
            continue;
        const fe_stmt *other = cur == p->then_s ? p->else_s : cur == p->else_s ? p->then_s : NULL;
        if (other && at >= other->range.begin && at < other->range.end)
            return true;
    }
    return false;
}

/* 'y' must also be initialized in the else branch: whether v is assigned
 * between its declaration and s, on the way to s. */
static bool written_before(const fe_refs *all, const fe_var *v, const fe_stmt *s)
{
    for (int i = 0; i < all->n; i++) {
        unsigned at = all->items[i].at.begin;
        if (all->items[i].var == v && (all->items[i].mode & FE_WRITE) && at > v->decl_off &&
            at < s->range.begin && !in_other_branch(at, s))
            return true;
    }
    return false;
}

static const fe_ref *first_ref(const fe_refs *r, const fe_var *v, int mode, unsigned after)
{
    const fe_ref *best = NULL;
    for (int i = 0; i < r->n; i++)
        if (r->items[i].var == v && (r->items[i].mode & mode) && r->items[i].at.begin >= after &&
            (!best || r->items[i].at.begin < best->at.begin))
            best = &r->items[i];
    return best;
}

static bool written_in_enclosing_loop(const fe_var *v, const fe_stmt *s)
{
    for (const fe_stmt *p = s->parent; p; p = p->parent) {
        if (!is_loop(p))
            continue;
        fe_refs r = {0};
        fe_stmt_refs(p, &r);
        for (int i = 0; i < r.n; i++)
            if (r.items[i].var == v && (r.items[i].mode & FE_WRITE) &&
                (r.items[i].at.begin < s->range.begin || r.items[i].at.begin >= s->range.end))
                return true;
    }
    return false;
}

/* Where the branch that misses v would assign it. A note, not a fix-it:
 * only the user knows the value, and a fix-it must compile. */
static void branch_note(const fe_stmt *s, bool missing_else, const fe_var *v)
{
    const fe_stmt *b = missing_else ? s->else_s : s->then_s;
    unsigned at;
    if (missing_else && !b)
        at = s->then_s->range.end;
    else if (b && b->kind == FE_BLOCK)
        at = b->range.begin + 1;
    else
        return;
    fe_note((fe_range){at, at}, "assign '%s' in the %s branch too%s", v->name,
            missing_else ? "else" : "then",
            missing_else && !b ? fe_format(" (else %s = ...;)", v->name) : "");
}

static void check_if_outputs(fe_stmt *s, void *data)
{
    const fe_refs *all = data;
    if (s->kind != FE_IF || !s->staged)
        return;
    fe_refs t = {0}, e = {0};
    fe_stmt_refs(s->then_s, &t);
    if (s->else_s)
        fe_stmt_refs(s->else_s, &e);
    for (int pass = 0; pass < 2; pass++) {
        const fe_refs *in = pass ? &e : &t, *other = pass ? &t : &e;
        for (int i = 0; i < in->n; i++) {
            fe_var *v = in->items[i].var;
            if (!(in->items[i].mode & FE_WRITE) || v->synthetic || v->is_param || v->has_init ||
                (fe_refs_mode(other, v) & FE_WRITE) || v->decl_off >= s->range.begin ||
                first_ref(in, v, FE_WRITE, 0) != &in->items[i] ||
                written_before(all, v, s) ||
                written_in_enclosing_loop(v, s) || !fe_live_after(v, s))
                continue;
            fe_error(fe_range_at(s->range.begin, 2),
                     "'%s' must also be initialized in the %s branch", v->name,
                     pass ? "then" : "else");
            fe_note(in->items[i].at, "'%s' is assigned here, in the %s branch", v->name,
                    pass ? "else" : "then");
            const fe_ref *use = first_ref(all, v, FE_READ, s->range.end);
            if (use)
                fe_note(use->at, "'%s' is used here, after the if", v->name);
            branch_note(s, !pass, v);
        }
    }
}

/* ------------------------------------------------------------- marking */

static bool has_staged_any(const fe_stmt *s);

static bool expr_staged(const fe_expr *e)
{
    return e && e->terns.n > 0;
}

static bool cond_has_terns(const fe_cond *c)
{
    if (!c)
        return false;
    return expr_staged(c->e) || cond_has_terns(c->a) || cond_has_terns(c->b) ||
           cond_has_terns(c->c);
}

static bool mark_rewrite(fe_stmt *s)
{
    if (!s)
        return false;
    bool r = is_staged(s) || s->lowered || s->kind == FE_RETURN || expr_staged(s->expr) ||
             expr_staged(s->inc) || cond_has_terns(s->cond);
    for (int i = 0; i < s->n_decls; i++)
        r |= s->decls[i]->zero_init || expr_staged(s->inits[i]);
    for (int i = 0; i < s->n_kids; i++)
        r |= mark_rewrite(s->kids[i]);
    r |= mark_rewrite(s->then_s);
    r |= mark_rewrite(s->else_s);
    r |= mark_rewrite(s->init);
    r |= mark_rewrite(s->body);
    s->rewrite = r;
    return r;
}

static bool has_staged_any(const fe_stmt *s)
{
    if (!s)
        return false;
    if (is_staged(s) || expr_staged(s->expr) || cond_has_terns(s->cond))
        return true;
    for (int i = 0; i < s->n_decls; i++)
        if (expr_staged(s->inits[i]))
            return true;
    for (int i = 0; i < s->n_kids; i++)
        if (has_staged_any(s->kids[i]))
            return true;
    return has_staged_any(s->then_s) || has_staged_any(s->else_s) || has_staged_any(s->init) ||
           has_staged_any(s->body);
}

/* A staged loop's condition runs in its own lifted function: assignments
 * there would be lost. */
static void check_loop_cond(fe_stmt *s, void *data)
{
    (void)data;
    if (!is_loop(s) || !s->staged)
        return;
    fe_refs r = {0};
    fe_cond_refs(s->cond, &r);
    for (int i = 0; i < r.n; i++)
        if (r.items[i].mode & FE_WRITE)
            fe_error(r.items[i].at,
                     "the condition of a staged loop cannot assign '%s'; assign it in the "
                     "loop body",
                     r.items[i].var->name);
}

static void check_c_loop_terns(fe_stmt *s, void *data)
{
    (void)data;
    if (is_loop(s) && !s->staged && (cond_has_terns(s->cond) || expr_staged(s->inc)))
        fe_error(fe_range_at(s->range.begin, (unsigned)strlen(kind_name(s))),
                 "a '?:' with a staged condition in the header of a C loop is not supported; "
                 "compute it into a variable in the loop body");
}

/* Whether the write of v at `at` is `v = <rhs holding t>`: it happens
 * after t is evaluated. */
static bool assigned_from(const fe_expr *e, const fe_var *v, unsigned at, const fe_ternary *t)
{
    for (int i = 0; i < e->assigns.n; i++) {
        const fe_assign *a = e->assigns.items[i];
        if (a->var == v && a->lhs_at == at && a->rhs.begin <= t->range.begin &&
            t->range.begin < a->rhs.end)
            return true;
    }
    return false;
}

/* A staged ?: inside a statement is computed before the statement: it
 * must not read what the statement declares or assigns before it. */
static void check_tern_order(const fe_expr *e, fe_var *const *declared, int n_declared)
{
    for (int i = 0; e && i < e->terns.n; i++) {
        const fe_ternary *t = e->terns.items[i];
        fe_refs r = {0};
        fe_cond_refs(t->cond, &r);
        fe_refs_merge(&r, &t->then_e->refs);
        fe_refs_merge(&r, &t->else_e->refs);
        for (int k = 0; k < r.n; k++) {
            fe_var *v = r.items[k].var;
            bool declares = false, assigns = false;
            for (int d = 0; d < n_declared && !declares; d++)
                declares = declared[d] == v;
            for (int w = 0; w < e->refs.n && !assigns; w++)
                assigns = e->refs.items[w].var == v && (e->refs.items[w].mode & FE_WRITE) &&
                          e->refs.items[w].at.begin < t->range.begin &&
                          !assigned_from(e, v, e->refs.items[w].at.begin, t);
            if (!declares && !assigns)
                continue;
            fe_error(r.items[k].at,
                     "this '?:' has a staged condition, so agc computes it before its "
                     "statement, but it reads '%s', which the statement %s before it; split "
                     "the statement",
                     v->name, declares ? "declares" : "assigns");
            fe_note(fe_range_at(t->range.begin, 1), "the '?:' is here");
            return;
        }
    }
}

static void check_tern_stmt(fe_stmt *s, void *data)
{
    (void)data;
    check_tern_order(s->expr, NULL, 0);
    check_tern_order(s->inc, NULL, 0);
    for (int i = 0; i < s->n_decls; i++)
        check_tern_order(s->inits[i], s->decls, i + 1);
}

/* -------------------------------------------- lazily evaluated operands */

/*
 * The right operand of a staged && or ||, and the operands of a staged ?:
 * (or of a ?: inside a staged condition) run in a staged if: at run time
 * only when the condition selects them, but while tracing always. So a C
 * variable assigned there would always take the value (and agc cannot
 * carry it out of the if, its value being fixed while tracing); a tensor
 * is a branch output of that if (gen.c carries it when it is read later).
 */
typedef struct lazy_ctx {
    const fe_stmt *stmt; /* the statement holding the operands */
    const fe_refs *all;  /* every reference of the function */
} lazy_ctx;

typedef struct lazy_op {
    const char *name;     /* "&&", "||", "?:" */
    fe_range at;          /* the whole construct, for the note */
    const char *when;     /* when the operand runs */
    const fe_refs *other; /* ?:: what the other operand references */
    const lazy_ctx *ctx;
} lazy_op;

/* Whether gen.c carries v out of the operand's staged if (lazy_live):
 * the statement or what follows it reads v. */
static bool read_later(const fe_var *v, const fe_stmt *s)
{
    return (mode_in(v, s) & FE_READ) || fe_live_after(v, s);
}

/* A tensor assigned in one operand only, with no value before the
 * statement: the staged if has no value for it when the other runs. */
static void check_lazy_tensor(const fe_ref *ref, const lazy_op *op)
{
    fe_var *v = ref->var;
    const fe_stmt *s = op->ctx->stmt;
    if (v->synthetic || v->is_param || v->has_init ||
        (op->other && (fe_refs_mode(op->other, v) & FE_WRITE)) ||
        written_before(op->ctx->all, v, s) ||
        written_in_enclosing_loop(v, s) || !read_later(v, s))
        return;
    fe_error(ref->at,
             "'%s' is assigned only when this operand of a staged '%s' runs (%s), and has no "
             "value before the statement; initialize it before, or assign it in the other "
             "case too",
             v->name, op->name, op->when);
    fe_note(op->at, "the staged '%s' is here", op->name);
    const fe_ref *use = first_ref(op->ctx->all, v, FE_READ, ref->at.end);
    if (use)
        fe_note(use->at, "'%s' is used here", v->name);
}

static void check_lazy_refs(const fe_refs *r, const lazy_op *op)
{
    for (int i = 0; i < r->n; i++) {
        const fe_ref *ref = &r->items[i];
        fe_var *v = ref->var;
        if (!(ref->mode & FE_WRITE) || first_ref(r, v, FE_WRITE, 0) != ref)
            continue;
        if (fe_is_carriable(v)) {
            check_lazy_tensor(ref, op);
            continue;
        }
        v->reported = true;
        fe_error(ref->at,
                 "'%s' is a C '%s' assigned in an operand of a staged '%s', which runs only "
                 "%s; while tracing every operand runs, and a C variable keeps the value it "
                 "gets then: assign it in a statement of its own, or make it an ag_tensor",
                 v->name, v->type_name, op->name, op->when);
        fe_note(op->at, "the staged '%s' is here", op->name);
    }
}

static void check_lazy_cond(const fe_cond *c, const lazy_op *op, const lazy_ctx *ctx);

/* Writes in e, which runs lazily under op (NULL: e runs unconditionally,
 * only its staged ?: have lazy operands). */
static void check_lazy_expr(const fe_expr *e, const lazy_op *op, const lazy_ctx *ctx)
{
    if (!e)
        return;
    if (op) { /* every reference inside, nested ?: included */
        check_lazy_refs(&e->refs, op);
        return;
    }
    for (int i = 0; i < e->terns.n; i++) {
        const fe_ternary *t = e->terns.items[i];
        const char *when = "when its condition selects it";
        lazy_op then_op = {"?:", t->range, when, &t->else_e->refs, ctx};
        lazy_op else_op = {"?:", t->range, when, &t->then_e->refs, ctx};
        check_lazy_cond(t->cond, NULL, ctx);
        check_lazy_expr(t->then_e, &then_op, ctx);
        check_lazy_expr(t->else_e, &else_op, ctx);
    }
}

static void check_lazy_cond(const fe_cond *c, const lazy_op *op, const lazy_ctx *ctx)
{
    if (!c)
        return;
    switch (c->kind) {
    case FE_COND_C:
    case FE_COND_BOOL:
        check_lazy_expr(c->e, op, ctx);
        return;
    case FE_COND_TENSOR:
        return;
    case FE_COND_NOT:
        check_lazy_cond(c->a, op, ctx);
        return;
    case FE_COND_AND:
    case FE_COND_OR:
    case FE_COND_SELECT: {
        check_lazy_cond(c->a, op, ctx);
        if (!op && c->a->kind == FE_COND_C) {
            /* a C first operand picks the branch while tracing: the
             * others run exactly when C says they do */
            check_lazy_cond(c->b, NULL, ctx);
            check_lazy_cond(c->c, NULL, ctx);
            return;
        }
        const char *name = c->kind == FE_COND_AND ? "&&" : c->kind == FE_COND_OR ? "||" : "?:";
        const char *when = c->kind == FE_COND_AND  ? "when the left operand is true"
                           : c->kind == FE_COND_OR ? "when the left operand is false"
                                                   : "when its condition selects it";
        fe_refs rb = {0}, rc = {0};
        fe_cond_refs(c->b, &rb);
        fe_cond_refs(c->c, &rc);
        lazy_op b_op = {name, c->range, when, c->c ? &rc : NULL, ctx};
        lazy_op c_op = {name, c->range, when, &rb, ctx};
        check_lazy_cond(c->b, op ? op : &b_op, ctx);
        check_lazy_cond(c->c, op ? op : &c_op, ctx);
        return;
    }
    }
}

static void check_lazy_stmt(fe_stmt *s, void *data)
{
    lazy_ctx ctx = {s, data};
    if (!(is_loop(s) && s->staged)) /* check_loop_cond rejects any write there */
        check_lazy_cond(s->cond, NULL, &ctx);
    check_lazy_expr(s->expr, NULL, &ctx);
    check_lazy_expr(s->inc, NULL, &ctx);
    for (int i = 0; i < s->n_decls; i++)
        check_lazy_expr(s->inits[i], NULL, &ctx);
}

/* ------------------------------------------------------------ recursion */

/*
 * While a function is traced, its call to itself is traced too (inlined),
 * and a staged condition cannot end that: both branches are traced. Only
 * C can (a C if on a C scalar parameter that changes). A self-call that C
 * reaches on every trace of the body never ends: reported here. The
 * runtime catches the rest (the same types and C values again) by name.
 */

static bool contains_off(const fe_stmt *s, unsigned at)
{
    return s && at >= s->range.begin && at < s->range.end;
}

/* The innermost statement of s's tree that contains `at`. */
static const fe_stmt *stmt_at(const fe_stmt *s, unsigned at)
{
    for (int i = 0; i < s->n_kids; i++)
        if (contains_off(s->kids[i], at))
            return stmt_at(s->kids[i], at);
    const fe_stmt *parts[] = {s->then_s, s->else_s, s->init, s->body};
    for (int i = 0; i < 4; i++)
        if (contains_off(parts[i], at))
            return stmt_at(parts[i], at);
    return s;
}

/* Whether s may leave the code that follows it (towards `at`) while
 * tracing: a C return, a goto, a C break or continue of a loop around
 * `at`. Lowered exits do not: the code after them is traced too. */
static bool leaves_while_tracing(const fe_stmt *s, unsigned at, bool staged)
{
    if (!s)
        return false;
    switch (s->kind) {
    case FE_RETURN:
        return !staged;
    case FE_GOTO:
        return true;
    case FE_BREAK:
    case FE_CONTINUE:
        return !s->lowered && s->target && contains_off(s->target, at);
    default:
        break;
    }
    staged |= is_staged(s);
    for (int i = 0; i < s->n_kids; i++)
        if (leaves_while_tracing(s->kids[i], at, staged))
            return true;
    return leaves_while_tracing(s->then_s, at, staged) ||
           leaves_while_tracing(s->else_s, at, staged) ||
           leaves_while_tracing(s->body, at, staged);
}

/* Whether every trace of the body reaches offset `at` (in statement s);
 * *staged gets the innermost staged construct around it. */
static bool traced_always(const fe_stmt *s, unsigned at, const fe_stmt **staged)
{
    *staged = NULL;
    if (s->kind == FE_FOR || s->kind == FE_DO)
        return false; /* its increment or condition may not run */
    for (const fe_stmt *cur = s; cur->parent; cur = cur->parent) {
        const fe_stmt *p = cur->parent;
        if (is_staged(p)) {
            if (!*staged)
                *staged = p;
            continue;
        }
        if (p->kind != FE_BLOCK)
            return false; /* a C if, loop, switch or label */
        for (int i = 0; i < p->n_kids && p->kids[i] != cur; i++) {
            if (leaves_while_tracing(p->kids[i], at, false))
                return false;
            if (!*staged && is_staged(p->kids[i]) && fe_exits(p->kids[i], true))
                *staged = p->kids[i]; /* its exits do not stop the trace */
        }
    }
    return true;
}

static void check_recursion(const fe_func *fn)
{
    if (fn->has_goto)
        return;
    for (int i = 0; i < fn->self_calls.n; i++) {
        const fe_self_call *sc = fn->self_calls.items[i];
        const fe_stmt *staged;
        if (sc->conditional || !traced_always(stmt_at(fn->body, sc->at.begin), sc->at.begin,
                                              &staged))
            continue;
        fe_error(sc->at,
                 "'%s' calls itself on every trace of its body, so tracing it never ends: "
                 "the tracer runs both branches of a staged condition; end the recursion on "
                 "a C condition (such as a C scalar parameter that decreases), or write a "
                 "staged loop",
                 fn->name);
        if (staged)
            fe_note(fe_range_at(staged->range.begin, (unsigned)strlen(kind_name(staged))),
                    "this staged %s does not end it: it decides when the graph runs, not "
                    "while it is traced", kind_name(staged));
        return;
    }
}

/* The lifted code runs in other C functions than the labels. */
static void check_computed_gotos(const fe_func *fn)
{
    if (!fn->has_staged)
        return;
    for (int i = 0; i < fn->computed_gotos.n; i++) {
        const fe_range *r = fn->computed_gotos.items[i];
        fe_error(*r, "a computed goto ('goto *' or '&&label') cannot be used in an "
                     "AG_FUNCTION with staged control flow: agc moves staged code into other "
                     "C functions");
    }
}

void fe_analyze(fe_func *fn)
{
    if (!fn->body)
        return;
    current_fn = fn;
    fn->has_staged = has_staged_any(fn->body);
    each_stmt(fn->body, check_exit, fn);
    each_stmt(fn->body, check_return_stmt, fn);
    each_stmt(fn->body, check_c_loop_terns, NULL);
    each_stmt(fn->body, check_loop_cond, NULL);
    check_gotos(fn);
    check_computed_gotos(fn);
    check_recursion(fn);
    each_stmt(fn->body, check_tern_stmt, NULL);
    check_returns(fn);
    fe_refs all = {0};
    fe_stmt_refs(fn->body, &all);
    each_stmt(fn->body, check_if_outputs, &all);
    each_stmt(fn->body, check_lazy_stmt, &all);
    if (fn->has_staged) {
        for (int i = 0; i < fn->vars.n; i++) {
            fe_var *v = fn->vars.items[i];
            v->zero_init = !v->synthetic && !v->is_param && !v->has_init &&
                           (v->tclass == FE_TY_TENSOR || v->tclass == FE_TY_TENSOR_ARRAY);
        }
    }
    mark_rewrite(fn->body);
}

void fe_set_current_function(const fe_func *fn)
{
    current_fn = fn;
}
