/*
 * write.c - writing a saved model's directory atomically.
 *
 * Everything goes into "<dir>.tmp-<pid>" first: the functions' text IR,
 * variables.bin, extra files, and last the manifest, whose final line
 * says the model is complete. Only then does the new directory take
 * dir's place, in one step (replace.c: what may be replaced, the swap,
 * the leftovers of saves that died).
 */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool write_bytes(ag_loc loc, const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    ok = f && fflush(f) == 0 && ok;
    ok = f && fsync(fileno(f)) == 0 && ok;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        rt_report(loc, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
    return ok;
}

static bool write_functions(ag_loc loc, const char *tmp, sm_manifest *man, char *const *texts)
{
    char *fdir = sm_path_join(tmp, "functions");
    bool ok = mkdir(fdir, 0777) == 0;
    if (!ok)
        rt_report(loc, "cannot create '%s': %s", fdir, strerror(errno));
    free(fdir);
    for (int i = 0; ok && i < man->n_functions; i++) {
        sm_function *f = &man->functions[i];
        size_t n = strlen(texts[i]);
        snprintf(f->file, sizeof f->file, "functions/%s.ir", f->name);
        f->bytes = (int64_t)n;
        f->checksum = rt_crc32(0, texts[i], n);
        char *path = sm_path_join(tmp, f->file);
        ok = write_bytes(loc, path, texts[i], n);
        free(path);
    }
    return ok;
}

/* variables.bin: the magic, then each value's bytes at its offset. */
static bool write_variables(ag_loc loc, const char *tmp, sm_manifest *man,
                            const rt_value *const *vars)
{
    size_t total = 8;
    for (int i = 0; i < man->n_variables; i++)
        total += rt_value_bytes(vars[i]);
    unsigned char *buf = rt_xmalloc(total);
    memcpy(buf, SM_VARIABLES_MAGIC, 8);
    size_t at = 8;
    for (int i = 0; i < man->n_variables; i++) {
        sm_variable *v = &man->variables[i];
        size_t n = rt_value_bytes(vars[i]);
        if (n)
            memcpy(buf + at, vars[i]->data, n);
        v->offset = (int64_t)at;
        v->bytes = (int64_t)n;
        v->checksum = rt_crc32(0, buf + at, n);
        at += n;
    }
    man->variables_bytes = (int64_t)total;
    char *path = sm_path_join(tmp, SM_VARIABLES_FILE);
    bool ok = write_bytes(loc, path, buf, total);
    free(path);
    free(buf);
    return ok;
}

static bool write_manifest(ag_loc loc, const char *tmp, const sm_manifest *man)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    sm_manifest_print(man, mem);
    fclose(mem);
    char *path = sm_path_join(tmp, SM_MANIFEST_FILE);
    bool ok = write_bytes(loc, path, text, n);
    free(path);
    free(text);
    return ok;
}

bool sm_write(ag_loc loc, const char *dir, sm_manifest *man, char *const *texts,
              const rt_value *const *vars, const sm_extra_file *extra, int n_extra)
{
    bool exists;
    if (!dir || !*dir) {
        rt_report(loc, "no directory given to save the model in");
        return false;
    }
    if (!sm_may_replace(loc, dir, &exists))
        return false;
    sm_remove_leftovers(dir); /* of saves that died, ours with this pid among them */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dir, (long)getpid());
    if (mkdir(tmp, 0777) != 0) {
        rt_report(loc, "cannot create '%s': %s", tmp, strerror(errno));
        return false;
    }
    man->format_version = SM_FORMAT_VERSION;
    snprintf(man->producer, sizeof man->producer, "agc %s", AG_VERSION);
    bool ok = write_functions(loc, tmp, man, texts) && write_variables(loc, tmp, man, vars);
    for (int i = 0; ok && i < n_extra; i++) {
        char *path = sm_path_join(tmp, extra[i].name);
        ok = write_bytes(loc, path, extra[i].text, strlen(extra[i].text));
        free(path);
    }
    ok = ok && write_manifest(loc, tmp, man) && sm_put_in_place(loc, tmp, dir, exists);
    if (!ok)
        sm_remove_tree(tmp);
    return ok;
}
