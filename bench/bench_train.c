/*
 * bench_train.c - one training step of the MLP 784-512-512-10 (relu,
 * softmax cross-entropy averaged over the batch, Adam) at batch 64, f32,
 * four ways in one run (issue 27, "Performance"):
 *
 *   A. agc compiled: the whole step (forward, tape, gradient, Adam by
 *      ag_optimizer_adam) is one AG_FUNCTION, written here in agc's
 *      generated form, so one graph and one compiled function;
 *   B. agc eager: the same body with ag_run_functions_eagerly(true);
 *   C. hand-written C: cblas_sgemm for the 3 forward and 5 backward
 *      products (dW of the 3 layers, dX of the upper 2), the elementwise
 *      work and Adam in plain loops: the baseline;
 *   D. PyTorch eager and TorchScript, one thread, in a child process
 *      (bench/train_torch.py) that waits on a pipe between its steps, so
 *      that the rounds run A B C D A B C D ...
 *
 * All four start from the same data and initial weights (each trains its
 * own copy while it is timed). Before timing, the step is checked: after
 * the first step from the same start, A's and B's weights agree with C's
 * to 1e-4 relative, and so do their gradients at the start and every
 * side's loss; otherwise the program prints FAIL and exits with 1, since a
 * benchmark of a wrong computation is worthless. It also prints the graph
 * sizes (the forward with its loss against the training step, after the
 * passes) and the first call's latency of the step (trace, tape, passes,
 * LLVM compile, one run).
 *
 * Every row runs on one thread: OpenBLAS (openblas_set_num_threads(1)),
 * agc's parallel loops (AG_NUM_THREADS=1) and torch (set_num_threads(1)).
 *
 *   bench_train [ROUNDS]     (default 31; the medians are over ROUNDS)
 */
#define _GNU_SOURCE

#include "bench_util.h"
#include <ag.h>

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { B = 64, IN = 784, H = 512, OUT = 10, NP = 6, MAX_ROUNDS = 64 };

/* Keras's Adam defaults (tf.keras.optimizers.Adam). */
static const double LR = 1e-3, B1 = 0.9, B2 = 0.999, EPS = 1e-7;

/* The parameters in order w1 b1 w2 b2 w3 b3: their shapes and sizes. */
static const int64_t ROWS[NP] = {IN, 1, H, 1, H, 1};
static const int64_t COLS[NP] = {H, H, H, H, OUT, OUT};
static const char *const PNAME[NP] = {"w1", "b1", "w2", "b2", "w3", "b3"};

static size_t numel(int i) { return (size_t)(ROWS[i] * COLS[i]); }

static ag_shape pshape(int i) { return i % 2 ? AG_SHAPE(COLS[i]) : AG_SHAPE(ROWS[i], COLS[i]); }

/* =========================================================== the data */

/* The start every side copies: a batch (x in [0, 1), one-hot labels) and
 * Glorot-uniform weights, small biases. */
static struct start {
    float x[B * IN], y[B * OUT];
    float *p[NP];
} start;

static uint32_t hash(uint32_t i)
{
    i *= 2654435761u;
    i ^= i >> 15;
    i *= 2246822519u;
    return i ^ (i >> 13);
}

/* Uniform in [-scale, scale) (lo = -scale) or [0, scale) (lo = 0). */
static void fill(float *v, size_t n, uint32_t seed, float lo, float scale)
{
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (scale - lo) * (float)(hash((uint32_t)i + seed) >> 8) / (float)(1u << 24);
}

static void make_start(void)
{
    fill(start.x, B * IN, 7, 0, 1);
    memset(start.y, 0, sizeof start.y);
    for (int r = 0; r < B; r++)
        start.y[r * OUT + hash(1000u + (uint32_t)r) % OUT] = 1;
    for (int i = 0; i < NP; i++) {
        start.p[i] = malloc(numel(i) * sizeof(float));
        float glorot = (float)sqrt(6.0 / (double)(ROWS[i == 1 ? 0 : i] + COLS[i]));
        float s = i % 2 ? 0.01f : glorot;
        fill(start.p[i], numel(i), 100u * (uint32_t)(i + 1), -s, s);
    }
}

