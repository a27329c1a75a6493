/*
 * lower_loop.c - native tensor code: fused elementwise loops and small
 * matrix products.
 *
 * A fused loop (cg_cluster) computes every member of a chain of
 * elementwise ops element by element in one pass, storing only the
 * members needed outside the loop. Its leaves (the values it reads from
 * outside) are read either as one element hoisted out of the loop (scalars
 * and single-element tensors, which broadcast) or through per-dimension
 * strides, 0 on broadcast dims. When every tensor leaf has the loop's
 * shape the loop is flat, one counted loop over all elements, which LLVM
 * vectorizes; otherwise it is a nest over the output's dims.
 *
 * A loop whose single member can fail at run time first checks, like the
 * runtime's kernel and in the same order: shapes that must broadcast (with
 * unknown dims), then a zero divisor or negative integer exponent. On
 * failure the runtime reruns the op to report the exact error.
 */
#include "cg_runtime.h"
#include "cg_target.h"
#include "lower.h"

#include <llvm-c/DebugInfo.h>

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- loops */

void cg_loop_begin(cg_lower *L, cg_loop *lp, LLVMValueRef n)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
    lp->header = cg_new_block(L, "loop");
    lp->exit = cg_new_block(L, "loop_exit");
    lp->n = n;
    LLVMValueRef any = LLVMBuildICmp(L->b, LLVMIntSGT, n, cg_i64(L, 0), "");
    LLVMBuildCondBr(L->b, any, lp->header, lp->exit);
    LLVMPositionBuilderAtEnd(L->b, lp->header);
    lp->iv = LLVMBuildPhi(L->b, L->t_i64, "i");
    LLVMValueRef zero = cg_i64(L, 0);
    LLVMAddIncoming(lp->iv, &zero, &pre, 1);
}

void cg_loop_end(cg_lower *L, cg_loop *lp)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
    LLVMValueRef next = LLVMBuildNSWAdd(L->b, lp->iv, cg_i64(L, 1), "");
    LLVMValueRef more = LLVMBuildICmp(L->b, LLVMIntSLT, next, lp->n, "");
    lp->latch = LLVMBuildCondBr(L->b, more, lp->header, lp->exit);
    LLVMAddIncoming(lp->iv, &next, &latch, 1);
    LLVMPositionBuilderAtEnd(L->b, lp->exit);
}

static LLVMValueRef elem_ptr(cg_lower *L, ag_dtype dt, LLVMValueRef base, LLVMValueRef i)
{
    return LLVMBuildInBoundsGEP2(L->b, cg_mem_type(L, dt), base, &i, 1, "");
}

static LLVMValueRef mul(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWMul(L->b, a, b, "");
}

static LLVMValueRef add(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWAdd(L->b, a, b, "");
}

/* ------------------------------------------------------------ leaves */

typedef struct leaf {
    const ir_node *node;
    ag_dtype dt;
    bool scalar;             /* one element, hoisted out of the loop */
    LLVMValueRef value;      /* scalar: the element; tensor: this iteration's */
    LLVMValueRef data;       /* tensor: base pointer */
    LLVMValueRef dims_ptr;   /* tensor with unknown dims: its dims array */
    LLVMValueRef strides[AG_MAX_RANK]; /* per loop dim, in elements */
    bool full;               /* a tensor of the loop's shape: read row by row */
} leaf;

typedef struct nest {
    cg_lower *L;
    cg_cluster *c;
    int rank;                       /* loop nest depth (1 when flat) */
    LLVMValueRef dims[AG_MAX_RANK]; /* loop trip counts */
    int n_leaves;
    leaf *leaves;
    LLVMValueRef *vals; /* per member: its value in the loop body */
    bool prefetch;      /* the innermost loop runs in blocks that prefetch (below) */
    int64_t group;      /* rows run as one flat loop (short rows, below); 0: no */
    LLVMValueRef *tiles; /* per leaf: its row repeated `group` times, or NULL */
    bool *columns;       /* per leaf: its tile repeats each row's one value */
} nest;

static bool is_member(const cg_cluster *c, const ir_node *x, int *index)
{
    for (int i = 0; i < c->n_members; i++) {
        if (c->members[i] == x) {
            if (index)
                *index = i;
            return true;
        }
    }
    return false;
}

static leaf *find_leaf(nest *N, const ir_node *x)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].node == x)
            return &N->leaves[i];
    return NULL;
}

static void collect_leaves(nest *N)
{
    cg_cluster *c = N->c;
    int cap = 0;
    for (int i = 0; i < c->n_members; i++)
        cap += c->members[i]->n_in;
    N->leaves = rt_xcalloc((size_t)cap + 1, sizeof *N->leaves);
    for (int i = 0; i < c->n_members; i++) {
        const ir_node *m = c->members[i];
        for (int k = 0; k < m->n_in; k++) {
            const ir_node *x = m->in[k];
            if (is_member(c, x, NULL) || find_leaf(N, x))
                continue;
            leaf *l = &N->leaves[N->n_leaves++];
            l->node = x;
            l->dt = x->type.dtype;
            const cg_shape *s = &cg_info_of(N->L, x)->shape;
            l->scalar = s->rank == 0 || cg_shape_unit(s);
        }
    }
}

/* Hoisted scalars: a register, or element 0 of the data. */
static void load_scalars(nest *N)
{
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        cg_info *xi = cg_info_of(N->L, l->node);
        if (!l->scalar) {
            l->data = xi->data;
            continue;
        }
        if (xi->repr == CG_NAT || xi->nat)
            l->value = cg_get_nat(N->L, l->node);
        else
            l->value = cg_load_elem(N->L, l->dt, xi->data);
    }
}

