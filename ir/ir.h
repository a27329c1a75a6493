/*
 * ir.h - the graph IR (prefix ir_).
 *
 * A function is a graph: typed SSA values in program order, each made by one
 * node. Nodes reuse the runtime's op table (rt_op); a few structural opcodes
 * follow it: function and region parameters, functional `cond` and `while`
 * whose regions are sub-graphs with explicit inputs and outputs, and `get`,
 * which picks one result of a cond or while.
 *
 * Side effects (print, assert, variable reads and writes, and cond/while
 * regions that contain any) form a chain per graph: each effectful node has
 * a control edge to the previous one, so program order survives every pass.
 *
 * Every node keeps the user's source location and a device. All memory of a
 * function lives in its arena and is freed at once.
 */
#ifndef IR_H
#define IR_H

#include "rt.h"

/* ------------------------------------------------------------------ arena */

typedef struct ir_arena ir_arena;

ir_arena *ir_arena_new(void);
void ir_arena_free(ir_arena *a);
void *ir_alloc(ir_arena *a, size_t n); /* zeroed, 16-byte aligned */
char *ir_strdup(ir_arena *a, const char *s);

/* ---------------------------------------------------------------- opcodes */

typedef enum ir_opcode {
    /* 0 .. RT_OP_COUNT-1 are the runtime ops of ops.def */
    IR_PARAM = RT_OP_COUNT, /* a graph's input */
    IR_COND,                /* cond(pred, inputs...) {then} {else} */
    IR_WHILE,               /* while(inputs...) {cond} {body} */
    IR_GET,                 /* get(tuple) {index}: one result of cond/while */
    IR_OPCODE_COUNT
} ir_opcode;

const char *ir_opcode_name(int opcode);
/* The opcode as users know it (rt_op_public_name; "a staged if" and the
 * like for the structural ones): for messages, listings and profiles,
 * never the IR text. */
const char *ir_opcode_public_name(int opcode);
bool ir_opcode_from_name(const char *name, int *out);

/*
 * Where a node runs: the host (IR_HOST, 0), or a device, named by the
 * target that runs it ("tpu-model"). The IR knows no target: names are
 * interned process-wide into small numbers, so a device compares and
 * copies as an int; the pipeline and the targets give them meaning.
 */
typedef int ir_device;
enum { IR_HOST = 0, IR_MAX_DEVICES = 16 };

/* The device named `name`, interned on first use; IR_HOST for NULL or "";
 * -1 when IR_MAX_DEVICES - 1 names are taken already. Thread-safe. */
ir_device ir_device_named(const char *name);
/* Its name; NULL for the host and for numbers no name has. */
const char *ir_device_name(ir_device d);

/* ------------------------------------------------------------------ types */

/* The static type of a value: dtype and shape, with -1 for unknown dims.
 * For tensor arrays (dtype RT_LIST) the shape is the element shape (rank -1
 * when unknown) and elem_dtype the element dtype. cond and while nodes have
 * a tuple of types instead (ir_node.results). */
typedef struct ir_type {
    ag_dtype dtype;
    ag_dtype elem_dtype;
    ag_shape shape;
} ir_type;

bool ir_type_equal(const ir_type *a, const ir_type *b);
/* Whether a concrete value has type t: its dtype (and element dtype for a
 * list), and its rank and dims where t knows them (-1 matches any). What
 * compiled code relies on for its inputs. */
bool ir_value_has_type(const ir_type *t, const rt_value *v);
/* "f32[2,?]", "bool[]", "list<i32>[3]" into buf. */
char *ir_type_str(const ir_type *t, char *buf, size_t n);

/* ------------------------------------------------------------ graph, node */

typedef struct ir_graph ir_graph;
typedef struct ir_node ir_node;

struct ir_node {
    int opcode;     /* rt_op or ir_opcode */
    int id;         /* value number, unique in its function; printed %id */
    ir_graph *graph; /* the graph this node belongs to */
    ir_node *prev, *next;

    int n_in;
    ir_node **in; /* data inputs */

    ir_node *ctrl; /* control edge: the previous effectful node, or NULL */
    bool effect;   /* on the effect chain (op flag, or a region with effects) */

    rt_attrs attrs; /* strings and literals live in the function's arena */
    int index;      /* IR_GET: which result; IR_PARAM: position */

    ir_type type;   /* the result type (not for cond/while) */
    int n_results;  /* cond/while: the number of results */
    ir_type *results;

    ir_graph *region[2]; /* cond: then, else; while: cond, body */

    ag_loc loc; /* the user's file and line */
    int col;
    ir_device device; /* IR_HOST unless a pass placed it on a device */
    /* The AG_FUNCTIONs whose inlined call made the node, outermost first,
     * "/"-separated ("encode/layer"); NULL: the function's own body. The
     * converter places and costs functions by it. */
    const char *scope;
    void *aux; /* scratch for passes and executors */
};