/* ======================================================= agc's side */

/* A model: its parameters and its Adam (ag_optimizer_adam, which makes
 * the slots, m and v, on its first apply). A and B each train one, made
 * from the start; the third keeps the start, for the gradient check. */
struct agc_model {
    ag_variable p[NP];
    ag_optimizer opt;
};
enum { COMPILED, EAGER, AT_START };
static struct agc_model models[3];

static void model_new(struct agc_model *md, bool trained)
{
    for (int i = 0; i < NP; i++)
        md->p[i] = ag_variable_new(ag_from_data(AG_F32, pshape(i), start.p[i]));
    md->opt = trained ? ag_optimizer_adam(LR, B1, B2, EPS) : NULL;
}

/* The mean over the batch of softmax cross-entropy, from the logits z and
 * one-hot labels y: logsumexp(z) - sum(y * z) per row. */
static ag_tensor xent(ag_tensor z, ag_tensor y)
{
    ag_tensor mx = ag_reduce_max(z, -1, true);
    ag_tensor lse = ag_add(ag_log(ag_reduce_sum(ag_exp(ag_sub(z, mx)), -1, true)), mx);
    return ag_reduce_mean(ag_sub(lse, ag_reduce_sum(ag_mul(y, z), -1, true)), AG_ALL_AXES,
                          false);
}

/*   AG_FUNCTION ag_tensor train_loss(ag_tensor x, ag_tensor y, int which)
 *   (the forward pass and its loss, reading models[which]'s variables) */
static ag_tensor train_loss_staged(ag_tensor x, ag_tensor y, int which)
{
    ag_variable *p = models[which].p;
    ag_tensor h1 = ag_relu(ag_add(ag_matmul(x, ag_variable_read(p[0])), ag_variable_read(p[1])));
    ag_tensor h2 = ag_relu(ag_add(ag_matmul(h1, ag_variable_read(p[2])), ag_variable_read(p[3])));
    return xent(ag_add(ag_matmul(h2, ag_variable_read(p[4])), ag_variable_read(p[5])), y);
}

/* The loss of models[which] and its gradients g[NP], from a tape. */
static ag_tensor loss_and_grads(ag_tensor x, ag_tensor y, int which, ag_tensor *g)
{
    ag_tape tape = ag_tape_new();
    ag_tensor loss = train_loss_staged(x, y, which);
    ag_tape_gradients_variables(tape, loss, NP, models[which].p, g);
    ag_tape_free(tape);
    return loss;
}

/*   AG_FUNCTION ag_tensor train_step(ag_tensor x, ag_tensor y, int which) {
 *       ag_tensor g[6];
 *       ag_tensor loss = loss_and_grads(x, y, which, g);
 *       ag_optimizer_apply(models[which].opt, 6, g, models[which].p);
 *       return loss;
 *   }                                                                  */
static ag_tensor train_step_staged(ag_tensor x, ag_tensor y, int which)
{
    ag_tensor g[NP];
    ag_tensor loss = loss_and_grads(x, y, which, g);
    ag_optimizer_apply(models[which].opt, NP, g, models[which].p);
    return loss;
}

/*   AG_FUNCTION struct grads train_grads(ag_tensor x, ag_tensor y, int which)
 *   (the step without its update, for the check: the 6 gradients) */
static void train_grads_trace(const ag_arg *a, ag_tensor *o)
{
    (void)loss_and_grads(a[0].tensor, a[1].tensor, (int)a[2].i, o);
}

static void train_loss_trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = train_loss_staged(a[0].tensor, a[1].tensor, (int)a[2].i);
}
static void train_step_trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = train_step_staged(a[0].tensor, a[1].tensor, (int)a[2].i);
}

static const ag_arg_kind KINDS[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_INT};
static const char *const NAMES[] = {"x", "y", "which"};
static const ag_function_desc train_loss_desc = {
    "train_loss", __FILE__, __LINE__, 3, NAMES, KINDS, NULL, NULL, 1, train_loss_trace, 0};
static const ag_function_desc train_step_desc = {
    "train_step", __FILE__, __LINE__, 3, NAMES, KINDS, NULL, NULL, 1, train_step_trace, 0};