/* Dim d of leaf l's own shape, as an i64 value. */
static LLVMValueRef leaf_dim(nest *N, leaf *l, int d)
{
    cg_lower *L = N->L;
    const cg_info *xi = cg_info_of(L, l->node);
    if (xi->shape.known)
        return cg_i64(L, xi->shape.dims[d]);
    if (!l->dims_ptr) {
        LLVMValueRef box = xi->box;
        l->dims_ptr = cg_call(L, &L->h.dims, &box, 1, "dims");
    }
    LLVMValueRef idx = cg_i64(L, d);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(L->b, L->t_i64, l->dims_ptr, &idx, 1, "");
    return LLVMBuildLoad2(L->b, L->t_i64, p, "");
}

/* Leaf dim aligned with loop dim d (NumPy: shapes align at the right);
 * 1 where the leaf has no such dim. */
static LLVMValueRef aligned_dim(nest *N, leaf *l, int d, int rank)
{
    int lr = cg_info_of(N->L, l->node)->shape.rank;
    int ld = d - (rank - lr);
    return ld < 0 ? cg_i64(N->L, 1) : leaf_dim(N, l, ld);
}

/* ----------------------------------------------------------- shapes */

/* The loop's output dims when they are known statically or, with unknown
 * dims, read from a leaf that has the loop's shape. Returns the i64 array
 * to allocate outputs with. */
static LLVMValueRef output_dims(nest *N)
{
    cg_lower *L = N->L;
    const cg_shape *s = &N->c->shape;
    if (s->known) {
        for (int d = 0; d < s->rank; d++)
            N->dims[d] = cg_i64(L, s->dims[d]);
        return cg_dims_global(L, s->rank, s->dims);
    }
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        if (l->scalar || ls->known || ls->rank != s->rank || ls->key != s->key)
            continue;
        for (int d = 0; d < s->rank; d++)
            N->dims[d] = leaf_dim(N, l, d);
        return l->dims_ptr;
    }
    return NULL;
}

/* A fallible node's output dims by NumPy broadcasting of its operands'
 * run-time dims, failing with the runtime's message when they do not
 * broadcast. */
static LLVMValueRef broadcast_dims(nest *N, const ir_node *m)
{
    cg_lower *L = N->L;
    int rank = N->c->shape.rank;
    LLVMValueRef arr =
        cg_entry_alloca(L, LLVMArrayType2(L->t_i64, (uint64_t)(rank > 0 ? rank : 1)), 8, "dims");
    LLVMValueRef ok = LLVMConstInt(L->t_i1, 1, 0);
    for (int d = 0; d < rank; d++) {
        LLVMValueRef acc = NULL;
        for (int k = 0; k < m->n_in; k++) {
            leaf *l = find_leaf(N, m->in[k]);
            LLVMValueRef y = l->scalar ? cg_i64(L, 1) : aligned_dim(N, l, d, rank);
            if (!acc) {
                acc = y;
                continue;
            }
            LLVMValueRef same = LLVMBuildICmp(L->b, LLVMIntEQ, acc, y, "");
            LLVMValueRef y1 = LLVMBuildICmp(L->b, LLVMIntEQ, y, cg_i64(L, 1), "");
            LLVMValueRef a1 = LLVMBuildICmp(L->b, LLVMIntEQ, acc, cg_i64(L, 1), "");
            LLVMValueRef keep = LLVMBuildOr(L->b, same, y1, "");
            ok = LLVMBuildAnd(L->b, ok, LLVMBuildOr(L->b, keep, a1, ""), "");
            acc = LLVMBuildSelect(L->b, keep, acc, y, "");
        }
        N->dims[d] = acc;
        LLVMValueRef idx = cg_i64(L, d);
        LLVMBuildStore(L->b, acc, LLVMBuildInBoundsGEP2(L->b, L->t_i64, arr, &idx, 1, ""));
    }
    cg_check_or_fail(L, LLVMBuildNot(L->b, ok, ""), m);
    return arr;
}

static LLVMValueRef total_of(nest *N, int rank)
{
    LLVMValueRef t = cg_i64(N->L, 1);
    for (int d = 0; d < rank; d++)
        t = mul(N->L, t, N->dims[d]);
    return t;
}

/* Strides of every tensor leaf over the loop dims. Flat when every tensor
 * leaf has the loop's shape: one loop over all elements, stride 1. */
static void plan_strides(nest *N)
{
    cg_lower *L = N->L;
    const cg_shape *s = &N->c->shape;
    bool flat = true;
    for (int i = 0; i < N->n_leaves && flat; i++) {
        const leaf *l = &N->leaves[i];
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        if (l->scalar)
            continue;
        if (ls->rank != s->rank || ls->known != s->known ||
            (s->known ? memcmp(ls->dims, s->dims, (size_t)s->rank * sizeof *s->dims) != 0
                      : ls->key != s->key))
            flat = false;
    }
    if (flat) {
        N->dims[0] = total_of(N, s->rank);
        N->rank = 1;
        for (int i = 0; i < N->n_leaves; i++) {
            N->leaves[i].strides[0] = cg_i64(L, 1);
            N->leaves[i].full = !N->leaves[i].scalar;
        }
        return;
    }
    N->rank = s->rank;
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar)
            continue;
        const cg_shape *ls = &cg_info_of(L, l->node)->shape;
        l->full = ls->rank == s->rank && ls->known == s->known &&
                  (s->known ? memcmp(ls->dims, s->dims, (size_t)s->rank * sizeof *s->dims) == 0
                            : ls->key == s->key);
        /* row-major strides of the leaf, 0 where it is broadcast */
        LLVMValueRef stride = cg_i64(L, 1);
        for (int d = s->rank - 1; d >= 0; d--) {
            LLVMValueRef dim = aligned_dim(N, l, d, s->rank);
            LLVMValueRef one = LLVMBuildICmp(L->b, LLVMIntEQ, dim, cg_i64(L, 1), "");
            l->strides[d] = LLVMBuildSelect(L->b, one, cg_i64(L, 0), stride, "");
            stride = mul(L, stride, dim);
        }
    }
}

/* The kernels' data check (zero divisor, negative exponent), done on the
 * whole divisor before computing anything, and only for a non-empty
 * output. */
