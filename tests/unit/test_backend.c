/*
 * test_backend.c - the LLVM backend against the reference executor.
 *
 * Every test runs a graph both ways, with ir_execute and with compiled
 * code (cg_compile + cg_run), and requires the same outcome: the same
 * success or failure, the same error message (with its file:line), the
 * same printed text, and the same results: bit for bit for elementwise
 * math, within a tolerance where a test says so (float matrix products,
 * whose summation order may differ). Graphs come from the IR text form
 * (ir_parse) or from tracing staged C like agc's output.
 */
#include "staged_util.h"

#include "exec.h"
#include "ir.h"
#include "pass.h"
#include "rt.h"
#include "trace.h"

#include "cg_util.h"
#include "cg_runtime.h"
#include <inttypes.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ================================================================ harness */

enum { MAX_RESULTS = 8 };

typedef struct outcome {
    bool ok;
    char error[1024]; /* ag_last_error() after the run, "" if none */
    char *printed;
    int n;
    rt_value *res[MAX_RESULTS];
} outcome;

static void outcome_free(outcome *o)
{
    free(o->printed);
    for (int i = 0; i < o->n; i++)
        rt_value_free(o->res[i]);
    memset(o, 0, sizeof *o);
}

static ir_function *parse_ir(const char *text, int line)
{
    char err[1024];
    ir_function *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!fn)
        fail_msg("line %d: parse: %s\n%s", line, err, text);
    if (!ir_verify(fn, err, sizeof err))
        fail_msg("line %d: verify: %s\n%s", line, err, text);
    return fn;
}

/* Runs fn by one executor, capturing prints, the error and the results. */
static void run_one(ir_function *fn, const cg_code *code, rt_value *const *args, int n_args,
                    outcome *o)
{
    memset(o, 0, sizeof *o);
    o->n = fn->body->n_results;
    assert_true(o->n <= MAX_RESULTS);
    captured c;
    FILE *f = capture_begin(&c);
    ag_clear_error();
    if (code) {
        o->ok = cg_run(code, args, n_args, o->res);
    } else {
        ir_plan *p = ir_plan_new(fn);
        o->ok = ir_execute(p, args, n_args, o->res);
        ir_plan_free(p);
    }
    capture_end(f);
    o->printed = c.text;
    const char *e = ag_last_error();
    snprintf(o->error, sizeof o->error, "%s", e ? e : "");
    if (!o->ok)
        for (int i = 0; i < o->n; i++)
            assert_null(o->res[i]); /* untouched on failure */
}

static bool same_value(const rt_value *a, const rt_value *b, double tol)
{
    if (a->dtype != b->dtype || !ag_shape_equal(a->shape, b->shape) || a->numel != b->numel)
        return false;
    if (tol == 0 && memcmp(a->data, b->data, rt_value_bytes(a)) == 0)
        return true;
    if (tol == 0 && (a->dtype == AG_F32 || a->dtype == AG_F64)) {
        /* bit for bit, except that a NaN's sign and payload are not kept
         * (LLVM may rewrite x - (-y) as x + y, as C compilers do) */
        for (int64_t i = 0; i < a->numel; i++) {
            double x = rt_load_f64(a->dtype, a->data, i), y = rt_load_f64(b->dtype, b->data, i);
            size_t w = rt_dtype_size(a->dtype);
            if (!(isnan(x) && isnan(y)) &&
                memcmp((const char *)a->data + i * w, (const char *)b->data + i * w, w) != 0)
                return false;
        }
        return true;
    }
    if (tol == 0)
        return false;
    for (int64_t i = 0; i < a->numel; i++) {
        double x = rt_load_f64(a->dtype, a->data, i), y = rt_load_f64(b->dtype, b->data, i);
        if (!(fabs(x - y) <= tol * (1 + fabs(x))) && !(isnan(x) && isnan(y)))
            return false;
    }
    return true;
}

static void describe(const rt_value *v, char *buf, size_t n)
{
    char *s = rt_format_value(v);
    char t[128];
    ir_type ty = {.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
    snprintf(buf, n, "%s %s", ir_type_str(&ty, t, sizeof t), s);
    free(s);
}

static void expect_same(const outcome *ref, const outcome *jit, double tol, int line)
{
    if (ref->ok != jit->ok)
        fail_msg("line %d: reference %s, compiled %s (errors: \"%s\" / \"%s\")", line,
                 ref->ok ? "succeeded" : "failed", jit->ok ? "succeeded" : "failed",
                 ref->error, jit->error);
    if (strcmp(ref->error, jit->error) != 0)
        fail_msg("line %d: errors differ:\n  reference: %s\n  compiled:  %s", line, ref->error,
                 jit->error);
    if (strcmp(ref->printed, jit->printed) != 0)
        fail_msg("line %d: prints differ:\n--- reference\n%s--- compiled\n%s", line,
                 ref->printed, jit->printed);
    for (int i = 0; ref->ok && i < ref->n; i++) {
        if (!same_value(ref->res[i], jit->res[i], tol)) {
            char a[600], b[600];
            describe(ref->res[i], a, sizeof a);
            describe(jit->res[i], b, sizeof b);
            fail_msg("line %d: result %d differs:\n  reference: %s\n  compiled:  %s", line, i,
                     a, b);
        }
    }
}

static cg_code *compile_ok(const ir_function *fn, int line)
{
    char err[512];
    cg_code *c = tu_compile(fn, err, sizeof err);
    if (!c)
        fail_msg("line %d: cg_compile failed: %s", line, err);
    return c;
}

/* Runs fn both ways on args and checks that they agree; the compiled
 * outcome is returned for further checks (free it with outcome_free). */
static outcome both_with(ir_function *fn, const cg_code *code, rt_value *const *args,
                         int n_args, double tol, int line)
{
    outcome ref, jit;
    run_one(fn, NULL, args, n_args, &ref);
    run_one(fn, code, args, n_args, &jit);
    expect_same(&ref, &jit, tol, line);
    outcome_free(&ref);
    return jit;
}

static outcome both(ir_function *fn, rt_value *const *args, int n_args, double tol, int line)
{
    cg_code *code = compile_ok(fn, line);
    outcome o = both_with(fn, code, args, n_args, tol, line);
    tu_code_free(code);
    return o;
}

/* The value behind a tensor handle (the current scope owns it). */
static rt_value *val(ag_tensor t)
{
    rt_value *v = rt_handle_get(AG_HERE, t);
    assert_non_null(v);
    return v;
}

/* How many times the text of fn's compiled module holds needle; the text
 * goes to *text when text is not NULL (the caller frees it). */
static int module_count(const ir_function *fn, const char *needle, char **text)
{
    cg_code *c = compile_ok(fn, __LINE__);
    char *t = cg_module_text(c);
    int n = 0;
    for (const char *p = t; (p = strstr(p, needle)) != NULL; p++)
        n++;
    tu_code_free(c);
    if (text)
        *text = t;
    else
        free(t);
    return n;
}

/* Whether the compiled module calls the generic fallback (cg_rt_apply). */
static bool uses_fallback(const ir_function *fn)
{
    return module_count(fn, "call ptr @cg_rt_apply", NULL) > 0;
}

/* ========================================================= test data */

/* Sixteen values per dtype with the edge cases of each: signed zeros,
 * NaN, infinities, extremes, values that round or wrap. */
enum { N = 16 };
static const float F32_A[N] = {0.0f, -0.0f, 0.0f, -0.0f, 2.5f, -7.25f, 3, NAN, INFINITY, -INFINITY,
                               1e-30f, 1e30f, 0.5f, -3, 7, 100.75f};
static const float F32_B[N] = {3, 2, -0.0f, 0.0f, -2, 2, 0.5f, 1, INFINITY, 2, NAN, -INFINITY,
                               3, 7, -3, 0.1f};
static const double F64_A[N] = {0.0, -0.0, 0.0, -0.0, 2.5, -7.25, 3, NAN, INFINITY, -INFINITY,
                                1e-300, 1e300, 0.5, -3, 7, 100.75};
static const double F64_B[N] = {3, 2, -0.0, 0.0, -2, 2, 0.5, 1, INFINITY, 2, NAN, -INFINITY,
                                3, 7, -3, 0.1};
static const int32_t I32_A[N] = {0, 1, -1, 7, -7, INT32_MIN, INT32_MAX, 13, -13, 100, 5, -5,
                                 2, 3, 1000000, INT32_MIN};
static const int32_t I32_B[N] = {3, -1, 2, 2, -2, -1, 2, -4, 4, 7, 5, -5, 31, 3, 1000, 1};
static const int32_t I32_EXP[N] = {0, 1, 2, 3, 5, 2, 31, 7, 3, 4, 12, 13, 31, 20, 3, 0};
static const int64_t I64_A[N] = {0, 1, -1, 7, -7, INT64_MIN, INT64_MAX, 13, -13, 100, 5, -5,
                                 2, 3, 10000000000LL, INT64_MIN};
static const int64_t I64_B[N] = {3, -1, 2, 2, -2, -1, 2, -4, 4, 7, 5, -5, 63, 3, 1000, 1};
static const int64_t I64_EXP[N] = {0, 1, 2, 3, 5, 2, 63, 7, 3, 4, 12, 13, 62, 20, 3, 0};
static const int8_t I8_A[N] = {0, 1, -1, 7, -7, INT8_MIN, INT8_MAX, 13, -13, 100, 5, -5,
                               2, 3, 90, INT8_MIN};
static const int8_t I8_B[N] = {3, -1, 2, 2, -2, -1, 2, -4, 4, 7, 5, -5, 7, 3, 100, 1};
static const int8_t I8_EXP[N] = {0, 1, 2, 3, 5, 2, 7, 7, 3, 4, 12, 13, 6, 20, 3, 0};
static const uint8_t BOOL_A[N] = {0, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0};
static const uint8_t BOOL_B[N] = {0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0};

static const void *data_a(ag_dtype dt)
{
    switch (dt) {
    case AG_F32: case AG_BF16: return F32_A;
    case AG_F64: return F64_A;
    case AG_I32: return I32_A;
    case AG_I64: return I64_A;
    case AG_I8: return I8_A;
    default: return BOOL_A;
    }
}

static const void *data_b(ag_dtype dt, rt_op op)
{
    bool exp = (rt_ops[op].flags & RT_F_INT_EXPONENT) != 0;
    switch (dt) {
    case AG_F32: case AG_BF16: return F32_B;
    case AG_F64: return F64_B;
    case AG_I32: return exp ? I32_EXP : I32_B;
    case AG_I64: return exp ? I64_EXP : I64_B;
    case AG_I8: return exp ? I8_EXP : I8_B;
    default: return BOOL_B;
    }
}

static const ag_dtype NATIVE[] = {AG_F32, AG_F64, AG_BF16, AG_I32, AG_I64, AG_BOOL, AG_I8};
static const ag_dtype ALL_DTYPES[] = {AG_F32, AG_F64, AG_BF16, AG_I32, AG_I64, AG_BOOL, AG_I8};

/* Which dtypes an op admits: its domain in the op table (the dtype rule
 * agrees: test_op_table_consistent). */
static bool admits(rt_op op, ag_dtype dt)
{
    return rt_domain_has(rt_ops[op].domain, dt);
}

/* The elementwise ops of the table with `arity` operands and no
 * attributes: all but where and cast, which have tests of their own. */
static bool plain_elementwise(int op, int arity)
{
    const rt_op_info *o = &rt_ops[op];
    return (o->flags & RT_F_ELEMENTWISE) && o->arity == arity && o->attrs == 0;
}

/* The result dtype of op on operands of dtype dt (where's condition is
 * bool; cast's target is a->dtype), by the op's dtype rule; false if the
 * rule refuses dt. */
static bool result_dtype(rt_op op, ag_dtype dt, const rt_attrs *a, ag_dtype *out)
{
    rt_value v[3] = {{.dtype = op == RT_OP_WHERE ? AG_BOOL : dt}, {.dtype = dt}, {.dtype = dt}};
    rt_value *in[3] = {&v[0], &v[1], &v[2]};
    rt_attrs none = {0};
    rt_err e;
    return rt_ops[op].dtype_rule(a ? a : &none, in, rt_ops[op].arity, out, &e);
}

/* The result dtype's name, for the IR text. */
static const char *result_name(rt_op op, ag_dtype dt)
{
    ag_dtype r;
    if (!result_dtype(op, dt, NULL, &r))
        fail_msg("%s refuses %s, which its domain holds", rt_ops[op].name, ag_dtype_name(dt));
    return ag_dtype_name(r);
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A tensor of dtype dt holding data (16 elements of dt's C type), as
 * a bf16 tensor when dt is bf16 (converted from the f32 data). */
static rt_value *tensor_of(ag_dtype dt, ag_shape s, const void *data)
{
    if (dt == AG_BF16) {
        uint16_t b[N];
        for (int i = 0; i < N; i++)
            b[i] = ag_f32_to_bf16(((const float *)data)[i]);
        return val(ag_from_data(AG_BF16, s, b));
    }
    return val(ag_from_data(dt, s, data));
}

/* Element i of data as a rank-0 tensor. */
static rt_value *scalar_of(ag_dtype dt, const void *data, int i)
{
    size_t size = rt_dtype_size(dt == AG_BF16 ? AG_F32 : dt);
    unsigned char one[8];
    memcpy(one, (const char *)data + (size_t)i * size, size);
    if (dt == AG_BF16) {
        uint16_t b = ag_f32_to_bf16(*(const float *)(const void *)one);
        return val(ag_from_data(AG_BF16, AG_SCALAR, &b));
    }
    return val(ag_from_data(dt, AG_SCALAR, one));
}

/* ================================================== elementwise ops */

static void check_binary(rt_op op, ag_dtype dt, const char *shape, ag_shape s, bool scalars)
{
    char text[512];
    const char *name = rt_ops[op].name, *dn = ag_dtype_name(dt);
    const char *rn = result_name(op, dt);
    snprintf(text, sizeof text,
             "func @f(%%0: %s%s, %%1: %s%s) -> (%s%s) {\n"
             "  %%2 = %s(%%0, %%1) : %s%s loc(\"ops.c\":7)\n"
             "  return %%2\n}\n",
             dn, shape, dn, shape, rn, shape, name, rn, shape);
    ir_function *fn = parse_ir(text, __LINE__);
    cg_code *code = compile_ok(fn, __LINE__);
    if (!scalars) {
        rt_value *args[2] = {tensor_of(dt, s, data_a(dt)), tensor_of(dt, s, data_b(dt, op))};
        outcome o = both_with(fn, code, args, 2, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
    } else {
        for (int i = 0; i < N; i++) {
            rt_value *args[2] = {scalar_of(dt, data_a(dt), i), scalar_of(dt, data_b(dt, op), i)};
            outcome o = both_with(fn, code, args, 2, 0, __LINE__);
            if (!o.ok)
                fail_msg("%s %s element %d failed: %s", name, dn, i, o.error);
            outcome_free(&o);
        }
    }
    tu_code_free(code);
    ir_function_free(fn);
}

static void test_binary_ops_on_tensors(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++)
        for (int d = 0; d < COUNT(ALL_DTYPES) && plain_elementwise(op, 2); d++)
            if (admits(op, ALL_DTYPES[d]))
                check_binary(op, ALL_DTYPES[d], "[16]", AG_SHAPE(16), false);
}

static void test_binary_ops_on_scalars(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++)
        for (int d = 0; d < COUNT(NATIVE) && plain_elementwise(op, 2); d++)
            if (admits(op, NATIVE[d]))
                check_binary(op, NATIVE[d], "[]", AG_SCALAR, true);
}

static void check_unary(rt_op op, ag_dtype dt, bool scalars)
{
    char text[512];
    const char *name = rt_ops[op].name, *dn = ag_dtype_name(dt);
    const char *rn = result_name(op, dt), *shape = scalars ? "[]" : "[4,4]";
    snprintf(text, sizeof text,
             "func @f(%%0: %s%s) -> (%s%s) {\n"
             "  %%1 = %s(%%0) : %s%s loc(\"ops.c\":9)\n"
             "  return %%1\n}\n",
             dn, shape, rn, shape, name, rn, shape);
    ir_function *fn = parse_ir(text, __LINE__);
    cg_code *code = compile_ok(fn, __LINE__);
    for (int i = 0; i < (scalars ? N : 1); i++) {
        rt_value *arg = scalars ? scalar_of(dt, data_a(dt), i)
                                : tensor_of(dt, AG_SHAPE(4, 4), data_a(dt));
        outcome o = both_with(fn, code, &arg, 1, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
    }
    tu_code_free(code);
    ir_function_free(fn);
}

static void test_unary_ops(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        for (int d = 0; d < COUNT(ALL_DTYPES) && plain_elementwise(op, 1); d++) {
            if (!admits(op, ALL_DTYPES[d]))
                continue;
            check_unary(op, ALL_DTYPES[d], false);
            check_unary(op, ALL_DTYPES[d], true);
        }
    }
}

static void test_cast_every_pair(void **state)
{
    (void)state;
    for (int a = 0; a < COUNT(ALL_DTYPES); a++) {
        for (int b = 0; b < COUNT(ALL_DTYPES); b++) {
            ag_dtype from = ALL_DTYPES[a], to = ALL_DTYPES[b];
            char text[512];
            for (int sc = 0; sc < 2; sc++) {
                const char *shape = sc ? "[]" : "[16]";
                snprintf(text, sizeof text,
                         "func @f(%%0: %s%s) -> (%s%s) {\n"
                         "  %%1 = cast(%%0) {dtype = %s} : %s%s\n  return %%1\n}\n",
                         ag_dtype_name(from), shape, ag_dtype_name(to), shape,
                         ag_dtype_name(to), ag_dtype_name(to), shape);
                ir_function *fn = parse_ir(text, __LINE__);
                cg_code *code = compile_ok(fn, __LINE__);
                for (int i = 0; i < (sc ? N : 1); i++) {
                    rt_value *arg = sc ? scalar_of(from, data_a(from), i)
                                       : tensor_of(from, AG_SHAPE(16), data_a(from));
                    outcome o = both_with(fn, code, &arg, 1, 0, __LINE__);
                    assert_true(o.ok);
                    outcome_free(&o);
                }
                tu_code_free(code);
                ir_function_free(fn);
            }
        }
    }
}

/* Large float-to-integer casts saturate, NaN becomes 0. */
static void test_cast_saturates(void **state)
{
    (void)state;
    ir_function *fn = parse_ir("func @f(%0: f64[6]) -> (i32[6], i64[6]) {\n"
                               "  %1 = cast(%0) {dtype = i32} : i32[6]\n"
                               "  %2 = cast(%0) {dtype = i64} : i64[6]\n"
                               "  return %1, %2\n}\n", __LINE__);
    rt_value *x = val(F64(AG_SHAPE(6), 3e9, -3e9, NAN, 1e300, -2.9, 2.9));
    outcome o = both(fn, &x, 1, 0, __LINE__);
    const int32_t *r = o.res[0]->data;
    assert_int_equal(r[0], INT32_MAX);
    assert_int_equal(r[1], INT32_MIN);
    assert_int_equal(r[2], 0);
    assert_int_equal(r[4], -2);
    assert_int_equal(((const int64_t *)o.res[1]->data)[3], INT64_MAX);
    outcome_free(&o);
    ir_function_free(fn);
}

/* The float ops whose result has their operands' dtype (arithmetic, not
 * comparisons), of arity n, from the op table. */
static int same_dtype_float_ops(int n, rt_op *out)
{
    int k = 0;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        const rt_op_info *o = &rt_ops[op];
        bool floats = o->domain == RT_DOM_NUM || o->domain == RT_DOM_FLOAT;
        if ((o->flags & RT_F_ELEMENTWISE) && floats && o->arity == n &&
            o->dtype_rule != rt_ops[RT_OP_LESS].dtype_rule)
            out[k++] = (rt_op)op;
    }
    return k;
}

/* Constants are folded by LLVM at compile time: the folded results must
 * be the runtime's too (fmod, floor, sqrt, saturating casts; libm calls
 * are never folded), for every such op of the table. */
static void test_constant_folding_matches(void **state)
{
    (void)state;
    rt_op ops[RT_OP_COUNT], unary[RT_OP_COUNT];
    int n_ops = same_dtype_float_ops(2, ops), n_unary = same_dtype_float_ops(1, unary);
    assert_true(n_ops >= 9 && n_unary >= 12); /* add ... minimum; exp ... neg */
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < n_ops; k++) {
            char text[512];
            snprintf(text, sizeof text,
                     "func @f() -> (f32[]) {\n"
                     "  %%0 = const() {value = [%.9g]} : f32[]\n"
                     "  %%1 = const() {value = [%.9g]} : f32[]\n"
                     "  %%2 = %s(%%0, %%1) : f32[]\n  return %%2\n}\n",
                     F32_A[i], F32_B[i], rt_ops[ops[k]].name);
            ir_function *fn = parse_ir(text, __LINE__);
            outcome o = both(fn, NULL, 0, 0, __LINE__);
            outcome_free(&o);
            ir_function_free(fn);
        }
        for (int k = 0; k < n_unary; k++) {
            char text[512];
            snprintf(text, sizeof text,
                     "func @f() -> (f32[], i32[]) {\n"
                     "  %%0 = const() {value = [%.9g]} : f32[]\n"
                     "  %%1 = %s(%%0) : f32[]\n"
                     "  %%2 = cast(%%1) {dtype = i32} : i32[]\n  return %%1, %%2\n}\n",
                     F32_A[i], rt_ops[unary[k]].name);
            ir_function *fn = parse_ir(text, __LINE__);
            outcome o = both(fn, NULL, 0, 0, __LINE__);
            outcome_free(&o);
            ir_function_free(fn);
        }
    }
}

