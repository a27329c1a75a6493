/* lateness.c - the timed-wait lateness estimator (lateness.h). */
#include "lateness.h"

void late_init(lateness *l)
{
    *l = (lateness){.margin = LATE_START_US};
}

/* The third largest of the samples (the smallest when there are fewer). */
static int64_t third_largest(const lateness *l)
{
    int64_t top[3] = {-1, -1, -1}; /* descending */
    for (int i = 0; i < l->n; i++) {
        int64_t v = l->recent[i];
        if (v > top[0]) {
            top[2] = top[1], top[1] = top[0], top[0] = v;
        } else if (v > top[1]) {
            top[2] = top[1], top[1] = v;
        } else if (v > top[2]) {
            top[2] = v;
        }
    }
    for (int k = 2; k > 0; k--)
        if (top[k] >= 0)
            return top[k];
    return top[0];
}

void late_add(lateness *l, int64_t us)
{
    l->recent[l->next] = us > 0 ? us : 0;
    l->next = (l->next + 1) % LATE_WINDOW;
    if (l->n < LATE_WINDOW)
        l->n++;
    int64_t m = third_largest(l) + LATE_SLACK_US;
    l->margin = m < LATE_MIN_US ? LATE_MIN_US : m > LATE_MAX_US ? LATE_MAX_US : m;
}

int64_t late_margin(const lateness *l)
{
    return l->margin;
}
