/*
 * test_batch.c - the batching scheduler (pipeline/batch.c, ag_batcher in
 * ag.h): many client threads get exactly their own rows back, batches
 * close on size and on timeout, padding, splitting, the fail-fast queue
 * limit counted exactly, the shape rules as errors at the call, bad
 * options, and shutdown with callers in flight.
 *
 * Client threads never call cmocka's asserts (they longjmp): they record
 * what they saw, and the test thread checks it after joining them.
 */
#include "staged_util.h"

#include "batch.h"
#include "histogram.h"
#include "lateness.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------- the functions */

/* y = x*2 + 1 (f32 rows of 3), z = k + 1 (i32): every output row is a
 * function of its input row alone, so a row that comes back to the wrong
 * caller, twice or not at all, shows. */
static void affine__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_add(ag_mul(a[0].tensor, 2), 1);
    o[1] = ag_add(a[1].tensor, 1);
}
static const char *const N_XK[] = {"x", "k"};
/* The same function twice: with a signature (one concrete function for
 * every batch size) and without (one per padded batch size). */
static const ag_function_desc affine_sig__desc = {
    "affine_sig", __FILE__, __LINE__, 2, N_XK, K_TT, "f32[?,3], i32[?]", NULL, 2,
    affine__trace, 0};
static const ag_function_desc affine__desc = {
    "affine", __FILE__, __LINE__, 2, N_XK, K_TT, NULL, NULL, 2, affine__trace, 0};

/* x * n, n a C scalar the signature gives. */
static void scale__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_mul(a[0].tensor, (int)a[1].i); }
static const ag_function_desc scale__desc = {
    "scale", __FILE__, __LINE__, 2, (const char *const[]){"x", "n"}, K_TI, NULL, NULL, 1,
    scale__trace, 0};

static void bump__trace(const ag_arg *a, ag_tensor *o) { o[0] = ag_variable_read(a[0].variable); }
static const ag_function_desc bump__desc = {
    "bump", __FILE__, __LINE__, 1, N_V, K_V, NULL, NULL, 1, bump__trace, 0};

/* x minus the mean of the batch's rows: each row's result depends on
 * every row of the batch, the other callers' and the padding's. */
static const int center_line = __LINE__ + 3;
static void center__trace(const ag_arg *a, ag_tensor *o)
{
    o[0] = ag_sub(a[0].tensor, ag_reduce_mean(a[0].tensor, 0, true));
}
static const ag_function_desc center_sig__desc = {
    "center_sig", __FILE__, __LINE__, 1, N_X, K_T, "f32[?,3]", NULL, 1, center__trace, 0};
static const ag_function_desc center__desc = {
    "center", __FILE__, __LINE__, 1, N_X, K_T, NULL, NULL, 1, center__trace, 0};

/* Row by row: a product with a weight, a bias, and a softmax along
 * dimension 1 (a reduction inside each row). */
static void score__trace(const ag_arg *a, ag_tensor *o)
{
    static const float wv[9] = {0.5f, -1.25f, 0.75f, 2, 0.125f, -0.5f, -1, 0.25f, 1.5f};
    ag_tensor w = ag_from_data(AG_F32, AG_SHAPE(3, 3), wv);
    ag_tensor h = ag_tanh(ag_add(ag_matmul(a[0].tensor, w), 0.25f));
    o[0] = ag_softmax(ag_mul(h, 3), 1);
}
static const ag_function_desc score__desc = {
    "score", __FILE__, __LINE__, 1, N_X, K_T, "f32[?,3]", NULL, 1, score__trace, 0};

static void register_functions(void)
{
    ag_function_register(&center_sig__desc);
    ag_function_register(&center__desc);
    ag_function_register(&score__desc);
    ag_function_register(&affine_sig__desc);
    ag_function_register(&affine__desc);
    ag_function_register(&scale__desc);
    ag_function_register(&bump__desc);
}

/* --------------------------------------------------------------- helpers */

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits (up to 10 s) until the batcher has accepted `requests` requests
 * and rejected `rejected`: what a client thread did is then known. */
static void wait_for_stats(ag_batcher *b, int64_t requests, int64_t rejected)
{
    double start = seconds();
    for (;;) {
        ag_batch_stats s = ag_batcher_stats(b);
        if (s.requests == requests && s.rejected == rejected)
            return;
        if (seconds() - start > 10)
            fail_msg("the batcher has %lld requests and %lld rejected, expected %lld and %lld",
                     (long long)s.requests, (long long)s.rejected, (long long)requests,
                     (long long)rejected);
        usleep(200);
    }
}

/* A column of n f32 values first, first + 1, ... */
static ag_tensor column(int n, float first)
{
    float v[64];
    for (int i = 0; i < n; i++)
        v[i] = first + (float)i;
    return ag_from_data(AG_F32, AG_SHAPE(n, 1), v);
}

/* Whether t is the column of n values first*2, first*2 + 2, ...: what
 * `doubled` gives for column(n, first). */
static bool is_doubled_column(ag_tensor t, int n, float first)
{
    if (ag_is_error(t) || !ag_shape_equal(ag_shape_get(t), AG_SHAPE(n, 1)))
        return false;
    for (int i = 0; i < n; i++)
        if (ag_get_f32(t, i) != 2 * (first + (float)i))
            return false;
    return true;
}

