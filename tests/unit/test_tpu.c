/*
 * test_tpu.c - the TPU-model target: its device spec (parsing, every
 * error located), tiling and padding, the compiler's costs (the systolic
 * formula), the simulator's numerics and timing, and the target through
 * the function cache (placement errors, shapes known only at the call,
 * HBM capacity).
 */
#include "staged_util.h"

#include "files.h"
#include "numerics.h"
#include "pipeline.h"
#include "program.h"
#include "tpu_util.h"

#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the spec */

static void expect_spec_error(const char *text, const char *want)
{
    tpu_spec s;
    char err[512];
    assert_false(tpu_spec_parse(text, "spec.txt", &s, err, sizeof err));
    if (!strstr(err, want))
        fail_msg("expected \"%s\" in \"%s\"", want, err);
}

static void test_spec_defaults_and_round_trip(void **state)
{
    (void)state;
    tpu_spec d, back;
    tpu_spec_default(&d);
    assert_string_equal(d.name, "v5e");
    assert_int_equal(d.mxu.count, 4);
    assert_int_equal(d.hbm.capacity_bytes, 16LL << 30);
    /* 4 MXUs of 128x128 multiply-adds at the clock: 197 TFLOP/s */
    assert_true(fabs(2 * tpu_spec_macs_per_cycle(&d) * d.clock_hz - 197e12) < 1e6);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_spec_print(&d, f);
    fclose(f);
    char err[256];
    assert_true(tpu_spec_parse(text, "printed", &back, err, sizeof err));
    assert_memory_equal(&d, &back, sizeof d);
    free(text);
}

/* The documented spec file (backend/tpu/v5e.textproto) is the defaults. */
static void test_spec_file_is_the_defaults(void **state)
{
    (void)state;
    tpu_spec d, f;
    char err[512];
    tpu_spec_default(&d);
    assert_true(tpu_spec_load(TEST_TPU_SPEC, &f, err, sizeof err));
    assert_memory_equal(&d, &f, sizeof d);
}

static void test_spec_fields(void **state)
{
    (void)state;
    tpu_spec s;
    char err[256];
    assert_true(tpu_spec_parse("# a smaller chip\n"
                               "name: \"mini\"\n"
                               "mxu { count: 1 rows: 64 cols: 64 }\n"
                               "hbm: { capacity_bytes: 1048576, bandwidth: 1e11 }\n"
                               "precision: HIGHEST\n",
                               "mini.txt", &s, err, sizeof err));
    assert_string_equal(s.name, "mini");
    assert_int_equal(s.mxu.rows, 64);
    assert_int_equal(s.hbm.capacity_bytes, 1 << 20);
    assert_true(s.hbm.bandwidth == 1e11);
    assert_true(s.hbm.latency_ns == 500); /* fields not given keep the defaults */
    assert_int_equal(s.precision, TPU_PRECISION_HIGHEST);
}

static void test_spec_errors_are_located(void **state)
{
    (void)state;
    expect_spec_error("clock_hz: 1e9\nclok_hz: 2", "spec.txt:2:1: unknown field 'clok_hz' in DeviceSpec");
    expect_spec_error("mxu { rowz: 3 }", "spec.txt:1:7: unknown field 'rowz' in MxuSpec");
    expect_spec_error("chips: two", "spec.txt:1:8: field 'chips' of DeviceSpec expects an integer, found 'two'");
    expect_spec_error("precision: BEST", "bad value 'BEST' for field 'precision' of DeviceSpec (one of DEFAULT, HIGH, HIGHEST)");
    expect_spec_error("mxu { rows: 0 }", "spec.txt:1:13: field 'rows' of MxuSpec must be in [8, 4096], got 0");
    expect_spec_error("name: \"a\"\nname: \"b\"", "spec.txt:2:1: field 'name' of DeviceSpec is given twice");
    expect_spec_error("hbm { bandwidth: 1e9", "expected '}' to close MemorySpec");
    expect_spec_error("name: \"open", "spec.txt:1:7: unterminated string");
    expect_spec_error("chips 1", "spec.txt:1:7: expected ':' after the field name, found '1'");
    /* a slice holds 1 to 256 chips (a pod), as its mesh says */
    expect_spec_error("chips: 0", "spec.txt:1:8: field 'chips' of DeviceSpec must be in [1, 256], got 0");
    expect_spec_error("chips: -5", "spec.txt:1:8: field 'chips' of DeviceSpec must be in [1, 256], got -5");
    expect_spec_error("chips: 2", "spec.txt: mesh 1x1 holds 1 chips, but chips is 2");
}

