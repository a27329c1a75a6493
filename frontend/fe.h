/*
 * fe.h - agc's frontend: the AutoGraph conversion of C source files.
 *
 * The conversion (driver.c runs it through convert.c, one call a stage):
 *
 *   parse.c      libclang's parse of the input: the text checks before it
 *                (precheck.c: '::', which hangs clang, and nesting deeper
 *                than 256 levels, which crashes it), its arguments
 *                (args.c: -p's flags, the command line's, the ag.h
 *                directories prefix.c finds), the files it must not read
 *                (includes.c), its errors (clang_diag.c), the included
 *                files for -MD
 *   ast.c        every AG_FUNCTION becomes an fe_func whose body is a
 *                tree of fe_stmt with the conditions classified (fe_cond:
 *                staged when they contain ag_bool) and every variable
 *                reference recorded (fe_ref)
 *   signature.c  checks each AG_SIGNATURE against its function's
 *                parameters, with the function cache's parser
 *   analyze.c    checks what cannot be staged (diagnostics with carets
 *                and fix-its), decides which break/continue/return become
 *                flags, and answers liveness questions for gen.c
 *   gen.c        lowers staged control flow: lifted bodies over state
 *                structs, ag_if_at / ag_while_at calls, flags
 *   emit.c       writes the output file: the user's text verbatim around
 *                the converted functions, each with its trace trampoline,
 *                descriptor, registration and wrapper; #line directives
 *   deps.c       the Make dependency file (-MD)
 *
 * convert.c runs the whole conversion on one input (a file, or a buffer
 * in memory) and leaves no state behind, so that a process can convert
 * any number of inputs (the driver converts one; tests/fuzz converts
 * many). compdb.c takes the input's flags from a compile_commands.json
 * (-p). libclang.h declares what the files that read libclang's
 * translation unit share (ast.c, clang_diag.c, includes.c, parse.c).
 *
 * Support: util.c (buffers, the arena), source.c (files, positions and
 * lexical helpers), diag.c (clang-style diagnostics), out.c (the output
 * writer that keeps #line directives right).
 *
 * The command line and what agc makes beyond staged C (linked with libag,
 * not part of the conversion's object library): driver.c (options, the
 * run), files.c (writing the outputs all or nothing), build.c and
 * header.c (build.h: tracing and compiling ahead of time, --emit=obj,
 * header, ir, ir-opt, llvm, asm, dot).
 */
#ifndef FE_H
#define FE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define FE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/* ------------------------------------------------------------- util.c */

/* A growable byte buffer (heap). */
typedef struct fe_buf {
    char *data;
    size_t len, cap;
} fe_buf;

void fe_buf_add(fe_buf *b, const char *s, size_t n);
void fe_buf_puts(fe_buf *b, const char *s);
void fe_buf_putc(fe_buf *b, char c);
void fe_buf_printf(fe_buf *b, const char *fmt, ...) FE_PRINTF(2, 3);
void fe_buf_vprintf(fe_buf *b, const char *fmt, va_list ap);
void fe_buf_free(fe_buf *b);

/* Everything the frontend builds lives in one arena. A conversion saves
 * the arena's state first and restores it last, which frees all it made. */
void *fe_alloc(size_t n); /* zeroed */
char *fe_strndup(const char *s, size_t n);
char *fe_strdup(const char *s);
char *fe_format(const char *fmt, ...) FE_PRINTF(1, 2);
const char *fe_c_string(const char *s); /* a C string literal of s */
void fe_arena_free(void);
typedef struct fe_arena_state {
    void *chunk; /* the newest chunk then */
    size_t used; /* its bytes in use then */
} fe_arena_state;
fe_arena_state fe_arena_save(void);
void fe_arena_restore(fe_arena_state st); /* frees what was allocated since */

/* A growable array of pointers in the arena. */
typedef struct fe_vec {
    void **items;
    int n, cap;
} fe_vec;
void fe_vec_push(fe_vec *v, void *item);

/* agc -v: each step agc takes, on stderr ("agc: parse x.c ..."). */
extern bool fe_verbose;
void fe_step(const char *fmt, ...) FE_PRINTF(1, 2);
/* "cc -shared ...": an argument vector on one line, for fe_step. */
const char *fe_join_args(const char *const *argv, int argc);