static const ag_function_desc train_grads_desc = {
    "train_grads", __FILE__, __LINE__, 3, NAMES, KINDS, NULL, NULL, NP, train_grads_trace, 0};

static ag_tensor tx, ty; /* the batch, made once */

/* Calls fn on the batch for models[which], eagerly or not, into o. */
static bool agc_call(const ag_function_desc *fn, int which, bool eagerly, ag_tensor *o)
{
    ag_arg a[3] = {{.kind = AG_ARG_TENSOR, .tensor = tx},
                   {.kind = AG_ARG_TENSOR, .tensor = ty},
                   {.kind = AG_ARG_INT, .i = which}};
    ag_run_functions_eagerly(eagerly);
    bool ok = ag_function_call_at(AG_HERE, fn, a, o);
    ag_run_functions_eagerly(false);
    return ok;
}

/* One step of models[which]; its loss (before the update), or NaN. */
static float agc_step(int which)
{
    ag_tensor o[1];
    ag_scope_push();
    bool ok = agc_call(&train_step_desc, which, which == EAGER, o);
    float loss = ok ? *(const float *)ag_data(o[0]) : NAN;
    ag_scope_pop();
    return loss;
}

static void run_compiled(void *arg) { (void)arg, agc_step(COMPILED); }
static void run_eager(void *arg) { (void)arg, agc_step(EAGER); }

/* ==================================================== hand-written C */

/* The baseline's state and work buffers, allocated once. */
static struct hand {
    float *p[NP], *m[NP], *v[NP], *g[NP];
    float h1[B * H], h2[B * H], z[B * OUT], dh2[B * H], dh1[B * H];
    float step, loss;
} hand;

static void hand_new(void)
{
    for (int i = 0; i < NP; i++) {
        hand.p[i] = malloc(numel(i) * sizeof(float));
        memcpy(hand.p[i], start.p[i], numel(i) * sizeof(float));
        hand.m[i] = calloc(numel(i), sizeof(float));
        hand.v[i] = calloc(numel(i), sizeof(float));
        hand.g[i] = malloc(numel(i) * sizeof(float));
    }
}

static void hand_free(void)
{
    for (int i = 0; i < NP; i++) {
        free(hand.p[i]);
        free(hand.m[i]);
        free(hand.v[i]);
        free(hand.g[i]);
    }
}

/* out[rows, n] = relu(a[rows, k] @ w[k, n] + b) */
static void dense_relu(const float *a, const float *w, const float *b, float *out, int k, int n)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, n, k, 1.0f, a, k, w, n, 0.0f, out,
                n);
    for (int r = 0; r < B; r++)
        for (int j = 0; j < n; j++) {
            float s = out[r * n + j] + b[j];
            out[r * n + j] = s > 0 ? s : 0;
        }
}

/* The logits z (bias added) become dloss/dz = (softmax(z) - y) / B; the
 * mean loss, logsumexp(z) - sum(y z) per row, goes to hand.loss. */
static void softmax_xent_grad(float *z, const float *b, const float *y)
{
    double loss = 0;
    for (int r = 0; r < B; r++, z += OUT, y += OUT) {
        float mx = -INFINITY, sum = 0, yz = 0;
        for (int j = 0; j < OUT; j++) {
            z[j] += b[j];
            mx = z[j] > mx ? z[j] : mx;
            yz += y[j] * z[j];
        }
        for (int j = 0; j < OUT; j++)
            sum += expf(z[j] - mx);
        loss += logf(sum) + mx - yz;
        for (int j = 0; j < OUT; j++)
            z[j] = (expf(z[j] - mx) / sum - y[j]) / B;
    }
    hand.loss = (float)(loss / B);
}

/* The backward of a dense layer from dz[B, n], its input a[B, k]:
 * dw = a^T dz, db = the column sums of dz, and (when da) da = dz w^T with
 * relu's mask (a > 0, a being relu's output). */
