/*
 * test_passes.c - the optimization passes and their manager.
 *
 * Three parts:
 *   - numerics: staged programs (hand-written in agc's output form) run
 *     eagerly, traced with no passes, with the default pipeline, and with
 *     every pass alone and in a few combinations; what they print and
 *     return must be identical, bit for bit (signed zeros and NaNs
 *     included), and so must their errors;
 *   - the pass manager: the table, pipeline specs, the override,
 *     printing after passes, verification after each pass, AG_DUMP_IR;
 *   - passes on text IR: every pass leaves every sample valid, and the
 *     analyses' plans hold the expected numbers.
 */
#include "staged_util.h"

#include "pass.h"
#include "pass_internal.h"
#include "target.h"

/* Plans are made for a target: the cpu's, as the function cache would. */
#define CPU_CAPS (&tgt_find("cpu")->caps)

#include "exec.h"
#include "trace.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================== staged programs */

/* ------------------------------------------------ relu: cond on x > 0 */
struct relu__if {
    ag_tensor x, r;
};
static void relu__then(void *s_) { struct relu__if *s = s_; s->r = s->x; }
static void relu__else(void *s_) { struct relu__if *s = s_; s->r = ag_zeros_like(s->x); }
static ag_tensor relu__staged(ag_tensor x)
{
    struct relu__if s = {x, {0, 0}};
    ag_tensor *vars[] = {&s.r};
    static const char *const names[] = {"r"};
    ag_if_at(AG_HERE, ag_greater(x, 0), 1, vars, names, relu__then, relu__else, &s);
    return s.r;
}
static void relu__trace(const ag_arg *a, ag_tensor *o) { o[0] = relu__staged(a[0].tensor); }
AG_TEST_DESC(relu, 1, N_X, K_T, NULL, 1, relu__trace);

/* --------------------------- squash: while sum(x) > 1 { print; tanh } */
struct squash__w {
    ag_tensor x;
};
static ag_tensor squash__cond(void *s_)
{
    struct squash__w *s = s_;
    return ag_greater(ag_reduce_sum(s->x, AG_ALL_AXES, false), 1);
}
static void squash__body(void *s_)
{
    struct squash__w *s = s_;
    ag_print("x =", s->x);
    s->x = ag_tanh(s->x);
}
static ag_tensor squash__staged(ag_tensor x)
{
    struct squash__w s = {x};
    ag_tensor *vars[] = {&s.x};
    static const char *const names[] = {"x"};
    ag_while_at(AG_HERE, 1, vars, names, squash__cond, squash__body, &s);
    return s.x;
}
static void squash__trace(const ag_arg *a, ag_tensor *o) { o[0] = squash__staged(a[0].tensor); }
AG_TEST_DESC(squash, 1, N_X, K_T, NULL, 1, squash__trace);

/* ------------------------- fizz: nested conds that only print, in a loop */
struct fizz__if {
    ag_tensor i;
};
static void fizz__buzz(void *s_) { (void)s_; ag_print("buzz"); }
static void fizz__num(void *s_) { struct fizz__if *s = s_; ag_print(s->i); }
static void fizz__fizz(void *s_) { (void)s_; ag_print("fizz"); }
static void fizz__not3(void *s_)
{
    struct fizz__if *s = s_;
    ag_if_at(AG_HERE, ag_equal(ag_mod(s->i, 5), 0), 0, NULL, NULL, fizz__buzz, fizz__num, s);
}
struct fizz__w {
    ag_tensor i, n;
};
static ag_tensor fizz__cond(void *s_)
{
    struct fizz__w *s = s_;
    return ag_less_equal(s->i, s->n);
}
static void fizz__body(void *s_)
{
    struct fizz__w *s = s_;
    struct fizz__if st = {s->i};
    ag_if_at(AG_HERE, ag_equal(ag_mod(s->i, 3), 0), 0, NULL, NULL, fizz__fizz, fizz__not3, &st);
    s->i = ag_add(s->i, 1);
}
static void fizz__staged(ag_tensor n)
{
    struct fizz__w s = {ag_scalar_i32(1), n};
    ag_tensor *vars[] = {&s.i};
    static const char *const names[] = {"i"};
    ag_while_at(AG_HERE, 1, vars, names, fizz__cond, fizz__body, &s);
}
static void fizz__trace(const ag_arg *a, ag_tensor *o) { (void)o; fizz__staged(a[0].tensor); }
AG_TEST_DESC(fizz, 1, N_N, K_T, NULL, 0, fizz__trace);

/* ------------------------- power: an unrolled C loop of matmuls on eye */
static ag_tensor power__staged(ag_tensor x, int y)
{
    ag_tensor r = ag_eye(4, AG_I32);
    for (int i = 0; i < y; i++)
        r = ag_matmul(x, r);
    return ag_add(r, ag_matmul(ag_eye(4, AG_I32), ag_eye(4, AG_I32)));
}
static void power__trace(const ag_arg *a, ag_tensor *o) { o[0] = power__staged(a[0].tensor, (int)a[1].i); }
AG_TEST_DESC(power, 2, N_XY, K_TI, NULL, 1, power__trace);

/* ----------------------------- nested: while in while, two loop vars */
struct nested__in {
    ag_tensor j, total, i;
};
static ag_tensor nested__in_cond(void *s_)
{
    struct nested__in *s = s_;
    return ag_less(s->j, s->i);
}
static void nested__in_body(void *s_)
{
    struct nested__in *s = s_;
    s->total = ag_add(s->total, ag_mul(s->j, ag_add(s->i, 0)));
    s->j = ag_add(s->j, 1);
}
struct nested__out {
    ag_tensor i, total, n;
};
static ag_tensor nested__out_cond(void *s_)
{
    struct nested__out *s = s_;
    return ag_less(s->i, s->n);
}
static void nested__out_body(void *s_)
{
    struct nested__out *s = s_;
    struct nested__in in = {ag_scalar_i32(0), s->total, s->i};
    ag_tensor *vars[] = {&in.j, &in.total};
    static const char *const names[] = {"j", "total"};
    ag_while_at(AG_HERE, 2, vars, names, nested__in_cond, nested__in_body, &in);
    s->total = in.total;
    s->i = ag_add(s->i, 1);
}
static ag_tensor nested__staged(ag_tensor n)
{
    struct nested__out s = {ag_scalar_i32(0), ag_scalar_i32(0), n};
    ag_tensor *vars[] = {&s.i, &s.total};
    static const char *const names[] = {"i", "total"};
    ag_while_at(AG_HERE, 2, vars, names, nested__out_cond, nested__out_body, &s);
    return s.total;
}
static void nested__trace(const ag_arg *a, ag_tensor *o) { o[0] = nested__staged(a[0].tensor); }
AG_TEST_DESC(nested, 1, N_N, K_T, NULL, 1, nested__trace);

/* --------------------------------- brk: break and continue as flags */
struct brk__s {
    ag_tensor i, acc, brk, cont;
};
static ag_tensor brk__cond(void *s_)
{
    struct brk__s *s = s_;
    return ag_logical_and(ag_logical_not(s->brk), ag_less(s->i, 100));
}
static void brk__set_cont(void *s_) { struct brk__s *s = s_; s->cont = ag_scalar_bool(true); }
static void brk__set_brk(void *s_) { struct brk__s *s = s_; s->brk = ag_scalar_bool(true); }
static void brk__accumulate(void *s_)
{
    struct brk__s *s = s_;
    ag_tensor *vars[] = {&s->brk};
    static const char *const names[] = {"<break>"};
    ag_if_at(AG_HERE, ag_greater(s->acc, 20), 1, vars, names, brk__set_brk, NULL, s);
    s->acc = ag_where(s->brk, s->acc, ag_add(s->acc, s->i));
}
static void brk__body(void *s_)
{
    struct brk__s *s = s_;
    s->cont = ag_scalar_bool(false);
    s->i = ag_add(s->i, 1);
    ag_tensor *v1[] = {&s->cont};
    static const char *const n1[] = {"<continue>"};
    ag_if_at(AG_HERE, ag_equal(ag_mod(s->i, 2), 0), 1, v1, n1, brk__set_cont, NULL, s);
    ag_tensor *v2[] = {&s->brk, &s->acc};
    static const char *const n2[] = {"<break>", "acc"};
    ag_if_at(AG_HERE, ag_logical_not(s->cont), 2, v2, n2, brk__accumulate, NULL, s);
}
static ag_tensor brk__staged(void)
{
    struct brk__s s = {ag_scalar_i32(0), ag_scalar_i32(0), ag_scalar_bool(false),
                       ag_scalar_bool(false)};
    ag_tensor *vars[] = {&s.i, &s.acc, &s.brk, &s.cont};
    static const char *const names[] = {"i", "acc", "<break>", "<continue>"};
    ag_while_at(AG_HERE, 4, vars, names, brk__cond, brk__body, &s);
    return s.acc;
}
static void brk__trace(const ag_arg *a, ag_tensor *o) { (void)a; o[0] = brk__staged(); }
AG_TEST_DESC(brk, 0, NULL, NULL, NULL, 1, brk__trace);

/* --------------------------------- squares: a tensor array in a loop */
struct squares__s {
    ag_tensor i, n;
    ag_tensor_array ta;
};
static ag_tensor squares__cond(void *s_)
{
    struct squares__s *s = s_;
    return ag_less(s->i, s->n);
}
static void squares__body(void *s_)
{
    struct squares__s *s = s_;
    s->ta = ag_tensor_array_write(s->ta, s->i, ag_cast(ag_mul(s->i, s->i), AG_F32));
    s->i = ag_add(s->i, 1);
}
static ag_tensor squares__staged(ag_tensor n)
{
    struct squares__s s = {ag_scalar_i32(0), n, ag_tensor_array_new(AG_F32, 0, true)};
    ag_tensor *vars[] = {&s.i, &s.ta.list};
    static const char *const names[] = {"i", "ta"};
    ag_while_at(AG_HERE, 2, vars, names, squares__cond, squares__body, &s);
    ag_tensor first = ag_tensor_array_read(s.ta, 1);
    return ag_add(ag_tensor_array_stack(s.ta), first);
}
static void squares__trace(const ag_arg *a, ag_tensor *o) { o[0] = squares__staged(a[0].tensor); }
AG_TEST_DESC(squares, 1, N_N, K_T, NULL, 1, squares__trace);

/* ------------------------------ counter: variable updates and reads */
static ag_tensor counter__staged(ag_variable v)
{
    ag_tensor before = ag_variable_read(v);
    ag_assign_add(v, ag_scalar_i32(2));
    ag_print("read", ag_variable_read(v));
    ag_assign_add(v, ag_scalar_i32(2));
    ag_tensor after = ag_variable_read(v);
    ag_tensor unused = ag_variable_read(v); /* an effect: kept */
    (void)unused;
    return ag_add(ag_mul(before, 100), after);
}
static void counter__trace(const ag_arg *a, ag_tensor *o) { o[0] = counter__staged(a[0].variable); }
AG_TEST_DESC(counter, 1, N_V, K_V, NULL, 1, counter__trace);

/* --------------------------- consts: arithmetic folding and shape_of */
struct consts__if {
    ag_tensor x, r;
};
static void consts__big(void *s_)
{
    struct consts__if *s = s_;
    ag_print("big branch");
    s->r = ag_mul(s->x, ag_cast(ag_size(s->x), AG_F32));
}
static void consts__small(void *s_)
{
    struct consts__if *s = s_;
    ag_print("small branch");
    s->r = ag_neg(s->x);
}
static ag_tensor consts__staged(ag_tensor x)
{
    ag_tensor k = ag_add(ag_mul(ag_fill(AG_F32, AG_SCALAR, 2), 3),
                         ag_reduce_sum(ag_range(0.0f, 4.0f, 1.0f), 0, false));
    ag_tensor shape = ag_cast(ag_shape_of(x), AG_F32);
    ag_tensor y = ag_add(ag_mul(x, k), ag_reduce_sum(shape, AG_ALL_AXES, false));
    struct consts__if s = {y, {0, 0}};
    ag_tensor *vars[] = {&s.r};
    static const char *const names[] = {"r"};
    /* The predicate folds to a constant: the cond is inlined. */
    ag_if_at(AG_HERE, ag_greater(ag_size(x), 2), 1, vars, names, consts__big, consts__small, &s);
    return ag_sub(s.r, ag_div(ag_scalar_f32(1), ag_scalar_f32(3)));
}
static void consts__trace(const ag_arg *a, ag_tensor *o) { o[0] = consts__staged(a[0].tensor); }
AG_TEST_DESC(consts, 1, N_X, K_T, NULL, 1, consts__trace);

