/*
 * test_quant_pack.c - int8 products whose weight is a constant of the
 * graph read it packed when the code was compiled (backend/cpu/
 * lower_qpack.c): the module holds the packed weight and calls the
 * packed entry points, and the results are bit for bit those of the same
 * function with the weight passed in (which packs it at every call), for
 * a static-range layer (qmatmul + bias + requantize in one call), a
 * qmatmul and a qconv2d of ragged shapes; also when the call runs another
 * path than the one the weight was packed for (AG_QGEMM_PATH), and from
 * several threads at once. Code the JIT compiles for another CPU packs
 * nothing; an object file's code packs at its first call, into a slot
 * (cg_rt_packed_weight: one block, whichever thread comes first).
 */
#include "test_util.h"

#include "cg_runtime.h"
#include "cg_util.h"
#include "config.h"
#include "qgemm.h"

#include <pthread.h>

static uint64_t rng = 0x9E3779B97F4A7C15u;

static int random_i8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int8_t)(rng >> 24);
}

/* Appends to a growing text. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list again;
    va_copy(again, ap);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)need + 1 > t->cap) {
        t->cap = (t->len + (size_t)need + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, again);
    va_end(again);
    t->len += (size_t)need;
}

/* "[v, v, ...]" of count values from seed (the same for the same seed). */
static void put_values(text *t, int64_t count, uint64_t seed)
{
    rng = seed;
    put(t, "[");
    for (int64_t i = 0; i < count; i++)
        put(t, "%s%d", i ? ", " : "", random_i8());
    put(t, "]");
}

/* The three kinds of product, each with its weight %1 a constant or
 * the function's second parameter. */
typedef enum form { LAYER, QMATMUL, QCONV2D } form;

typedef struct shape {
    int64_t m, k, n;   /* the product: [m, k] x [k, n] */
    int64_t h, w, c;   /* qconv2d: the image [1, h, w, c], a 3x3 filter, n outputs */
} shape;

static char *function_text(form f, const shape *s, bool constant)
{
    text t = {0};
    char wtype[64], xtype[64];
    if (f == QCONV2D) {
        snprintf(xtype, sizeof xtype, "i8[1,%lld,%lld,%lld]", (long long)s->h, (long long)s->w,
                 (long long)s->c);
        snprintf(wtype, sizeof wtype, "i8[3,3,%lld,%lld]", (long long)s->c, (long long)s->n);
    } else {
        snprintf(xtype, sizeof xtype, "i8[%lld,%lld]", (long long)s->m, (long long)s->k);
        snprintf(wtype, sizeof wtype, "i8[%lld,%lld]", (long long)s->k, (long long)s->n);
    }
    int64_t wcount = f == QCONV2D ? 9 * s->c * s->n : s->k * s->n;
    const char *rtype = f == LAYER ? "i8" : "i32";
    char otype[64];
    if (f == QCONV2D)
        snprintf(otype, sizeof otype, "i32[1,%lld,%lld,%lld]", (long long)s->h, (long long)s->w,
                 (long long)s->n);
    else
        snprintf(otype, sizeof otype, "%s[%lld,%lld]", rtype, (long long)s->m, (long long)s->n);
    if (constant) {
        put(&t, "func @f(%%0: %s) -> (%s) {\n  %%1 = const() {value = ", xtype, otype);
        put_values(&t, wcount, 77 + (uint64_t)wcount);
        put(&t, "} : %s\n", wtype);
    } else {
        put(&t, "func @f(%%0: %s, %%1: %s) -> (%s) {\n", xtype, wtype, otype);
    }
    put(&t, "  %%2 = const() {value = [-3]} : i32[]\n");
    if (f == QCONV2D) {
        put(&t, "  %%3 = qconv2d(%%0, %%1, %%2) {strides = [1,1], padding = SAME} : %s\n", otype);
        put(&t, "  return %%3\n}\n");
    } else if (f == QMATMUL) {
        put(&t, "  %%3 = qmatmul(%%0, %%1, %%2) : %s\n  return %%3\n}\n", otype);
    } else {
        put(&t, "  %%3 = qmatmul(%%0, %%1, %%2) : i32[%lld,%lld]\n", (long long)s->m,
            (long long)s->n);
        put(&t, "  %%4 = const() {value = ");
        put_values(&t, s->n, 5);
        put(&t, "} : i32[%lld]\n", (long long)s->n);
        put(&t, "  %%5 = add(%%3, %%4) : i32[%lld,%lld]\n", (long long)s->m, (long long)s->n);
        put(&t, "  %%6 = const() {value = [0.0041]} : f32[]\n");
        put(&t, "  %%7 = const() {value = [-128]} : i32[]\n");
        put(&t, "  %%8 = requantize(%%5, %%6, %%7) {lo = -128, hi = 127} : %s\n", otype);
        put(&t, "  return %%8\n}\n");
    }
    return t.s;
}

