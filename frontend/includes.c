/*
 * includes.c - what libclang may read.
 *
 * libclang reads an included file to its end, whatever it is: with
 * `#include "/dev/zero"` (or a FIFO, or a file of gigabytes) agc would grow
 * until it runs out of memory. Its C API has no preprocessor callbacks to
 * refuse a file, but unsaved files replace a file's contents by path. So,
 * before parsing, agc follows the #include directives it can read (names
 * written as "..." or <...>, resolved as the compiler would in the
 * including file's directory and the -I, -iquote, -isystem and -idirafter
 * directories), from the input and its -include files through the headers
 * found there. Each included path that is not a regular file of at most
 * FE_MAX_FILE_SIZE bytes is given to libclang as an empty unsaved file;
 * after parsing, fe_report_blocked (below) reports an error at every #include that libclang
 * actually followed to one (an #include in an #if 0 block costs nothing).
 *
 * System headers (found in none of those directories) are not scanned.
 * An #include whose name a macro gives is not seen here.
 */
#include "libclang.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 64 /* nested headers followed */

typedef struct scan {
    const char *const *dirs; /* -I and friends, in order */
    int n_dirs;
    fe_vec seen;     /* char*: files scanned (by real path) */
    fe_vec *blocked; /* fe_blocked_file*: the result */
} scan;

/* Why libclang must not read path, or NULL (a regular file that fits). */
static const char *refusal(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL; /* missing: clang says so itself */
    if (!S_ISREG(st.st_mode))
        return S_ISDIR(st.st_mode) ? NULL : "it is not a regular file";
    if ((unsigned long long)st.st_size > FE_MAX_FILE_SIZE)
        return fe_format("it is larger than %u MiB", FE_MAX_FILE_SIZE >> 20);
    return NULL;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* The file `#include "name"` (quoted) or `<name>` names, as the
 * compiler searches for it; NULL when it is in none of agc's directories
 * (a system header, or missing). */
static const char *resolve(const scan *sc, const char *name, bool quoted, const char *dir)
{
    if (name[0] == '/')
        return name;
    if (quoted) {
        const char *p = *dir ? fe_format("%s/%s", dir, name) : name;
        if (exists(p))
            return p;
    }
    for (int i = 0; i < sc->n_dirs; i++) {
        const char *p = fe_format("%s/%s", sc->dirs[i], name);
        if (exists(p))
            return p;
    }
    return NULL;
}

static void scan_file(scan *sc, const char *path, int depth);

static void block(scan *sc, const char *path, const char *why)
{
    for (int i = 0; i < sc->blocked->n; i++)
        if (strcmp(((fe_blocked_file *)sc->blocked->items[i])->path, path) == 0)
            return;
    fe_blocked_file *b = fe_alloc(sizeof *b);
    b->path = path;
    b->why = why;
    fe_vec_push(sc->blocked, b);
}

/* One included file: blocked, or scanned in turn. */
static void follow(scan *sc, const char *name, bool quoted, const char *dir, int depth)
{
    const char *path = resolve(sc, name, quoted, dir);
    if (!path)
        return;
    const char *why = refusal(path);
    if (why)
        block(sc, path, why);
    else if (depth < MAX_DEPTH)
        scan_file(sc, path, depth + 1);
}

/* The name of the #include directive at p (past the '#'); false if it is
 * none or names its file with a macro. */
static bool include_name(const char *p, const char *end, const char **name, size_t *n,
                         bool *quoted)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    static const char *const kws[] = {"include_next", "include", "import"};
    size_t k = 0;
    for (; k < 3; k++)
        if ((size_t)(end - p) > strlen(kws[k]) && strncmp(p, kws[k], strlen(kws[k])) == 0)
            break;
    if (k == 3)
        return false;
    p += strlen(kws[k]);
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || (*p != '"' && *p != '<'))
        return false;
    char close = *p == '"' ? '"' : '>';
    *quoted = *p == '"';
    const char *s = ++p;
    while (p < end && *p != close && *p != '\n')
        p++;
    if (p == end || *p != close || p == s)
        return false;
    *name = s;
    *n = (size_t)(p - s);
    return true;
}

