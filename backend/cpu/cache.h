/*
 * cache.h - the persistent compilation cache of the cpu target (prefix
 * cg_cache_): native code kept in a directory (AG_CACHE_DIR or
 * ag_set_cache_dir) so that a later process compiling the same optimized
 * graph for the same CPU loads it instead of running LLVM.
 *
 *   cache.c        the key (the graph's text, target, triple, CPU and
 *                  features, agc/LLVM versions, the build of agc), its
 *                  128-bit hash (the entry's file name), compiling on a
 *                  miss, loading on a hit
 *   cache_entry.c  the file format: header, checksum, atomic writes,
 *                  verified reads
 *
 * Cached code is the relocatable form cg_aot.c uses (nodes reached
 * through a node table, literals in the object), so that no address of
 * the compiling process is in it; cg_jit.c links the object into its JIT
 * (cg_jit_add_object) and this file fills the table with the nodes of the
 * function being compiled. Hits and misses run the same object code.
 */
#ifndef CG_CACHE_H
#define CG_CACHE_H

#include "cg.h"

#include <stdint.h>

/* ------------------------------------------------------------ cache.c */

/* Called by cg_compile (target_cpu.c) first. When the cache is off, or this process
 * already holds code under the same key (symbol names in the JIT must be
 * unique), *handled is false and the JIT compiles as usual. Otherwise the
 * result is the code (loaded or compiled and stored), or NULL with the
 * reason in err when the graph cannot be compiled at all. */
cg_code *cg_cache_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                          bool *handled, char *err, size_t errlen);

/* What the cache did in this process, for tests and benchmarks. */
typedef struct cg_cache_stats {
    long hits;     /* entries loaded */
    long misses;   /* compiles with the cache on that found no usable entry */
    long writes;   /* entries written */
    long rejected; /* entries ignored with a warning (corrupt, foreign, ...) */
    long llvm_compiles; /* graphs LLVM lowered and optimized, cached or not */
    double compile_seconds; /* spent in cg_compile (JIT or cache) */
} cg_cache_stats;
cg_cache_stats cg_cache_get_stats(void);


/* The key of fn compiled for o and the entry's file name in dir, for
 * tests (malloc'ed strings; false when the target machine cannot be
 * made). */
bool cg_cache_describe(const ir_function *fn, const tgt_options *o, const char *dir,
                       char **key, char **path);

/* ------------------------------------------------------ cg_jit.c hook */

/* Links an object that defines `sym` (the entry, cg_lower_function's
 * signature) and `table_sym` (the node table) into the JIT and returns
 * code for fn that runs it, with *table the node table to fill before
 * the first call; freeing the code calls unloaded(sym) (the cache's
 * names loaded). NULL with a message in err. */
cg_code *cg_jit_add_object(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                           const char *sym, const char *table_sym, const char *obj, size_t len,
                           void (*unloaded)(const char *sym), const void ***table, char *err,
                           size_t errlen);

/* The JIT's accounting of a graph LLVM lowered and optimized (it counts
 * its own; the cache counts those it compiles), read into
 * cg_cache_stats.llvm_compiles. */
void cg_count_llvm(void);
long cg_llvm_compiles(void);

/* ------------------------------------------------------ cache_entry.c */


/* One entry: the full key, the object, and what loading it needs. */
typedef struct cg_cache_entry {
    char *key;
    size_t key_len;
    char *object;
    size_t object_len;
    uint32_t n_nodes; /* the node table's length */
} cg_cache_entry;

enum { CG_CACHE_FORMAT = 1 };

/* Writes e to path atomically (a temporary file in the same directory,
 * then rename), so that readers see the old entry or the new one, never
 * part of one. False with the reason in err. */
bool cg_cache_write(const char *path, const cg_cache_entry *e, char *err, size_t errlen);

/* Reads and verifies the entry at path against key. True with *e filled
 * (free with cg_cache_entry_free). False with why[0] == '\0' when there
 * is no entry, else with the reason it cannot be used (truncated,
 * checksum, format, another key). */
bool cg_cache_read(const char *path, const char *key, size_t key_len, cg_cache_entry *e,
                   char *why, size_t whylen);
void cg_cache_entry_free(cg_cache_entry *e);

#endif /* CG_CACHE_H */
