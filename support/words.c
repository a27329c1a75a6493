/* words.c - singular or plural after a count (words.h). */
#include "words.h"

const char *sw_plural(long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}