static void data_check(nest *N, const ir_node *m, LLVMValueRef total)
{
    cg_lower *L = N->L;
    leaf *l = find_leaf(N, m->in[1]);
    LLVMValueRef bad;
    if (l->scalar) {
        bad = cg_emit_elem_bad(L, m, l->value);
    } else {
        const cg_info *xi = cg_info_of(L, l->node);
        LLVMValueRef count = cg_i64(L, 1);
        for (int d = 0; d < xi->shape.rank; d++)
            count = mul(L, count, leaf_dim(N, l, d));
        LLVMValueRef args[4] = {l->data, cg_i32(L, l->dt), count,
                                cg_i32(L, cg_checks_negative(m))};
        LLVMValueRef found = cg_call(L, &L->h.int_check, args, 4, "");
        bad = LLVMBuildICmp(L->b, LLVMIntNE, found, cg_i32(L, 0), "");
    }
    LLVMValueRef nonempty = LLVMBuildICmp(L->b, LLVMIntSGT, total, cg_i64(L, 0), "");
    cg_check_or_fail(L, LLVMBuildAnd(L->b, nonempty, bad, ""), m);
}

/* -------------------------------------------------------------- body */

static LLVMValueRef body_value(nest *N, const ir_node *x)
{
    int i;
    if (is_member(N->c, x, &i))
        return N->vals[i];
    return find_leaf(N, x)->value;
}

static void emit_body(nest *N, LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (!l->scalar)
            l->value = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, offs[i]));
    }
    for (int i = 0; i < N->c->n_members; i++) {
        const ir_node *m = N->c->members[i];
        LLVMValueRef args[4];
        for (int k = 0; k < m->n_in; k++)
            args[k] = body_value(N, m->in[k]);
        N->vals[i] = cg_emit_elem(L, m, args);
        cg_info *mi = cg_info_of(L, m);
        if (mi->materialize)
            cg_store_elem(L, m->type.dtype, N->vals[i],
                          elem_ptr(L, m->type.dtype, mi->data, out_off));
    }
}

/*
 * An f32 tanh in a fused loop is a call of agc_tanh_f32's vector version,
 * long (a division and about 30 other operations) and opaque to LLVM's
 * cost model, which then chooses to interleave the loop by 4 or not at
 * all depending on the rest of the body: a bf16 chain (widening loads,
 * a rounding before the store) got 1, and ran 1.3x slower than it does
 * with 4, which lets the independent tanh calls of 4 vectors overlap.
 */
enum { TANH_INTERLEAVE = 4 };

static bool calls_tanh(const cg_cluster *c)
{
    for (int i = 0; i < c->n_members; i++)
        if (c->members[i]->opcode == RT_OP_TANH && c->members[i]->type.dtype != AG_F64)
            return true;
    return false;
}

/*
 * Software prefetch, for large loops that compute much per element (tanh,
 * exp, log, pow, sigmoid: the op table's RT_COST_TRANSCENDENTAL class). The hardware's prefetchers keep a loop that
 * only moves data at memory speed, but in a loop that spends 30 or more
 * vector operations per element the loads come too slowly to them, and
 * the time became compute plus memory instead of the larger of the two.
 * So such a loop runs in blocks of PREFETCH_BLOCK elements, and each block
 * first prefetches every tensor it reads PREFETCH_AHEAD bytes ahead, one
 * prefetch per cache line. tanh(x*a + b)*c + x on 16M f32, 2 threads of a
 * Sapphire Rapids Xeon (hand-written C, the median of 21 runs): 5.5 ms
 * without, 3.5 ms with (compute alone: 3.2 ms); blocks of 64 elements
 * gave 3.7 ms and of 1,024 4.5 ms; AVX2 code 7.3 -> 4.9 ms, x86-64-v2 11.7
 * -> 8.9 ms. On a loop without tanh it cost 3%, so other loops go without.
 */
enum { PREFETCH_BLOCK = 256, PREFETCH_AHEAD = 4096, CACHE_LINE = 64 };

/* The op table's cost class: a polynomial or a library call an element. */
static bool costly(const ir_node *m)
{
    return m->opcode < RT_OP_COUNT && rt_ops[m->opcode].cost == RT_COST_TRANSCENDENTAL;
}

static bool has_costly_op(const cg_cluster *c)
{
    for (int i = 0; i < c->n_members; i++)
        if (costly(c->members[i]))
            return true;
    return false;
}

/* bf16 values are widened on every load and rounded on every store (about
 * 11 vector operations per 16 lanes), and a cache line holds 32 of them:
 * enough work per line that the hardware's prefetchers fall behind too.
 * (x*a + b)*c + x on 16M bf16 elements, converted by the bf16 pass: 2.5 -
 * 2.8 ms without prefetching, 1.8 - 2.0 ms with; the f32 loop, 4.1 - 4.5
 * ms either way. */
static bool touches_bf16(const nest *N)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].dt == AG_BF16)
            return true;
    for (int i = 0; i < N->c->n_members; i++)
        if (N->c->members[i]->type.dtype == AG_BF16)
            return true;
    return false;
}

static bool want_parallel(const nest *N);

/*
 * In a nest (operands broadcast: a bias added to every row) the innermost
 * loop prefetches, when its rows are long, the operands that have the
 * loop's shape; broadcast ones are small and stay in the cache. Their rows
 * follow each other in memory, so 4 KB ahead of an element is 4 KB ahead
 * in the loop too. tanh(x + b), x [4096, 4096] f32 and b [4096]: 5.1 ms
 * without, 4.2 - 4.4 ms with, within 5% of tanh(x + 0.5), which is flat.
 */
static bool wants_prefetch(const nest *N)
{
    bool reads_rows = false;
    for (int i = 0; i < N->n_leaves; i++)
        reads_rows |= N->leaves[i].full;
    const cg_shape *s = &N->c->shape;
    bool long_rows = N->rank == 1 || !s->known || s->dims[s->rank - 1] >= PREFETCH_BLOCK ||
                     N->group;
    if (!reads_rows || !long_rows || !want_parallel(N))
        return false; /* small loops read from the cache */
    return has_costly_op(N->c) || touches_bf16(N);
}

