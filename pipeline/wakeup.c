/*
 * wakeup.c - wake-up words (wakeup.h): futexes on Linux, a condition
 * variable elsewhere.
 */
#include "wakeup.h"

#include "rt.h"

#include <stdatomic.h>
#include <stdlib.h>

#ifdef __linux__
#include <linux/futex.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <pthread.h>
#endif

struct wakeup_set {
    _Atomic uint32_t word[WAKEUP_SLOTS];
#ifndef __linux__
    pthread_mutex_t lock;
    pthread_cond_t changed;
#endif
};

wakeup_set *wakeup_new(void)
{
    wakeup_set *w = rt_xcalloc(1, sizeof *w);
#ifndef __linux__
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->changed, NULL);
#endif
    return w;
}

void wakeup_free(wakeup_set *w)
{
    if (!w)
        return;
#ifndef __linux__
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->changed);
#endif
    free(w);
}

uint32_t wakeup_read(wakeup_set *w, unsigned slot)
{
    return atomic_load(&w->word[slot % WAKEUP_SLOTS]);
}

#ifdef __linux__
/* The words are private to the process: FUTEX_PRIVATE_FLAG spares the
 * kernel the lookup of a shared mapping. */
void wakeup_wait(wakeup_set *w, unsigned slot, uint32_t seen)
{
    (void)syscall(SYS_futex, &w->word[slot % WAKEUP_SLOTS], FUTEX_WAIT_PRIVATE, seen, NULL,
                  NULL, 0);
}

void wakeup_notify(wakeup_set *w, unsigned slot)
{
    _Atomic uint32_t *word = &w->word[slot % WAKEUP_SLOTS];
    atomic_fetch_add(word, 1);
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#else
void wakeup_wait(wakeup_set *w, unsigned slot, uint32_t seen)
{
    pthread_mutex_lock(&w->lock);
    while (atomic_load(&w->word[slot % WAKEUP_SLOTS]) == seen)
        pthread_cond_wait(&w->changed, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void wakeup_notify(wakeup_set *w, unsigned slot)
{
    pthread_mutex_lock(&w->lock);
    atomic_fetch_add(&w->word[slot % WAKEUP_SLOTS], 1);
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
}
#endif
