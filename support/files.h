/*
 * files.h - files named by users, handled with suspicion (prefix sf_).
 *
 *   file_id.c    which file a path names: by identity (device and inode,
 *                after resolving links), never by spelling, so that
 *                `./m`, `m/`, `/abs/m` and a link to m are all m, also
 *                for a path that does not exist yet
 *   file_read.c  reading a file that must be a regular one of a bounded
 *                size, without blocking on a FIFO or reading a device
 *                to its (absent) end
 */
#ifndef SF_FILES_H
#define SF_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ file_id.c */

/* Where path is relative to a directory. */
typedef enum sf_place {
    SF_APART,  /* neither the directory nor inside it */
    SF_SAME,   /* the directory itself */
    SF_INSIDE, /* in it, at any depth (path need not exist yet) */
} sf_place;

/* Where path is relative to the existing directory dir, by identity:
 * path's longest existing prefix is resolved (links, ".", ".."), and it
 * and each of its ancestors compared with dir's device and inode.
 * SF_APART when dir does not exist. */
sf_place sf_place_of(const char *path, const char *dir);

/* Whether a and b name the same file: by identity when both exist, else
 * by their resolved paths (so "x.d" and "./x.d" are the same file before
 * either is written). */
bool sf_same_file(const char *a, const char *b);

/* ---------------------------------------------------------- file_read.c */

/* The size of the regular file path, in *size; false with "cannot read
 * WHAT 'PATH': why" in err (`what`, e.g. "the device spec"; NULL: "PATH:
 * why", for callers whose messages name the file first):
 * anything but a regular file is refused without blocking (a FIFO, a
 * device, a directory). */
bool sf_regular_size(const char *path, const char *what, int64_t *size, char *err,
                     size_t errlen);

/* The whole regular file path, of at most max bytes, measured before it
 * is read; malloc'ed, NUL-terminated, its length in *len. NULL with the
 * message above: not a regular file, larger than max, or unreadable. */
char *sf_read_regular(const char *path, const char *what, size_t max, size_t *len, char *err,
                      size_t errlen);

#endif
