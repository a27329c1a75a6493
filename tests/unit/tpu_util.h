/*
 * tpu_util.h - compiling an IR text for the TPU-model in tests, as the
 * pipeline would: parsed, placed, then compiled for the default v5e.
 * Include after test_util.h (cmocka) and the TPU's program.h.
 */
#ifndef TU_TPU_UTIL_H
#define TU_TPU_UTIL_H

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

#endif