/* ------------ zeros: simplifications that must keep NaN and signed zeros */
static ag_tensor zeros__staged(ag_tensor x)
{
    ag_tensor pz = ag_scalar_f32(0.0), nz = ag_scalar_f32(-0.0);
    ag_tensor rows[] = {
        ag_add(x, pz),     ag_add(x, nz),  ag_add(nz, x),     ag_sub(x, pz),
        ag_sub(x, nz),     ag_mul(x, pz),  ag_mul(x, 1),      ag_div(x, 1),
        ag_sub(x, x),      ag_neg(ag_neg(x)), ag_maximum(x, pz), ag_maximum(pz, x),
        ag_minimum(x, nz), ag_minimum(nz, x), ag_mul(pz, x),    ag_add(x, ag_zeros_like(x)),
    };
    return ag_stack(0, (int)(sizeof rows / sizeof rows[0]), rows);
}
static void zeros__trace(const ag_arg *a, ag_tensor *o) { o[0] = zeros__staged(a[0].tensor); }
AG_TEST_DESC(zeros, 1, N_X, K_T, NULL, 1, zeros__trace);

/* ------------------------------------ ints: integer simplifications */
static ag_tensor ints__staged(ag_tensor x)
{
    ag_tensor t = ag_transpose(ag_transpose(ag_reshape(x, AG_SHAPE(2, 3)), 1, 0), 1, 0);
    ag_tensor r = ag_reshape(ag_reshape(t, AG_SHAPE(3, 2)), AG_SHAPE(6));
    ag_tensor a = ag_add(ag_sub(x, x), ag_mul(x, 0));
    ag_tensor b = ag_add(ag_cast(r, AG_I32), ag_neg(ag_neg(x)));
    ag_tensor c = ag_add(ag_add(x, 0), ag_div(ag_mul(x, 1), 1));
    ag_tensor rows[] = {a, b, c, ag_add(x, ag_scalar_i32(7)), ag_add(ag_scalar_i32(7), x)};
    return ag_stack(0, 5, rows);
}
static void ints__trace(const ag_arg *a, ag_tensor *o) { o[0] = ints__staged(a[0].tensor); }
AG_TEST_DESC(ints, 1, N_X, K_T, NULL, 1, ints__trace);

/* --------------------- twice: CSE candidates, random ops, effects */
static ag_tensor twice__staged(ag_tensor x, ag_tensor y)
{
    ag_tensor a = ag_add(ag_mul(x, y), ag_mul(y, x));
    ag_tensor b = ag_add(ag_mul(x, y), ag_mul(y, x));
    ag_tensor r1 = ag_random_uniform(AG_SHAPE(3), 0, 1, AG_F32, 7);
    ag_tensor r2 = ag_random_uniform(AG_SHAPE(3), 0, 1, AG_F32, 7);
    ag_print("a", a);
    ag_print("a", a);
    return ag_add(ag_add(ag_sub(a, b), ag_sub(r1, r2)), ag_maximum(x, y));
}
static void twice__trace(const ag_arg *a, ag_tensor *o) { o[0] = twice__staged(a[0].tensor, a[1].tensor); }
AG_TEST_DESC(twice, 2, N_XY, K_TT, NULL, 1, twice__trace);

/* ------- licm: invariant work in a loop, and a division that must stay */
static const char *const N_WND[] = {"w", "n", "d"};
static const ag_arg_kind K_TTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
struct licm__s {
    ag_tensor i, acc, q, w, n, d;
};
static ag_tensor licm__cond(void *s_)
{
    struct licm__s *s = s_;
    /* invariant, and in the condition: hoisted even though it may fail */
    ag_tensor limit = ag_add(s->n, ag_floordiv(s->n, ag_add(ag_abs(s->d), 1)));
    return ag_less(s->i, limit);
}
static void licm__body(void *s_)
{
    struct licm__s *s = s_;
    ag_tensor inv = ag_tanh(ag_mul(s->w, 2)); /* invariant: hoisted */
    s->acc = ag_add(s->acc, inv);
    s->q = ag_add(s->q, ag_div(s->n, s->d)); /* invariant, may divide by 0: stays */
    s->i = ag_add(s->i, 1);
}
static ag_tensor licm__staged(ag_tensor w, ag_tensor n, ag_tensor d)
{
    struct licm__s s = {ag_scalar_i32(0), ag_zeros_like(w), ag_scalar_i32(0), w, n, d};
    ag_tensor *vars[] = {&s.i, &s.acc, &s.q};
    static const char *const names[] = {"i", "acc", "q"};
    ag_while_at(AG_HERE, 3, vars, names, licm__cond, licm__body, &s);
    return ag_add(s.acc, ag_cast(s.q, AG_F32));
}
static void licm__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = licm__staged(a[0].tensor, a[1].tensor, a[2].tensor);
}
AG_TEST_DESC(licm, 3, N_WND, K_TTT, NULL, 1, licm__trace);

/* ----------------- never: a loop whose condition is false at entry */
struct never__s {
    ag_tensor i, x;
};
static ag_tensor never__cond(void *s_)
{
    struct never__s *s = s_;
    return ag_less(s->i, ag_sub(ag_size(s->x), 10));
}
static void never__body(void *s_)
{
    struct never__s *s = s_;
    ag_print("never printed");
    s->i = ag_add(s->i, 1);
    s->x = ag_mul(s->x, 2);
}
static ag_tensor never__staged(ag_tensor x)
{
    struct never__s s = {ag_scalar_i64(0), x};
    ag_tensor *vars[] = {&s.i, &s.x};
    static const char *const names[] = {"i", "x"};
    ag_while_at(AG_HERE, 2, vars, names, never__cond, never__body, &s);
    return ag_add(s.x, ag_cast(s.i, AG_F32));
}
static void never__trace(const ag_arg *a, ag_tensor *o) { o[0] = never__staged(a[0].tensor); }
AG_TEST_DESC(never, 1, N_X, K_T, NULL, 1, never__trace);

/* ------------------------ fused: an elementwise chain and a reduction */
static ag_tensor fused__staged(ag_tensor x)
{
    ag_tensor y = ag_sigmoid(ag_add(ag_mul(x, 3), 1));
    ag_tensor z = ag_reduce_sum(ag_square(ag_sub(y, 0.5)), 1, false);
    return ag_softmax(ag_add(z, ag_reduce_max(x, AG_ALL_AXES, false)), 0);
}
static void fused__trace(const ag_arg *a, ag_tensor *o) { o[0] = fused__staged(a[0].tensor); }
AG_TEST_DESC(fused, 1, N_X, K_T, NULL, 1, fused__trace);

/* ---------------- lazy: an unused op that fails is never run (graphs) */
static ag_tensor lazy__staged(ag_tensor x)
{
    ag_tensor unused = ag_gather(x, ag_scalar_i32(7), 0);
    ag_tensor unused2 = ag_div(ag_scalar_i32(1), ag_scalar_i32(0)); /* not folded */
    (void)unused, (void)unused2;
    return ag_add(x, 1);
}
static void lazy__trace(const ag_arg *a, ag_tensor *o) { o[0] = lazy__staged(a[0].tensor); }
AG_TEST_DESC(lazy, 1, N_X, K_T, NULL, 1, lazy__trace);

/* ---------------------------------- fails: an error that must stay */
static ag_tensor fails__staged(ag_tensor x)
{
    ag_print("before the error");
    ag_tensor zero = ag_sub(ag_size(x), ag_size(x)); /* folds to 0 */
    return ag_add(ag_cast(ag_div(ag_scalar_i64(5), zero), AG_F32), x);
}
static void fails__trace(const ag_arg *a, ag_tensor *o) { o[0] = fails__staged(a[0].tensor); }
AG_TEST_DESC(fails, 1, N_X, K_T, NULL, 1, fails__trace);

/* ------------- errs: zeros of a failing value still fail (x * 0, x - x) */
static ag_tensor errs__staged(ag_tensor n, ag_tensor d)
{
    ag_tensor q = ag_floordiv(n, d);
    ag_print("n =", n);
    ag_tensor zero = ag_add(ag_mul(q, 0), ag_sub(q, q));
    ag_tensor shape = ag_cast(ag_shape_of(ag_mod(n, d)), AG_I32);
    return ag_add(ag_add(zero, shape), ag_floordiv(n, d));
}
static void errs__trace(const ag_arg *a, ag_tensor *o) { o[0] = errs__staged(a[0].tensor, a[1].tensor); }
AG_TEST_DESC(errs, 2, N_XY, K_TT, NULL, 1, errs__trace);

/* ----- ipow: integer matmul chains (matpow): x^37 from eye, a right chain
 * of 21 on r0, and a chain of 6 inside a loop body; i64 values overflow */
struct ipow__w {
    ag_tensor i, r, x;
};
static ag_tensor ipow__cond(void *s_)
{
    struct ipow__w *s = s_;
    return ag_less(s->i, 2);
}
static void ipow__body(void *s_)
{
    struct ipow__w *s = s_;
    for (int j = 0; j < 6; j++) /* a C loop: unrolled while tracing */
        s->r = ag_matmul(s->x, s->r);
    s->i = ag_add(s->i, 1);
}
static ag_tensor ipow__staged(ag_tensor x, ag_tensor r0)
{
    ag_tensor a = ag_eye(4, AG_I64), b = r0;
    for (int j = 0; j < 37; j++)
        a = ag_matmul(x, a);
    for (int j = 0; j < 21; j++)
        b = ag_matmul(b, x);
    struct ipow__w s = {ag_scalar_i64(0), a, x};
    ag_tensor *vars[] = {&s.i, &s.r, &s.x};
    static const char *const names[] = {"i", "r", "x"};
    ag_while_at(AG_HERE, 3, vars, names, ipow__cond, ipow__body, &s);
    ag_tensor flat[] = {ag_reshape(a, AG_SHAPE(16)), ag_reshape(b, AG_SHAPE(12)),
                        ag_reshape(s.r, AG_SHAPE(16))};
    return ag_concat(0, 3, flat);
}
static void ipow__trace(const ag_arg *a, ag_tensor *o) { o[0] = ipow__staged(a[0].tensor, a[1].tensor); }
AG_TEST_DESC(ipow, 2, N_XY, K_TT, NULL, 1, ipow__trace);

/* ================================================= running the programs */

static ag_tensor call_desc(const ag_function_desc *d, const ag_arg *args)
{
    ag_tensor o[1] = {{0, 0}};
    ag_function_call_at(AG_HERE, d, args, d->n_outputs ? o : NULL);
    return o[0];
}

static ag_arg t_arg(ag_tensor t) { return targ(t); }

static ag_tensor run_relu(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(ag_scalar_f32(-3))};
    ag_tensor r1 = call_desc(d, a);
    a[0] = t_arg(ag_scalar_f32(5));
    return ag_add(call_desc(d, a), r1);
}
static ag_tensor run_squash(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(2), 0.5, 1))};
    return call_desc(d, a);
}
static ag_tensor run_fizz(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(ag_scalar_i32(16))};
    return call_desc(d, a);
}
static ag_tensor run_power(const ag_function_desc *d)
{
    ag_arg a[2] = {t_arg(I32(AG_SHAPE(4, 4), 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1)),
                   {.kind = AG_ARG_INT, .i = 3}};
    return call_desc(d, a);
}
static ag_tensor run_nested(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(ag_scalar_i32(6))};
    return call_desc(d, a);
}
static ag_tensor run_brk(const ag_function_desc *d) { return call_desc(d, NULL); }
static ag_tensor run_squares(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(ag_scalar_i32(5))};
    return call_desc(d, a);
}
static ag_tensor run_counter(const ag_function_desc *d)
{
    ag_variable v = ag_variable_new(ag_scalar_i32(3));
    ag_arg a[1] = {{.kind = AG_ARG_VARIABLE, .variable = v}};
    ag_tensor r = ag_add(call_desc(d, a), call_desc(d, a));
    ag_variable_free(v);
    return r;
}
static ag_tensor run_consts(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(4), 1.5, -2, 0.25, 8))};
    ag_tensor r = call_desc(d, a);
    a[0] = t_arg(F32(AG_SHAPE(2), 1, 2)); /* the other branch */
    ag_tensor both[2] = {r, call_desc(d, a)};
    return ag_concat(0, 2, both);
}
static ag_tensor run_zeros(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(7), -0.0, 0.0, NAN, INFINITY, -INFINITY, 1.5, -2))};
    return call_desc(d, a);
}
static ag_tensor run_ints(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(I32(AG_SHAPE(6), INT32_MIN, -1, 0, 1, 5, INT32_MAX))};
    return call_desc(d, a);
}
static ag_tensor run_twice(const ag_function_desc *d)
{
    ag_arg a[2] = {t_arg(F32(AG_SHAPE(3), -0.0, 2, NAN)), t_arg(F32(AG_SHAPE(3), 0.0, -1, 3))};
    return call_desc(d, a);
}
static ag_tensor run_licm(const ag_function_desc *d)
{
    ag_arg a[3] = {t_arg(F32(AG_SHAPE(2), 0.5, -1)), t_arg(ag_scalar_i32(4)),
                   t_arg(ag_scalar_i32(2))};
    ag_tensor r1 = call_desc(d, a);
    /* n = 0, d = 0: the body never runs, so nothing divides by zero */
    a[1] = t_arg(ag_scalar_i32(0));
    a[2] = t_arg(ag_scalar_i32(0));
    ag_tensor both[2] = {r1, call_desc(d, a)};
    return ag_concat(0, 2, both);
}
static ag_tensor run_never(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(3), 1, 2, 3))};
    return call_desc(d, a);
}
static ag_tensor run_fused(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(2, 3), 0.1, -0.2, 0.3, 1, 2, -3))};
    return call_desc(d, a);
}
static ag_tensor run_lazy(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(3), 1, 2, 3))};
    return call_desc(d, a);
}
static ag_tensor run_fails(const ag_function_desc *d)
{
    ag_arg a[1] = {t_arg(F32(AG_SHAPE(3), 1, 2, 3))};
    return call_desc(d, a);
}