static void test_spec_file_errors_name_the_file(void **state)
{
    (void)state;
    tpu_spec s;
    char err[512];
    assert_false(tpu_spec_load("/nonexistent/v5e.txt", &s, err, sizeof err));
    assert_non_null(strstr(err, "cannot read the device spec '/nonexistent/v5e.txt'"));
    char path[] = "/tmp/agc-spec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "vpu { lanes: -4 }\n", 18), 18);
    close(fd);
    assert_false(tpu_spec_load(path, &s, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, ":1:14: field 'lanes' of VpuSpec must be in"));
    unlink(path);
}

/* ----------------------------------------------------- tiles and costs */

static void test_tiles_pad_the_last_two_dims(void **state)
{
    (void)state;
    ir_type t = {.dtype = AG_F32, .shape = AG_SHAPE(3, 5)};
    assert_int_equal(tpu_padded_bytes(&t), 8 * 128 * 4); /* one (8,128) tile */
    t.dtype = AG_BF16;
    assert_int_equal(tpu_padded_bytes(&t), 16 * 128 * 2); /* one (16,128) tile */
    t = (ir_type){.dtype = AG_F32, .shape = AG_SHAPE(2, 10, 130)};
    assert_int_equal(tpu_padded_bytes(&t), 2 * 16 * 256 * 4);
    t = (ir_type){.dtype = AG_I32, .shape = AG_SCALAR};
    assert_int_equal(tpu_padded_bytes(&t), 8 * 128 * 4); /* a scalar fills a tile */
    t = (ir_type){.dtype = AG_F32, .shape = AG_SHAPE(-1, 4)};
    assert_int_equal(tpu_padded_bytes(&t), -1);
}

static const char *const layer =
    "func @layer(%0: f32[8,256], %1: f32[256,128], %2: f32[128]) -> (f32[8,128]) {\n"
    "  %3 = matmul(%0, %1) : f32[8,128]\n"
    "  %4 = add(%3, %2) : f32[8,128]\n"
    "  %5 = relu(%4) : f32[8,128]\n"
    "  return %5\n}\n";

static void test_matmul_costs_the_systolic_formula(void **state)
{
    (void)state;
    compiled c = compile_v5e(layer);
    tpu_program *p = c.p;
    const tpu_inst *mm = &p->inst[3];
    assert_int_equal(mm->kind, TPU_MXU);
    assert_int_equal(mm->tiles, 2); /* K = 256: two 128x128 weight tiles */
    /* each tile streams 8 rows: 2*128 + 128 + 8 - 2 cycles; 2 tiles on 4 MXUs */
    assert_int_equal(mm->work, 2 * 128 + 128 + 8 - 2);
    /* %3 stays in VMEM for the loop that reads it next (vmem.c): the
     * product loads %0 and %1 and stores nothing */
    assert_true(mm->vmem);
    assert_int_equal(mm->hbm_bytes, 8192 + 131072);
    assert_int_equal(mm->vmem_written, 4096);
    /* staged in one VMEM block (136 KiB <= 256 KiB): the load of %0 and %1,
     * 139264 B at 819 GB/s = 255.6 cycles, after HBM's latency, 500 ns =
     * 751.5 cycles; no store, so no latency after. Nothing overlaps the
     * work: 752 + 256 + 390 cycles in all. */
    assert_int_equal(mm->blocks, 1);
    assert_int_equal(mm->load_first, 256);
    assert_int_equal(mm->store_last, 0);
    assert_int_equal(mm->dma_middle, 0);
    assert_int_equal(mm->busy, 390);
    assert_int_equal(mm->cycles, 752 + 256 + 390);
    /* %0 over the host link: 2 us + 8192 B / 32 GB/s = 2.256 us = 3390.7 cycles */
    assert_int_equal(p->params[0].cycles, 3391);
    /* the loop add+relu: 1 vreg each, one cycle per vreg; it reads %3 in
     * VMEM, loads %2 (4096 B: 7.5 cycles) and stores %5 (4096 B: 7.5) */
    assert_int_equal(p->inst[4].work, 2);
    assert_int_equal(p->inst[4].cycles, 2 * 752 + 8 + 2 + 8);
    assert_int_equal(mm->macs, 8 * 256 * 128);
    assert_int_equal(p->inst[4].kind, TPU_VPU_LOOP); /* add and relu, fused */
    assert_true(p->inst[4].loop_head);
    assert_int_equal(p->inst[5].loop, p->inst[4].loop);
    /* HBM: %0, %1 and %2 from the start; %3 is in VMEM; %4 stays in
     * vregs; %5 takes %0's place, dead by then. The peak: 8 + 128 + 4 KiB. */
    assert_int_equal(p->inst[0].hbm_addr, 0);
    assert_int_equal(p->inst[1].hbm_addr, 0x2000);
    assert_int_equal(p->inst[2].hbm_addr, 0x22000);
    assert_int_equal(p->inst[3].hbm_addr, -1);
    assert_int_equal(p->inst[4].hbm_addr, -1);
    assert_int_equal(p->inst[5].hbm_addr, 0);
    assert_int_equal(p->hbm_bytes, 0x23000);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_program_print(p, f);
    fclose(f);
    assert_non_null(strstr(text, "; @layer on tpu-model (v5e: 4 MXUs of 128x128"));
    assert_non_null(strstr(text, "dma.h2d     %0 f32[8,256] -> hbm[0x0]"));
    assert_non_null(strstr(text, "mxu.matmul  %3 = matmul(%0@0x0, %1@0x2000) f32[8,128] -> "
                                 "vmem[0x0]  2 tiles x 1 pass  390 cycles  vmem 1 x 136.0 KiB  "
                                 "1398 cycles in all  hbm saved 4096 B"));
    assert_non_null(strstr(text, "vpu.loop    %4 add, %5 relu (%3@vmem[0x0], %2@0x22000) "
                                 "f32[8,128] -> %5@0x0  2 vregs  2 cycles  vmem 1 x 8.0 KiB  "
                                 "1522 cycles in all  hbm saved 4096 B"));
    assert_non_null(strstr(text, "dma.d2h     %5 f32[8,128]"));
    free(text);
    compiled_free(&c);
}