/* Prefetches the lines that elements [at[i], at[i] + count) of every
 * operand of the loop's shape (at[i]: leaf i's element offset) will have
 * PREFETCH_AHEAD bytes later. Prefetches never fault, so addresses past
 * the end are harmless (the GEP is not inbounds). */
static void prefetch_ahead(nest *N, LLVMValueRef *at, int64_t count)
{
    cg_lower *L = N->L;
    LLVMValueRef args[4] = {NULL, cg_i32(L, 0), cg_i32(L, 3), cg_i32(L, 1)};
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (!l->full)
            continue;
        int64_t size = (int64_t)rt_dtype_size(l->dt);
        LLVMValueRef byte = add(L, mul(L, at[i], cg_i64(L, size)), cg_i64(L, PREFETCH_AHEAD));
        for (int64_t k = 0; k < count * size; k += CACHE_LINE) {
            LLVMValueRef off = add(L, byte, cg_i64(L, k));
            args[0] = LLVMBuildGEP2(L->b, L->t_i8, l->data, &off, 1, "ahead");
            cg_call_intrinsic(L, "llvm.prefetch", &L->t_ptr, 1, args, 4);
        }
    }
}

static void emit_level(nest *N, int d, LLVMValueRef begin, LLVMValueRef end,
                       LLVMValueRef out_off, LLVMValueRef *offs);

/*
 * Short rows. In a nest [R, C] whose rows are short (a bias of 16 added
 * to each of 1M rows), the inner loop has C trips: LLVM unrolls it
 * whole and vectorizes across rows instead, with strided accesses, and
 * tanh(x + b) ran 2x slower than the same loop with a scalar b. So when
 * every operand is either of the loop's shape, one row ([C] or [1, C]) or
 * one column ([R, 1]: a scale per row), the rows run in groups of `group`
 * (GROUP_ELEMS elements or a little more) as one flat loop, over a copy
 * of each row operand repeated `group` times (a tile in the loop
 * function's frame, made once per call of it) and of each column
 * operand's values for the group, each repeated C times (made per
 * group): every access is then contiguous. Columns only when C is a
 * multiple of COLUMN_ALIGN, so that a row of the tile is whole vectors:
 * the loop reads the tile right after it was written, and a vector load
 * over several smaller stores cannot take their data from the store
 * buffer (rows of 8, 12, 100 or 200 ran 1.2 - 1.7x slower than without
 * groups). The tiles together stay within TILES_MAX_BYTES (16 f32 rows). tanh(x + s), x [1M, 16] and s [1M, 1]: 10.3 ms before, 3.8 ms
 * after (3.5 ms with a scalar s); rows of 64: 5.5 -> 3.8 ms.
 */
enum { GROUP_ELEMS = 256, COLUMN_ALIGN = 16, TILES_MAX_BYTES = 16 * 1024 };

/* Whether leaf l is one row of the [rows, c] loop. */
static bool is_row(nest *N, const leaf *l, int64_t c)
{
    const cg_shape *ls = &cg_info_of(N->L, l->node)->shape;
    return ls->known && ((ls->rank == 1 && ls->dims[0] == c) ||
                         (ls->rank == 2 && ls->dims[0] == 1 && ls->dims[1] == c));
}

/* Whether leaf l is one column of the [rows, c] loop. */
static bool is_column(nest *N, const leaf *l)
{
    const cg_shape *ls = &cg_info_of(N->L, l->node)->shape, *s = &N->c->shape;
    return ls->known && ls->rank == 2 && ls->dims[0] == s->dims[0] && ls->dims[1] == 1 &&
           s->dims[1] % COLUMN_ALIGN == 0;
}

/* The rows per group of a nest that runs its rows in groups; 0 if not. */
static int64_t group_rows(nest *N)
{
    const cg_shape *s = &N->c->shape;
    if (N->rank != 2 || !s->known || s->dims[1] < 2 || s->dims[1] >= GROUP_ELEMS)
        return 0;
    int64_t c = s->dims[1], group = (GROUP_ELEMS + c - 1) / c, bytes = 0;
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (l->scalar || l->full)
            continue;
        if (!is_row(N, l, c) && !is_column(N, l))
            return 0;
        bytes += group * c * (int64_t)rt_dtype_size(l->dt);
    }
    /* the tiles live on the stack of whatever thread runs the loop */
    return bytes <= TILES_MAX_BYTES ? group : 0;
}

/* Fills rows [0, rows) of leaf i's tile, C elements each: its row, or
 * for a column the value of row first + r in row r. */
static void fill_tile(nest *N, int i, LLVMValueRef first, LLVMValueRef rows)
{
    cg_lower *L = N->L;
    leaf *l = &N->leaves[i];
    LLVMValueRef c = cg_i64(L, N->c->shape.dims[1]), v = NULL;
    cg_loop r, k;
    cg_loop_begin(L, &r, rows);
    if (N->columns[i])
        v = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, add(L, first, r.iv)));
    cg_loop_begin(L, &k, c);
    if (!N->columns[i])
        v = cg_load_elem(L, l->dt, elem_ptr(L, l->dt, l->data, k.iv));
    LLVMValueRef at = add(L, mul(L, r.iv, c), k.iv);
    cg_store_elem(L, l->dt, v, elem_ptr(L, l->dt, N->tiles[i], at));
    cg_loop_end(L, &k);
    cg_loop_end(L, &r);
    /* a column's fill vectorized across rows would scatter; row by row it
     * stores a broadcast vector */
    if (N->columns[i])
        cg_loop_hints(L, r.latch, false);
}

/* The tiles of the row and column operands, in the current function's
 * entry block (the builder is there); the rows' filled there. */