/* Entries near the ends of the i64 range: every product overflows. */
static ag_tensor run_ipow(const ag_function_desc *d)
{
    ag_arg a[2] = {t_arg(I64(AG_SHAPE(4, 4), INT64_MAX, -3, 5, INT64_MIN, 7, 1, -1, 2,
                             0x123456789abcdefLL, 0, 9, -11, 13, 4, -2, 3)),
                   t_arg(I64(AG_SHAPE(3, 4), 1, 2, 3, 4, -5, 6, INT64_MAX, 8, 9, 0, -1, 12))};
    return call_desc(d, a);
}
static ag_tensor run_errs(const ag_function_desc *d)
{
    ag_arg a[2] = {t_arg(I32(AG_SHAPE(3), 7, -7, 9)), t_arg(I32(AG_SHAPE(3), 2, 3, 4))};
    ag_tensor ok = call_desc(d, a);
    a[1] = t_arg(I32(AG_SHAPE(3), 2, 0, 4)); /* a zero divisor: fails */
    ag_tensor both[2] = {ok, call_desc(d, a)};
    return ag_concat(0, 2, both);
}

typedef struct program {
    const ag_function_desc *desc;
    ag_tensor (*run)(const ag_function_desc *d);
    bool eager_differs; /* graphs skip a failing unused op (non-strict)
                           and stop at an error, eager code goes on */
} program;

static const program programs[] = {
    {&relu__desc, run_relu, false},       {&squash__desc, run_squash, false},
    {&fizz__desc, run_fizz, false},       {&power__desc, run_power, false},
    {&nested__desc, run_nested, false},   {&brk__desc, run_brk, false},
    {&squares__desc, run_squares, false}, {&counter__desc, run_counter, false},
    {&consts__desc, run_consts, false},   {&zeros__desc, run_zeros, false},
    {&ints__desc, run_ints, false},       {&twice__desc, run_twice, false},
    {&licm__desc, run_licm, false},       {&never__desc, run_never, false},
    {&fused__desc, run_fused, false},     {&lazy__desc, run_lazy, true},
    {&fails__desc, run_fails, false},     {&errs__desc, run_errs, true},
    {&ipow__desc, run_ipow, false},
};
enum { N_PROGRAMS = sizeof programs / sizeof programs[0] };

/* The pipelines compared; NULL is eager execution. */
static const char *const configs[] = {
    "none", NULL, "default", "infer", "fold", "simplify", "cse", "licm", "dce", "fusion",
    "memplan", "fold,dce", "licm,dce", "simplify,cse,dce", "fold,simplify,fold,dce",
    "fixpoint(fold,simplify,cse,licm,infer,dce)", "licm,licm,cse,dce,licm",
    "matpow", "fold,simplify,matpow,dce",
};
enum { N_CONFIGS = sizeof configs / sizeof configs[0] };

/* Each (config, program) pair gets its own descriptor, so its own cache
 * entry: every pipeline traces afresh. */
static ag_function_desc descs[N_CONFIGS][N_PROGRAMS];
static char desc_names[N_CONFIGS][N_PROGRAMS][64];

static const ag_function_desc *desc_for(int c, int p)
{
    ag_function_desc *d = &descs[c][p];
    if (!d->trace) {
        *d = *programs[p].desc;
        snprintf(desc_names[c][p], sizeof desc_names[c][p], "%s@%d", d->name, c);
        d->name = desc_names[c][p];
    }
    return d;
}

/* What one run of a program did. */
typedef struct outcome {
    char *printed;
    char *error; /* NULL when nothing failed */
    bool has_value;
    ag_dtype dtype;
    ag_shape shape;
    size_t bytes;
    unsigned char *data;
} outcome;

static void outcome_free(outcome *o)
{
    free(o->printed);
    free(o->error);
    free(o->data);
}

/* The error's message without the "file:line:" prefix, which names the
 * test's call site and so differs between configurations. */
static char *error_text(void)
{
    const char *e = ag_last_error();
    if (!e)
        return NULL;
    const char *tail = strstr(e, ": ag_");
    return strdup(tail ? tail : e);
}

static void run_program(int c, int p, outcome *o)
{
    memset(o, 0, sizeof *o);
    ag_run_functions_eagerly(configs[c] == NULL);
    pass_set_pipeline_override(configs[c]);
    ag_clear_error();
    ag_scope_push();
    ag_tensor r;
    CAPTURE(o->printed, r = programs[p].run(desc_for(c, p)));
    o->error = error_text();
    o->has_value = !ag_is_error(r) && !o->error;
    if (o->has_value) {
        o->dtype = ag_dtype_of(r);
        o->shape = ag_shape_get(r);
        o->bytes = (size_t)ag_num_elements(r) * (o->dtype == AG_F64 || o->dtype == AG_I64 ? 8
                                                 : o->dtype == AG_BOOL ? 1
                                                 : o->dtype == AG_BF16 ? 2 : 4);
        o->data = malloc(o->bytes + 1);
        memcpy(o->data, ag_data(r), o->bytes);
    }
    ag_scope_pop();
    ag_run_functions_eagerly(false);
    pass_set_pipeline_override(NULL);
}

static void expect_same(const outcome *base, const outcome *o, int c, int p, bool values_only)
{
    const char *name = programs[p].desc->name, *cfg = configs[c] ? configs[c] : "eager";
    if (!values_only && strcmp(base->printed, o->printed) != 0)
        fail_msg("%s with '%s' printed\n%s\nbut with no passes\n%s", name, cfg, o->printed,
                 base->printed);
    if (!values_only && (base->error == NULL) != (o->error == NULL))
        fail_msg("%s with '%s': error \"%s\", with no passes \"%s\"", name, cfg,
                 o->error ? o->error : "(none)", base->error ? base->error : "(none)");
    if (!values_only && base->error && strcmp(base->error, o->error) != 0)
        fail_msg("%s with '%s': error \"%s\", with no passes \"%s\"", name, cfg, o->error,
                 base->error);
    if (base->has_value != o->has_value || base->dtype != o->dtype ||
        !ag_shape_equal(base->shape, o->shape) || base->bytes != o->bytes)
        fail_msg("%s with '%s': the result's type differs", name, cfg);
    if (base->has_value && memcmp(base->data, o->data, base->bytes) != 0)
        fail_msg("%s with '%s': the result's bytes differ", name, cfg);
}

/* Every pipeline computes, prints and fails exactly as no passes do, and
 * (except where non-strictness differs by design) as eager execution. */
static void test_pipelines_preserve_results(void **state)
{
    (void)state;
    for (int p = 0; p < N_PROGRAMS; p++) {
        outcome base;
        run_program(0, p, &base);
        for (int c = 1; c < N_CONFIGS; c++) {
            outcome o;
            run_program(c, p, &o);
            if (configs[c] || !programs[p].eager_differs)
                expect_same(&base, &o, c, p, false);
            outcome_free(&o);
        }
        outcome_free(&base);
    }
}

/* The programs really compute what they should (so that "the same" is
 * not "equally wrong"). */
static void test_programs_compute_known_values(void **state)
{
    (void)state;
    outcome o;
    run_program(2, 0, &o); /* relu(-3) + relu(5) */
    assert_true(o.has_value);
    assert_true(*(float *)o.data == 5.0f);
    outcome_free(&o);
    run_program(2, 2, &o); /* fizz up to 16 */
    assert_string_equal(o.printed, "1\n2\nfizz\n4\nbuzz\nfizz\n7\n8\nfizz\nbuzz\n11\nfizz\n13\n"
                                   "14\nfizz\n16\n");
    outcome_free(&o);
    run_program(2, 7, &o); /* counter from 3: 3*100+7, then 7*100+11 */
    assert_string_equal(o.printed, "read 5\nread 9\n");
    assert_true(o.has_value);
    assert_int_equal(*(int32_t *)o.data, 307 + 711);
    outcome_free(&o);
    run_program(2, 9, &o); /* zeros: row 0 is x + 0.0: -0.0 becomes +0.0 */
    assert_true(o.has_value);
    const float *z = (const float *)o.data;
    assert_false(signbit(z[0]));      /* -0 + 0 = +0 */
    assert_true(signbit(z[7 + 0]));   /* -0 + -0 = -0 */
    assert_true(isnan(z[5 * 7 + 3])); /* inf * 0 = NaN */
    assert_true(isnan(z[8 * 7 + 3])); /* inf - inf = NaN */
    outcome_free(&o);
    run_program(2, 16, &o); /* fails: 5 / 0 */
    assert_non_null(o.error);
    assert_non_null(strstr(o.error, "integer division by zero"));
    assert_string_equal(o.printed, "before the error\n");
    outcome_free(&o);
    run_program(2, 17, &o); /* errs: the second call divides by zero */
    assert_non_null(o.error);
    assert_non_null(strstr(o.error, "integer division by zero"));
    assert_string_equal(o.printed, "n = [7 -7 9]\n"); /* the graph stops at the division */
    outcome_free(&o);
    run_program(2, 12, &o); /* licm: 5 rounds: acc = 5 tanh(2w), q = 5 * (4 / 2) */
    assert_true(o.has_value);
    const float *l = (const float *)o.data;
    assert_true(fabsf(l[0] - (5 * tanhf(1.0f) + 10)) < 1e-5f);
    assert_true(fabsf(l[1] - (5 * tanhf(-2.0f) + 10)) < 1e-5f);
    assert_true(l[2] == 0 && l[3] == 0); /* n = 0: no round, no division */
    outcome_free(&o);
}

/* The default pipeline shrinks graphs (through function.c's call). */
static void test_default_pipeline_shrinks_graphs(void **state)
{
    (void)state;
    int sizes[2];
    for (int k = 0; k < 2; k++) {
        static ag_function_desc shrink[2];
        static const char *const names[2] = {"consts_none", "consts_default"};
        pass_set_pipeline_override(k == 0 ? "none" : NULL);
        shrink[k] = consts__desc;
        shrink[k].name = names[k];
        ag_function_register(&shrink[k]);
        ag_concrete_function *cf = ag_get_concrete_function(names[k], "f32[4]");
        assert_non_null(cf);
        sizes[k] = ag_concrete_num_nodes(cf);
    }
    pass_set_pipeline_override(NULL);
    assert_true(sizes[1] * 2 < sizes[0]);
}

/* ================================================ the manager, on text IR */

static ir_function *parse(const char *text)
{
    char err[512];
    ir_function *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!fn)
        fail_msg("%s", err);
    if (!ir_verify(fn, err, sizeof err))
        fail_msg("%s", err);
    return fn;
}

static char *print_to_string(const ir_function *fn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(fn, f);
    fclose(f);
    return text;
}