static void test_where(void **state)
{
    (void)state;
    for (int d = 0; d < COUNT(ALL_DTYPES); d++) {
        ag_dtype dt = ALL_DTYPES[d];
        const char *dn = ag_dtype_name(dt);
        char text[512];
        snprintf(text, sizeof text,
                 "func @f(%%0: bool[16], %%1: %s[16], %%2: %s[16], %%3: bool[2,1], %%4: %s[]) -> "
                 "(%s[16], %s[2,16], %s[]) {\n"
                 "  %%5 = where(%%0, %%1, %%2) : %s[16]\n"
                 "  %%6 = where(%%3, %%1, %%4) : %s[2,16]\n"
                 "  %%7 = where(%%3, %%4, %%4) : %s[2,1]\n"
                 "  %%8 = const() {value = [1]} : bool[]\n"
                 "  %%9 = where(%%8, %%4, %%4) : %s[]\n"
                 "  return %%5, %%6, %%9\n}\n",
                 dn, dn, dn, dn, dn, dn, dn, dn, dn, dn);
        ir_function *fn = parse_ir(text, __LINE__);
        rt_value *args[5] = {val(ag_from_data(AG_BOOL, AG_SHAPE(16), BOOL_A)),
                             tensor_of(dt, AG_SHAPE(16), data_a(dt)),
                             tensor_of(dt, AG_SHAPE(16), data_b(dt, RT_OP_ADD)),
                             val(BOOLS(AG_SHAPE(2, 1), 1, 0)), scalar_of(dt, data_a(dt), 4)};
        outcome o = both(fn, args, 5, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
        ir_function_free(fn);
    }
}

/* ============================================================ op table */

/* Every op of the table has a name that names it back, a kernel and its
 * rules; the elementwise ones have a domain the dtype rule agrees with,
 * and only binary elementwise ops fail on data (pass_fails_on_data reads
 * in[1]). */
static void test_op_table_consistent(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        const rt_op_info *o = &rt_ops[op];
        rt_op back;
        assert_non_null(o->name);
        if (!rt_op_from_name(o->name, &back) || back != (rt_op)op)
            fail_msg("op %d's name '%s' does not name it back", op, o->name);
        if (!o->kernel || !o->dtype_rule || !o->shape_rule)
            fail_msg("%s lacks a kernel or a rule", o->name);
        bool ew = (o->flags & RT_F_ELEMENTWISE) != 0;
        if (ew != (o->domain != RT_DOM_NONE))
            fail_msg("%s: elementwise, or a domain, without the other", o->name);
        if ((o->flags & RT_F_FAILS_ON_DATA) && !(ew && o->arity == 2))
            fail_msg("%s fails on data but is not binary elementwise", o->name);
        rt_attrs cast_to = {.dtype = AG_F32};
        for (int d = 0; ew && d < COUNT(ALL_DTYPES); d++) {
            ag_dtype r, dt = ALL_DTYPES[d];
            if (result_dtype((rt_op)op, dt, &cast_to, &r) != admits((rt_op)op, dt))
                fail_msg("%s: the dtype rule and the domain disagree on %s", o->name,
                         ag_dtype_name(dt));
        }
    }
}

/* A graph of one elementwise op on operands of dtype dt and the given
 * shape ("[16]" or "[]"): where's condition is bool, cast goes to f32. */
static ir_function *one_op_graph(rt_op op, ag_dtype dt, const char *shape)
{
    const rt_op_info *o = &rt_ops[op];
    if (o->attrs & ~(unsigned)RT_A_DTYPE)
        fail_msg("%s: give one_op_graph the op's attributes", o->name);
    rt_attrs cast_to = {.dtype = AG_F32};
    ag_dtype r;
    assert_true(result_dtype(op, dt, &cast_to, &r));
    char params[256] = "", args[64] = "", text[640];
    for (int i = 0; i < o->arity; i++) {
        ag_dtype in = op == RT_OP_WHERE && i == 0 ? AG_BOOL : dt;
        size_t np = strlen(params), na = strlen(args);
        snprintf(params + np, sizeof params - np, "%s%%%d: %s%s", i ? ", " : "", i,
                 ag_dtype_name(in), shape);
        snprintf(args + na, sizeof args - na, "%s%%%d", i ? ", " : "", i);
    }
    snprintf(text, sizeof text,
             "func @f(%s) -> (%s%s) {\n  %%%d = %s(%s)%s : %s%s\n  return %%%d\n}\n", params,
             ag_dtype_name(r), shape, o->arity, o->name, args,
             o->attrs ? " {dtype = f32}" : "", ag_dtype_name(r), shape, o->arity);
    return parse_ir(text, __LINE__);
}

/* The cpu's op table (ops_cpu.c) has a row for every op (its build
 * counts them) and fuses exactly the elementwise ops, which lower_elem.c
 * emits in loops (the next test); the target's fuses() reads it. */
static void test_cpu_op_table(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        bool elementwise = rt_ops[op].flags & RT_F_ELEMENTWISE;
        if (cg_ops[op] == CG_OP_UNLISTED)
            fail_msg("'%s' has no row in backend/cpu/ops_cpu.c", rt_ops[op].name);
        if ((cg_ops[op] == CG_OP_LOOP) != elementwise)
            fail_msg("'%s': CG_OP_LOOP in ops_cpu.c is for the elementwise ops", rt_ops[op].name);
        assert_int_equal(tgt_cpu.caps.fuses(op), elementwise);
    }
    assert_false(tgt_cpu.caps.fuses(RT_OP_COUNT));
    assert_null(tgt_cpu.caps.supports); /* the host: every op */
}

/* The backend emits every elementwise op of the table itself, on every
 * dtype of its domain that the cpu target computes on, in a loop and on
 * scalars: the compilation succeeds (an op lower_elem.c lacks fails it,
 * naming the op) without calling the op's kernel. */
static void test_every_elementwise_op_is_emitted(void **state)
{
    (void)state;
    static const char *const shapes[] = {"[16]", "[]"};
    for (int op = 0; op < RT_OP_COUNT; op++) {
        for (int d = 0; d < COUNT(NATIVE) && (rt_ops[op].flags & RT_F_ELEMENTWISE); d++) {
            if (!admits((rt_op)op, NATIVE[d]))
                continue;
            for (int k = 0; k < COUNT(shapes); k++) {
                ir_function *fn = one_op_graph((rt_op)op, NATIVE[d], shapes[k]);
                char err[512];
                cg_code *c = tu_compile(fn, err, sizeof err);
                if (!c)
                    fail_msg("%s on %s%s: cg_compile failed: %s", rt_ops[op].name,
                             ag_dtype_name(NATIVE[d]), shapes[k], err);
                char *ir = cg_module_text(c);
                if (strstr(ir, "call ptr @cg_rt_apply"))
                    fail_msg("%s on %s%s calls its kernel", rt_ops[op].name,
                             ag_dtype_name(NATIVE[d]), shapes[k]);
                free(ir);
                tu_code_free(c);
                ir_function_free(fn);
            }
        }
    }
}

/* =============================================================== errors */

static void test_integer_division_by_zero(void **state)
{
    (void)state;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        if (!(rt_ops[op].flags & RT_F_INT_DIVISOR))
            continue; /* div, floordiv, mod */
        for (int sc = 0; sc < 2; sc++) {
            const char *shape = sc ? "[]" : "[3]";
            char text[512];
            snprintf(text, sizeof text,
                     "func @f(%%0: i32%s, %%1: i32%s) -> (i32%s) {\n"
                     "  %%2 = %s(%%0, %%1) : i32%s loc(\"divide.c\":42)\n"
                     "  return %%2\n}\n",
                     shape, shape, shape, rt_ops[op].name, shape);
            ir_function *fn = parse_ir(text, __LINE__);
            rt_value *args[2];
            if (sc) {
                args[0] = val(ag_scalar_i32(7));
                args[1] = val(ag_scalar_i32(0));
            } else {
                args[0] = val(I32(AG_SHAPE(3), 7, 8, 9));
                args[1] = val(I32(AG_SHAPE(3), 1, 0, 2));
            }
            outcome o = both(fn, args, 2, 0, __LINE__);
            assert_false(o.ok);
            assert_non_null(strstr(o.error, "divide.c:42: "));
            assert_non_null(strstr(o.error, "integer division by zero"));
            outcome_free(&o);
            ir_function_free(fn);
        }
    }
}

/* An empty output never divides, so a zero divisor is no error then; a
 * broadcast divisor with a zero is. */
