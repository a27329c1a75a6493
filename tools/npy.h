/*
 * npy.h - NumPy .npy files to and from tensors (prefix npy_), for
 * agc-model run's --input and --output_dir.
 */
#ifndef SM_NPY_H
#define SM_NPY_H

#include "ag.h"

#include <stdio.h>

/* The tensor a .npy file's n bytes hold; the zero handle with a message
 * in err when they are not one this reader takes. */
ag_tensor npy_read(const char *data, size_t n, char *err, size_t errlen);
/* Writes t as .npy (bf16 as f4); false on a write error. */
bool npy_write(FILE *out, ag_tensor t);

#endif
