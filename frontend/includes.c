/*
 * includes.c - what libclang may read.
 *
 * libclang reads an included or embedded file to its end, whatever it is:
 * with `#include "/dev/zero"` or `#embed "/dev/zero" limit(10)` (or a
 * FIFO, or a file of gigabytes) agc would grow until it runs out of memory,
 * or block forever in open(). Its C API has no preprocessor callbacks to
 * refuse a file, but unsaved files replace a file's contents by path. So,
 * before parsing, agc follows the #include and #embed directives it can
 * read (names written as "..." or <...>, or given by an object-like macro
 * defined with #define or -D, resolved as the compiler would in the
 * including file's directory and the -I, -iquote, -isystem, -idirafter
 * and --embed-dir directories), from the input and its -include files
 * through the headers found there. Each such path that is not a regular
 * file of at most FE_MAX_FILE_SIZE bytes, and each such file that a
 * string literal in a macro's body names (a function-like macro may build
 * an #include's name from it), is given to libclang as an empty unsaved
 * file; after parsing, fe_report_blocked (below) reports an error at every
 * #include that libclang actually followed to one and at every #embed of
 * one outside the groups the preprocessor skipped (an #include or #embed
 * in an #if 0 block costs nothing).
 *
 * System headers (found in none of those directories) are not scanned. A
 * name computed otherwise (# or ## in a macro) is not seen here.
 */
#include "libclang.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64 /* nested headers followed */

/* An object-like macro (#define or -D). */
typedef struct macro {
    const char *name, *body;
} macro;

typedef struct scan {
    const char *const *dirs; /* -I and friends, in order */
    int n_dirs;
    fe_vec macros;   /* macro*, in the order defined */
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

static fe_blocked_file *block_as(scan *sc, const char *path, const char *why)
{
    for (int i = 0; i < sc->blocked->n; i++) {
        fe_blocked_file *b = sc->blocked->items[i];
        if (strcmp(b->path, path) == 0)
            return b;
    }
    fe_blocked_file *b = fe_alloc(sizeof *b);
    b->path = path;
    b->why = why;
    fe_vec_push(sc->blocked, b);
    return b;
}

/* libclang matches the unsaved files it is given by the path it opens,
 * which is from the root ("/dir/./x.h" for "./x.h"): both are given. */
static fe_blocked_file *block(scan *sc, const char *path, const char *why)
{
    fe_blocked_file *b = block_as(sc, path, why);
    char cwd[PATH_MAX];
    if (path[0] != '/' && getcwd(cwd, sizeof cwd))
        block_as(sc, fe_format("%s/%s", cwd, path), why);
    return b;
}

/* One included file: blocked, or scanned in turn. An #embed's data
 * (`embed`: where its operand is) is not scanned. */
static void follow(scan *sc, const char *name, bool quoted, const char *dir, int depth,
                   const fe_embed_site *embed)
{
    const char *path = resolve(sc, name, quoted, dir);
    if (!path)
        return;
    const char *why = refusal(path);
    if (why) {
        fe_blocked_file *b = block(sc, path, why);
        if (embed) {
            fe_embed_site *site = fe_alloc(sizeof *site);
            *site = *embed;
            fe_vec_push(&b->embeds, site);
        }
    } else if (!embed && depth < MAX_DEPTH) {
        scan_file(sc, path, depth + 1);
    }
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '	'))
        p++;
    return p;
}

static size_t ident_len(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && fe_is_ident_char(p[n]))
        n++;
    return n;
}

/* The file name of a "..." or <...> at p. */
static bool literal_name(const char *p, const char *end, const char **name, size_t *n,
                         bool *quoted)
{
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

/* The body of the object-like macro `name`, the last one defined. */
static const char *macro_body(const scan *sc, const char *name, size_t n)
{
    for (int i = sc->macros.n - 1; i >= 0; i--) {
        const macro *m = sc->macros.items[i];
        if (strlen(m->name) == n && memcmp(m->name, name, n) == 0)
            return m->body;
    }
    return NULL;
}

/* The file an #include or #embed operand at p names: written out, or given
 * by an object-like macro (through at most 16 of them). */
static bool operand_name(const scan *sc, const char *p, const char *end, const char **name,
                         size_t *n, bool *quoted)
{
    for (int hops = 0; hops <= 16; hops++) {
        p = skip_blanks(p, end);
        if (literal_name(p, end, name, n, quoted))
            return true;
        size_t id = ident_len(p, end);
        const char *body = id ? macro_body(sc, p, id) : NULL;
        if (!body)
            return false;
        p = body;
        end = body + strlen(body);
    }
    return false;
}

/* Every "..." in a macro's body that names a file libclang must not read
 * is blocked: the macro may name an included file in a way agc cannot
 * follow (a function-like macro, a chain of them). */
static void block_literals(scan *sc, const char *p, const char *end, const char *dir)
{
    for (; p < end; p++) {
        const char *name;
        size_t n;
        bool quoted;
        if (*p != '"' || !literal_name(p, end, &name, &n, &quoted))
            continue;
        const char *path = resolve(sc, fe_strndup(name, n), true, dir);
        const char *why = path ? refusal(path) : NULL;
        if (why)
            block(sc, path, why);
        p = name + n;
    }
}

/* `#define NAME body` (p past "define"). */
static void define(scan *sc, const char *p, const char *end, const char *dir)
{
    p = skip_blanks(p, end);
    size_t id = ident_len(p, end);
    if (!id)
        return;
    block_literals(sc, p + id, end, dir);
    if (p + id < end && p[id] == '(')
        return; /* function-like */
    macro *m = fe_alloc(sizeof *m);
    m->name = fe_strndup(p, id);
    const char *b = skip_blanks(p + id, end), *e = end;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    m->body = fe_strndup(b, (size_t)(e - b));
    fe_vec_push(&sc->macros, m);
}

/* The directive of one line of src (p past the '#'). */
static void directive(scan *sc, const fe_source *src, const char *p, const char *end,
                      const char *dir, int depth)
{
    static const char *const kws[] = {"include_next", "include", "import", "embed", "define"};
    p = skip_blanks(p, end);
    size_t id = ident_len(p, end), k = 0;
    for (; k < 5; k++)
        if (strlen(kws[k]) == id && strncmp(p, kws[k], id) == 0)
            break;
    const char *name;
    size_t n;
    bool quoted;
    const char *operand = skip_blanks(p + id, end);
    fe_embed_site embed = {src, (unsigned)(operand - src->text)};
    if (k == 4)
        define(sc, operand, end, dir);
    else if (k < 4 && operand_name(sc, operand, end, &name, &n, &quoted))
        follow(sc, fe_strndup(name, n), quoted, dir, depth, k == 3 ? &embed : NULL);
}

/* The directives of a file's text. */
static void scan_text(scan *sc, const fe_source *src, const char *dir, int depth)
{
    const char *p = src->text, *end = src->text + src->len;
    while (p < end) {
        const char *line = p;
        while (p < end && *p != '\n')
            p++;
        const char *q = skip_blanks(line, p);
        if (q < p && *q == '#')
            directive(sc, src, q + 1, p, dir, depth);
        p += p < end;
    }
}

static const char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? fe_strndup(path, (size_t)(slash - path) + (slash == path)) : ".";
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
        scan_text(sc, src, dir_of(path), depth);
}

