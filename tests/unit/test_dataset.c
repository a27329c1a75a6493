/*
 * test_dataset.c - representative data sets (model/dataset.h): TensorProto
 * to and from tensors (tensor_proto.c); TFRecord files of
 * RepresentativeDataSample records as TensorFlow writes them, read
 * against a signature, and written by ag.h's ag_dataset_writer_* and
 * ag_representative_dataset_save (dataset.c).
 */
#include "test_util.h"

#include "dataset.h"
#include "tfrecord.h"

#include <fcntl.h>
#include <unistd.h>

TU_GROUP_IN_TEMP_DIR("ag-dataset")

/* A TFRecord file of the given records. */
static void write_records(const char *path, const unsigned char *const *recs, const size_t *n,
                          int count)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < count; i++)
        assert_true(tfr_write(f, recs[i], n[i]));
    fclose(f);
}

/* A RepresentativeDataSample as TensorFlow serializes it, byte by byte:
 *   tensor_proto_inputs { key: "x" value { dtype: DT_FLOAT
 *       version_number: 0  tensor_shape { dim { size: 2 } }
 *       float_val: [1.5, -2] (packed) } }
 *   tensor_proto_inputs { key: "y" value { dtype: DT_INT32
 *       tensor_shape { }  int_val: 7 (not packed) } }
 *   and field 15 = 1, which RepresentativeDataSample lacks (skipped). */
static const unsigned char tf_sample[] = {
    0x12, 0x19,                   /* field 2 (tensor_proto_inputs), 25 bytes: an entry */
    0x0A, 0x01, 'x',              /*   key (1): "x" */
    0x12, 0x14,                   /*   value (2): a TensorProto of 20 bytes */
    0x08, 0x01,                   /*     dtype (1): DT_FLOAT */
    0x18, 0x00,                   /*     version_number (3): 0 */
    0x12, 0x04,                   /*     tensor_shape (2), 4 bytes */
    0x12, 0x02, 0x08, 0x02,       /*       dim (2) { size (1): 2 } */
    0x2A, 0x08,                   /*     float_val (5), packed, 8 bytes */
    0x00, 0x00, 0xC0, 0x3F,       /*       1.5f */
    0x00, 0x00, 0x00, 0xC0,       /*       -2.0f */
    0x12, 0x0B,                   /* field 2, 11 bytes: an entry */
    0x0A, 0x01, 'y',              /*   key: "y" */
    0x12, 0x06,                   /*   value: 6 bytes */
    0x08, 0x03,                   /*     dtype: DT_INT32 */
    0x12, 0x00,                   /*     tensor_shape: {} (a scalar) */
    0x38, 0x07,                   /*     int_val (7), one varint: 7 */
    0x78, 0x01,                   /* field 15, a varint: unknown, skipped */
};

static const ag_tensor_spec xy_specs[] = {
    {"y", AG_I32, {0, {0}}},
    {"x", AG_F32, {1, {-1}}},
};
static const ag_signature_def xy_sig = {"serving_default", 2, 0, xy_specs, NULL};

/* Reads path expecting success. */
static void read_ok(const char *path, const ag_signature_def *sig, sm_dataset *ds)
{
    char err[1024];
    bool ok = sm_dataset_read(path, sig, ds, err, sizeof err);
    if (!ok)
        print_message("%s\n", err);
    assert_true(ok);
}

