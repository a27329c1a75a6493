/*
 * replace.c - putting a written model in place: what at `dir` may be
 * replaced, the atomic swap, and the leftovers of saves that died.
 *
 * A save may replace only what agc itself wrote: nothing, an empty
 * directory, or a directory whose manifest agc produced and that holds
 * nothing but the files agc writes (the manifest, variables.bin,
 * functions/NAME.ir and the converter's two files). A TensorFlow
 * SavedModel in text form also has a saved_model.pbtxt; it, and a model
 * the user put files of their own into, is refused and left alone.
 *
 * The new model is swapped with the old one in one step
 * (renameat2(RENAME_EXCHANGE)), so `dir` is the old model or the new one
 * at every instant, even if the process is killed. The old model, now at
 * the temporary name, is then removed. Where the file system cannot
 * exchange (EINVAL), the old model is moved aside and the new one renamed
 * in: then, for the instant between the two renames, `dir` is absent.
 *
 * A save killed midway leaves "<dir>.tmp-<pid>" (or "<dir>.old-<pid>"
 * from the fallback) behind; the next save next to it removes those whose
 * process is gone.
 */
#include "model.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void (*sm_write_crash_point)(const char *where);

static void crash_point(const char *where)
{
    if (sm_write_crash_point)
        sm_write_crash_point(where);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

char *sm_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = rt_xmalloc(n);
    snprintf(s, n, "%s/%s", dir, name);
    return s;
}

void sm_remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* -------------------------------------------- what agc wrote at dir */

/* The files agc writes at the top of a model directory. */
static bool agc_writes(const char *name)
{
    static const char *const names[] = {SM_MANIFEST_FILE, SM_VARIABLES_FILE, "functions",
                                        SM_REPORT_FILE, SM_CONVERTER_OPTIONS_FILE};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* Whether the manifest at path is a regular file that agc produced: its
 * producer line, within the first 4 KB (it is the second line). */
static bool manifest_by_agc(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char head[4097];
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, 4096) : -1;
    close(fd);
    if (n <= 0)
        return false;
    head[n] = 0;
    return strstr(head, "\nproducer: \"agc ") != NULL || !strncmp(head, "producer: \"agc ", 15);
}

/* The first entry of dir/sub (sub NULL: dir) that agc did not write, in
 * *odd; false when dir holds only agc's files. */
static bool foreign_entry(const char *dir, const char *sub, char *odd, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, sub ? "/" : "", sub ? sub : "");
    DIR *d = opendir(path);
    if (!d) {
        snprintf(odd, n, "%s", sub ? sub : ".");
        return true;
    }
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t len = strlen(e->d_name);
        bool ours = sub ? len > 3 && !strcmp(e->d_name + len - 3, ".ir") : agc_writes(e->d_name);
        if (!ours) {
            snprintf(odd, n, "%s%s%s", sub ? sub : "", sub ? "/" : "", e->d_name);
            found = true;
        }
    }
    closedir(d);
    if (!found && !sub) {
        struct stat st;
        snprintf(path, sizeof path, "%s/functions", dir);
        if (lstat(path, &st) == 0)
            return !S_ISDIR(st.st_mode) ? (snprintf(odd, n, "functions"), true)
                                        : foreign_entry(dir, "functions", odd, n);
    }
    return found;
}

/* A directory with a manifest: replaced only if agc wrote all of it. */
static bool may_replace_model(ag_loc loc, const char *dir, const char *manifest)
{
    if (!manifest_by_agc(manifest)) {
        rt_report(loc, "'%s' holds a %s that agc did not write (a TensorFlow SavedModel?): it "
                       "is left alone; save to a new directory", dir, SM_MANIFEST_FILE);
        return false;
    }
    char odd[512];
    if (foreign_entry(dir, NULL, odd, sizeof odd)) {
        rt_report(loc, "'%s' holds '%s', which agc did not write: the model is left alone; "
                       "move that out of it, or save to a new directory", dir, odd);
        return false;
    }
    return true;
}

bool sm_may_replace(ag_loc loc, const char *dir, bool *exists)
{
    struct stat st;
    *exists = lstat(dir, &st) == 0;
    if (!*exists)
        return true;
    char *manifest = sm_path_join(dir, SM_MANIFEST_FILE);
    bool model = S_ISDIR(st.st_mode) && lstat(manifest, &(struct stat){0}) == 0;
    bool ok = model && may_replace_model(loc, dir, manifest);
    free(manifest);
    if (model)
        return ok;
    if (S_ISDIR(st.st_mode) && rmdir(dir) == 0) {
        *exists = false; /* it was empty */
        return true;
    }
    rt_report(loc, "'%s' exists and is not a saved model: it is left alone; save to a new "
                   "directory, or remove it first", dir);
    return false;
}

/* ------------------------------------------------------------ the swap */

/* The fallback where the file system cannot exchange: old aside, new in. */
static bool swap_in_two_steps(ag_loc loc, const char *tmp, const char *dir)
{
    char old[4096];
    snprintf(old, sizeof old, "%s.old-%ld", dir, (long)getpid());
    if (rename(dir, old) != 0) {
        rt_report(loc, "cannot replace the model at '%s': %s", dir, strerror(errno));
        return false;
    }
    crash_point("between the two renames");
    if (rename(tmp, dir) != 0) {
        rt_report(loc, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
        rename(old, dir); /* put the old model back */
        return false;
    }
    sm_remove_tree(old);
    return true;
}

bool sm_put_in_place(ag_loc loc, const char *tmp, const char *dir, bool exists)
{
    crash_point("before the swap");
    if (!exists) {
        if (rename(tmp, dir) == 0)
            return true;
        rt_report(loc, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
        return false;
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0) {
        if (errno == EINVAL || errno == ENOSYS)
            return swap_in_two_steps(loc, tmp, dir);
        rt_report(loc, "cannot replace the model at '%s': %s", dir, strerror(errno));
        return false;
    }
    crash_point("after the swap"); /* the old model is at tmp now */
    sm_remove_tree(tmp);
    return true;
}

/* ----------------------------------------------------------- leftovers */

/* The pid of a leftover of `base` ("<base>.tmp-<pid>", "<base>.old-<pid>"),
 * or 0 when name is not one. */
static long leftover_pid(const char *name, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) || (strncmp(name + n, ".tmp-", 5) && strncmp(name + n, ".old-", 5)))
        return 0;
    char *end;
    long pid = strtol(name + n + 5, &end, 10);
    return *end || pid <= 0 ? 0 : pid;
}

static bool process_gone(long pid)
{
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Splits dir into the folder it is in (where) and its own name (base). */
static void split_path(const char *dir, char *where, char *base, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = 0; /* "m/" names m */
    char *slash = strrchr(path, '/');
    snprintf(base, n, "%s", slash ? slash + 1 : path);
    if (!slash)
        snprintf(where, n, ".");
    else
        snprintf(where, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

void sm_remove_leftovers(const char *dir)
{
    char where[4096], base[4096];
    split_path(dir, where, base, sizeof where);
    DIR *d = *base ? opendir(where) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = leftover_pid(e->d_name, base);
        if (!pid || (pid != (long)getpid() && !process_gone(pid)))
            continue;
        char *path = sm_path_join(where, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            sm_remove_tree(path);
        free(path);
    }
    closedir(d);
}