static void make_tiles(nest *N)
{
    cg_lower *L = N->L;
    int64_t n = N->group * N->c->shape.dims[1];
    N->tiles = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *N->tiles);
    N->columns = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *N->columns);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar || l->full)
            continue;
        LLVMTypeRef t = cg_mem_type(L, l->dt);
        N->tiles[i] = LLVMBuildAlloca(L->b, LLVMArrayType2(t, (uint64_t)n), "tile");
        LLVMSetAlignment(N->tiles[i], 64);
        N->columns[i] = is_column(N, l);
    }
    for (int i = 0; i < N->n_leaves; i++)
        if (N->tiles[i] && !N->columns[i])
            fill_tile(N, i, NULL, cg_i64(L, N->group));
}

/* The column operands' tiles for rows [first, first + count). */
static void fill_columns(nest *N, LLVMValueRef first, LLVMValueRef count)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->columns[i])
            fill_tile(N, i, first, count);
}

/* Rows [begin, end) of the nest in groups, each one flat loop. */
static void emit_groups(nest *N, LLVMValueRef begin, LLVMValueRef end)
{
    cg_lower *L = N->L;
    LLVMValueRef c = cg_i64(L, N->c->shape.dims[1]), k = cg_i64(L, N->group);
    LLVMValueRef rows = LLVMBuildNSWSub(L->b, end, begin, "");
    LLVMValueRef groups = LLVMBuildSDiv(L->b, add(L, rows, cg_i64(L, N->group - 1)), k, "");
    cg_loop g;
    cg_loop_begin(L, &g, groups);
    LLVMValueRef first = add(L, begin, mul(L, g.iv, k));
    LLVMValueRef left = LLVMBuildNSWSub(L->b, end, first, "");
    LLVMValueRef whole = LLVMBuildICmp(L->b, LLVMIntSGT, left, k, "");
    LLVMValueRef count = LLVMBuildSelect(L->b, whole, k, left, "");
    LLVMValueRef base = mul(L, first, c);
    fill_columns(N, first, count);
    if (N->prefetch) {
        LLVMValueRef *at = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *at);
        for (int i = 0; i < N->n_leaves; i++)
            at[i] = base;
        prefetch_ahead(N, at, N->group * N->c->shape.dims[1]);
        free(at);
    }
    cg_loop e;
    cg_loop_begin(L, &e, mul(L, count, c));
    LLVMValueRef at = add(L, base, e.iv);
    LLVMValueRef *offs = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *offs);
    LLVMValueRef *data = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *data);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        data[i] = l->data;
        if (N->tiles[i])
            l->data = N->tiles[i];
        offs[i] = N->tiles[i] ? e.iv : at;
    }
    emit_body(N, at, offs);
    for (int i = 0; i < N->n_leaves; i++)
        N->leaves[i].data = data[i];
    free(offs);
    free(data);
    cg_loop_end(L, &e);
    if (calls_tanh(N->c))
        cg_loop_interleave(L, e.latch, TANH_INTERLEAVE);
    cg_loop_end(L, &g);
}

/* The innermost loop d over [begin, end) in blocks that prefetch. */
static void emit_blocks(nest *N, int d, LLVMValueRef begin, LLVMValueRef end,
                        LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    LLVMValueRef block = cg_i64(L, PREFETCH_BLOCK);
    LLVMValueRef n = LLVMBuildNSWSub(L->b, end, begin, "");
    LLVMValueRef blocks = LLVMBuildSDiv(L->b, add(L, n, cg_i64(L, PREFETCH_BLOCK - 1)), block, "");
    cg_loop ob;
    cg_loop_begin(L, &ob, blocks);
    LLVMValueRef from = add(L, begin, mul(L, ob.iv, block));
    LLVMValueRef rest = LLVMBuildNSWSub(L->b, end, from, "");
    LLVMValueRef full = LLVMBuildICmp(L->b, LLVMIntSGT, rest, block, "");
    LLVMValueRef to = add(L, from, LLVMBuildSelect(L->b, full, block, rest, ""));
    LLVMValueRef *at = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *at);
    for (int i = 0; i < N->n_leaves; i++) {
        if (!N->leaves[i].full)
            continue;
        LLVMValueRef step = mul(L, from, N->leaves[i].strides[d]);
        at[i] = offs ? add(L, offs[i], step) : step;
    }
    prefetch_ahead(N, at, PREFETCH_BLOCK);
    free(at);
    N->prefetch = false; /* the block's own loop is a plain loop d */
    emit_level(N, d, from, to, out_off, offs);
    N->prefetch = true;
    cg_loop_end(L, &ob);
}

/* Loop d of the nest over [begin, end) of its dim (NULL: all of it); loop
 * 0 covers a parallel chunk. */
static void emit_level(nest *N, int d, LLVMValueRef begin, LLVMValueRef end,
                       LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    if (d == N->rank) {
        emit_body(N, out_off, offs);
        return;
    }
    if (d == 0 && N->group) {
        emit_groups(N, begin ? begin : cg_i64(L, 0), begin ? end : N->dims[0]);
        return;
    }
    if (d == N->rank - 1 && N->prefetch) {
        emit_blocks(N, d, begin ? begin : cg_i64(L, 0), begin ? end : N->dims[d], out_off,
                    offs);
        return;
    }
    cg_loop lp;
    cg_loop_begin(L, &lp, begin ? LLVMBuildNSWSub(L->b, end, begin, "") : N->dims[d]);
    LLVMValueRef iv = begin ? add(L, begin, lp.iv) : lp.iv;
    LLVMValueRef o = d == 0 ? iv : add(L, mul(L, out_off, N->dims[d]), iv);
    LLVMValueRef *offs2 = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *offs2);
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (l->scalar)
            continue;
        LLVMValueRef step = mul(L, iv, l->strides[d]);
        offs2[i] = d == 0 ? step : add(L, offs[i], step);
    }
    emit_level(N, d + 1, NULL, NULL, o, offs2);
    free(offs2);
    cg_loop_end(L, &lp);
    if (d == N->rank - 1 && calls_tanh(N->c))
        cg_loop_interleave(L, lp.latch, TANH_INTERLEAVE);
}

/* ------------------------------------------------------ outlined loops */

