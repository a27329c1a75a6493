/*
 * cg_util.h - compiling for the cpu target in tests: cg_compile wants the
 * function's analyses to outlive the code, so tests compile with
 * tu_compile and free with tu_code_free, which keeps the pair together.
 */
#ifndef TU_CG_UTIL_H
#define TU_CG_UTIL_H

#include "cg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct tu_compiled {
    cg_code *code;
    pass_analyses *am;
    struct tu_compiled *next;
} tu_compiled;

static pthread_mutex_t tu_compiled_lock = PTHREAD_MUTEX_INITIALIZER;
static tu_compiled *tu_compiled_list;

/* Options naming the CPU cpu (NULL: none, the settings' or the host's)
 * over the settings in force; tu_options_free releases them. */
static inline tgt_options tu_cpu_options(const char *cpu)
{
    return (tgt_options){.config = cpu ? rt_config_with(NULL, RT_CFG_CPU, cpu) : NULL};
}

static inline void tu_options_free(tgt_options *o) { rt_config_release(o->config); }

/* cg_compile with analyses planned for the cpu target, for the CPU cpu
 * names (NULL: the host's). */
static inline cg_code *tu_compile_for(const ir_function *fn, const char *cpu, char *err,
                                      size_t errlen)
{
    pass_analyses *am = pass_analyses_new(fn, &tgt_cpu.caps);
    tgt_options o = tu_cpu_options(cpu);
    cg_code *code = cg_compile(fn, am, &o, err, errlen);
    tu_options_free(&o);
    if (!code) {
        pass_analyses_free(am);
        return NULL;
    }
    tu_compiled *c = calloc(1, sizeof *c);
    c->code = code;
    c->am = am;
    pthread_mutex_lock(&tu_compiled_lock);
    c->next = tu_compiled_list;
    tu_compiled_list = c;
    pthread_mutex_unlock(&tu_compiled_lock);
    return code;
}

/* Whether the compiled module's text holds `what`. */
static inline bool module_has(cg_code *code, const char *what)
{
    char *ir = cg_module_text(code);
    bool has = strstr(ir, what) != NULL;
    free(ir);
    return has;
}

static inline cg_code *tu_compile(const ir_function *fn, char *err, size_t errlen)
{
    return tu_compile_for(fn, NULL, err, errlen);
}

static inline void tu_code_free(cg_code *code)
{
    if (!code)
        return;
    pthread_mutex_lock(&tu_compiled_lock);
    tu_compiled **p = &tu_compiled_list;
    while (*p && (*p)->code != code)
        p = &(*p)->next;
    tu_compiled *c = *p;
    if (c)
        *p = c->next;
    pthread_mutex_unlock(&tu_compiled_lock);
    cg_free(code);
    if (c) {
        pass_analyses_free(c->am);
        free(c);
    }
}

#endif