/* A gate the batch function waits at, so a test knows exactly what is
 * running and what waits. */
typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool open;
    int entered;      /* batches that reached the gate */
    int sizes[64];    /* dimension 0 of each */
    int real_rows;    /* rows of the next batch that are not padding */
    bool padding_ok;  /* every padding row so far copied row 0 */
    int sleep_us;     /* per batch, after the gate */
} gate;

#define GATE_INIT \
    {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, {0}, 0, true, 0}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->m);
    g->open = true;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static void gate_wait_entered(gate *g, int n)
{
    double start = seconds();
    pthread_mutex_lock(&g->m);
    while (g->entered < n && seconds() - start < 10) {
        pthread_mutex_unlock(&g->m);
        usleep(200);
        pthread_mutex_lock(&g->m);
    }
    int entered = g->entered;
    pthread_mutex_unlock(&g->m);
    if (entered < n)
        fail_msg("%d batches reached the gate, expected %d", entered, n);
}

/* The batch function of the callback tests: out = in + in, after the gate. */
static bool doubled(void *state, const ag_tensor *in, ag_tensor *out)
{
    gate *g = state;
    pthread_mutex_lock(&g->m);
    if (g->entered < 64)
        g->sizes[g->entered] = (int)ag_shape_get(in[0]).dims[0];
    g->entered++;
    while (!g->open)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
    if (g->sleep_us)
        usleep((useconds_t)g->sleep_us);
    out[0] = ag_add(in[0], in[0]);
    return true;
}

/* One client call in a thread of its own: n rows starting at `first`. */
typedef struct client {
    ag_batcher *b;
    int n;
    float first;
    bool ok, right;
    char error[512];
    pthread_t thread;
} client;

static void *client_main(void *arg)
{
    client *c = arg;
    ag_scope_push();
    ag_tensor in = column(c->n, c->first), out;
    c->ok = ag_batcher_call(c->b, &in, &out);
    c->right = c->ok && is_doubled_column(out, c->n, c->first);
    if (!c->ok)
        snprintf(c->error, sizeof c->error, "%s", ag_last_error() ? ag_last_error() : "");
    ag_scope_pop();
    return NULL;
}

static void client_start(client *c, ag_batcher *b, int n, float first)
{
    *c = (client){.b = b, .n = n, .first = first};
    assert_int_equal(pthread_create(&c->thread, NULL, client_main, c), 0);
}

static void client_join_right(client *c)
{
    pthread_join(c->thread, NULL);
    if (!c->right)
        fail_msg("the client of %d rows from %g %s: %s", c->n, c->first,
                 c->ok ? "got wrong rows" : "failed", c->error);
}

/* A call from the test thread that must fail at once with `needle`. */
static void expect_call_error(ag_batcher *b, ag_tensor in, const char *needle, int line)
{
    ag_tensor out;
    ag_clear_error();
    if (ag_batcher_call(b, &in, &out))
        fail_msg("line %d: the call succeeded; expected \"%s\"", line, needle);
    const char *m = ag_last_error();
    if (!ag_is_error(out) || !m || !strstr(m, needle))
        fail_msg("line %d: error \"%s\" lacks \"%s\"", line, m ? m : "(none)", needle);
}
#define EXPECT_CALL_ERROR(b, in, needle) expect_call_error((b), (in), (needle), __LINE__)

/* ------------------------------------------------------ many clients */

enum { CLIENTS = 64, REQUESTS = 300, MAX_ROWS = 16 };

typedef struct load_client {
    ag_batcher *b;
    int id;
    int64_t rows;    /* sent in successful calls */
    int ok, wrong, failed;
    char error[512];
    pthread_t thread;
} load_client;

/* k of row r of request q of client c: unique across the whole test. */
static int32_t row_key(int c, int q, int r) { return c * 1000000 + q * 100 + r; }

/* Whether the outputs are exactly the rows of this request. */
static bool rows_right(ag_tensor y, ag_tensor z, int c, int q, int n)
{
    if (!ag_shape_equal(ag_shape_get(y), AG_SHAPE(n, 3)) ||
        !ag_shape_equal(ag_shape_get(z), AG_SHAPE(n)))
        return false;
    const float *yd = ag_data(y);
    const int32_t *zd = ag_data(z);
    for (int r = 0; r < n; r++)
        if (yd[3 * r] != 2.0f * c + 1 || yd[3 * r + 1] != 2.0f * q + 1 ||
            yd[3 * r + 2] != 2.0f * r + 1 || zd[r] != row_key(c, q, r) + 1)
            return false;
    return true;
}

/* One request of n rows: x row r = (c, q, r), k row r = row_key. */
static void load_request(load_client *lc, int q, int n)
{
    float x[3 * 3 * MAX_ROWS];
    int32_t k[3 * MAX_ROWS];
    for (int r = 0; r < n; r++) {
        x[3 * r] = (float)lc->id;
        x[3 * r + 1] = (float)q;
        x[3 * r + 2] = (float)r;
        k[r] = row_key(lc->id, q, r);
    }
    ag_scope_push();
    ag_tensor in[2] = {ag_from_data(AG_F32, AG_SHAPE(n, 3), x),
                       ag_from_data(AG_I32, AG_SHAPE(n), k)};
    ag_tensor out[2];
    if (!ag_batcher_call(lc->b, in, out)) {
        lc->failed++;
        snprintf(lc->error, sizeof lc->error, "%s", ag_last_error() ? ag_last_error() : "?");
    } else if (rows_right(out[0], out[1], lc->id, q, n)) {
        lc->ok++;
        lc->rows += n;
    } else {
        lc->wrong++;
    }
    ag_scope_pop();
}

