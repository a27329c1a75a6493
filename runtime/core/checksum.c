/*
 * checksum.c - CRC-32 (IEEE 802.3, the one of zlib, zip and PNG), which
 * every file agc writes for itself to read back carries: saved models'
 * files (model/) and the compilation cache's entries (backend/cpu/cache).
 */
#include "rt.h"

#include <pthread.h>

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void make_crc_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t rt_crc32(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, make_crc_table);
    const unsigned char *b = p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}