static cg_code *compile(const char *src, const char *cpu, ir_function **fn)
{
    char err[512];
    *fn = ir_parse(src, "test.ir", err, sizeof err);
    if (!*fn)
        fail_msg("parse: %s", err);
    cg_code *code = tu_compile_for(*fn, cpu, err, sizeof err);
    if (!code)
        fail_msg("compile: %s", err);
    return code;
}

/* The constant weight's value in the compiled function. */
static const rt_value *weight_of(const ir_function *fn)
{
    for (const ir_node *x = fn->body->first; x; x = x->next)
        if (x->opcode == RT_OP_CONST && x->attrs.literal->dtype == AG_I8)
            return x->attrs.literal;
    fail_msg("no weight");
    return NULL;
}

static rt_value *random_input(const ir_function *fn)
{
    const ir_type *t = &fn->body->params[0]->type;
    rt_value *x = rt_value_new(AG_I8, &t->shape);
    int8_t *d = x->data;
    rng = 1234;
    for (int64_t i = 0; i < x->numel; i++)
        d[i] = (int8_t)random_i8();
    return x;
}

typedef struct run {
    const cg_code *code;
    rt_value *args[2];
    int n_args;
    rt_value *result;
} run;

static void *run_code(void *arg)
{
    run *r = arg;
    r->result = NULL;
    if (!cg_run(r->code, r->args, r->n_args, &r->result))
        r->result = NULL;
    return NULL;
}

static void assert_same_value(const rt_value *got, const rt_value *want)
{
    assert_non_null(got);
    assert_int_equal(got->numel, want->numel);
    assert_int_equal(got->dtype, want->dtype);
    assert_memory_equal(got->data, want->data, (size_t)want->numel * rt_dtype_size(want->dtype));
}

/* The cpu target's thread pool, noting whether the large products
 * handed to it read b packed ahead. */
static int hooked, hooked_packed;
static void noting_parallel_for(rt_qgemm_body body, void *ctx, int64_t n, int64_t grain)
{
    const rt_qgemm *p = ctx;
    hooked++;
    hooked_packed += p->b_panels != NULL;
    cg_rt_parallel_for(body, ctx, n, grain);
}

/* f compiled with its weight a constant equals f with the weight passed
 * in: on the path the weight was packed for, on another one, and on
 * four threads at once. */
