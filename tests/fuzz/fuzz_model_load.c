/*
 * fuzz_model_load.c - libFuzzer target on the saved-model reader
 * (model/load.c, and model/call.c for what loads): a damaged model must
 * give a clean error, never a crash, a hang, a leak or a sanitizer report.
 *
 * At start it saves a tiny model (one AG_FUNCTION, written in the form
 * agc generates, with one variable) and keeps its three files. Each input
 * then replaces one of them: the first byte chooses which (modulo 3: the
 * manifest, variables.bin, the function's .ir), the rest is the file. The
 * other two are the saved ones. Unless bit 2 of that byte is set, the
 * manifest's sizes and CRC-32s are made to match the fuzzed file, so the
 * input reaches the readers behind the checksums instead of stopping at
 * them. The model is loaded in AG_ERRORS_RETURN mode; if it loads, its
 * first signature is called once with a small input (dims of unknown size
 * 1), on the reference target.
 *
 * With FUZZ_MODEL_LOAD_SEEDS=DIR in the environment it writes the three
 * seed inputs (one per file) into DIR and exits. build_and_run.sh does
 * that, then fuzzes.
 */
#include <ag.h>

#include "manifest.h"
#include "rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MANIFEST, VARIABLES, FUNCTION, N_FILES };

/* ------------------------------------------------- the seed model */

static ag_variable scale;

/* f(x) = x * scale + 1, reduced over rows: what agc writes for an
 * AG_FUNCTION AG_SIGNATURE("f32[?,3]") (tests/unit/test_saved_model.c). */
static void tiny__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_reduce_sum(ag_add(ag_mul(a[0].tensor, ag_variable_read(scale)), 1.0f), 1, false);
}
static const char *const tiny__names[] = {"x"};
static const ag_arg_kind tiny__kinds[] = {AG_ARG_TENSOR};
static const ag_function_desc tiny__desc = {
    .name = "tiny", .file = __FILE__, .line = __LINE__, .n_params = 1,
    .param_names = tiny__names, .param_kinds = tiny__kinds, .signature = "f32[?,3]",
    .n_outputs = 1, .trace = tiny__trace};

static char work[64];           /* a temporary directory */
static char seed_dir[128];      /* the saved model */
static char model_dir[128];     /* the model each input makes */
static char function_file[256]; /* the function's file, relative to a model */
static char *seed[N_FILES];
static size_t seed_len[N_FILES];
static sm_manifest *seed_manifest;

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static void write_all(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "fuzz_model_load: cannot write %s\n", path);
        abort();
    }
}

static void fail_setup(const char *what)
{
    fprintf(stderr, "fuzz_model_load: %s: %s\n", what, ag_last_error() ? ag_last_error() : "");
    abort();
}

/* Saves the seed model and keeps its files and parsed manifest. */
static void save_seed_model(void)
{
    ag_function_register(&tiny__desc);
    ag_tensor init = ag_from_data(AG_F32, AG_SHAPE(3), ((const float[]){0.5f, -2.0f, 3.0f}));
    scale = ag_variable_new(init);
    ag_free(init);
    ag_export_signature sig = {.name = "serving_default", .function = "tiny"};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    if (!ag_saved_model_save(seed_dir, &o))
        fail_setup("cannot save the seed model");
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/%s", seed_dir, SM_MANIFEST_FILE);
    seed[MANIFEST] = read_all(path, &seed_len[MANIFEST]);
    seed_manifest = malloc(sizeof *seed_manifest);
    if (!seed[MANIFEST] || !seed_manifest ||
        !sm_manifest_parse(seed[MANIFEST], path, seed_manifest, err, sizeof err) ||
        seed_manifest->n_functions != 1)
        fail_setup("the seed model's manifest");
    snprintf(function_file, sizeof function_file, "%s", seed_manifest->functions[0].file);
    snprintf(path, sizeof path, "%s/%s", seed_dir, SM_VARIABLES_FILE);
    seed[VARIABLES] = read_all(path, &seed_len[VARIABLES]);
    snprintf(path, sizeof path, "%s/%s", seed_dir, function_file);
    seed[FUNCTION] = read_all(path, &seed_len[FUNCTION]);
    if (!seed[VARIABLES] || !seed[FUNCTION])
        fail_setup("the seed model's files");
}

/* One seed input per file: its selector byte, then the saved file. */
static void write_seeds(const char *dir)
{
    mkdir(dir, 0755);
    for (int k = 0; k < N_FILES; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/seed-%d", dir, k);
        char *buf = malloc(seed_len[k] + 1);
        buf[0] = (char)k;
        memcpy(buf + 1, seed[k], seed_len[k]);
        write_all(path, buf, seed_len[k] + 1);
        free(buf);
    }
}

