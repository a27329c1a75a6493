/*
 * program.h - a TPU program (prefix tpu_): what the TPU-model compiler
 * makes of a graph, and what its simulator runs.
 *
 * Every node that runs becomes (part of) one instruction for one unit:
 *
 *   dma.h2d / dma.d2h   the host link: parameters in, results out
 *   mxu.matmul, mxu.conv2d  weight-stationary tiles through the matrix units
 *   vpu.loop            a fused loop of elementwise ops over vregs
 *   xlu.*               reductions, transposes, softmax, data movement
 *   scalar.cond, scalar.while   control flow, with region programs
 *   hbm.const           a constant, resident in HBM with the program
 *   dma.to_device, dma.to_host  a value crossing to or from an op placed
 *                       on the host (soft device placement)
 *   host.*              an op placed on the host
 *
 * Tensors live in HBM in (8,128) tiles of 32-bit values ((16,128) for
 * bf16): the last two dims pad up to a tile, and every byte moved pays for
 * the padding. An instruction's cost is fixed at compile time from static
 * shapes; the simulator (sim.c) orders instructions on their units.
 * docs/tpu-model.md documents the listing (listing.c).
 */
#ifndef TPU_PROGRAM_H
#define TPU_PROGRAM_H

#include "exec.h"
#include "spec.h"
#include "target.h"

typedef enum tpu_unit {
    TPU_UNIT_H2D,    /* host link, host to device */
    TPU_UNIT_D2H,    /* host link, device to host */
    TPU_UNIT_HBM,    /* the DMA engine between HBM and VMEM: staging */
    TPU_UNIT_MXU,    /* the matrix units, together */
    TPU_UNIT_VPU,
    TPU_UNIT_XLU,
    TPU_UNIT_SCALAR,
    TPU_UNIT_HOST,   /* the host's CPU: ops placed there (soft placement) */
    TPU_N_UNITS,     /* a chip's units (ag_profile lists these) */
    /* A slice's links (several chips): a chip's ICI links along each mesh
     * axis, one queue each; collectives run there (partition.h) */
    TPU_UNIT_ICI_X = TPU_N_UNITS,
    TPU_UNIT_ICI_Y,
    TPU_N_QUEUES
} tpu_unit;

typedef enum tpu_kind {
    TPU_NONE,     /* nothing to do: get, aliases (reshape), nodes inside a loop */
    TPU_CONST,
    TPU_MXU,
    TPU_VPU_LOOP,
    TPU_XLU,
    TPU_COND,
    TPU_WHILE,
    TPU_TRANSFER, /* to_device / to_host: a value over the host link */
    TPU_HOST,     /* an op placed on the host */
} tpu_kind;

/* The target's name (tgt_tpu_model.name), which is also how the IR names
 * the device its nodes are placed on (ir_node.device). */
#define TPU_TARGET "tpu-model"

/* The MXU multiplies int8 operands at twice the bf16 rate (as TPU v5e's
 * int8 peak is twice its bf16 one): each cell holds two int8 weights of
 * consecutive k and does both multiply-adds per cycle, so an int8 weight
 * tile is rows x this deep in k. Sums are int32 (numerics.h). */
enum { TPU_MXU_INT8_DEPTH = 2 };

/* Where the device runs an op (ops_tpu.c, one row per op of ops.def). */
typedef enum tpu_op_unit {
    TPU_OP_UNLISTED, /* no row: never in the table (test_tpu checks) */
    TPU_OP_HOST,     /* not on the device: soft placement runs it on the host */
    TPU_OP_CONST,    /* resident in HBM with the program */
    TPU_OP_VIEW,     /* the same data seen in another shape: no work */
    TPU_OP_VPU,      /* the vector unit, fused into loops over vregs */
    TPU_OP_XLU,      /* the cross-lane unit: reductions, data movement */
    TPU_OP_MXU,      /* the matrix units */
    TPU_OP_LINK,     /* the host link: to_device, to_host */
} tpu_op_unit;

