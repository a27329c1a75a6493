/*
 * test_cache.c - the cpu target's persistent compilation cache
 * (backend/cpu/cache.h).
 *
 * Each test compiles graphs with cg_compile into a fresh cache directory
 * and checks, from the cache's counters, whether LLVM ran (a miss) or the
 * stored object was loaded (a hit), and that the code computes exactly
 * what the same graph compiled without the cache computes (bit for bit)
 * and reports errors at the same source lines. Damaged entries (a flipped
 * byte, a cut file, another format, another key) must each give one
 * warning, a recompile and a correct result, and be replaced.
 */
#include "test_util.h"

#include "cache.h"
#include "ir.h"
#include "pass.h"
#include "rt.h"

#include "cg_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ================================================================ harness */

/* Fused loops with a literal, a native matrix product, a kernel call
 * (softmax) and a reduction. */
static const char *const FLOAT_GRAPH =
    "func @f(%0: f32[8,8], %1: f32[8,8]) -> (f32[8,8], f32[]) {\n"
    "  %2 = const() {value = [0.5]} : f32[] loc(\"cache.c\":2)\n"
    "  %3 = mul(%0, %2) : f32[8,8] loc(\"cache.c\":3)\n"
    "  %4 = tanh(%3) : f32[8,8] loc(\"cache.c\":4)\n"
    "  %5 = matmul(%4, %1) : f32[8,8] loc(\"cache.c\":5)\n"
    "  %6 = softmax(%5) {axis = -1} : f32[8,8] loc(\"cache.c\":6)\n"
    "  %7 = reduce_sum(%6) {axis = all, keepdims = false} : f32[] loc(\"cache.c\":7)\n"
    "  return %6, %7\n}\n";

/* An integer division that fails on a zero divisor, at line 9. */
static const char *const DIV_GRAPH =
    "func @g(%0: i32[4], %1: i32[4]) -> (i32[4]) {\n"
    "  %2 = div(%0, %1) : i32[4] loc(\"cache.c\":9)\n"
    "  return %2\n}\n";

static ir_function *parse_ir(const char *text)
{
    char err[1024];
    ir_function *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!fn)
        fail_msg("parse: %s", err);
    return fn;
}

/* A fresh directory, made the cache's. */
static char dir[64];

static void fresh_cache_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/agc_cache_test_XXXXXX");
    assert_non_null(mkdtemp(dir));
    ag_set_cache_dir(dir);
}

static void remove_cache_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    ag_set_cache_dir(NULL);
}

static rt_value *f32_matrix(float seed)
{
    rt_value *v = rt_value_new(AG_F32, &AG_SHAPE(8, 8));
    for (int i = 0; i < 64; i++)
        ((float *)v->data)[i] = seed * (float)((i * 37) % 17 - 8) / 8.0f;
    return v;
}

static rt_value *i32_vector(const int32_t *x)
{
    rt_value *v = rt_value_new(AG_I32, &AG_SHAPE(4));
    memcpy(v->data, x, 4 * sizeof *x);
    return v;
}

/* The float graph's results by code: the softmax's 64 floats and the sum. */
typedef struct float_out {
    float m[64];
    float sum;
} float_out;

static float_out run_float(const cg_code *code)
{
    rt_value *args[2] = {f32_matrix(1.0f), f32_matrix(-0.75f)}, *res[2] = {0};
    assert_true(cg_run(code, args, 2, res));
    float_out o;
    memcpy(o.m, res[0]->data, sizeof o.m);
    o.sum = *(float *)res[1]->data;
    for (int i = 0; i < 2; i++) {
        rt_value_free(args[i]);
        rt_value_free(res[i]);
    }
    return o;
}

static cg_code *compile(const ir_function *fn)
{
    char err[1024];
    cg_code *code = tu_compile(fn, err, sizeof err);
    if (!code)
        fail_msg("compile: %s", err);
    return code;
}