/* Internal bugs: never user diagnostics. Prints and aborts. */
_Noreturn void fe_internal_error(const char *file, int line, const char *fmt, ...) FE_PRINTF(3, 4);
#define FE_BUG(...) fe_internal_error(__FILE__, __LINE__, __VA_ARGS__)

/* ----------------------------------------------------------- source.c */

/* A source file held in memory, with its line starts. */
typedef struct fe_source {
    const char *path; /* as named on the command line or by libclang */
    const char *text;
    unsigned len;
    unsigned *lines; /* offset of each line's start; lines[0] = 0 */
    int n_lines;
} fe_source;

/* The largest file agc (and libclang, includes.c) reads. */
#define FE_MAX_FILE_SIZE (256u << 20)

/* Loads (once per path) a file; NULL (errno set) when it cannot be read,
 * or is larger than FE_MAX_FILE_SIZE (EFBIG). */
fe_source *fe_source_load(const char *path);
/* A file given in memory (copied): later loads of `path` get it. */
fe_source *fe_source_add(const char *path, const char *text, size_t len);
/* Forgets every loaded file (their memory is the arena's). */
void fe_source_forget_all(void);
/* Whether c can be part of an identifier. */
bool fe_is_ident_char(char c);
/* Whether byte i ends a line (\n, the \n of \r\n, or a lone \r). */
bool fe_is_line_end(const fe_source *s, unsigned i);
/* 1-based line and column of a byte offset. */
void fe_source_pos(const fe_source *s, unsigned off, int *line, int *col);
int fe_source_line(const fe_source *s, unsigned off);
/* The text of a 1-based line without its newline. */
const char *fe_source_line_text(const fe_source *s, int line, unsigned *len);

/* Lexical helpers over C text (they skip comments, strings and chars). */
unsigned fe_skip_space(const fe_source *s, unsigned off);      /* forward */
unsigned fe_skip_space_back(const fe_source *s, unsigned off); /* backward: end of prev token */
unsigned fe_match_paren(const fe_source *s, unsigned open);    /* after the ')' */
unsigned fe_skip_literal(const fe_source *s, unsigned off);    /* past a comment/string/char */
int fe_next_code(const fe_source *s, unsigned *off); /* next char outside those, -1 at the end */
int fe_bracket(int c); /* +1 opens ( [ {, -1 closes, 0 otherwise */

/* ------------------------------------------------------------- diag.c */

/* A byte range [begin, end) in the main source file. */
typedef struct fe_range {
    unsigned begin, end;
} fe_range;

/* The first len bytes of a range starting at begin (a keyword, a name). */
static inline fe_range fe_range_at(unsigned begin, unsigned len)
{
    fe_range r = {begin, begin + len};
    return r;
}

/* source.c: the '#' of the first #if/#else/#endif... in r that r does
 * not balance (a group opened and not closed in r, or closed or continued
 * without being opened), or r.end when every group is complete in r. */
unsigned fe_unbalanced_directive(const fe_source *s, fe_range r);

typedef enum fe_severity { FE_NOTE, FE_WARNING, FE_ERROR, FE_FATAL } fe_severity;

/* Replace `range` by `text` (an empty range inserts). */
typedef struct fe_fixit {
    fe_range range;
    const char *text;
} fe_fixit;

/* Starts a conversion's diagnostics: printed to `stream` (NULL: stderr),
 * the error count reset. fe_diag_done() returns to stderr. */
void fe_diag_init(FILE *stream, bool color);
/* The file whose offsets fe_error and friends take. */
void fe_diag_set_main(const fe_source *main_src);
void fe_diag_done(void);
/* The entry points for diagnostics about the user's code. */
void fe_error(fe_range at, const char *fmt, ...) FE_PRINTF(2, 3);
void fe_error_fix(fe_range at, fe_fixit fix, const char *fmt, ...) FE_PRINTF(3, 4);
void fe_note(fe_range at, const char *fmt, ...) FE_PRINTF(2, 3);
void fe_note_fix(fe_range at, fe_fixit fix, const char *fmt, ...) FE_PRINTF(3, 4);
/* A diagnostic at any file's location (for libclang's own diagnostics);
 * ranges and fix-its are offsets in src. src may be NULL (no location). */