static rt_value *random_f32(const ag_shape *s, unsigned seed)
{
    rt_value *v = rt_value_new(AG_F32, s);
    float *x = v->data;
    for (int64_t i = 0; i < v->numel; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f + 1e-3f * (float)i;
    }
    return v;
}

static void test_simulated_numerics_and_time(void **state)
{
    (void)state;
    compiled c = compile_v5e(layer);
    const tpu_program *p = c.p;
    rt_value *args[3] = {random_f32(&AG_SHAPE(8, 256), 1), random_f32(&AG_SHAPE(256, 128), 2),
                         random_f32(&AG_SHAPE(128), 3)};
    rt_value *out = NULL;
    tpu_profile prof;
    assert_true(tpu_run(p, args, 3, &out, &prof, NULL));
    /* the MXU's bits: bf16 operands, f32 sums in chunks of 128 */
    float want[8 * 128];
    tpu_mxu_matmul_f32(args[0]->data, args[1]->data, want, 8, 256, 128, TPU_PRECISION_DEFAULT);
    const float *bias = args[2]->data, *got = out->data;
    bool differs_from_f32 = false;
    for (int i = 0; i < 8 * 128; i++) {
        float v = want[i] + bias[i % 128];
        assert_true(got[i] == (v > 0 ? v : 0));
    }
    rt_value *ref = NULL;
    ir_plan *plan = ir_plan_new(c.fn);
    assert_true(ir_execute(plan, args, 3, &ref));
    for (int i = 0; i < 8 * 128; i++)
        differs_from_f32 |= ((float *)ref->data)[i] != got[i];
    assert_true(differs_from_f32); /* bf16 rounding shows */
    /* time: transfers in, the product, the loop, the result out, in order */
    assert_int_equal(prof.macs, 8 * 256 * 128);
    assert_true(prof.busy[TPU_UNIT_MXU] == p->inst[3].busy);
    assert_true(prof.busy[TPU_UNIT_VPU] == p->inst[4].busy);
    /* staging: each instruction's blocks on the HBM DMA engine */
    assert_true(prof.busy[TPU_UNIT_HBM] == p->inst[3].load_first + p->inst[3].store_last +
                                               p->inst[4].load_first + p->inst[4].store_last);
    /* no more than everything one after the other, HBM's latency included
     * (before each staged load and store) */
    int64_t serial = prof.busy[TPU_UNIT_H2D] + prof.busy[TPU_UNIT_MXU] +
                     prof.busy[TPU_UNIT_VPU] + prof.busy[TPU_UNIT_D2H] +
                     prof.busy[TPU_UNIT_HBM] + 4 * 752;
    assert_true(prof.cycles <= serial && prof.cycles >= prof.busy[TPU_UNIT_H2D]);
    assert_true(prof.host_bytes == p->params[0].bytes + p->params[1].bytes +
                                       p->params[2].bytes + p->results[0].bytes);
    assert_true(prof.mxu_utilization > 0 && prof.mxu_utilization < 1);
    assert_true(prof.seconds > prof.roofline_seconds);
    rt_value_free(ref);
    rt_value_free(out);
    for (int i = 0; i < 3; i++)
        rt_value_free(args[i]);
    ir_plan_free(plan);
    compiled_free(&c);
}