static void remove_tree(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_model_load: could not remove %s\n", dir);
}

static void cleanup(void)
{
    remove_tree(work);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("AG_TARGET", "reference", 1); /* an interpreter: no JIT per input */
    rt_config_reload_env();
    snprintf(work, sizeof work, "/tmp/fuzz-model-load-XXXXXX");
    if (!mkdtemp(work))
        fail_setup("mkdtemp");
    atexit(cleanup);
    snprintf(seed_dir, sizeof seed_dir, "%s/seed", work);
    snprintf(model_dir, sizeof model_dir, "%s/model", work);
    save_seed_model();
    char functions[256];
    snprintf(functions, sizeof functions, "%s/functions", model_dir);
    if (mkdir(model_dir, 0755) != 0 || mkdir(functions, 0755) != 0)
        fail_setup("mkdir");
    const char *seeds = getenv("FUZZ_MODEL_LOAD_SEEDS");
    if (seeds) {
        write_seeds(seeds);
        exit(0);
    }
    ag_set_error_mode(AG_ERRORS_RETURN);
    return 0;
}

/* ------------------------------------------------- one input */

/* The seed manifest with the size and CRC-32 of the fuzzed file. */
static char *manifest_matching(int which, const uint8_t *file, size_t n, size_t *len)
{
    static sm_manifest m;
    m = *seed_manifest;
    if (which == FUNCTION) {
        m.functions[0].bytes = (int64_t)n;
        m.functions[0].checksum = rt_crc32(0, file, n);
    } else {
        m.variables_bytes = (int64_t)n;
        for (int i = 0; i < m.n_variables; i++) {
            sm_variable *v = &m.variables[i];
            if (v->offset >= 0 && v->bytes >= 0 && v->offset <= (int64_t)n - v->bytes)
                v->checksum = rt_crc32(0, file + v->offset, (size_t)v->bytes);
        }
    }
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        abort();
    sm_manifest_print(&m, f);
    fclose(f);
    return text;
}

/* Writes the model's three files over the last input's (the names are
 * the seed's: a fuzzed manifest that names others finds them missing). */
static void write_model(int which, bool keep_sums, const uint8_t *file, size_t n)
{
    char path[512];
    const void *data[N_FILES] = {seed[MANIFEST], seed[VARIABLES], seed[FUNCTION]};
    size_t len[N_FILES] = {seed_len[MANIFEST], seed_len[VARIABLES], seed_len[FUNCTION]};
    char *manifest = NULL;
    data[which] = file;
    len[which] = n;
    if (which != MANIFEST && !keep_sums)
        data[MANIFEST] = manifest = manifest_matching(which, file, n, &len[MANIFEST]);
    const char *names[N_FILES] = {SM_MANIFEST_FILE, SM_VARIABLES_FILE, function_file};
    for (int k = 0; k < N_FILES; k++) {
        snprintf(path, sizeof path, "%s/%s", model_dir, names[k]);
        write_all(path, data[k], len[k]);
    }
    free(manifest);
}

/* Calls the first signature with inputs of its dtypes and shapes (an
 * unknown dim is 1): the outcome does not matter, only that it is clean. */
static void call_first_signature(ag_saved_model *m)
{
    const ag_signature_def *s = ag_model_signature_at_index(m, 0);
    if (!s || s->n_inputs > 8 || s->n_outputs > 8)
        return;
    ag_named_tensor in[8], out[8];
    for (int i = 0; i < s->n_inputs; i++) {
        ag_shape shape = s->inputs[i].shape;
        for (int d = 0; d < shape.rank; d++)
            if (shape.dims[d] < 0 || shape.dims[d] > 4)
                shape.dims[d] = 1;
        in[i] = (ag_named_tensor){s->inputs[i].name, ag_ones(s->inputs[i].dtype, shape)};
    }
    ag_model_call(m, s->name, in, s->n_inputs, out, s->n_outputs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % N_FILES;
    bool keep_sums = data[0] & 4;
    write_model(which, keep_sums, data + 1, size - 1);
    ag_scope_push(); /* frees the call's tensors */
    ag_saved_model *m = ag_saved_model_load(model_dir);
    if (m) {
        call_first_signature(m);
        ag_saved_model_free(m);
    }
    ag_scope_pop();
    ag_clear_error();
    return 0;
}
