/*
 * compdb.c - `agc -p BUILD_DIR`: the input's flags from the build's
 * compile_commands.json (libclang's CXCompilationDatabase).
 *
 * From the command that compiles the input, agc keeps what changes how
 * the file parses: include directories, macros, the language standard,
 * forced includes, the target. Everything else (the compiler, -c, -o and
 * the dependency flags, warnings, optimization, the input itself) goes.
 * A database's paths are relative to its entry's "directory", and agc runs
 * elsewhere, so relative paths in the kept flags are made absolute.
 *
 * libclang's lookup is not used to find the entry: for a file the database
 * does not list, it invents a command from a similar file, and agc must say
 * instead that the file is not there. So agc goes through every entry and
 * compares canonical paths.
 */
#include "fe.h"

#include <clang-c/CXCompilationDatabase.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *take(CXString s)
{
    const char *c = clang_getCString(s);
    char *r = fe_strdup(c ? c : "");
    clang_disposeString(s);
    return r;
}

/* ---------------------------------------------------------------- paths */

static const char *join(const char *dir, const char *path)
{
    if (path[0] == '/' || !*dir)
        return path;
    return fe_format("%s/%s", dir, path);
}

/* An absolute path with "." and ".." resolved by text (for files that do
 * not exist, where realpath cannot help). */
static const char *normalize(const char *path)
{
    const char *abs = path;
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        abs = getcwd(cwd, sizeof cwd) ? fe_format("%s/%s", cwd, path) : path;
    }
    fe_vec parts = {0};
    const char *p = abs;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (parts.n)
                parts.n--;
        } else if (n && !(n == 1 && p[0] == '.')) {
            fe_vec_push(&parts, fe_strndup(p, n));
        }
        p = e;
    }
    fe_buf b = {0};
    for (int i = 0; i < parts.n; i++)
        fe_buf_printf(&b, "/%s", (const char *)parts.items[i]);
    const char *r = fe_strdup(b.data ? b.data : "/");
    fe_buf_free(&b);
    return r;
}

/* The canonical name of a file: symbolic links resolved when it exists. */
static const char *canonical(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return fe_strdup(buf);
    return normalize(path);
}

/* --------------------------------------------------------------- flags */

/* Flags kept, with a value (glued, "-DX", or separate, "-D X"); `path`:
 * the value is a path, made absolute. */
typedef struct flag_spec {
    const char *name;
    bool path;
} flag_spec;

static const flag_spec valued[] = {
    {"-I", true},         {"-D", false},        {"-U", false},        {"-isystem", true},
    {"-iquote", true},    {"-idirafter", true}, {"-include", true},   {"-imacros", true},
    {"-isysroot", true},  {"--sysroot=", true}, {"-std=", false},     {"--std=", false},
    {"--target=", false}, {"-target", false},   {"-march=", false},   {"-mcpu=", false},
    {NULL, false},
};

/* Flags kept as they are: they change predefined macros or the dialect. */
static const char *const plain[] = {
    "-ansi", "-pthread", "-nostdinc", "-nostdlibinc", "-m32", "-m64", "-fopenmp",
    "-funsigned-char", "-fsigned-char", "-fno-signed-char", "-ffreestanding",
    "-fms-extensions", "-fblocks", NULL,
};

/* Flags dropped whose value is a separate argument (skipped with them). */
static const char *const dropped_valued[] = {
    "-include-pch", "-o", "-MF", "-MT", "-MQ", "-x", "-Xclang", "-Xpreprocessor",
    "-Xassembler", "-Xlinker", "-mllvm", "-arch", "-L", "-l", "-z", NULL,
};

static bool in_list(const char *const *list, const char *a)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], a) == 0)
            return true;
    return false;
}

/* A path value: relative to the entry's directory. -include names a file
 * that clang also looks for along the include path, so it is made
 * absolute only when it is in that directory. */
static const char *path_value(const flag_spec *f, const char *dir, const char *v)
{
    if (v[0] == '/' || !*v)
        return v;
    const char *abs = join(dir, v);
    bool is_file_flag = strcmp(f->name, "-include") == 0 || strcmp(f->name, "-imacros") == 0;
    if (is_file_flag && access(abs, F_OK) != 0)
        return v;
    return abs;
}

/* Appends to args the kept flags of one command (argv[0] is the
 * compiler). */
