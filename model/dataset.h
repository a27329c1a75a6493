/*
 * dataset.h - representative data sets (docs/quantization.md), in
 * TensorFlow's format, for calibrating a saved model's signature.
 *
 *   tensor_proto.c  tensorflow.TensorProto <-> agc tensors: dtype,
 *                   shape, tensor_content or the typed *_val fields
 *                   (a short run of values is filled out with its last)
 *   dataset.c       TFRecord files of RepresentativeDataSample records
 *                   (map<string, TensorProto> tensor_proto_inputs = 2),
 *                   read against a signature and written from C
 *                   (ag.h's ag_dataset_writer_*, ag_representative_dataset_save)
 *
 * Records and samples are numbered from 0 in messages.
 */
#ifndef SM_DATASET_H
#define SM_DATASET_H

#include "ag.h"
#include "protowire.h"

/* ------------------------------------------------------- tensor_proto.c */

/* TensorProto's field numbers (tensorflow/core/framework/tensor.proto). */
enum {
    SM_TP_DTYPE = 1,
    SM_TP_SHAPE = 2,
    SM_TP_CONTENT = 4,
    SM_SHAPE_DIM = 2,  /* TensorShapeProto.dim */
    SM_SHAPE_UNKNOWN_RANK = 3,
    SM_DIM_SIZE = 1,   /* TensorShapeProto.Dim.size */
};

/* A sample's tensor larger than this is refused (a shape of 10^12 filled
 * from one value would otherwise be allocated). */
#define SM_TENSOR_PROTO_MAX_BYTES ((int64_t)1 << 31)

/* The tensor a serialized TensorProto holds, in the current scope; the
 * zero handle with why in err (an unsupported dtype, an unknown
 * dimension, tensor_content of the wrong size, more values than the
 * shape holds, bytes that are not a message). */
ag_tensor sm_tensor_proto_decode(const void *data, size_t n, char *err, size_t errlen);
/* Appends t as a serialized TensorProto (dtype, shape, tensor_content,
 * little-endian as TensorFlow writes it) to b. */
void sm_tensor_proto_encode(pw_buf *b, ag_tensor t);
/* TensorFlow's name of its DataType enum value ("DT_FLOAT"); NULL for a
 * value agc does not know. */
const char *sm_tf_dtype_name(int tf_dtype);

/* ------------------------------------------------------------ dataset.c */

/* RepresentativeDataSample's field: map<string, TensorProto>. A map entry
 * is a message with the key in field 1 and the value in field 2. */
enum { SM_SAMPLE_INPUTS = 2, SM_MAP_KEY = 1, SM_MAP_VALUE = 2 };

/* The converter guide recommends more than this many samples. */
#define SM_DATASET_RECOMMENDED 200

typedef struct sm_sample {
    int n_inputs;
    char **names;       /* malloc'ed */
    ag_tensor *tensors; /* in the scope current when read */
} sm_sample;

typedef struct sm_dataset {
    int64_t n_samples;
    sm_sample *samples;
} sm_dataset;

/* Reads the data set at path. With a signature, every sample must give
 * each of its inputs, no other, with its dtype and a shape it accepts
 * (an unknown dimension takes any size), and its inputs come in the
 * signature's order; without, each sample's inputs come in the file's
 * order. Fewer than SM_DATASET_RECOMMENDED samples draw the converter
 * guide's warning (rt_warn). False with "PATH: record N: what is wrong"
 * (or "cannot read the data set 'PATH': why") in err, *ds then empty. */
bool sm_dataset_read(const char *path, const ag_signature_def *sig, sm_dataset *ds, char *err,
                     size_t errlen);
/* Frees the samples' names and tensors. */
void sm_dataset_free(sm_dataset *ds);

/* The warning a data set of n samples draws (none for enough of them). */
void sm_dataset_warn_if_small(const char *path, int64_t n);

#endif
