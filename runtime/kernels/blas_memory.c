/*
 * blas_memory.c - whether OpenBLAS can take its work buffers.
 *
 * At its first product on a thread, OpenBLAS maps a work buffer of
 * BLAS_BUFFER_BYTES (x86-64's build) for each of its threads, and where the
 * mapping fails it retries forever: under an address-space limit
 * (`ulimit -v`) an ag_matmul would hang instead of failing. Only a limit
 * makes such a mapping fail (with none, Linux hands out address space
 * without looking at free memory), so with a finite RLIMIT_AS, and only
 * then, the same amount is mapped and released here before every product:
 * if it cannot be had, the product is an error that says why.
 */
#include "kernels.h"

#include <cblas.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* OpenBLAS's BUFFER_SIZE on x86-64 (128 MiB), with the page of its header
 * and a little more for what a product maps beside it. */
#define BLAS_BUFFER_BYTES (((size_t)128 << 20) + ((size_t)1 << 20))

static bool address_space_limited(void)
{
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

bool rt_blas_memory_check(rt_err *e)
{
    if (!address_space_limited())
        return true;
    int threads = openblas_get_num_threads();
    size_t need = BLAS_BUFFER_BYTES * (size_t)(threads > 0 ? threads : 1);
    void *p = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
        munmap(p, need);
        return true;
    }
    rt_err_set(e, "out of memory: OpenBLAS needs %zu MiB of address space for its work "
                  "buffers (%d thread%s), beyond the process's limit (ulimit -v); raise the "
                  "limit, or run with OPENBLAS_NUM_THREADS=1",
               need >> 20, threads, threads == 1 ? "" : "s");
    return false;
}