/* The device's op table (ops_tpu.c) has a row for every op (its build
 * counts them); what it supports and fuses is read from it: the vector
 * unit's loops take exactly the elementwise ops, and host work is not the
 * device's. */
static void test_tpu_op_table(void **state)
{
    (void)state;
    const pass_caps *caps = &tpu_target()->caps;
    for (int op = 0; op < RT_OP_COUNT; op++) {
        if (tpu_ops[op] == TPU_OP_UNLISTED)
            fail_msg("'%s' has no row in backend/tpu/ops_tpu.c", rt_ops[op].name);
        bool elementwise = rt_ops[op].flags & RT_F_ELEMENTWISE;
        if ((tpu_ops[op] == TPU_OP_VPU) != elementwise)
            fail_msg("'%s': TPU_OP_VPU in ops_tpu.c is for the elementwise ops", rt_ops[op].name);
        assert_int_equal(caps->fuses(op), elementwise);
        assert_int_equal(caps->supports(op, AG_F32), tpu_ops[op] != TPU_OP_HOST);
    }
    assert_false(caps->supports(RT_OP_PRINT, AG_F32));
    assert_false(caps->supports(RT_OP_TA_NEW, AG_F32));
    assert_true(caps->supports(RT_OP_MATMUL, AG_BF16));
    assert_false(caps->supports(RT_OP_ADD, AG_F64)); /* no f64, as on a v5e */
    assert_false(caps->supports(RT_OP_COUNT, AG_F32));
}

/* A node another device target placed is not the tpu-model's to run. */
static void test_nodes_of_other_devices_are_errors(void **state)
{
    (void)state;
    ir_function *fn = parse_ok("func @f(%0: f32[4]) -> (f32[4]) {\n"
                               "  %1 = to_device(%0) : f32[4] device(\"elsewhere\")\n"
                               "  %2 = exp(%1) : f32[4] loc(\"e.c\":3) device(\"elsewhere\")\n"
                               "  %3 = to_host(%2) : f32[4]\n"
                               "  return %3\n}\n");
    pass_analyses *am = pass_analyses_new(fn, &tpu_target()->caps);
    tpu_spec spec;
    tpu_spec_default(&spec);
    tgt_diag d;
    memset(&d, 0, sizeof d);
    assert_null(tpu_compile(fn, am, &spec, &d));
    assert_string_equal(d.msg, "'exp' is placed on the device 'elsewhere': the tpu-model runs "
                               "only its own nodes and the host's");
    assert_int_equal(d.loc.line, 3);
    pass_analyses_free(am);
    ir_function_free(fn);
}

static void test_hbm_capacity_names_the_tensors(void **state)
{
    (void)state;
    ir_function *fn = parse_ok(layer);
    pass_analyses *am = pass_analyses_new(fn, &tpu_target()->caps);
    assert_true(pass_run_with(fn, "place", am, NULL));
    tpu_spec spec;
    char err[256];
    /* without VMEM residency, which would keep %3 out of HBM */
    assert_true(tpu_spec_parse("hbm { capacity_bytes: 65536 } vmem { residency: false }", "small",
                               &spec, err, sizeof err));
    tgt_diag d;
    memset(&d, 0, sizeof d);
    assert_null(tpu_compile(fn, am, &spec, &d));
    /* the peak is at the matmul: its operands and its result, largest first */
    assert_string_equal(d.msg, "the program needs 144.0 KiB of HBM at its peak, and the device "
                               "has 64.0 KiB; live there: %1 (parameter f32[256,128], 128.0 KiB), "
                               "%0 (parameter f32[8,256], 8.0 KiB), %2 (parameter f32[128], "
                               "4.0 KiB), %3 (matmul f32[8,128], 4.0 KiB)");
    pass_analyses_free(am);
    ir_function_free(fn);
}

