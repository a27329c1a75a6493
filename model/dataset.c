/*
 * dataset.c - representative data sets: TFRecord files of
 * tensorflow.quantization.RepresentativeDataSample records (dataset.h),
 * what TensorFlow's TfRecordRepresentativeDatasetSaver writes.
 *
 *   message RepresentativeDataSample {
 *     map<string, TensorProto> tensor_proto_inputs = 2;
 *   }
 *
 * On the wire a map is a repeated message field whose entries hold the
 * key in field 1 and the value in field 2. A sample is checked against
 * the signature it calibrates; every fault names the file, the record
 * (from 0) and the input.
 */
#include "dataset.h"

#include "rt.h"
#include "signature.h"
#include "tfrecord.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sm_dataset_warn_if_small(const char *path, int64_t n)
{
    if (n < SM_DATASET_RECOMMENDED)
        rt_warn((ag_loc){0}, "%s: %lld sample%s; the converter guide recommends more than %d "
                "representative samples, reaching every branch of the model's conditionals",
                path, (long long)n, n == 1 ? "" : "s", SM_DATASET_RECOMMENDED);
}

/* ------------------------------------------------------------- decoding */

static void sample_free(sm_sample *s)
{
    for (int i = 0; i < s->n_inputs; i++) {
        free(s->names[i]);
        ag_free_at((ag_loc){0}, s->tensors[i]);
    }
    free(s->names);
    free(s->tensors);
    *s = (sm_sample){0};
}

/* Adds name = t to s; an input named twice keeps its last value, as
 * protobuf's maps do. */
static void sample_put(sm_sample *s, char *name, ag_tensor t)
{
    for (int i = 0; i < s->n_inputs; i++)
        if (strcmp(s->names[i], name) == 0) {
            free(name);
            ag_free_at((ag_loc){0}, s->tensors[i]);
            s->tensors[i] = t;
            return;
        }
    s->names = realloc(s->names, (size_t)(s->n_inputs + 1) * sizeof *s->names);
    s->tensors = realloc(s->tensors, (size_t)(s->n_inputs + 1) * sizeof *s->tensors);
    s->names[s->n_inputs] = name;
    s->tensors[s->n_inputs++] = t;
}

/* The key and value fields of a map entry (both may be absent: an empty
 * name, an empty TensorProto). */
static bool entry_fields(const pw_field *f, pw_field *key, pw_field *value, char *err,
                         size_t errlen)
{
    pw_reader r = pw_reader_of(f->data, f->len);
    pw_field e;
    int got;
    while ((got = pw_next(&r, &e, err, errlen)) > 0) {
        if (e.number == SM_MAP_KEY && e.wire == PW_LEN)
            *key = e;
        else if (e.number == SM_MAP_VALUE && e.wire == PW_LEN)
            *value = e;
    }
    return got == 0;
}

/* One entry of tensor_proto_inputs into s. */
static bool read_entry(const pw_field *f, sm_sample *s, char *err, size_t errlen)
{
    pw_field key = {.data = (const unsigned char *)"", .len = 0}, value = key;
    if (f->wire != PW_LEN) {
        snprintf(err, errlen, "tensor_proto_inputs is not a map");
        return false;
    }
    if (!entry_fields(f, &key, &value, err, errlen))
        return false;
    char *name = strndup((const char *)key.data, key.len);
    char why[256];
    ag_tensor t = sm_tensor_proto_decode(value.data, value.len, why, sizeof why);
    if (!t.id) {
        snprintf(err, errlen, "input '%s': %s", name, why);
        free(name);
        return false;
    }
    sample_put(s, name, t);
    return true;
}

/* A serialized RepresentativeDataSample into s; unknown fields skipped. */
static bool decode_sample(const char *data, size_t n, sm_sample *s, char *err, size_t errlen)
{
    pw_reader r = pw_reader_of(data, n);
    pw_field f;
    int got;
    while ((got = pw_next(&r, &f, err, errlen)) > 0)
        if (f.number == SM_SAMPLE_INPUTS && !read_entry(&f, s, err, errlen))
            return false;
    return got == 0;
}

/* ------------------------------------------------ against the signature */

static int input_index(const sm_sample *s, const char *name)
{
    for (int i = 0; i < s->n_inputs; i++)
        if (strcmp(s->names[i], name) == 0)
            return i;
    return -1;
}

