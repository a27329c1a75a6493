/*
 * batch_registry.c - the batchers not yet freed: ag_batcher_free and
 * ag_batcher_close check a pointer against them (a stale one is reported,
 * not followed), ag_shutdown frees the rest.
 */
#include "batch_internal.h"


/* The batchers not yet freed: ag_batcher_free checks a pointer against it
 * (a stale one is reported, not followed), ag_shutdown frees the rest. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static ag_batcher *live;

void bt_live_add(ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    b->next_live = live;
    live = b;
    pthread_mutex_unlock(&live_lock);
}

bool bt_live_remove(ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    ag_batcher **p = &live;
    while (*p && *p != b)
        p = &(*p)->next_live;
    bool found = *p != NULL;
    if (found)
        *p = b->next_live;
    pthread_mutex_unlock(&live_lock);
    return found;
}

bool bt_is_live(const ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    const ag_batcher *p = live;
    while (p && p != b)
        p = p->next_live;
    pthread_mutex_unlock(&live_lock);
    return p != NULL;
}

ag_batcher *bt_live_unowned(void)
{
    pthread_mutex_lock(&live_lock);
    ag_batcher *b = live;
    while (b && b->run.owned)
        b = b->next_live;
    pthread_mutex_unlock(&live_lock);
    return b;
}
