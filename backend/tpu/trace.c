/*
 * trace.c - AG_PROFILE_TRACE's files (program.h's tpu_trace_add): every
 * call's timeline in one Chrome trace, and a picture of the last calls.
 *
 * The calls lie end to end on one time axis in the order they finish
 * (simulated time: each call starts where the last one ended), each with a
 * box on a "calls" row above the units'. The trace is JSON that Perfetto
 * and chrome://tracing open; it is complete after every call: the next
 * call's events overwrite its closing lines, which are then written again
 * (so it costs one write per event, never a rewrite of the file). The
 * picture (picture.c) is rewritten after every call with the last
 * TPU_PICTURE_CALLS calls, kept here.
 */
#include "program.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    char path[4096];
    FILE *f;
    long trailer;     /* where the closing lines start */
    double axis_us;   /* where the next call starts */
    long long calls;
    int named_chips;  /* chips whose tracks are named (a slice's calls) */
    tpu_timeline ring[TPU_PICTURE_CALLS]; /* the last calls, oldest at calls % N */
    double ring_at[TPU_PICTURE_CALLS];
} T;

void tpu_trace_picture_path(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    if (len > 5 && strcmp(path + len - 5, ".json") == 0)
        len -= 5;
    snprintf(out, n, "%.*s.svg", (int)len, path);
}

/* The rows' names: the units', then the calls'. */
static void write_header(FILE *f)
{
    fputs("{\"traceEvents\": [\n", f);
    for (int u = 0; u <= TPU_N_UNITS; u++)
        fprintf(f, "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                   "\"args\": {\"name\": \"%s\"}}",
                u ? ",\n" : "", u, u < TPU_N_UNITS ? tpu_unit_name((tpu_unit)u) : "calls");
}

static void forget(void)
{
    if (T.f)
        fclose(T.f);
    for (int i = 0; i < TPU_PICTURE_CALLS; i++)
        tpu_timeline_free(&T.ring[i]);
    memset(&T, 0, sizeof T);
}

/* A new trace at path (the old one, if any, left as it is). */
static bool begin(const char *path)
{
    forget();
    T.f = fopen(path, "w");
    if (!T.f) {
        rt_warn((ag_loc){0}, "AG_PROFILE_TRACE: cannot write '%s'", path);
        return false;
    }
    snprintf(T.path, sizeof T.path, "%s", path);
    write_header(T.f);
    T.trailer = ftell(T.f);
    return true;
}

/* A slice's tracks: a process per chip (chip 0 is pid 1, whose rows the
 * header named), each with its units' rows and its links' (after the
 * calls row), named once. */
static void name_chips(int chips)
{
    for (int c = T.named_chips; c < chips; c++) {
        fprintf(T.f, ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
                     "\"args\": {\"name\": \"chip %d\"}}", c + 1, c);
        for (int u = c ? 0 : TPU_N_UNITS; u < TPU_N_QUEUES; u++)
            fprintf(T.f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
                         "\"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                    c + 1, u < TPU_N_UNITS ? u : u + 1, tpu_unit_name((tpu_unit)u));
    }
    T.named_chips = chips > T.named_chips ? chips : T.named_chips;
}

/* The events of one chip: those of the program it ran (every chip's
 * are the same when the chips run one program). */
static void write_chip_events(const tpu_timeline *t, int chip)
{
    double us = 1e6 / t->clock_hz;
    int program = t->program_of ? t->program_of[chip] : 0;
    for (int i = 0; i < t->n; i++) {
        const tpu_event *e = &t->ev[i];
        if (e->program != program)
            continue;
        int tid = e->unit < TPU_N_UNITS ? (int)e->unit : (int)e->unit + 1;
        fprintf(T.f, ",\n{\"name\": \"%s", e->what);
        if (e->value >= 0)
            fprintf(T.f, " %%%d", e->value);
        fprintf(T.f, "\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.4f, \"dur\": %.4f",
                chip + 1, tid, T.axis_us + (double)e->start * us, (double)e->cycles * us);
        if (e->line)
            fprintf(T.f, ", \"args\": {\"line\": %d}", e->line);
        fputc('}', T.f);
    }
}

static void write_events(const tpu_timeline *t)
{
    double us = 1e6 / t->clock_hz;
    if (t->chips > 1)
        name_chips(t->chips);
    for (int c = 0; c < (t->chips > 1 ? t->chips : 1); c++)
        write_chip_events(t, c);
    fprintf(T.f, ",\n{\"name\": \"@%s\", \"cat\": \"call\", \"ph\": \"X\", \"pid\": 1, "
                 "\"tid\": %d, \"ts\": %.4f, \"dur\": %.4f, \"args\": {\"call\": %lld}}",
            t->function, TPU_N_UNITS, T.axis_us, (double)t->cycles * us, T.calls);
}

/* The closing lines, after the last event; the file cut there. */
static void write_trailer(const tpu_timeline *t)
{
    T.trailer = ftell(T.f);
    fprintf(T.f, "\n], \"displayTimeUnit\": \"ns\", \"otherData\": {\"function\": \"%s\", "
                 "\"device\": \"%s\", \"calls\": %lld}}\n",
            t->function, t->device, T.calls);
    fflush(T.f);
    if (ftruncate(fileno(T.f), ftell(T.f)) != 0)
        rt_warn((ag_loc){0}, "AG_PROFILE_TRACE: cannot write '%s'", T.path);
}

static void write_picture(void)
{
    tpu_picture_call calls[TPU_PICTURE_CALLS];
    int n = T.calls < TPU_PICTURE_CALLS ? (int)T.calls : TPU_PICTURE_CALLS;
    for (int k = 0; k < n; k++) {
        int slot = (int)((T.calls - n + k) % TPU_PICTURE_CALLS);
        calls[k] = (tpu_picture_call){&T.ring[slot], T.ring_at[slot], T.calls - n + k + 1};
    }
    char path[4096 + 8];
    tpu_trace_picture_path(T.path, path, sizeof path);
    FILE *f = fopen(path, "w");
    bool ok = f && tpu_picture_write(calls, n, T.calls - n, f);
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        rt_warn((ag_loc){0}, "AG_PROFILE_TRACE: cannot write the picture '%s'", path);
}

void tpu_trace_add(const char *path, tpu_timeline *t)
{
    pthread_mutex_lock(&lock);
    if ((T.f && strcmp(T.path, path) == 0) || begin(path)) {
        T.calls++;
        fseek(T.f, T.trailer, SEEK_SET);
        write_events(t);
        write_trailer(t);
        int slot = (int)((T.calls - 1) % TPU_PICTURE_CALLS);
        tpu_timeline_free(&T.ring[slot]);
        T.ring[slot] = *t;
        T.ring_at[slot] = T.axis_us;
        memset(t, 0, sizeof *t);
        T.axis_us += (double)T.ring[slot].cycles * 1e6 / T.ring[slot].clock_hz;
        write_picture();
    }
    tpu_timeline_free(t); /* nothing left when it was kept */
    pthread_mutex_unlock(&lock);
}