/* Whether the sample's tensor t fits spec; why in err if not. */
static bool fits(const ag_signature_def *sig, const ag_tensor_spec *spec, ag_tensor t,
                 char *err, size_t errlen)
{
    ag_shape shape = ag_shape_get(t);
    ag_dtype dt = ag_dtype_of(t);
    if (dt == spec->dtype && ir_spec_shape_matches(&spec->shape, &shape))
        return true;
    char got[160], want[160];
    ir_spec_type_str(dt, &shape, got, sizeof got);
    ir_spec_type_str(spec->dtype, &spec->shape, want, sizeof want);
    snprintf(err, errlen, "input '%s' is %s, but the signature '%s' takes %s (%s)", spec->name,
             got, sig->name, want, dt != spec->dtype ? "a wrong dtype" : "a wrong shape");
    return false;
}

/* The names of the signature's inputs, "a, b", into buf. */
static const char *input_names(const ag_signature_def *sig, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < sig->n_inputs && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", sig->inputs[i].name);
    return buf;
}

/* An input of s the signature lacks: false with a message. */
static bool only_known(const ag_signature_def *sig, const sm_sample *s, char *err,
                       size_t errlen)
{
    for (int i = 0; i < s->n_inputs; i++) {
        bool known = false;
        for (int k = 0; k < sig->n_inputs && !known; k++)
            known = strcmp(sig->inputs[k].name, s->names[i]) == 0;
        if (!known) {
            char names[512];
            snprintf(err, errlen, "the signature '%s' has no input '%s' (its inputs: %s)",
                     sig->name, s->names[i], input_names(sig, names, sizeof names));
            return false;
        }
    }
    return true;
}

/* Checks s against sig and puts its inputs in the signature's order. */
static bool check_sample(const ag_signature_def *sig, sm_sample *s, char *err, size_t errlen)
{
    if (!only_known(sig, s, err, errlen))
        return false;
    for (int k = 0; k < sig->n_inputs; k++) {
        int i = input_index(s, sig->inputs[k].name);
        if (i < 0) {
            snprintf(err, errlen, "input '%s' of the signature '%s' is missing",
                     sig->inputs[k].name, sig->name);
            return false;
        }
        if (!fits(sig, &sig->inputs[k], s->tensors[i], err, errlen))
            return false;
        char *name = s->names[i];
        ag_tensor t = s->tensors[i];
        s->names[i] = s->names[k], s->tensors[i] = s->tensors[k];
        s->names[k] = name, s->tensors[k] = t;
    }
    return true;
}

/* --------------------------------------------------------------- reading */

void sm_dataset_free(sm_dataset *ds)
{
    for (int64_t i = 0; i < ds->n_samples; i++)
        sample_free(&ds->samples[i]);
    free(ds->samples);
    *ds = (sm_dataset){0};
}

/* Record `data` as the data set's next sample; "PATH: record N: ..." in
 * err when it is not one. */
static bool add_record(const tfr_reader *r, const char *path, const ag_signature_def *sig,
                       const char *data, size_t n, sm_dataset *ds, char *err, size_t errlen)
{
    sm_sample s = {0};
    char why[768];
    bool ok = decode_sample(data, n, &s, why, sizeof why) &&
              (!sig || check_sample(sig, &s, why, sizeof why));
    if (!ok) {
        snprintf(err, errlen, "%s: record %lld: %s", path, (long long)tfr_record_number(r), why);
        sample_free(&s);
        return false;
    }
    ds->samples = realloc(ds->samples, (size_t)(ds->n_samples + 1) * sizeof *ds->samples);
    ds->samples[ds->n_samples++] = s;
    return true;
}

static bool read_records(tfr_reader *r, const char *path, const ag_signature_def *sig,
                         sm_dataset *ds, char *err, size_t errlen)
{
    const char *data;
    size_t n;
    int got;
    while ((got = tfr_next(r, &data, &n, err, errlen)) > 0)
        if (!add_record(r, path, sig, data, n, ds, err, errlen))
            return false;
    if (got == 0 && sig && ds->n_samples == 0) {
        snprintf(err, errlen, "%s: the data set holds no samples", path);
        return false;
    }
    return got == 0;
}

bool sm_dataset_read(const char *path, const ag_signature_def *sig, sm_dataset *ds, char *err,
                     size_t errlen)
{
    *ds = (sm_dataset){0};
    tfr_reader *r = tfr_open(path, "the data set", err, errlen);
    if (!r)
        return false;
    bool ok = read_records(r, path, sig, ds, err, errlen);
    tfr_close(r);
    if (!ok)
        sm_dataset_free(ds);
    else
        sm_dataset_warn_if_small(path, ds->n_samples);
    return ok;
}

