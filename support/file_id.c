/*
 * file_id.c - which file a path names, by identity (files.h).
 *
 * Spelling says little: `m`, `./m`, `m/`, an absolute path and a
 * symbolic link to m all name m. Two existing paths are the same file
 * when stat() gives the same device and inode. A path that does not
 * exist yet (an output about to be created) is resolved as far as it
 * exists: its longest existing prefix through realpath(), the rest
 * appended as written; the directories it would be created in are then
 * the true ones, links and ".." followed.
 */
#include "files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* path split into its parent and its last component, trailing slashes
 * dropped: "a/b/" -> "a", "b"; "b" -> ".", "b"; "/b" -> "/", "b". False
 * when there is no last component to drop ("/", ""). */
static bool split_last(const char *path, char *parent, size_t n, const char **base)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0 || (len == 1 && path[0] == '/') || len >= n)
        return false;
    memcpy(parent, path, len);
    parent[len] = '\0';
    char *slash = strrchr(parent, '/');
    *base = path + (slash ? (size_t)(slash - parent) + 1 : 0);
    if (!slash)
        snprintf(parent, n, ".");
    else
        slash[slash == parent] = '\0'; /* "/b": the parent is "/" */
    return true;
}

/* The resolved form of path in out (PATH_MAX bytes), its missing tail
 * appended as written. False when path cannot be resolved (a component
 * that is not a directory, no permission). */
static bool resolve(const char *path, char *out)
{
    if (realpath(path, out))
        return true;
    char parent[PATH_MAX];
    const char *base;
    if (errno != ENOENT || !split_last(path, parent, sizeof parent, &base))
        return false;
    size_t blen = strcspn(base, "/");
    if (!resolve(parent, out) || strlen(out) + blen + 2 > PATH_MAX)
        return false;
    if (strcmp(out, "/") != 0)
        strcat(out, "/");
    strncat(out, base, blen);
    return true;
}

static bool same_id(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

sf_place sf_place_of(const char *path, const char *dir)
{
    struct stat d, st;
    char at[PATH_MAX], up[PATH_MAX];
    const char *base;
    if (stat(dir, &d) != 0 || !resolve(path, at))
        return SF_APART;
    for (bool first = true;; first = false) {
        if (stat(at, &st) == 0 && same_id(&st, &d))
            return first ? SF_SAME : SF_INSIDE;
        if (!split_last(at, up, sizeof up, &base))
            return SF_APART;
        memcpy(at, up, sizeof at);
    }
}

bool sf_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb)
        return ea && eb && same_id(&sa, &sb);
    char ra[PATH_MAX], rb[PATH_MAX];
    return resolve(a, ra) && resolve(b, rb) && strcmp(ra, rb) == 0;
}