static void test_division_edge_cases(void **state)
{
    (void)state;
    ir_function *fn = parse_ir("func @f(%0: i64[?], %1: i64[]) -> (i64[?]) {\n"
                               "  %2 = mod(%0, %1) : i64[?] loc(\"m.c\":3)\n"
                               "  return %2\n}\n", __LINE__);
    rt_value *empty[2] = {val(ag_zeros(AG_I64, AG_SHAPE(0))), val(ag_scalar_i64(0))};
    outcome o = both(fn, empty, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    rt_value *zero[2] = {val(I64(AG_SHAPE(2), 5, 6)), val(ag_scalar_i64(0))};
    o = both(fn, zero, 2, 0, __LINE__);
    assert_false(o.ok);
    outcome_free(&o);
    rt_value *minus1[2] = {val(I64(AG_SHAPE(2), INT64_MIN, 6)), val(ag_scalar_i64(-1))};
    o = both(fn, minus1, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    ir_function_free(fn);

    fn = parse_ir("func @f(%0: i32[], %1: i32[2]) -> (i32[2]) {\n"
                  "  %2 = pow(%0, %1) : i32[2] loc(\"p.c\":8)\n  return %2\n}\n", __LINE__);
    rt_value *neg[2] = {val(ag_scalar_i32(3)), val(I32(AG_SHAPE(2), 2, -1))};
    o = both(fn, neg, 2, 0, __LINE__);
    assert_false(o.ok);
    assert_non_null(strstr(o.error, "p.c:8: ag_pow: "));
    outcome_free(&o);
    ir_function_free(fn);
}

/* The reference executor is non-strict: nodes that reach no result or
 * effect never run, so their errors never happen. */
static void test_unused_failures_never_run(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: i32[], %1: f32[3]) -> (i32[]) {\n"
        "  %2 = const() {value = [0]} : i32[]\n"
        "  %3 = div(%0, %2) : i32[] loc(\"lazy.c\":1)\n"
        "  %4 = const() {value = [7]} : i32[]\n"
        "  %5 = gather(%1, %4) {axis = 0} : f32[] loc(\"lazy.c\":2)\n"
        "  %6 = add(%0, %0) : i32[]\n"
        "  return %6\n}\n", __LINE__);
    rt_value *args[2] = {val(ag_scalar_i32(21)), val(F32(AG_SHAPE(3), 1, 2, 3))};
    outcome o = both(fn, args, 2, 0, __LINE__);
    assert_true(o.ok);
    assert_int_equal(*(int32_t *)o.res[0]->data, 42);
    outcome_free(&o);
    ir_function_free(fn);
}

/* A fallback's error stops the function at once; what was printed
 * before it stays printed, nothing after it runs. */
static void test_error_stops_execution(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[3]) -> (f32[]) {\n"
        "  %1 = print(%0) {text = \"before {}\"} : bool[] loc(\"stop.c\":1)\n"
        "  %2 = const() {value = [5]} : i32[]\n"
        "  %3 = gather(%0, %2) {axis = 0} : f32[] loc(\"stop.c\":2)\n"
        "  %4 = print(%3) {text = \"after {}\"} after %1 : bool[] loc(\"stop.c\":3)\n"
        "  return %3\n}\n", __LINE__);
    rt_value *x = val(F32(AG_SHAPE(3), 1, 2, 3));
    outcome o = both(fn, &x, 1, 0, __LINE__);
    assert_false(o.ok);
    assert_string_equal(o.printed, "before [1 2 3]\n");
    assert_non_null(strstr(o.error, "stop.c:2: ag_gather: "));
    outcome_free(&o);
    ir_function_free(fn);
}

/* Arguments that do not match the compiled parameter types are refused
 * instead of being read out of bounds. */
static void test_wrong_argument_type_is_reported(void **state)
{
    (void)state;
    ir_function *fn = parse_ir("func @f(%0: f32[3]) -> (f32[3]) {\n"
                               "  %1 = add(%0, %0) : f32[3]\n  return %1\n}\n", __LINE__);
    cg_code *code = compile_ok(fn, __LINE__);
    rt_value *bad = val(F32(AG_SHAPE(4), 1, 2, 3, 4)), *res = NULL;
    ag_clear_error();
    assert_false(cg_run(code, &bad, 1, &res));
    assert_null(res);
    assert_non_null(strstr(ag_last_error(), "argument 0 has type f32[4]"));
    assert_false(cg_run(code, &bad, 0, &res));
    tu_code_free(code);
    ir_function_free(fn);
}

/* A graph whose static type claims more than the runtime delivers (the
 * verifier lets a known dim stand for an unknown one): native code that
 * relies on the type reports it instead of reading out of bounds. */
static void test_value_of_wrong_type_is_reported(void **state)
{
    (void)state;
    ir_function *fn = parse_ir("func @f(%0: f32[?]) -> (f32[3]) {\n"
                               "  %1 = reshape(%0) {shape = [-1]} : f32[3] loc(\"t.c\":5)\n"
                               "  %2 = add(%1, %1) : f32[3]\n"
                               "  return %2\n}\n", __LINE__);
    cg_code *code = compile_ok(fn, __LINE__);
    rt_value *ok = val(F32(AG_SHAPE(3), 1, 2, 3));
    outcome o = both_with(fn, code, &ok, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    rt_value *four = val(F32(AG_SHAPE(4), 1, 2, 3, 4));
    run_one(fn, code, &four, 1, &o);
    assert_false(o.ok);
    assert_non_null(strstr(o.error, "t.c:5: internal error: %1 (reshape) made a value of "
                                    "type f32[4], but the graph says f32[3]"));
    outcome_free(&o);
    tu_code_free(code);
    ir_function_free(fn);
}

/* ======================================================= broadcasting */

static void test_broadcasting_shapes(void **state)
{
    (void)state;
    /* shapes of x, y and x+y; each fused into one loop nest with x*y+x */
    static const struct {
        const char *x, *y, *out;
        ag_shape xs, ys;
    } cases[] = {
        {"[2,3]", "[3]", "[2,3]", AG_SHAPE(2, 3), AG_SHAPE(3)},
        {"[2,1]", "[1,3]", "[2,3]", AG_SHAPE(2, 1), AG_SHAPE(1, 3)},
        {"[4,1,3]", "[2,1]", "[4,2,3]", AG_SHAPE(4, 1, 3), AG_SHAPE(2, 1)},
        {"[]", "[2,2]", "[2,2]", AG_SCALAR, AG_SHAPE(2, 2)},
        {"[1]", "[5]", "[5]", AG_SHAPE(1), AG_SHAPE(5)},
        {"[0,3]", "[3]", "[0,3]", AG_SHAPE(0, 3), AG_SHAPE(3)},
        {"[3,0]", "[1]", "[3,0]", AG_SHAPE(3, 0), AG_SHAPE(1)},
        {"[1,1]", "[1]", "[1,1]", AG_SHAPE(1, 1), AG_SHAPE(1)},
    };
    static const ag_dtype dts[] = {AG_F32, AG_I64};
    for (int k = 0; k < COUNT(cases); k++) {
        for (int d = 0; d < COUNT(dts); d++) {
            const char *dn = ag_dtype_name(dts[d]);
            char text[768];
            snprintf(text, sizeof text,
                     "func @f(%%0: %s%s, %%1: %s%s) -> (%s%s, %s%s) {\n"
                     "  %%2 = add(%%0, %%1) : %s%s\n"
                     "  %%3 = mul(%%0, %%1) : %s%s\n"
                     "  %%4 = sub(%%3, %%0) : %s%s\n"
                     "  return %%2, %%4\n}\n",
                     dn, cases[k].x, dn, cases[k].y, dn, cases[k].out, dn, cases[k].out, dn,
                     cases[k].out, dn, cases[k].out, dn, cases[k].out);
            ir_function *fn = parse_ir(text, __LINE__);
            double xs[64], ys[64];
            for (int i = 0; i < 64; i++) {
                xs[i] = i * 1.5 - 7;
                ys[i] = 3 - i * 0.25;
            }
            rt_value *args[2] = {val(ag_cast(ag_from_data(AG_F64, cases[k].xs, xs), dts[d])),
                                 val(ag_cast(ag_from_data(AG_F64, cases[k].ys, ys), dts[d]))};
            outcome o = both(fn, args, 2, 0, __LINE__);
            assert_true(o.ok);
            outcome_free(&o);
            assert_false(uses_fallback(fn));
            ir_function_free(fn);
        }
    }
}

/* Unknown dims: operands provably of one shape fuse; others check the
 * broadcast at run time and report the runtime's error. */
static void test_unknown_dims(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[?,3], %1: f32[], %2: f32[?]) -> (f32[?,3], f32[?,3], f32[?]) {\n"
        "  %3 = mul(%0, %1) : f32[?,3]\n"
        "  %4 = const() {value = [1]} : f32[]\n"
        "  %5 = add(%3, %4) : f32[?,3]\n"
        "  %6 = tanh(%5) : f32[?,3]\n"
        "  %7 = mul(%6, %0) : f32[?,3]\n"
        "  %8 = const() {value = [1, 2, 3]} : f32[3]\n"
        "  %9 = add(%7, %8) : f32[?,3] loc(\"dims.c\":10)\n"
        "  %10 = add(%2, %2) : f32[?]\n"
        "  %11 = sub(%10, %2) : f32[?] loc(\"dims.c\":12)\n"
        "  return %7, %9, %11\n}\n", __LINE__);
    rt_value *args[3] = {val(F32(AG_SHAPE(2, 3), 1, -2, 3, 0.5, 0.25, -8)),
                         val(ag_scalar_f32(0.3f)), val(F32(AG_SHAPE(4), 1, 2, 3, 4))};
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    rt_value *empty[3] = {val(ag_zeros(AG_F32, AG_SHAPE(0, 3))), val(ag_scalar_f32(2)),
                          val(ag_zeros(AG_F32, AG_SHAPE(0)))};
    o = both(fn, empty, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    assert_false(uses_fallback(fn));
    ir_function_free(fn);

    fn = parse_ir("func @f(%0: i32[?], %1: i32[?]) -> (i32[?]) {\n"
                  "  %2 = floordiv(%0, %1) : i32[?] loc(\"dims.c\":20)\n"
                  "  return %2\n}\n", __LINE__);
    rt_value *ok[2] = {val(I32(AG_SHAPE(3), -7, 7, 9)), val(I32(AG_SHAPE(1), 2))};
    o = both(fn, ok, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    rt_value *bad[2] = {val(I32(AG_SHAPE(3), 1, 2, 3)), val(I32(AG_SHAPE(2), 1, 2))};
    o = both(fn, bad, 2, 0, __LINE__);
    assert_false(o.ok);
    assert_non_null(strstr(o.error, "dims.c:20: ag_floordiv: shapes [3] and [2] cannot be "
                                    "broadcast together"));
    outcome_free(&o);
    rt_value *zero[2] = {val(I32(AG_SHAPE(3), 1, 2, 3)), val(I32(AG_SHAPE(3), 1, 0, 3))};
    o = both(fn, zero, 2, 0, __LINE__);
    assert_false(o.ok);
    outcome_free(&o);
    ir_function_free(fn);
}

/* A long fused chain, as the elementwise benchmark runs it. */
static void test_fused_chain_is_native_and_exact(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @chain(%0: f32[1000], %1: f32[], %2: f32[], %3: f32[]) -> (f32[1000]) {\n"
        "  %4 = mul(%0, %1) : f32[1000]\n"
        "  %5 = add(%4, %2) : f32[1000]\n"
        "  %6 = tanh(%5) : f32[1000]\n"
        "  %7 = mul(%6, %3) : f32[1000]\n"
        "  %8 = add(%7, %0) : f32[1000]\n"
        "  return %8\n}\n", __LINE__);
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i - 500) * 0.013f;
    rt_value *args[4] = {val(ag_from_data(AG_F32, AG_SHAPE(1000), x)), val(ag_scalar_f32(0.7f)),
                         val(ag_scalar_f32(-0.1f)), val(ag_scalar_f32(1.3f))};
    outcome o = both(fn, args, 4, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    assert_false(uses_fallback(fn));
    /* the JIT's module (as it is named for profilers) calls tanh's vector
     * forms: renaming the helper once made every call a scalar one, at a
     * quarter of the chain's speed */
    cg_code *c = compile_ok(fn, __LINE__);
    char *text = cg_module_text(c);
    if (!strstr(text, "x float> @agc_tanh_f32_v"))
        fail_msg("the tanh chain does not call tanh's vector forms:\n%s", text);
    free(text);
    tu_code_free(c);
    ir_function_free(fn);
}

/* Large loops run in parallel chunks; every element is still computed by
 * the same instructions, so the results are exact. */
static void test_large_loops_run_in_parallel(void **state)
{
    (void)state;
    enum { BIG = 300007 }; /* not a multiple of the chunk size */
    ir_function *fn = parse_ir(
        "func @f(%0: f32[300007], %1: i32[300007], %2: f32[?]) -> (f32[300007], i64[300007], "
        "bool[300007], f32[?]) {\n"
        "  %3 = cast(%1) {dtype = f32} : f32[300007]\n"
        "  %4 = mul(%0, %3) : f32[300007]\n"
        "  %5 = sigmoid(%4) : f32[300007]\n"
        "  %6 = greater(%5, %0) : bool[300007]\n"
        "  %7 = where(%6, %5, %0) : f32[300007]\n"
        "  %8 = const() {value = [3]} : i32[]\n"
        "  %9 = mod(%1, %8) : i32[300007]\n"
        "  %10 = cast(%9) {dtype = i64} : i64[300007]\n"
        "  %11 = exp(%2) : f32[?]\n"
        "  return %7, %10, %6, %11\n}\n", __LINE__);
    float *x = malloc(BIG * sizeof *x);
    int32_t *k = malloc(BIG * sizeof *k);
    for (int i = 0; i < BIG; i++) {
        x[i] = (float)(i % 1000) * 0.01f - 5;
        k[i] = (int32_t)((int64_t)i * 7919 % 2000003) - 1000000;
    }
    rt_value *args[3] = {val(ag_from_data(AG_F32, AG_SHAPE(BIG), x)),
                         val(ag_from_data(AG_I32, AG_SHAPE(BIG), k)),
                         val(ag_from_data(AG_F32, AG_SHAPE(BIG), x))};
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    free(x);
    free(k);
    ir_function_free(fn);
}

/* Whether the module text calls a vector form of tanh (a line with both). */
static bool calls_vector_tanh(const char *text)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *call = memmem(line, n, "call ", 5);
        if (call && memmem(call, n - (size_t)(call - line), "@agc_tanh_f32_v", 15))
            return true;
        line = end ? end + 1 : NULL;
    }
    return false;
}

/* A large loop with tanh runs in blocks that prefetch what it reads, and
 * the vector tanh is inlined there; f32 and bf16 (widened in the loop)
 * still give the reference executor's bits, with a last block shorter
 * than the others (300007 = 1171 * 256 + 231) and chunks split across
 * threads. */