static void dense_backward(const float *a, const float *w, const float *dz, float *dw, float *db,
                           float *da, int k, int n)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, B, 1.0f, a, k, dz, n, 0.0f, dw, n);
    for (int j = 0; j < n; j++)
        db[j] = 0;
    for (int r = 0; r < B; r++)
        for (int j = 0; j < n; j++)
            db[j] += dz[r * n + j];
    if (!da)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, k, n, 1.0f, dz, n, w, n, 0.0f, da, k);
    for (int i = 0; i < B * k; i++)
        da[i] = a[i] > 0 ? da[i] : 0;
}

static void hand_adam(void)
{
    hand.step += 1;
    float alpha = (float)LR * sqrtf(1 - powf((float)B2, hand.step)) /
                  (1 - powf((float)B1, hand.step));
    const float c1 = (float)(1 - B1), c2 = (float)(1 - B2), eps = (float)EPS;
    for (int i = 0; i < NP; i++) {
        float *w = hand.p[i], *m = hand.m[i], *v = hand.v[i], *g = hand.g[i];
        for (size_t e = 0; e < numel(i); e++) {
            m[e] += (g[e] - m[e]) * c1;
            v[e] += (g[e] * g[e] - v[e]) * c2;
            w[e] -= m[e] * alpha / (sqrtf(v[e]) + eps);
        }
    }
}

static void hand_step(void)
{
    float **p = hand.p, **g = hand.g;
    dense_relu(start.x, p[0], p[1], hand.h1, IN, H);
    dense_relu(hand.h1, p[2], p[3], hand.h2, H, H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, OUT, H, 1.0f, hand.h2, H, p[4], OUT,
                0.0f, hand.z, OUT);
    softmax_xent_grad(hand.z, p[5], start.y);
    dense_backward(hand.h2, p[4], hand.z, g[4], g[5], hand.dh2, H, OUT);
    dense_backward(hand.h1, p[2], hand.dh2, g[2], g[3], hand.dh1, H, H);
    dense_backward(start.x, p[0], hand.dh1, g[0], g[1], NULL, IN, H);
    hand_adam();
}

static void run_hand(void *arg) { (void)arg, hand_step(); }

/* ============================================ PyTorch, a child process */

/* train_torch.py, started with pipes to its stdin and from its stdout.
 * It answers "ready ..." (or "skip <why>") once set up and warmed up,
 * then each "step" with the seconds of one eager and one TorchScript step. */
static struct torch {
    pid_t pid;
    FILE *to, *from;
    bool ready;
    char why[256];            /* why the row is skipped */
    float loss_eager, loss_script; /* their first step's loss */
    char threads[64];
} torch;

static const char DATA_FILE_TEMPLATE[] = "/tmp/bench_train_XXXXXX";

/* Writes x, y and the start's parameters, in that order, as raw f32. */
static bool write_start(char *path)
{
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f)
        return false;
    bool ok = fwrite(start.x, sizeof start.x, 1, f) == 1 &&
              fwrite(start.y, sizeof start.y, 1, f) == 1;
    for (int i = 0; i < NP; i++)
        ok = ok && fwrite(start.p[i], sizeof(float), numel(i), f) == numel(i);
    return fclose(f) == 0 && ok;
}

/* In the child after fork: little more than exec (the environment was set
 * before the fork; libag may have threads). */
static void exec_torch(int in, int out, const char *data)
{
    dup2(in, 0);
    dup2(out, 1);
    char dims[64], hyper[128], why[256];
    snprintf(dims, sizeof dims, "%d,%d,%d,%d", B, IN, H, OUT);
    snprintf(hyper, sizeof hyper, "%.17g,%.17g,%.17g,%.17g", LR, B1, B2, EPS);
    execlp(BENCH_TRAIN_PYTHON, "python3", BENCH_TRAIN_TORCH, data, dims, hyper, (char *)NULL);
    int n = snprintf(why, sizeof why, "skip %s: %s\n", BENCH_TRAIN_PYTHON, strerror(errno));
    if (write(1, why, (size_t)n) < 0)
        _exit(126);
    _exit(127);
}

/* Reads the child's first line: ready, or why not. */
static void torch_handshake(void)
{
    char line[512];
    if (!fgets(line, sizeof line, torch.from)) {
        snprintf(torch.why, sizeof torch.why, "the script exited before it was ready");
        return;
    }
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, "skip ", 5) == 0) {
        snprintf(torch.why, sizeof torch.why, "%.200s", line + 5);
        return;
    }
    torch.ready = sscanf(line, "ready %f %f %63s", &torch.loss_eager, &torch.loss_script,
                         torch.threads) == 3;
    if (!torch.ready)
        snprintf(torch.why, sizeof torch.why, "unexpected answer '%.200s'", line);
}

