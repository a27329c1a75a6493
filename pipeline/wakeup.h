/*
 * wakeup.h - wake-up words: many threads woken with one system call.
 *
 * A batch of 32 requests used to be answered with 32 condition-variable
 * signals, each a system call made while the batcher's lock was held, and
 * each woken caller then queued for that lock: on a 2-CPU virtual machine
 * that took the batch thread 100 - 170 us per batch, as long as running
 * the batch, before it could start the next one. Here the callers of a
 * batch sleep on one word, and the batch thread wakes them all with one
 * futex call (about 40 us for 32 threads there), after releasing the lock.
 *
 * A set holds WAKEUP_SLOTS words; a batch uses the slot of its sequence
 * number, so slots are shared only between batches WAKEUP_SLOTS apart
 * (whose waiters then wake for nothing and sleep again). A waiter reads
 * its slot, checks its own condition, and sleeps only while the slot
 * still holds what it read: a notify between the two cannot be lost.
 * Elsewhere than Linux the words are a mutex and a condition variable.
 */
#ifndef WAKEUP_H
#define WAKEUP_H

#include <stdint.h>

enum { WAKEUP_SLOTS = 256 };

typedef struct wakeup_set wakeup_set;

wakeup_set *wakeup_new(void);
void wakeup_free(wakeup_set *w);

/* What slot holds now; read before checking the condition waited for. */
uint32_t wakeup_read(wakeup_set *w, unsigned slot);
/* Sleeps while slot still holds seen; may return for nothing (check the
 * condition again). */
void wakeup_wait(wakeup_set *w, unsigned slot, uint32_t seen);
/* Changes slot and wakes everyone waiting on it; call it after making the
 * waiters' condition true. */
void wakeup_notify(wakeup_set *w, unsigned slot);

#endif /* WAKEUP_H */
