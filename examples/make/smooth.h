/* smooth.h - the parameters of smooth.c's filter. */
#ifndef SMOOTH_H
#define SMOOTH_H

/* How far each step moves towards the target. */
#define SMOOTH_RATE 0.5
/* Stop when every element is this close to the target. */
#define SMOOTH_TOLERANCE 0.01

#endif
