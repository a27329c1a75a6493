/*
 * words.h - the English of agc's printed reports (prefix sw_): one place
 * that picks the singular or the plural, so that every printer (the
 * conversion report, the TPU-model's profile, AG_PROFILE's table,
 * agc-model show) says "1 op computes" and "2 ops compute".
 */
#ifndef SW_WORDS_H
#define SW_WORDS_H

/* `one` when n is 1, else `many`: the words that follow a count, verb
 * included ("op computes" / "ops compute"). */
const char *sw_plural(long long n, const char *one, const char *many);

#endif
