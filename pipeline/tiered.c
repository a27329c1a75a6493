/*
 * tiered.c - tiered execution: the target's compile on a background
 * thread while the reference executor runs the first calls (tiered.h),
 * and the policy that decides when (ag_set_jit_policy, AG_JIT).
 *
 * One background thread compiles, in the order the signatures were
 * first called: LLVM is single-threaded per module, and a second
 * compiling thread would take a core from the program that the
 * interpreter is using meanwhile. The thread starts with the first
 * compile queued and stops at ag_shutdown and at exit (a thread still
 * inside LLVM while the process exits would run into LLVM's static
 * destructors).
 *
 * A compile's result is published with one release store of its state;
 * calls read it with an acquire load and never take a lock. The
 * reference executable stays alive beside the compiled one until the
 * result is freed, so a call that chose it just before the switch still
 * runs safely.
 */
#include "tiered.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ policy */

/* AG_JIT=auto compiles a graph in the background from this many nodes
 * (of the optimized graph) on. Below it LLVM takes tens of milliseconds
 * at most, and the compiled code from the first call is worth the wait:
 * the interpreter runs a large tensor op by op, unfused, several times
 * slower. Above it the compile time grows faster than the graph (12.8 s
 * for the 4,800 nodes of issue 12's softmax chain, where the interpreter
 * runs the call in 14 ms). docs/runtime.md has the figures. */
enum { AUTO_MIN_NODES = 1000 };

static atomic_bool env_warned;

/* The setting jit of c (ag_set_jit_policy, else AG_JIT, else auto). */
static ag_jit_policy policy_of(const rt_config *c)
{
    const char *env = rt_config_str(c, RT_CFG_JIT);
    if (!env || !*env || strcmp(env, "auto") == 0)
        return AG_JIT_AUTO;
    if (strcmp(env, "sync") == 0)
        return AG_JIT_SYNC;
    if (strcmp(env, "async") == 0)
        return AG_JIT_ASYNC;
    if (!atomic_exchange(&env_warned, true))
        rt_warn((ag_loc){0}, "AG_JIT='%s' is not a policy (sync, async or auto); using auto",
                env);
    return AG_JIT_AUTO;
}

void ag_set_jit_policy(ag_jit_policy p)
{
    static const char *const names[] = {"auto", "sync", "async"};
    bool known = p == AG_JIT_AUTO || p == AG_JIT_SYNC || p == AG_JIT_ASYNC;
    rt_config_set(RT_CFG_JIT, known ? names[p] : NULL);
}

ag_jit_policy ag_get_jit_policy(void)
{
    const rt_config *c = rt_config_get();
    ag_jit_policy p = policy_of(c);
    rt_config_release(c);
    return p;
}

bool pl_tier_wanted(const rt_config *c, int n_nodes)
{
    switch (policy_of(c)) {
    case AG_JIT_SYNC: return false;
    case AG_JIT_ASYNC: return true;
    default: return n_nodes >= AUTO_MIN_NODES;
    }
}

/* ------------------------------------------------------------- a job */

enum { QUEUED, RUNNING, DONE, CANCELLED };