static void test_hot_loops_prefetch_and_stay_exact(void **state)
{
    (void)state;
    enum { BIG = 300007 };
    ir_function *fn = parse_ir(
        "func @chain(%0: f32[300007], %1: f32[], %2: bf16[300007]) -> (f32[300007], "
        "bf16[300007]) {\n"
        "  %3 = mul(%0, %1) : f32[300007]\n"
        "  %4 = tanh(%3) : f32[300007]\n"
        "  %5 = add(%4, %0) : f32[300007]\n"
        "  %6 = cast(%2) {dtype = f32} : f32[300007]\n"
        "  %7 = tanh(%6) : f32[300007]\n"
        "  %8 = mul(%7, %1) : f32[300007]\n"
        "  %9 = cast(%8) {dtype = bf16} : bf16[300007]\n"
        "  return %5, %9\n}\n", __LINE__);
    float *x = malloc(BIG * sizeof *x);
    for (int i = 0; i < BIG; i++)
        x[i] = (float)(i % 4001 - 2000) * 0.0037f;
    rt_value *args[3] = {val(ag_from_data(AG_F32, AG_SHAPE(BIG), x)), val(ag_scalar_f32(1.7f)),
                         val(ag_cast(ag_from_data(AG_F32, AG_SHAPE(BIG), x), AG_BF16))};
    free(x);
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    assert_false(uses_fallback(fn));
    cg_code *c = compile_ok(fn, __LINE__);
    char *text = cg_module_text(c);
    if (!strstr(text, "call void @llvm.prefetch") || !strstr(text, "\"agc-hot-loop\""))
        fail_msg("the large tanh loops do not prefetch:\n%s", text);
    if (calls_vector_tanh(text))
        fail_msg("a hot loop still calls a vector tanh:\n%s", text);
    free(text);
    tu_code_free(c);
    ir_function_free(fn);
}

/* A nest (a bias broadcast along rows of 1031, a short last block in every
 * row) prefetches in its innermost loop and gives the reference's bits. */
static void test_broadcast_hot_loops_prefetch_and_stay_exact(void **state)
{
    (void)state;
    enum { ROWS = 300, COLS = 1031 };
    ir_function *fn = parse_ir(
        "func @dense(%0: f32[300,1031], %1: f32[1031], %2: bf16[300,1031]) -> (f32[300,1031], "
        "bf16[300,1031]) {\n"
        "  %3 = add(%0, %1) : f32[300,1031]\n"
        "  %4 = tanh(%3) : f32[300,1031]\n"
        "  %5 = cast(%1) {dtype = bf16} : bf16[1031]\n"
        "  %6 = mul(%2, %5) : bf16[300,1031]\n"
        "  %7 = exp(%6) : bf16[300,1031]\n"
        "  return %4, %7\n}\n", __LINE__);
    float *x = malloc(ROWS * COLS * sizeof *x);
    float b[COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)(i % 3989 - 1994) * 0.0021f;
    for (int j = 0; j < COLS; j++)
        b[j] = (float)(j % 17 - 8) * 0.125f;
    rt_value *args[3] = {val(ag_from_data(AG_F32, AG_SHAPE(ROWS, COLS), x)),
                         val(ag_from_data(AG_F32, AG_SHAPE(COLS), b)),
                         val(ag_cast(ag_from_data(AG_F32, AG_SHAPE(ROWS, COLS), x), AG_BF16))};
    free(x);
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    char *text;
    if (module_count(fn, "call void @llvm.prefetch", &text) == 0)
        fail_msg("the broadcast loops do not prefetch:\n%s", text);
    free(text);
    ir_function_free(fn);
}

/* fn on args, compiled and by the reference, gives the same bits. */
static void expect_exact(ir_function *fn, rt_value *const *args, int n, const char *what, int c)
{
    outcome o = both(fn, args, n, 0, __LINE__);
    if (!o.ok)
        fail_msg("%s of %d", what, c);
    outcome_free(&o);
}

/* Row operands ([C] and [1, C]) of f32 and bf16 nests [r, c], each given
 * a tile; x [r, c] and b [c] are left in *x and *b for the next check. */
static void check_row_operands(int r, int c, rt_value **x, rt_value **b)
{
    char text[1024];
    snprintf(text, sizeof text,
             "func @rows(%%0: f32[%d,%d], %%1: f32[%d], %%2: f32[1,%d], %%3: bf16[%d,%d]) -> "
             "(f32[%d,%d], bf16[%d,%d]) {\n"
             "  %%4 = add(%%0, %%1) : f32[%d,%d]\n"
             "  %%5 = tanh(%%4) : f32[%d,%d]\n"
             "  %%6 = mul(%%5, %%2) : f32[%d,%d]\n"
             "  %%7 = cast(%%1) {dtype = bf16} : bf16[%d]\n"
             "  %%8 = sub(%%3, %%7) : bf16[%d,%d]\n"
             "  %%9 = exp(%%8) : bf16[%d,%d]\n"
             "  return %%6, %%9\n}\n",
             r, c, c, c, r, c, r, c, r, c, r, c, r, c, r, c, c, r, c, r, c);
    ir_function *fn = parse_ir(text, __LINE__);
    float *xs = malloc((size_t)r * c * sizeof *xs), bs[256];
    for (int i = 0; i < r * c; i++)
        xs[i] = (float)(i % 3989 - 1994) * 0.0021f;
    for (int j = 0; j < c; j++)
        bs[j] = (float)(j % 17 - 8) * 0.125f;
    ag_tensor xt = ag_from_data(AG_F32, AG_SHAPE(r, c), xs);
    rt_value *args[4] = {val(xt), val(ag_from_data(AG_F32, AG_SHAPE(c), bs)),
                         val(ag_from_data(AG_F32, AG_SHAPE(1, c), bs)),
                         val(ag_cast(xt, AG_BF16))};
    free(xs);
    expect_exact(fn, args, 4, "rows", c);
    char *ir;
    if (module_count(fn, "%tile", &ir) < 3) /* a tile per row operand */
        fail_msg("rows of %d are not run in groups:\n%s", c, ir);
    free(ir);
    ir_function_free(fn);
    *x = args[0];
    *b = args[1];
}

/* A column ([r, 1], a scale per row): in groups when a row of the tile
 * is whole vectors (lower_tile.c). */
static void check_column_operand(int r, int c, rt_value *x, rt_value *b)
{
    char text[1024];
    snprintf(text, sizeof text,
             "func @cols(%%0: f32[%d,%d], %%1: f32[%d,1], %%2: f32[%d]) -> (f32[%d,%d]) {\n"
             "  %%3 = mul(%%0, %%1) : f32[%d,%d]\n"
             "  %%4 = add(%%3, %%2) : f32[%d,%d]\n"
             "  %%5 = tanh(%%4) : f32[%d,%d]\n"
             "  return %%5\n}\n",
             r, c, r, c, r, c, r, c, r, c, r, c);
    ir_function *fn = parse_ir(text, __LINE__);
    float *sc = malloc((size_t)r * sizeof *sc);
    for (int i = 0; i < r; i++)
        sc[i] = (float)(i % 29 - 14) * 0.0625f;
    rt_value *args[3] = {x, val(ag_from_data(AG_F32, AG_SHAPE(r, 1), sc)), b};
    free(sc);
    expect_exact(fn, args, 3, "a column with rows", c);
    char *ir;
    int tiles = module_count(fn, "%tile", &ir);
    if ((tiles > 0) != (c % 16 == 0))
        fail_msg("rows of %d with a column: %d tiles\n%s", c, tiles, ir);
    free(ir);
    ir_function_free(fn);
}

/* Integers, and a bool result. */
static void check_integer_rows(int r, int c)
{
    char text[1024];
    snprintf(text, sizeof text,
             "func @irows(%%0: i32[%d,%d], %%1: i32[%d]) -> (i32[%d,%d], bool[%d,%d]) {\n"
             "  %%2 = add(%%0, %%1) : i32[%d,%d]\n"
             "  %%3 = greater(%%0, %%1) : bool[%d,%d]\n"
             "  return %%2, %%3\n}\n",
             r, c, c, r, c, r, c, r, c, r, c);
    ir_function *fn = parse_ir(text, __LINE__);
    int32_t *k = malloc((size_t)r * c * sizeof *k), kb[256];
    for (int i = 0; i < r * c; i++)
        k[i] = i % 1013 - 506;
    for (int j = 0; j < c; j++)
        kb[j] = j * 7 - 300;
    rt_value *args[2] = {val(ag_from_data(AG_I32, AG_SHAPE(r, c), k)),
                         val(ag_from_data(AG_I32, AG_SHAPE(c), kb))};
    free(k);
    expect_exact(fn, args, 2, "i32 rows", c);
    ir_function_free(fn);
}

/* Short rows ([R, C] with C below 256, operands of the loop's shape, one
 * row or one column) run in groups of rows as one flat loop over tiles:
 * every result bit for bit the reference's, on row counts that are not a
 * multiple of the group (nor the parallel chunks of one). */
static void test_short_rows_run_in_groups_and_stay_exact(void **state)
{
    (void)state;
    static const int cols[] = {3, 16, 100, 255, 64};
    for (size_t t = 0; t < sizeof cols / sizeof *cols; t++) {
        int c = cols[t], r = (1 << 17) / c + 7;
        rt_value *x, *b;
        check_row_operands(r, c, &x, &b);
        check_column_operand(r, c, x, b);
        check_integer_rows(r, c);
    }
}

/* ============================================= bf16 loops by table lookup */

/* A loop body for cg_rt_parallel_lookup: slot 0 the operand, slot 1 the
 * result, slot 2 a scalar that the result depends on. */
static uint32_t mix(uint16_t x, int64_t k) { return (uint32_t)x * 2654435761u ^ (uint32_t)k; }

static void body16(void *ctx, int64_t begin, int64_t end)
{
    int64_t *slots = ctx;
    const uint16_t *x = (const uint16_t *)(intptr_t)slots[0];
    uint16_t *out = (uint16_t *)(intptr_t)slots[1];
    for (int64_t i = begin; i < end; i++)
        out[i] = (uint16_t)(mix(x[i], slots[2]) >> 9);
}

static void body32(void *ctx, int64_t begin, int64_t end)
{
    int64_t *slots = ctx;
    const uint16_t *x = (const uint16_t *)(intptr_t)slots[0];
    uint32_t *out = (uint32_t *)(intptr_t)slots[1];
    for (int64_t i = begin; i < end; i++)
        out[i] = mix(x[i], slots[2]);
}

/* Every kernel (the ones this CPU runs) and both result sizes give what the
 * body gives, on a length with a ragged end, and on one too short to look
 * up; the context is left as it was. */
static void test_lookup_kernels_match_the_loop(void **state)
{
    (void)state;
    const char *kernels[] = {"avx512", "avx2", "portable"};
    int64_t lengths[2] = {cg_lookup_min() + 37, cg_lookup_min() - 1};
    int64_t n_max = lengths[0];
    uint16_t *x = malloc((size_t)n_max * sizeof *x);
    uint32_t *out = malloc((size_t)n_max * sizeof *out);
    for (int64_t i = 0; i < n_max; i++)
        x[i] = (uint16_t)(i * 40503);
    int ran = 0;
    for (int k = 0; k < 3; k++) {
        if (!cg_lookup_use_kernel(kernels[k]))
            continue;
        ran++;
        for (int l = 0; l < 2; l++) {
            for (int size = 2; size <= 4; size += 2) {
                int64_t n = lengths[l];
                memset(out, 0, (size_t)n * sizeof *out);
                int64_t slots[3] = {(intptr_t)x, (intptr_t)out, 12345 + size};
                cg_rt_parallel_lookup(size == 2 ? body16 : body32, slots, n, 1 << 14, 0, 1,
                                      size, NULL);
                if (slots[0] != (intptr_t)x || slots[1] != (intptr_t)out)
                    fail_msg("%s: the loop's context was not restored", kernels[k]);
                for (int64_t i = 0; i < n; i++) {
                    uint32_t want = mix(x[i], slots[2]);
                    uint32_t got = size == 4 ? out[i] : ((uint16_t *)out)[i];
                    if (size == 2)
                        want = (uint16_t)(want >> 9);
                    if (got != want)
                        fail_msg("%s, %d-byte results, n = %" PRId64 ": element %" PRId64
                                 " is %#x, not %#x", kernels[k], size, n, i, got, want);
                }
            }
        }
    }
    assert_true(ran >= 1);
    assert_true(cg_lookup_use_kernel(NULL));
    free(x);
    free(out);
}

/* With a cache (the code's own memory), the first call long enough builds
 * the table there and later calls of any length read it; a call too short
 * to build it runs the loop and leaves the cache empty. */
static void test_lookup_cache_is_built_once(void **state)
{
    (void)state;
    int64_t n = cg_lookup_min_cached() + 37;
    uint16_t *x = malloc((size_t)(n + 2) * sizeof *x); /* call c reads from x + c */
    uint16_t *out = malloc((size_t)n * sizeof *out);
    unsigned char *cache = aligned_alloc(64, CG_RT_LOOKUP_CACHE_BYTES(2));
    memset(cache, 0, CG_RT_LOOKUP_CACHE_BYTES(2));
    for (int64_t i = 0; i < n + 2; i++)
        x[i] = (uint16_t)(i * 40503);
    int64_t lengths[3] = {cg_lookup_min_cached() - 1, n, 1000};
    int32_t states[3] = {0, 2, 2}; /* empty, then ready */
    for (int c = 0; c < 3; c++) {
        int64_t slots[3] = {(intptr_t)(x + c), (intptr_t)out, 99};
        memset(out, 0, (size_t)n * sizeof *out);
        cg_rt_parallel_lookup(body16, slots, lengths[c], 1 << 14, 0, 1, 2, cache);
        for (int64_t i = 0; i < lengths[c]; i++)
            if (out[i] != (uint16_t)(mix(x[c + i], 99) >> 9))
                fail_msg("call %d: element %" PRId64 " is wrong", c, i);
        int32_t st;
        memcpy(&st, cache, sizeof st);
        assert_int_equal(st, states[c]);
    }
    /* the table is the body's result for every bf16 value */
    const uint16_t *table = (const uint16_t *)(cache + 64);
    for (int v = 0; v < 65536; v++)
        if (table[v] != (uint16_t)(mix((uint16_t)v, 99) >> 9))
            fail_msg("table[%d] is wrong", v);
    free(cache);
    free(x);
    free(out);
}

/* A compiled loop whose scalars are constants keeps its table from its
 * first call: calls with other inputs still give the reference's bits. */
static void test_constant_scalar_lookup_reuses_its_table(void **state)
{
    (void)state;
    enum { N2 = (1 << 16) + 7 };
    ir_function *fn = parse_ir(
        "func @gelu_ish(%0: bf16[65543]) -> (bf16[65543]) {\n"
        "  %1 = const() {value = [0.75]} : bf16[]\n"
        "  %2 = mul(%0, %1) : bf16[65543]\n"
        "  %3 = tanh(%2) : bf16[65543]\n"
        "  %4 = add(%3, %0) : bf16[65543]\n"
        "  return %4\n}\n", __LINE__);
    char *text;
    if (module_count(fn, "ptr nonnull @lookup_cache)", &text) != 1)
        fail_msg("the loop does not keep its table:\n%s", text);
    free(text);
    cg_code *c = compile_ok(fn, __LINE__);
    uint16_t *x = malloc(N2 * sizeof *x);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N2; i++)
            x[i] = (uint16_t)(i * 40503 + round * 7919);
        rt_value *args[1] = {val(ag_from_data(AG_BF16, AG_SHAPE(N2), x))};
        outcome o = both_with(fn, c, args, 1, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
    }
    free(x);
    tu_code_free(c);
    ir_function_free(fn);
}

/* Threads making the first calls of a constant-scalar lookup loop at once:
 * one builds the cache, the others compute without waiting for it; every
 * call gives the reference's bits (ThreadSanitizer runs this too). */
enum { RACE_THREADS = 4, RACE_N = (1 << 16) + 7 };

typedef struct race_call {
    const cg_code *code;
    rt_value *arg;
    const rt_value *want;
    bool same;
} race_call;