void fe_diag_at(fe_severity sev, const fe_source *src, unsigned off, const fe_range *ranges,
                int n_ranges, const fe_fixit *fixits, int n_fixits, const char *msg);
/* Usage errors and the like: "agc: error: message". */
void fe_diag_plain(fe_severity sev, const char *fmt, ...) FE_PRINTF(2, 3);
int fe_diag_errors(void);
void fe_diag_summary(void); /* "N errors generated." */

/* ------------------------------------------------------------ the AST */

/* How agc treats a variable's C type. */
typedef enum fe_tclass {
    FE_TY_TENSOR,
    FE_TY_TENSOR_ARRAY,
    FE_TY_VARIABLE,
    FE_TY_OPTIMIZER, /* ag_optimizer: a parameter keyed by identity */
    FE_TY_INT, /* integers, bool, enums */
    FE_TY_FLOAT,
    FE_TY_POINTER,
    FE_TY_ARRAY,
    FE_TY_STRUCT,
    FE_TY_OTHER
} fe_tclass;

/* A local variable or parameter of an AG_FUNCTION, or a flag agc made. */
typedef struct fe_var {
    const char *name;
    unsigned decl_off;   /* where its name is declared */
    fe_range decl_range; /* its declarator, for notes and insertions */
    fe_range type_range; /* its type specifier, for fix-its */
    fe_range init_range; /* its initializer (empty: none, or from a macro) */
    fe_tclass tclass;
    const char *type_name;  /* for messages: "int" */
    const char *field_decl; /* a struct field holding it: "float *d" */
    const char *local_decl; /* a local of the same name: "const int k" */
    bool is_param, has_init;
    bool zero_init;      /* an uninitialized tensor: agc adds "= {0, 0}" (undefined) */
    bool synthetic;      /* a flag or temporary; always carried when written */
    bool reported;       /* an error about it was given: not again */
    const char *display; /* name in runtime messages: "<break>" */
    int bits;            /* FE_TY_INT, FE_TY_FLOAT: the C type's width (bool: 1) */
    bool is_signed;      /* FE_TY_INT */
} fe_var;

enum { FE_READ = 1, FE_WRITE = 2 };

typedef struct fe_ref {
    fe_var *var;
    fe_range at; /* the identifier */
    int mode;    /* FE_READ | FE_WRITE */
} fe_ref;

typedef struct fe_refs {
    fe_ref *items;
    int n, cap;
} fe_refs;
void fe_refs_add(fe_refs *r, fe_var *v, fe_range at, int mode);
void fe_refs_merge(fe_refs *into, const fe_refs *from);
int fe_refs_mode(const fe_refs *r, const fe_var *v); /* union of modes, 0 if absent */

typedef struct fe_ternary fe_ternary;

/* `v = rhs` inside an expression, v a variable. */
typedef struct fe_assign {
    fe_var *var;
    unsigned lhs_at; /* where v is written */
    fe_range rhs;    /* up to the ',', ';' or bracket that ends it */
} fe_assign;

/* An expression: its text and what it references. */
typedef struct fe_expr {
    fe_range range;
    fe_refs refs;          /* every variable reference inside, nested ones too */
    fe_vec assigns;        /* fe_assign*: its simple assignments */
    fe_vec terns;          /* fe_ternary*: the outermost staged ?: inside */
    fe_var *assign_to;     /* the whole expression is `v = e` */
    bool rhs_reads_target; /* ... and e reads v */
} fe_expr;

typedef enum fe_cond_kind {
    FE_COND_C,      /* a C condition, evaluated while tracing */
    FE_COND_BOOL,   /* ag_bool(e): staged */
    FE_COND_TENSOR, /* a tensor agc made (a flag): staged */
    FE_COND_NOT,
    FE_COND_AND,
    FE_COND_OR,
    FE_COND_SELECT /* a ? b : c */
} fe_cond_kind;