static const char *const sample_arith =
    "func @arith(%0: f32[4], %1: i32[4]) -> (f32[4], i32[4]) {\n"
    "  %2 = const() {value = [2]} : f32[]\n"
    "  %3 = const() {value = [3]} : f32[]\n"
    "  %4 = mul(%2, %3) : f32[] loc(\"a.c\":1)\n"
    "  %5 = mul(%0, %4) : f32[4]\n"
    "  %6 = mul(%4, %0) : f32[4]\n"
    "  %7 = add(%5, %6) : f32[4]\n"
    "  %8 = tanh(%7) : f32[4]\n"
    "  %9 = reduce_sum(%8) {axis = all, keepdims = false} : f32[]\n"
    "  %10 = sub(%1, %1) : i32[4]\n"
    "  %11 = neg(%0) : f32[4]\n"
    "  %12 = add(%8, %9) : f32[4]\n"
    "  return %12, %10\n"
    "}\n";

static const char *const sample_loop =
    "func @loop(%0: f32[?], %1: i32[], %2: f32[3]) -> (f32[?], i32[]) {\n"
    "  %3 = const() {value = [0]} : i32[]\n"
    "  %4 = print(%1) {text = \"n = {}\"} : bool[]\n"
    "  %5 = while(%3, %0, %1, %2) after %4 : (i32[], f32[?], i32[], f32[3]) loc(\"l.c\":3) {\n"
    "  ^cond(%6: i32[], %7: f32[?], %8: i32[], %9: f32[3]):\n"
    "    %10 = less(%6, %8) : bool[]\n"
    "    yield %10\n"
    "  ^body(%11: i32[], %12: f32[?], %13: i32[], %14: f32[3]):\n"
    "    %15 = const() {value = [1]} : i32[]\n"
    "    %16 = add(%11, %15) : i32[]\n"
    "    %17 = const() {value = [2]} : f32[]\n"
    "    %18 = mul(%14, %17) : f32[3]\n"
    "    %19 = reduce_sum(%18) {axis = all, keepdims = false} : f32[]\n"
    "    %20 = add(%12, %19) : f32[?]\n"
    "    %21 = print(%16) {text = \"i = {}\"} : bool[]\n"
    "    yield %16, %20, %13, %14\n"
    "  }\n"
    "  %22 = get(%5) {index = 1} : f32[?]\n"
    "  %23 = get(%5) {index = 0} : i32[]\n"
    "  %24 = const() {value = [1]} : bool[]\n"
    "  %25 = cond(%24, %23, %1) : (i32[]) loc(\"l.c\":9) {\n"
    "  ^then(%26: i32[], %27: i32[]):\n"
    "    %28 = add(%26, %27) : i32[]\n"
    "    yield %28\n"
    "  ^else(%29: i32[], %30: i32[]):\n"
    "    yield %29\n"
    "  }\n"
    "  %31 = get(%25) {index = 0} : i32[]\n"
    "  return %22, %31\n"
    "}\n";

static const char *const sample_dead =
    "func @dead(%0: f32[2], %1: bool[]) -> (f32[2]) {\n"
    "  %2 = exp(%0) : f32[2]\n"
    "  %3 = cond(%1, %0, %2) : (f32[2], f32[2]) {\n"
    "  ^then(%4: f32[2], %5: f32[2]):\n"
    "    %6 = neg(%5) : f32[2]\n"
    "    yield %4, %6\n"
    "  ^else(%7: f32[2], %8: f32[2]):\n"
    "    yield %7, %8\n"
    "  }\n"
    "  %9 = get(%3) {index = 0} : f32[2]\n"
    "  %10 = get(%3) {index = 1} : f32[2]\n"
    "  %11 = while(%0, %9) : (f32[2], f32[2]) {\n"
    "  ^cond(%12: f32[2], %13: f32[2]):\n"
    "    %14 = reduce_sum(%12) {axis = all, keepdims = false} : f32[]\n"
    "    %15 = const() {value = [100]} : f32[]\n"
    "    %16 = less(%14, %15) : bool[]\n"
    "    yield %16\n"
    "  ^body(%17: f32[2], %18: f32[2]):\n"
    "    %19 = add(%17, %17) : f32[2]\n"
    "    %20 = sqrt(%18) : f32[2]\n"
    "    yield %19, %20\n"
    "  }\n"
    "  %21 = get(%11) {index = 0} : f32[2]\n"
    "  return %21\n"
    "}\n";

static const char *const *samples(int *n)
{
    static const char *v[3];
    v[0] = sample_arith;
    v[1] = sample_loop;
    v[2] = sample_dead;
    *n = 3;
    return v;
}

/* The options every test starts from (main sets them). */
static pass_options base_options;

static void restore_options(void) { pass_set_options(&base_options); }

static void set_options(bool verify_each, const char *print_after, FILE *trace, bool strict)
{
    pass_options o;
    pass_options_init(&o);
    o.verify_each = verify_each;
    o.trace = trace;
    o.strict = strict;
    snprintf(o.print_after, sizeof o.print_after, "%s", print_after ? print_after : "");
    pass_set_options(&o);
}

static void test_table(void **state)
{
    (void)state;
    static const char *const order[] = {"infer", "bf16",  "fold",   "simplify",
                                        "matpow", "cse",  "licm",   "dce",
                                        "place",  "fusion", "memplan"};
    assert_int_equal(pass_count(), 11);
    for (int i = 0; i < 11; i++) {
        assert_string_equal(pass_at(i)->name, order[i]);
        assert_ptr_equal(pass_find(order[i]), pass_at(i));
        assert_true(strlen(pass_at(i)->summary) > 10);
    }
    assert_null(pass_find("nope"));
    assert_null(pass_at(11));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pass_list(f);
    fclose(f);
    assert_non_null(strstr(text, "  licm      hoist loop-invariant"));
    free(text);
}

static void test_specs(void **state)
{
    (void)state;
    char err[256];
    assert_true(pass_check_spec("fold,cse", err, sizeof err));
    assert_true(pass_check_spec(" fold , cse ", err, sizeof err));
    assert_true(pass_check_spec("", err, sizeof err));
    assert_true(pass_check_spec("none", err, sizeof err));
    assert_true(pass_check_spec("default,fusion", err, sizeof err));
    assert_true(pass_check_spec("infer,fixpoint(fold,fixpoint(cse,dce)),memplan", err, sizeof err));
    assert_false(pass_check_spec("fold,bogus", err, sizeof err));
    assert_string_equal(err, "unknown pass 'bogus' (agc-opt --list-passes lists them)");
    assert_false(pass_check_spec("fold,", err, sizeof err));
    assert_non_null(strstr(err, "expected a pass name"));
    assert_false(pass_check_spec("fixpoint(fold", err, sizeof err));
    assert_non_null(strstr(err, "expected ')'"));
    assert_false(pass_check_spec("fold)", err, sizeof err));
    assert_non_null(strstr(err, "unexpected ')'"));
    ir_function *fn = parse(sample_arith);
    assert_false(pass_run_spec(fn, "cse,,dce"));
    assert_non_null(strstr(pass_last_error(), "bad pass pipeline \"cse,,dce\""));
    ir_function_free(fn);
}

/* Runs spec on a sample and returns the node count after it. */
static int nodes_after(const char *text, const char *spec)
{
    ir_function *fn = parse(text);
    if (!pass_run_spec(fn, spec))
        fail_msg("'%s' failed: %s", spec, pass_last_error());
    int n = ir_function_num_nodes(fn);
    ir_function_free(fn);
    return n;
}

static void test_pipelines_on_text(void **state)
{
    (void)state;
    set_options(true, NULL, NULL, true);
    assert_int_equal(nodes_after(sample_arith, "none"), 11);
    /* fold makes 6 (a new node; the old ones stay for dce); cse leaves the
     * commuted f32 muls apart (NaN operands); dce drops neg and the dead
     * constants; simplify turns the integer x - x into zeros */
    assert_int_equal(nodes_after(sample_arith, "fold"), 11);
    assert_int_equal(nodes_after(sample_arith, "fold,cse"), 11);
    assert_int_equal(nodes_after(sample_arith, "fold,cse,dce"), 8);
    assert_int_equal(nodes_after(sample_arith, "default"), 8);
    assert_int_equal(nodes_after(sample_arith, "fixpoint(fold,simplify,cse,dce)"), 8);
    /* with fast_math, cse merges the commuted muls too */
    pass_options o;
    pass_get_options(&o);
    o.fast_math = true;
    pass_set_options(&o);
    assert_int_equal(nodes_after(sample_arith, "default"), 7);
    assert_int_equal(nodes_after(sample_loop, "none"), 17);
    assert_int_equal(nodes_after(sample_loop, "default"), 14);
    restore_options();
}

static void test_override(void **state)
{
    (void)state;
    set_options(true, NULL, NULL, true);
    ir_function *a = parse(sample_arith), *b = parse(sample_arith);
    pass_set_pipeline_override("cse");
    assert_true(pass_run_default(a));
    pass_set_pipeline_override(NULL);
    assert_true(pass_run_default(b));
    assert_int_equal(ir_function_num_nodes(a), 11);
    assert_int_equal(ir_function_num_nodes(b), 8);
    /* "default" inside a spec run by the override: the real pipeline */
    ir_function *c = parse(sample_arith);
    pass_set_pipeline_override("cse,default");
    assert_true(pass_run_default(c));
    pass_set_pipeline_override(NULL);
    assert_int_equal(ir_function_num_nodes(c), 8);
    ir_function_free(a);
    ir_function_free(b);
    ir_function_free(c);
    restore_options();
}

static void test_print_after(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    set_options(false, "cse,dce", f, true);
    ir_function *fn = parse(sample_arith);
    assert_true(pass_run_spec(fn, "fold,cse,dce,fusion"));
    fclose(f);
    assert_null(strstr(text, "IR after fold"));
    assert_null(strstr(text, "IR after fusion"));
    const char *cse = strstr(text, "// *** IR after cse ***\nfunc @arith(");
    assert_non_null(cse);
    assert_non_null(strstr(cse, "// *** IR after dce ***\nfunc @arith("));
    free(text);
    text = NULL;
    f = open_memstream(&text, &len);
    pass_options o;
    pass_options_init(&o);
    o.print_after_all = true;
    o.trace = f;
    pass_set_options(&o);
    assert_true(pass_run_spec(fn, "infer,memplan"));
    fclose(f);
    assert_non_null(strstr(text, "IR after infer"));
    assert_non_null(strstr(text, "IR after memplan"));
    free(text);
    ir_function_free(fn);
    restore_options();
}

/* A function the verifier rejects fails the first verified pass. */
static void test_verify_each_catches_broken_ir(void **state)
{
    (void)state;
    ir_function *fn = parse(sample_arith);
    fn->body->first->next->next->type.shape.dims[0] = 0; /* %4 : f32[0], wrong */
    fn->body->first->next->next->type.shape.rank = 1;
    set_options(true, NULL, NULL, true);
    assert_false(pass_run_spec(fn, "fusion,memplan"));
    assert_non_null(strstr(pass_last_error(), "internal error: after pass 'fusion' the IR is "
                                              "invalid: a.c:1: error: %4 (mul): has type"));
    set_options(false, NULL, NULL, true);
    assert_true(pass_run_spec(fn, "fusion,memplan"));
    /* In the runtime (not strict), the failure is reported as an error. */
    set_options(true, NULL, NULL, false);
    ag_clear_error();
    assert_false(pass_run_default(fn));
    assert_non_null(ag_last_error());
    assert_non_null(strstr(ag_last_error(), "while optimizing the graph of 'arith'"));
    ir_function_free(fn);
    restore_options();
}

/* A conflict infer finds is a located error in strict mode; otherwise it
 * is ignored, and no type changes (a refined parameter would make the
 * verifier reject the add). */
static void test_infer_diagnostic(void **state)
{
    (void)state;
    static const char *const text =
        "func @bad(%0: f32[3], %1: bool[]) -> (f32[4]) {\n"
        "  %2 = cond(%1, %0) : (f32[4]) loc(\"bad.c\":2:3) {\n"
        "  ^then(%3: f32[?]):\n"
        "    %4 = const() {value = [1,2,3,4]} : f32[4]\n"
        "    %5 = add(%3, %4) : f32[4] loc(\"bad.c\":3:9)\n"
        "    yield %5\n"
        "  ^else(%6: f32[?]):\n"
        "    %7 = const() {value = [0,0,0,0]} : f32[4]\n"
        "    yield %7\n"
        "  }\n"
        "  %8 = get(%2) {index = 0} : f32[4]\n"
        "  return %8\n"
        "}\n";
    ir_function *fn = parse(text);
    set_options(true, NULL, NULL, true);
    assert_false(pass_run_spec(fn, "infer"));
    assert_non_null(strstr(pass_last_error(), "bad.c:3:9: error: %5 (add): "));
    set_options(true, NULL, NULL, false);
    assert_true(pass_run_spec(fn, "infer"));
    char *after = print_to_string(fn);
    assert_non_null(strstr(after, "^then(%3: f32[?]):"));
    assert_non_null(strstr(after, "%5 = add(%3, %4) : f32[4]"));
    free(after);
    ir_function_free(fn);
    restore_options();
}

