/* steps.h - next to smooth.c, found as #include "steps.h" */
#define SMOOTH_LIMIT 1