/* A condition, as a tree of the operators agc stages lazily. */
typedef struct fe_cond {
    fe_cond_kind kind;
    fe_range range;
    int line;
    bool staged;      /* contains ag_bool */
    fe_expr *e;       /* C: the expression; BOOL: the tensor inside ag_bool */
    bool is_bool;     /* BOOL: e is a comparison or logical op (dtype bool) */
    const char *text; /* TENSOR */
    fe_refs refs;     /* TENSOR: the flags it reads */
    struct fe_cond *a, *b, *c;
} fe_cond;

/* A staged `?:` inside an expression: lowered to a staged if that
 * assigns a temporary. */
struct fe_ternary {
    fe_range range;
    int line;
    fe_cond *cond;
    fe_expr *then_e, *else_e;
    const char *temp; /* gen.c: the temporary's name */
};

typedef enum fe_stmt_kind {
    FE_BLOCK,
    FE_IF,
    FE_WHILE,
    FE_DO,
    FE_FOR,
    FE_SWITCH,
    FE_BREAK,
    FE_CONTINUE,
    FE_RETURN,
    FE_DECL,
    FE_EXPR,
    FE_GOTO,
    FE_LABEL,
    FE_CASE,
    FE_NULL,
    FE_OTHER
} fe_stmt_kind;

/* Exits that agc lowers to flags. */
enum { FE_EXIT_BREAK = 1, FE_EXIT_CONTINUE = 2, FE_EXIT_RETURN = 4 };

typedef struct fe_stmt {
    fe_stmt_kind kind;
    fe_range range; /* with its ';' */
    int line;
    struct fe_stmt *parent;
    struct fe_stmt **kids; /* BLOCK: items; LABEL, CASE: the statement */
    int n_kids;
    struct fe_stmt *then_s, *else_s; /* IF */
    struct fe_stmt *body;            /* loops, SWITCH */
    struct fe_stmt *init;            /* FOR (NULL when omitted) */
    fe_cond *cond;                   /* IF, loops (NULL for `for (;;)`), SWITCH */
    fe_expr *inc;                    /* FOR */
    fe_expr *expr;                   /* EXPR; RETURN (NULL: no value) */
    fe_var **decls;                  /* DECL */
    fe_expr **inits;                 /* DECL: initializers (NULL: none) */
    int n_decls;
    const char *label;      /* LABEL; GOTO: its target */
    bool staged;            /* IF and loops: the condition is staged */
    bool rewrite;           /* something inside needs rewriting */
    struct fe_stmt *target; /* BREAK, CONTINUE: the loop or switch left */
    bool lowered;           /* BREAK, CONTINUE: becomes a flag */
    fe_var *brk, *cont;     /* staged loops: their flags, when used */
} fe_stmt;

typedef enum fe_ret_kind { FE_RET_VOID, FE_RET_TENSOR, FE_RET_STRUCT } fe_ret_kind;

/* A call of an AG_FUNCTION to itself. */
typedef struct fe_self_call {
    fe_range at;      /* the callee's name */
    bool conditional; /* in an operand of a C ?:, && or || */
} fe_self_call;

typedef struct fe_func {
    const char *name;
    int line;
    fe_range range;       /* the whole definition */
    fe_range header;      /* up to the body's '{' */
    fe_range params_text; /* between the parentheses */
    fe_vec annots;        /* fe_range*: the annotation macros, left out of the wrapper */
    fe_stmt *body;
    fe_var **params;
    int n_params;
    const char *ret_type; /* its spelling */
    fe_ret_kind ret;
    const char **ret_fields; /* FE_RET_STRUCT */
    int n_ret_fields;
    const char *signature, *alias; /* AG_SIGNATURE / AG_ALIAS, or NULL */
    fe_range signature_range;      /* its AG_SIGNATURE(...) (empty: not in the header) */
    bool bfloat16;                 /* AG_BFLOAT16 */
    bool jit_compile;              /* AG_JIT_COMPILE */
    bool has_staged;               /* any staged construct */
    bool has_goto;                 /* a goto: liveness gives up on order */
    fe_vec computed_gotos;         /* fe_range*: each `goto *` and `&&label` */
    fe_vec self_calls;             /* fe_self_call*: its calls to itself */
    fe_var *retval, *returned;     /* when a return is lowered */
    fe_vec vars;                   /* fe_var*: every local and parameter */
} fe_func;