static void *load_main(void *arg)
{
    load_client *lc = arg;
    unsigned seed = 12345u + (unsigned)lc->id;
    for (int q = 0; q < REQUESTS; q++) {
        /* 1 .. 3*MAX_ROWS/2: a third of the requests split across batches */
        int n = 1 + (int)(rand_r(&seed) % (3 * MAX_ROWS / 2));
        load_request(lc, q, n);
    }
    return NULL;
}

/* CLIENTS threads x REQUESTS requests through b; every row comes back to
 * its caller, exactly once, and the batcher counted each row once. */
static void run_load(ag_batcher *b)
{
    static load_client lc[CLIENTS];
    ag_batch_stats before = ag_batcher_stats(b);
    for (int i = 0; i < CLIENTS; i++) {
        lc[i] = (load_client){.b = b, .id = i};
        assert_int_equal(pthread_create(&lc[i].thread, NULL, load_main, &lc[i]), 0);
    }
    int64_t rows = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(lc[i].thread, NULL);
        if (lc[i].failed || lc[i].wrong)
            fail_msg("client %d: %d failed, %d wrong rows (%s)", i, lc[i].failed, lc[i].wrong,
                     lc[i].error);
        assert_int_equal(lc[i].ok, REQUESTS);
        rows += lc[i].rows;
    }
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.requests - before.requests, CLIENTS * REQUESTS);
    assert_int_equal(s.rows - before.rows, rows);
    assert_int_equal(s.rejected + s.refused + s.failed_batches, 0);
    assert_int_equal(s.waiting_batches, 0);
    /* batching happened: fewer runs than requests */
    assert_true(s.batches - before.batches < CLIENTS * REQUESTS);
    /* the runs took time (run_micros, what the p99 goal is measured against) */
    assert_true(s.run_micros > before.run_micros);
}

static void test_many_clients_get_their_own_rows(void **state)
{
    (void)state;
    int64_t live = ag_live_tensors();
    ag_batch_options o = {.num_batch_threads = 2, .max_batch_size = MAX_ROWS,
                          .max_enqueued_batches = 10000};
    ag_batcher *b = ag_batcher_new("affine_sig", NULL, &o);
    assert_non_null(b);
    run_load(b);
    ag_batcher_free(b);
    assert_int_equal(ag_function_trace_count("affine_sig"), 1);
    assert_int_equal(ag_live_tensors(), live);
}

static void test_many_clients_with_padding_and_timeout(void **state)
{
    (void)state;
    int64_t live = ag_live_tensors();
    static const int sizes[] = {2, 4, 8, MAX_ROWS};
    ag_batch_options o = {.num_batch_threads = 3, .max_batch_size = MAX_ROWS,
                          .batch_timeout_micros = 300, .allowed_batch_sizes = sizes,
                          .n_allowed_batch_sizes = 4, .max_enqueued_batches = 10000};
    ag_batcher *b = ag_batcher_new("affine", NULL, &o);
    assert_non_null(b);
    run_load(b);
    ag_batch_stats s = ag_batcher_stats(b);
    ag_batcher_free(b);
    /* the function cache traced once per allowed size at most */
    assert_in_range(ag_function_trace_count("affine"), 1, 4);
    assert_true(s.padding_rows >= 0);
    assert_int_equal(ag_live_tensors(), live);
}

/* ----------------------------------------------------- fail fast, exactly */

/* One batch thread held at the gate by a full batch; two more full batches
 * wait (max_enqueued_batches 2): every further request fails at once. */
static void test_full_queue_fails_fast(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    ag_batch_options o = {.num_batch_threads = 1, .max_batch_size = 4,
                          .max_enqueued_batches = 2, .disable_large_batch_splitting = true};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    assert_non_null(b);
    client c[3];
    client_start(&c[0], b, 4, 0); /* batch 1: full, taken, held at the gate */
    gate_wait_entered(&g, 1);
    client_start(&c[1], b, 4, 100); /* batch 2 waits */
    wait_for_stats(b, 2, 0);
    client_start(&c[2], b, 4, 200); /* batch 3 waits */
    wait_for_stats(b, 3, 0);
    assert_int_equal(ag_batcher_stats(b).waiting_batches, 2);

    double start = seconds();
    EXPECT_CALL_ERROR(b, column(1, 300), "the queue is full");
    EXPECT_CALL_ERROR(b, column(4, 400), "max_enqueued_batches 2");
    EXPECT_CALL_ERROR(b, column(5, 500), "disable_large_batch_splitting");
    assert_true(seconds() - start < 5); /* failed fast: nothing waited for the gate */

    gate_open(&g);
    for (int i = 0; i < 3; i++)
        client_join_right(&c[i]);
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.requests, 3);
    assert_int_equal(s.rejected, 2);
    assert_int_equal(s.refused, 1);
    assert_int_equal(s.batches, 3);
    assert_int_equal(s.rows, 12);
    ag_batcher_free(b);
}

