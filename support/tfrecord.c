/*
 * tfrecord.c - TFRecord files, read and written (tfrecord.h).
 *
 * Nothing in a file is trusted: the file must be a regular one (a FIFO
 * or a device is refused without blocking), it is measured first, and a
 * record's length must fit in what is left of it before a byte is
 * allocated, so a damaged length of 2^60 costs nothing. Both CRCs of
 * every record are checked. Each fault names the file and the record.
 */
#include "tfrecord.h"

#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER = 12, FOOTER = 4 }; /* length + its CRC; the data's CRC */

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

bool tfr_write(FILE *f, const void *data, size_t n)
{
    unsigned char head[HEADER], foot[FOOTER];
    for (int i = 0; i < 8; i++)
        head[i] = (unsigned char)((uint64_t)n >> 8 * i);
    put_le32(head + 8, tfr_mask(tfr_crc32c(0, head, 8)));
    put_le32(foot, tfr_mask(tfr_crc32c(0, data, n)));
    return fwrite(head, 1, HEADER, f) == HEADER && fwrite(data, 1, n, f) == n &&
           fwrite(foot, 1, FOOTER, f) == FOOTER;
}

/* ---------------------------------------------------------------- reader */

struct tfr_reader {
    FILE *f;
    char *path;
    int64_t size, at; /* the file's size when opened; bytes consumed */
    int64_t record;   /* the number of the record being read */
    char *buf;
    size_t cap;
};

tfr_reader *tfr_open(const char *path, const char *what, char *err, size_t errlen)
{
    int64_t size;
    if (!sf_regular_size(path, what, &size, err, errlen))
        return NULL;
    /* O_NONBLOCK: should the path have become a FIFO since it was
     * measured, reads fail instead of waiting for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot read %s '%s': %s", what ? what : "the file", path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    tfr_reader *r = calloc(1, sizeof *r);
    r->f = f;
    r->path = strdup(path);
    r->size = size;
    r->record = -1;
    return r;
}

void tfr_close(tfr_reader *r)
{
    if (!r)
        return;
    fclose(r->f);
    free(r->path);
    free(r->buf);
    free(r);
}

int64_t tfr_record_number(const tfr_reader *r) { return r->record; }

/* "PATH: record N: fault" into err; -1. */
__attribute__((format(printf, 4, 5))) static int fault(const tfr_reader *r, char *err,
                                                       size_t errlen, const char *fmt, ...)
{
    int n = snprintf(err, errlen, "%s: record %lld: ", r->path, (long long)r->record);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Reads exactly n bytes; false on a short read (a file that shrank or an
 * error). */
static bool read_exactly(tfr_reader *r, void *p, size_t n)
{
    size_t got = fread(p, 1, n, r->f);
    r->at += (int64_t)got;
    return got == n;
}

/* The record's length from its header, its CRC checked: -1 after
 * reporting, 0 at a clean end of the file, 1 with the length in *len. */
static int read_length(tfr_reader *r, uint64_t *len, char *err, size_t errlen)
{
    unsigned char head[HEADER];
    size_t got = fread(head, 1, HEADER, r->f);
    r->at += (int64_t)got;
    if (got == 0 && !ferror(r->f))
        return 0;
    if (got < HEADER)
        return fault(r, err, errlen, "truncated: %zu of the header's %d bytes (the length "
                     "and its CRC) are in the file", got, HEADER);
    if (tfr_mask(tfr_crc32c(0, head, 8)) != get_le32(head + 8))
        return fault(r, err, errlen, "the CRC of the length does not match: the file is "
                     "damaged, or not a TFRecord file");
    *len = 0;
    for (int i = 7; i >= 0; i--)
        *len = *len << 8 | head[i];
    return 1;
}

/* Room for n bytes in r->buf (n is already bounded by the file's size). */
static void reserve(tfr_reader *r, size_t n)
{
    if (n <= r->cap && r->buf)
        return;
    free(r->buf);
    r->cap = n ? n : 1;
    r->buf = malloc(r->cap);
}

int tfr_next(tfr_reader *r, const char **data, size_t *n, char *err, size_t errlen)
{
    r->record++;
    uint64_t len = 0;
    int got = read_length(r, &len, err, errlen);
    if (got <= 0)
        return got;
    int64_t left = r->size - r->at;
    if (left < FOOTER || len > (uint64_t)(left - FOOTER))
        return fault(r, err, errlen, "its length, %llu bytes, runs past the end of the file "
                     "(%lld bytes are left after its header): the file is truncated or "
                     "damaged", (unsigned long long)len, (long long)left);
    reserve(r, (size_t)len);
    unsigned char foot[FOOTER];
    if (!read_exactly(r, r->buf, (size_t)len) || !read_exactly(r, foot, FOOTER))
        return fault(r, err, errlen, "truncated: the file ended inside the record");
    if (tfr_mask(tfr_crc32c(0, r->buf, (size_t)len)) != get_le32(foot))
        return fault(r, err, errlen, "the CRC of the data does not match: the file is "
                     "damaged");
    *data = r->buf;
    *n = (size_t)len;
    return 1;
}
