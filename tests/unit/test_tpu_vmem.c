/*
 * test_tpu_vmem.c - VMEM residency on the TPU-model (backend/tpu/vmem.c):
 * a chain's intermediates stay in VMEM, so HBM moves only the parameters
 * and the results; a value too large for what VMEM has left, or whose
 * readers come too late, or that is a result or crosses to the host, goes
 * to HBM; an end of the staging with nothing to move is skipped, latency
 * and all; the listing tags where values live and the profile counts the
 * bytes saved; residency changes costs, never values; `vmem { residency:
 * false }` turns it off.
 */
#include "test_util.h"

#include "program.h"
#include "tpu_util.h"

#include <string.h>

/* Compiles text for the v5e with spec_text over its defaults; placed as
 * the pipeline does, unless the text places its nodes itself. */
static compiled compile_as(const char *text, const char *spec_text, bool place)
{
    compiled c = {.fn = parse_ok(text)};
    c.am = pass_analyses_new(c.fn, &tpu_target()->caps);
    if (place)
        assert_true(pass_run_with(c.fn, "place", c.am, NULL));
    tpu_spec spec;
    char err[256];
    if (!tpu_spec_parse(spec_text, "spec", &spec, err, sizeof err))
        fail_msg("%s", err);
    tgt_diag d;
    memset(&d, 0, sizeof d);
    c.p = tpu_compile(c.fn, c.am, &spec, &d);
    if (!c.p)
        fail_msg("%s", d.msg);
    return c;
}

static compiled compile_spec(const char *text, const char *spec_text)
{
    return compile_as(text, spec_text, true);
}

static const char *const OFF = "vmem { residency: false }";

/* Two products with a fused relu between and a tanh after: %3, %4 and %5
 * are intermediates; %6 is the result. */
static const char *const chain =
    "func @chain(%0: f32[64,256], %1: f32[256,256], %2: f32[256,128]) -> (f32[64,128]) {\n"
    "  %3 = matmul(%0, %1) : f32[64,256]\n"
    "  %4 = relu(%3) : f32[64,256]\n"
    "  %5 = matmul(%4, %2) : f32[64,128]\n"
    "  %6 = tanh(%5) : f32[64,128]\n"
    "  return %6\n}\n";

static int64_t padded(const compiled *c, int id) { return c->p->inst[id].padded_bytes; }

