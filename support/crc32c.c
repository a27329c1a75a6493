/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of TFRecord files
 * (tfrecord.h).
 *
 * Reflected, polynomial 0x82F63B78, initial value and final xor all ones.
 * Slicing-by-8: table k gives the CRC of a byte followed by k zero bytes,
 * so eight bytes fold into the CRC with eight lookups and no dependency
 * between them. The tables are made once, on first use. (The SSE4.2
 * `crc32` instruction would be faster still; data sets are read once per
 * conversion, so the portable form is enough.)
 */
#include "tfrecord.h"

#include <pthread.h>

enum { POLY = 0x82F63B78u };

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xFF];
}

/* Four bytes as a little-endian word, at any alignment. */
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Eight bytes folded into c (not inverted). */
static uint32_t fold8(uint32_t c, const unsigned char *p)
{
    uint32_t lo = le32(p) ^ c, hi = le32(p + 4);
    return table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
           table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
           table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
}

uint32_t tfr_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&table_once, make_tables);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; n >= 8; n -= 8, p += 8)
        c = fold8(c, p);
    for (; n; n--, p++)
        c = table[0][(c ^ *p) & 0xFF] ^ (c >> 8);
    return ~c;
}

/* TensorFlow's kMaskDelta. */
enum { MASK_DELTA = 0xa282ead8u };

uint32_t tfr_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + MASK_DELTA;
}

uint32_t tfr_unmask(uint32_t masked)
{
    uint32_t rot = masked - MASK_DELTA;
    return (rot >> 17) | (rot << 15);
}
