/*
 * build.h - what agc makes beyond staged C (build.c, header.c): objects
 * compiled ahead of time, their headers, and each stage of the pipeline
 * for inspection. Unlike the conversion (fe.h), this links libag: it
 * traces the user's functions at build time and compiles their graphs.
 */
#ifndef FE_BUILD_H
#define FE_BUILD_H

#include "fe.h"

/* What --emit asks for (several may be given, comma-separated). */
enum {
    FE_EMIT_C = 1 << 0,      /* the staged C (the default) */
    FE_EMIT_OBJ = 1 << 1,    /* an object file of compiled functions */
    FE_EMIT_HEADER = 1 << 2, /* the header that declares them */
    FE_EMIT_IR = 1 << 3,     /* the traced graph */
    FE_EMIT_IR_OPT = 1 << 4, /* the graph after the passes */
    FE_EMIT_LLVM = 1 << 5,   /* the optimized LLVM IR */
    FE_EMIT_ASM = 1 << 6,    /* the target's assembly */
    FE_EMIT_DOT = 1 << 7,    /* Graphviz of the optimized graph */
    FE_EMIT_TPU = 1 << 8     /* the TPU program (--target=tpu-model) */
};

typedef struct fe_build_options {
    unsigned emit;
    const char *function;  /* --function: only this AG_FUNCTION */
    const char *signature; /* --signature: instead of its AG_SIGNATURE */
    const char *target;    /* --target: the target compiling (default: cpu) */
    const char *triple;    /* --target-triple */
    const char *cpu;       /* --cpu */
    const char *device_spec; /* --device-spec: the TPU-model's device */
    bool bf16;               /* --bf16: convert the graphs to bf16 */
    bool soft_placement;     /* --soft-device-placement */
} fe_build_options;

/* Whether `name` is a target; else false with the list of targets in
 * names (for --target's usage error). */
bool fe_target_known(const char *name, char *names, size_t n);
/* The target's name closest to a mistyped one, or NULL (tgt_suggest). */
const char *fe_target_suggest(const char *name);
/* Whether the target has a compiled form to print (--emit=tpu). */
bool fe_target_prints(const char *name);

/* Parses "obj,header"; 0 when a kind is unknown. */
unsigned fe_emit_parse(const char *list);

/* Gives the settings agc's flags name (--target, --cpu, --device-spec,
 * --bf16, --soft-device-placement) to the configuration's flag layer
 * (runtime/core/config.h), where every compile reads them. */
void fe_build_apply_flags(const fe_build_options *b);
/* agc --print-config: every setting, its value and where it came from. */
void fe_print_config(FILE *out);

/* Builds what b->emit asks for from opt->input into opt->output (an
 * object's header goes next to it, with .h). Returns the exit status. */
int fe_build(const fe_options *opt, const fe_build_options *b);

/* The header's path: -o's for --emit=header alone; next to the object
 * (its name with .h) when both are asked for. */
const char *fe_header_path(const fe_options *opt, unsigned emit);

/* header.c: the header declaring the functions compiled into an object,
 * each for specs[i]; heap text. `path` names the header (for its include
 * guard). */
char *fe_header_text(const fe_options *opt, const fe_func_info *const *fns,
                     const char *const *specs, int n, const char *path, const char *object);

#endif /* FE_BUILD_H */