/* ------------------------------------------- infer on deeply nested loops */

/* Writes `depth` staged whiles nested in each other's bodies, each with a
 * counter and a vector x declared f32[?]. Each body runs the next loop on
 * x, then `x = tanh(inner x)` (the shape stays: infer finds f32[4] at
 * every level) or, with `grow`, `x = concat(inner x, [0])` (the shape
 * changes: every level's fixpoint must widen x to f32[?]). */
typedef struct nest_writer {
    FILE *f;
    int id;
    int depth;
    bool grow;
} nest_writer;

/* Emits the loop at `level` over (%counter, %x); returns the id of its x. */
static int write_loop(nest_writer *w, int level, int counter, int x)
{
    int indent = 2 + 4 * level;
    int loop = w->id++;
    fprintf(w->f, "%*s%%%d = while(%%%d, %%%d) : (i32[], f32[?]) {\n", indent, "", loop,
            counter, x);
    int c0 = w->id++, c1 = w->id++, k = w->id++, less = w->id++;
    fprintf(w->f, "%*s^cond(%%%d: i32[], %%%d: f32[?]):\n", indent, "", c0, c1);
    fprintf(w->f, "%*s  %%%d = const() {value = [2]} : i32[]\n", indent, "", k);
    fprintf(w->f, "%*s  %%%d = less(%%%d, %%%d) : bool[]\n", indent, "", less, c0, k);
    fprintf(w->f, "%*s  yield %%%d\n", indent, "", less);
    int p0 = w->id++, p1 = w->id++;
    fprintf(w->f, "%*s^body(%%%d: i32[], %%%d: f32[?]):\n", indent, "", p0, p1);
    int inner_x = p1;
    if (level + 1 < w->depth) {
        int zero = w->id++;
        fprintf(w->f, "%*s  %%%d = const() {value = [0]} : i32[]\n", indent, "", zero);
        inner_x = write_loop(w, level + 1, zero, p1);
    }
    int one = w->id++, next = w->id++;
    fprintf(w->f, "%*s  %%%d = const() {value = [1]} : i32[]\n", indent, "", one);
    fprintf(w->f, "%*s  %%%d = add(%%%d, %%%d) : i32[]\n", indent, "", next, p0, one);
    int nx = w->id++;
    if (w->grow) {
        int pad = w->id++;
        fprintf(w->f, "%*s  %%%d = const() {value = [0]} : f32[1]\n", indent, "", pad);
        fprintf(w->f, "%*s  %%%d = concat(%%%d, %%%d) {axis = 0} : f32[?]\n", indent, "",
                nx, inner_x, pad);
    } else {
        fprintf(w->f, "%*s  %%%d = tanh(%%%d) : f32[?]\n", indent, "", nx, inner_x);
    }
    fprintf(w->f, "%*s  yield %%%d, %%%d\n", indent, "", next, nx);
    fprintf(w->f, "%*s}\n", indent, "");
    int got = w->id++;
    fprintf(w->f, "%*s%%%d = get(%%%d) {index = 1} : f32[?]\n", indent, "", got, loop);
    return got;
}

static char *nested_loops_ir(int depth, bool grow)
{
    char *text = NULL;
    size_t len = 0;
    nest_writer w = {open_memstream(&text, &len), 1, depth, grow};
    fprintf(w.f, "func @deep(%%0: f32[4]) -> (f32[?]) {\n");
    int zero = w.id++;
    fprintf(w.f, "  %%%d = const() {value = [0]} : i32[]\n", zero);
    int x = write_loop(&w, 0, zero, 0);
    fprintf(w.f, "  return %%%d\n}\n", x);
    fclose(w.f);
    return text;
}

/* How many graphs infer walks for one run on loops nested `depth` deep. */
static int64_t infer_visits(int depth, bool grow, char **after)
{
    char *text = nested_loops_ir(depth, grow);
    ir_function *fn = parse(text);
    int64_t before = pass_infer_region_visits();
    assert_true(pass_run_spec(fn, "infer"));
    int64_t visits = pass_infer_region_visits() - before;
    *after = print_to_string(fn);
    ir_function_free(fn);
    free(text);
    return visits;
}

/* A loop's fixpoint infers its body once per round, and the body holds
 * the next loop: re-inferring every inner loop to its fixpoint in every
 * round of every outer one doubled the work per level (depth 24 took
 * 13 s). The work must grow linearly with the depth, and the types be
 * the same as without nesting. */
static void test_infer_nested_loops_linear(void **state)
{
    (void)state;
    enum { DEPTH = 24 };
    char *after;
    /* shapes kept: x is f32[4] at every level */
    int64_t visits = infer_visits(DEPTH, false, &after);
    /* each loop's two regions walked a few times at most (trial round,
     * final round with diagnostics, a widening round), and the body */
    if (visits > 1 + 8 * DEPTH)
        fail_msg("infer walked %lld graphs for %d nested loops", (long long)visits, DEPTH);
    assert_null(strstr(after, "f32[?]"));
    assert_non_null(strstr(after, "func @deep(%0: f32[4]) -> (f32[4])"));
    free(after);
    /* shapes grown: every level widens x */
    visits = infer_visits(DEPTH, true, &after);
    if (visits > 1 + 8 * DEPTH)
        fail_msg("infer walked %lld graphs for %d growing nested loops", (long long)visits,
                 DEPTH);
    assert_null(strstr(after, "f32[4]) -> (f32[4])"));
    assert_null(strstr(after, ": f32[5]"));
    free(after);
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, suffix) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_dump_ir(void **state)
{
    (void)state;
    char dir[] = "/tmp/agc-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("AG_DUMP_IR", dir, 1);
    rt_config_reload_env();
    ir_function *fn = parse(sample_arith);
    pass_options saved_options, o;
    pass_get_options(&saved_options);
    o = saved_options;
    o.caps = CPU_CAPS; /* the dumped plans are the cpu target's */
    pass_set_options(&o);
    assert_true(pass_run_default(fn));
    pass_set_options(&saved_options);
    assert_int_equal(count_files(dir, "arith."), 2);
    assert_int_equal(count_files(dir, ".before.ir"), 1);
    assert_int_equal(count_files(dir, ".after.ir"), 1);
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        char buf[4096] = {0};
        assert_true(fread(buf, 1, sizeof buf - 1, f) > 0);
        fclose(f);
        assert_non_null(strstr(buf, "func @arith("));
        if (strstr(e->d_name, "after"))
            assert_non_null(strstr(buf, "// fusion: 2 loops, 1 fused"));
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
    /* AG_DUMP_IR=1: to stderr */
    FILE *err = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    dup2(fileno(err), 2);
    setenv("AG_DUMP_IR", "1", 1);
    rt_config_reload_env();
    assert_true(pass_run_default(fn));
    setenv("AG_DUMP_IR", "0", 1);
    rt_config_reload_env();
    assert_true(pass_run_default(fn));
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("AG_DUMP_IR");
    rt_config_reload_env();
    char buf[8192] = {0};
    rewind(err);
    assert_true(fread(buf, 1, sizeof buf - 1, err) > 0);
    fclose(err);
    assert_non_null(strstr(buf, "// ----- AG_DUMP_IR: @arith before the pass pipeline (8 nodes)"));
    assert_non_null(strstr(buf, "// ----- AG_DUMP_IR: @arith after the pass pipeline (8 nodes)"));
    assert_null(strstr(strstr(buf, "after the pass") + 1, "after the pass")); /* "0": off */
    ir_function_free(fn);
}

/* Every pass alone, and several orders, keep every sample valid. */
static void test_every_pass_keeps_samples_valid(void **state)
{
    (void)state;
    static const char *const orders[] = {
        "dce,licm,cse,simplify,fold,infer", "licm,fold,licm,dce", "default,default",
        "fixpoint(licm,simplify,fold,cse,dce,infer)", "memplan,fusion,infer,infer",
    };
    int n;
    const char *const *texts = samples(&n);
    set_options(true, NULL, NULL, true);
    for (int s = 0; s < n; s++) {
        for (int i = 0; i < pass_count(); i++) {
            ir_function *fn = parse(texts[s]);
            if (!pass_run_spec(fn, pass_at(i)->name))
                fail_msg("sample %d, %s: %s", s, pass_at(i)->name, pass_last_error());
            ir_function_free(fn);
        }
        for (size_t k = 0; k < sizeof orders / sizeof orders[0]; k++) {
            ir_function *fn = parse(texts[s]);
            if (!pass_run_spec(fn, orders[k]))
                fail_msg("sample %d, %s: %s", s, orders[k], pass_last_error());
            ir_function_free(fn);
        }
    }
    restore_options();
}

/* The default pipeline reaches a fixpoint: running it again changes no
 * byte of the printed function. */
static void test_default_is_idempotent(void **state)
{
    (void)state;
    int n;
    const char *const *texts = samples(&n);
    for (int s = 0; s < n; s++) {
        ir_function *fn = parse(texts[s]);
        assert_true(pass_run_default(fn));
        char *once = print_to_string(fn);
        assert_true(pass_run_default(fn));
        char *twice = print_to_string(fn);
        assert_string_equal(once, twice);
        free(once);
        free(twice);
        ir_function_free(fn);
    }
}

static void test_loop_sample_optimized(void **state)
{
    (void)state;
    ir_function *fn = parse(sample_loop);
    set_options(true, NULL, NULL, true);
    assert_true(pass_run_spec(fn, "default"));
    char *text = print_to_string(fn);
    /* the invariant mul and reduce_sum left the body; the passed-through
     * %2 and %13 loop variables went (their uses take the operands); the
     * constant-predicate cond was inlined */
    assert_non_null(strstr(text, "reduce_sum(%"));
    const char *w = strstr(text, "= while(");
    assert_non_null(w);
    assert_null(strstr(w, "mul("));
    assert_null(strstr(text, "= cond("));
    assert_non_null(strstr(text, "^body(%11: i32[], %12: f32[?], %13: i32[], "));
    free(text);
    ir_function_free(fn);
    restore_options();
}

static void test_dead_sample_pruned(void **state)
{
    (void)state;
    ir_function *fn = parse(sample_dead);
    set_options(true, NULL, NULL, true);
    assert_true(pass_run_spec(fn, "dce"));
    char *text = print_to_string(fn);
    /* the cond lost everything (nothing used it); the while lost its
     * second variable, which only fed itself */
    assert_null(strstr(text, "= cond("));
    assert_null(strstr(text, "sqrt("));
    assert_null(strstr(text, "exp("));
    assert_non_null(strstr(text, "= while(%0) : (f32[2])"));
    free(text);
    ir_function_free(fn);
    restore_options();
}

/* ====================================== random graphs, run before and after */

/*
 * A differential test: random functions over f32[5] and i32[5] values
 * (NaN, infinities, signed zeros and INT32_MIN among the inputs; -0.0,
 * 0, 1 and NaN among the constants; arithmetic, comparisons, where,
 * reductions, casts, loops with invariant work, conds, prints) are run by
 * the reference executor before and after each pipeline, on a copy made
 * by printing and parsing; printed text, errors and result bytes must
 * match.
 */
typedef struct rgen {
    ir_graph *g;
    uint64_t seed;
    ir_node *f[64], *i[64]; /* recent f32[5] and i32[5] values */
    int nf, ni;
} rgen;

static unsigned rnd(rgen *R, unsigned n)
{
    R->seed = R->seed * 6364136223846793005u + 1442695040888963407u;
    return (unsigned)(R->seed >> 33) % n;
}

static ir_node *rg_emit(ir_graph *g, int op, const rt_attrs *a, int n, ir_node *const *in)
{
    rt_value vals[3], *ptrs[3];
    for (int k = 0; k < n; k++) {
        vals[k] = (rt_value){.kind = RT_SYMBOLIC, .dtype = in[k]->type.dtype,
                             .shape = in[k]->type.shape,
                             .numel = rt_shape_numel(&in[k]->type.shape)};
        ptrs[k] = &vals[k];
    }
    static const rt_attrs none;
    ir_type t = {0};
    rt_err e;
    if (!rt_infer((rt_op)op, a ? a : &none, ptrs, n, &t.dtype, &t.shape, &e))
        fail_msg("generating %s: %s", rt_ops[op].name, e.msg);
    t.elem_dtype = t.dtype;
    return ir_append(g, op, a, n, in, &t, (ag_loc){"random.c", 1});
}

