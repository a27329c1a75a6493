/*
 * rows.h - whether a function can be batched: the row analysis (rows.c).
 *
 * Batching joins the rows of many requests along dimension 0, pads them
 * to an allowed size, runs the function once and hands each request its
 * own rows back. That is right only when every row of every result is
 * computed from the same row of the batched inputs alone, and from values
 * that do not depend on the batch (constants, variables). The analysis
 * tracks, for every value, whether dimension 0 is the batch dimension
 * ("row-wise") or the value does not depend on the batch at all
 * ("broadcast"), through each op by its rule (rows.c's table, one row per
 * op of ops.def); an op that makes one row's result depend on another
 * row, on the batch's size or on the padding is the refusal.
 */
#ifndef PASS_ROWS_H
#define PASS_ROWS_H

#include "ir.h"

/* Whether fn computes each row of its results from that row of its
 * batched parameters alone (batched[i]: whether parameter i is; NULL:
 * every one), and each result has the batch's dimension 0. False with
 * "FILE:LINE: 'ag_OP' ..." in err: the op (its public name), the user's
 * line, and why it mixes rows. */
bool pass_rows_check(const ir_function *fn, const bool *batched, char *err, size_t errlen);

#endif
