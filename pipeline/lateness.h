/*
 * lateness.h - how late this machine's timed waits end, learned as they
 * happen (prefix late_).
 *
 * A batch's timeout is a latency promise, but a thread asleep until a
 * time wakes after it: on bare metal a few microseconds, on a virtual
 * machine 40 - 50 us at the median and 100 - 160 us at the 99th
 * percentile (measured on the 2-CPU Firecracker guest CI runs on, with
 * timer slack off). A batch thread therefore sleeps until `margin`
 * before a batch's deadline and spins the rest; this estimator sets that
 * margin from the lateness of its recent timed waits: the third largest
 * of the last LATE_WINDOW (about their 99th percentile), plus
 * LATE_SLACK_US, within [LATE_MIN_US, LATE_MAX_US]. Two rare outliers
 * (host preemptions of milliseconds) are ignored; a machine that is
 * always late raises the margin within a few waits, and one that is
 * prompt lowers it, so spinning costs only what the machine needs.
 */
#ifndef AG_LATENESS_H
#define AG_LATENESS_H

#include <stdint.h>

enum {
    LATE_WINDOW = 256,
    LATE_SLACK_US = 10,
    LATE_MIN_US = 10,
    LATE_MAX_US = 1000,
    LATE_START_US = 100, /* before any wait was measured */
};

typedef struct lateness {
    int64_t recent[LATE_WINDOW]; /* microseconds, a ring */
    int n;                       /* samples in it (at most LATE_WINDOW) */
    int next;                    /* where the next one goes */
    int64_t margin;              /* late_margin's answer, kept current */
} lateness;

void late_init(lateness *l);
/* Records that a timed wait ended `us` microseconds after its time
 * (negative: early, counted as 0). */
void late_add(lateness *l, int64_t us);
/* How long before a deadline to stop sleeping and start spinning. */
int64_t late_margin(const lateness *l);

#endif