/* The #include directives of a file's text. */
static void scan_text(scan *sc, const char *text, size_t len, const char *dir, int depth)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *line = p;
        while (p < end && *p != '\n')
            p++;
        const char *q = line;
        while (q < p && (*q == ' ' || *q == '\t'))
            q++;
        const char *name;
        size_t n;
        bool quoted;
        if (q < p && *q == '#' && include_name(q + 1, p, &name, &n, &quoted))
            follow(sc, fe_strndup(name, n), quoted, dir, depth);
        p += p < end;
    }
}

static const char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? fe_strndup(path, (size_t)(slash - path) + (slash == path)) : "";
}

static void scan_file(scan *sc, const char *path, int depth)
{
    char real[PATH_MAX];
    const char *key = realpath(path, real) ? fe_strdup(real) : path;
    for (int i = 0; i < sc->seen.n; i++)
        if (strcmp(sc->seen.items[i], key) == 0)
            return;
    fe_vec_push(&sc->seen, (void *)key);
    fe_source *src = fe_source_load(path);
    if (src)
        scan_text(sc, src->text, src->len, dir_of(path), depth);
}

void fe_blocked_includes(const fe_source *main_src, const char *const *args, int n_args,
                         fe_vec *blocked)
{
    const char **dirs = fe_alloc((size_t)(n_args + 1) * sizeof *dirs);
    int n_dirs = 0;
    fe_vec forced = {0}; /* -include FILE */
    static const char *const dir_flags[] = {"-I", "-iquote", "-isystem", "-idirafter", NULL};
    for (int i = 0; i < n_args; i++) {
        const char *a = args[i];
        for (int k = 0; dir_flags[k]; k++) {
            size_t fl = strlen(dir_flags[k]);
            if (strncmp(a, dir_flags[k], fl) != 0)
                continue;
            if (a[fl])
                dirs[n_dirs++] = a + fl;
            else if (i + 1 < n_args)
                dirs[n_dirs++] = args[++i];
            break;
        }
        if (strcmp(a, "-include") == 0 && i + 1 < n_args)
            fe_vec_push(&forced, (void *)args[++i]);
    }
    scan sc = {dirs, n_dirs, {0}, blocked};
    fe_vec_push(&sc.seen, (void *)main_src->path);
    for (int i = 0; i < forced.n; i++)
        follow(&sc, forced.items[i], true, "", 0);
    scan_text(&sc, main_src->text, main_src->len, dir_of(main_src->path), 0);
}

/* ------------------------------------- after parsing: the ones it read */

typedef struct blocked_walk {
    const fe_vec *blocked;
    fe_source *main_src;
    CXFile main_file;
    bool any;
} blocked_walk;

static const fe_blocked_file *blocked_file(const fe_vec *blocked, CXFile f)
{
    const char *name = fe_clang_str(clang_getFileName(f));
    struct stat a, b;
    if (stat(name, &a) != 0)
        return NULL;
    for (int i = 0; i < blocked->n; i++) {
        const fe_blocked_file *bf = blocked->items[i];
        if (strcmp(bf->path, name) == 0 ||
            (stat(bf->path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino))
            return bf;
    }
    return NULL;
}

/* An #include that libclang followed to a blocked file: an error at it. */
static void visit_blocked(CXFile f, CXSourceLocation *stack, unsigned depth, CXClientData d)
{
    blocked_walk *w = d;
    const fe_blocked_file *bf = depth ? blocked_file(w->blocked, f) : NULL;
    if (!bf)
        return;
    CXFile at_file;
    unsigned line, col, off;
    clang_getFileLocation(stack[0], &at_file, &line, &col, &off);
    fe_source *src = NULL;
    if (at_file && clang_File_isEqual(at_file, w->main_file))
        src = w->main_src;
    else if (at_file)
        src = fe_source_load(fe_clang_str(clang_getFileName(at_file)));
    if (src && off > src->len)
        src = NULL;
    fe_diag_at(FE_ERROR, src, off, NULL, 0, NULL, 0,
               fe_format("agc does not read '%s': %s", bf->path, bf->why));
    w->any = true;
}

bool fe_report_blocked(CXTranslationUnit tu, fe_source *main_src, CXFile main_file,
                       const fe_vec *blocked)
{
    if (!blocked->n)
        return false;
    blocked_walk w = {blocked, main_src, main_file, false};
    clang_getInclusions(tu, visit_blocked, &w);
    return w.any;
}
