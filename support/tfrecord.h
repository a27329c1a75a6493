/*
 * tfrecord.h - TensorFlow's TFRecord files and their checksum (prefix tfr_).
 *
 *   crc32c.c    CRC-32C (Castagnoli, reflected polynomial 0x82F63B78),
 *               slicing-by-8 over tables made once, and TFRecord's mask
 *   tfrecord.c  reading and writing TFRecord files: each record is
 *
 *                 u64   length            little-endian
 *                 u32   masked_crc32c(length's 8 bytes)
 *                 byte  data[length]
 *                 u32   masked_crc32c(data)
 *
 *               Every CRC is checked and every length bounded by what is
 *               left of the file before anything is allocated. Records are
 *               numbered from 0 in messages ("record 0" is the first).
 */
#ifndef TFR_TFRECORD_H
#define TFR_TFRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------- crc32c.c */

/* crc extended by n bytes at p (start with 0): tfr_crc32c(0, "123456789",
 * 9) is 0xE3069283. */
uint32_t tfr_crc32c(uint32_t crc, const void *p, size_t n);
/* TFRecord stores CRCs masked (rotated right by 15, plus a constant), as
 * a CRC of data that holds CRCs is otherwise weak. */
uint32_t tfr_mask(uint32_t crc);
uint32_t tfr_unmask(uint32_t masked);

/* ----------------------------------------------------------- tfrecord.c */

/* Appends one record holding n bytes at data; false on a write error. */
bool tfr_write(FILE *f, const void *data, size_t n);

typedef struct tfr_reader tfr_reader;

/* Opens a TFRecord file to read, which must be a regular file; NULL with
 * "cannot read WHAT 'PATH': why" in err. */
tfr_reader *tfr_open(const char *path, const char *what, char *err, size_t errlen);
/* The next record: 1 with its bytes in *data, *n (valid until the next
 * call), 0 at the end of the file, -1 with "PATH: record N: fault" in err
 * (truncated, a length past the end, a CRC that does not match). */
int tfr_next(tfr_reader *r, const char **data, size_t *n, char *err, size_t errlen);
/* The number of the record tfr_next returned last (from 0). */
int64_t tfr_record_number(const tfr_reader *r);
void tfr_close(tfr_reader *r);

#endif