static void *race_main(void *p)
{
    race_call *rc = p;
    rt_value *arg = rc->arg, *res = NULL;
    rc->same = cg_run(rc->code, &arg, 1, &res) &&
               memcmp(res->data, rc->want->data, rt_value_bytes(res)) == 0;
    rt_value_free(res);
    return NULL;
}

static void test_lookup_cache_first_calls_race(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @race(%0: bf16[65543]) -> (bf16[65543]) {\n"
        "  %1 = const() {value = [-1.5]} : bf16[]\n"
        "  %2 = mul(%0, %1) : bf16[65543]\n"
        "  %3 = exp(%2) : bf16[65543]\n"
        "  return %3\n}\n", __LINE__);
    cg_code *c = compile_ok(fn, __LINE__);
    race_call rc[RACE_THREADS];
    outcome ref[RACE_THREADS];
    uint16_t *x = malloc(RACE_N * sizeof *x);
    for (int t = 0; t < RACE_THREADS; t++) {
        for (int i = 0; i < RACE_N; i++)
            x[i] = (uint16_t)(i * 40503 + t * 104729);
        rt_value *arg = val(ag_from_data(AG_BF16, AG_SHAPE(RACE_N), x));
        run_one(fn, NULL, &arg, 1, &ref[t]);
        assert_true(ref[t].ok);
        rc[t] = (race_call){.code = c, .arg = arg, .want = ref[t].res[0]};
    }
    free(x);
    pthread_t th[RACE_THREADS];
    for (int t = 0; t < RACE_THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, race_main, &rc[t]), 0);
    for (int t = 0; t < RACE_THREADS; t++) {
        pthread_join(th[t], NULL);
        if (!rc[t].same)
            fail_msg("thread %d's first call differs from the reference", t);
        outcome_free(&ref[t]);
    }
    tu_code_free(c);
    ir_function_free(fn);
}

/* Large bf16 loops whose only tensor operand is bf16 are looked up, with
 * the bits of the loop itself: every bf16 pattern (NaNs, infinities,
 * subnormals, -0) in the input, results rounded per op to bf16 and widened
 * to f32. */
static void test_bf16_loops_look_up_and_stay_exact(void **state)
{
    (void)state;
    enum { BIG = (1 << 20) + 7 };
    ir_function *fn = parse_ir(
        "func @act(%0: bf16[1048583], %1: bf16[], %2: f32[]) -> (bf16[1048583], "
        "f32[1048583]) {\n"
        "  %3 = mul(%0, %1) : bf16[1048583]\n"
        "  %4 = tanh(%3) : bf16[1048583]\n"
        "  %5 = add(%4, %0) : bf16[1048583]\n"
        "  %6 = cast(%0) {dtype = f32} : f32[1048583]\n"
        "  %7 = mul(%6, %2) : f32[1048583]\n"
        "  %8 = exp(%7) : f32[1048583]\n"
        "  return %5, %8\n}\n", __LINE__);
    uint16_t *x = malloc(BIG * sizeof *x);
    for (int i = 0; i < BIG; i++)
        x[i] = (uint16_t)(i * 40503);
    rt_value *args[3] = {val(ag_from_data(AG_BF16, AG_SHAPE(BIG), x)),
                         val(ag_scalar_bf16(0.75)), val(ag_scalar_f32(1.3f))};
    free(x);
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    char *text;
    int lookups = module_count(fn, "call void @cg_rt_parallel_lookup", &text);
    if (lookups != 2)
        fail_msg("%d loops are looked up, not 2:\n%s", lookups, text);
    free(text);
    ir_function_free(fn);
}

/* Literals read by runtime calls that do not keep them (products with an
 * unknown batch dim, the runtime's kernel) are lent in place, no copy per
 * call, and the results match the reference's (tests/lit/frontend/
 * emit-llvm-const-lend.c: a returned literal is still a copy). */
static void test_literals_lent_to_calls(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[?,3]) -> (f32[?,2]) {\n"
        "  %1 = const() {value = [1,2,3,4,5,6]} : f32[3,2]\n"
        "  %2 = matmul(%0, %1) : f32[?,2]\n"
        "  %3 = const() {value = [0.5,-1,2,0.25]} : f32[2,2]\n"
        "  %4 = matmul(%2, %3) : f32[?,2]\n"
        "  return %4\n}\n", __LINE__);
    rt_value *args[1] = {val(F32(AG_SHAPE(2, 3), 1, -2, 0.5f, 3, 4, -1))};
    outcome o = both(fn, args, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    char *text;
    int lent = module_count(fn, "call void @cg_rt_box_init", &text);
    if (lent != 2 || strstr(text, "%const"))
        fail_msg("%d literals are lent to the products, not 2:\n%s", lent, text);
    free(text);
    ir_function_free(fn);
}

/* ====================================================== matrix products */

static void test_matmul(void **state)
{
    (void)state;
    /* i32 chain: native, exact; f32 small: native (tolerance); f32 large
     * and batched: the runtime's kernel */
    ir_function *fn = parse_ir(
        "func @f(%0: i32[3,3], %1: f32[3,4], %2: f32[4,2], %3: f32[80,80], %4: f32[2,3,4]) "
        "-> (i32[3,3], f32[3,2], f32[80,80], f32[2,3,2]) {\n"
        "  %5 = matmul(%0, %0) : i32[3,3]\n"
        "  %6 = matmul(%0, %5) : i32[3,3]\n"
        "  %7 = matmul(%1, %2) : f32[3,2]\n"
        "  %8 = matmul(%3, %3) : f32[80,80]\n"
        "  %9 = matmul(%4, %2) : f32[2,3,2]\n"
        "  return %6, %7, %8, %9\n}\n", __LINE__);
    float big[6400], b3[24];
    for (int i = 0; i < 6400; i++)
        big[i] = (float)((i * 37) % 101) * 0.01f;
    for (int i = 0; i < 24; i++)
        b3[i] = (float)i * 0.5f - 3;
    rt_value *args[5] = {
        val(I32(AG_SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, INT32_MAX)),
        val(F32(AG_SHAPE(3, 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5f)),
        val(F32(AG_SHAPE(4, 2), 0.5f, -1, 2, 0.25f, -3, 1, 4, 8)),
        val(ag_from_data(AG_F32, AG_SHAPE(80, 80), big)),
        val(ag_from_data(AG_F32, AG_SHAPE(2, 3, 4), b3))};
    outcome o = both(fn, args, 5, 1e-5, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    o = both(fn, args, 5, 0, __LINE__); /* the i32 product is exact anyway */
    outcome_free(&o);
    ir_function_free(fn);
}

/* How many times the module text calls the generic fallback
 * (cg_rt_apply or cg_rt_apply_typed). */
static int fallback_calls(const ir_function *fn)
{
    return module_count(fn, "call ptr @cg_rt_apply", NULL);
}

/* n floats in [-scale, scale), from a multiplicative hash. */
static float *hashed_floats(int64_t n, uint32_t seed, float scale)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = ((uint32_t)i + seed) * 2654435761u;
        h ^= h >> 15;
        v[i] = scale * ((float)(h % 2001u) / 1000.0f - 1.0f);
    }
    return v;
}

/* The benchmark's MLP, smaller: every product is above the native
 * matmul's limit, so it calls the runtime's kernel (sgemm) and is exact;
 * each bias + relu is one native loop over the product; softmax falls
 * back. A NaN in the last bias must come out of relu and softmax as the
 * reference makes it. */
static void test_mlp_layers(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @mlp(%0: f32[64,80], %1: f32[80,72], %2: f32[72], %3: f32[72,72], %4: f32[72], "
        "%5: f32[72,64], %6: f32[64]) -> (f32[64,64], f32[64,72]) {\n"
        "  %7 = matmul(%0, %1) : f32[64,72]\n"
        "  %8 = add(%7, %2) : f32[64,72]\n"
        "  %9 = relu(%8) : f32[64,72]\n"
        "  %10 = matmul(%9, %3) : f32[64,72]\n"
        "  %11 = add(%10, %4) : f32[64,72]\n"
        "  %12 = relu(%11) : f32[64,72]\n"
        "  %13 = matmul(%12, %5) : f32[64,64]\n"
        "  %14 = add(%13, %6) : f32[64,64]\n"
        "  %15 = softmax(%14) {axis = -1} : f32[64,64]\n"
        "  return %15, %9\n}\n", __LINE__);
    static const int64_t dims[7][2] = {{64, 80}, {80, 72}, {72, 1}, {72, 72},
                                       {72, 1}, {72, 64}, {64, 1}};
    rt_value *args[7];
    for (int i = 0; i < 7; i++) {
        bool vec = dims[i][1] == 1;
        float *d = hashed_floats(dims[i][0] * dims[i][1], 100u * (uint32_t)i + 1,
                                 i == 0 ? 1.0f : 0.2f);
        if (i == 6)
            d[5] = NAN;
        args[i] = val(ag_from_data(AG_F32, vec ? AG_SHAPE(dims[i][0])
                                               : AG_SHAPE(dims[i][0], dims[i][1]), d));
        free(d);
    }
    outcome o = both(fn, args, 7, 0, __LINE__);
    assert_true(o.ok);
    /* relu cut something, and the NaN reached every row of the softmax */
    const float *h = o.res[1]->data, *y = o.res[0]->data;
    int zeros = 0;
    for (int i = 0; i < 64 * 72; i++)
        zeros += h[i] == 0;
    assert_true(zeros > 0 && zeros < 64 * 72);
    assert_true(isnan(y[0]) && isnan(y[64 * 64 - 1]));
    outcome_free(&o);
    assert_int_equal(fallback_calls(fn), 4); /* 3 products and softmax */
    ir_function_free(fn);
}

/* conv2d + bias + relu: the conv calls the runtime's kernel (its im2col
 * in more than one chunk here), the rest is one native loop. */
static void test_conv_bias_relu(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[2,96,96,8], %1: f32[3,3,8,4], %2: f32[4]) -> (f32[2,96,96,4]) {\n"
        "  %3 = conv2d(%0, %1) {strides = [1,1], padding = SAME} : f32[2,96,96,4]\n"
        "  %4 = add(%3, %2) : f32[2,96,96,4]\n"
        "  %5 = relu(%4) : f32[2,96,96,4]\n"
        "  return %5\n}\n", __LINE__);
    float *x = hashed_floats(2 * 96 * 96 * 8, 7, 1.0f), *f = hashed_floats(3 * 3 * 8 * 4, 9, 0.3f);
    rt_value *args[3] = {val(ag_from_data(AG_F32, AG_SHAPE(2, 96, 96, 8), x)),
                         val(ag_from_data(AG_F32, AG_SHAPE(3, 3, 8, 4), f)),
                         val(F32(AG_SHAPE(4), 0.1f, -0.2f, 0, 0.3f))};
    free(x);
    free(f);
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    assert_int_equal(fallback_calls(fn), 1);
    ir_function_free(fn);
}

/* More small intermediates alive at once than the frame holds: the
 * excess become rt_values, with the same results. */
static void test_frame_overflow_spills_to_boxes(void **state)
{
    (void)state;
    enum { K = 80 };
    size_t cap = 64 * 1024, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len,
                            "func @f(%%0: i32[32,32]) -> (i32[32,32]) {\n");
    for (int i = 0; i < K; i++) /* %1 .. %K: products, all alive until the sum */
        len += (size_t)snprintf(text + len, cap - len,
                                "  %%%d = matmul(%%0, %%%d) : i32[32,32]\n", i + 1,
                                i ? i : 0);
    int prev = 1;
    for (int i = 1; i < K; i++) { /* %K+1 ..: the running sum, one fused loop */
        len += (size_t)snprintf(text + len, cap - len, "  %%%d = add(%%%d, %%%d) : i32[32,32]\n",
                                K + i, prev, i + 1);
        prev = K + i;
    }
    snprintf(text + len, cap - len, "  return %%%d\n}\n", prev);
    ir_function *fn = parse_ir(text, __LINE__);
    free(text);
    int32_t x[32 * 32];
    for (int i = 0; i < 32 * 32; i++)
        x[i] = (i * 31) % 17 - 8;
    rt_value *arg = val(ag_from_data(AG_I32, AG_SHAPE(32, 32), x));
    outcome o = both(fn, &arg, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    ir_function_free(fn);
}

/* Frame buffers are the memory plan's: values whose lives do not overlap
 * share one, and a loop storing one value writes it over a value it reads
 * that dies there. The compiled code must still match the reference. */
static void test_frame_buffers_follow_the_memory_plan(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[8,8], %1: f32[8,8], %2: f32[8]) -> (f32[8,8]) {\n"
        "  %3 = matmul(%0, %1) : f32[8,8]\n"
        "  %4 = add(%3, %2) : f32[8,8]\n"
        "  %5 = mul(%3, %4) : f32[8,8]\n"
        "  %6 = tanh(%5) : f32[8,8]\n"
        "  %7 = matmul(%6, %1) : f32[8,8]\n"
        "  %8 = neg(%7) : f32[8,8]\n"
        "  %9 = matmul(%8, %8) : f32[8,8]\n"
        "  %10 = sub(%9, %0) : f32[8,8]\n"
        "  return %10\n}\n", __LINE__);
    pass_memory_plan *mp = pass_memory_plan_new(fn, &tgt_cpu.caps);
    assert_true(mp->in_place[6]); /* the loop %4..%6 over %3, read twice */
    assert_int_equal(mp->buffer[4], -1); /* in registers */
    assert_int_equal(mp->buffer[5], -1);
    assert_true(mp->in_place[8]); /* neg over %7 */
    assert_int_equal(mp->buffer[9], mp->buffer[3]); /* %3's buffer again */
    pass_memory_plan_free(mp);
    float x[64], w[64], b[8];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)((i * 7) % 11 - 5) * 0.1f;
        w[i] = (float)((i * 5) % 13 - 6) * 0.05f;
    }
    for (int i = 0; i < 8; i++)
        b[i] = (float)i * 0.25f - 1;
    rt_value *args[3] = {val(ag_from_data(AG_F32, AG_SHAPE(8, 8), x)),
                         val(ag_from_data(AG_F32, AG_SHAPE(8, 8), w)),
                         val(ag_from_data(AG_F32, AG_SHAPE(8), b))};
    outcome o = both(fn, args, 3, 1e-5, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    assert_false(uses_fallback(fn));
    ir_function_free(fn);
}

/* ================================================================ bf16 */

/* bf16 tensor of n elements from f32 values (rounded to nearest even). */
static rt_value *bf16_tensor(ag_shape s, const float *f, int n)
{
    uint16_t *b = malloc((size_t)n * sizeof *b);
    for (int i = 0; i < n; i++)
        b[i] = ag_f32_to_bf16(f[i]);
    rt_value *v = val(ag_from_data(AG_BF16, s, b));
    free(b);
    return v;
}

/* A bf16 chain is one loop (no kernel call) and rounds after every op
 * where the unfused graph does: bit for bit the reference, over values
 * whose f32 results land on and beside bf16 ties, NaN and infinities. */