static ir_node *rg_const(rgen *R, ag_dtype dt)
{
    static const double fvals[] = {-0.0, 0.0, 1.0, 2.0, NAN, -1.5};
    static const double ivals[] = {0, 1, -1, 3};
    double v = dt == AG_F32 ? fvals[rnd(R, 6)] : ivals[rnd(R, 4)];
    rt_value *x = rt_value_scalar(dt, v);
    ir_node *c = ir_append_const(R->g, x, (ag_loc){"random.c", 2});
    rt_value_free(x);
    return c;
}

/* A recent value of shape [5]. */
static ir_node *rg_value(rgen *R, ag_dtype dt)
{
    int n = dt == AG_F32 ? R->nf : R->ni;
    ir_node **v = dt == AG_F32 ? R->f : R->i;
    return v[n - 1 - (int)rnd(R, (unsigned)(n < 6 ? n : 6))];
}

/* An operand: mostly a recent value, sometimes a scalar constant. */
static ir_node *rg_pick(rgen *R, ag_dtype dt)
{
    return rnd(R, 5) == 0 ? rg_const(R, dt) : rg_value(R, dt);
}

static void rg_push(rgen *R, ir_node *n)
{
    ir_node **v = n->type.dtype == AG_F32 ? R->f : R->i;
    int *k = n->type.dtype == AG_F32 ? &R->nf : &R->ni;
    if (*k == 64) {
        memmove(v, v + 32, 32 * sizeof *v);
        *k = 32;
    }
    v[(*k)++] = n;
}

static ir_node *rg_binary(rgen *R, int op, ag_dtype dt)
{
    ir_node *in[2] = {rg_value(R, dt), rg_pick(R, dt)};
    if (rnd(R, 4) == 0)
        in[1] = in[0]; /* x op x */
    else if (rnd(R, 3) == 0) { /* c op x */
        ir_node *t = in[0];
        in[0] = in[1];
        in[1] = t;
    }
    return rg_emit(R->g, op, NULL, 2, in);
}

/* while (k < 3) { acc = acc * c + tanh(w) }: w invariant. */
static ir_node *rg_loop(rgen *R)
{
    ir_function *fn = R->g->fn;
    ir_type ti = {.dtype = AG_I32, .elem_dtype = AG_I32};
    ir_node *acc = rg_value(R, AG_F32), *w = rg_pick(R, AG_F32);
    ir_graph *c = ir_graph_new(fn), *b = ir_graph_new(fn);
    ir_node *ck = ir_add_param(c, &ti);
    ir_add_param(c, &acc->type);
    ir_add_param(c, &w->type);
    rt_value *three = rt_value_scalar(AG_I32, 3);
    ir_node *lt_in[2] = {ck, ir_append_const(c, three, (ag_loc){"random.c", 3})};
    rt_value_free(three);
    ir_node *lt = rg_emit(c, RT_OP_LESS, NULL, 2, lt_in);
    ir_set_results(c, 1, &lt);
    ir_node *bk = ir_add_param(b, &ti), *bacc = ir_add_param(b, &acc->type);
    ir_node *bw = ir_add_param(b, &w->type);
    rgen B = {.g = b, .seed = R->seed};
    ir_node *t = rg_emit(b, RT_OP_TANH, NULL, 1, &bw);
    ir_node *m_in[2] = {bacc, rg_const(&B, AG_F32)};
    ir_node *a_in[2] = {rg_emit(b, RT_OP_MUL, NULL, 2, m_in), t};
    rt_value *one = rt_value_scalar(AG_I32, 1);
    ir_node *k_in[2] = {bk, ir_append_const(b, one, (ag_loc){"random.c", 4})};
    rt_value_free(one);
    ir_node *ys[3] = {rg_emit(b, RT_OP_ADD, NULL, 2, k_in), rg_emit(b, RT_OP_ADD, NULL, 2, a_in), bw};
    ir_set_results(b, 3, ys);
    rt_value *zero = rt_value_scalar(AG_I32, 0);
    ir_node *in[3] = {ir_append_const(R->g, zero, (ag_loc){"random.c", 5}), acc, w};
    rt_value_free(zero);
    ir_type res[3] = {ti, acc->type, w->type};
    ir_node *loop = ir_append_region_op(R->g, IR_WHILE, 3, in, c, b, 3, res, (ag_loc){"random.c", 6});
    return ir_append_get(R->g, loop, 1, (ag_loc){"random.c", 6});
}

/* cond(any(x > 0)) { print; x * 2 } else { -x } */
static ir_node *rg_cond(rgen *R)
{
    ir_function *fn = R->g->fn;
    ir_node *x = rg_value(R, AG_F32);
    ir_node *gt_in[2] = {x, rg_const(R, AG_F32)};
    ir_node *gt = rg_emit(R->g, RT_OP_GREATER, NULL, 2, gt_in);
    ir_node *f = rg_emit(R->g, RT_OP_CAST, &(rt_attrs){.dtype = AG_F32}, 1, &gt);
    ir_node *s = rg_emit(R->g, RT_OP_REDUCE_MAX, &(rt_attrs){.axis = AG_ALL_AXES}, 1, &f);
    ir_node *pred = rg_emit(R->g, RT_OP_CAST, &(rt_attrs){.dtype = AG_BOOL}, 1, &s);
    ir_graph *a = ir_graph_new(fn), *b = ir_graph_new(fn);
    ir_node *pa = ir_add_param(a, &x->type), *pb = ir_add_param(b, &x->type);
    ir_append(a, RT_OP_PRINT, &(rt_attrs){.text = "then {}"}, 1, &pa,
              &(ir_type){.dtype = AG_BOOL, .elem_dtype = AG_BOOL}, (ag_loc){"random.c", 7});
    rgen A = {.g = a, .seed = R->seed};
    ir_node *m_in[2] = {pa, rg_const(&A, AG_F32)};
    ir_node *ya = rg_emit(a, RT_OP_MUL, NULL, 2, m_in), *yb = rg_emit(b, RT_OP_NEG, NULL, 1, &pb);
    ir_set_results(a, 1, &ya);
    ir_set_results(b, 1, &yb);
    ir_node *in[2] = {pred, x};
    ir_node *c = ir_append_region_op(R->g, IR_COND, 2, in, a, b, 1, &x->type, (ag_loc){"random.c", 8});
    return ir_append_get(R->g, c, 0, (ag_loc){"random.c", 8});
}

static void rg_step(rgen *R)
{
    static const int fbin[] = {RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_DIV, RT_OP_MAXIMUM,
                               RT_OP_MINIMUM};
    static const int ibin[] = {RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_FLOORDIV, RT_OP_MAXIMUM};
    static const int fun[] = {RT_OP_NEG, RT_OP_ABS, RT_OP_TANH, RT_OP_EXP, RT_OP_SQRT};
    unsigned r = rnd(R, 100);
    if (r < 30) {
        rg_push(R, rg_binary(R, fbin[rnd(R, 6)], AG_F32));
    } else if (r < 45) {
        rg_push(R, rg_binary(R, ibin[rnd(R, 5)], AG_I32));
    } else if (r < 58) {
        ir_node *x = rg_value(R, AG_F32);
        rg_push(R, rg_emit(R->g, fun[rnd(R, 5)], NULL, 1, &x));
    } else if (r < 64) {
        ir_node *x = rg_value(R, AG_I32);
        rg_push(R, rg_emit(R->g, RT_OP_NEG, NULL, 1, &x));
    } else if (r < 70) { /* casts both ways, and to the same dtype */
        ir_node *x = rg_value(R, rnd(R, 2) ? AG_F32 : AG_I32);
        ag_dtype to = rnd(R, 2) ? AG_F32 : AG_I32;
        rg_push(R, rg_emit(R->g, RT_OP_CAST, &(rt_attrs){.dtype = to}, 1, &x));
    } else if (r < 76) {
        ir_node *lt_in[2] = {rg_value(R, AG_F32), rg_pick(R, AG_F32)};
        ir_node *in[3] = {rg_emit(R->g, RT_OP_LESS, NULL, 2, lt_in), rg_value(R, AG_F32),
                          rg_pick(R, AG_F32)};
        rg_push(R, rg_emit(R->g, RT_OP_WHERE, NULL, 3, in));
    } else if (r < 82) { /* a sum broadcast back */
        ir_node *x = rg_value(R, AG_F32);
        ir_node *in[2] = {x, rg_emit(R->g, RT_OP_REDUCE_SUM, &(rt_attrs){.axis = AG_ALL_AXES}, 1, &x)};
        rg_push(R, rg_emit(R->g, RT_OP_SUB, NULL, 2, in));
    } else if (r < 88) { /* reshape chains */
        ir_node *x = rg_value(R, AG_F32);
        ir_node *y = rg_emit(R->g, RT_OP_RESHAPE, &(rt_attrs){.shape = AG_SHAPE(5, 1)}, 1, &x);
        rg_push(R, rg_emit(R->g, RT_OP_RESHAPE, &(rt_attrs){.shape = AG_SHAPE(5)}, 1, &y));
    } else if (r < 93) {
        rg_push(R, rg_loop(R));
    } else if (r < 97) {
        rg_push(R, rg_cond(R));
    } else {
        ir_node *x = rg_pick(R, rnd(R, 2) ? AG_F32 : AG_I32);
        ir_append(R->g, RT_OP_PRINT, &(rt_attrs){.text = "p {}"}, 1, &x,
                  &(ir_type){.dtype = AG_BOOL, .elem_dtype = AG_BOOL}, (ag_loc){"random.c", 9});
    }
}

static ir_function *random_function(uint64_t seed, int steps)
{
    ir_function *fn = ir_function_new("random");
    rgen R = {.g = fn->body, .seed = seed};
    ir_type tf = {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = AG_SHAPE(5)};
    ir_type ti = {.dtype = AG_I32, .elem_dtype = AG_I32, .shape = AG_SHAPE(5)};
    rg_push(&R, ir_add_param(fn->body, &tf));
    rg_push(&R, ir_add_param(fn->body, &ti));
    for (int k = 0; k < steps; k++)
        rg_step(&R);
    ir_node *results[4] = {R.f[R.nf - 1], R.i[R.ni - 1], R.f[R.nf / 2], R.i[R.ni / 2]};
    ir_set_results(fn->body, 4, results);
    char err[1024];
    if (!ir_verify(fn, err, sizeof err))
        fail_msg("seed %llu: the random function is invalid: %s", (unsigned long long)seed, err);
    return fn;
}

/* Runs fn on the fixed inputs; the outcome as in the program tests. */
static void execute(const ir_function *fn, outcome *o)
{
    memset(o, 0, sizeof *o);
    rt_value *x = rt_value_new(AG_F32, &AG_SHAPE(5)), *k = rt_value_new(AG_I32, &AG_SHAPE(5));
    const float xs[5] = {-0.0f, 0.0f, NAN, INFINITY, -2.5f};
    const int32_t ks[5] = {0, -1, 7, INT32_MIN, 3};
    memcpy(x->data, xs, sizeof xs);
    memcpy(k->data, ks, sizeof ks);
    rt_value *args[2] = {x, k}, *res[4] = {NULL};
    ir_plan *plan = ir_plan_new(fn);
    ag_clear_error();
    CAPTURE(o->printed, o->has_value = ir_execute(plan, args, 2, res));
    o->error = error_text();
    o->bytes = 0;
    for (int r = 0; o->has_value && r < 4; r++)
        o->bytes += rt_value_bytes(res[r]);
    o->data = malloc(o->bytes + 1);
    size_t at = 0;
    for (int r = 0; r < 4; r++) {
        if (o->has_value) {
            memcpy(o->data + at, res[r]->data, rt_value_bytes(res[r]));
            at += rt_value_bytes(res[r]);
        }
        rt_value_free(res[r]);
    }
    o->shape = AG_SHAPE((int64_t)o->bytes);
    ir_plan_free(plan);
    rt_value_free(x);
    rt_value_free(k);
}

static ir_function *copy_function(const ir_function *fn)
{
    char *text = print_to_string(fn);
    char err[512];
    ir_function *copy = ir_parse(text, "random", err, sizeof err);
    if (!copy)
        fail_msg("the printed function does not parse: %s\n%s", err, text);
    free(text);
    return copy;
}