/* Four 4 MiB values in a chain: two are live at a time, so the program
 * fits in 8 MiB, and each value takes the place of the one before last
 * (with VMEM residency off: it would keep %1 and %2 out of HBM). */
static const char *const transposes =
    "func @turn(%0: f32[1024,1024]) -> (f32[1024,1024]) {\n"
    "  %1 = transpose(%0) {perm = [1,0]} : f32[1024,1024]\n"
    "  %2 = transpose(%1) {perm = [1,0]} : f32[1024,1024]\n"
    "  %3 = transpose(%2) {perm = [1,0]} : f32[1024,1024]\n"
    "  return %3\n}\n";

static tpu_program *compile_with_hbm(const char *text, const char *spec_text, ir_function **fn,
                                     pass_analyses **am, tgt_diag *d)
{
    *fn = parse_ok(text);
    *am = pass_analyses_new(*fn, &tpu_target()->caps);
    assert_true(pass_run_with(*fn, "place", *am, NULL));
    tpu_spec spec;
    char err[256];
    assert_true(tpu_spec_parse(spec_text, "spec", &spec, err, sizeof err));
    memset(d, 0, sizeof *d);
    return tpu_compile(*fn, *am, &spec, d);
}

static void test_hbm_buffers_are_reused(void **state)
{
    (void)state;
    ir_function *fn;
    pass_analyses *am;
    tgt_diag d;
    tpu_program *p = compile_with_hbm(
        transposes, "hbm { capacity_bytes: 8388608 } vmem { residency: false }", &fn, &am, &d);
    if (!p)
        fail_msg("%s", d.msg);
    assert_int_equal(p->hbm_bytes, 8 << 20);
    assert_int_equal(p->inst[0].hbm_addr, 0);
    assert_int_equal(p->inst[1].hbm_addr, 4 << 20);
    assert_int_equal(p->inst[2].hbm_addr, 0); /* %0 is dead once %1 is made */
    assert_int_equal(p->inst[3].hbm_addr, 4 << 20);
    tpu_program_free(p);
    pass_analyses_free(am);
    ir_function_free(fn);
    /* one byte less, and the peak is named where it is reached */
    assert_null(compile_with_hbm(
        transposes, "hbm { capacity_bytes: 8388607 } vmem { residency: false }", &fn, &am, &d));
    assert_non_null(strstr(d.msg, "the program needs 8.0 MiB of HBM at its peak"));
    assert_non_null(strstr(d.msg, "live there: %0 (parameter f32[1024,1024], 4.0 MiB), "
                                  "%1 (transpose f32[1024,1024], 4.0 MiB)"));
    pass_analyses_free(am);
    ir_function_free(fn);
}

/* A vpu loop larger than a VMEM block streams: the blocks between the
 * first and the last move while the VPU works. */
static void test_vmem_blocks_overlap_the_work(void **state)
{
    (void)state;
    ir_function *fn;
    pass_analyses *am;
    tgt_diag d;
    tpu_program *p = compile_with_hbm("func @f(%0: f32[1024,1024]) -> (f32[1024,1024]) {\n"
                                      "  %1 = tanh(%0) : f32[1024,1024]\n"
                                      "  return %1\n}\n",
                                      "vmem { block_bytes: 1048576 }", &fn, &am, &d);
    if (!p)
        fail_msg("%s", d.msg);
    const tpu_inst *x = &p->inst[1];
    /* 4 MiB in, 4 MiB out: 8 blocks of 1 MiB, each 512 KiB in and out;
     * 512 KiB at 819 GB/s is 962.2 cycles; 8 MiB is 15394.4 */
    assert_int_equal(x->blocks, 8);
    assert_int_equal(x->block_bytes, 1 << 20);
    assert_int_equal(x->load_first, 963);
    assert_int_equal(x->store_last, 963);
    assert_int_equal(x->dma_middle, 15395 - 2 * 963);
    /* 1024 vregs of tanh at 4 cycles: the VPU's 4096 cycles are less than
     * the middle blocks' DMA, which the unit waits for */
    assert_int_equal(x->work, 4096);
    assert_int_equal(x->busy, x->dma_middle);
    assert_int_equal(x->cycles, 2 * 752 + 963 + x->busy + 963);
    tpu_program_free(p);
    pass_analyses_free(am);
    ir_function_free(fn);
    /* a block must leave VMEM room for two in and two out */
    tpu_spec spec;
    char err[256];
    assert_false(tpu_spec_parse("vmem { capacity_bytes: 4096 block_bytes: 2048 }", "spec", &spec,
                                err, sizeof err));
    assert_non_null(strstr(err, "spec: vmem.block_bytes (2048) must be at most a quarter of "
                                "vmem.capacity_bytes (4096)"));
}

