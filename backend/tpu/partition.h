/*
 * partition.h - SPMD partitioning of a TPU function over a slice's chips
 * (prefix tpu_slice / tpu_split): every chip runs the program on its
 * shard of the data (docs/tpu-model.md, "Several chips").
 *
 * A product (a rank-2 float matmul, a float conv2d) splits its work over
 * the chips one of three ways, or not at all:
 *
 *   M  rows: the left operand's rows (a conv2d's images); the weights are
 *      whole on every chip; the result lies by rows; no communication
 *   N  columns: the weights' columns; the result lies by columns
 *   K  the contracting dimension: each chip sums its share of K, then an
 *      all-reduce adds the partial sums (in chip order: numerics below)
 *
 * chosen per product by the cost model (the MXU's cycles on a chip's
 * share, the collectives it needs, and whether a chip's operands fit its
 * HBM), or forced by the device spec's `partition`. Elementwise loops
 * follow their operands' layout; a value that a consumer needs whole
 * (an XLU op, a reshape, control flow, a product split another way) is
 * all-gathered once, right after it is made. Each collective is an
 * instruction on the chip's ICI queues (one per mesh axis), costed by
 * collective.c.
 *
 * A dimension the chips divide splits evenly; one they do not divide
 * splits in units of TPU_SHARE_UNIT rows or columns (images), so that the
 * shares differ by at most one unit, when it has a unit for every chip
 * (tpu_slice_share). Chips whose shares are the same run the same
 * program: the slice compiles one program per distinct set of shares
 * (one in all when every split is even), and the simulator times each on
 * its own (sim.c), a collective starting when the slowest chip reaches it.
 */
#ifndef TPU_PARTITION_H
#define TPU_PARTITION_H

#include "collective.h"
#include "program.h"

typedef enum tpu_split {
    TPU_SPLIT_NONE, /* the whole product on every chip (or one chip) */
    TPU_SPLIT_M,
    TPU_SPLIT_N,
    TPU_SPLIT_K,
} tpu_split;

/* How a value lies over the chips. */
typedef enum tpu_layout {
    TPU_WHOLE, /* every chip holds all of it */
    TPU_ROWS,  /* split along its second-to-last dimension */
    TPU_COLS,  /* split along its last dimension */
    TPU_BATCH, /* split along its first dimension (a conv2d's images) */
} tpu_layout;

/* What partitioning did to one node. */
typedef struct tpu_shard {
    tpu_split split;     /* a product's */
    tpu_layout layout;   /* its value on each chip, before any collective */
    bool collective;     /* a collective follows it: ... */
    tpu_collective kind; /* all-gather (then whole everywhere) or all-reduce (K) */
    ir_type whole;       /* the value's type when whole */
    int64_t bytes;       /* the whole value's padded bytes, what the collective moves */
    int64_t cycles[4];   /* the collective's phases, alternately on the y and x links */
    tpu_unit queue[4];   /* (all-gather: x then y; all-reduce: y, x, x, y) */
    int n_phases;
    double formula_seconds; /* the same at the ring formula (the roofline's) */
} tpu_shard;

/* An uneven split's unit: a share is a whole number of these rows,
 * columns or images, but for the last chip's, which ends the dimension.
 * A share's rows pad to 8 in HBM (an f32 tile's sublanes) whatever their
 * count, so a finer split would only move padding between chips. */
enum { TPU_SHARE_UNIT = 8 };

typedef struct tpu_slice {
    int chips, nx, ny;
    tpu_shard *node;      /* by node id */
    int n_ids;
    /* The chips' programs: one per distinct set of shares, program 0 the
     * one chip 0 runs (the only one when every split is even). */
    int n_programs;
    ir_function **chip_fn; /* by program: the function with each value's type
                            * on its chips */
    int *program_of;       /* by chip */
    int *first_chip;       /* by program: the lowest chip that runs it */
    /* the chip_fns' stand-ins for the shares a chip takes locally of
     * values it holds whole (partition.c's share_of), and their layouts */
    ir_node **stand_in;
    tpu_layout *stand_in_layout;
    int n_stand_ins;
} tpu_slice;

/* Partitions fn (placed, shapes static) over spec's chips (> 1). NULL
 * with a reason in diag when the copy with per-chip types fails. */
tpu_slice *tpu_slice_new(const ir_function *fn, pass_analyses *am, const tpu_spec *spec,
                         tgt_diag *diag);
void tpu_slice_free(tpu_slice *s);

/* After p's programs (p->programs) are compiled from s->chip_fn, before
 * their HBM is placed: a split product's multiply-adds and flops become
 * the slice's (every chip's share added), so the profile counts useful
 * work once (a product whole on every chip counts once too); a gathered
 * value's buffer holds the whole. */
void tpu_slice_count(tpu_program *p);

/* The listing's parts (listing_slice.c): the slice's header lines, and
 * after node n's line, the collective that follows it. */
void tpu_slice_print_header(const tpu_program *p, FILE *out);
void tpu_slice_print_node(const tpu_program *p, const ir_node *n, int depth, FILE *out);

/* "matmul at mlp.c:12 split N (columns); ..." for each product of p's
 * top level, into buf (listing_slice.c; the converter's report). */
void tpu_slice_splits(const tpu_program *p, char *buf, size_t n);

/* "M (rows)", ...: how the listing and the report name a split. */
const char *tpu_split_name(tpu_split s);

/* Chip c's share of a split dimension of d rows, columns or images:
 * [*from, *to). Even when the chips divide d (d / chips each); else
 * whole units of TPU_SHARE_UNIT dealt out as evenly (chip c takes units
 * [u c / chips, u (c + 1) / chips) of the u = ceil(d / unit)), the last
 * chip's ending at d. Every split of a dimension (M, N, K, a loop's, a
 * parameter's) takes these shares. */
void tpu_slice_share(int64_t d, int chips, int c, int64_t *from, int64_t *to);

/* Whether a dimension of d splits over the chips: they divide it, or it
 * has a unit for each. */
bool tpu_slice_can_split(int64_t d, int chips);

/* A split product's result, computed chip by chip with the MXU's
 * numerics (sharded.c), the chips' shares as tasks on pool (NULL: one
 * after another): M and N shares bit-identical to one chip's, K partial
 * sums added in chip order. NULL when n does not split. */
struct tpu_pool;
rt_value *tpu_sharded_product(const tpu_slice *s, const tpu_spec *spec, const ir_node *n,
                              rt_value *const *in, struct tpu_pool *pool);

#endif