typedef struct fe_unit {
    fe_source *src;
    fe_vec funcs; /* fe_func*, in file order */
} fe_unit;

/* ------------------------------------------------------------- stages */

typedef struct fe_options {
    const char *input;
    const char *output;      /* "-" for stdout */
    const char *contents;    /* not NULL: the input's text, not read from disk */
    size_t contents_len;
    const char *compdb_dir;  /* -p: a directory with compile_commands.json */
    const char **clang_args; /* -I -D -U -std= -isystem and what follows -- */
    int n_clang_args;
    FILE *diag;              /* diagnostics (NULL: stderr) */
    bool color;
    bool md;             /* -MD or -MMD */
    bool mmd;            /* -MMD: without system headers */
    bool mp;             /* -MP */
    const char *mf, *mt; /* -MF file, -MT target */
} fe_options;

/* parse.c: parses the file with libclang. Prints libclang's errors and
 * returns NULL after one. *deps gets the included files (fe_vec of char*). */
fe_unit *fe_parse(const fe_options *opt, fe_vec *deps);

/* precheck.c: reports what libclang would not come back from in the
 * input's text ('::' where clang 17 to 19 hang); true when there was one. */
bool fe_colon_colon(const fe_source *s);
/* precheck.c: reports where the input's text nests (), [] and {} deeper
 * than 256 levels, which clang parses only after minutes of expanding
 * macros, or not at all (a crash); true when it does. */
bool fe_too_deep(const fe_source *s);

/* args.c: libclang's arguments for the input: -p's flags, the command
 * line's, and what agc adds. NULL after an error. */
const char **fe_clang_args(const fe_options *opt, int *argc);
/* args.c: the flags a C compiler needs to compile the input (or its
 * staged C): the same, without clang's resource directory. */
const char **fe_cc_flags(const fe_options *opt, int *argc);

/* prefix.c: the directories holding the runtime's ag.h, in search order
 * (the install prefix's, the source tree's); returns how many. */
int fe_ag_include_dirs(const char *dirs[2]);

/* includes.c: the files the input includes or embeds (through the
 * headers agc can follow, and the object-like macros that name them) that
 * libclang must not read: not regular files, or too large.
 * fe_parse gives them to libclang as empty unsaved files, and
 * fe_report_blocked (libclang.h) reports the ones it was asked to read. */
typedef struct fe_blocked_file {
    const char *path;
    const char *why; /* "it is not a regular file" */
    fe_vec embeds;   /* fe_embed_site*: the #embed directives that name it */
} fe_blocked_file;
/* Where an #embed names a blocked file (libclang, which lists the files it
 * included, does not list the ones it embedded). */
typedef struct fe_embed_site {
    const fe_source *src;
    unsigned off; /* its operand */
} fe_embed_site;
void fe_blocked_includes(const fe_source *main_src, const char *const *args, int n_args,
                         fe_vec *blocked);

/* compdb.c: appends to *args (char*) the flags that matter for parsing
 * from the command that compiles `input` in dir/compile_commands.json.
 * Reports an error and returns false when there is no database or the
 * input is not in it. */
bool fe_compdb_flags(const char *dir, const char *input, fe_vec *args);

/* signature.c: reports an AG_SIGNATURE that does not parse, or does not
 * describe fn's parameters (tensors in order, C scalars by name). */
void fe_check_signature(const fe_source *src, const fe_func *fn);

/* analyze.c */
void fe_analyze(fe_func *fn);
unsigned fe_exits(const fe_stmt *s, bool returns_lowered);
bool fe_always_exits(const fe_stmt *s, bool returns_lowered);
bool fe_live_after(const fe_var *v, const fe_stmt *s);
bool fe_loop_exposed(const fe_var *v, const fe_stmt *loop);
void fe_stmt_refs(const fe_stmt *s, fe_refs *out);
void fe_cond_refs(const fe_cond *c, fe_refs *out);
bool fe_is_carriable(const fe_var *v); /* ag_tensor or ag_tensor_array */
/* The function whose returns fe_stmt_refs counts as flag writes. */
void fe_set_current_function(const fe_func *fn);