/* Staging moves HBM <-> VMEM at the slower of the two: a VMEM slower than
 * HBM bounds it, a faster one changes nothing; VMEM's latency adds to
 * HBM's. */
static void staged_tanh(const char *spec, tpu_inst *out)
{
    ir_function *fn;
    pass_analyses *am;
    tgt_diag d;
    tpu_program *p = compile_with_hbm("func @f(%0: f32[1024,1024]) -> (f32[1024,1024]) {\n"
                                      "  %1 = tanh(%0) : f32[1024,1024]\n"
                                      "  return %1\n}\n", spec, &fn, &am, &d);
    if (!p)
        fail_msg("%s", d.msg);
    *out = p->inst[1];
    tpu_program_free(p);
    pass_analyses_free(am);
    ir_function_free(fn);
}

static void test_vmem_bandwidth_and_latency_count(void **state)
{
    (void)state;
    tpu_inst base, fast, slow, late;
    staged_tanh("vmem { block_bytes: 1048576 }", &base);
    staged_tanh("vmem { block_bytes: 1048576 bandwidth: 1e18 }", &fast);
    staged_tanh("vmem { block_bytes: 1048576 bandwidth: 409.5e9 }", &slow);
    staged_tanh("vmem { block_bytes: 1048576 latency_ns: 1000 }", &late);
    assert_int_equal(fast.cycles, base.cycles);
    /* half HBM's bandwidth: each 512 KiB block takes twice as long */
    assert_int_equal(slow.load_first, 1925);
    assert_true(slow.cycles > base.cycles);
    /* 1 us more at each end: 1503.1 cycles, rounded up with HBM's 500 ns */
    assert_int_equal(late.cycles, base.cycles - 2 * 752 + 2 * 2255);
}

/* ------------------------------------------- through the function cache */

static int print_line;
static void noisy__trace(const ag_arg *a, ag_tensor *o)
{
    print_line = __LINE__ + 1;
    ag_print("x =", a[0].tensor);
    o[0] = ag_relu(a[0].tensor);
}
AG_TEST_DESC(noisy, 1, N_X, K_T, NULL, 1, noisy__trace);

static void scale__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor w = ag_ones(AG_F32, AG_SHAPE(4, 3));
    o[0] = ag_tanh(ag_matmul(a[0].tensor, w));
}
static const char *const N_X1[] = {"x"};
AG_TEST_DESC(scale, 1, N_X1, K_T, "f32[?,4]", 1, scale__trace);

