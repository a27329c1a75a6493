/*
 * optimizer.h - what the layers above the runtime need of ag_optimizer
 * (prefix rt_optimizer_): its identity for trace keys, and its slots for
 * tests. The optimizers themselves are optimizer.c; the public calls are
 * ag.h's "optimizers".
 */
#ifndef RT_OPTIMIZER_H
#define RT_OPTIMIZER_H

#include "ag.h"

/* The identity of a live optimizer in a trace key: a serial number never
 * given twice (an address is reused once the optimizer is freed, and a
 * concrete function traced for the freed one refers to its freed slots).
 * 0 after reporting, at loc, that o is not a live optimizer. */
uint64_t rt_optimizer_serial(ag_loc loc, ag_optimizer o);

/* How many slot variables o has made so far (the step count included). */
int rt_optimizer_num_slots(ag_optimizer o);

#endif /* RT_OPTIMIZER_H */