extern const tpu_op_unit tpu_ops[RT_OP_COUNT];

/* What one node costs each time it runs. */
typedef struct tpu_inst {
    tpu_kind kind;
    tpu_unit unit;
    int64_t cycles;      /* the whole instruction when nothing else runs: staging included */
    int64_t busy;        /* cycles on its own unit */
    int64_t hbm_bytes;   /* read and written, padding included */
    int64_t flops;       /* useful arithmetic (no padding) */
    int64_t macs;        /* MXU: useful multiply-adds */
    int64_t tiles;       /* MXU: weight tiles; VPU: vregs per op */
    int passes;          /* MXU: bf16 passes (precision) */
    bool int8;           /* MXU: int8 operands (qmatmul, qconv2d): one int8 pass,
                          * weight tiles TPU_MXU_INT8_DEPTH times as deep */
    int loop;            /* VPU: the fusion loop it belongs to, or -1 */
    bool loop_head;      /* VPU: the loop's first member: it carries the cost */
    bool stored;         /* VPU loop member: read outside its loop (or a result),
                          * so the loop stores it to HBM; the others live in
                          * vregs only (hbm.c gives only these a buffer) */
    /* VMEM staging (mxu, vpu loops, xlu): the operands stream from HBM into
     * VMEM and the results back, in `blocks` double-buffered blocks on the
     * HBM DMA engine; the first block's load comes before the work and the
     * last block's store after it, the rest overlap the work. */
    int64_t work;        /* the unit's own cycles (busy is the larger of work and dma_middle) */
    int64_t blocks;      /* 0 when not staged */
    int64_t block_bytes; /* one block, in and out */
    int64_t load_first, dma_middle, store_last; /* cycles of the HBM DMA engine */
    /* VMEM residency (vmem.c): bytes it reads from values kept in VMEM and
     * writes to its own value kept there, which staging does not move (the
     * HBM traffic saved); no_load / no_store: that end of the staging has
     * nothing left to move, so it neither runs nor waits HBM's latency */
    int64_t vmem_read, vmem_written;
    bool no_load, no_store;
    bool vmem;           /* its value stays in VMEM: no HBM buffer, no store */
    int64_t vmem_addr;   /* where in VMEM, when vmem */
    /* HBM: its value's buffer (hbm.c), or -1 when it has none (a value of
     * a fused loop that only the loop reads, a host value); reshapes share
     * their input's */
    int64_t hbm_addr;
    int64_t padded_bytes; /* its value's bytes in HBM */
} tpu_inst;

typedef struct tpu_transfer {
    int64_t bytes, padded_bytes;
    int64_t cycles;
} tpu_transfer;

typedef struct tpu_program {
    const ir_function *fn;   /* as a chip runs it: on several chips, a copy whose values
                              * have a chip's share's types (partition.h) */
    ir_plan *plan;           /* what runs (the simulator executes with it): the whole
                              * function */
    struct tpu_slice *slice; /* several chips: the partitioning, else NULL */
    /* A slice's programs, by program (partition.h: one per distinct set of
     * shares): [0] is this one, chip 0's; the others have no plan. NULL
     * and 0 on one chip. */
    struct tpu_program **programs;
    int n_programs;
    const pass_fusion_plan *fusion;
    tpu_spec spec;
    int n_ids;
    tpu_inst *inst;          /* by node id */
    tpu_transfer *params;    /* by top-level parameter: dma.h2d */
    tpu_transfer *results;   /* by top-level result: dma.d2h */
    int64_t hbm_bytes;       /* allocated: the peak of what is live at once */
    int64_t vmem_bytes;      /* kept in VMEM between instructions: the peak (vmem.c) */
    int n_vmem;              /* values kept in VMEM */
    int n_mxu, n_loops, n_xlu; /* counts, for the listing's header */
} tpu_program;

/* Padded bytes of a tensor type in HBM; -1 when a dim is unknown. */
int64_t tpu_padded_bytes(const ir_type *t);
/* Whether t is a tensor whose every dimension is known (tiles.c). */
bool tpu_shape_static(const ir_type *t);