static void test_bf16_chain_fuses_and_rounds_like_the_kernels(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: bf16[4096], %1: bf16[4096]) -> (bf16[4096], bool[4096]) {\n"
        "  %2 = mul(%0, %1) : bf16[4096]\n"
        "  %3 = add(%2, %0) : bf16[4096]\n"
        "  %4 = tanh(%3) : bf16[4096]\n"
        "  %5 = div(%4, %1) : bf16[4096]\n"
        "  %6 = sub(%5, %2) : bf16[4096]\n"
        "  %7 = greater(%6, %0) : bool[4096]\n"
        "  %8 = where(%7, %6, %3) : bf16[4096]\n"
        "  %9 = sqrt(%8) : bf16[4096]\n"
        "  return %9, %7\n}\n", __LINE__);
    enum { n = 4096 };
    static float a[n], b[n];
    for (int i = 0; i < n; i++) {
        /* 1 + k/128 times 1 + j/256: products with every low-bit pattern */
        a[i] = (1.0f + (float)(i % 128) / 128.0f) * ((i & 1) ? -1.0f : 1.0f);
        b[i] = 1.0f + (float)((i / 128) % 256) / 256.0f;
    }
    a[0] = NAN, a[1] = INFINITY, a[2] = -INFINITY, a[3] = 0.0f, a[4] = -0.0f;
    b[5] = 0.0f, b[6] = 3e38f, a[6] = 3e38f, b[7] = 1e-40f;
    rt_value *args[2] = {bf16_tensor(AG_SHAPE(n), a, n), bf16_tensor(AG_SHAPE(n), b, n)};
    outcome o = both(fn, args, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    cg_code *c = compile_ok(fn, __LINE__);
    char *text = cg_module_text(c);
    assert_null(strstr(text, "@cg_rt_apply"));
    free(text);
    tu_code_free(c);
    ir_function_free(fn);
}

/* Casts to bf16 round once, from f64, i32 and i64 too: a value whose
 * nearest f32 is a bf16 tie but which is not one itself, and integers with
 * bits below the tie (the kernels' sticky bit). */
static void test_bf16_casts_round_once(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f64[8], %1: i64[8], %2: i32[8]) -> (bf16[8], bf16[8], bf16[8]) {\n"
        "  %3 = cast(%0) {dtype = bf16} : bf16[8]\n"
        "  %4 = cast(%1) {dtype = bf16} : bf16[8]\n"
        "  %5 = cast(%2) {dtype = bf16} : bf16[8]\n"
        "  return %3, %4, %5\n}\n", __LINE__);
    double t = ldexp(1, -8), tiny = ldexp(1, -30);
    rt_value *d = val(F64(AG_SHAPE(8), 1 + t + tiny, 1 + t - tiny, -(1 + t + tiny), 1 + t,
                          1 + 3 * t, NAN, 1e300, -1e-300));
    int64_t big = (int64_t)1 << 40;
    int64_t i64s[8] = {big + (big >> 8) + 1, big + (big >> 8), -(big + (big >> 8) + 1),
                       INT64_MIN, INT64_MAX, 257, -259, 0};
    int32_t i32s[8] = {(1 << 24) + (1 << 16) + 1, (1 << 24) + (1 << 16), INT32_MIN, INT32_MAX,
                       257, -259, 1, 0};
    rt_value *args[3] = {d, val(ag_from_data(AG_I64, AG_SHAPE(8), i64s)),
                         val(ag_from_data(AG_I32, AG_SHAPE(8), i32s))};
    outcome o = both(fn, args, 3, 0, __LINE__);
    assert_true(o.ok);
    /* 1 + 2^-8 + 2^-30 rounds up; 1 + 2^-8 (a tie) to even, down */
    assert_int_equal(((const uint16_t *)o.res[0]->data)[0], ag_f32_to_bf16(1 + 2 * (float)t));
    assert_int_equal(((const uint16_t *)o.res[0]->data)[3], ag_f32_to_bf16(1.0f));
    outcome_free(&o);
    assert_false(uses_fallback(fn));
    ir_function_free(fn);
}

/* A bf16 product m x k x n compiled for cpu (NULL: the host), run on a
 * and b, against the reference: bit for bit when exact (integers whose
 * sums f32 holds exactly: every order agrees), else within one bf16
 * rounding of the result (docs/runtime.md). Returns whether the compiled
 * module uses vdpbf16ps. */
static bool check_bf16_matmul(const char *cpu, int m, int k, int n, bool exact)
{
    char text[512];
    snprintf(text, sizeof text,
             "func @f(%%0: bf16[%d,%d], %%1: bf16[%d,%d]) -> (bf16[%d,%d]) {\n"
             "  %%2 = matmul(%%0, %%1) : bf16[%d,%d]\n  return %%2\n}\n",
             m, k, k, n, m, n, m, n);
    ir_function *fn = parse_ir(text, __LINE__);
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
    for (int i = 0; i < m * k; i++)
        a[i] = exact ? (float)((i * 7) % 7 - 3) : (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < k * n; i++)
        b[i] = exact ? (float)((i * 5) % 9 - 4) : (float)((i * 53) % 97) / 40.0f - 1.2f;
    rt_value *args[2] = {bf16_tensor(AG_SHAPE(m, k), a, m * k), bf16_tensor(AG_SHAPE(k, n), b, k * n)};
    free(a);
    free(b);
    char err[512];
    cg_code *code = tu_compile_for(fn, cpu, err, sizeof err);
    if (!code)
        fail_msg("bf16 matmul %dx%dx%d for %s: %s", m, k, n, cpu ? cpu : "the host", err);
    char *ir = cg_module_text(code);
    bool dot = strstr(ir, "dpbf16ps") != NULL;
    free(ir);
    outcome o2 = both_with(fn, code, args, 2, exact ? 0 : 1.0 / 128, __LINE__);
    assert_true(o2.ok);
    outcome_free(&o2);
    tu_code_free(code);
    ir_function_free(fn);
    return dot;
}

/* Both paths on one machine: the host's (vdpbf16ps where it has
 * AVX512_BF16) and an AVX2 CPU's (converting to f32), over shapes with odd
 * k, rows left over from the 4-row tiles and columns from the 64-column
 * blocks, and one large enough to run in parallel. */
static void test_bf16_matmul_both_paths(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1}, {5, 7, 19}, {4, 2, 64}, {9, 33, 130}, {16, 64, 16}};
    cg_machine host = {0};
    bool host_dot = cg_has_bf16_dot(&host);
    for (int e = 0; e < 2; e++) {
        for (int i = 0; i < COUNT(shapes); i++) {
            const int *s = shapes[i];
            assert_int_equal(check_bf16_matmul(NULL, s[0], s[1], s[2], e), host_dot);
            assert_false(check_bf16_matmul("x86-64-v3", s[0], s[1], s[2], e));
        }
        /* larger than MATMUL_MAX_WORK: the kernel on AVX2, parallel chunks on AVX512_BF16 */
        assert_int_equal(check_bf16_matmul(NULL, 64, 784, 512, e), host_dot);
        assert_false(check_bf16_matmul("x86-64-v3", 64, 784, 512, e));
    }
}

/* Which CPUs have AVX512_BF16, and the features that override the name. */
static void test_bf16_dot_cpus(void **state)
{
    (void)state;
    cg_machine spr = {.cpu = "sapphirerapids"}, zen4 = {.cpu = "znver4"}, zen3 = {.cpu = "znver3"};
    cg_machine off = {.cpu = "sapphirerapids", .features = "+avx2,-avx512bf16"};
    cg_machine on = {.cpu = "x86-64-v3", .features = "+avx512bf16"};
    cg_machine arm = {.triple = "aarch64-linux-gnu", .cpu = "sapphirerapids"};
    assert_true(cg_has_bf16_dot(&spr));
    assert_true(cg_has_bf16_dot(&zen4));
    assert_false(cg_has_bf16_dot(&zen3));
    assert_false(cg_has_bf16_dot(&off));
    assert_true(cg_has_bf16_dot(&on));
    assert_false(cg_has_bf16_dot(&arm));
}

/* ===================================================== random programs */

/*
 * Random straight-line functions of the ops the backend compiles itself
 * (elementwise chains with broadcasting, integer matrix products, casts)
 * mixed with ones it leaves to the runtime (reductions), where values are
 * used many times: the fusion plan then makes loops that store several
 * values, and the memory plan shares and reuses frame buffers. Every op
 * here is exact in both executors, so results must agree bit for bit.
 */
typedef struct rprog {
    char *text;
    size_t len, cap;
    uint64_t seed;
    int next;             /* next value id */
    int f[256], nf;       /* f32[4,8] values */
    int r[256], nr;       /* f32[8] */
    int k[256], nk;       /* f32[4,1] */
    int i[256], ni;       /* i32[4,8] */
} rprog;

static unsigned rp_rand(rprog *P, unsigned n)
{
    P->seed = P->seed * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(P->seed >> 33) % n;
}

static void rp_emit(rprog *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rp_emit(rprog *P, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (P->len + (size_t)n + 1 > P->cap) {
        P->cap = (P->len + (size_t)n + 1) * 2;
        P->text = realloc(P->text, P->cap);
    }
    va_start(ap, fmt);
    vsnprintf(P->text + P->len, P->cap - P->len, fmt, ap);
    va_end(ap);
    P->len += (size_t)n;
}

static int rp_pick(rprog *P, const int *v, int n)
{
    /* mostly recent values, so that chains form; sometimes old ones */
    return rp_rand(P, 3) ? v[n - 1 - (int)rp_rand(P, n < 3 ? (unsigned)n : 3)]
                         : v[rp_rand(P, (unsigned)n)];
}

static void rp_push(int *v, int *n, int id)
{
    if (*n < 256)
        v[(*n)++] = id;
}

/* An operand broadcast against f32[4,8]: another [4,8], a row [8], a
 * column [4,1] or a scalar constant. */
static int rp_f_operand(rprog *P)
{
    switch (rp_rand(P, 5)) {
    case 0: return rp_pick(P, P->r, P->nr);
    case 1: return P->nk ? rp_pick(P, P->k, P->nk) : rp_pick(P, P->f, P->nf);
    case 2: {
        int c = P->next++;
        rp_emit(P, "  %%%d = const() {value = [%d.5]} : f32[]\n", c, (int)rp_rand(P, 7) - 3);
        return c;
    }
    default: return rp_pick(P, P->f, P->nf);
    }
}

static void rp_step(rprog *P)
{
    static const char *const unary[] = {"neg", "abs", "tanh", "floor"};
    static const char *const binary[] = {"add", "sub", "mul", "maximum", "minimum"};
    static const char *const ibinary[] = {"add", "sub", "mul"};
    int id = P->next++;
    switch (rp_rand(P, 10)) {
    case 0: case 1:
        rp_emit(P, "  %%%d = %s(%%%d) : f32[4,8]\n", id, unary[rp_rand(P, 4)],
                rp_pick(P, P->f, P->nf));
        rp_push(P->f, &P->nf, id);
        break;
    case 2: case 3: case 4: {
        int a = rp_pick(P, P->f, P->nf), b = rp_f_operand(P);
        if (rp_rand(P, 2))
            rp_emit(P, "  %%%d = %s(%%%d, %%%d) : f32[4,8]\n", id, binary[rp_rand(P, 5)], a, b);
        else
            rp_emit(P, "  %%%d = %s(%%%d, %%%d) : f32[4,8]\n", id, binary[rp_rand(P, 5)], b, a);
        rp_push(P->f, &P->nf, id);
        break;
    }
    case 5: {
        int a = rp_pick(P, P->f, P->nf), b = rp_f_operand(P), c = P->next++;
        rp_emit(P, "  %%%d = greater(%%%d, %%%d) : bool[4,8]\n", id, a, b);
        rp_emit(P, "  %%%d = where(%%%d, %%%d, %%%d) : f32[4,8]\n", c, id, b,
                rp_pick(P, P->f, P->nf));
        rp_push(P->f, &P->nf, c);
        break;
    }
    case 6:
        rp_emit(P, "  %%%d = %s(%%%d, %%%d) : i32[4,8]\n", id, ibinary[rp_rand(P, 3)],
                rp_pick(P, P->i, P->ni), rp_pick(P, P->i, P->ni));
        rp_push(P->i, &P->ni, id);
        break;
    case 7:
        rp_emit(P, "  %%%d = matmul(%%%d, %%4) : i32[4,8]\n", id, rp_pick(P, P->i, P->ni));
        rp_push(P->i, &P->ni, id);
        break;
    case 8:
        if (rp_rand(P, 2)) {
            rp_emit(P, "  %%%d = cast(%%%d) {dtype = f32} : f32[4,8]\n", id,
                    rp_pick(P, P->i, P->ni));
            rp_push(P->f, &P->nf, id);
        } else { /* the divisor is never 0 here: its error is tested elsewhere */
            int c = P->next++;
            rp_emit(P, "  %%%d = const() {value = [%d]} : i32[]\n", id, (int)rp_rand(P, 5) + 2);
            rp_emit(P, "  %%%d = floordiv(%%%d, %%%d) : i32[4,8]\n", c,
                    rp_pick(P, P->i, P->ni), id);
            rp_push(P->i, &P->ni, c);
        }
        break;
    default:
        if (rp_rand(P, 2)) {
            rp_emit(P, "  %%%d = reduce_sum(%%%d) {axis = 1, keepdims = true} : f32[4,1]\n", id,
                    rp_pick(P, P->f, P->nf));
            rp_push(P->k, &P->nk, id);
        } else {
            rp_emit(P, "  %%%d = reduce_max(%%%d) {axis = 0, keepdims = false} : f32[8]\n", id,
                    rp_pick(P, P->f, P->nf));
            rp_push(P->r, &P->nr, id);
        }
        break;
    }
}

static char *random_program(uint64_t seed, int steps)
{
    rprog P = {.seed = seed * 0x9e3779b97f4a7c15ull + 1, .next = 5};
    rp_emit(&P, "func @random(%%0: f32[4,8], %%1: f32[8], %%2: f32[4,1], %%3: i32[4,8], "
                "%%4: i32[8,8]) -> (f32[4,8], i32[4,8], f32[4,8], i32[4,8], f32[8]) {\n");
    rp_push(P.f, &P.nf, 0);
    rp_push(P.r, &P.nr, 1);
    rp_push(P.k, &P.nk, 2);
    rp_push(P.i, &P.ni, 3);
    for (int s = 0; s < steps; s++)
        rp_step(&P);
    rp_emit(&P, "  return %%%d, %%%d, %%%d, %%%d, %%%d\n}\n", P.f[P.nf - 1], P.i[P.ni - 1],
            P.f[P.nf / 2], P.i[P.ni / 2], P.r[P.nr - 1]);
    return P.text;
}

static void test_random_programs_match_reference(void **state)
{
    (void)state;
    float x[32], row[8], col[4];
    int32_t k[32], m[64];
    for (int i = 0; i < 32; i++) {
        x[i] = (float)((i * 37) % 23 - 11) * 0.375f;
        k[i] = (i * 2654435761u) % 41 - 20;
    }
    x[3] = -0.0f;
    x[7] = NAN;
    x[12] = INFINITY;
    k[5] = INT32_MIN;
    k[9] = INT32_MAX;
    for (int i = 0; i < 8; i++)
        row[i] = (float)i * 0.5f - 2;
    for (int i = 0; i < 4; i++)
        col[i] = (float)i - 1.5f;
    for (int i = 0; i < 64; i++)
        m[i] = (i * 13) % 7 - 3;
    rt_value *args[5] = {val(ag_from_data(AG_F32, AG_SHAPE(4, 8), x)),
                         val(ag_from_data(AG_F32, AG_SHAPE(8), row)),
                         val(ag_from_data(AG_F32, AG_SHAPE(4, 1), col)),
                         val(ag_from_data(AG_I32, AG_SHAPE(4, 8), k)),
                         val(ag_from_data(AG_I32, AG_SHAPE(8, 8), m))};
    int fused = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        char *text = random_program(seed, 20 + (int)(seed % 4) * 10);
        ir_function *fn = parse_ir(text, __LINE__);
        pass_fusion_plan *fp = pass_fusion_plan_new(fn, &tgt_cpu.caps);
        for (int c = 0; c < fp->n_clusters; c++)
            fused += fp->cluster_size[c] > 1;
        pass_fusion_plan_free(fp);
        cg_code *code = compile_ok(fn, __LINE__);
        outcome ref, jit;
        run_one(fn, NULL, args, 5, &ref);
        run_one(fn, code, args, 5, &jit);
        if (!ref.ok || !jit.ok || strcmp(ref.error, jit.error) != 0)
            fail_msg("seed %llu: %s / %s\n%s", (unsigned long long)seed, ref.error, jit.error,
                     text);
        for (int i = 0; i < ref.n; i++)
            if (!same_value(ref.res[i], jit.res[i], 0))
                fail_msg("seed %llu: result %d differs\n%s", (unsigned long long)seed, i, text);
        outcome_free(&ref);
        outcome_free(&jit);
        tu_code_free(code);
        ir_function_free(fn);
        free(text);
    }
    assert_true(fused >= 60); /* the programs did exercise fused loops */
}

