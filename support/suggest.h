/*
 * suggest.h - "did you mean ...?": the name a user most likely meant when
 * they typed one that does not exist (an option field, an alias, a
 * signature, a target, a dtype), as clang's typo correction offers it.
 *
 * A name is suggested only when it is close: at most a third of the
 * typed name's length in edits (clang's bound, (length + 2) / 3), an edit
 * being an insertion, a deletion, a substitution or two neighbours
 * swapped. Of several close names the nearest wins, the first on a tie.
 * Prefix sg_.
 */
#ifndef AG_SUPPORT_SUGGEST_H_
#define AG_SUPPORT_SUGGEST_H_

#include <stdbool.h>
#include <stddef.h>

/* The edit distance between a and b (optimal string alignment). */
int sg_distance(const char *a, const char *b);

/* The nearest candidate so far to a typed name. */
typedef struct sg_best {
    const char *typed;
    const char *name; /* NULL until a close candidate is seen */
    int distance;
} sg_best;

void sg_begin(sg_best *b, const char *typed);
/* Takes candidate if it is close to the typed name and nearer than the
 * best so far; the typed name itself is never suggested. */
void sg_consider(sg_best *b, const char *candidate);

/* The close candidate nearest to typed among names[0..n), or NULL. */
const char *sg_suggest(const char *typed, const char *const *names, int n);

/* "; did you mean 'NAME'?" for a suggestion, "" for NULL: what a message
 * appends after naming what does not exist. */
const char *sg_did_you_mean(const char *suggestion, char *buf, size_t len);

#endif