/*
 * A loop nest out of line: an internal function loop(ctx, begin, end) over
 * [begin, end) of its first dim (noinline). Large loops are built so, to
 * run in parallel chunks through cg_rt_parallel_for; in large functions
 * every loop is, which keeps the function of the graph free of loops,
 * whose analysis (scalar evolution walking up every dominating branch, one
 * per runtime call) would otherwise grow quadratically with its length.
 * Small loops in small functions stay inline, where their constant trip
 * counts compile to the tightest code.
 *
 * What the loop reads is passed in ctx, an array of 8-byte slots in the
 * caller's frame; constants are used directly, so that known dims and
 * strides stay constants for the vectorizer.
 */
typedef struct outline {
    cg_lower *L;
    LLVMBuilderRef caller; /* at the call site */
    LLVMValueRef ctx;      /* the slots, in the caller */
    LLVMValueRef fctx;     /* the slots, in the loop function */
    int n, cap;
    int x_slot, out_slot;  /* a lookup loop's operand and result (below) */
} outline;

static LLVMValueRef ctx_slot(cg_lower *L, LLVMBuilderRef b, LLVMValueRef ctx, int i)
{
    LLVMValueRef idx = cg_i64(L, i);
    return LLVMBuildInBoundsGEP2(b, L->t_i64, ctx, &idx, 1, "");
}

/* v as seen inside the loop function. */
static LLVMValueRef pass(outline *o, LLVMValueRef v)
{
    cg_lower *L = o->L;
    if (!v || LLVMIsConstant(v))
        return v;
    if (o->n == o->cap) {
        cg_fail(L, "internal: too many loop operands");
        return v;
    }
    int i = o->n++;
    LLVMBuildStore(o->caller, v, ctx_slot(L, o->caller, o->ctx, i));
    return LLVMBuildLoad2(L->b, LLVMTypeOf(v), ctx_slot(L, L->b, o->fctx, i), "");
}

/* Flat loops of at least this many elements (or of unknown size) run in
 * parallel chunks of at least PARALLEL_GRAIN elements. */
enum { PARALLEL_MIN = 1 << 16, PARALLEL_GRAIN = 1 << 14 };

static bool want_parallel(const nest *N)
{
    const cg_shape *s = &N->c->shape;
    if (!s->known)
        return true; /* cg_rt_parallel_for runs small loops serially */
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n >= PARALLEL_MIN;
}

/* Chunks of the first dim holding at least PARALLEL_GRAIN elements. */
static LLVMValueRef grain_of(nest *N)
{
    cg_lower *L = N->L;
    LLVMValueRef inner = cg_i64(L, 1);
    for (int d = 1; d < N->rank; d++)
        inner = mul(L, inner, N->dims[d]);
    LLVMValueRef one = cg_i64(L, 1);
    LLVMValueRef big = LLVMBuildICmp(L->b, LLVMIntSGT, inner, one, "");
    LLVMValueRef safe = LLVMBuildSelect(L->b, big, inner, one, "");
    LLVMValueRef g = LLVMBuildSDiv(L->b, cg_i64(L, PARALLEL_GRAIN), safe, "");
    LLVMValueRef pos = LLVMBuildICmp(L->b, LLVMIntSGT, g, one, "");
    return LLVMBuildSelect(L->b, pos, g, one, "grain");
}

/*
 * A loop whose result is a function of one bf16 tensor's elements alone
 * (its other operands scalars) is looked up in a table of its results for
 * every bf16 value when it is long (cg_rt_parallel_lookup, cg_lookup.c):
 * worth it where the body is costly: tanh(x*a + b)*c + x on 16M bf16
 * elements takes 4.5 ms computed, 2.1 - 2.2 ms looked up. The operand and
 * the single result the loop stores must be passed in slots, which the
 * runtime points at its own arrays to build the table.
 */
static bool wants_lookup(const nest *N, const outline *o)
{
    const cg_cluster *c = N->c;
    int tensors = 0, stored = 0;
    for (int i = 0; i < N->n_leaves; i++) {
        if (N->leaves[i].scalar)
            continue;
        if (N->leaves[i].dt != AG_BF16)
            return false;
        tensors++;
    }
    for (int i = 0; i < c->n_members; i++) {
        const ir_node *m = c->members[i];
        if (!cg_info_of(N->L, m)->materialize)
            continue;
        size_t size = rt_dtype_size(m->type.dtype);
        if (size != 2 && size != 4)
            return false;
        stored++;
    }
    return N->rank == 1 && tensors == 1 && stored == 1 && !c->fallible && o->x_slot >= 0 &&
           o->out_slot >= 0 && wants_prefetch(N) && has_costly_op(c);
}

/* Whether every scalar the loop reads is a constant of the code: then its
 * table is the same at every call. */
static bool scalars_constant(const nest *N)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].scalar && N->leaves[i].node->opcode != RT_OP_CONST)
            return false;
    return true;
}

/* Zeroed memory of the code's own where the runtime keeps a lookup loop's
 * table from its first call on (cg_rt_parallel_lookup): it lives and dies
 * with the code. */
static LLVMValueRef lookup_cache(cg_lower *L, int out_size)
{
    LLVMTypeRef t = LLVMArrayType2(L->t_i8, (uint64_t)CG_RT_LOOKUP_CACHE_BYTES(out_size));
    LLVMValueRef g = LLVMAddGlobal(L->mod, t, "lookup_cache");
    LLVMSetInitializer(g, LLVMConstNull(t));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 64);
    return g;
}

static LLVMValueRef loop_function(cg_lower *L)
{
    LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
    LLVMValueRef f = LLVMAddFunction(L->mod, "loop", LLVMFunctionType(L->t_void, params, 3, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "nounwind", 0);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "noinline", 0);
    return f;
}