struct pl_tier {
    const ir_function *graph;
    pass_analyses *am;
    const tgt_target *target;
    tgt_options options;
    pl_timing *timing;
    atomic_int state; /* written under lock; DONE published with release */
    tgt_exe *exe;     /* after DONE: the code, NULL when the compile failed */
    /* under lock: the result was freed while the compile ran; the
     * thread frees graph (owned), am and the job when it ends */
    bool orphaned;
    ir_function *owned_graph;
    pl_tier *next; /* in the queue */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* a job queued, or stop */
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER; /* a job ended */
static pl_tier *head, *tail;                           /* the queue, oldest first */
static pl_tier *running;
static bool thread_alive;
static pthread_t thread;
/* The thread runs while this is the value it started with: a thread
 * being stopped must not go on beside the one a new submit starts. */
static uintptr_t generation;

/* A job's end: its reference to the compile's settings goes with it. */
static void job_free(pl_tier *job)
{
    rt_config_release(job->options.config);
    free(job);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The compile itself, outside the lock. A failure needs no message: the
 * calls go on on the reference executor, as a failed compile's do on
 * the synchronous path (pipeline.c, compile). */
static tgt_exe *compile_job(pl_tier *job)
{
    tgt_diag diag;
    memset(&diag, 0, sizeof diag);
    int64_t t0 = now_ns();
    tgt_exe *x = job->target->compile(job->graph, job->am, &job->options, &diag);
    if (job->timing) {
        atomic_fetch_add(&job->timing->compile_ns, now_ns() - t0);
        atomic_fetch_add(&job->timing->background, 1);
    }
    return x;
}

static void free_orphan(pl_tier *job, tgt_exe *x)
{
    if (x)
        job->target->free(x); /* before the graph it refers to */
    pass_analyses_free(job->am);
    ir_function_free(job->owned_graph);
    job_free(job);
}

/* Runs one job (the lock held on entry and on return). */
static void run_one(void)
{
    pl_tier *job = head;
    head = job->next;
    if (!head)
        tail = NULL;
    running = job;
    atomic_store(&job->state, RUNNING);
    pthread_mutex_unlock(&lock);
    tgt_exe *x = compile_job(job);
    pthread_mutex_lock(&lock);
    running = NULL;
    if (job->orphaned) {
        pthread_mutex_unlock(&lock);
        free_orphan(job, x);
        pthread_mutex_lock(&lock);
    } else {
        job->exe = x;
        atomic_store_explicit(&job->state, DONE, memory_order_release);
    }
    pthread_cond_broadcast(&idle);
}

static void *compile_thread(void *arg)
{
    uintptr_t mine = (uintptr_t)arg;
    pthread_mutex_lock(&lock);
    while (mine == generation) {
        if (head)
            run_one();
        else
            pthread_cond_wait(&wake, &lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void stop_at_exit(void) { pl_tier_stop(); }

/* fork: the child has no compile thread. The lock is held across the
 * fork, so the queue is consistent; in the child every compile queued or
 * running is cancelled (its calls go on on the reference executor) and
 * the next submit starts a thread of its own. */
static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

static void after_fork_child(void)
{
    for (pl_tier *j = head; j; j = j->next)
        atomic_store(&j->state, CANCELLED);
    if (running && running->orphaned)
        free_orphan(running, NULL); /* its result is gone: nothing else frees it */
    else if (running)
        atomic_store(&running->state, CANCELLED);
    head = tail = running = NULL;
    thread_alive = false;
    generation++;
    pthread_mutex_unlock(&lock);
}

/* Under lock. False when no thread can be made: the caller compiles
 * synchronously instead. */
static bool start_thread(void)
{
    static bool hooks;
    if (thread_alive)
        return true;
    if (!hooks) {
        hooks = true;
        atexit(stop_at_exit);
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    }
    if (pthread_create(&thread, NULL, compile_thread, (void *)generation) != 0)
        return false;
    thread_alive = true;
    return true;
}

pl_tier *pl_tier_submit(const ir_function *graph, pass_analyses *am, const tgt_target *t,
                        const tgt_options *o, pl_timing *timing)
{
    pl_tier *job = rt_xcalloc(1, sizeof *job);
    job->graph = graph;
    job->am = am;
    job->target = t;
    job->options = *o;
    rt_config_ref(o->config); /* the compile reads it on the thread */
    job->timing = timing;
    atomic_init(&job->state, QUEUED);
    pthread_mutex_lock(&lock);
    bool started = start_thread();
    if (started) {
        if (tail)
            tail->next = job;
        else
            head = job;
        tail = job;
        pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&lock);
    if (!started) {
        job_free(job);
        return NULL;
    }
    return job;
}

/* ------------------------------------------------------------ readers */

bool pl_tier_ready(const pl_tier *tier, const tgt_target **t, const tgt_exe **x)
{
    if (atomic_load_explicit(&tier->state, memory_order_acquire) != DONE || !tier->exe)
        return false;
    *t = tier->target;
    *x = tier->exe;
    return true;
}

bool pl_tier_pending(const pl_tier *tier)
{
    int s = atomic_load_explicit(&tier->state, memory_order_acquire);
    return s == QUEUED || s == RUNNING;
}

/* ----------------------------------------------------------- endings */

/* Unlinks a queued job (under lock). */
static void unqueue(pl_tier *job)
{
    pl_tier *prev = NULL;
    for (pl_tier *j = head; j; prev = j, j = j->next) {
        if (j != job)
            continue;
        if (prev)
            prev->next = j->next;
        else
            head = j->next;
        if (tail == j)
            tail = prev;
        return;
    }
}

bool pl_tier_release(pl_tier *tier, ir_function *graph, pass_analyses *am)
{
    pthread_mutex_lock(&lock);
    int s = atomic_load(&tier->state);
    if (s == RUNNING) {
        tier->orphaned = true;
        tier->owned_graph = graph;
        tier->am = am;
        pthread_mutex_unlock(&lock);
        return true;
    }
    if (s == QUEUED)
        unqueue(tier);
    pthread_mutex_unlock(&lock);
    if (tier->exe)
        tier->target->free(tier->exe);
    job_free(tier);
    return false;
}

void ag_jit_wait(void)
{
    pthread_mutex_lock(&lock);
    while (head || running)
        pthread_cond_wait(&idle, &lock);
    pthread_mutex_unlock(&lock);
}

void pl_tier_stop(void)
{
    pthread_mutex_lock(&lock);
    for (pl_tier *j = head; j; j = j->next)
        atomic_store(&j->state, CANCELLED);
    head = tail = NULL;
    bool join = thread_alive;
    pthread_t t = thread;
    generation++;
    thread_alive = false;
    pthread_cond_broadcast(&wake);
    pthread_cond_broadcast(&idle);
    pthread_mutex_unlock(&lock);
    if (join)
        pthread_join(t, NULL); /* after the compile it is running, if any */
}