/* The same with an open batch and splitting: a request fills the open
 * batch and spills into a new one, and the queue limit counts the open
 * batch as TensorFlow does. */
static void test_split_requests_and_open_batches(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    ag_batch_options o = {.num_batch_threads = 1, .max_batch_size = 4,
                          .batch_timeout_micros = 60 * 1000000LL, .max_enqueued_batches = 2};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    client c[4];
    client_start(&c[0], b, 4, 0); /* full at once: taken, held at the gate */
    gate_wait_entered(&g, 1);
    client_start(&c[1], b, 2, 100); /* opens batch 2 (the timeout is a minute) */
    wait_for_stats(b, 2, 0);
    client_start(&c[2], b, 3, 200); /* 2 rows fill batch 2, 1 opens batch 3 */
    wait_for_stats(b, 3, 0);
    assert_int_equal(ag_batcher_stats(b).waiting_batches, 2);
    EXPECT_CALL_ERROR(b, column(4, 300), "the queue is full"); /* 3 fit, 1 needs a batch */
    client_start(&c[3], b, 3, 400); /* fills batch 3 */
    wait_for_stats(b, 4, 1);
    EXPECT_CALL_ERROR(b, column(1, 500), "the queue is full");
    EXPECT_CALL_ERROR(b, column(9, 600), "can never be queued");

    gate_open(&g);
    for (int i = 0; i < 4; i++)
        client_join_right(&c[i]);
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.rejected, 2);
    assert_int_equal(s.batches, 3);
    assert_int_equal(s.rows, 12);
    assert_int_equal(s.padding_rows, 0);
    ag_batcher_free(b);
}

/* A request queued behind two batches is late (ag_batch_stats.late): it
 * waited for more than the batch before its own. Batch 1 is held at the
 * gate for 20 ms after batch 3's request arrived; batch 2 then runs at
 * once, so batch 3's request waited 20 ms more than batches 2 and 3 ran. */
static void test_late_counts_requests_two_batches_back(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    ag_batch_options o = {.num_batch_threads = 1, .max_batch_size = 4,
                          .max_enqueued_batches = 4, .disable_large_batch_splitting = true};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    client c[3];
    client_start(&c[0], b, 4, 0); /* batch 1: full, taken, held */
    gate_wait_entered(&g, 1);
    client_start(&c[1], b, 4, 100); /* batch 2 */
    wait_for_stats(b, 2, 0);
    client_start(&c[2], b, 4, 200); /* batch 3, two batches back */
    wait_for_stats(b, 3, 0);
    usleep(20 * 1000);
    gate_open(&g);
    for (int i = 0; i < 3; i++)
        client_join_right(&c[i]);
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.batches, 3);
    /* batch 3's caller at least; batch 2's waited only for batch 1 (the
     * batch before its own), batch 1's only perhaps for its thread to wake */
    assert_true(s.late >= 1 && s.late <= 2);
    ag_batcher_free(b);
}

/* The margin a batch thread stops sleeping at before a deadline: the
 * third largest lateness of the last LATE_WINDOW timed waits plus the
 * slack, within its bounds; two outliers are ignored, three are not, and
 * they age out. */
static void test_timer_lateness_margin(void **state)
{
    (void)state;
    lateness l;
    late_init(&l);
    assert_int_equal(late_margin(&l), LATE_START_US);
    late_add(&l, 30);
    assert_int_equal(late_margin(&l), 30 + LATE_SLACK_US); /* fewer than three: the smallest */
    for (int i = 1; i < LATE_WINDOW - 2; i++)
        late_add(&l, 40);
    late_add(&l, 5000);
    late_add(&l, 3000); /* two host hiccups */
    assert_int_equal(late_margin(&l), 40 + LATE_SLACK_US);
    late_add(&l, 400); /* a third: the margin follows, the 30 left the window */
    assert_int_equal(late_margin(&l), 400 + LATE_SLACK_US);
    late_add(&l, 2000);
    assert_int_equal(late_margin(&l), LATE_MAX_US); /* bounded */
    for (int i = 0; i < LATE_WINDOW; i++)
        late_add(&l, -3); /* early: counted as on time */
    assert_int_equal(late_margin(&l), LATE_MIN_US);
}

/* -------------------------------------------------- when batches close */

static void test_timeout_gathers_a_batch(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    g.open = true;
    ag_batch_options o = {.max_batch_size = 8, .batch_timeout_micros = 500 * 1000};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    client c[2];
    double start = seconds();
    client_start(&c[0], b, 1, 0);
    wait_for_stats(b, 1, 0);
    client_start(&c[1], b, 2, 10); /* joins the open batch within its 500 ms */
    client_join_right(&c[0]);
    client_join_right(&c[1]);
    assert_true(seconds() - start >= 0.49); /* the batch waited for its timeout */
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.batches, 1);
    assert_int_equal(s.rows, 3);
    /* the first request waited the whole timeout, the second less: the
     * batcher's latencies say so (the p99 of two is the larger) */
    assert_true(s.latency_p99_micros >= 500 * 1000);
    assert_true(s.latency_p99_micros <= 500 * 1000 * 129 / 128 + 400 * 1000);
    assert_true(s.latency_p50_micros <= s.latency_p99_micros);
    /* where it went: the wait (the timeout) and a short run */
    assert_true(s.wait_p99_micros >= 500 * 1000);
    assert_true(s.wait_p99_micros <= s.latency_p99_micros);
    assert_true(s.wait_p50_micros <= s.wait_p99_micros);
    assert_true(s.run_p50_micros == s.run_p99_micros); /* one batch */
    assert_true(s.run_p99_micros < 400 * 1000);
    assert_true(s.wait_p99_micros + s.run_p99_micros >= s.latency_p99_micros * 127 / 129);
    ag_batcher_free(b);
}