/* ============================================================ reductions */

static void test_reductions_and_shapes_fall_back(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[2,3]) -> (f32[], f32[3], f32[3,2], f32[6]) {\n"
        "  %1 = mul(%0, %0) : f32[2,3]\n"
        "  %2 = reduce_sum(%1) {axis = all, keepdims = false} : f32[]\n"
        "  %3 = reduce_max(%1) {axis = 0, keepdims = false} : f32[3]\n"
        "  %4 = transpose(%1) {perm = [1,0]} : f32[3,2]\n"
        "  %5 = reshape(%1) {shape = [6]} : f32[6]\n"
        "  %6 = sqrt(%2) : f32[]\n"
        "  %7 = mul(%3, %6) : f32[3]\n"
        "  return %6, %7, %4, %5\n}\n", __LINE__);
    rt_value *x = val(F32(AG_SHAPE(2, 3), 1, -2, 3, 4.5f, 5, -6));
    outcome o = both(fn, &x, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    ir_function_free(fn);
}

/* ========================================================== control flow */

/* Staged C traced into a graph (as the function cache does). */
typedef void (*staged_fn)(const ag_tensor *in, ag_tensor *out);

static ir_function *trace(const char *name, staged_fn f, int n_in, const ir_type *types,
                          int n_out)
{
    ir_function *fn = ir_function_new(name);
    ir_trace *t = ir_trace_begin(fn);
    ir_trace_set_first(t, true);
    ag_scope_push();
    ag_tensor in[4], out[4];
    for (int i = 0; i < n_in; i++)
        in[i] = ir_trace_param(t, &types[i]);
    f(in, out);
    ir_trace_set_outputs(t, n_out, out, AG_HERE);
    ag_scope_pop();
    assert_true(ir_trace_end(t));
    char err[512];
    if (!ir_verify(fn, err, sizeof err))
        fail_msg("traced graph invalid: %s", err);
    return fn;
}

static const ir_type T_I32 = {.dtype = AG_I32};
static const ir_type T_F32_2 = {.dtype = AG_F32, .shape = {1, {2}}};
static const ir_type T_F32_Q = {.dtype = AG_F32, .shape = {1, {-1}}};

/* collatz(n): steps until 1, an if inside a while, over scalars. */
struct collatz_s {
    ag_tensor n, steps;
};
static ag_tensor collatz_cond(void *p)
{
    struct collatz_s *s = p;
    return ag_greater(s->n, 1);
}
static void collatz_even(void *p)
{
    struct collatz_s *s = p;
    s->n = ag_floordiv(s->n, 2);
}
static void collatz_odd(void *p)
{
    struct collatz_s *s = p;
    s->n = ag_add(ag_mul(s->n, 3), 1);
}
static void collatz_body(void *p)
{
    struct collatz_s *s = p;
    ag_tensor *v[] = {&s->n};
    static const char *const names[] = {"n"};
    ag_if_at(AG_HERE, ag_equal(ag_mod(s->n, 2), 0), 1, v, names, collatz_even, collatz_odd, s);
    s->steps = ag_add(s->steps, 1);
}
static void collatz_staged(const ag_tensor *in, ag_tensor *out)
{
    struct collatz_s s = {in[0], ag_scalar_i32(0)};
    ag_tensor *v[] = {&s.n, &s.steps};
    static const char *const names[] = {"n", "steps"};
    ag_while_at(AG_HERE, 2, v, names, collatz_cond, collatz_body, &s);
    out[0] = s.steps;
}

static void test_collatz_is_register_code(void **state)
{
    (void)state;
    ir_function *fn = trace("collatz", collatz_staged, 1, &T_I32, 1);
    cg_code *code = compile_ok(fn, __LINE__);
    static const int32_t inputs[] = {1, 2, 3, 6, 7, 27, 97, 871};
    static const int32_t steps[] = {0, 1, 7, 8, 16, 111, 118, 178};
    for (int i = 0; i < COUNT(inputs); i++) {
        rt_value *arg = val(ag_scalar_i32(inputs[i]));
        outcome o = both_with(fn, code, &arg, 1, 0, __LINE__);
        assert_true(o.ok);
        assert_int_equal(*(int32_t *)o.res[0]->data, steps[i]);
        outcome_free(&o);
    }
    char *text = cg_module_text(code);
    assert_null(strstr(text, "@cg_rt_apply("));  /* no fallback at all */
    assert_null(strstr(text, "@cg_rt_alias(")); /* no boxed loop state */
    free(text);
    tu_code_free(code);
    ir_function_free(fn);
}

/* Nested loops with a break flag and prints of native scalars. */
struct pairs_s {
    ag_tensor i, j, n, total, stop;
};
static ag_tensor inner_cond(void *p)
{
    struct pairs_s *s = p;
    return ag_logical_and(ag_less(s->j, s->i), ag_logical_not(s->stop));
}
static void set_stop(void *p)
{
    struct pairs_s *s = p;
    s->stop = ag_scalar_bool(true);
    ag_print("stop at", s->i, s->j);
}
static void inner_body(void *p)
{
    struct pairs_s *s = p;
    s->total = ag_add(s->total, ag_mul(s->i, s->j));
    ag_tensor *v[] = {&s->stop};
    static const char *const names[] = {"<break>"};
    ag_if_at(AG_HERE, ag_greater(s->total, 200), 1, v, names, set_stop, NULL, s);
    s->j = ag_add(s->j, 1);
}
static ag_tensor outer_cond(void *p)
{
    struct pairs_s *s = p;
    return ag_logical_and(ag_less(s->i, s->n), ag_logical_not(s->stop));
}
static void outer_body(void *p)
{
    struct pairs_s *s = p;
    s->j = ag_scalar_i32(0);
    ag_tensor *v[] = {&s->j, &s->total, &s->stop};
    static const char *const names[] = {"j", "total", "<break>"};
    ag_while_at(AG_HERE, 3, v, names, inner_cond, inner_body, s);
    ag_print("row", s->i, "total", s->total);
    s->i = ag_add(s->i, 1);
}
static void pairs_staged(const ag_tensor *in, ag_tensor *out)
{
    struct pairs_s s = {ag_scalar_i32(0), ag_scalar_i32(0), in[0], ag_scalar_i32(0),
                        ag_scalar_bool(false)};
    ag_tensor *v[] = {&s.i, &s.total, &s.stop};
    static const char *const names[] = {"i", "total", "<break>"};
    ag_while_at(AG_HERE, 3, v, names, outer_cond, outer_body, &s);
    out[0] = s.total;
    out[1] = s.i;
}

static void test_nested_loops_break_and_prints(void **state)
{
    (void)state;
    ir_function *fn = trace("pairs", pairs_staged, 1, &T_I32, 2);
    cg_code *code = compile_ok(fn, __LINE__);
    static const int32_t ns[] = {0, 1, 4, 30};
    for (int i = 0; i < COUNT(ns); i++) {
        rt_value *arg = val(ag_scalar_i32(ns[i]));
        outcome o = both_with(fn, code, &arg, 1, 0, __LINE__);
        assert_true(o.ok);
        if (ns[i] == 4)
            assert_string_equal(o.printed, "row 0 total 0\nrow 1 total 0\nrow 2 total 2\n"
                                           "row 3 total 11\n");
        if (ns[i] == 30)
            assert_non_null(strstr(o.printed, "stop at"));
        outcome_free(&o);
    }
    tu_code_free(code);
    ir_function_free(fn);
}

/* A tensor loop variable with a print and a reduction in the condition. */
struct squash_s {
    ag_tensor x;
};
static ag_tensor squash_cond(void *p)
{
    struct squash_s *s = p;
    return ag_greater(ag_reduce_sum(s->x, AG_ALL_AXES, false), 1);
}
static void squash_body(void *p)
{
    struct squash_s *s = p;
    ag_print(s->x);
    s->x = ag_add(ag_tanh(s->x), ag_mul(s->x, 0.01f));
}
static void squash_staged(const ag_tensor *in, ag_tensor *out)
{
    struct squash_s s = {in[0]};
    ag_tensor *v[] = {&s.x};
    static const char *const names[] = {"x"};
    ag_while_at(AG_HERE, 1, v, names, squash_cond, squash_body, &s);
    out[0] = s.x;
}