static void torch_start(char *data)
{
    int to[2], from[2];
    snprintf(torch.why, sizeof torch.why, "could not start python3");
    if (pipe(to) || pipe(from))
        return;
    /* torch's threads (and its BLAS's), set here since the child may only
     * exec; libag's OpenBLAS is already pinned by then */
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("MKL_NUM_THREADS", "1", 1);
    fflush(stdout);
    torch.pid = fork();
    if (torch.pid == 0) {
        close(to[1]);
        close(from[0]);
        exec_torch(to[0], from[1], data);
    }
    close(to[0]);
    close(from[1]);
    torch.to = fdopen(to[1], "w");
    torch.from = fdopen(from[0], "r");
    if (torch.pid > 0)
        torch_handshake();
}

/* One round of the child: the eager and the TorchScript step's seconds. */
static bool torch_round(double *eager, double *script)
{
    char line[256];
    if (fprintf(torch.to, "step\n") < 0 || fflush(torch.to) || !fgets(line, sizeof line, torch.from))
        return false;
    return sscanf(line, "%lf %lf", eager, script) == 2;
}

static void torch_stop(void)
{
    if (torch.to) {
        fprintf(torch.to, "quit\n");
        fclose(torch.to);
    }
    if (torch.from)
        fclose(torch.from);
    if (torch.pid > 0)
        waitpid(torch.pid, NULL, 0);
}

/* ======================================================== the checks */

/* max |a - b| / max |b| over n elements: the difference relative to the
 * tensor's scale. Element by element it would not do: Adam's first step
 * moves each weight by lr g / (|g| + eps / sqrt(1 - b2)), which turns the
 * rounding of a gradient that nearly cancels (|g| ~ 1e-8, summed in
 * another order) into a weight difference ~300 times larger, 1e-7 on a
 * weight that may itself be 1e-4. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        d = e > d || isnan(e) ? e : d;
        scale = fmax(scale, fabs((double)b[i]));
    }
    return d / scale;
}

static const double TOL = 1e-4; /* relative, for the loss, gradients and weights */

/* The worst rel_diff of the tensors t[NP] against the hand-written ones. */
static double compare(const ag_tensor *t, float *const *hand_t)
{
    double worst = 0;
    for (int i = 0; i < NP; i++) {
        const float *v = ag_is_error(t[i]) ? NULL : ag_data(t[i]);
        double d = v ? rel_diff(v, hand_t[i], numel(i)) : INFINITY;
        if (!(d <= TOL))
            printf("    %s differs: %.3g relative\n", PNAME[i], d);
        worst = d > worst || isnan(d) ? d : worst;
    }
    return worst;
}

static bool verdict(const char *what, const char *of, double d)
{
    printf("  %-14s %-42s rel diff %.2g  %s\n", what, of, d, d <= TOL ? "ok" : "FAIL");
    return d <= TOL;
}

/* The gradients at the start (train_grads on models[AT_START]) against
 * the hand-written step's first ones. They need a check of their own:
 * Adam's first step is nearly lr sign(g), blind to a gradient's scale. */
static bool check_grads(const char *what, bool eagerly)
{
    ag_tensor g[NP];
    ag_scope_push();
    bool ok = agc_call(&train_grads_desc, AT_START, eagerly, g);
    double d = ok ? compare(g, hand.g) : INFINITY;
    ag_scope_pop();
    return verdict(what, "gradients at the start", d);
}

/* models[which]'s weights against the hand-written ones. */
static bool check_weights(const char *what, int which)
{
    ag_tensor w[NP];
    ag_scope_push();
    for (int i = 0; i < NP; i++)
        w[i] = ag_variable_read(models[which].p[i]);
    double d = compare(w, hand.p);
    ag_scope_pop();
    return verdict(what, "weights after the first step (Adam)", d);
}