/* The histogram behind latency_p50/p99: exact below HIST_SUB, then at
 * most 1/HIST_SUB above the true quantile, never below it. */
static void test_latency_histogram(void **state)
{
    (void)state;
    static hist h;
    assert_int_equal(hist_quantile(&h, 0.5), 0); /* nothing yet */
    for (int64_t v = 1; v <= 100000; v++)
        hist_add(&h, v);
    int64_t p50 = hist_quantile(&h, 0.5), p99 = hist_quantile(&h, 0.99);
    assert_true(p50 >= 50000 && p50 <= 50000 + 50000 / HIST_SUB);
    assert_true(p99 >= 99000 && p99 <= 99000 + 99000 / HIST_SUB);
    assert_int_equal(hist_quantile(&h, 0), 1);
    assert_true(hist_quantile(&h, 1) >= 100000 && hist_quantile(&h, 1) <= 100000 + 100000 / HIST_SUB);
    static hist small;
    for (int64_t v = 0; v < HIST_SUB; v++)
        hist_add(&small, v);
    assert_int_equal(hist_quantile(&small, 1), HIST_SUB - 1);
    assert_int_equal(hist_quantile(&small, 0.5), HIST_SUB / 2 - 1); /* exact below HIST_SUB */
    static hist huge;
    hist_add(&huge, INT64_C(1) << 50); /* past the last power: the last bucket */
    hist_add(&huge, -5);               /* a clock step backwards: counted as 0 */
    assert_int_equal(hist_quantile(&huge, 0.5), 0);
    assert_true(hist_quantile(&huge, 1) > INT64_C(1) << 40);
}

static void test_full_batch_runs_before_its_timeout(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    g.open = true;
    ag_batch_options o = {.max_batch_size = 3, .batch_timeout_micros = 60 * 1000000LL};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    client c[2];
    double start = seconds();
    client_start(&c[0], b, 1, 0);
    wait_for_stats(b, 1, 0);
    client_start(&c[1], b, 2, 10);
    client_join_right(&c[0]);
    client_join_right(&c[1]);
    assert_true(seconds() - start < 30);
    assert_int_equal(ag_batcher_stats(b).batches, 1);
    ag_batcher_free(b);
}

/* A padded batch runs at an allowed size, with copies of its first row. */
static bool padded_rows_copy_row0(void *state, const ag_tensor *in, ag_tensor *out)
{
    gate *g = state;
    int64_t n = ag_shape_get(in[0]).dims[0];
    g->sizes[g->entered++] = (int)n;
    for (int64_t i = g->real_rows; i < n; i++)
        if (ag_get_f32(in[0], i) != ag_get_f32(in[0], 0))
            g->padding_ok = false;
    out[0] = ag_add(in[0], in[0]);
    return true;
}

static void test_padding_to_allowed_sizes(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    static const int sizes[] = {4, 8};
    ag_batch_options o = {.max_batch_size = 8, .allowed_batch_sizes = sizes,
                          .n_allowed_batch_sizes = 2};
    ag_batcher *b = ag_batcher_new_fn(padded_rows_copy_row0, &g, 1, 1, &o);
    ag_tensor in = column(3, 7), out;
    g.real_rows = 3;
    assert_true(ag_batcher_call(b, &in, &out));
    assert_true(is_doubled_column(out, 3, 7));
    in = column(5, 1);
    g.real_rows = 5;
    assert_true(ag_batcher_call(b, &in, &out));
    assert_true(is_doubled_column(out, 5, 1));
    assert_int_equal(g.sizes[0], 4);
    assert_int_equal(g.sizes[1], 8);
    assert_true(g.padding_ok);
    assert_int_equal(ag_batcher_stats(b).padding_rows, 1 + 3);
    assert_int_equal(bt_padded_size(&o, 1), 4);
    assert_int_equal(bt_padded_size(&o, 5), 8);
    ag_batcher_free(b);
}

/* A row-wise function batched with padding (3 real rows in a batch of
 * 8, padded with copies of row 0): the real rows are the unbatched
 * call's, bit for bit. */
static void test_padding_never_changes_real_rows(void **state)
{
    (void)state;
    static const int eight[] = {8};
    ag_batch_options o = {.max_batch_size = 8, .allowed_batch_sizes = eight,
                          .n_allowed_batch_sizes = 1};
    ag_batcher *b = ag_batcher_new("score", NULL, &o);
    assert_non_null(b);
    float xv[3 * 3] = {0.5f, -2, 1.25f, 3, 0.75f, -0.25f, -1.5f, 2.5f, 0.125f};
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(3, 3), xv), batched, alone;
    assert_true(ag_batcher_call(b, &x, &batched));
    ag_arg arg = {.kind = AG_ARG_TENSOR, .tensor = x};
    assert_true(ag_function_call_at(AG_HERE, &score__desc, &arg, &alone));
    assert_true(ag_shape_equal(ag_shape_get(batched), AG_SHAPE(3, 3)));
    for (int64_t i = 0; i < 9; i++)
        assert_memory_equal(&(float){ag_get_f32(batched, i)}, &(float){ag_get_f32(alone, i)},
                            sizeof(float));
    assert_int_equal(ag_batcher_stats(b).padding_rows, 5);
    ag_batcher_free(b);
}