static void check_form(form f, const shape *s)
{
    ir_function *fc, *fa;
    char *with_const = function_text(f, s, true), *with_arg = function_text(f, s, false);
    cg_code *packed = compile(with_const, NULL, &fc), *per_call = compile(with_arg, NULL, &fa);
    free(with_const);
    free(with_arg);
    assert_true(module_has(packed, "qgemm_packed_1"));
    assert_false(module_has(packed, "qgemm_cache"));
    assert_true(module_has(packed, f == LAYER ? "cg_rt_qlayer_packed" : "cg_rt_qproduct"));
    assert_false(module_has(per_call, "qgemm_packed"));
    rt_value *x = random_input(fc);
    ag_shape ws = weight_of(fc)->shape;
    rt_value *w = rt_value_new(AG_I8, &ws);
    memcpy(w->data, weight_of(fc)->data, (size_t)w->numel);
    run want = {per_call, {x, w}, 2, NULL}, got = {packed, {x}, 1, NULL};
    rt_qgemm_parallel_fn saved = rt_qgemm_parallel_hook;
    rt_qgemm_parallel_hook = noting_parallel_for;
    hooked = hooked_packed = 0;
    run_code(&want);
    assert_non_null(want.result);
    assert_int_equal(hooked_packed, 0);
    int per_call_hooked = hooked;
    run_code(&got);
    assert_same_value(got.result, want.result);
    rt_value_free(got.result);
    /* each large product read the packed weight */
    assert_int_equal(hooked, 2 * per_call_hooked);
    assert_int_equal(hooked_packed, per_call_hooked);

    rt_config_set(RT_CFG_QGEMM_PATH, rt_qgemm_chosen() == RT_QGEMM_AVX2 ? "scalar" : "avx2");
    run_code(&got); /* packed for another path: packs per call */
    rt_config_set(RT_CFG_QGEMM_PATH, NULL);
    assert_same_value(got.result, want.result);
    rt_value_free(got.result);
    assert_int_equal(hooked_packed, per_call_hooked);
    rt_qgemm_parallel_hook = saved;
    if (s->m * s->k * s->n >= 4 << 20)
        assert_true(per_call_hooked > 0); /* the large shapes are seen */

    pthread_t th[4];
    run many[4];
    for (int i = 0; i < 4; i++) {
        many[i] = got;
        assert_int_equal(pthread_create(&th[i], NULL, run_code, &many[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_same_value(many[i].result, want.result);
        rt_value_free(many[i].result);
    }
    rt_value_free(want.result);
    rt_value_free(x);
    rt_value_free(w);
    tu_code_free(packed);
    tu_code_free(per_call);
    ir_function_free(fc);
    ir_function_free(fa);
}

static void skip_without_vector_path(void)
{
    if (rt_qgemm_chosen() == RT_QGEMM_SCALAR) {
        printf("[  SKIPPED ] the scalar path reads b as it is: nothing to pack\n");
        skip();
    }
    printf("[     PATH ] weights packed for %s\n", rt_qgemm_path());
}

static void test_constant_weights_of_layers_are_packed(void **state)
{
    (void)state;
    skip_without_vector_path();
    check_form(LAYER, &(shape){.m = 64, .k = 784, .n = 512});
    check_form(LAYER, &(shape){.m = 7, .k = 33, .n = 70});
    check_form(LAYER, &(shape){.m = 1, .k = 1, .n = 1});
}

static void test_constant_weights_of_products_are_packed(void **state)
{
    (void)state;
    skip_without_vector_path();
    check_form(QMATMUL, &(shape){.m = 13, .k = 67, .n = 130});
    check_form(QMATMUL, &(shape){.m = 64, .k = 512, .n = 10});
    check_form(QCONV2D, &(shape){.h = 5, .w = 6, .c = 3, .n = 17});
    check_form(QCONV2D, &(shape){.h = 9, .w = 4, .c = 8, .n = 64});
}

/* Code the JIT compiles for a named CPU does not pack: its module may be
 * freed before the process ends, with no slot to free the block from. */
static void test_code_for_another_cpu_packs_nothing(void **state)
{
    (void)state;
    ir_function *fn;
    shape s = {.m = 8, .k = 40, .n = 70};
    char *src = function_text(QMATMUL, &s, true);
    cg_code *code = compile(src, "x86-64-v3", &fn);
    free(src);
    assert_false(module_has(code, "qgemm_packed"));
    assert_false(module_has(code, "qgemm_cache"));
    assert_false(module_has(code, "cg_rt_qproduct("));
    tu_code_free(code);
    ir_function_free(fn);
}

/* An object file's slot: the first calls, from four threads at once,
 * leave one block there, packed for the path they run; every call then
 * reads that block, and a product reads it. */
typedef struct slot_call {
    void *slot;
    const rt_value *w;
    const void *got;
} slot_call;

static void *call_slot(void *arg)
{
    slot_call *c = arg;
    c->got = cg_rt_packed_weight(NULL, c->slot, c->w);
    return NULL;
}

static void test_objects_pack_at_the_first_call(void **state)
{
    (void)state;
    skip_without_vector_path();
    int64_t m = 9, k = 70, n = 130;
    ag_shape ws = AG_SHAPE(k, n);
    rt_value *w = rt_value_new(AG_I8, &ws);
    int8_t a[9 * 70];
    rng = 99;
    for (int64_t i = 0; i < w->numel; i++)
        ((int8_t *)w->data)[i] = (int8_t)random_i8();
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (int8_t)random_i8();
    void *_Atomic slot = NULL;
    pthread_t th[4];
    slot_call calls[4];
    for (int i = 0; i < 4; i++) {
        calls[i] = (slot_call){(void *)&slot, w, NULL};
        assert_int_equal(pthread_create(&th[i], NULL, call_slot, &calls[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    const void *block = slot;
    assert_non_null(block);
    for (int i = 0; i < 4; i++)
        assert_ptr_equal(calls[i].got, block);
    assert_ptr_equal(cg_rt_packed_weight(NULL, (void *)&slot, w), block);
    assert_ptr_equal(cg_rt_packed_weight(block, NULL, w), block); /* packed when compiling */
    assert_null(cg_rt_packed_weight(NULL, NULL, w));
    int32_t want[9 * 130], got[9 * 130];
    rt_qgemm p;
    assert_true(rt_qgemm_begin(&p, rt_qgemm_chosen(), m, n, k, a, 11, w->data, got));
    assert_true(rt_qgemm_use_packed(&p, block));
    rt_qgemm_run(&p);
    rt_qgemm_end(&p);
    rt_qgemm_s8_scalar(m, n, k, a, 11, w->data, want);
    assert_memory_equal(got, want, sizeof want);
    free((void *)block);
    rt_value_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_objects_pack_at_the_first_call),
        TU_TEST(test_constant_weights_of_layers_are_packed),
        TU_TEST(test_constant_weights_of_products_are_packed),
        TU_TEST(test_code_for_another_cpu_packs_nothing),
    };
    TU_RUN(tests);
}