static void keep_flags(CXCompileCommand cmd, const char *dir, fe_vec *args)
{
    unsigned n = clang_CompileCommand_getNumArgs(cmd);
    char **argv = fe_alloc((size_t)(n + 1) * sizeof *argv);
    for (unsigned i = 0; i < n; i++)
        argv[i] = take(clang_CompileCommand_getArg(cmd, i));
    for (unsigned i = 1; i < n; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break; /* inputs only */
        if (a[0] != '-')
            continue; /* an input */
        if (in_list(plain, a)) {
            fe_vec_push(args, (void *)a);
            continue;
        }
        if (in_list(dropped_valued, a)) {
            i++;
            continue;
        }
        for (const flag_spec *f = valued; f->name; f++) {
            size_t len = strlen(f->name);
            if (strncmp(a, f->name, len) != 0)
                continue;
            bool glued = a[len] != '\0';
            bool takes_separate = f->name[len - 1] != '=';
            if (!glued && (!takes_separate || i + 1 >= n))
                break;
            const char *v = glued ? a + len : argv[++i];
            if (f->path)
                v = path_value(f, dir, v);
            if (glued || !takes_separate) {
                fe_vec_push(args, fe_format("%s%s", f->name, v));
            } else {
                fe_vec_push(args, (void *)f->name);
                fe_vec_push(args, (void *)v);
            }
            break;
        }
    }
}

/* ------------------------------------------------------------ database */

/* libclang prints why a database does not load on stderr; agc reports it
 * in its own words, so the message is captured. Returns the database, or
 * NULL with *why set. */
static CXCompilationDatabase load(const char *dir, const char **why)
{
    *why = "";
    fflush(stderr);
    FILE *capture = tmpfile();
    int saved = capture ? dup(2) : -1;
    if (saved >= 0)
        dup2(fileno(capture), 2);
    CXCompilationDatabase_Error err;
    CXCompilationDatabase db = clang_CompilationDatabase_fromDirectory(dir, &err);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
    }
    if (capture) {
        char line[512];
        rewind(capture);
        while (fgets(line, sizeof line, capture)) {
            const char *tag = "json-compilation-database: ";
            char *m = strstr(line, tag);
            if (m) {
                m += strlen(tag);
                m[strcspn(m, "\r\n")] = '\0';
                *why = fe_strdup(m);
            }
        }
        fclose(capture);
    }
    if (err != CXCompilationDatabase_NoError && db) {
        clang_CompilationDatabase_dispose(db);
        db = NULL;
    }
    return db;
}

bool fe_compdb_flags(const char *dir, const char *input, fe_vec *args)
{
    struct stat st;
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    const char *json = fe_format("%.*s/compile_commands.json", (int)len, dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fe_diag_plain(FE_ERROR, "-p %s: no such build directory", dir);
        return false;
    }
    if (stat(json, &st) != 0) {
        fe_diag_plain(FE_ERROR,
                      "-p %s: no compilation database there ('%s' does not exist; CMake "
                      "writes it with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)",
                      dir, json);
        return false;
    }
    const char *why;
    CXCompilationDatabase db = load(dir, &why);
    if (!db) {
        fe_diag_plain(FE_ERROR, "cannot load the compilation database '%s'%s%s", json,
                      *why ? ": " : "", why);
        return false;
    }
    const char *want = canonical(input);
    CXCompileCommands cmds = clang_CompilationDatabase_getAllCompileCommands(db);
    unsigned n = cmds ? clang_CompileCommands_getSize(cmds) : 0;
    bool found = false;
    for (unsigned i = 0; i < n && !found; i++) {
        CXCompileCommand cmd = clang_CompileCommands_getCommand(cmds, i);
        const char *cdir = take(clang_CompileCommand_getDirectory(cmd));
        const char *file = take(clang_CompileCommand_getFilename(cmd));
        if (strcmp(canonical(join(cdir, file)), want) != 0)
            continue;
        keep_flags(cmd, cdir, args);
        found = true;
    }
    if (cmds)
        clang_CompileCommands_dispose(cmds);
    clang_CompilationDatabase_dispose(db);
    if (!found)
        fe_diag_plain(FE_ERROR, "'%s' is not in the compilation database '%s' (%u entr%s)", input,
                      json, n, n == 1 ? "y" : "ies");
    return found;
}