/* A function whose rows are not independent is refused, naming the op and
 * its line: with a signature when the batcher is made, without one on
 * the first batch, which fails for its callers, as every later one does. */
static void test_functions_that_mix_rows_are_refused(void **state)
{
    (void)state;
    char needle[256];
    snprintf(needle, sizeof needle, "test_batch.c:%d: 'ag_reduce_mean' reduces along "
                                    "dimension 0, across the rows of the batch", center_line);
    ag_batch_options o = {.max_batch_size = 8};
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("center_sig", NULL, &o)),
                      "ag_batcher_new: 'center_sig' cannot be batched: ");
    assert_non_null(strstr(ag_last_error(), needle));
    ag_batcher *b = ag_batcher_new("center", NULL, &o);
    assert_non_null(b);
    for (int call = 0; call < 2; call++) {
        ag_tensor x = ag_ones(AG_F32, AG_SHAPE(2, 3)), y;
        ag_clear_error();
        assert_false(ag_batcher_call(b, &x, &y));
        const char *m = ag_last_error();
        if (!m || !strstr(m, "'center' cannot be batched: ") || !strstr(m, needle))
            fail_msg("call %d: error \"%s\" lacks \"%s\"", call, m ? m : "(none)", needle);
    }
    assert_int_equal(ag_batcher_stats(b).failed_batches, 2);
    ag_batcher_free(b);
}

/* ------------------------------------------------------------ the rules */

static bool pass_through(void *state, const ag_tensor *in, ag_tensor *out)
{
    (void)state;
    out[0] = ag_add(in[0], 0);
    out[1] = ag_add(in[1], 0);
    return true;
}

static void expect_pair_error(ag_batcher *b, ag_tensor x, ag_tensor y, const char *needle,
                              int line)
{
    ag_tensor in[2] = {x, y}, out[2];
    ag_clear_error();
    if (ag_batcher_call(b, in, out))
        fail_msg("line %d: the call succeeded; expected \"%s\"", line, needle);
    const char *m = ag_last_error();
    if (!ag_is_error(out[0]) || !ag_is_error(out[1]) || !m || !strstr(m, needle))
        fail_msg("line %d: error \"%s\" lacks \"%s\"", line, m ? m : "(none)", needle);
}
#define EXPECT_PAIR_ERROR(b, x, y, needle) expect_pair_error((b), (x), (y), (needle), __LINE__)

static void test_shape_rules_at_the_call(void **state)
{
    (void)state;
    ag_batch_options o = {.max_batch_size = 8};
    ag_batcher *b = ag_batcher_new_fn(pass_through, NULL, 2, 2, &o);
    ag_tensor x = ag_ones(AG_F32, AG_SHAPE(2, 3)), y = ag_ones(AG_I32, AG_SHAPE(2));
    /* rule 1: something to batch along */
    EXPECT_PAIR_ERROR(b, ag_scalar_f32(1), y, "input 0 is a scalar");
    /* rule 3: one dimension 0 per call */
    EXPECT_PAIR_ERROR(b, x, ag_ones(AG_I32, AG_SHAPE(3)),
                      "must have the same dimension 0: input 1 has 3 rows, input 0 has 2");
    EXPECT_PAIR_ERROR(b, ag_ones(AG_F32, AG_SHAPE(0, 3)), ag_ones(AG_I32, AG_SHAPE(0)),
                      "no rows");
    /* rule 2: the first call fixes the other dimensions */
    ag_tensor in[2] = {x, y}, out[2];
    assert_true(ag_batcher_call(b, in, out));
    EXPECT_PAIR_ERROR(b, ag_ones(AG_F32, AG_SHAPE(2, 4)), y,
                      "input 0 is f32[2,4] but this batcher's requests are f32[?,3]");
    EXPECT_PAIR_ERROR(b, ag_ones(AG_F64, AG_SHAPE(2, 3)), y, "must match across requests");
    ag_tensor none = {0, 0};
    EXPECT_PAIR_ERROR(b, x, none, "uninitialized");
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.requests, 1);
    assert_int_equal(s.refused, 5);
    ag_batcher_free(b);
}

/* Rule 4 and failures of the function: every caller of the batch hears. */
static bool bad_outputs(void *state, const ag_tensor *in, ag_tensor *out)
{
    int kind = *(int *)state;
    if (kind == 0)
        out[0] = ag_slice(in[0], AG_INDEX(0, 0), AG_INDEX(1, -1)); /* one row only */
    else if (kind == 1)
        out[0] = ag_reduce_sum(in[0], AG_ALL_AXES, false); /* a scalar */
    else if (kind == 2)
        out[0] = ag_matmul(in[0], in[0]); /* [n,1] x [n,1]: a reported error */
    else
        return false; /* no message */
    return true;
}