/* Gives every value that needs one an HBM buffer, reusing the buffers of
 * values no longer live (hbm.c), and sets p->hbm_bytes to the peak.
 * False, with the tensors live at the peak named in *diag, when the peak
 * is more than the device's HBM. */
bool tpu_allocate_hbm(tpu_program *p, const ir_liveness *live, tgt_diag *diag);

/* The node whose buffer v's bytes are in: v, or the input of the views
 * (reshapes) it is (hbm.c). */
const ir_node *tpu_buffer_of(const ir_node *v);

/* VMEM residency (vmem.c): marks the values that stay in VMEM between
 * instructions instead of going back to HBM (inst[].vmem, vmem_addr) and
 * sets p->vmem_bytes and p->n_vmem; the costs are compile.c's to redo.
 * Returns how many stay (0 when the spec's vmem.residency is off). */
int tpu_keep_in_vmem(tpu_program *p, const ir_liveness *live);

/* Compiles fn (every op supported: the pipeline checked) for spec, with
 * am's plans. NULL with a located reason in *diag: a shape not known at
 * compile time, HBM too small. */
tpu_program *tpu_compile(const ir_function *fn, pass_analyses *am, const tpu_spec *spec,
                         tgt_diag *diag);
void tpu_program_free(tpu_program *p);
/* The listing (docs/tpu-model.md). */
void tpu_program_print(const tpu_program *p, FILE *out);

/* --------------------------------------------------------------- running */

/* One box of a call's timeline: an instruction (or a stage of one) on its
 * unit, in cycles from the call's start. */
typedef struct tpu_event {
    int64_t start, cycles;
    tpu_unit unit;
    const char *what; /* static: the op's or the step's name ("matmul", "vmem.load") */
    int value;        /* the node's id (%N), or -1 */
    int line;         /* the user's line, or 0 */
    int program;      /* a slice: the chip program it ran in (partition.h), else 0 */
} tpu_event;

/* A call's events, in the order they were issued. */
typedef struct tpu_timeline {
    tpu_event *ev;
    int n, cap;
    int64_t cycles;       /* the call's length */
    double clock_hz;
    char function[64], device[64];
    /* A slice: chip c's events are those of program program_of[c] (NULL:
     * every chip's are all of them, one program); the picture and the
     * profile's shares show program `shown`'s, the slowest chip's. */
    int chips;
    int *program_of;
    int shown;
} tpu_timeline;

void tpu_timeline_free(tpu_timeline *t);

/* The most chips a slice has (the spec's limit). */
enum { TPU_MAX_CHIPS = 256 };

/* One chip's row of a slice's profile (profile_slice.c). */
typedef struct tpu_chip_figures {
    int64_t mxu, vpu, xlu, dma_hbm, ici_x, ici_y; /* busy cycles */
    int64_t hbm_bytes;
    int64_t cycles; /* when its last result was back on the host */
} tpu_chip_figures;

/* What one simulated call did. */
typedef struct tpu_profile {
    double seconds;                  /* simulated time of the call */
    double device_seconds;           /* from the first device op to the last (no host link) */
    int64_t cycles;
    int64_t busy[TPU_N_QUEUES];      /* cycles each unit worked (one chip's, and its links) */
    int64_t macs;                    /* useful MXU multiply-adds */
    int64_t int8_macs;               /* of them, on int8 operands (twice the bf16 rate) */
    double mxu_utilization;          /* macs / (peak per cycle x cycles), int8 ones at their rate */
    int64_t host_bytes, host_padding; /* over the host link, and how much was padding */
    int64_t hbm_bytes;
    int64_t hbm_saved;               /* not moved: read from or kept in VMEM (vmem.c) */
    double roofline_seconds;         /* max(flops / peak, bytes / bandwidth) */
    /* The call's cycles split so that they add up: each cycle goes to the
     * first unit busy then, in TPU_SHARE_ORDER, or to idle when none is
     * (waiting on a latency: HBM's, the host link's). */
    int64_t share[TPU_N_QUEUES];     /* the links' share: the call waiting on them */
    int64_t idle;
    /* A slice (chips > 1): busy, share and hbm_bytes are the slowest
     * chip's (the lowest of those that finish last: every chip's when
     * they run one program), macs the slice's, chip[] every chip's row;
     * the collectives by kind (tpu_collective: all-gather,
     * reduce-scatter, all-reduce), the same on every chip */
    int chips, mesh_x, mesh_y;
    int programs;  /* distinct chip programs (uneven shares: more than one) */
    int slowest;   /* the chip whose figures busy, share and hbm_bytes are */
    tpu_chip_figures chip[TPU_MAX_CHIPS];
    int64_t coll_count[3], coll_bytes[3], coll_cycles[3];
    double coll_formula_seconds;     /* the collectives at the ring formula */
} tpu_profile;

