/*
 * cache_entry.c - the file format of the compilation cache (cache.h).
 *
 * An entry is one file, little-endian:
 *
 *   0   "AGCCACHE"          magic
 *   8   u32 format          CG_CACHE_FORMAT
 *   12  u32 n_nodes         the node table's length
 *   16  u64 key_len
 *   24  u64 object_len
 *   32  u32 crc             CRC-32 of bytes 0..32, the key and the object
 *   36  u32 0               reserved
 *   40  key, then object
 *
 * The full key is stored and compared on load: the file name is only a
 * hash of it, so a collision (or a file copied from another machine, or
 * written by another agc) is caught by the comparison, never executed.
 * The checksum catches what a crash or a bad disk leaves: a file cut
 * short, a flipped byte. Writes go to a unique temporary file in the same
 * directory, renamed over the entry: rename is atomic, so concurrent
 * writers of one entry (which write the same bytes) and readers never see
 * a mix. There is no fsync: after a power loss an entry may be empty or
 * partial, which the length and checksum reject.
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER = 40, CRC_AT = 32 };
static const char magic[8] = {'A', 'G', 'C', 'C', 'A', 'C', 'H', 'E'};
/* Larger files are not entries this cache wrote (objects are MBs). */
static const uint64_t max_entry = (uint64_t)1 << 31;


/* ------------------------------------------------------------ header */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t entry_crc(const unsigned char *header, const char *key, size_t key_len,
                          const char *obj, size_t obj_len)
{
    uint32_t crc = rt_crc32(0, header, CRC_AT);
    crc = rt_crc32(crc, key, key_len);
    return rt_crc32(crc, obj, obj_len);
}

static void make_header(unsigned char *h, const cg_cache_entry *e)
{
    memset(h, 0, HEADER);
    memcpy(h, magic, sizeof magic);
    put_u32(h + 8, CG_CACHE_FORMAT);
    put_u32(h + 12, e->n_nodes);
    put_u64(h + 16, e->key_len);
    put_u64(h + 24, e->object_len);
    put_u32(h + CRC_AT, entry_crc(h, e->key, e->key_len, e->object, e->object_len));
}

/* ----------------------------------------------------------- writing */

static bool write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

/* A name no other writer uses: this process's id and a counter (threads
 * of one process differ by the counter). */
static void temp_name(const char *path, char *buf, size_t n)
{
    static atomic_long counter;
    snprintf(buf, n, "%s.tmp.%ld.%ld", path, (long)getpid(), atomic_fetch_add(&counter, 1));
}

bool cg_cache_write(const char *path, const cg_cache_entry *e, char *err, size_t errlen)
{
    char tmp[4200];
    temp_name(path, tmp, sizeof tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return false;
    }
    unsigned char h[HEADER];
    make_header(h, e);
    bool ok = write_all(fd, h, sizeof h) && write_all(fd, e->key, e->key_len) &&
              write_all(fd, e->object, e->object_len);
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return true;
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(ok ? errno : saved));
    unlink(tmp);
    return false;
}

/* ----------------------------------------------------------- reading */

/* The whole file, or NULL (why empty: there is none). */
static unsigned char *read_file(const char *path, size_t *len, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT && errno != ENOTDIR) /* else no entry, or no directory */
            snprintf(why, whylen, "cannot be read: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > max_entry) {
        snprintf(why, whylen, "is not a cache entry (size)");
    } else {
        *len = (size_t)st.st_size;
        buf = rt_xmalloc(*len ? *len : 1);
        size_t got = 0;
        while (got < *len) {
            ssize_t k = read(fd, buf + got, *len - got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        *len = got; /* a file cut while reading is checked as truncated */
    }
    close(fd);
    return buf;
}

/* The first line where two keys differ, to say what changed (another CPU,
 * another version) rather than only that something did. */
static void first_difference(const char *a, size_t alen, const char *b, size_t blen, char *out,
                             size_t n)
{
    size_t i = 0, line = 0;
    while (i < alen && i < blen && a[i] == b[i])
        if (a[i++] == '\n')
            line = i;
    size_t ae = line, be = line;
    while (ae < alen && a[ae] != '\n' && ae - line < 60)
        ae++;
    while (be < blen && b[be] != '\n' && be - line < 60)
        be++;
    snprintf(out, n, "'%.*s' where this process has '%.*s'", (int)(ae - line), a + line,
             (int)(be - line), b + line);
}

static bool check_entry(const unsigned char *buf, size_t len, const char *key, size_t key_len,
                        char *why, size_t whylen)
{
    if (len < HEADER || memcmp(buf, magic, sizeof magic) != 0) {
        snprintf(why, whylen, len < HEADER ? "is truncated (%zu bytes)" : "is not a cache entry",
                 len);
        return false;
    }
    uint32_t format = get_u32(buf + 8);
    if (format != CG_CACHE_FORMAT) {
        snprintf(why, whylen, "has format version %u, this agc writes %d", format,
                 CG_CACHE_FORMAT);
        return false;
    }
    uint64_t klen = get_u64(buf + 16), olen = get_u64(buf + 24);
    if (klen > max_entry || olen > max_entry || HEADER + klen + olen != len) {
        snprintf(why, whylen, "is truncated or overlong (%zu bytes, header says %llu)", len,
                 (unsigned long long)(HEADER + klen + olen));
        return false;
    }
    const char *k = (const char *)buf + HEADER;
    if (entry_crc(buf, k, klen, k + klen, olen) != get_u32(buf + CRC_AT)) {
        snprintf(why, whylen, "is corrupt (checksum mismatch)");
        return false;
    }
    if (klen != key_len || memcmp(k, key, key_len) != 0) {
        char d[200];
        first_difference(k, klen, key, key_len, d, sizeof d);
        snprintf(why, whylen, "was written for another key: %s", d);
        return false;
    }
    return true;
}

bool cg_cache_read(const char *path, const char *key, size_t key_len, cg_cache_entry *e,
                   char *why, size_t whylen)
{
    memset(e, 0, sizeof *e);
    why[0] = '\0';
    size_t len = 0;
    unsigned char *buf = read_file(path, &len, why, whylen);
    if (!buf)
        return false;
    if (!check_entry(buf, len, key, key_len, why, whylen)) {
        free(buf);
        return false;
    }
    e->key_len = get_u64(buf + 16);
    e->object_len = get_u64(buf + 24);
    e->n_nodes = get_u32(buf + 12);
    e->key = rt_xmalloc(e->key_len + 1);
    memcpy(e->key, buf + HEADER, e->key_len);
    e->key[e->key_len] = '\0';
    e->object = rt_xmalloc(e->object_len ? e->object_len : 1);
    memcpy(e->object, buf + HEADER + e->key_len, e->object_len);
    free(buf);
    return true;
}

void cg_cache_entry_free(cg_cache_entry *e)
{
    free(e->key);
    free(e->object);
    memset(e, 0, sizeof *e);
}
