/* smooth.h - found through the target's include directories */
#ifndef SMOOTH_H
#define SMOOTH_H
#include <ag.h>
ag_tensor smooth(ag_tensor x);
#endif