static ag_tensor call1(const ag_function_desc *d, ag_tensor x)
{
    ag_arg a[1] = {targ(x)};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

static void test_host_ops_are_placement_errors(void **state)
{
    (void)state;
    assert_true(ag_set_target("tpu-model"));
    ag_tensor r = call1(&noisy__desc, F32(AG_SHAPE(2), -1, 2));
    ag_set_target(NULL);
    assert_true(ag_is_error(r));
    char want[160];
    snprintf(want, sizeof want, "test_tpu.c:%d: 'ag_print' isn't compilable for the TPU; ",
             print_line);
    assert_non_null(strstr(ag_last_error(), want));
}

static void test_unknown_dims_compile_at_the_call(void **state)
{
    (void)state;
    assert_true(ag_set_target("tpu-model"));
    ag_tensor a = call1(&scale__desc, ag_ones(AG_F32, AG_SHAPE(2, 4)));
    ag_tensor b = call1(&scale__desc, ag_ones(AG_F32, AG_SHAPE(5, 4)));
    ag_tensor c = call1(&scale__desc, ag_ones(AG_F32, AG_SHAPE(2, 4)));
    ag_set_target(NULL);
    assert_false(ag_is_error(a) || ag_is_error(b) || ag_is_error(c));
    assert_int_equal(ag_function_trace_count("scale"), 1); /* one trace for the signature */
    assert_int_equal(ag_num_elements(b), 15);
    for (int64_t i = 0; i < 15; i++)
        assert_true(ag_get_f64(b, i) == (double)tanhf(4.0f));
}

/* With soft device placement the print runs on the host, in order, and
 * the result is the TPU's. */
static void test_soft_placement_runs_host_ops(void **state)
{
    (void)state;
    assert_true(ag_set_target("tpu-model"));
    ag_set_soft_device_placement(true);
    char *printed = NULL;
    ag_tensor r = {0, 0};
    CAPTURE(printed, r = call1(&noisy__desc, F32(AG_SHAPE(2), -1, 2)));
    ag_set_soft_device_placement(false);
    ag_set_target(NULL);
    assert_false(ag_is_error(r));
    assert_string_equal(printed, "x = [-1 2]\n");
    assert_true(ag_get_f64(r, 0) == 0 && ag_get_f64(r, 1) == 2);
    free(printed);
}

/* The API returns the last call's profile; AG_PROFILE_TRACE writes the
 * call's timeline in the Chrome trace format. */
static void test_profile_api_and_timeline(void **state)
{
    (void)state;
    char path[] = "/tmp/agc-timeline-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("AG_PROFILE_TRACE", path, 1);
    rt_config_reload_env();
    assert_true(ag_set_target("tpu-model"));
    ag_tensor r = call1(&scale__desc, ag_ones(AG_F32, AG_SHAPE(3, 4)));
    ag_set_target(NULL);
    unsetenv("AG_PROFILE_TRACE");
    rt_config_reload_env();
    assert_false(ag_is_error(r));
    ag_profile prof;
    assert_true(ag_last_profile(&prof));
    assert_string_equal(prof.function, "scale");
    assert_string_equal(prof.target, "tpu-model");
    assert_true(prof.seconds > prof.device_seconds && prof.device_seconds > 0);
    assert_string_equal(prof.unit_names[TPU_UNIT_MXU], "mxu");
    assert_true(prof.unit_busy_cycles[TPU_UNIT_MXU] > 0);
    assert_string_equal(prof.unit_names[TPU_UNIT_HBM], "dma.hbm");
    assert_true(prof.unit_busy_cycles[TPU_UNIT_HBM] > 0);
    assert_int_equal(prof.host_bytes, 4096 * 2); /* x in, the result out: a tile each */
    FILE *f = fopen(path, "r");
    char text[8192] = {0};
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    unlink(path);
    char svg[64];
    tpu_trace_picture_path(path, svg, sizeof svg);
    unlink(svg);
    assert_non_null(strstr(text, "{\"traceEvents\": ["));
    assert_non_null(strstr(text, "\"args\": {\"name\": \"mxu\"}"));
    assert_non_null(strstr(text, "{\"name\": \"dma.h2d %"));
    assert_non_null(strstr(text, "{\"name\": \"matmul %"));
    assert_non_null(strstr(text, "\"otherData\": {\"function\": \"scale\""));
}

/* The profile's shares count each cycle once: they add up to the call,
 * idle (no unit busy) on a line of its own; printed, to 100.0%. */
static void test_profile_shares_add_up(void **state)
{
    (void)state;
    /* by hand: the MXU over [0, 10), staging over [5, 20), nothing after */
    tpu_event ev[] = {{0, 10, TPU_UNIT_MXU, "matmul", 1, 0, 0}, {5, 15, TPU_UNIT_HBM, "vmem.load", 1, 0, 0}};
    tpu_timeline t = {.ev = ev, .n = 2, .cycles = 30, .clock_hz = 1e9};
    tpu_profile prof = {0};
    tpu_profile_shares(&t, &prof);
    assert_int_equal(prof.share[TPU_UNIT_MXU], 10);
    assert_int_equal(prof.share[TPU_UNIT_HBM], 10);
    assert_int_equal(prof.idle, 10);
    /* a simulated call: the units overlap, the shares do not */
    compiled c = compile_v5e(layer);
    rt_value *args[3] = {random_f32(&AG_SHAPE(8, 256), 1), random_f32(&AG_SHAPE(256, 128), 2),
                         random_f32(&AG_SHAPE(128), 3)};
    rt_value *out = NULL;
    assert_true(tpu_run(c.p, args, 3, &out, &prof, NULL));
    int64_t busy = 0, shares = prof.idle;
    for (int u = 0; u < TPU_N_UNITS; u++) {
        busy += prof.busy[u];
        shares += prof.share[u];
        assert_true(prof.share[u] <= prof.busy[u]);
    }
    assert_true(busy >= shares - prof.idle);
    assert_int_equal(shares, prof.cycles);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_profile_print(&prof, "layer", f);
    fclose(f);
    double printed = 0, v;
    char unit[32];
    for (const char *line = strstr(text, "\n  dma.h2d"); line && line[1]; line = strchr(line + 1, '\n')) {
        long long cycles;
        double busy_pct;
        if (sscanf(line + 1, " %31s %lld %lf%% %lf%%", unit, &cycles, &busy_pct, &v) == 4)
            printed += v;
        else if (sscanf(line + 1, " idle (waiting on latency) %lf%%", &v) == 1)
            printed += v;
    }
    if (fabs(printed - 100.0) > 1e-9)
        fail_msg("the shares add up to %.1f%%:\n%s", printed, text);
    assert_non_null(strstr(text, "  idle (waiting on latency) "));
    free(text);
    for (int i = 0; i < 3; i++)
        rt_value_free(args[i]);
    rt_value_free(out);
    compiled_free(&c);
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* AG_PROFILE_TRACE keeps every call in the Chrome trace, complete after
 * each; the picture beside it draws the last TPU_PICTURE_CALLS and says
 * how many came before. */
static void test_trace_keeps_every_call(void **state)
{
    (void)state;
    enum { CALLS = TPU_PICTURE_CALLS + 3 };
    char path[] = "/tmp/agc-trace-XXXXXX.json", svg[64];
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    close(fd);
    tpu_trace_picture_path(path, svg, sizeof svg);
    assert_non_null(strstr(svg, ".svg"));
    assert_null(strstr(svg, ".json"));
    setenv("AG_PROFILE_TRACE", path, 1);
    rt_config_reload_env();
    assert_true(ag_set_target("tpu-model"));
    for (int i = 0; i < CALLS; i++)
        assert_false(ag_is_error(call1(&scale__desc, ag_ones(AG_F32, AG_SHAPE(3, 4)))));
    ag_set_target(NULL);
    unsetenv("AG_PROFILE_TRACE");
    rt_config_reload_env();
    char err[512];
    size_t len;
    char *text = sf_read_regular(path, "trace", 1 << 24, &len, err, sizeof err);
    char *picture = sf_read_regular(svg, "picture", 1 << 24, &len, err, sizeof err);
    unlink(path);
    unlink(svg);
    assert_non_null(text);
    assert_non_null(picture);
    assert_int_equal(count_of(text, "\"cat\": \"call\""), CALLS);
    assert_int_equal(count_of(text, "{\"name\": \"matmul %"), CALLS);
    assert_non_null(strstr(text, "\"calls\": 11}}\n"));
    assert_int_equal(count_of(text, "\"traceEvents\""), 1);
    assert_int_equal(text[strlen(text) - 2], '}'); /* closed after the last call */
    assert_int_equal(count_of(picture, "<g class=\"call\">"), TPU_PICTURE_CALLS);
    assert_true(count_of(picture, "<rect class=\"box\"") > 3 * TPU_PICTURE_CALLS);
    assert_non_null(strstr(picture, "calls 4 to 11 of 11"));
    assert_non_null(strstr(picture, "the 3 before them are in the Chrome trace only"));
    assert_non_null(strstr(picture, "time (us)"));
    assert_non_null(strstr(picture, "matrix units")); /* the legend */
    free(text);
    free(picture);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_spec_defaults_and_round_trip),
        TU_TEST(test_spec_file_is_the_defaults),
        TU_TEST(test_spec_fields),
        TU_TEST(test_spec_errors_are_located),
        TU_TEST(test_spec_file_errors_name_the_file),
        TU_TEST(test_tiles_pad_the_last_two_dims),
        TU_TEST(test_matmul_costs_the_systolic_formula),
        TU_TEST(test_simulated_numerics_and_time),
        TU_TEST(test_tpu_op_table),
        TU_TEST(test_nodes_of_other_devices_are_errors),
        TU_TEST(test_hbm_capacity_names_the_tensors),
        TU_TEST(test_hbm_buffers_are_reused),
        TU_TEST(test_vmem_blocks_overlap_the_work),
        TU_TEST(test_vmem_bandwidth_and_latency_count),
        TU_TEST(test_host_ops_are_placement_errors),
        TU_TEST(test_unknown_dims_compile_at_the_call),
        TU_TEST(test_soft_placement_runs_host_ops),
        TU_TEST(test_profile_api_and_timeline),
        TU_TEST(test_profile_shares_add_up),
        TU_TEST(test_trace_keeps_every_call),
    };
    TU_RUN(tests);
}
