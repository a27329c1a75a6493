/*
 * fuzz_dataset.c - libFuzzer target on representative data sets
 * (model/dataset.c over model/tensor_proto.c, support/tfrecord.c and
 * support/protowire.c): any bytes must give samples or an error naming
 * the file and the record, never a crash, a hang or a leak.
 *
 * The input is read twice: as a whole TFRecord file (the framing, whose
 * CRCs random bytes rarely pass), and as the payload of one record with
 * valid CRCs, which reaches the RepresentativeDataSample and TensorProto
 * parsers; the second read is also checked against a small signature.
 * A sample that is accepted must survive being written again with
 * ag_dataset_writer_* and read back with the same dtypes and shapes; a
 * difference aborts, which libFuzzer reports.
 *
 * With FUZZ_DATASET_SEEDS=DIR set, it writes its seeds there (payloads
 * of samples as agc writes them) and exits: build_and_run.sh seeds from
 * them.
 */
#include "dataset.h"
#include "tfrecord.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char file[64], again[64];
static int saved_stderr = -1;

/* Mutes stderr while on: every small data set draws the 200-sample
 * warning, which would bury libFuzzer's output. */
static void quiet(bool on)
{
    fflush(stderr);
    if (on) {
        saved_stderr = dup(2);
        FILE *null = fopen("/dev/null", "w");
        dup2(fileno(null), 2);
        fclose(null);
    } else {
        dup2(saved_stderr, 2);
        close(saved_stderr);
    }
}

static bool read_quietly(const char *path, const ag_signature_def *s, sm_dataset *ds,
                         char *err, size_t errlen)
{
    quiet(true);
    bool ok = sm_dataset_read(path, s, ds, err, errlen);
    quiet(false);
    return ok;
}

static void write_file(const char *path, const void *data, size_t n, bool as_record)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (as_record ? !tfr_write(f, data, n) : fwrite(data, 1, n, f) != n)
        abort();
    fclose(f);
}

/* The accepted samples, written again and read back alike. */
static void check_round_trip(const sm_dataset *ds)
{
    ag_dataset_writer *w = ag_dataset_writer_open(again);
    for (int64_t i = 0; i < ds->n_samples; i++) {
        const sm_sample *s = &ds->samples[i];
        ag_named_tensor *in = calloc((size_t)s->n_inputs + 1, sizeof *in);
        for (int k = 0; k < s->n_inputs; k++)
            in[k] = (ag_named_tensor){s->names[k], s->tensors[k]};
        bool ok = ag_dataset_writer_add(w, in, s->n_inputs);
        free(in);
        if (!ok && ag_last_error() && strstr(ag_last_error(), "has no name"))
            break; /* an empty key is TensorFlow's, not agc's to write */
        if (!ok)
            abort();
    }
    quiet(true);
    bool closed = ag_dataset_writer_close(w);
    quiet(false);
    if (!closed)
        return;
    sm_dataset back;
    char err[1024];
    if (!read_quietly(again, NULL, &back, err, sizeof err) ||
        back.n_samples != ds->n_samples) {
        fprintf(stderr, "fuzz_dataset: written again, the data set does not read back: %s\n",
                err);
        abort();
    }
    for (int64_t i = 0; i < ds->n_samples; i++)
        for (int k = 0; k < ds->samples[i].n_inputs; k++)
            if (ag_dtype_of(back.samples[i].tensors[k]) !=
                    ag_dtype_of(ds->samples[i].tensors[k]) ||
                !ag_shape_equal(ag_shape_get(back.samples[i].tensors[k]),
                                ag_shape_get(ds->samples[i].tensors[k])))
                abort();
    sm_dataset_free(&back);
}

static const ag_tensor_spec specs[] = {{"x", AG_F32, {2, {-1, 4}}}, {"y", AG_I32, {0, {0}}}};
static const ag_signature_def sig = {"serving_default", 2, 0, specs, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sm_dataset ds;
    char err[1024];
    ag_scope_push();
    write_file(file, data, size, false);
    if (read_quietly(file, NULL, &ds, err, sizeof err))
        sm_dataset_free(&ds);
    write_file(file, data, size, true);
    if (read_quietly(file, NULL, &ds, err, sizeof err)) {
        check_round_trip(&ds);
        sm_dataset_free(&ds);
    }
    if (read_quietly(file, &sig, &ds, err, sizeof err))
        sm_dataset_free(&ds);
    ag_scope_pop();
    ag_clear_error();
    return 0;
}

/* Seeds: the payloads of samples as agc writes them. */
static void write_seeds(const char *dir)
{
    float xs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ag_named_tensor in[] = {{"x", ag_from_data(AG_F32, AG_SHAPE(2, 4), xs)},
                            {"y", ag_scalar_i32(3)}};
    for (int n = 1; n <= 2; n++) {
        char path[4096], rec[4096];
        snprintf(path, sizeof path, "%s/sample-%d.tfrecord", dir, n);
        ag_dataset_writer *w = ag_dataset_writer_open(path);
        if (!w || !ag_dataset_writer_add(w, in, n) || !ag_dataset_writer_close(w))
            exit(1);
        /* the payload alone: the record without its 12-byte header and
         * 4-byte footer */
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(rec, 1, sizeof rec, f) : 0;
        if (f)
            fclose(f);
        f = fopen(path, "wb");
        if (!f || got < 16 || fwrite(rec + 12, 1, got - 16, f) != got - 16)
            exit(1);
        fclose(f);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    ag_set_error_mode(AG_ERRORS_RETURN);
    snprintf(file, sizeof file, "/tmp/fuzz_dataset-%ld.tfrecord", (long)getpid());
    snprintf(again, sizeof again, "/tmp/fuzz_dataset-%ld-again.tfrecord", (long)getpid());
    const char *seeds = getenv("FUZZ_DATASET_SEEDS");
    if (seeds) {
        write_seeds(seeds);
        exit(0);
    }
    return 0;
}