/* --------------------------------------------------------------- writing */

struct ag_dataset_writer {
    char *path, *tmp; /* written into tmp, renamed to path at the close */
    FILE *f;
    int64_t n_samples;
    bool failed; /* an add failed: the file is not kept */
};

ag_dataset_writer *ag_dataset_writer_open_at(ag_loc loc, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rt_report(loc, "cannot write the data set '%s': %s", path, strerror(errno));
        return NULL;
    }
    ag_dataset_writer *w = calloc(1, sizeof *w);
    w->path = strdup(path);
    w->tmp = strdup(tmp);
    w->f = f;
    return w;
}

/* Whether the sample's inputs can be written: named once each, concrete
 * tensors of a dtype TensorFlow has. */
static bool writable(ag_loc loc, const ag_named_tensor *in, int n)
{
    for (int i = 0; i < n; i++) {
        const char *name = in[i].name ? in[i].name : "";
        if (!*name || ag_is_error(in[i].tensor)) {
            rt_report(loc, "ag_dataset_writer_add: input %d %s", i,
                      *name ? "is an error tensor or no tensor" : "has no name");
            return false;
        }
        for (int k = 0; k < i; k++)
            if (strcmp(in[k].name, name) == 0) {
                rt_report(loc, "ag_dataset_writer_add: input '%s' is given twice", name);
                return false;
            }
    }
    return true;
}

/* The serialized RepresentativeDataSample of the inputs. */
static void encode_sample(const ag_named_tensor *in, int n, pw_buf *out)
{
    pw_buf entry = {0}, value = {0};
    for (int i = 0; i < n; i++) {
        entry.len = value.len = 0;
        sm_tensor_proto_encode(&value, in[i].tensor);
        pw_put_bytes_field(&entry, SM_MAP_KEY, in[i].name, strlen(in[i].name));
        pw_put_bytes_field(&entry, SM_MAP_VALUE, value.data, value.len);
        pw_put_bytes_field(out, SM_SAMPLE_INPUTS, entry.data, entry.len);
    }
    pw_buf_free(&entry);
    pw_buf_free(&value);
}

bool ag_dataset_writer_add_at(ag_loc loc, ag_dataset_writer *w, const ag_named_tensor *inputs,
                              int n_inputs)
{
    if (!w) {
        rt_report(loc, "ag_dataset_writer_add: no writer");
        return false;
    }
    if (n_inputs < 0 || !writable(loc, inputs, n_inputs)) {
        w->failed = true;
        return false;
    }
    pw_buf b = {0};
    encode_sample(inputs, n_inputs, &b);
    bool ok = tfr_write(w->f, b.data ? (const void *)b.data : "", b.len);
    pw_buf_free(&b);
    if (!ok) {
        w->failed = true;
        rt_report(loc, "cannot write the data set '%s': %s", w->path, strerror(errno));
        return false;
    }
    w->n_samples++;
    return true;
}

static void writer_free(ag_dataset_writer *w)
{
    free(w->path);
    free(w->tmp);
    free(w);
}

bool ag_dataset_writer_close_at(ag_loc loc, ag_dataset_writer *w)
{
    if (!w)
        return true;
    bool ok = fclose(w->f) == 0 && !w->failed;
    if (ok && rename(w->tmp, w->path) != 0) {
        rt_report(loc, "cannot write the data set '%s': %s", w->path, strerror(errno));
        ok = false;
    } else if (!ok && !w->failed) {
        rt_report(loc, "cannot write the data set '%s': %s", w->path, strerror(errno));
    }
    if (!ok)
        unlink(w->tmp);
    else
        sm_dataset_warn_if_small(w->path, w->n_samples);
    writer_free(w);
    return ok;
}

bool ag_representative_dataset_save_at(ag_loc loc, const char *path, int n_samples,
                                       int n_inputs, const char *const *names,
                                       const ag_tensor *tensors)
{
    ag_dataset_writer *w = ag_dataset_writer_open_at(loc, path);
    if (!w)
        return false;
    ag_named_tensor *in = calloc((size_t)n_inputs + 1, sizeof *in);
    bool ok = true;
    for (int s = 0; ok && s < n_samples; s++) {
        for (int i = 0; i < n_inputs; i++)
            in[i] = (ag_named_tensor){names[i], tensors[(size_t)s * (size_t)n_inputs + i]};
        ok = ag_dataset_writer_add_at(loc, w, in, n_inputs);
    }
    free(in);
    return ag_dataset_writer_close_at(loc, w);
}