struct ir_graph {
    struct ir_function *fn;
    ir_node *parent; /* the cond/while owning this region; NULL at top */
    int n_params;
    ir_node **params;
    ir_node *first, *last; /* nodes in program order (params excluded) */
    int n_results;
    ir_node **results; /* values yielded (or returned at top level) */
    ir_node *last_effect; /* tail of the effect chain while building */
};

typedef struct ir_function {
    ir_arena *arena;
    const char *name;
    ir_graph *body;
    int next_id;
    /* Variables the function captures by identity; attrs.ref of var_read
     * and assign nodes points at one of them. The text form names them
     * by index (@v0, @v1, ...). */
    int n_vars, cap_vars;
    rt_variable **vars;
    /* The scope nodes appended from now on get (the tracer sets it while
     * it inlines a call of another AG_FUNCTION). */
    const char *scope;
} ir_function;

ir_function *ir_function_new(const char *name);
void ir_function_free(ir_function *fn);

/* A fresh region graph owned by fn (its parent is set when attached). */
ir_graph *ir_graph_new(ir_function *fn);
ir_node *ir_add_param(ir_graph *g, const ir_type *t);
void ir_set_results(ir_graph *g, int n, ir_node *const *values);

/*
 * Appends a node computing opcode on inputs, with a copy of attrs (strings
 * and literal copied into the arena). Effectful ops are chained to the
 * graph's previous effect. Returns the node; its type is set by the caller
 * (the tracer infers it with rt_infer).
 */
ir_node *ir_append(ir_graph *g, int opcode, const rt_attrs *attrs, int n_in,
                   ir_node *const *in, const ir_type *type, ag_loc loc);
/* A copy of concrete value v (its data too) in fn's arena, freed with fn. */
rt_value *ir_arena_value(ir_function *fn, const rt_value *v);
/* A constant holding a copy of a concrete value. */
ir_node *ir_append_const(ir_graph *g, const rt_value *v, ag_loc loc);
/* cond/while with their regions already built; results typed by caller. */
ir_node *ir_append_region_op(ir_graph *g, int opcode, int n_in, ir_node *const *in,
                             ir_graph *r0, ir_graph *r1, int n_results,
                             const ir_type *results, ag_loc loc);
/* get(tuple) {index} */
ir_node *ir_append_get(ir_graph *g, ir_node *tuple, int index, ag_loc loc);

/* The index of a captured variable, adding it if new. */
int ir_function_var_index(ir_function *fn, rt_variable *v);

/* Makes fn capture vars[i] where it captured fn->vars[i] (every node that
 * refers to one), e.g. after ir_parse, whose variables are placeholders. */
void ir_function_rebind_vars(ir_function *fn, rt_variable *const *vars);

/* Sets every node's effect flag and control edge again from its opcode
 * (and a cond or while from its regions), after a change of what is
 * effectful (a variable read turned into a constant, or back). */
void ir_rechain_effects(ir_function *fn);

/* Unlinks a node from its graph (its uses must be gone). */
void ir_remove(ir_node *n);
/* Whether a region (recursively) contains an effectful node. */
bool ir_graph_has_effects(const ir_graph *g);
/* Whether scope `s` is `outer` or inside it ("a/b" is inside "a"). */
bool ir_scope_within(const char *s, const char *outer);
/* The number of nodes of fn, counting regions recursively (params excluded). */
int ir_function_num_nodes(const ir_function *fn);

/* ------------------------------------------------- text form and verifier */

/* Prints fn in the text form (docs/ir.md). */
void ir_print(const ir_function *fn, FILE *out);
/* Parses one function from text; on error returns NULL and writes
 * "name:line:col: error: message" into err. */
ir_function *ir_parse(const char *text, const char *name, char *err, size_t errlen);
/* The same, but every node is located at its own line and column of the
 * text, in file `name` (the loc(...) it carries is read and dropped): so
 * the verifier's messages about an edited IR file point into that file. */
ir_function *ir_parse_text_locs(const char *text, const char *name, char *err,
                                size_t errlen);
/* A copy of fn with the same node ids and the same variables (its text
 * form parsed back); NULL with a message in err. */
ir_function *ir_copy(const ir_function *fn, char *err, size_t errlen);
/*
 * Splits fn where its last n_late_params parameters enter (ir/split.c):
 * *early computes fn's first results and the cut, the early values the
 * rest reads; *late takes (cut..., late params) and gives fn's last
 * n_late_results results. Nodes with an id >= first_late_id are late too.
 * *n_cut is the cut's size. False with a message in err.
 */
bool ir_split(const ir_function *fn, int n_late_params, int n_late_results, int first_late_id,
              ir_function **early, ir_function **late, int *n_cut, char *err, size_t errlen);
/* Checks the invariants; on failure writes "file:line:col: error: ..."
 * (the node's source location) into err and returns false. */
bool ir_verify(const ir_function *fn, char *err, size_t errlen);

#endif /* IR_H */