static rt_value *random_f32(const ag_shape *s, unsigned seed)
{
    rt_value *v = rt_value_new(AG_F32, s);
    float *x = v->data;
    for (int64_t i = 0; i < v->numel; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
    return v;
}

/* Runs c's program on the chain's three random arguments. */
static rt_value *run_chain(const compiled *c, tpu_profile *prof)
{
    rt_value *args[3] = {random_f32(&AG_SHAPE(64, 256), 1), random_f32(&AG_SHAPE(256, 256), 2),
                         random_f32(&AG_SHAPE(256, 128), 3)};
    rt_value *out = NULL;
    assert_true(tpu_run(c->p, args, 3, &out, prof, NULL));
    for (int i = 0; i < 3; i++)
        rt_value_free(args[i]);
    return out;
}

static void test_a_chain_stays_in_vmem(void **state)
{
    (void)state;
    compiled c = compile_v5e(chain); /* residency is on by default */
    const tpu_program *p = c.p;
    for (int id = 3; id <= 5; id++) {
        assert_true(p->inst[id].vmem);
        assert_int_equal(p->inst[id].hbm_addr, -1); /* no HBM buffer */
    }
    assert_false(p->inst[6].vmem); /* the result */
    assert_true(p->inst[6].hbm_addr >= 0);
    assert_int_equal(p->n_vmem, 3);
    /* %3 (64 KiB) and %4 (64 KiB) are live together at the loop, %5 takes
     * %3's place */
    assert_int_equal(p->inst[3].vmem_addr, 0);
    assert_int_equal(p->inst[4].vmem_addr, 64 << 10);
    assert_int_equal(p->inst[5].vmem_addr, 0);
    assert_int_equal(p->vmem_bytes, 128 << 10);
    tpu_profile prof;
    rt_value *out = run_chain(&c, &prof);
    /* HBM moves the parameters in and the result out, nothing else */
    assert_int_equal(prof.hbm_bytes, padded(&c, 0) + padded(&c, 1) + padded(&c, 2) + padded(&c, 6));
    /* each intermediate is written once and read once in VMEM */
    assert_int_equal(prof.hbm_saved, 2 * (padded(&c, 3) + padded(&c, 4) + padded(&c, 5)));
    rt_value_free(out);
    compiled_free(&c);
}

/* The relu reads only %3, in VMEM, and writes %4 there: nothing to stage;
 * the tanh has nothing to load: it waits HBM's latency once, to store. */
static void test_ends_with_nothing_to_move_are_skipped(void **state)
{
    (void)state;
    compiled c = compile_spec(chain, "");
    const tpu_inst *relu = &c.p->inst[4], *tanh_ = &c.p->inst[6];
    assert_int_equal(relu->blocks, 0);
    assert_int_equal(relu->hbm_bytes, 0);
    assert_int_equal(relu->cycles, relu->work);
    assert_true(tanh_->no_load && !tanh_->no_store);
    assert_int_equal(tanh_->load_first, 0);
    assert_int_equal(tanh_->cycles, 752 + tanh_->busy + tanh_->store_last);
    rt_value *args[3] = {random_f32(&AG_SHAPE(64, 256), 1), random_f32(&AG_SHAPE(256, 256), 2),
                         random_f32(&AG_SHAPE(256, 128), 3)};
    rt_value *out = NULL;
    tpu_profile prof;
    tpu_timeline tl;
    assert_true(tpu_run(c.p, args, 3, &out, &prof, &tl));
    /* the HBM DMA engine moves only what is staged */
    int64_t staged = 0;
    for (int id = 0; id < c.p->n_ids; id++)
        staged += c.p->inst[id].load_first + c.p->inst[id].dma_middle + c.p->inst[id].store_last;
    assert_int_equal(prof.busy[TPU_UNIT_HBM], staged);
    /* and waits no latency for them: the relu starts as the first product's
     * work ends, the tanh as the second's does */
    int64_t end[8] = {0}, start[8] = {0};
    for (int i = 0; i < tl.n; i++) {
        const tpu_event *e = &tl.ev[i];
        if (e->unit == TPU_UNIT_MXU || e->unit == TPU_UNIT_VPU) {
            start[e->value] = e->start;
            end[e->value] = e->start + e->cycles;
        }
    }
    assert_int_equal(start[4], end[3]);
    assert_int_equal(start[6], end[5]);
    tpu_timeline_free(&tl);
    for (int i = 0; i < 3; i++)
        rt_value_free(args[i]);
    rt_value_free(out);
    compiled_free(&c);
}

/* Residency changes what the call costs, never what it computes. */
static void test_residency_changes_costs_not_values(void **state)
{
    (void)state;
    compiled on = compile_spec(chain, ""), off = compile_spec(chain, OFF);
    assert_int_equal(off.p->n_vmem, 0);
    for (int id = 0; id < off.p->n_ids; id++)
        assert_false(off.p->inst[id].vmem);
    tpu_profile pon, poff;
    rt_value *a = run_chain(&on, &pon), *b = run_chain(&off, &poff);
    assert_int_equal(a->numel, b->numel);
    assert_memory_equal(a->data, b->data, (size_t)a->numel * sizeof(float));
    assert_int_equal(poff.hbm_saved, 0);
    assert_int_equal(pon.hbm_bytes + pon.hbm_saved, poff.hbm_bytes);
    assert_true(pon.device_seconds < poff.device_seconds);
    assert_true(pon.roofline_seconds <= poff.roofline_seconds);
    assert_int_equal(pon.macs, poff.macs);
    /* and the HBM each needs: the intermediates have no buffer there */
    assert_true(on.p->hbm_bytes < off.p->hbm_bytes);
    rt_value_free(a);
    rt_value_free(b);
    compiled_free(&on);
    compiled_free(&off);
}

/* A 1 MiB product does not fit in the 768 KiB that a 1 MiB VMEM leaves
 * beside four 64 KiB staging blocks: it spills to HBM; the 256 KiB one
 * after it stays. With the default VMEM both stay. */
static const char *const wide =
    "func @wide(%0: f32[512,128], %1: f32[128,512], %2: f32[512,128]) -> (f32[512,128]) {\n"
    "  %3 = matmul(%0, %1) : f32[512,512]\n"
    "  %4 = matmul(%3, %2) : f32[512,128]\n"
    "  %5 = tanh(%4) : f32[512,128]\n"
    "  return %5\n}\n";

static void test_a_value_too_large_spills(void **state)
{
    (void)state;
    compiled small = compile_spec(wide, "vmem { capacity_bytes: 1048576 block_bytes: 65536 }");
    assert_false(small.p->inst[3].vmem);
    assert_true(small.p->inst[3].hbm_addr >= 0);
    assert_true(small.p->inst[4].vmem);
    assert_int_equal(small.p->vmem_bytes, 256 << 10);
    /* it is stored, and the next product loads it */
    assert_int_equal(small.p->inst[3].vmem_written, 0);
    assert_int_equal(small.p->inst[4].vmem_read, 0);
    assert_true(small.p->inst[3].store_last > 0);
    compiled_free(&small);
    /* exactly the room it needs: it fits (1 MiB + 4 x 64 KiB) */
    compiled exact = compile_spec(wide, "vmem { capacity_bytes: 1310720 block_bytes: 65536 }");
    assert_true(exact.p->inst[3].vmem);
    compiled_free(&exact);
    compiled big = compile_spec(wide, "");
    assert_true(big.p->inst[3].vmem && big.p->inst[4].vmem);
    compiled_free(&big);
}

/* %3 is read by the next instruction and by the one after it: with a
 * window of 1 its last reader comes too late. */
static const char *const reread =
    "func @reread(%0: f32[64,128], %1: f32[128,128]) -> (f32[64,128]) {\n"
    "  %2 = matmul(%0, %1) : f32[64,128]\n"
    "  %3 = matmul(%2, %1) : f32[64,128]\n"
    "  %4 = add(%2, %3) : f32[64,128]\n"
    "  return %4\n}\n";

static void test_readers_must_follow_within_the_window(void **state)
{
    (void)state;
    compiled near = compile_spec(reread, "vmem { residency_window: 2 }");
    assert_true(near.p->inst[2].vmem);
    assert_true(near.p->inst[3].vmem);
    compiled_free(&near);
    compiled far = compile_spec(reread, "vmem { residency_window: 1 }");
    assert_false(far.p->inst[2].vmem); /* read 2 instructions later */
    assert_true(far.p->inst[3].vmem);
    compiled_free(&far);
}

/* A result goes to HBM even when an instruction reads it next, and so
 * do a value a view of which is a result, a value that crosses to the
 * host, and the values going into a region or made there. */
static void test_results_and_host_values_go_to_hbm(void **state)
{
    (void)state;
    compiled c = compile_spec(
        "func @two(%0: f32[64,128], %1: f32[128,128]) -> (f32[64,128], f32[64,128]) {\n"
        "  %2 = matmul(%0, %1) : f32[64,128]\n"
        "  %3 = tanh(%2) : f32[64,128]\n"
        "  return %2, %3\n}\n", "");
    assert_false(c.p->inst[2].vmem);
    assert_true(c.p->inst[2].hbm_addr >= 0);
    assert_int_equal(c.p->n_vmem, 0);
    compiled_free(&c);
    c = compile_spec("func @view(%0: f32[64,128], %1: f32[128,128]) -> (f32[8192]) {\n"
                     "  %2 = matmul(%0, %1) : f32[64,128]\n"
                     "  %3 = reshape(%2) {shape = [8192]} : f32[8192]\n"
                     "  return %3\n}\n", "");
    assert_false(c.p->inst[2].vmem);
    compiled_free(&c);
    /* %2 crosses to the host (soft placement's transfer), and the tanh
     * reads it next */
    c = compile_as("func @out(%0: f32[64,128], %1: f32[128,128]) -> (f32[64,128], f32[64,128]) {\n"
                   "  %2 = matmul(%0, %1) : f32[64,128] device(\"tpu-model\")\n"
                   "  %3 = to_host(%2) : f32[64,128]\n"
                   "  %4 = tanh(%2) : f32[64,128] device(\"tpu-model\")\n"
                   "  return %3, %4\n}\n", "", false);
    assert_true(c.p->inst[3].kind == TPU_TRANSFER);
    assert_false(c.p->inst[2].vmem);
    compiled_free(&c);
    /* %3 goes into a cond's region, whose values go through HBM too */
    c = compile_spec("func @r(%0: f32[64,128], %1: f32[128,128], %2: bool[]) -> (f32[64,128]) {\n"
                     "  %3 = matmul(%0, %1) : f32[64,128]\n"
                     "  %4 = cond(%2, %3) : (f32[64,128]) {\n"
                     "  ^then(%5: f32[64,128]):\n"
                     "    %6 = transpose(%5) {perm = [1,0]} : f32[128,64]\n"
                     "    %7 = transpose(%6) {perm = [1,0]} : f32[64,128]\n"
                     "    yield %7\n"
                     "  ^else(%8: f32[64,128]):\n"
                     "    yield %8\n"
                     "  }\n"
                     "  %9 = get(%4) {index = 0} : f32[64,128]\n"
                     "  return %9\n}\n", "");
    assert_int_equal(c.p->n_vmem, 0);
    assert_true(c.p->inst[3].hbm_addr >= 0 && c.p->inst[6].hbm_addr >= 0);
    compiled_free(&c);
}

static char *listing(const compiled *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_program_print(c->p, f);
    fclose(f);
    return text;
}

static void test_listing_and_profile_say_where_values_live(void **state)
{
    (void)state;
    compiled c = compile_spec(chain, "");
    char *text = listing(&c);
    assert_non_null(strstr(text, "; vmem: 3 values kept between instructions, 128.0 KiB at the "
                                 "peak\n"));
    assert_non_null(strstr(text, "mxu.matmul  %3 = matmul(%0@0x0, %1@0x10000) f32[64,256] -> "
                                 "vmem[0x0]"));
    assert_non_null(strstr(text, "vpu.loop    %4 relu (%3@vmem[0x0]) f32[64,256] -> "
                                 "%4@vmem[0x10000]  16 vregs  16 cycles  hbm saved 131072 B\n"));
    assert_non_null(strstr(text, "vpu.loop    %6 tanh (%5@vmem[0x0]) f32[64,128] -> %6@0x"));
    free(text);
    tpu_profile prof;
    rt_value *out = run_chain(&c, &prof);
    FILE *f;
    char *ptext = NULL;
    size_t len = 0;
    f = open_memstream(&ptext, &len);
    tpu_profile_print(&prof, "chain", f);
    fclose(f);
    char want[128];
    snprintf(want, sizeof want, "; hbm %lld bytes (%lld saved by VMEM residency)\n",
             (long long)prof.hbm_bytes, (long long)prof.hbm_saved);
    assert_non_null(strstr(ptext, want));
    free(ptext);
    rt_value_free(out);
    compiled_free(&c);
    compiled off = compile_spec(chain, OFF);
    text = listing(&off);
    assert_null(strstr(text, "vmem["));
    assert_null(strstr(text, "; vmem:"));
    assert_null(strstr(text, "hbm saved"));
    free(text);
    compiled_free(&off);
}

static void test_the_switch_and_window_are_spec_fields(void **state)
{
    (void)state;
    tpu_spec s;
    char err[256];
    tpu_spec_default(&s);
    assert_true(s.vmem.residency);
    assert_int_equal(s.vmem.residency_window, 16);
    assert_true(tpu_spec_parse("vmem { residency: false residency_window: 3 }", "spec", &s, err,
                               sizeof err));
    assert_false(s.vmem.residency);
    assert_int_equal(s.vmem.residency_window, 3);
    assert_false(tpu_spec_parse("vmem { residency_window: 0 }", "spec", &s, err, sizeof err));
    assert_non_null(strstr(err, "field 'residency_window' of VmemSpec must be in [1, "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_a_chain_stays_in_vmem),
        TU_TEST(test_ends_with_nothing_to_move_are_skipped),
        TU_TEST(test_residency_changes_costs_not_values),
        TU_TEST(test_a_value_too_large_spills),
        TU_TEST(test_readers_must_follow_within_the_window),
        TU_TEST(test_results_and_host_values_go_to_hbm),
        TU_TEST(test_listing_and_profile_say_where_values_live),
        TU_TEST(test_the_switch_and_window_are_spec_fields),
    };
    TU_RUN(tests);
}
