/*
 * tpu_util.h - compiling an IR text for the TPU-model in tests, as the
 * pipeline would: parsed, placed, then compiled for the default v5e or
 * for a spec's text; and the inputs the slice tests feed them.
 * Include after test_util.h (cmocka) and the TPU's program.h.
 */
#ifndef TU_TPU_UTIL_H
#define TU_TPU_UTIL_H

#include <string.h>

static const tgt_target *tpu_target(void) { return tgt_find("tpu-model"); }

static ir_function *parse_ok(const char *text)
{
    char err[512];
    ir_function *fn = ir_parse(text, "t.ir", err, sizeof err);
    if (!fn)
        fail_msg("%s", err);
    return fn;
}

typedef struct compiled {
    ir_function *fn;
    pass_analyses *am;
    tpu_program *p;
} compiled;

static compiled compile_v5e(const char *text)
{
    compiled c = {.fn = parse_ok(text)};
    c.am = pass_analyses_new(c.fn, &tpu_target()->caps);
    assert_true(pass_run_with(c.fn, "place", c.am, NULL)); /* as the pipeline does */
    tpu_spec spec;
    tpu_spec_default(&spec);
    tgt_diag d;
    c.p = tpu_compile(c.fn, c.am, &spec, &d);
    if (!c.p)
        fail_msg("%s", d.msg);
    return c;
}

static void compiled_free(compiled *c)
{
    tpu_program_free(c->p);
    pass_analyses_free(c->am);
    ir_function_free(c->fn);
}

/* text compiled for spec_text (fields over v5e's defaults, as a device
 * spec file gives them); b.p NULL with the reason in b.d when it does not
 * compile. */
typedef struct build {
    ir_function *fn;
    pass_analyses *am;
    tpu_program *p;
    tgt_diag d;
} build;

static inline build compile_for(const char *text, const char *spec_text)
{
    build b = {.fn = parse_ok(text)};
    b.am = pass_analyses_new(b.fn, &tpu_target()->caps);
    assert_true(pass_run_with(b.fn, "place", b.am, NULL));
    tpu_spec spec;
    char err[256];
    if (!tpu_spec_parse(spec_text, "spec", &spec, err, sizeof err))
        fail_msg("%s", err);
    memset(&b.d, 0, sizeof b.d);
    b.p = tpu_compile(b.fn, b.am, &spec, &b.d);
    return b;
}

static inline build compile_ok(const char *text, const char *spec_text)
{
    build b = compile_for(text, spec_text);
    if (!b.p)
        fail_msg("%s: %s", spec_text, b.d.msg);
    return b;
}

static inline void build_free(build *b)
{
    tpu_program_free(b->p);
    pass_analyses_free(b->am);
    ir_function_free(b->fn);
}

/* An f32 tensor of shape s, pseudo-random in [-1, 1) from seed. */
static inline rt_value *tpu_random_f32(const ag_shape *s, unsigned seed)
{
    rt_value *v = rt_value_new(AG_F32, s);
    float *x = v->data;
    for (int64_t i = 0; i < v->numel; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
    return v;
}

#endif