static void test_function_errors_reach_every_caller(void **state)
{
    (void)state;
    static const char *const needles[] = {
        "dimension 0 equal to the sum of the inputs'", "no dimension 0 (a scalar)",
        "ag_matmul", "reported no error"};
    for (int kind = 0; kind < 4; kind++) {
        ag_batch_options o = {.max_batch_size = 4, .batch_timeout_micros = 20 * 1000000LL};
        ag_batcher *b = ag_batcher_new_fn(bad_outputs, &kind, 1, 1, &o);
        client c[2];
        client_start(&c[0], b, 2, 0);
        wait_for_stats(b, 1, 0);
        client_start(&c[1], b, 2, 10); /* fills the batch: it runs */
        for (int i = 0; i < 2; i++) {
            pthread_join(c[i].thread, NULL);
            assert_false(c[i].ok);
            if (!strstr(c[i].error, needles[kind]) || !strstr(c[i].error, "test_batch.c"))
                fail_msg("kind %d: error \"%s\" lacks \"%s\"", kind, c[i].error, needles[kind]);
        }
        assert_int_equal(ag_batcher_stats(b).failed_batches, 1);
        ag_batcher_free(b);
    }
}

static void test_bad_options(void **state)
{
    (void)state;
    static const int twice[] = {4, 4, 8}, short_[] = {2, 4}, zero[] = {0, 8};
    struct {
        ag_batch_options o;
        const char *needle;
    } cases[] = {
        {{.max_batch_size = 0}, "max_batch_size must be positive, got 0"},
        {{.max_batch_size = 8, .num_batch_threads = -1}, "num_batch_threads must not be negative"},
        {{.max_batch_size = 8, .batch_timeout_micros = -5}, "batch_timeout_micros must not be"},
        {{.max_batch_size = 8, .max_enqueued_batches = -1}, "max_enqueued_batches must not be"},
        {{.max_batch_size = 8, .allowed_batch_sizes = twice, .n_allowed_batch_sizes = 3},
         "strictly increasing: [1] = 4 follows [0] = 4"},
        {{.max_batch_size = 8, .allowed_batch_sizes = short_, .n_allowed_batch_sizes = 2},
         "the last of allowed_batch_sizes (4) must equal max_batch_size (8)"},
        {{.max_batch_size = 8, .allowed_batch_sizes = zero, .n_allowed_batch_sizes = 2},
         "allowed_batch_sizes[0] is 0"},
        {{.max_batch_size = 8, .n_allowed_batch_sizes = 2}, "allowed_batch_sizes is NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ag_clear_error();
        assert_null(ag_batcher_new_fn(pass_through, NULL, 2, 2, &cases[i].o));
        const char *m = ag_last_error();
        if (!m || !strstr(m, cases[i].needle) || !strstr(m, "ag_batcher_new"))
            fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, m ? m : "(none)", cases[i].needle);
        char err[256];
        assert_false(bt_options_check(&cases[i].o, err, sizeof err));
        /* the same check agc-convert will use */
        assert_non_null(strstr(err, cases[i].needle));
    }
    ag_batch_options ok = {.max_batch_size = 8};
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new_fn(pass_through, NULL, 2, 2, NULL)),
                      "the options are NULL");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new_fn(pass_through, NULL, 0, 1, &ok)),
                      "has 0 inputs");
}

static void test_bad_functions_and_signatures(void **state)
{
    (void)state;
    ag_batch_options o = {.max_batch_size = 8};
    static const int eight[] = {8};
    ag_batch_options one_size = {.max_batch_size = 8, .allowed_batch_sizes = eight,
                                 .n_allowed_batch_sizes = 1};
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("nope", NULL, &o)),
                      "no AG_FUNCTION named 'nope' is known");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("bump", NULL, &o)),
                      "parameter 'v' of 'bump' is a variable");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("scale", NULL, &o)),
                      "give its value in the signature (\"..., n=VALUE\")");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("affine", "f32[4,3], i32[?]", &o)),
                      "input 'x' a fixed dimension 0");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("affine", "f32[?,3], i32[]", &o)),
                      "input 'k' no dimension 0");
    EXPECT_ERROR_VOID(assert_null(ag_batcher_new("affine", "f32[?,3", &o)), "bad signature");
    /* a fixed dimension 0 is fine when every batch is padded to it */
    ag_batcher *b = ag_batcher_new("affine", "f32[8,3], i32[8]", &one_size);
    assert_non_null(b);
    ag_tensor in[2] = {ag_ones(AG_F32, AG_SHAPE(3, 3)), ag_ones(AG_I32, AG_SHAPE(3))}, out[2];
    assert_true(ag_batcher_call(b, in, out));
    CHECK_VALUES(out[1], 2, 2, 2);
    /* the signature's other dimensions are checked at the call */
    EXPECT_PAIR_ERROR(b, ag_ones(AG_F32, AG_SHAPE(3, 2)), in[1],
                      "input 'x' is f32[3,2] but the batcher's signature gives f32[?,3]");
    ag_batcher_free(b);

    /* a C scalar from the signature */
    b = ag_batcher_new("scale", "f32[?], n=3", &o);
    assert_non_null(b);
    ag_tensor x = F32(AG_SHAPE(2), 1, 2), y;
    assert_true(ag_batcher_call(b, &x, &y));
    CHECK_VALUES(y, 3, 6);
    ag_batcher_free(b);
}