/* What the graph computes without the cache. */
static float_out uncached_float(const ir_function *fn)
{
    ag_set_cache_dir("");
    cg_code *code = compile(fn);
    float_out o = run_float(code);
    tu_code_free(code);
    return o;
}

/* Compiles fn with the cache, runs it, compares with want bit for bit,
 * and returns how the cache's counters moved. */
static cg_cache_stats compile_and_check(const ir_function *fn, const float_out *want)
{
    cg_cache_stats before = cg_cache_get_stats();
    cg_code *code = compile(fn);
    cg_cache_stats after = cg_cache_get_stats();
    float_out got = run_float(code);
    tu_code_free(code);
    assert_memory_equal(&got, want, sizeof got);
    return (cg_cache_stats){.hits = after.hits - before.hits,
                            .misses = after.misses - before.misses,
                            .writes = after.writes - before.writes,
                            .rejected = after.rejected - before.rejected,
                            .llvm_compiles = after.llvm_compiles - before.llvm_compiles};
}

static void expect_hit(cg_cache_stats d)
{
    assert_int_equal(d.hits, 1);
    assert_int_equal(d.misses, 0);
    assert_int_equal(d.rejected, 0);
    assert_int_equal(d.llvm_compiles, 0); /* LLVM did not run */
}

static void expect_miss(cg_cache_stats d, long rejected)
{
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.misses, 1);
    assert_int_equal(d.writes, 1);
    assert_int_equal(d.rejected, rejected);
    assert_int_equal(d.llvm_compiles, 1);
}

static char *entry_path(const ir_function *fn, char **key)
{
    char *path, *k;
    assert_true(cg_cache_describe(fn, NULL, dir, &k, &path));
    if (key)
        *key = k;
    else
        free(k);
    return path;
}

/* ------------------------------------------------ stderr, for warnings */

typedef struct err_capture {
    int saved;
    char path[64];
} err_capture;