static void test_sample_as_tensorflow_writes_it(void **state)
{
    (void)state;
    const unsigned char *recs[] = {tf_sample, tf_sample};
    size_t n[] = {sizeof tf_sample, sizeof tf_sample};
    write_records("tf.tfrecord", recs, n, 2);
    sm_dataset ds;
    read_ok("tf.tfrecord", NULL, &ds); /* the file's order: x, y */
    assert_int_equal(ds.n_samples, 2);
    assert_int_equal(ds.samples[1].n_inputs, 2);
    assert_string_equal(ds.samples[1].names[0], "x");
    ag_tensor x = ds.samples[1].tensors[0], y = ds.samples[1].tensors[1];
    assert_int_equal(ag_dtype_of(x), AG_F32);
    assert_int_equal(ag_num_elements(x), 2);
    assert_true(ag_get_f32(x, 0) == 1.5f && ag_get_f32(x, 1) == -2.0f);
    assert_int_equal(ag_dtype_of(y), AG_I32);
    assert_int_equal(ag_rank(y), 0);
    assert_int_equal(ag_get_i32(y, 0), 7);
    sm_dataset_free(&ds);

    read_ok("tf.tfrecord", &xy_sig, &ds); /* the signature's order: y, x */
    assert_string_equal(ds.samples[0].names[0], "y");
    assert_string_equal(ds.samples[0].names[1], "x");
    assert_int_equal(ag_get_i32(ds.samples[0].tensors[0], 0), 7);
    sm_dataset_free(&ds);
}

/* ----------------------------------------------------------- TensorProto */

/* A TensorProto: dtype, a shape of `rank` dims, then `rest` verbatim. */
static size_t tensor_proto(unsigned char *out, int dtype, int rank, const int *dims,
                           const unsigned char *rest, size_t n_rest)
{
    pw_buf b = {0}, shape = {0};
    pw_put_varint_field(&b, 1, (uint64_t)dtype);
    for (int i = 0; i < rank; i++) {
        unsigned char dim[12];
        pw_buf d = {0};
        pw_put_varint_field(&d, 1, (uint64_t)(int64_t)dims[i]);
        memcpy(dim, d.data, d.len);
        pw_put_bytes_field(&shape, 2, dim, d.len);
        pw_buf_free(&d);
    }
    pw_put_bytes_field(&b, 2, shape.data, shape.len);
    pw_put_raw(&b, rest, n_rest);
    memcpy(out, b.data, b.len);
    size_t n = b.len;
    pw_buf_free(&b);
    pw_buf_free(&shape);
    return n;
}

static ag_tensor decode(int dtype, int rank, const int *dims, const unsigned char *rest,
                        size_t n_rest, char *err)
{
    unsigned char buf[256];
    size_t n = tensor_proto(buf, dtype, rank, dims, rest, n_rest);
    return sm_tensor_proto_decode(buf, n, err, 256);
}

