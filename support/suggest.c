/*
 * suggest.c - the close names to suggest for a mistyped one (suggest.h).
 */
#include "suggest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

/* Optimal string alignment over three rows of the table (the previous
 * two for a swap of neighbours); names here are short. */
int sg_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    int *rows = malloc(3 * (m + 1) * sizeof *rows);
    if (!rows)
        return (int)(n > m ? n : m);
    int *before = rows, *prev = rows + m + 1, *cur = rows + 2 * (m + 1);
    for (size_t j = 0; j <= m; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int same = a[i - 1] == b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + !same);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                before[j - 2] + 1 < cur[j])
                cur[j] = before[j - 2] + 1;
        }
        int *t = before;
        before = prev, prev = cur, cur = t;
    }
    int d = prev[m];
    free(rows);
    return d;
}

void sg_begin(sg_best *b, const char *typed)
{
    *b = (sg_best){.typed = typed, .name = NULL, .distance = 0};
}

void sg_consider(sg_best *b, const char *candidate)
{
    if (!candidate || !*candidate || strcmp(candidate, b->typed) == 0)
        return;
    int bound = ((int)strlen(b->typed) + 2) / 3;
    int d = sg_distance(b->typed, candidate);
    if (d <= bound && (!b->name || d < b->distance))
        b->name = candidate, b->distance = d;
}

const char *sg_suggest(const char *typed, const char *const *names, int n)
{
    sg_best b;
    sg_begin(&b, typed);
    for (int i = 0; i < n; i++)
        sg_consider(&b, names[i]);
    return b.name;
}

const char *sg_did_you_mean(const char *suggestion, char *buf, size_t len)
{
    if (!suggestion)
        return "";
    snprintf(buf, len, "; did you mean '%s'?", suggestion);
    return buf;
}