/* The value of flag at args[*i] ("-Ivalue", "-I value", "--embed-dir=value"),
 * or NULL when args[*i] is another flag. */
static const char *flag_value(const char *const *args, int n_args, int *i, const char *flag)
{
    size_t fl = strlen(flag);
    if (strncmp(args[*i], flag, fl) != 0)
        return NULL;
    if (args[*i][fl])
        return args[*i] + fl;
    return *i + 1 < n_args ? args[++*i] : NULL;
}

/* -DNAME=body: a macro as #define NAME body would make. */
static void define_flag(scan *sc, const char *def)
{
    const char *eq = strchr(def, '=');
    if (!eq)
        return;
    const char *text = fe_format("%.*s %s", (int)(eq - def), def, eq + 1);
    define(sc, text, text + strlen(text), ".");
}

static void read_flags(scan *sc, const char *const *args, int n_args, fe_vec *forced)
{
    static const char *const dir_flags[] = {"-I",         "-iquote",     "-isystem",
                                            "-idirafter", "--embed-dir=", NULL};
    const char **dirs = fe_alloc((size_t)(n_args + 1) * sizeof *dirs);
    sc->dirs = dirs; /* -D's literals are resolved in those before it */
    for (int i = 0; i < n_args; i++) {
        const char *v = NULL;
        for (int k = 0; dir_flags[k] && !v; k++)
            if ((v = flag_value(args, n_args, &i, dir_flags[k])))
                dirs[sc->n_dirs++] = v;
        if (!v && (v = flag_value(args, n_args, &i, "-D")))
            define_flag(sc, v);
        else if (!v && strcmp(args[i], "-include") == 0 && i + 1 < n_args)
            fe_vec_push(forced, (void *)args[++i]);
    }
}

void fe_blocked_includes(const fe_source *main_src, const char *const *args, int n_args,
                         fe_vec *blocked)
{
    scan sc = {.blocked = blocked};
    fe_vec forced = {0}; /* -include FILE */
    read_flags(&sc, args, n_args, &forced);
    fe_vec_push(&sc.seen, (void *)main_src->path);
    for (int i = 0; i < forced.n; i++)
        follow(&sc, forced.items[i], true, ".", 0, NULL);
    scan_text(&sc, main_src, dir_of(main_src->path), 0);
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

/* Whether off in src is in a group the preprocessor skipped (#if 0). */
static bool skipped(CXTranslationUnit tu, CXFile file, unsigned off)
{
    CXSourceRangeList *rs = clang_getSkippedRanges(tu, file);
    bool in = false;
    for (unsigned i = 0; rs && i < rs->count && !in; i++) {
        unsigned b, e;
        clang_getFileLocation(clang_getRangeStart(rs->ranges[i]), NULL, NULL, NULL, &b);
        clang_getFileLocation(clang_getRangeEnd(rs->ranges[i]), NULL, NULL, NULL, &e);
        in = b <= off && off < e;
    }
    clang_disposeSourceRangeList(rs);
    return in;
}

/* An error at every #embed of bf that the preprocessor did not skip. */
static bool report_embeds(CXTranslationUnit tu, const fe_source *main_src, CXFile main_file,
                          const fe_blocked_file *bf)
{
    bool any = false;
    for (int i = 0; i < bf->embeds.n; i++) {
        const fe_embed_site *e = bf->embeds.items[i];
        CXFile f = e->src == main_src ? main_file : clang_getFile(tu, e->src->path);
        if (f && skipped(tu, f, e->off))
            continue;
        fe_diag_at(FE_ERROR, e->src, e->off, NULL, 0, NULL, 0,
                   fe_format("agc does not read '%s': %s", bf->path, bf->why));
        any = true;
    }
    return any;
}

bool fe_report_blocked(CXTranslationUnit tu, fe_source *main_src, CXFile main_file,
                       const fe_vec *blocked)
{
    if (!blocked->n)
        return false;
    blocked_walk w = {blocked, main_src, main_file, false};
    clang_getInclusions(tu, visit_blocked, &w);
    for (int i = 0; i < blocked->n; i++)
        w.any |= report_embeds(tu, main_src, main_file, blocked->items[i]);
    return w.any;
}
