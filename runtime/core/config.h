/*
 * config.h - agc's settings, read once and handed down (prefix rt_config).
 *
 * Every setting is a row of config.def. Its value comes from four layers,
 * the later winning:
 *
 *     default  <  environment  <  setter  <  flag
 *
 * The environment is read once, at the first use (config.c is the one
 * file of the library that calls getenv; tests/docs/check_getenv.py fails
 * if another does). Setters (ag_set_target, ag_set_cache_dir, ...) write
 * the setter layer, the tools (agc, agc-opt, agc-model, agc-convert) their
 * command-line flags the flag layer.
 *
 * What code below reads is a snapshot: an immutable, reference-counted
 * copy of every value and where it came from. A compile takes one at its
 * start (pl_run) and passes it down - pl_request, pass_options, the
 * target's tgt_options - so a compile sees one configuration however the
 * layers change meanwhile, and records it (the IR dumps' headers, saved
 * models, agc --print-config).
 */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

typedef enum rt_config_type { RT_CFG_STR, RT_CFG_BOOL, RT_CFG_INT } rt_config_type;

typedef enum rt_config_id {
#define RT_CONFIG(id, name, type, env, def, doc) RT_CFG_##id,
#include "config.def"
#undef RT_CONFIG
    RT_CFG_COUNT
} rt_config_id;

/* Where a value came from; the order is the layers' precedence. */
typedef enum rt_config_source {
    RT_SRC_DEFAULT,
    RT_SRC_ENV,
    RT_SRC_SETTER,
    RT_SRC_FLAG
} rt_config_source;

typedef struct rt_config rt_config;

/* The settings in force now: a new reference (rt_config_release). Cheap:
 * the snapshot is made when a layer changes, and shared until then; each
 * thread keeps the one it last got and takes no lock until a layer
 * changes. */
const rt_config *rt_config_get(void);
const rt_config *rt_config_ref(const rt_config *c);
void rt_config_release(const rt_config *c); /* NULL: nothing */

/* A setting's value in c (NULL: unset); c NULL reads the defaults. */
const char *rt_config_str(const rt_config *c, rt_config_id id);
/* Set, not empty and not "0" (the environment's convention for flags). */
bool rt_config_on(const rt_config *c, rt_config_id id);
rt_config_source rt_config_source_of(const rt_config *c, rt_config_id id);

/* The table: a setting's name, its variable (NULL: none), type, default
 * and doc line; rt_config_find looks a name up (-1: none). */
const char *rt_config_name(rt_config_id id);
const char *rt_config_env(rt_config_id id);
rt_config_type rt_config_type_of(rt_config_id id);
const char *rt_config_default(rt_config_id id);
const char *rt_config_doc(rt_config_id id);
int rt_config_find(const char *name);
const char *rt_config_source_name(rt_config_source s);

/* A new snapshot (release it): base's settings (base NULL: those in
 * force now) with id's value `value` and source flag. For a caller that
 * sets one setting per compile (a saved model's function, an object for
 * another triple) without touching the layers other compiles read. */
const rt_config *rt_config_with(const rt_config *base, rt_config_id id, const char *value);

/* Writes the setter layer's value of id (NULL: none, the environment's or
 * the default then shows through). */
void rt_config_set(rt_config_id id, const char *value);
/* Writes the flag layer (a tool's command line). */
void rt_config_set_flag(rt_config_id id, const char *value);
/* Reads the environment again: for tests and programs that change it
 * with setenv after the first use. */
void rt_config_reload_env(void);

/* Every setting of c, one line each: name, value, source (and variable),
 * doc; agc --print-config. */
void rt_config_print(const rt_config *c, FILE *out);
/* The settings of c that are not defaults, one line each, every line
 * starting with `prefix` ("// " for the IR's headers); none: no lines. */
void rt_config_print_changed(const rt_config *c, const char *prefix, FILE *out);
/* The same as one malloc'ed string, lines joined by '\n' without the
 * prefix ("" when every setting is a default): saved models record it. */
char *rt_config_changed_text(const rt_config *c);

#endif