static void test_typed_values_and_broadcast(void **state)
{
    (void)state;
    char err[256];
    int d3[] = {3}, d2x2[] = {2, 2};
    /* one float_val fills f32[3] (TensorFlow's rule: the last value repeats) */
    static const unsigned char one_float[] = {0x2D, 0x00, 0x00, 0x20, 0x40}; /* 2.5f */
    ag_tensor t = decode(1, 1, d3, one_float, sizeof one_float, err);
    assert_int_equal(ag_num_elements(t), 3);
    assert_true(ag_get_f32(t, 2) == 2.5f);
    /* int_val 4, 5 not packed for i32[2,2]: 4, 5, 5, 5 */
    static const unsigned char ints[] = {0x38, 0x04, 0x38, 0x05};
    t = decode(3, 2, d2x2, ints, sizeof ints, err);
    assert_int_equal(ag_get_i32(t, 0), 4);
    assert_int_equal(ag_get_i32(t, 3), 5);
    /* int64_val -3, packed (ten bytes) */
    static const unsigned char i64[] = {0x52, 0x0A, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF,
                                        0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    t = decode(9, 1, d3, i64, sizeof i64, err);
    assert_int_equal(ag_dtype_of(t), AG_I64);
    assert_int_equal(ag_get_i64(t, 1), -3);
    /* bool_val true, false, 2 (any nonzero is true) */
    static const unsigned char bools[] = {0x5A, 0x03, 0x01, 0x00, 0x02};
    t = decode(10, 1, d3, bools, sizeof bools, err);
    assert_int_equal(ag_dtype_of(t), AG_BOOL);
    assert_int_equal(((const unsigned char *)ag_data(t))[2], 1);
    /* half_val holds bfloat16's bits: 0x3FC0 is 1.5 */
    static const unsigned char bf16[] = {0x68, 0xC0, 0x7F};
    t = decode(14, 1, d3, bf16, sizeof bf16, err);
    assert_int_equal(ag_dtype_of(t), AG_BF16);
    assert_true(ag_get_f64(t, 1) == 1.5);
    /* double_val 0.5 */
    static const unsigned char dbl[] = {0x31, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F};
    t = decode(2, 0, NULL, dbl, sizeof dbl, err);
    assert_true(ag_get_f64(t, 0) == 0.5);
    /* no values: zeros; a float_val beside DT_INT32 is not its field */
    t = decode(3, 1, d3, one_float, sizeof one_float, err);
    assert_int_equal(ag_get_i32(t, 2), 0);
}

static void test_tensor_content(void **state)
{
    (void)state;
    char err[256];
    int d2[] = {2};
    /* tensor_content (4): two little-endian int32, 1 and -1 */
    static const unsigned char content[] = {0x22, 0x08, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
    ag_tensor t = decode(3, 1, d2, content, sizeof content, err);
    assert_int_equal(ag_get_i32(t, 1), -1);
    int d3[] = {3};
    t = decode(3, 1, d3, content, sizeof content, err);
    assert_int_equal(t.id, 0);
    assert_string_equal(err, "its tensor_content holds 8 bytes where its shape needs 12");
}

static void expect_refused(int dtype, int rank, const int *dims, const unsigned char *rest,
                           size_t n_rest, const char *want)
{
    char err[256];
    ag_tensor t = decode(dtype, rank, dims, rest, n_rest, err);
    print_message("%s\n", err);
    assert_int_equal(t.id, 0);
    assert_non_null(strstr(err, want));
}

static void test_tensor_proto_refused(void **state)
{
    (void)state;
    int d1[] = {1}, unknown[] = {-1}, huge[] = {1 << 30, 1 << 30};
    static const unsigned char two[] = {0x38, 0x01, 0x38, 0x02};
    expect_refused(3, 1, d1, two, sizeof two, "it has 2 values where its shape holds 1");
    expect_refused(3, 1, unknown, NULL, 0, "its shape has an unknown dimension");
    expect_refused(1, 2, huge, NULL, 0, "it is larger than 2 GiB");
    expect_refused(4, 1, d1, NULL, 0, "its dtype DT_UINT8 has no agc dtype yet");
    expect_refused(7, 1, d1, NULL, 0, "its dtype, DataType 7, is not one agc reads"); /* string */
    static const unsigned char no_dtype[] = {0x22, 0x00};
    char err[256];
    assert_int_equal(sm_tensor_proto_decode(no_dtype, sizeof no_dtype, err, sizeof err).id, 0);
    assert_string_equal(err, "it has no dtype");
    static const unsigned char cut[] = {0x22, 0x09, 1};
    expect_refused(3, 1, d1, cut, sizeof cut, "a length runs past the end of the message");
    static const unsigned char unknown_rank[] = {0x12, 0x02, 0x18, 0x01};
    expect_refused(1, 0, NULL, unknown_rank, sizeof unknown_rank, "an unknown rank");
}

static void test_tensor_proto_round_trip(void **state)
{
    (void)state;
    ag_dtype dts[] = {AG_F32, AG_F64, AG_BF16, AG_I32, AG_I64, AG_BOOL, AG_I8};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        ag_tensor t = ag_cast(ag_range(0, 6, 1), dts[i]);
        t = ag_reshape(t, AG_SHAPE(2, 3));
        pw_buf b = {0};
        sm_tensor_proto_encode(&b, t);
        char err[256];
        ag_tensor u = sm_tensor_proto_decode(b.data, b.len, err, sizeof err);
        pw_buf_free(&b);
        assert_int_equal(ag_dtype_of(u), dts[i]);
        assert_true(ag_shape_equal(ag_shape_get(u), AG_SHAPE(2, 3)));
        for (int k = 0; k < 6; k++)
            assert_true(ag_get_f64(u, k) == ag_get_f64(t, k));
    }
}

/* ---------------------------------------------------------- data sets */

/* What fn's run writes on stderr. */
static char *stderr_of(void (*fn)(void *), void *ctx)
{
    fflush(stderr);
    int saved = dup(2), fd = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    fn(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen("stderr.txt", "r");
    char *text = calloc(1, 4096);
    size_t n = fread(text, 1, 4095, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* n samples of x (f32[2]) and y (i32[]) through the writer. */
static void write_samples(void *ctx)
{
    int n = *(int *)ctx;
    ag_dataset_writer *w = ag_dataset_writer_open("w.tfrecord");
    assert_non_null(w);
    for (int i = 0; i < n; i++) {
        float xs[2] = {(float)i, -(float)i};
        ag_named_tensor in[] = {{"x", ag_from_data(AG_F32, AG_SHAPE(2), xs)},
                                {"y", ag_scalar_i32(i)}};
        assert_true(ag_dataset_writer_add(w, in, 2));
    }
    assert_true(ag_dataset_writer_close(w));
}

static void test_writer_round_trip_and_warning(void **state)
{
    (void)state;
    int n = 3;
    char *warned = stderr_of(write_samples, &n);
    assert_non_null(strstr(warned, "warning: w.tfrecord: 3 samples; the converter guide "
                                   "recommends more than 200 representative samples"));
    free(warned);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "w.tfrecord.tmp-%ld", (long)getpid());
    assert_int_equal(access(tmp, F_OK), -1); /* renamed into place */
    sm_dataset ds;
    read_ok("w.tfrecord", &xy_sig, &ds);
    assert_int_equal(ds.n_samples, 3);
    assert_int_equal(ag_get_i32(ds.samples[2].tensors[0], 0), 2);
    assert_true(ag_get_f32(ds.samples[2].tensors[1], 1) == -2.0f);
    sm_dataset_free(&ds);
    n = 200;
    warned = stderr_of(write_samples, &n);
    assert_string_equal(warned, "");
    free(warned);
}

static void test_save_all_at_once(void **state)
{
    (void)state;
    const char *names[] = {"y", "x"};
    float x0[2] = {1, 2}, x1[2] = {3, 4};
    ag_tensor t[] = {ag_scalar_i32(10), ag_from_data(AG_F32, AG_SHAPE(2), x0),
                     ag_scalar_i32(11), ag_from_data(AG_F32, AG_SHAPE(2), x1)};
    assert_true(ag_representative_dataset_save("all.tfrecord", 2, 2, names, t));
    sm_dataset ds;
    read_ok("all.tfrecord", &xy_sig, &ds);
    assert_int_equal(ds.n_samples, 2);
    assert_int_equal(ag_get_i32(ds.samples[1].tensors[0], 0), 11);
    assert_true(ag_get_f32(ds.samples[1].tensors[1], 0) == 3.0f);
    sm_dataset_free(&ds);
}

static void test_writer_refuses_bad_inputs(void **state)
{
    (void)state;
    ag_dataset_writer *w = ag_dataset_writer_open("bad.tfrecord");
    ag_named_tensor twice[] = {{"x", ag_scalar_f32(1)}, {"x", ag_scalar_f32(2)}};
    assert_false(ag_dataset_writer_add(w, twice, 2));
    assert_non_null(strstr(ag_last_error(), "input 'x' is given twice"));
    ag_named_tensor none[] = {{"x", (ag_tensor){0, 0}}};
    assert_false(ag_dataset_writer_add(w, none, 1));
    assert_non_null(strstr(ag_last_error(), "input 0 is an error tensor or no tensor"));
    assert_false(ag_dataset_writer_close(w)); /* a failed add: nothing kept */
    assert_int_equal(access("bad.tfrecord", F_OK), -1);
    assert_null(ag_dataset_writer_open("no/such/dir/d.tfrecord"));
    assert_non_null(strstr(ag_last_error(), "cannot write the data set 'no/such/dir/d.tfrecord'"));
}

/* One sample made by the writer from these inputs, as w.tfrecord. */
static void write_one(const ag_named_tensor *in, int n)
{
    ag_dataset_writer *w = ag_dataset_writer_open("one.tfrecord");
    assert_true(ag_dataset_writer_add(w, in, n));
    assert_true(ag_dataset_writer_add(w, in, n));
    assert_true(ag_dataset_writer_close(w));
}

static void expect_read_error(const char *want)
{
    sm_dataset ds;
    char err[1024];
    assert_false(sm_dataset_read("one.tfrecord", &xy_sig, &ds, err, sizeof err));
    print_message("%s\n", err);
    assert_string_equal(err, want);
    assert_int_equal(ds.n_samples, 0);
}

static void test_samples_checked_against_the_signature(void **state)
{
    (void)state;
    float xs[3] = {1, 2, 3};
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2), xs), y = ag_scalar_i32(1);
    ag_named_tensor missing[] = {{"x", x}};
    write_one(missing, 1);
    expect_read_error("one.tfrecord: record 0: input 'y' of the signature 'serving_default' "
                      "is missing");
    ag_named_tensor extra[] = {{"x", x}, {"y", y}, {"z", y}};
    write_one(extra, 3);
    expect_read_error("one.tfrecord: record 0: the signature 'serving_default' has no input "
                      "'z' (its inputs: y, x)");
    ag_named_tensor dtype[] = {{"x", x}, {"y", ag_scalar_i64(1)}};
    write_one(dtype, 2);
    expect_read_error("one.tfrecord: record 0: input 'y' is i64[], but the signature "
                      "'serving_default' takes i32[] (a wrong dtype)");
    ag_named_tensor shape[] = {{"x", ag_from_data(AG_F32, AG_SHAPE(3, 1), xs)}, {"y", y}};
    write_one(shape, 2);
    expect_read_error("one.tfrecord: record 0: input 'x' is f32[3,1], but the signature "
                      "'serving_default' takes f32[?] (a wrong shape)");
}

static void test_bad_record_named_with_its_number(void **state)
{
    (void)state;
    /* record 1's x has two float_val (one field each) where its shape
     * holds one value */
    static const unsigned char rec[] = {
        0x12, 0x17, 0x0A, 0x01, 'x', 0x12, 0x12,        /* entry "x", value of 18 bytes */
        0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x01, /* DT_FLOAT, [1] */
        0x2D, 0x00, 0x00, 0x80, 0x3F,                   /* float_val 1.0f */
        0x2D, 0x00, 0x00, 0x80, 0x3F,                   /* float_val 1.0f */
    };
    const unsigned char *recs[] = {tf_sample, rec};
    size_t n[] = {sizeof tf_sample, sizeof rec};
    write_records("one.tfrecord", recs, n, 2);
    sm_dataset ds;
    char err[1024];
    assert_false(sm_dataset_read("one.tfrecord", NULL, &ds, err, sizeof err));
    assert_string_equal(err, "one.tfrecord: record 1: input 'x': it has 2 values where its "
                             "shape holds 1");
    /* an empty file: nothing to calibrate on */
    write_records("one.tfrecord", NULL, NULL, 0);
    expect_read_error("one.tfrecord: the data set holds no samples");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_sample_as_tensorflow_writes_it),
        TU_TEST(test_typed_values_and_broadcast),
        TU_TEST(test_tensor_content),
        TU_TEST(test_tensor_proto_refused),
        TU_TEST(test_tensor_proto_round_trip),
        TU_TEST(test_writer_round_trip_and_warning),
        TU_TEST(test_save_all_at_once),
        TU_TEST(test_writer_refuses_bad_inputs),
        TU_TEST(test_samples_checked_against_the_signature),
        TU_TEST(test_bad_record_named_with_its_number),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