static bool check_loss(const char *what, float loss)
{
    char of[64];
    snprintf(of, sizeof of, "loss %.6f (hand C %.6f)", loss, hand.loss);
    return verdict(what, of, fabs((double)loss - hand.loss) / fabs((double)hand.loss));
}

/* After the first step of A, B and C from the start (A's is the first
 * call). */
static bool check_numerics(float loss_compiled, float loss_eager)
{
    printf("numerics: the first step from the same start against hand C (tolerance %g "
           "relative to each tensor's largest element)\n", TOL);
    bool ok = check_loss("agc compiled", loss_compiled);
    ok &= check_grads("agc compiled", false) & check_weights("agc compiled", COMPILED);
    ok &= check_loss("agc eager", loss_eager);
    ok &= check_grads("agc eager", true) & check_weights("agc eager", EAGER);
    if (torch.ready) {
        ok &= check_loss("torch eager", torch.loss_eager);
        ok &= check_loss("TorchScript", torch.loss_script);
        printf("  (PyTorch: the loss of its first step; torch.get_num_threads() = %s in the "
               "child)\n", torch.threads);
    } else {
        printf("  PyTorch: skipped (%s)\n", torch.why);
    }
    return ok;
}

/* ========================================================= the timing */

/* Medians of the rounds A B C D, each one step of each side. */
struct times {
    double compiled, eager, hand, torch_eager, torch_script;
    bool torch;
};

static void time_rounds(int rounds, struct times *t)
{
    double s[5][MAX_ROUNDS];
    void (*fn[3])(void *) = {run_compiled, run_eager, run_hand};
    t->torch = torch.ready;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 3; k++) {
            double t0 = bench_now_s();
            fn[k](NULL);
            s[k][r] = bench_now_s() - t0;
        }
        if (t->torch && !torch_round(&s[3][r], &s[4][r])) {
            snprintf(torch.why, sizeof torch.why, "the script stopped answering");
            t->torch = false;
        }
    }
    double *out[5] = {&t->compiled, &t->eager, &t->hand, &t->torch_eager, &t->torch_script};
    for (int k = 0; k < (t->torch ? 5 : 3); k++)
        *out[k] = bench_median(s[k], rounds);
}

/* One warm-up step of each side (the compiled one is already traced). */
static void warm_up(void)
{
    run_compiled(NULL);
    run_eager(NULL);
    run_hand(NULL);
}

/* =========================================================== the rows */

static int count_nodes(const char *fn)
{
    char spec[64];
    snprintf(spec, sizeof spec, "f32[%d,%d], f32[%d,%d], which=0", B, IN, B, OUT);
    ag_concrete_function *cf = ag_get_concrete_function(fn, spec);
    int n = ag_concrete_num_nodes(cf);
    ag_concrete_release(cf);
    return n;
}

static void print_sizes(double first_call, double steady)
{
    int fwd = count_nodes("train_loss"), step = count_nodes("train_step");
    printf("graphs (after the passes): forward + loss %d nodes, training step %d nodes "
           "(%.2fx)\n", fwd, step, (double)step / fwd);
    printf("first call of the training step (trace, tape, passes, LLVM compile, one run; no "
           "compilation cache): %.1f ms, %.0fx a steady-state step\n\n", first_call * 1e3,
           first_call / steady);
}

static void print_ratio(const char *what, double t, double base)
{
    bench_print_time(what, t);
    printf("  %-44s %10.2fx\n", "  / hand C", t / base);
}

static void print_times(const struct times *t, int rounds)
{
    printf("one training step, medians of %d rounds (A B C D alternately, after a warm-up):\n",
           rounds);
    print_ratio("A  agc compiled (one AG_FUNCTION)", t->compiled, t->hand);
    print_ratio("B  agc eager (ag_run_functions_eagerly)", t->eager, t->hand);
    bench_print_time("C  hand C (cblas_sgemm + loops)", t->hand);
    if (!t->torch) {
        printf("  %-44s skipped (%s)\n", "D  PyTorch eager / TorchScript", torch.why);
        return;
    }
    print_ratio("D  PyTorch eager (1 thread)", t->torch_eager, t->hand);
    print_ratio("D  TorchScript (1 thread)", t->torch_script, t->hand);
}