/* out.c: the output writer. Lines of user text carry #line directives to
 * the user's file; generated lines get a marker that fe_out_finish turns
 * into #line directives to the output file. */
typedef struct fe_out {
    fe_buf buf;
    const fe_source *src;
    int map;       /* OUT_MAP_* (out.c) */
    int user_line; /* when mapped to the user's file: the current line */
    bool bol;      /* at the beginning of a line */
} fe_out;

void fe_out_init(fe_out *o, const fe_source *src);
/* Generated lines (a line in progress is ended first). */
void fe_out_gen(fe_out *o, const char *fmt, ...) FE_PRINTF(2, 3);
void fe_out_user(fe_out *o, fe_range r);
/* User text between statements: blank line ends and indentation dropped. */
void fe_out_gap(fe_out *o, fe_range r);
void fe_out_at(fe_out *o, int user_line, const char *fmt, ...) FE_PRINTF(3, 4);
/* Text inside the current line, keeping its mapping (a rewritten piece of
 * a user's line). */
void fe_out_inline(fe_out *o, const char *text);
void fe_out_eol(fe_out *o); /* ends the line in progress */
void fe_out_append(fe_out *o, const fe_out *from);
/* Resolves the markers; the result belongs to the caller. */
char *fe_out_finish(fe_out *o, const char *out_name, size_t *len);

/* gen.c: the staged body of fn, and its lifted functions. */
void fe_gen_function(fe_func *fn, const fe_source *src, fe_out *lifted, fe_out *body);

/* emit.c: the whole output file. */
void fe_emit_unit(const fe_unit *u, fe_out *o);
/* The function's C prototype without agc's annotations, on one line. */
const char *fe_prototype(const fe_unit *u, const fe_func *fn);
int fe_num_outputs(const fe_func *fn);

/* deps.c: the dependency file's name and its text (heap, the caller's). */
const char *fe_deps_file(const fe_options *opt);
/* Whether the dependency file is none of the n_outs other outputs (NULL
 * entries skipped) and none of the files `read` (char*: the headers the
 * input included), compared by identity; false after an error naming
 * both. */
bool fe_deps_file_apart(const fe_options *opt, const char *const *outs, int n_outs,
                        const fe_vec *read);
char *fe_deps_text(const fe_options *opt, const fe_vec *deps, size_t *len);

/* convert.c: one conversion. Diagnostics go to opt->diag; the result's
 * texts are on the heap (fe_result_free). Returns 0, or 1 after errors
 * (then the result is empty). Frees everything else it made. */
/* What building ahead of time needs of each AG_FUNCTION beyond the
 * staged C (driver.c, build.c). Heap copies, freed by fe_result_free. */
typedef struct fe_param_info {
    char *name;
    fe_tclass tclass;
    int bits; /* C scalars: the width (bool: 1) */
    bool is_signed;
} fe_param_info;

typedef struct fe_func_info {
    char *name;
    int line;
    char *signature; /* AG_SIGNATURE, or NULL */
    char *prototype; /* "ag_tensor power(ag_tensor x, int y)" */
    int n_params;
    fe_param_info *params;
    int n_outputs;
    bool returns_struct;
} fe_func_info;

typedef struct fe_result {
    char *output; /* the staged C */
    size_t output_len;
    char *deps; /* the Make rule, when opt->md; else NULL */
    size_t deps_len;
    fe_func_info *funcs; /* every AG_FUNCTION, in file order */
    int n_funcs;
} fe_result;
int fe_convert(const fe_options *opt, fe_result *res);
void fe_result_free(fe_result *res);

/* files.c: writes a run's outputs all or nothing: regular files (and the
 * files symbolic links name) through a temporary renamed once all are
 * ready, devices and FIFOs in place, "-" to stdout. False after
 * reporting why; then no regular file was touched. */
typedef struct fe_output {
    const char *path;
    const char *data;
    size_t len;
} fe_output;
bool fe_write_outputs(const fe_output *outs, int n);
bool fe_write_file(const char *path, const char *data, size_t len);
/* Whether both paths name the same existing file (gcc refuses to write
 * its input). */
bool fe_same_file(const char *a, const char *b);

#define AGC_VERSION_STRING "0.1.0"

#endif