/* ------------------------------------------------------------- shutdown */

/* ag_batcher_free with every caller waiting in a batch that would wait a
 * minute: the batches run at once and every caller gets its rows. */
static void test_free_with_callers_in_flight(void **state)
{
    (void)state;
    int64_t live = ag_live_tensors();
    gate g = GATE_INIT;
    g.open = true;
    g.sleep_us = 1000;
    enum { N = 24 };
    ag_batch_options o = {.num_batch_threads = 2, .max_batch_size = 64,
                          .batch_timeout_micros = 60 * 1000000LL};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    client c[N];
    for (int i = 0; i < N; i++)
        client_start(&c[i], b, 1 + i % 7, (float)(100 * i));
    wait_for_stats(b, N, 0);
    double start = seconds();
    ag_batcher_free(b);
    assert_true(seconds() - start < 30);
    for (int i = 0; i < N; i++)
        client_join_right(&c[i]);
    assert_int_equal(ag_live_tensors(), live);
}

/* Clients calling in a loop while the batcher closes: each call before the
 * close gets its rows, each after it a clear error; none hangs. */
typedef struct looper {
    ag_batcher *b;
    int id, ok, wrong;
    char last_error[512];
    pthread_t thread;
} looper;

static void *looper_main(void *arg)
{
    looper *l = arg;
    ag_scope_push();
    for (int q = 0;; q++) {
        ag_scope_push();
        int n = 1 + (l->id + q) % 5;
        float first = (float)(l->id * 10000 + q * 10);
        ag_tensor in = column(n, first), out;
        bool ok = ag_batcher_call(l->b, &in, &out);
        if (ok && is_doubled_column(out, n, first))
            l->ok++;
        else if (ok)
            l->wrong++;
        else
            snprintf(l->last_error, sizeof l->last_error, "%s", ag_last_error());
        ag_scope_pop();
        if (!ok)
            break;
    }
    ag_scope_pop();
    return NULL;
}

static void test_close_while_clients_loop(void **state)
{
    (void)state;
    gate g = GATE_INIT;
    g.open = true;
    enum { N = 8 };
    ag_batch_options o = {.num_batch_threads = 2, .max_batch_size = 8,
                          .batch_timeout_micros = 100, .max_enqueued_batches = 1000};
    ag_batcher *b = ag_batcher_new_fn(doubled, &g, 1, 1, &o);
    looper l[N];
    for (int i = 0; i < N; i++) {
        l[i] = (looper){.b = b, .id = i};
        assert_int_equal(pthread_create(&l[i].thread, NULL, looper_main, &l[i]), 0);
    }
    while (ag_batcher_stats(b).requests < 200)
        usleep(1000);
    ag_batcher_close(b);
    int64_t ok = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(l[i].thread, NULL);
        assert_int_equal(l[i].wrong, 0);
        if (!strstr(l[i].last_error, "the batcher is closed"))
            fail_msg("looper %d ended with \"%s\"", i, l[i].last_error);
        ok += l[i].ok;
    }
    ag_batch_stats s = ag_batcher_stats(b);
    assert_int_equal(s.requests, ok);
    assert_int_equal(s.refused, N);
    EXPECT_CALL_ERROR(b, column(1, 0), "the batcher is closed");
    ag_batcher_free(b);
    /* a freed batcher is recognized, not followed */
    EXPECT_ERROR_VOID(ag_batcher_free(b), "not a live batcher");
}

/* Left alive on purpose: ag_shutdown (at the end of main) frees it, and
 * the leak checker of the ASan build sees nothing left. */
static void test_shutdown_frees_live_batchers(void **state)
{
    (void)state;
    ag_batch_options o = {.max_batch_size = 4, .num_batch_threads = 2};
    ag_batcher *b = ag_batcher_new("affine_sig", NULL, &o);
    ag_tensor in[2] = {ag_ones(AG_F32, AG_SHAPE(1, 3)), ag_ones(AG_I32, AG_SHAPE(1))}, out[2];
    assert_true(ag_batcher_call(b, in, out));
    CHECK_VALUES(out[0], 3, 3, 3);
}

int main(void)
{
    register_functions();
    const struct CMUnitTest tests[] = {
        TU_TEST(test_many_clients_get_their_own_rows),
        TU_TEST(test_many_clients_with_padding_and_timeout),
        TU_TEST(test_full_queue_fails_fast),
        TU_TEST(test_split_requests_and_open_batches),
        TU_TEST(test_late_counts_requests_two_batches_back),
        TU_TEST(test_timeout_gathers_a_batch),
        TU_TEST(test_latency_histogram),
        TU_TEST(test_timer_lateness_margin),
        TU_TEST(test_full_batch_runs_before_its_timeout),
        TU_TEST(test_padding_to_allowed_sizes),
        TU_TEST(test_padding_never_changes_real_rows),
        TU_TEST(test_functions_that_mix_rows_are_refused),
        TU_TEST(test_shape_rules_at_the_call),
        TU_TEST(test_function_errors_reach_every_caller),
        TU_TEST(test_bad_options),
        TU_TEST(test_bad_functions_and_signatures),
        TU_TEST(test_free_with_callers_in_flight),
        TU_TEST(test_close_while_clients_loop),
        TU_TEST(test_shutdown_frees_live_batchers),
    };
    TU_RUN(tests);
}