static void test_tensor_loop_variable(void **state)
{
    (void)state;
    ir_function *fn = trace("squash", squash_staged, 1, &T_F32_2, 1);
    rt_value *x = val(F32(AG_SHAPE(2), 0.5f, 1));
    outcome o = both(fn, &x, 1, 0, __LINE__);
    assert_true(o.ok);
    assert_non_null(strstr(o.printed, "[0.5 1]\n"));
    outcome_free(&o);
    ir_function_free(fn);
    /* the same with an unknown dim */
    fn = trace("squash_q", squash_staged, 1, &T_F32_Q, 1);
    x = val(F32(AG_SHAPE(3), 0.5f, 1, -0.25f));
    o = both(fn, &x, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    x = val(ag_zeros(AG_F32, AG_SHAPE(0)));
    o = both(fn, &x, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    ir_function_free(fn);
}

/* A tensor array written in a loop, then stacked. */
struct fill_s {
    ag_tensor i, n;
    ag_tensor_array ta;
};
static ag_tensor fill_cond(void *p)
{
    struct fill_s *s = p;
    return ag_less(s->i, s->n);
}
static void fill_body(void *p)
{
    struct fill_s *s = p;
    ag_tensor row = ag_mul(ag_cast(ag_fill(AG_I32, AG_SHAPE(3), 1), AG_F32),
                           ag_cast(ag_add(ag_mul(s->i, s->i), 1), AG_F32));
    s->ta = ag_tensor_array_write(s->ta, s->i, row);
    s->i = ag_add(s->i, 1);
}
static void fill_staged(const ag_tensor *in, ag_tensor *out)
{
    struct fill_s s = {ag_scalar_i32(0), in[0], ag_tensor_array_new(AG_F32, 0, true)};
    ag_tensor *v[] = {&s.i, &s.ta.list};
    static const char *const names[] = {"i", "ta"};
    ag_while_at(AG_HERE, 2, v, names, fill_cond, fill_body, &s);
    out[0] = ag_tensor_array_stack(s.ta);
    out[1] = ag_tensor_array_read(s.ta, ag_sub(s.n, 1));
}

static void test_tensor_array_in_loop(void **state)
{
    (void)state;
    ir_function *fn = trace("fill", fill_staged, 1, &T_I32, 2);
    cg_code *code = compile_ok(fn, __LINE__);
    rt_value *n = val(ag_scalar_i32(4));
    outcome o = both_with(fn, code, &n, 1, 0, __LINE__);
    assert_true(o.ok);
    const float *r = o.res[0]->data;
    assert_true(r[0] == 1 && r[3] == 2 && r[11] == 10);
    outcome_free(&o);
    n = val(ag_scalar_i32(0)); /* reading element -1: the runtime's error */
    o = both_with(fn, code, &n, 1, 0, __LINE__);
    assert_false(o.ok);
    outcome_free(&o);
    tu_code_free(code);
    ir_function_free(fn);
}

/* An assert that fails at run time, inside a loop, after some prints. */
static int assert_line;
struct countdown_s {
    ag_tensor k;
};
static ag_tensor countdown_cond(void *p)
{
    struct countdown_s *s = p;
    return ag_greater(s->k, -5);
}
static void countdown_body(void *p)
{
    struct countdown_s *s = p;
    ag_print("k =", s->k);
    assert_line = __LINE__ + 1;
    ag_assert(ag_greater_equal(s->k, 0), "k went negative");
    s->k = ag_sub(s->k, 1);
}
static void countdown_staged(const ag_tensor *in, ag_tensor *out)
{
    struct countdown_s s = {in[0]};
    ag_tensor *v[] = {&s.k};
    static const char *const names[] = {"k"};
    ag_while_at(AG_HERE, 1, v, names, countdown_cond, countdown_body, &s);
    out[0] = s.k;
}

static void test_assert_fails_at_its_line(void **state)
{
    (void)state;
    ir_function *fn = trace("countdown", countdown_staged, 1, &T_I32, 1);
    rt_value *k = val(ag_scalar_i32(2));
    outcome o = both(fn, &k, 1, 0, __LINE__);
    assert_false(o.ok);
    assert_string_equal(o.printed, "k = 2\nk = 1\nk = 0\nk = -1\n");
    char where[64];
    snprintf(where, sizeof where, "test_backend.c:%d: ", assert_line);
    assert_non_null(strstr(o.error, where));
    assert_non_null(strstr(o.error, "k went negative"));
    outcome_free(&o);
    ir_function_free(fn);
}

/* Variables: updated and read in program order inside a loop. */
static ag_variable counter;
struct bump_s {
    ag_tensor i, n;
};
static ag_tensor bump_cond(void *p)
{
    struct bump_s *s = p;
    return ag_less(s->i, s->n);
}
static void bump_body(void *p)
{
    struct bump_s *s = p;
    ag_assign_add(counter, ag_cast(s->i, AG_F32));
    ag_print("counter", ag_variable_read(counter));
    s->i = ag_add(s->i, 1);
}
static void bump_staged(const ag_tensor *in, ag_tensor *out)
{
    struct bump_s s = {ag_scalar_i32(0), in[0]};
    ag_tensor *v[] = {&s.i};
    static const char *const names[] = {"i"};
    ag_while_at(AG_HERE, 1, v, names, bump_cond, bump_body, &s);
    out[0] = ag_mul(ag_variable_read(counter), 2);
}

static void test_variables_in_loop(void **state)
{
    (void)state;
    counter = ag_variable_new(ag_scalar_f32(0));
    ir_function *fn = trace("bump", bump_staged, 1, &T_I32, 1);
    cg_code *code = compile_ok(fn, __LINE__);
    rt_value *n = val(ag_scalar_i32(3));
    outcome ref, jit;
    run_one(fn, NULL, &n, 1, &ref);
    run_one(fn, code, &n, 1, &jit); /* the variable carries on from 3 */
    assert_string_equal(ref.printed, "counter 0\ncounter 1\ncounter 3\n");
    assert_string_equal(jit.printed, "counter 3\ncounter 4\ncounter 6\n");
    assert_true(*(float *)ref.res[0]->data == 6 && *(float *)jit.res[0]->data == 12);
    outcome_free(&ref);
    outcome_free(&jit);
    tu_code_free(code);
    ir_function_free(fn);
    ag_variable_free(counter);
}

/* power(x, 5): a chain of small integer matrix products (the guide's
 * example), compiled to native products in frame buffers. */
static void power_staged(const ag_tensor *in, ag_tensor *out)
{
    ag_tensor r = ag_eye(4, AG_I32);
    for (int i = 0; i < 5; i++)
        r = ag_matmul(in[0], r);
    out[0] = r;
}

static void test_power_chain(void **state)
{
    (void)state;
    static const ir_type t = {.dtype = AG_I32, .shape = {2, {4, 4}}};
    ir_function *fn = trace("power", power_staged, 1, &t, 1);
    int32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = i * 7919 - 40000;
    rt_value *arg = val(ag_from_data(AG_I32, AG_SHAPE(4, 4), x));
    outcome o = both(fn, &arg, 1, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    cg_code *code = compile_ok(fn, __LINE__);
    char *text = cg_module_text(code);
    assert_non_null(strstr(text, "matmul_i32_4x4x4"));
    free(text);
    tu_code_free(code);
    ir_function_free(fn);
}

/* Code compiled for a CPU the options name (older than the host) says so
 * in every function, so that the JIT's code generator, whose target
 * machine is the host's, compiles for that CPU too; it computes the same.
 * A CPU LLVM does not know is an error, not an LLVM abort. */
static void test_compiled_for_the_named_cpu(void **state)
{
    (void)state;
#if defined(__x86_64__)
    const char *older = "x86-64-v2", *attr = "\"target-cpu\"=\"x86-64-v2\"";
#else
    const char *older = "generic", *attr = "\"target-cpu\"=\"generic\"";
#endif
    ir_function *fn = parse_ir(
        "func @f(%0: i32[10,10], %1: f32[64]) -> (i32[10,10], f32[64]) {\n"
        "  %2 = matmul(%0, %0) : i32[10,10]\n"
        "  %3 = tanh(%1) : f32[64]\n"
        "  %4 = mul(%3, %1) : f32[64]\n"
        "  return %2, %4\n}\n", __LINE__);
    int32_t x[100];
    float y[64];
    for (int i = 0; i < 100; i++)
        x[i] = i * 7919 - 40000;
    for (int i = 0; i < 64; i++)
        y[i] = (float)i * 0.125f - 4;
    rt_value *args[2] = {val(ag_from_data(AG_I32, AG_SHAPE(10, 10), x)),
                         val(ag_from_data(AG_F32, AG_SHAPE(64), y))};
    pass_analyses *am = pass_analyses_new(fn, &tgt_cpu.caps);
    char err[512];
    tgt_options for_older = tu_cpu_options(older), unknown = tu_cpu_options("no-such-cpu");
    cg_code *code = cg_compile(fn, am, &for_older, err, sizeof err);
    assert_non_null(code);
    char *text = cg_module_text(code);
    assert_non_null(strstr(text, attr));
    free(text);
    outcome o = both_with(fn, code, args, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    cg_free(code);
    assert_null(cg_compile(fn, am, &unknown, err, sizeof err));
    tu_options_free(&for_older);
    tu_options_free(&unknown);
    assert_non_null(strstr(err, "LLVM knows no CPU named 'no-such-cpu'"));
    pass_analyses_free(am);
    ir_function_free(fn);
}

/* cond yielding scalars, tensors and a tensor array through both arms. */
static void test_cond_results_of_every_kind(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[], %1: f32[2]) -> (f32[], f32[2], i32[]) {\n"
        "  %2 = const() {value = [0]} : f32[]\n"
        "  %3 = greater(%0, %2) : bool[]\n"
        "  %4 = ta_new() {dtype = f32, n = 0, dynamic = true} : list<f32>\n"
        "  %5 = cond(%3, %0, %1, %4) : (f32[], f32[2], list<f32>[2]) {\n"
        "  ^then(%6: f32[], %7: f32[2], %8: list<f32>):\n"
        "    %9 = mul(%6, %6) : f32[]\n"
        "    %10 = mul(%7, %6) : f32[2]\n"
        "    %11 = const() {value = [0]} : i32[]\n"
        "    %12 = ta_write(%8, %11, %10) : list<f32>[2]\n"
        "    yield %9, %10, %12\n"
        "  ^else(%13: f32[], %14: f32[2], %15: list<f32>):\n"
        "    %16 = neg(%13) : f32[]\n"
        "    %17 = const() {value = [0]} : i32[]\n"
        "    %18 = ta_write(%15, %17, %14) : list<f32>[2]\n"
        "    %19 = const() {value = [1]} : i32[]\n"
        "    %20 = ta_write(%18, %19, %14) : list<f32>[2]\n"
        "    yield %16, %14, %20\n"
        "  }\n"
        "  %21 = get(%5) {index = 0} : f32[]\n"
        "  %22 = get(%5) {index = 1} : f32[2]\n"
        "  %23 = get(%5) {index = 2} : list<f32>[2]\n"
        "  %24 = ta_size(%23) : i32[]\n"
        "  %25 = add(%22, %21) : f32[2]\n"
        "  return %21, %25, %24\n}\n", __LINE__);
    for (int sign = -1; sign <= 1; sign += 2) {
        rt_value *args[2] = {val(ag_scalar_f32(1.5f * (float)sign)),
                             val(F32(AG_SHAPE(2), 3, -4))};
        outcome o = both(fn, args, 2, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
    }
    ir_function_free(fn);
}

/* Loop state of every kind, a loop that never runs, and a loop whose
 * body yields its parameter unchanged. */
static void test_while_state_kinds(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: i64[], %1: f64[3], %2: bool[]) -> (i64[], f64[3], bool[]) {\n"
        "  %3 = while(%0, %1, %2) : (i64[], f64[3], bool[]) {\n"
        "  ^cond(%4: i64[], %5: f64[3], %6: bool[]):\n"
        "    %7 = const() {value = [10]} : i64[]\n"
        "    %8 = less(%4, %7) : bool[]\n"
        "    yield %8\n"
        "  ^body(%9: i64[], %10: f64[3], %11: bool[]):\n"
        "    %12 = const() {value = [1]} : i64[]\n"
        "    %13 = add(%9, %12) : i64[]\n"
        "    %14 = cast(%13) {dtype = f64} : f64[]\n"
        "    %15 = div(%10, %14) : f64[3]\n"
        "    %16 = logical_not(%11) : bool[]\n"
        "    yield %13, %15, %16\n"
        "  }\n"
        "  %17 = get(%3) {index = 0} : i64[]\n"
        "  %18 = get(%3) {index = 1} : f64[3]\n"
        "  %19 = get(%3) {index = 2} : bool[]\n"
        "  return %17, %18, %19\n}\n", __LINE__);
    static const int64_t starts[] = {0, 7, 10, 100};
    for (int i = 0; i < COUNT(starts); i++) {
        rt_value *args[3] = {val(ag_scalar_i64(starts[i])), val(F64(AG_SHAPE(3), 1e6, -3, 0.1)),
                             val(ag_scalar_bool(i % 2))};
        outcome o = both(fn, args, 3, 0, __LINE__);
        assert_true(o.ok);
        outcome_free(&o);
    }
    ir_function_free(fn);

    fn = parse_ir("func @f(%0: f32[2], %1: i32[]) -> (f32[2]) {\n"
                  "  %2 = while(%0, %1) : (f32[2], i32[]) {\n"
                  "  ^cond(%3: f32[2], %4: i32[]):\n"
                  "    %5 = const() {value = [0]} : i32[]\n"
                  "    %6 = greater(%4, %5) : bool[]\n"
                  "    yield %6\n"
                  "  ^body(%7: f32[2], %8: i32[]):\n"
                  "    %9 = const() {value = [1]} : i32[]\n"
                  "    %10 = sub(%8, %9) : i32[]\n"
                  "    yield %7, %10\n"
                  "  }\n"
                  "  %11 = get(%2) {index = 0} : f32[2]\n"
                  "  return %11\n}\n", __LINE__);
    rt_value *args[2] = {val(F32(AG_SHAPE(2), 1, 2)), val(ag_scalar_i32(3))};
    outcome o = both(fn, args, 2, 0, __LINE__);
    assert_true(o.ok);
    outcome_free(&o);
    ir_function_free(fn);
}

/* Ops that keep an operand (ta_write keeps the element, reshape aliases
 * its input) get a heap box for a register scalar, never a frame box. */
static void test_kept_operands_outlive_the_call(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: i32[]) -> (i32[5], f32[1,1]) {\n"
        "  %1 = ta_new() {dtype = i32, n = 0, dynamic = true} : list<i32>\n"
        "  %2 = const() {value = [0]} : i32[]\n"
        "  %3 = while(%2, %1) : (i32[], list<i32>) {\n"
        "  ^cond(%4: i32[], %5: list<i32>):\n"
        "    %6 = const() {value = [5]} : i32[]\n"
        "    %7 = less(%4, %6) : bool[]\n"
        "    yield %7\n"
        "  ^body(%8: i32[], %9: list<i32>):\n"
        "    %10 = mul(%8, %8) : i32[]\n"
        "    %11 = ta_write(%9, %8, %10) : list<i32>[]\n"
        "    %12 = const() {value = [1]} : i32[]\n"
        "    %13 = add(%8, %12) : i32[]\n"
        "    yield %13, %11\n"
        "  }\n"
        "  %14 = get(%3) {index = 1} : list<i32>\n"
        "  %15 = ta_stack(%14) : i32[?]\n"
        "  %16 = reshape(%15) {shape = [5]} : i32[5]\n"
        "  %17 = cast(%0) {dtype = f32} : f32[]\n"
        "  %18 = reshape(%17) {shape = [1,1]} : f32[1,1]\n"
        "  return %16, %18\n}\n", __LINE__);
    rt_value *x = val(ag_scalar_i32(-3));
    outcome o = both(fn, &x, 1, 0, __LINE__);
    assert_true(o.ok);
    const int32_t *sq = o.res[0]->data;
    assert_true(sq[0] == 0 && sq[2] == 4 && sq[4] == 16);
    assert_true(*(const float *)o.res[1]->data == -3);
    outcome_free(&o);
    ir_function_free(fn);
}

/* Results that are parameters, the same value twice, and constants. */
static void test_results_alias_and_constants(void **state)
{
    (void)state;
    ir_function *fn = parse_ir(
        "func @f(%0: f32[2], %1: i32[]) -> (f32[2], f32[2], i32[], i32[], f32[2,2]) {\n"
        "  %2 = const() {value = [5]} : i32[]\n"
        "  %3 = const() {value = [1, 2, 3, 4]} : f32[2,2]\n"
        "  return %0, %0, %1, %2, %3\n}\n", __LINE__);
    rt_value *args[2] = {val(F32(AG_SHAPE(2), 1, 2)), val(ag_scalar_i32(9))};
    outcome o = both(fn, args, 2, 0, __LINE__);
    assert_true(o.ok);
    assert_ptr_not_equal(o.res[0], o.res[1]); /* separate values */
    outcome_free(&o);
    ir_function_free(fn);
}

/* =========================================================== threads */

static void *compile_and_run(void *arg)
{
    (void)arg;
    ir_function *fn = parse_ir("func @f(%0: i64[]) -> (i64[]) {\n"
                               "  %1 = mul(%0, %0) : i64[]\n  return %1\n}\n", __LINE__);
    for (int round = 0; round < 5; round++) {
        char err[256];
        cg_code *c = tu_compile(fn, err, sizeof err);
        if (!c)
            return (void *)1;
        for (int64_t i = 0; i < 100; i++) {
            rt_value *x = rt_value_scalar(AG_I64, (double)i), *r = NULL;
            bool ok = cg_run(c, &x, 1, &r);
            bool right = ok && *(int64_t *)r->data == i * i;
            rt_value_free(x);
            rt_value_free(r);
            if (!right) {
                tu_code_free(c);
                return (void *)1;
            }
        }
        tu_code_free(c);
    }
    ir_function_free(fn);
    return NULL;
}

static void test_concurrent_compiles(void **state)
{
    (void)state;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, compile_and_run, NULL), 0);
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_binary_ops_on_tensors),
        TU_TEST(test_binary_ops_on_scalars),
        TU_TEST(test_unary_ops),
        TU_TEST(test_cast_every_pair),
        TU_TEST(test_cast_saturates),
        TU_TEST(test_bf16_chain_fuses_and_rounds_like_the_kernels),
        TU_TEST(test_bf16_casts_round_once),
        TU_TEST(test_bf16_matmul_both_paths),
        TU_TEST(test_bf16_dot_cpus),
        TU_TEST(test_constant_folding_matches),
        TU_TEST(test_where),
        TU_TEST(test_op_table_consistent),
        TU_TEST(test_cpu_op_table),
        TU_TEST(test_every_elementwise_op_is_emitted),
        TU_TEST(test_integer_division_by_zero),
        TU_TEST(test_division_edge_cases),
        TU_TEST(test_unused_failures_never_run),
        TU_TEST(test_error_stops_execution),
        TU_TEST(test_wrong_argument_type_is_reported),
        TU_TEST(test_value_of_wrong_type_is_reported),
        TU_TEST(test_broadcasting_shapes),
        TU_TEST(test_unknown_dims),
        TU_TEST(test_fused_chain_is_native_and_exact),
        TU_TEST(test_large_loops_run_in_parallel),
        TU_TEST(test_hot_loops_prefetch_and_stay_exact),
        TU_TEST(test_broadcast_hot_loops_prefetch_and_stay_exact),
        TU_TEST(test_short_rows_run_in_groups_and_stay_exact),
        TU_TEST(test_lookup_kernels_match_the_loop),
        TU_TEST(test_bf16_loops_look_up_and_stay_exact),
        TU_TEST(test_lookup_cache_is_built_once),
        TU_TEST(test_constant_scalar_lookup_reuses_its_table),
        TU_TEST(test_lookup_cache_first_calls_race),
        TU_TEST(test_literals_lent_to_calls),
        TU_TEST(test_matmul),
        TU_TEST(test_mlp_layers),
        TU_TEST(test_conv_bias_relu),
        TU_TEST(test_frame_overflow_spills_to_boxes),
        TU_TEST(test_frame_buffers_follow_the_memory_plan),
        TU_TEST(test_random_programs_match_reference),
        TU_TEST(test_reductions_and_shapes_fall_back),
        TU_TEST(test_collatz_is_register_code),
        TU_TEST(test_nested_loops_break_and_prints),
        TU_TEST(test_tensor_loop_variable),
        TU_TEST(test_tensor_array_in_loop),
        TU_TEST(test_assert_fails_at_its_line),
        TU_TEST(test_variables_in_loop),
        TU_TEST(test_power_chain),
        TU_TEST(test_compiled_for_the_named_cpu),
        TU_TEST(test_cond_results_of_every_kind),
        TU_TEST(test_while_state_kinds),
        TU_TEST(test_kept_operands_outlive_the_call),
        TU_TEST(test_results_alias_and_constants),
        TU_TEST(test_concurrent_compiles),
    };
    TU_RUN(tests);
}