static void test_random_graphs_differential(void **state)
{
    (void)state;
    static const char *const specs[] = {"default", "infer", "fold", "simplify", "cse",
                                        "licm", "dce", "licm,fold,dce,cse,simplify"};
    pass_options o;
    pass_options_init(&o);
    o.verify_each = true;
    o.strict = true;
    pass_set_options(&o);
    /* AG_TEST_SEEDS=n tries more functions (a longer fuzzing run). */
    const char *env = getenv("AG_TEST_SEEDS");
    uint64_t seeds = env && atoi(env) > 40 ? (uint64_t)atoi(env) : 40;
    int shrunk = 0;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        ir_function *fn = random_function(seed, 40 + (int)(seed % 5) * 20);
        outcome base;
        execute(fn, &base);
        for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
            ir_function *opt = copy_function(fn);
            if (!pass_run_spec(opt, specs[s]))
                fail_msg("seed %llu, %s: %s", (unsigned long long)seed, specs[s], pass_last_error());
            shrunk += s == 0 && ir_function_num_nodes(opt) < ir_function_num_nodes(fn);
            outcome after;
            execute(opt, &after);
            if (strcmp(base.printed, after.printed) != 0 || (base.error == NULL) != (after.error == NULL) ||
                base.bytes != after.bytes || (base.has_value && memcmp(base.data, after.data, base.bytes))) {
                ir_print(fn, stderr); /* what failed, to reproduce with agc-opt */
                fail_msg("seed %llu: '%s' changed what the function does (printed \"%s\" vs \"%s\", "
                         "error \"%s\" vs \"%s\")", (unsigned long long)seed, specs[s], base.printed,
                         after.printed, base.error ? base.error : "", after.error ? after.error : "");
            }
            outcome_free(&after);
            ir_function_free(opt);
        }
        outcome_free(&base);
        ir_function_free(fn);
    }
    assert_true(shrunk >= 35); /* the pipeline did something */
    restore_options();
}

/* ====================================== matpow: integer power chains */

/*
 * The guide's power function, r = eye; k times r = x * r (and the mirrored
 * r = r * x, and both from a matrix r0 instead of eye), traced for i32 and
 * i64 and k = 1..40, run by the reference executor before and after the
 * default pipeline. Integer products wrap, so repeated squaring must give
 * the same bits; the entries are chosen so that every product overflows.
 * Both are also checked against a plain C loop of the k products.
 */
typedef enum { CHAIN_EYE_LEFT, CHAIN_EYE_RIGHT, CHAIN_R0_LEFT, CHAIN_R0_RIGHT } chain_mode;

static struct {
    int k;
    ag_dtype dt;
    chain_mode mode;
} chain_cfg;

static bool chain_left(void)
{
    return chain_cfg.mode == CHAIN_EYE_LEFT || chain_cfg.mode == CHAIN_R0_LEFT;
}

static bool chain_from_eye(void)
{
    return chain_cfg.mode == CHAIN_EYE_LEFT || chain_cfg.mode == CHAIN_EYE_RIGHT;
}

static ag_tensor chain_staged(ag_tensor x, ag_tensor r0)
{
    ag_tensor r = chain_from_eye() ? ag_eye(4, chain_cfg.dt) : r0;
    for (int i = 0; i < chain_cfg.k; i++)
        r = chain_left() ? ag_matmul(x, r) : ag_matmul(r, x);
    return r;
}

/* r0 is 4x3 for x * r0, 3x4 for r0 * x. */
static ag_shape chain_r0_shape(void) { return chain_left() ? AG_SHAPE(4, 3) : AG_SHAPE(3, 4); }

static ir_function *trace_chain(void)
{
    ir_function *fn = ir_function_new("chain");
    ir_trace *t = ir_trace_begin(fn);
    ir_trace_set_first(t, true);
    ag_scope_push();
    ag_dtype dt = chain_cfg.dt;
    ir_type tx = {.dtype = dt, .elem_dtype = dt, .shape = AG_SHAPE(4, 4)};
    ir_type tr = {.dtype = dt, .elem_dtype = dt, .shape = chain_r0_shape()};
    ag_tensor x = ir_trace_param(t, &tx), r0 = ir_trace_param(t, &tr);
    ag_tensor out = chain_staged(x, r0);
    ir_trace_set_outputs(t, 1, &out, AG_HERE);
    ag_scope_pop();
    assert_true(ir_trace_end(t));
    char err[512];
    if (!ir_verify(fn, err, sizeof err))
        fail_msg("traced chain invalid: %s", err);
    return fn;
}

static const int64_t chain_x[16] = {INT64_MAX, -3, 5,  INT64_MIN, 7, 1,  -1, 2,
                                    0x123456789abcdefLL, 0, 9, -11, 2147483647, 4, -2, 3};
static const int64_t chain_r0[12] = {1, 2, 3, 4, -5, 6, INT32_MIN, 8, 9, 0, -1, INT64_MAX};

static rt_value *chain_value(const ag_shape *shape, const int64_t *src)
{
    rt_value *v = rt_value_new(chain_cfg.dt, shape);
    for (int64_t i = 0; i < v->numel; i++) {
        if (chain_cfg.dt == AG_I32)
            ((int32_t *)v->data)[i] = (int32_t)(uint32_t)(uint64_t)src[i]; /* low bits */
        else
            ((int64_t *)v->data)[i] = src[i];
    }
    return v;
}

/* Runs fn by the reference executor on chain_x, chain_r0. */
static rt_value *run_chain(const ir_function *fn)
{
    ag_shape rs = chain_r0_shape();
    rt_value *x = chain_value(&AG_SHAPE(4, 4), chain_x), *r0 = chain_value(&rs, chain_r0);
    rt_value *args[2] = {x, r0}, *res[1] = {NULL};
    ir_plan *plan = ir_plan_new(fn);
    if (!ir_execute(plan, args, 2, res))
        fail_msg("the chain failed: %s", ag_last_error());
    ir_plan_free(plan);
    rt_value_free(x);
    rt_value_free(r0);
    return res[0];
}

/* The k products one by one, in uint64_t: the low 32 bits of a wrapping
 * 64-bit result are the wrapping 32-bit result. */
static void chain_by_hand(uint64_t *r, int rows, int cols)
{
    int64_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = chain_cfg.dt == AG_I32 ? (int32_t)(uint32_t)(uint64_t)chain_x[i] : chain_x[i];
    for (int i = 0; i < rows * cols; i++)
        r[i] = chain_from_eye() ? (uint64_t)(i / cols == i % cols)
               : chain_cfg.dt == AG_I32 ? (uint64_t)(int64_t)(int32_t)(uint32_t)(uint64_t)chain_r0[i]
                                        : (uint64_t)chain_r0[i];
    for (int s = 0; s < chain_cfg.k; s++) {
        uint64_t t[16] = {0};
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                for (int p = 0; p < 4; p++)
                    t[i * cols + j] += chain_left() ? (uint64_t)x[i * 4 + p] * r[p * cols + j]
                                                    : r[i * 4 + p] * (uint64_t)x[p * 4 + j];
        memcpy(r, t, sizeof(uint64_t) * (size_t)(rows * cols));
    }
}

static void expect_chain_equals_hand(const rt_value *v)
{
    uint64_t hand[16];
    chain_by_hand(hand, (int)v->shape.dims[0], (int)v->shape.dims[1]);
    for (int64_t i = 0; i < v->numel; i++) {
        uint64_t got = chain_cfg.dt == AG_I32 ? (uint32_t)((int32_t *)v->data)[i]
                                              : (uint64_t)((int64_t *)v->data)[i];
        uint64_t want = chain_cfg.dt == AG_I32 ? (uint32_t)hand[i] : hand[i];
        if (got != want)
            fail_msg("mode %d, %s, k = %d: element %lld is %llu, by hand %llu",
                     (int)chain_cfg.mode, chain_cfg.dt == AG_I32 ? "i32" : "i64", chain_cfg.k,
                     (long long)i, (unsigned long long)got, (unsigned long long)want);
    }
}

static int count_matmuls(const ir_graph *g)
{
    int n = 0;
    for (const ir_node *node = g->first; node; node = node->next) {
        n += node->opcode == RT_OP_MATMUL;
        if (node->opcode == IR_COND || node->opcode == IR_WHILE)
            n += count_matmuls(node->region[0]) + count_matmuls(node->region[1]);
    }
    return n;
}

/* Products repeated squaring needs for x^e. */
static int squaring_products(int e)
{
    int n = -1;
    for (int v = e; v; v >>= 1)
        n += 1 + (v & 1);
    return n - 1;
}

/* The matmuls the default pipeline leaves for a chain of k from eye:
 * simplify drops x * eye, then the chain of k - 1 on x is x^k when
 * squaring is shorter. */
static int expected_eye_products(int k)
{
    int sq = squaring_products(k);
    return k == 1 ? 0 : sq < k - 1 ? sq : k - 1;
}

static void check_one_chain(void)
{
    ir_function *fn = trace_chain();
    ir_function *opt = copy_function(fn);
    if (!pass_run_default(opt))
        fail_msg("k = %d: %s", chain_cfg.k, pass_last_error());
    char err[512];
    if (!ir_verify(opt, err, sizeof err))
        fail_msg("k = %d: the optimized chain is invalid: %s", chain_cfg.k, err);
    rt_value *before = run_chain(fn), *after = run_chain(opt);
    assert_int_equal(before->dtype, after->dtype);
    assert_true(ag_shape_equal(before->shape, after->shape));
    if (memcmp(before->data, after->data, rt_value_bytes(before)) != 0)
        fail_msg("mode %d, k = %d: the optimized chain computes other bits", (int)chain_cfg.mode,
                 chain_cfg.k);
    expect_chain_equals_hand(after);
    int k = chain_cfg.k, products = count_matmuls(opt->body);
    assert_int_equal(count_matmuls(fn->body), k);
    if (chain_from_eye())
        assert_int_equal(products, expected_eye_products(k));
    else /* x^k * r0, or the chain when 4x4 squares cost more */
        assert_true(products == k || products == squaring_products(k) + 1);
    if (k >= 8)
        assert_true(products < k);
    rt_value_free(before);
    rt_value_free(after);
    ir_function_free(opt);
    ir_function_free(fn);
}

static void test_matpow_chains_bitwise(void **state)
{
    (void)state;
    static const ag_dtype dts[2] = {AG_I32, AG_I64};
    for (int m = CHAIN_EYE_LEFT; m <= CHAIN_R0_RIGHT; m++)
        for (int d = 0; d < 2; d++)
            for (int k = 1; k <= 40; k++) {
                chain_cfg.k = k;
                chain_cfg.dt = dts[d];
                chain_cfg.mode = (chain_mode)m;
                check_one_chain();
            }
}

/* The guide's power(x, 40) in f32 keeps its 40 products: float products
 * round, so neither x * eye nor the grouping may change. */
static void test_matpow_leaves_floats(void **state)
{
    (void)state;
    chain_cfg.k = 40;
    chain_cfg.dt = AG_F32;
    chain_cfg.mode = CHAIN_EYE_LEFT;
    ir_function *fn = trace_chain();
    assert_true(pass_run_default(fn));
    assert_int_equal(count_matmuls(fn->body), 40);
    ir_function_free(fn);
}

/* The ipow program (its chains rewritten) against the same products in C. */
static void test_matpow_program_value(void **state)
{
    (void)state;
    outcome o;
    run_program(2, N_PROGRAMS - 1, &o);
    assert_true(o.has_value);
    assert_int_equal(o.bytes, (16 + 12 + 16) * sizeof(int64_t));
    const int64_t *v = (const int64_t *)o.data;
    const int64_t x[16] = {INT64_MAX, -3, 5, INT64_MIN, 7, 1, -1, 2,
                           0x123456789abcdefLL, 0, 9, -11, 13, 4, -2, 3};
    const int64_t r0[12] = {1, 2, 3, 4, -5, 6, INT64_MAX, 8, 9, 0, -1, 12};
    uint64_t a[16], b[12], t[16];
    for (int i = 0; i < 16; i++)
        a[i] = i / 4 == i % 4;
    for (int i = 0; i < 12; i++)
        b[i] = (uint64_t)r0[i];
    for (int s = 0; s < 37 + 12; s++) { /* x^37, then 2 rounds of 6 more */
        memset(t, 0, sizeof t);
        for (int i = 0; i < 16; i++)
            for (int p = 0; p < 4; p++)
                t[i] += (uint64_t)x[i / 4 * 4 + p] * a[p * 4 + i % 4];
        memcpy(a, t, sizeof a);
        if (s == 36)
            for (int i = 0; i < 16; i++)
                assert_true((uint64_t)v[i] == a[i]);
    }
    for (int s = 0; s < 21; s++) {
        memset(t, 0, sizeof t);
        for (int i = 0; i < 12; i++)
            for (int p = 0; p < 4; p++)
                t[i] += b[i / 4 * 4 + p] * (uint64_t)x[p * 4 + i % 4];
        memcpy(b, t, sizeof b);
    }
    for (int i = 0; i < 12; i++)
        assert_true((uint64_t)v[16 + i] == b[i]);
    for (int i = 0; i < 16; i++)
        assert_true((uint64_t)v[28 + i] == a[i]);
    outcome_free(&o);
}

