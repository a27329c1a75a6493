/*
 * test_tfrecord.c - TFRecord files and what they hold, below any tensor
 * (support/): CRC-32C and TFRecord's mask (crc32c.c), records read and
 * written with every CRC checked and every length bounded (tfrecord.c),
 * and the protobuf wire format (protowire.c).
 */
#include "test_util.h"

#include "protowire.h"
#include "tfrecord.h"

#include <sys/stat.h>
#include <unistd.h>

TU_GROUP_IN_TEMP_DIR("ag-tfrecord")

/* ---------------------------------------------------------------- crc32c */

static void test_crc32c_standard_values(void **state)
{
    (void)state;
    /* The check value of the CRC catalogue, and RFC 3720's (iSCSI) vectors. */
    assert_int_equal(tfr_crc32c(0, "123456789", 9), 0xE3069283u);
    unsigned char buf[32];
    memset(buf, 0, sizeof buf);
    assert_int_equal(tfr_crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xFF, sizeof buf);
    assert_int_equal(tfr_crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    assert_int_equal(tfr_crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    assert_int_equal(tfr_crc32c(0, buf, 32), 0x113FDB5Cu);
    assert_int_equal(tfr_crc32c(0, "", 0), 0u);
}

static void test_crc32c_extends_at_any_split_and_alignment(void **state)
{
    (void)state;
    /* Slicing-by-8 takes eight bytes at a time: every split point and
     * every start offset must give the bytewise answer. */
    unsigned char buf[64 + 7];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    for (int off = 0; off < 8; off++) {
        uint32_t whole = tfr_crc32c(0, buf + off, 64);
        for (size_t cut = 0; cut <= 64; cut++)
            assert_int_equal(tfr_crc32c(tfr_crc32c(0, buf + off, cut), buf + off + cut, 64 - cut),
                             whole);
    }
}

static void test_tfrecord_mask(void **state)
{
    (void)state;
    /* ((crc >> 15) | (crc << 17)) + 0xa282ead8, worked by hand from the
     * definition, and the masked CRCs TensorFlow writes around a record
     * of 5 bytes, "hello": of its length 5 (8 bytes LE) and of its data. */
    assert_int_equal(tfr_mask(0xE3069283u), 0xC78AB0E5u);
    assert_int_equal(tfr_mask(0), 0xA282EAD8u);
    unsigned char len5[8] = {5};
    assert_int_equal(tfr_mask(tfr_crc32c(0, len5, 8)), 0x3E04B2EAu);
    assert_int_equal(tfr_mask(tfr_crc32c(0, "hello", 5)), 0x191C1FBBu);
    for (uint32_t c = 1; c < 0xF0000000u; c += 0x0FEDCBA9u) {
        assert_int_equal(tfr_unmask(tfr_mask(c)), c);
        assert_int_not_equal(tfr_mask(c), c);
    }
}

/* --------------------------------------------------------------- records */

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* The whole file, malloc'ed. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc(1 << 16);
    *n = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static void write_records(const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_true(tfr_write(f, "hello", 5));
    assert_true(tfr_write(f, "", 0));
    char big[3000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i % 251);
    assert_true(tfr_write(f, big, sizeof big));
    fclose(f);
}

static void test_tfrecord_round_trip(void **state)
{
    (void)state;
    write_records("r.tfrecord");
    /* The first record byte by byte, as TensorFlow lays it out. */
    size_t n;
    unsigned char *bytes = slurp("r.tfrecord", &n);
    assert_int_equal(n, (12 + 5 + 4) + (12 + 0 + 4) + (12 + 3000 + 4));
    static const unsigned char first[] = {5, 0, 0, 0, 0, 0, 0, 0, 0xEA, 0xB2, 0x04, 0x3E,
                                          'h', 'e', 'l', 'l', 'o', 0xBB, 0x1F, 0x1C, 0x19};
    assert_memory_equal(bytes, first, sizeof first);
    free(bytes);

    char err[512];
    tfr_reader *r = tfr_open("r.tfrecord", "the data set", err, sizeof err);
    assert_non_null(r);
    const char *data;
    assert_int_equal(tfr_next(r, &data, &n, err, sizeof err), 1);
    assert_int_equal(n, 5);
    assert_memory_equal(data, "hello", 5);
    assert_int_equal(tfr_record_number(r), 0);
    assert_int_equal(tfr_next(r, &data, &n, err, sizeof err), 1);
    assert_int_equal(n, 0);
    assert_int_equal(tfr_next(r, &data, &n, err, sizeof err), 1);
    assert_int_equal(n, 3000);
    assert_int_equal((unsigned char)data[2999], 2999 % 251);
    assert_int_equal(tfr_next(r, &data, &n, err, sizeof err), 0);
    tfr_close(r);
}

/* Reads path to its end: the first error's message in err, or "". */
static void read_to_end(const char *path, char *err, size_t errlen)
{
    err[0] = '\0';
    tfr_reader *r = tfr_open(path, "the data set", err, errlen);
    if (!r)
        return;
    const char *data;
    size_t n;
    int got;
    while ((got = tfr_next(r, &data, &n, err, errlen)) > 0)
        ;
    if (got == 0)
        err[0] = '\0';
    tfr_close(r);
}

static void expect_fault(const unsigned char *bytes, size_t n, const char *want)
{
    char err[512];
    write_file("bad.tfrecord", bytes, n);
    read_to_end("bad.tfrecord", err, sizeof err);
    print_message("%s\n", err);
    assert_non_null(strstr(err, want));
}

static void test_tfrecord_corrupt_and_truncated(void **state)
{
    (void)state;
    write_records("good.tfrecord");
    size_t n;
    unsigned char *b = slurp("good.tfrecord", &n);
    const size_t second = 12 + 5 + 4, third = second + 16;

    /* a flipped bit in the data of record 2, in its data's CRC, in the
     * length of record 0 */
    b[third + 12 + 100] ^= 4;
    expect_fault(b, n, "bad.tfrecord: record 2: the CRC of the data does not match");
    b[third + 12 + 100] ^= 4;
    b[second - 1] ^= 0x80;
    expect_fault(b, n, "bad.tfrecord: record 0: the CRC of the data does not match");
    b[second - 1] ^= 0x80;
    b[0] ^= 1;
    expect_fault(b, n, "bad.tfrecord: record 0: the CRC of the length does not match");
    b[0] ^= 1;

    /* cut inside a header, inside the data, before the last CRC */
    expect_fault(b, second + 7, "record 1: truncated: 7 of the header's 12 bytes");
    expect_fault(b, third + 12 + 10, "record 2: its length, 3000 bytes, runs past the end of "
                                     "the file (10 bytes are left after its header)");
    expect_fault(b, n - 1, "record 2: its length, 3000 bytes, runs past the end");
    expect_fault(b, n, "");
    free(b);
}

static void test_tfrecord_length_bounded_before_allocating(void **state)
{
    (void)state;
    /* A length of 2^60 with a valid CRC: refused by the file's size, never
     * allocated. */
    unsigned char head[12] = {0, 0, 0, 0, 0, 0, 0, 0x10};
    uint32_t crc = tfr_mask(tfr_crc32c(0, head, 8));
    for (int i = 0; i < 4; i++)
        head[8 + i] = (unsigned char)(crc >> 8 * i);
    expect_fault(head, sizeof head, "record 0: its length, 1152921504606846976 bytes, runs "
                                    "past the end of the file (0 bytes are left after its header)");
}

static void test_tfrecord_only_regular_files(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(mkfifo("fifo", 0600), 0);
    assert_null(tfr_open("fifo", "the data set", err, sizeof err));
    assert_non_null(strstr(err, "cannot read the data set 'fifo': it is not a regular file"));
    assert_null(tfr_open(".", "the data set", err, sizeof err));
    assert_null(tfr_open("absent.tfrecord", "the data set", err, sizeof err));
    assert_non_null(strstr(err, "'absent.tfrecord'"));
}

/* ------------------------------------------------------------- protowire */

static void test_protowire_round_trip(void **state)
{
    (void)state;
    pw_buf b = {0};
    pw_put_varint_field(&b, 1, 300);                   /* 08 ac 02 */
    pw_put_varint_field(&b, 2, (uint64_t)(int64_t)-1); /* ten bytes */
    pw_put_fixed32_field(&b, 3, 0x3FC00000u);          /* 1.5f */
    pw_put_fixed64_field(&b, 4, 0x4000000000000000u);  /* 2.0 */
    pw_put_bytes_field(&b, 5, "abc", 3);
    uint64_t packed[] = {1, 128, 3};
    pw_put_packed_varints(&b, 6, packed, 3);
    pw_put_varint_field(&b, 100000, 7);
    static const unsigned char want_head[] = {0x08, 0xAC, 0x02, 0x10, 0xFF, 0xFF, 0xFF, 0xFF,
                                              0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    assert_memory_equal(b.data, want_head, sizeof want_head);

    pw_reader r = pw_reader_of(b.data, b.len);
    pw_field f;
    char err[256];
    pw_values vals = {0};
    uint64_t want[] = {300, UINT64_MAX, 0x3FC00000u, 0x4000000000000000u};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
        assert_int_equal(f.number, i + 1);
        assert_true(f.value == want[i]);
    }
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
    assert_int_equal(f.wire, PW_LEN);
    assert_int_equal(f.len, 3);
    assert_memory_equal(f.data, "abc", 3);
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
    assert_true(pw_append_values(&f, PW_VARINT, &vals, err, sizeof err));
    assert_int_equal(vals.n, 3);
    assert_int_equal(vals.v[1], 128);
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
    assert_int_equal(f.number, 100000);
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 0);
    free(vals.v);
    pw_buf_free(&b);
}

static void test_protowire_packed_and_unpacked_alike(void **state)
{
    (void)state;
    /* float_val (field 5) as protobuf writes it packed, then two floats
     * one field each (tag 0x2d = 5 << 3 | 5): the same three values. */
    static const unsigned char msg[] = {
        0x2A, 0x04, 0x00, 0x00, 0xC0, 0x3F,       /* packed: 1.5f */
        0x2D, 0x00, 0x00, 0x00, 0xC0,             /* -2.0f */
        0x2D, 0x00, 0x00, 0x80, 0x3F,             /* 1.0f */
    };
    pw_reader r = pw_reader_of(msg, sizeof msg);
    pw_field f;
    char err[256];
    pw_values vals = {0};
    while (pw_next(&r, &f, err, sizeof err) > 0)
        assert_true(pw_append_values(&f, PW_I32, &vals, err, sizeof err));
    assert_int_equal(vals.n, 3);
    assert_int_equal(vals.v[0], 0x3FC00000u);
    assert_int_equal(vals.v[1], 0xC0000000u);
    assert_int_equal(vals.v[2], 0x3F800000u);
    /* a varint where fixed32 values belong */
    static const unsigned char wrong[] = {0x28, 0x01};
    r = pw_reader_of(wrong, sizeof wrong);
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
    assert_false(pw_append_values(&f, PW_I32, &vals, err, sizeof err));
    assert_non_null(strstr(err, "field 5: its wire type is not the field's type"));
    /* a packed run cut inside a value */
    static const unsigned char cut[] = {0x2A, 0x03, 0x00, 0x00, 0xC0};
    r = pw_reader_of(cut, sizeof cut);
    assert_int_equal(pw_next(&r, &f, err, sizeof err), 1);
    assert_false(pw_append_values(&f, PW_I32, &vals, err, sizeof err));
    free(vals.v);
}

static void expect_malformed(const unsigned char *msg, size_t n, const char *want)
{
    pw_reader r = pw_reader_of(msg, n);
    pw_field f;
    char err[256] = "";
    int got;
    while ((got = pw_next(&r, &f, err, sizeof err)) > 0)
        ;
    print_message("%s\n", err);
    assert_int_equal(got, -1);
    assert_non_null(strstr(err, want));
}

static void test_protowire_malformed(void **state)
{
    (void)state;
    static const unsigned char long_len[] = {0x0A, 0x05, 'a', 'b'};
    expect_malformed(long_len, sizeof long_len, "a length runs past the end");
    static const unsigned char cut_varint[] = {0x08, 0x80};
    expect_malformed(cut_varint, sizeof cut_varint, "a varint is cut short");
    static const unsigned char eleven[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                           0x80, 0x80, 0x80, 0x80, 0x01};
    expect_malformed(eleven, sizeof eleven, "a varint is cut short");
    static const unsigned char group[] = {0x0B};
    expect_malformed(group, sizeof group, "a group");
    static const unsigned char field0[] = {0x00, 0x01};
    expect_malformed(field0, sizeof field0, "a field number out of range");
    static const unsigned char cut_fixed[] = {0x0D, 0x01, 0x02};
    expect_malformed(cut_fixed, sizeof cut_fixed, "a fixed-size value is cut short");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_standard_values),
        cmocka_unit_test(test_crc32c_extends_at_any_split_and_alignment),
        cmocka_unit_test(test_tfrecord_mask),
        cmocka_unit_test(test_tfrecord_round_trip),
        cmocka_unit_test(test_tfrecord_corrupt_and_truncated),
        cmocka_unit_test(test_tfrecord_length_bounded_before_allocating),
        cmocka_unit_test(test_tfrecord_only_regular_files),
        cmocka_unit_test(test_protowire_round_trip),
        cmocka_unit_test(test_protowire_packed_and_unpacked_alike),
        cmocka_unit_test(test_protowire_malformed),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
