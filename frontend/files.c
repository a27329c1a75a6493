/*
 * files.c - writing agc's outputs.
 *
 * A run's outputs (the staged C or object, a header, the -MD dependency
 * file) are written all or nothing, each the way its path asks:
 *
 *   - a regular file, or a path that does not exist yet: a temporary file
 *     in the same directory, renamed over the path once every output is
 *     ready. A failed run leaves no partial file and an existing one
 *     untouched; so does a run whose dependency file cannot be written.
 *   - a symbolic link: the same, for the file it points to (the link
 *     stays; a dangling link is written through, creating its target).
 *   - a device, a FIFO or a socket (`-o /dev/null`, `-o /dev/stdout`, a
 *     pipe): opened and written in place, after the temporaries are ready.
 *     Renaming over them would replace the device by a regular file (as
 *     root, /dev/null itself).
 *   - "-": stdout.
 */
#include "fe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum how { HOW_STDOUT, HOW_RENAME, HOW_IN_PLACE } how;

typedef struct pending {
    how how;
    const char *target; /* what is renamed over or opened */
    char *tmp;          /* HOW_RENAME: the temporary, once written */
} pending;

/* The file a symbolic link finally names, or NULL when the chain is
 * dangling (or too long). */
static const char *resolve(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return fe_strdup(buf);
    return NULL;
}

static how classify(const char *path, const char **target)
{
    *target = path;
    if (strcmp(path, "-") == 0)
        return HOW_STDOUT;
    struct stat st;
    if (lstat(path, &st) != 0)
        return HOW_RENAME; /* a new file */
    if (S_ISLNK(st.st_mode)) {
        const char *t = resolve(path);
        if (!t)
            return HOW_IN_PLACE; /* dangling: open() creates the target */
        *target = t;
        if (stat(t, &st) != 0)
            return HOW_IN_PLACE;
    }
    return S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? HOW_RENAME : HOW_IN_PLACE;
}

static bool write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

/* Writes a temporary next to p->target. */
static bool write_temporary(pending *p, const char *data, size_t len)
{
    struct stat st;
    if (stat(p->target, &st) == 0 && S_ISDIR(st.st_mode)) {
        fe_diag_plain(FE_ERROR, "cannot write '%s': it is a directory", p->target);
        return false;
    }
    char *tmp = fe_format("%s.tmpXXXXXX", p->target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fe_diag_plain(FE_ERROR, "cannot write '%s': %s", p->target, strerror(errno));
        return false;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    bool ok = write_all(fd, data, len);
    int err = errno;
    ok = close(fd) == 0 && ok;
    if (!ok) {
        fe_diag_plain(FE_ERROR, "cannot write '%s': %s", tmp, strerror(err ? err : errno));
        unlink(tmp);
        return false;
    }
    p->tmp = tmp;
    return true;
}

static bool write_in_place(const pending *p, const char *data, size_t len)
{
    if (p->how == HOW_STDOUT) {
        bool ok = fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
        if (!ok)
            fe_diag_plain(FE_ERROR, "cannot write to stdout: %s", strerror(errno));
        return ok;
    }
    int fd = open(p->target, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    bool ok = fd >= 0 && write_all(fd, data, len);
    int err = errno;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    if (!ok)
        fe_diag_plain(FE_ERROR, "cannot write '%s': %s", p->target, strerror(err));
    return ok;
}

static void discard(pending *ps, int n)
{
    for (int i = 0; i < n; i++)
        if (ps[i].tmp)
            unlink(ps[i].tmp);
}

bool fe_write_outputs(const fe_output *outs, int n)
{
    for (int i = 0; i < n; i++)
        fe_step("write %s (%zu bytes)", strcmp(outs[i].path, "-") ? outs[i].path : "stdout",
                outs[i].len);
    pending *ps = fe_alloc((size_t)(n ? n : 1) * sizeof *ps);
    for (int i = 0; i < n; i++)
        ps[i].how = classify(outs[i].path, &ps[i].target);
    /* first what can be undone: every temporary */
    for (int i = 0; i < n; i++) {
        if (ps[i].how == HOW_RENAME && !write_temporary(&ps[i], outs[i].data, outs[i].len)) {
            discard(ps, n);
            return false;
        }
    }
    for (int i = 0; i < n; i++) {
        if (ps[i].how != HOW_RENAME && !write_in_place(&ps[i], outs[i].data, outs[i].len)) {
            discard(ps, n);
            return false;
        }
    }
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (ps[i].how != HOW_RENAME)
            continue;
        if (ok && rename(ps[i].tmp, ps[i].target) == 0) {
            ps[i].tmp = NULL;
            continue;
        }
        if (ok)
            fe_diag_plain(FE_ERROR, "cannot write '%s': %s", ps[i].target, strerror(errno));
        ok = false;
    }
    discard(ps, n);
    return ok;
}

bool fe_write_file(const char *path, const char *data, size_t len)
{
    fe_output o = {path, data, len};
    return fe_write_outputs(&o, 1);
}

bool fe_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0 || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