/* ============================================================ analyses */

static void test_fusion_plan(void **state)
{
    (void)state;
    ir_function *fn = parse(sample_arith);
    pass_fusion_plan *p = pass_fusion_plan_new(fn, CPU_CAPS);
    /* %5 %6 %7 %8 form one loop, closed when the reduction %9 reads %8;
     * %12 (reading %8 and %9) runs after %9, so in a loop of its own;
     * %10 is alone too; %4 is a scalar; %11 never runs */
    assert_int_equal(p->n_clusters, 3);
    assert_int_equal(p->cluster[5], 0);
    assert_int_equal(p->cluster[6], 0);
    assert_int_equal(p->cluster[7], 0);
    assert_int_equal(p->cluster[8], 0);
    assert_int_equal(p->cluster_size[0], 4);
    assert_int_equal(p->cluster[9], -1);
    assert_int_equal(p->cluster[10], 1);
    assert_int_equal(p->cluster[12], 2);
    assert_int_equal(p->cluster[4], -1);
    assert_int_equal(p->cluster[11], -1);
    assert_false(p->checked[12]);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pass_fusion_plan_print(p, fn, f);
    fclose(f);
    assert_string_equal(text, "// fusion: 3 loops, 1 fused\n"
                              "// loop 0: %5 mul, %6 mul, %7 add, %8 tanh\n"
                              "// loop 1: %10 sub\n"
                              "// loop 2: %12 add\n");
    free(text);
    pass_fusion_plan_free(p);
    ir_function_free(fn);
}

static void test_memory_plan(void **state)
{
    (void)state;
    ir_function *fn = parse(sample_arith);
    pass_memory_plan *p = pass_memory_plan_new(fn, CPU_CAPS);
    /* values: %4 (4 B); loop 0 (%5 %6 %7 %8) stores only %8 (16 B), the
     * rest live in registers; %9 (4 B); %10 and %12 (16 B, loops of their
     * own); %11 (16 B: never runs, so in no loop; dies at once) */
    assert_int_equal(p->n_values, 6);
    assert_int_equal(p->naive_bytes, 4 + 16 + 4 + 16 * 3);
    for (int id = 5; id <= 7; id++)
        assert_int_equal(p->buffer[id], -1);
    assert_false(p->in_place[8]); /* it reads %0 (a parameter) and %4 (4 B) */
    assert_false(p->in_place[9]); /* a reduction is not elementwise */
    assert_true(p->in_place[12]); /* add over %8, which dies there */
    assert_int_equal(p->buffer[12], p->buffer[8]);
    assert_true(p->peak_bytes <= p->arena_bytes);
    assert_true(p->arena_bytes < p->naive_bytes);
    assert_int_equal(p->n_dynamic, 0);
    pass_memory_plan_free(p);
    ir_function_free(fn);
}

/* ======================================================= split.c's cut */

/* A serving function: host work (scaling) before the scope's nodes (a
 * layer, constants in it and outside), host work after (argmax) that
 * also returns the layer's output, and a host value the layer does not
 * read (the scaled input, returned too). */
static const char split_serve[] =
    "func @serve(%0: f32[?,4]) -> (i64[?], f32[?,3], f32[?,4]) {\n"
    "  %1 = const() {value = [255]} : f32[]\n"
    "  %2 = div(%0, %1) : f32[?,4] loc(\"m.c\":20)\n"
    "  %3 = const() {value = [1, 0, 2, 0, 1, 0, 3, 0, 1, 1, 1, 1]} : f32[4,3] scope(\"layer\")\n"
    "  %4 = matmul(%2, %3) : f32[?,3] loc(\"m.c\":5) scope(\"layer\")\n"
    "  %5 = mul(%4, %1) : f32[?,3] loc(\"m.c\":6) scope(\"layer\")\n"
    "  %6 = softmax(%5) {axis = 1} : f32[?,3] loc(\"m.c\":7) scope(\"layer\")\n"
    "  %7 = argmax(%6) {axis = 1} : i64[?] loc(\"m.c\":21)\n"
    "  return %7, %6, %2\n}\n";

/* Runs the three parts as a caller would, routing values by the sources. */
static void run_split(const pass_split *s, rt_value *const *in, int n_in, rt_value **out)
{
    rt_value *pre_out[8] = {0}, *mid_out[8] = {0}, *mid_in[8], *post_in[8];
    if (s->pre) {
        ir_plan *p = ir_plan_new(s->pre);
        assert_true(ir_execute(p, in, n_in, pre_out));
        ir_plan_free(p);
    }
    const ir_function *parts[2] = {s->middle, s->post};
    const pass_split_source *src[2] = {s->middle_in, s->post_in};
    rt_value **args[2] = {mid_in, post_in}, **res[2] = {mid_out, out};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < parts[k]->body->n_params; i++)
            args[k][i] = src[k][i].from == PASS_FROM_INPUT ? in[src[k][i].index]
                         : src[k][i].from == PASS_FROM_PRE ? pre_out[src[k][i].index]
                                                           : mid_out[src[k][i].index];
        ir_plan *p = ir_plan_new(parts[k]);
        assert_true(ir_execute(p, args[k], parts[k]->body->n_params, res[k]));
        ir_plan_free(p);
    }
    for (int i = 0; i < 8; i++) {
        rt_value_free(pre_out[i]);
        rt_value_free(mid_out[i]);
    }
}

static void test_split_cuts_at_the_scope(void **state)
{
    (void)state;
    ir_function *fn = parse(split_serve);
    const char *scopes[] = {"layer"};
    pass_split s;
    char err[512];
    if (!pass_split_scopes(fn, scopes, 1, "batching 'layer'", &s, err, sizeof err))
        fail_msg("%s", err);
    /* before: the scaling; middle: the layer, reading it (and a copy of
     * the constant 255); after: argmax of the middle's result */
    char *pre = print_to_string(s.pre), *mid = print_to_string(s.middle),
         *post = print_to_string(s.post);
    assert_non_null(strstr(pre, "func @\"serve before layer\"("));
    assert_non_null(strstr(post, "func @\"serve after layer\"("));
    assert_non_null(strstr(pre, "div("));
    assert_null(strstr(pre, "matmul("));
    assert_null(strstr(pre, "argmax("));
    if (!strstr(mid, "func @layer(%") || !strstr(mid, ": f32[?,4]) -> (f32[?,3]) {"))
        fail_msg("%s", mid);
    assert_non_null(strstr(mid, "matmul("));
    assert_non_null(strstr(mid, "value = [255]"));
    assert_null(strstr(mid, "div("));
    assert_null(strstr(mid, "argmax("));
    assert_non_null(strstr(post, "argmax("));
    assert_null(strstr(post, "matmul("));
    assert_null(strstr(post, "div("));
    free(pre);
    free(mid);
    free(post);
    assert_int_equal(s.pre->body->n_results, 1);
    assert_int_equal(s.middle->body->n_params, 1);
    assert_int_equal(s.middle_in[0].from, PASS_FROM_PRE);
    assert_int_equal(s.middle_in[0].index, 0);
    /* post reads the layer's output and the scaled input */
    assert_int_equal(s.post->body->n_params, 2);
    assert_int_equal(s.post_in[0].from, PASS_FROM_PRE);
    assert_int_equal(s.post_in[1].from, PASS_FROM_MIDDLE);

    /* the parts run in turn give the function's results, bit for bit */
    float x[2 * 4] = {10, 200, 30, 4, 255, 0, 17, 99};
    rt_value *in[1] = {rt_value_new(AG_F32, &AG_SHAPE(2, 4))};
    memcpy(in[0]->data, x, sizeof x);
    rt_value *want[3], *got[3];
    ir_plan *p = ir_plan_new(fn);
    assert_true(ir_execute(p, in, 1, want));
    ir_plan_free(p);
    run_split(&s, in, 1, got);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_value_bytes(want[i]), rt_value_bytes(got[i]));
        assert_memory_equal(want[i]->data, got[i]->data, rt_value_bytes(want[i]));
        rt_value_free(want[i]);
        rt_value_free(got[i]);
    }
    rt_value_free(in[0]);
    pass_split_free(&s);
    ir_function_free(fn);
}

/* No host work before: no pre part, the middle reads the input. A scope
 * whose nodes read host work that reads them cannot be cut; nor can a
 * scope the body has no node of. */
static void test_split_refusals(void **state)
{
    (void)state;
    const char *scopes[] = {"layer"};
    pass_split s;
    char err[512];
    ir_function *direct = parse(
        "func @f(%0: f32[?,3]) -> (f32[?,3]) {\n"
        "  %1 = softmax(%0) {axis = 1} : f32[?,3] loc(\"m.c\":7) scope(\"layer\")\n"
        "  %2 = neg(%1) : f32[?,3] loc(\"m.c\":9)\n"
        "  return %2\n}\n");
    assert_true(pass_split_scopes(direct, scopes, 1, "batching 'layer'", &s, err, sizeof err));
    assert_null(s.pre);
    assert_int_equal(s.middle_in[0].from, PASS_FROM_INPUT);
    pass_split_free(&s);
    ir_function_free(direct);

    ir_function *sandwich = parse(
        "func @f(%0: f32[?,3]) -> (f32[?,3]) {\n"
        "  %1 = softmax(%0) {axis = 1} : f32[?,3] loc(\"m.c\":7) scope(\"layer\")\n"
        "  %2 = neg(%1) : f32[?,3] loc(\"m.c\":9)\n"
        "  %3 = exp(%2) : f32[?,3] loc(\"m.c\":8) scope(\"layer\")\n"
        "  return %3\n}\n");
    assert_false(pass_split_scopes(sandwich, scopes, 1, "batching 'layer'", &s, err, sizeof err));
    assert_string_equal(err, "m.c:8: batching 'layer': 'exp' here reads the result of 'neg' at "
                             "line 9, host work done after batching 'layer''s own nodes; batch "
                             "the whole function instead (name it in batch_options' "
                             "experimental)");
    ir_function_free(sandwich);

    ir_function *none = parse("func @f(%0: f32[?,3]) -> (f32[?,3]) {\n"
                              "  %1 = neg(%0) : f32[?,3] loc(\"m.c\":9)\n"
                              "  return %1\n}\n");
    assert_false(pass_split_scopes(none, scopes, 1, "batching 'layer'", &s, err, sizeof err));
    assert_non_null(strstr(err, "no node of the function's own body was traced in it"));
    ir_function_free(none);
}

int main(void)
{
    pass_options_init(&base_options);
    base_options.verify_each = true; /* every traced function, after every pass */
    restore_options();
    const struct CMUnitTest tests[] = {
        TU_TEST(test_pipelines_preserve_results),
        TU_TEST(test_programs_compute_known_values),
        TU_TEST(test_default_pipeline_shrinks_graphs),
        TU_TEST(test_table),
        TU_TEST(test_specs),
        TU_TEST(test_pipelines_on_text),
        TU_TEST(test_override),
        TU_TEST(test_print_after),
        TU_TEST(test_verify_each_catches_broken_ir),
        TU_TEST(test_infer_diagnostic),
        TU_TEST(test_infer_nested_loops_linear),
        TU_TEST(test_dump_ir),
        TU_TEST(test_every_pass_keeps_samples_valid),
        TU_TEST(test_default_is_idempotent),
        TU_TEST(test_loop_sample_optimized),
        TU_TEST(test_dead_sample_pruned),
        TU_TEST(test_random_graphs_differential),
        TU_TEST(test_matpow_chains_bitwise),
        TU_TEST(test_matpow_leaves_floats),
        TU_TEST(test_matpow_program_value),
        TU_TEST(test_fusion_plan),
        TU_TEST(test_memory_plan),
        TU_TEST(test_split_cuts_at_the_scope),
        TU_TEST(test_split_refusals),
    };
    TU_RUN(tests);
}