static void emit_outlined(nest *N)
{
    cg_lower *L = N->L;
    cg_cluster *c = N->c;
    int cap = N->n_leaves * (N->rank + 1) + c->n_members + N->rank + 1;
    outline o = {.L = L, .cap = cap, .x_slot = -1, .out_slot = -1};
    o.ctx = cg_entry_alloca(L, LLVMArrayType2(L->t_i64, (uint64_t)cap), 16, "loop_ctx");
    o.caller = LLVMCreateBuilderInContext(L->ctx);
    LLVMBasicBlockRef call_site = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(o.caller, call_site);

    LLVMValueRef f = loop_function(L);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    o.fctx = LLVMGetParam(f, 0);

    /* inside: the same nest over values read back from ctx */
    leaf *outer = rt_xmalloc((size_t)(N->n_leaves + 1) * sizeof *outer);
    LLVMValueRef *outer_data = rt_xcalloc((size_t)c->n_members + 1, sizeof *outer_data);
    LLVMValueRef outer_dims[AG_MAX_RANK];
    memcpy(outer, N->leaves, (size_t)N->n_leaves * sizeof *outer);
    memcpy(outer_dims, N->dims, sizeof outer_dims);
    for (int i = 0; i < N->n_leaves; i++) {
        leaf *l = &N->leaves[i];
        if (l->scalar) {
            l->value = pass(&o, l->value);
            continue;
        }
        int before = o.n;
        l->data = pass(&o, l->data);
        if (o.n > before)
            o.x_slot = before;
        for (int d = 0; d < N->rank; d++)
            l->strides[d] = pass(&o, l->strides[d]);
    }
    for (int i = 0; i < c->n_members; i++) {
        cg_info *mi = cg_info_of(L, c->members[i]);
        outer_data[i] = mi->data;
        if (mi->materialize) {
            int before = o.n;
            mi->data = pass(&o, mi->data);
            if (o.n > before)
                o.out_slot = before;
        }
    }
    for (int d = 1; d < N->rank; d++)
        N->dims[d] = pass(&o, N->dims[d]);
    if ((N->group = group_rows(N)))
        make_tiles(N);
    N->prefetch = wants_prefetch(N);
    bool lookup = wants_lookup(N, &o);
    if (N->prefetch) /* and inline its vector tanh (lower_math.c) */
        cg_mark(f, CG_HOT_LOOP);
    emit_level(N, 0, LLVMGetParam(f, 1), LLVMGetParam(f, 2), NULL, NULL);
    N->prefetch = false;
    N->group = 0;
    free(N->tiles);
    free(N->columns);
    N->tiles = NULL;
    N->columns = NULL;
    LLVMBuildRetVoid(L->b);

    memcpy(N->leaves, outer, (size_t)N->n_leaves * sizeof *outer);
    memcpy(N->dims, outer_dims, sizeof outer_dims);
    for (int i = 0; i < c->n_members; i++)
        cg_info_of(L, c->members[i])->data = outer_data[i];
    free(outer);
    free(outer_data);
    LLVMDisposeBuilder(o.caller);

    /* the call */
    LLVMPositionBuilderAtEnd(L->b, call_site);
    if (lookup) {
        const ir_node *out = NULL;
        for (int i = 0; i < c->n_members && !out; i++)
            if (cg_info_of(L, c->members[i])->materialize)
                out = c->members[i];
        int size = (int)rt_dtype_size(out->type.dtype);
        LLVMValueRef args[8] = {f, o.ctx, N->dims[0], grain_of(N), cg_i32(L, o.x_slot),
                                cg_i32(L, o.out_slot), cg_i32(L, size),
                                scalars_constant(N) ? lookup_cache(L, size)
                                                    : LLVMConstNull(L->t_ptr)};
        cg_call(L, &L->h.parallel_lookup, args, 8, "");
    } else if (want_parallel(N)) {
        LLVMValueRef args[4] = {f, o.ctx, N->dims[0], grain_of(N)};
        cg_call(L, &L->h.parallel_for, args, 4, "");
    } else {
        LLVMValueRef args[3] = {o.ctx, cg_i64(L, 0), N->dims[0]};
        LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
        LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, args, 3, "");
    }
}

bool cg_emit_cluster(cg_lower *L, cg_cluster *c)
{
    nest N = {.L = L, .c = c};
    collect_leaves(&N);
    N.vals = rt_xcalloc((size_t)c->n_members + 1, sizeof *N.vals);
    load_scalars(&N);
    const ir_node *only = c->members[0];
    LLVMValueRef dims_ptr = c->fallible && !c->shape.known ? broadcast_dims(&N, only)
                                                           : output_dims(&N);
    bool ok = dims_ptr != NULL || c->shape.rank == 0;
    if (!ok) {
        cg_fail(L, "internal: no operand of %%%d gives its loop's shape", only->id);
    } else {
        LLVMValueRef total = total_of(&N, c->shape.rank);
        if (c->fallible && pass_fails_on_data(only))
            data_check(&N, only, total);
        for (int i = 0; i < c->n_members; i++)
            if (cg_info_of(L, c->members[i])->materialize)
                cg_alloc_output(L, c->members[i], dims_ptr);
        plan_strides(&N);
        if (L->outline_loops || want_parallel(&N))
            emit_outlined(&N);
        else
            emit_level(&N, 0, cg_i64(L, 0), N.dims[0], NULL, NULL);
    }
    free(N.vals);
    free(N.leaves);
    return ok;
}

/* ------------------------------------------------------ matrix product */

/* A loop hint, !{!"name", i1 false}. */
static LLVMMetadataRef hint_off(cg_lower *L, const char *name)
{
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(L->ctx, name, strlen(name)),
                              LLVMValueAsMetadata(LLVMConstInt(L->t_i1, 0, 0))};
    return LLVMMDNodeInContext2(L->ctx, ops, 2);
}

/* Keeps LLVM's loop vectorizer off the loop whose back edge is latch
 * (llvm.loop.vectorize.enable = false) and, with no_unroll, its unroller
 * too (llvm.loop.unroll.disable). The loop ID must name itself, so it is
 * built around a temporary node that then takes its place. */
