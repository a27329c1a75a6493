/*
 * file_read.c - reading a file users name, suspiciously (files.h).
 *
 * open() of a FIFO waits for a writer, and a device (/dev/zero,
 * /dev/urandom) never ends: a reader that trusts a path blocks forever or
 * grows until the allocator gives up. So the file is opened without
 * blocking (O_NONBLOCK), must be a regular file (fstat), and is measured
 * before it is read: a size above the caller's bound is refused without
 * reading a byte (a sparse file of gigabytes costs nothing).
 */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "cannot read WHAT 'PATH': why", or "PATH: why" without `what`, into
 * err; -1, for returning. */
static int refuse(const char *path, const char *what, char *err, size_t errlen,
                  const char *why)
{
    if (what)
        snprintf(err, errlen, "cannot read %s '%s': %s", what, path, why);
    else
        snprintf(err, errlen, "%s: %s", path, why);
    return -1;
}

/* A descriptor for path if it is a regular file, its size in *size; -1
 * with a message naming the file. */
static int open_regular(const char *path, const char *what, int64_t *size, char *err,
                        size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        char why[128];
        snprintf(why, sizeof why, "%s%s", what ? "" : "cannot open: ", strerror(errno));
        return refuse(path, what, err, errlen, why);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(path, what, err, errlen, "it is not a regular file (a FIFO, a device "
                                               "or a directory is never read)");
    }
    *size = (int64_t)st.st_size;
    return fd;
}

bool sf_regular_size(const char *path, const char *what, int64_t *size, char *err,
                     size_t errlen)
{
    int fd = open_regular(path, what, size, err, errlen);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* Reads up to n bytes (a file that grew since it was measured is cut
 * there; one that shrank, shorter): the count read, -1 on an error. */
static ssize_t read_all(int fd, char *buf, size_t n)
{
    size_t at = 0;
    while (at < n) {
        ssize_t got = read(fd, buf + at, n - at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        at += (size_t)got;
    }
    return (ssize_t)at;
}

char *sf_read_regular(const char *path, const char *what, size_t max, size_t *len, char *err,
                      size_t errlen)
{
    int64_t size;
    int fd = open_regular(path, what, &size, err, errlen);
    if (fd < 0)
        return NULL;
    char *buf = (uint64_t)size <= max ? malloc((size_t)size + 1) : NULL;
    if (!buf) {
        char why[96];
        snprintf(why, sizeof why, "it is larger than %zu bytes (%lld)", max, (long long)size);
        refuse(path, what, err, errlen, why);
        close(fd);
        return NULL;
    }
    ssize_t n = read_all(fd, buf, (size_t)size);
    int why = errno;
    close(fd);
    if (n < 0) {
        refuse(path, what, err, errlen, strerror(why));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}