static void print_goals(const struct times *t)
{
    double flops = 3 * 2.0 * B * ((double)IN * H + (double)H * H + (double)H * OUT);
    printf("  compiled: %.1f GFLOP/s, hand C %.1f (forward and backward products, ~3x the "
           "forward's)\n", flops / t->compiled / 1e9, flops / t->hand / 1e9);
    bench_goal("agc compiled <= 1.15x hand C", t->compiled <= 1.15 * t->hand);
    bench_goal("agc compiled faster than agc eager", t->compiled < t->eager);
    if (!t->torch)
        return;
    printf("  compiled / torch eager %.2fx, / TorchScript %.2fx\n",
           t->compiled / t->torch_eager, t->compiled / t->torch_script);
    bench_goal("agc compiled faster than PyTorch eager (1 thread)", t->compiled < t->torch_eager);
    bench_goal("agc compiled faster than TorchScript (1 thread)", t->compiled < t->torch_script);
}

static void print_header(void)
{
    char cpu[256];
    printf("bench_train: MLP %d-%d-%d-%d, batch %d, f32, softmax cross-entropy, Adam (lr %g)\n",
           IN, H, H, OUT, B, LR);
    double load[1] = {NAN};
    getloadavg(load, 1);
    printf("host: %s, %s, %ld CPUs online, load average %.2f\n",
           bench_cpu_model(cpu, sizeof cpu), bench_vector_isa(), sysconf(_SC_NPROCESSORS_ONLN),
           load[0]);
    printf("threads: 1 everywhere (OpenBLAS via openblas_set_num_threads(1): %d; "
           "AG_NUM_THREADS=1; torch.set_num_threads(1))\n", openblas_get_num_threads());
    printf("PyTorch rows: %s %s\n", BENCH_TRAIN_PYTHON, BENCH_TRAIN_TORCH);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 31;
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_train [ROUNDS (1..%d)]\n", MAX_ROUNDS);
        return 2;
    }
#if defined(__SANITIZE_ADDRESS__)
    printf("note: built with AddressSanitizer; the figures measure the instrumentation\n\n");
#endif
    signal(SIGPIPE, SIG_IGN); /* a torch child that dies is a skipped row */
    setenv("AG_NUM_THREADS", "1", 1); /* read once, at the first call */
    openblas_set_num_threads(1);
    print_header();
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_set_cache_dir(""); /* the first call compiles */
    make_start();
    char data[sizeof DATA_FILE_TEMPLATE];
    memcpy(data, DATA_FILE_TEMPLATE, sizeof data);
    if (write_start(data))
        torch_start(data);
    else
        snprintf(torch.why, sizeof torch.why, "could not write %s", data);
    tx = ag_keep(ag_from_data(AG_F32, AG_SHAPE(B, IN), start.x));
    ty = ag_keep(ag_from_data(AG_F32, AG_SHAPE(B, OUT), start.y));
    model_new(&models[COMPILED], true);
    model_new(&models[EAGER], true);
    model_new(&models[AT_START], false);
    hand_new();
    ag_function_register(&train_loss_desc);
    ag_function_register(&train_step_desc);

    double t0 = bench_now_s();
    float loss_compiled = agc_step(COMPILED); /* traced and compiled here */
    double first_call = bench_now_s() - t0;
    float loss_eager = agc_step(EAGER);
    hand_step();
    if (isnan(loss_compiled) || isnan(loss_eager))
        printf("the training step did not run: %s\n", ag_last_error());
    bool ok = check_numerics(loss_compiled, loss_eager);
    printf("\n");
    if (!ok) {
        printf("FAIL: agc's step computes something else than the hand-written one\n");
        torch_stop();
        unlink(data);
        return 1;
    }
    warm_up();
    struct times t;
    time_rounds(rounds, &t);
    torch_stop();
    unlink(data);
    print_sizes(first_call, t.compiled);
    print_times(&t, rounds);
    print_goals(&t);
    printf("\n%d bench_goal(s) missed (figures on a shared machine are noisy)\n", bench_misses);
    hand_free();
    for (int i = 0; i < NP; i++)
        free(start.p[i]);
    ag_shutdown();
    return 0;
}