void cg_loop_hints(cg_lower *L, LLVMValueRef latch, bool no_unroll)
{
    LLVMContextRef ctx = L->ctx;
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef ops[3] = {self, hint_off(L, "llvm.loop.vectorize.enable"),
                              LLVMMDNodeInContext2(ctx, NULL, 0)};
    if (no_unroll) {
        LLVMMetadataRef name = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
        ops[2] = LLVMMDNodeInContext2(ctx, &name, 1);
    }
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, no_unroll ? 3 : 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

/* Asks LLVM's loop vectorizer to interleave the loop whose back edge is
 * latch `count` times (llvm.loop.interleave.count); its vector width stays
 * its own choice. */
void cg_loop_interleave(cg_lower *L, LLVMValueRef latch, int count)
{
    LLVMContextRef ctx = L->ctx;
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef hint[2] = {
        LLVMMDStringInContext2(ctx, "llvm.loop.interleave.count", 26),
        LLVMValueAsMetadata(LLVMConstInt(L->t_i32, (unsigned long long)count, 0))};
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(ctx, hint, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

/*
 * c[m,n] = a[m,k] x b[k,n] in i-p-j order, like the runtime's integer
 * kernel: c's row is zeroed, then for p = 0 .. k-1 the row of b is
 * multiplied by the broadcast a[i,p] and added to it. Each c[i,j] thus
 * sums its products in order p = 0 .. k-1 with a separate multiply and
 * add (no contraction: the IR has no fast-math flags), and integers wrap.
 *
 * Only the j loop may be vectorized, along the contiguous rows of b and c.
 * For a short row LLVM first unrolls the j loop fully (its trip count is
 * a constant), which leaves the p loop innermost; for AVX-512 CPUs
 * (znver4, sapphirerapids) the loop vectorizer then vectorized p, down the
 * columns of b, with gathers and a horizontal sum per element of c: 100
 * chained 10x10 i32 products took 35 us instead of 6. So the i and
 * p loops are marked not to be loop-vectorized: an unrolled short row is
 * vectorized by the SLP vectorizer instead (a[i,p] broadcast, times the
 * row of b, added to the row of c held in registers), and a long one by
 * the loop vectorizer, which then only sees j. The i loop is not unrolled
 * either: a product small enough to unroll whole (4x8x4) became one block
 * in which the SLP vectorizer gathered across rows too.
 *
 * One internal function per (dtype, m, k, n), kept out of line so that a
 * chain of products compiles the loop nest once.
 */
static LLVMValueRef matmul_function(cg_lower *L, ag_dtype dt, int64_t m, int64_t k, int64_t n)
{
    char name[96];
    snprintf(name, sizeof name, "matmul_%s_%lldx%lldx%lld", ag_dtype_name(dt), (long long)m,
             (long long)k, (long long)n);
    LLVMValueRef f = LLVMGetNamedFunction(L->mod, name);
    if (f)
        return f;
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    f = LLVMAddFunction(L->mod, name, LLVMFunctionType(L->t_void, params, 3, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "noinline", 0);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "nounwind", 0);
    cg_add_attr(L, f, 3, "noalias", 0); /* the output */

    LLVMBasicBlockRef saved = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    LLVMValueRef a = LLVMGetParam(f, 0), b = LLVMGetParam(f, 1), c = LLVMGetParam(f, 2);
    bool fl = dt == AG_F32 || dt == AG_F64;
    LLVMTypeRef t = cg_reg_type(L, dt);
    LLVMValueRef zero = fl ? LLVMConstReal(t, 0) : LLVMConstInt(t, 0, 0);
    cg_loop li, lj, lp, lj2;
    cg_loop_begin(L, &li, cg_i64(L, m));
    LLVMValueRef crow = mul(L, li.iv, cg_i64(L, n));
    cg_loop_begin(L, &lj, cg_i64(L, n));
    LLVMBuildStore(L->b, zero, elem_ptr(L, dt, c, add(L, crow, lj.iv)));
    cg_loop_end(L, &lj);
    cg_loop_begin(L, &lp, cg_i64(L, k));
    LLVMValueRef ap = LLVMBuildLoad2(L->b, t, elem_ptr(L, dt, a, add(L, mul(L, li.iv, cg_i64(L, k)), lp.iv)), "");
    LLVMValueRef brow = mul(L, lp.iv, cg_i64(L, n));
    cg_loop_begin(L, &lj2, cg_i64(L, n));
    LLVMValueRef cp = elem_ptr(L, dt, c, add(L, crow, lj2.iv));
    LLVMValueRef bv = LLVMBuildLoad2(L->b, t, elem_ptr(L, dt, b, add(L, brow, lj2.iv)), "");
    LLVMValueRef cv = LLVMBuildLoad2(L->b, t, cp, "");
    LLVMValueRef sum = fl ? LLVMBuildFAdd(L->b, cv, LLVMBuildFMul(L->b, ap, bv, ""), "")
                          : LLVMBuildAdd(L->b, cv, LLVMBuildMul(L->b, ap, bv, ""), "");
    LLVMBuildStore(L->b, sum, cp);
    cg_loop_end(L, &lj2);
    cg_loop_end(L, &lp);
    cg_loop_hints(L, lp.latch, false);
    cg_loop_end(L, &li);
    cg_loop_hints(L, li.latch, true);
    LLVMBuildRetVoid(L->b);
    LLVMPositionBuilderAtEnd(L->b, saved);
    return f;
}

bool cg_emit_matmul(cg_lower *L, const ir_node *n)
{
    if (n->type.dtype == AG_BF16)
        return cg_emit_matmul_bf16(L, n);
    const cg_info *ai = cg_info_of(L, n->in[0]), *bi = cg_info_of(L, n->in[1]);
    int64_t m = ai->shape.dims[0], k = ai->shape.dims[1], nn = bi->shape.dims[1];
    int64_t dims[2] = {m, nn};
    cg_alloc_output(L, n, cg_dims_global(L, 2, dims));
    LLVMValueRef f = matmul_function(L, n->type.dtype, m, k, nn);
    LLVMValueRef args[3] = {ai->data, bi->data, cg_info_of(L, n)->data};
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, args, 3, "");
    return true;
}