static void stderr_begin(err_capture *c)
{
    fflush(stderr);
    snprintf(c->path, sizeof c->path, "/tmp/agc_cache_err_XXXXXX");
    int fd = mkstemp(c->path);
    assert_true(fd >= 0);
    c->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* What was written to stderr since stderr_begin (malloc'ed). */
static char *stderr_end(err_capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    FILE *f = fopen(c->path, "r");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(c->path);
    return text;
}

static int count_of(const char *text, const char *word)
{
    int n = 0;
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
        n++;
    return n;
}

/* Damages the entry of fn with `damage`, then compiles: one warning that
 * contains `reason`, a recompile with the right result, and the entry
 * replaced (the next compile hits). */
static void check_rejected(void (*damage)(const char *path, const ir_function *fn),
                           const char *reason)
{
    fresh_cache_dir();
    ir_function *fn = parse_ir(FLOAT_GRAPH);
    float_out want = uncached_float(fn);
    ag_set_cache_dir(dir);
    expect_miss(compile_and_check(fn, &want), 0);
    char *path = entry_path(fn, NULL);
    damage(path, fn);

    err_capture c;
    stderr_begin(&c);
    cg_cache_stats d = compile_and_check(fn, &want);
    char *warned = stderr_end(&c);
    expect_miss(d, 1);
    assert_int_equal(count_of(warned, "warning:"), 1);
    if (!strstr(warned, reason))
        fail_msg("the warning does not say '%s': %s", reason, warned);
    free(warned);

    expect_hit(compile_and_check(fn, &want));
    free(path);
    ir_function_free(fn);
    remove_cache_dir();
}

/* ------------------------------------------------------------ damages */

static void rewrite(const char *path, long at, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, at), (ssize_t)n);
    close(fd);
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

static void flip_a_byte(const char *path, const ir_function *fn)
{
    (void)fn;
    long at = file_size(path) - 100; /* inside the object code */
    unsigned char b;
    int fd = open(path, O_RDONLY);
    assert_int_equal(pread(fd, &b, 1, at), 1);
    close(fd);
    b ^= 0x10;
    rewrite(path, at, &b, 1);
}

static void cut_short(const char *path, const ir_function *fn)
{
    (void)fn;
    assert_int_equal(truncate(path, file_size(path) / 2), 0);
}

static void other_format(const char *path, const ir_function *fn)
{
    (void)fn;
    unsigned char v[4] = {99, 0, 0, 0}; /* the format field, little-endian */
    rewrite(path, 8, v, 4);
}

/* A valid entry (right checksum) whose key differs from fn's in the line
 * starting with `line`, whose value becomes `value`. */
static void store_with_key_line(const char *path, const ir_function *fn, const char *line,
                                const char *value)
{
    char *key;
    free(entry_path(fn, &key));
    cg_cache_entry e;
    char why[512];
    assert_true(cg_cache_read(path, key, strlen(key), &e, why, sizeof why));
    char *at = strstr(e.key, line), *end = strchr(at + 1, '\n');
    size_t n = (size_t)(at - e.key) + strlen(line);
    /* cg_cache_entry_free frees it: the library's allocator */
    char *other = rt_xmalloc(e.key_len + strlen(value) + 1);
    memcpy(other, e.key, n);
    other[n] = '\0';
    strcat(other, value);
    strcat(other, end);
    free(e.key);
    e.key = other;
    e.key_len = strlen(other);
    assert_true(cg_cache_write(path, &e, why, sizeof why));
    cg_cache_entry_free(&e);
    free(key);
}

static void other_cpu(const char *path, const ir_function *fn)
{
    store_with_key_line(path, fn, "\ncpu ", "some-other-cpu");
}

static void other_agc_version(const char *path, const ir_function *fn)
{
    store_with_key_line(path, fn, "\nagc ", "99.0.0");
}

/* Another graph's valid entry under fn's file name: what a collision of
 * the 128-bit hash would leave. */
static void other_graph(const char *path, const ir_function *fn)
{
    (void)fn;
    ir_function *g = parse_ir(DIV_GRAPH);
    char *gpath = entry_path(g, NULL);
    cg_code *code = compile(g); /* writes g's entry */
    tu_code_free(code);
    assert_int_equal(rename(gpath, path), 0);
    free(gpath);
    ir_function_free(g);
}

/* ================================================================= tests */

static void test_second_compile_loads_without_llvm(void **state)
{
    (void)state;
    fresh_cache_dir();
    ir_function *fn = parse_ir(FLOAT_GRAPH);
    float_out want = uncached_float(fn);
    ag_set_cache_dir(dir);
    expect_miss(compile_and_check(fn, &want), 0);
    expect_hit(compile_and_check(fn, &want));
    /* a graph parsed again (a new process's trace) hits too */
    ir_function *again = parse_ir(FLOAT_GRAPH);
    expect_hit(compile_and_check(again, &want));
    ir_function_free(again);
    ir_function_free(fn);
    remove_cache_dir();
}

/* Errors of cached code name the nodes' lines, as without the cache: the
 * node table points at the compiling function's nodes. */
static void test_errors_keep_their_lines(void **state)
{
    (void)state;
    fresh_cache_dir();
    ir_function *fn = parse_ir(DIV_GRAPH);
    for (int round = 0; round < 2; round++) { /* miss, then hit */
        cg_cache_stats before = cg_cache_get_stats();
        cg_code *code = compile(fn);
        assert_int_equal(cg_cache_get_stats().hits - before.hits, round);
        const int32_t a[4] = {7, 9, 12, 5}, b[4] = {2, 4, 0, 1};
        rt_value *args[2] = {i32_vector(a), i32_vector(b)}, *res[1] = {0};
        ag_clear_error();
        assert_false(cg_run(code, args, 2, res));
        const char *e = ag_last_error();
        assert_non_null(e);
        if (!strstr(e, "cache.c:9"))
            fail_msg("error without its line: %s", e);
        const int32_t ok[4] = {2, 4, 3, 1};
        rt_value_free(args[1]);
        args[1] = i32_vector(ok);
        ag_clear_error();
        assert_true(cg_run(code, args, 2, res));
        const int32_t want[4] = {3, 2, 4, 5};
        assert_memory_equal(res[0]->data, want, sizeof want);
        rt_value_free(res[0]);
        rt_value_free(args[0]);
        rt_value_free(args[1]);
        tu_code_free(code);
    }
    ir_function_free(fn);
    remove_cache_dir();
}

static void test_flipped_byte_is_rejected(void **state)
{
    (void)state;
    check_rejected(flip_a_byte, "checksum");
}

static void test_truncated_entry_is_rejected(void **state)
{
    (void)state;
    check_rejected(cut_short, "truncated");
}

static void test_other_format_is_rejected(void **state)
{
    (void)state;
    check_rejected(other_format, "format version 99");
}

static void test_other_cpu_is_rejected(void **state)
{
    (void)state;
    check_rejected(other_cpu, "'cpu some-other-cpu'");
}

static void test_other_agc_version_is_rejected(void **state)
{
    (void)state;
    check_rejected(other_agc_version, "'agc 99.0.0'");
}

static void test_hash_collision_is_rejected(void **state)
{
    (void)state;
    check_rejected(other_graph, "another key");
}

/* Keys differ where code differs: another CPU is another entry. */
static void test_key_names_cpu_and_graph(void **state)
{
    (void)state;
    fresh_cache_dir();
    ir_function *f = parse_ir(FLOAT_GRAPH), *g = parse_ir(DIV_GRAPH);
    char *kf, *kg, *kz, *pf = entry_path(f, &kf), *pg = entry_path(g, &kg), *pz;
    tgt_options v2 = tu_cpu_options("x86-64-v2");
    assert_true(cg_cache_describe(f, &v2, dir, &kz, &pz));
    tu_options_free(&v2);
    assert_string_not_equal(pf, pg);
    assert_string_not_equal(pf, pz);
    assert_non_null(strstr(kz, "\ncpu x86-64-v2\n"));
    assert_non_null(strstr(kf, "\nllvm 19."));
    assert_non_null(strstr(kf, "\nagc " AG_VERSION "\n"));
    assert_non_null(strstr(kf, "func @f("));
    free(kf), free(kg), free(kz), free(pf), free(pg), free(pz);
    ir_function_free(f);
    ir_function_free(g);
    remove_cache_dir();
}

/* A directory that cannot be made: one warning, code that runs, no
 * entry. */
static void test_unwritable_dir_warns_once(void **state)
{
    (void)state;
    char file[64] = "/tmp/agc_cache_file_XXXXXX", bad[96];
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    close(fd);
    snprintf(bad, sizeof bad, "%s/cache", file); /* under a file */
    ir_function *fn = parse_ir(FLOAT_GRAPH);
    float_out want = uncached_float(fn);
    ag_set_cache_dir(bad);
    err_capture c;
    stderr_begin(&c);
    cg_cache_stats d1 = compile_and_check(fn, &want), d2 = compile_and_check(fn, &want);
    char *warned = stderr_end(&c);
    assert_int_equal(d1.writes + d2.writes, 0);
    assert_int_equal(d1.misses + d2.misses, 2);
    assert_int_equal(count_of(warned, "warning:"), 1);
    assert_non_null(strstr(warned, "cannot be written"));
    free(warned);
    ir_function_free(fn);
    unlink(file);
    ag_set_cache_dir(NULL);
}

/* The same graph twice at once in one process: the second cannot load the
 * same symbols into the JIT, so it compiles the plain way. */
static void test_same_graph_alive_twice(void **state)
{
    (void)state;
    fresh_cache_dir();
    ir_function *fn = parse_ir(FLOAT_GRAPH);
    float_out want = uncached_float(fn);
    ag_set_cache_dir(dir);
    cg_code *first = compile(fn);
    cg_cache_stats before = cg_cache_get_stats();
    cg_code *second = compile(fn);
    cg_cache_stats after = cg_cache_get_stats();
    assert_int_equal(after.hits - before.hits, 0);
    assert_int_equal(after.llvm_compiles - before.llvm_compiles, 1);
    float_out a = run_float(first), b = run_float(second);
    assert_memory_equal(&a, &want, sizeof a);
    assert_memory_equal(&b, &want, sizeof b);
    tu_code_free(first);
    tu_code_free(second);
    expect_hit(compile_and_check(fn, &want)); /* the name is free again */
    ir_function_free(fn);
    remove_cache_dir();
}

enum { THREADS = 4 };

typedef struct thread_job {
    const ir_function *fn;
    float_out out;
} thread_job;

static void *compile_and_run(void *arg)
{
    thread_job *j = arg;
    char err[1024];
    cg_code *code = tu_compile(j->fn, err, sizeof err);
    if (code) {
        j->out = run_float(code);
        tu_code_free(code);
    }
    return code ? arg : NULL;
}

/* Threads compiling one graph at once into an empty cache: each gets
 * right code, and the entry they leave is whole. */
static void test_concurrent_compiles(void **state)
{
    (void)state;
    fresh_cache_dir();
    ir_function *fn = parse_ir(FLOAT_GRAPH);
    float_out want = uncached_float(fn);
    ag_set_cache_dir(dir);
    pthread_t t[THREADS];
    thread_job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (thread_job){.fn = fn};
        assert_int_equal(pthread_create(&t[i], NULL, compile_and_run, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        assert_non_null(ok);
        assert_memory_equal(&jobs[i].out, &want, sizeof want);
    }
    expect_hit(compile_and_check(fn, &want));
    ir_function_free(fn);
    remove_cache_dir();
}

static void test_set_cache_dir(void **state)
{
    (void)state;
    ag_set_cache_dir("/tmp/somewhere");
    assert_string_equal(ag_cache_dir(), "/tmp/somewhere");
    ag_set_cache_dir("");
    assert_null(ag_cache_dir());
    setenv("AG_CACHE_DIR", "/tmp/from-env", 1);
    rt_config_reload_env();
    ag_set_cache_dir(NULL);
    assert_string_equal(ag_cache_dir(), "/tmp/from-env");
    unsetenv("AG_CACHE_DIR");
    rt_config_reload_env();
    assert_null(ag_cache_dir());
}

static void test_crc32_known_value(void **state)
{
    (void)state;
    /* the standard check value of CRC-32/IEEE */
    assert_int_equal(rt_crc32(0, "123456789", 9), 0xCBF43926u);
    uint32_t split = rt_crc32(rt_crc32(0, "1234", 4), "56789", 5);
    assert_int_equal(split, 0xCBF43926u);
}

int main(void)
{
    unsetenv("AG_CACHE_DIR");
    rt_config_reload_env();
    const struct CMUnitTest tests[] = {
        TU_TEST(test_crc32_known_value),
        TU_TEST(test_set_cache_dir),
        TU_TEST(test_second_compile_loads_without_llvm),
        TU_TEST(test_errors_keep_their_lines),
        TU_TEST(test_flipped_byte_is_rejected),
        TU_TEST(test_truncated_entry_is_rejected),
        TU_TEST(test_other_format_is_rejected),
        TU_TEST(test_other_cpu_is_rejected),
        TU_TEST(test_other_agc_version_is_rejected),
        TU_TEST(test_hash_collision_is_rejected),
        TU_TEST(test_key_names_cpu_and_graph),
        TU_TEST(test_unwritable_dir_warns_once),
        TU_TEST(test_same_graph_alive_twice),
        TU_TEST(test_concurrent_compiles),
    };
    TU_RUN(tests);
}