/* Compute first, then what feeds it: a cycle where the MXU works while a
 * transfer moves is the MXU's, the transfer hidden behind it. */
#define TPU_SHARE_ORDER                                                                    \
    {TPU_UNIT_MXU, TPU_UNIT_VPU, TPU_UNIT_XLU, TPU_UNIT_SCALAR, TPU_UNIT_HBM, TPU_UNIT_H2D, \
     TPU_UNIT_D2H, TPU_UNIT_HOST, TPU_UNIT_ICI_X, TPU_UNIT_ICI_Y}

/* Fills prof->share and prof->idle from t's events over t->cycles
 * (profile.c). */
void tpu_profile_shares(const tpu_timeline *t, tpu_profile *prof);

/* Runs p on args: the results as the TPU computes them (ir_execute's
 * contract) and, if prof is not NULL, the simulated profile; if timeline
 * is not NULL, the call's instructions on their units (the caller frees
 * it with tpu_timeline_free; trace.c writes it). */
bool tpu_run(const tpu_program *p, rt_value *const *args, int n_args, rt_value **results,
             tpu_profile *prof, tpu_timeline *timeline);
/* The simulated time of one call without computing any value: every
 * node as it would run, control flow taken once (a cond's first region,
 * one trip of a loop). For costs and benchmarks of programs too large to
 * run functionally. */
void tpu_time(const tpu_program *p, tpu_profile *prof);
const char *tpu_unit_name(tpu_unit u);
/* AG_PROFILE's text (profile.c; docs/tpu-model.md). */
void tpu_profile_print(const tpu_profile *prof, const char *name, FILE *out);
/* Its part for a slice (profile_slice.c): a row per chip, the ICI. */
void tpu_profile_print_slice(const tpu_profile *prof, FILE *out);

/* ---------------------------------------------------------- the timeline */

/*
 * AG_PROFILE_TRACE=PATH (trace.c): every call's timeline goes into PATH in
 * the Chrome trace format, the calls end to end on one time axis, the file
 * complete after each call; and the last TPU_PICTURE_CALLS calls are drawn
 * in PATH's stem + ".svg" (picture.c), a picture that opens offline. A new
 * PATH starts both afresh. Thread-safe; takes t's events.
 */
enum { TPU_PICTURE_CALLS = 8 };
void tpu_trace_add(const char *path, tpu_timeline *t);
/* PATH's picture: PATH without ".json", plus ".svg". */
void tpu_trace_picture_path(const char *path, char *out, size_t n);

/* One call of a picture: its timeline and where it starts on the axis. */
typedef struct tpu_picture_call {
    const tpu_timeline *t;
    double offset_us; /* where it starts on the trace's axis */
    long long index; /* the call's number in the trace, from 1 */
} tpu_picture_call;

/* An SVG document of the calls: one row per unit and one for the calls,
 * a box per instruction (its name, value, line and times in a tooltip), a
 * time axis in microseconds and a legend. `dropped` earlier calls are in
 * the Chrome trace only (a line says so). False if out failed. */
bool tpu_picture_write(const tpu_picture_call *calls, int n, long long dropped, FILE *out);

#endif
