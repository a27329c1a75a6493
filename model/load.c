/*
 * load.c - ag_saved_model_load: reading and checking a saved model.
 *
 * Nothing is trusted: the manifest is parsed against its schema, every
 * file's size and CRC-32 must be the manifest's, every function's text IR
 * must parse and verify, its variables and its inputs and outputs must
 * have the types the manifest says, and every signature must name a
 * function with matching inputs and outputs. Each error names the file.
 */
#include "model.h"

#include "files.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_MANIFEST = 64 << 20, MAX_FUNCTION_TEXT = 1 << 30 };

static pthread_mutex_t models_lock = PTHREAD_MUTEX_INITIALIZER;
static ag_saved_model *models; /* loaded, not yet freed */
static bool hooked;

static char *path_in(const ag_saved_model *m, const char *name)
{
    return sm_path_join(m->dir, name);
}

/* A file's size and checksum must be what the manifest recorded. */
/* A file of n bytes where the manifest says `bytes`. Always false. */
static bool size_differs(const char *path, int64_t n, int64_t bytes, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %lld bytes, but the manifest says %lld: the file is %s; save the "
                          "model again", path, (long long)n, (long long)bytes,
             n < bytes ? "truncated" : "not the one saved");
    return false;
}

static bool check_bytes(const char *path, const char *data, size_t n, int64_t bytes,
                        int64_t checksum, char *err, size_t errlen)
{
    if ((int64_t)n != bytes)
        return size_differs(path, (int64_t)n, bytes, err, errlen);
    if (rt_crc32(0, data, n) != (uint32_t)checksum) {
        snprintf(err, errlen, "%s: checksum mismatch: the file was changed or damaged after "
                              "it was saved; save the model again", path);
        return false;
    }
    return true;
}

static bool parse_type(const char *text, ir_type *t)
{
    ir_spec s;
    char err[128];
    if (!ir_spec_parse(text, &s, err, sizeof err) || s.n != 1 || s.entries[0].is_scalar_value)
        return false;
    *t = (ir_type){.dtype = s.entries[0].dtype, .shape = s.entries[0].shape};
    return true;
}

/* ------------------------------------------------------------- variables */

static void size_not_the_manifests(const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: its size is not the manifest's (the file is truncated or not "
                          "the one saved); save the model again", path);
}

/* variables.bin, measured first: a file of another size is never read
 * (/dev/zero, a sparse file of gigabytes). */
static char *read_variables_file(const char *path, int64_t expected, size_t *n, char *err,
                                 size_t errlen)
{
    int64_t size;
    if (!sf_regular_size(path, NULL, &size, err, errlen))
        return NULL;
    if (size != expected) {
        size_not_the_manifests(path, err, errlen);
        return NULL;
    }
    return sf_read_regular(path, NULL, (size_t)size, n, err, errlen);
}

static bool load_variables(ag_loc loc, ag_saved_model *m, char *err, size_t errlen)
{
    sm_manifest *man = m->man;
    char *path = path_in(m, SM_VARIABLES_FILE);
    size_t n = 0;
    char *data = read_variables_file(path, man->variables_bytes, &n, err, errlen);
    bool ok = data != NULL;
    if (ok && ((int64_t)n != man->variables_bytes || n < 8 ||
               memcmp(data, SM_VARIABLES_MAGIC, 8) != 0)) {
        if ((int64_t)n != man->variables_bytes)
            size_not_the_manifests(path, err, errlen);
        else
            snprintf(err, errlen, "%s: not a variables file of agc; save the model again", path);
        ok = false;
    }
    m->vars = rt_xcalloc((size_t)man->n_variables + 1, sizeof *m->vars);
    for (int i = 0; ok && i < man->n_variables; i++) {
        sm_variable *v = &man->variables[i];
        ir_type t;
        if (!parse_type(v->type, &t)) {
            snprintf(err, errlen, "%s: variable '%s' has a bad type \"%s\"", path, v->name,
                     v->type);
            ok = false;
            break;
        }
        int64_t numel = rt_shape_numel(&t.shape);
        if (v->offset < 8 || v->bytes < 0 || v->offset > (int64_t)n - v->bytes ||
            numel < 0 || v->bytes != numel * (int64_t)rt_dtype_size(t.dtype)) {
            snprintf(err, errlen, "%s: variable '%s' lies outside the file or does not hold "
                                  "a %s; save the model again", path, v->name, v->type);
            ok = false;
            break;
        }
        ok = check_bytes(path, data + v->offset, (size_t)v->bytes, v->bytes, v->checksum, err,
                         errlen);
        if (ok) {
            ag_tensor init = ag_from_data_at(loc, t.dtype, t.shape, data + v->offset);
            m->vars[i] = ag_variable_new_at(loc, init);
            ag_free_at(loc, init);
            ok = m->vars[i] != NULL;
            if (!ok)
                snprintf(err, errlen, "%s: variable '%s' could not be made", path, v->name);
        }
    }
    free(data);
    free(path);
    return ok;
}

/* ------------------------------------------------------------- functions */

/* The parsed graph's variables are placeholders with their types; they
 * become the model's, which must have those types. */
static bool bind_variables(const ag_saved_model *m, const sm_function *f, ir_function *g,
                           char *err, size_t errlen)
{
    if (g->n_vars != f->n_variables) {
        snprintf(err, errlen, "%s/%s: the graph uses %d variables, the manifest gives %d",
                 m->dir, f->file, g->n_vars, f->n_variables);
        return false;
    }
    rt_variable **to = rt_xcalloc((size_t)g->n_vars + 1, sizeof *to);
    bool ok = true;
    for (int j = 0; ok && j < g->n_vars; j++) {
        int64_t k = f->variables[j];
        to[j] = k < m->man->n_variables ? m->vars[k] : NULL;
        ok = to[j] && to[j]->value->dtype == g->vars[j]->value->dtype &&
             ag_shape_equal(to[j]->value->shape, g->vars[j]->value->shape);
        if (!ok)
            snprintf(err, errlen, "%s/%s: @v%d is not the type of the model's variable %lld",
                     m->dir, f->file, j, (long long)k);
    }
    if (ok)
        ir_function_rebind_vars(g, to);
    free(to);
    return ok;
}

static bool io_match(const char *path, const sm_io *io, int n, ir_node *const *values,
                     int n_values, const char *what, char *err, size_t errlen)
{
    if (n != n_values) {
        snprintf(err, errlen, "%s: the graph has %d %ss, the manifest %d", path, n_values,
                 what, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        ir_type t;
        if (!parse_type(io[i].type, &t) || !ir_type_equal(&t, &values[i]->type)) {
            char got[128];
            snprintf(err, errlen, "%s: %s '%s' is %s in the graph, \"%s\" in the manifest",
                     path, what, io[i].name, ir_type_str(&values[i]->type, got, sizeof got),
                     io[i].type);
            return false;
        }
    }
    return true;
}

/* A function file that does not verify was edited or damaged: its
 * message is put at the file's line, not at the C line the node came
 * from (the file's loc(...)), by verifying it again parsed that way. */
static void verify_at_text(const char *text, const char *path, char *err, size_t errlen)
{
    ir_function *g = ir_parse_text_locs(text, path, NULL, 0);
    char *at_text = rt_xmalloc(errlen);
    if (g && !ir_verify(g, at_text, errlen))
        memcpy(err, at_text, errlen);
    free(at_text);
    ir_function_free(g);
}

ir_function *sm_function_graph(const ag_saved_model *m, int i, char *err, size_t errlen)
{
    const sm_function *f = &m->man->functions[i];
    char *path = path_in(m, f->file);
    ir_function *g = ir_parse(m->fns[i].text, path, err, errlen);
    bool ok = g && bind_variables(m, f, g, err, errlen) &&
              io_match(path, f->inputs, f->n_inputs, g->body->params, g->body->n_params,
                       "input", err, errlen) &&
              io_match(path, f->outputs, f->n_outputs, g->body->results, g->body->n_results,
                       "output", err, errlen);
    if (ok && !ir_verify(g, err, errlen)) {
        ok = false;
        verify_at_text(m->fns[i].text, path, err, errlen);
    }
    if (!ok && g) {
        ir_function_free(g);
        g = NULL;
    }
    free(path);
    return g;
}

static bool load_function(ag_saved_model *m, int i, char *err, size_t errlen)
{
    sm_function *f = &m->man->functions[i];
    sm_loaded_function *lf = &m->fns[i];
    lf->rec = f;
    pthread_mutex_init(&lf->lock, NULL);
    if (strstr(f->file, "..") || f->file[0] == '/' || !*f->file) {
        snprintf(err, errlen, "%s/%s: function '%s' names the file \"%s\", which is not "
                              "inside the model", m->dir, SM_MANIFEST_FILE, f->name, f->file);
        return false;
    }
    char *path = path_in(m, f->file);
    size_t n = 0;
    int64_t size = 0;
    bool ok = sf_regular_size(path, NULL, &size, err, errlen);
    if (ok && size != f->bytes) /* never read: a sparse file of gigabytes, say */
        ok = size_differs(path, size, f->bytes, err, errlen);
    else if (ok)
        lf->text = sf_read_regular(path, NULL, MAX_FUNCTION_TEXT, &n, err, errlen);
    ok = ok && lf->text && check_bytes(path, lf->text, n, f->bytes, f->checksum, err, errlen);
    free(path);
    ir_function *g = ok ? sm_function_graph(m, i, err, errlen) : NULL;
    if (g)
        ir_function_free(g); /* checked; each compile parses its own */
    return g != NULL;
}

/* ------------------------------------------------------------ signatures */

static bool same_ios(const sm_io *a, int na, const sm_io *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i].type, b[i].type) != 0)
            return false;
    return true;
}

static void spec_of(const sm_io *io, ag_tensor_spec *s)
{
    ir_type t = {0};
    parse_type(io->type, &t);
    *s = (ag_tensor_spec){.name = io->name, .dtype = t.dtype, .shape = t.shape};
}

static bool load_signatures(ag_saved_model *m, char *err, size_t errlen)
{
    sm_manifest *man = m->man;
    int total = 0;
    for (int i = 0; i < man->n_signatures; i++)
        total += man->signatures[i].n_inputs + man->signatures[i].n_outputs;
    m->sigs = rt_xcalloc((size_t)man->n_signatures + 1, sizeof *m->sigs);
    m->specs = rt_xcalloc((size_t)total + 1, sizeof *m->specs);
    ag_tensor_spec *next = m->specs;
    for (int i = 0; i < man->n_signatures; i++) {
        sm_signature *s = &man->signatures[i];
        sm_function *f = sm_find_function(man, s->function);
        if (!f || !same_ios(s->inputs, s->n_inputs, f->inputs, f->n_inputs) ||
            !same_ios(s->outputs, s->n_outputs, f->outputs, f->n_outputs)) {
            snprintf(err, errlen, "%s/%s: signature '%s' %s '%s'", m->dir, SM_MANIFEST_FILE,
                     s->name, f ? "does not have the inputs and outputs of" : "names no "
                     "function", s->function);
            return false;
        }
        ag_signature_def *d = &m->sigs[i];
        *d = (ag_signature_def){.name = s->name, .n_inputs = s->n_inputs,
                                .n_outputs = s->n_outputs, .inputs = next};
        for (int k = 0; k < s->n_inputs; k++)
            spec_of(&s->inputs[k], next++);
        d->outputs = next;
        for (int k = 0; k < s->n_outputs; k++)
            spec_of(&s->outputs[k], next++);
    }
    return true;
}

/* ------------------------------------------------------------ the model */

/* Frees what call.c compiled of lf, its batcher first (whose threads
 * run the compiled code); lf may compile again. Here, with the model's
 * lifetime: freeing a model releases each function. */
void sm_loaded_function_release(sm_loaded_function *lf)
{
    if (lf->batcher)
        ag_batcher_free(lf->batcher);
    lf->batcher = NULL;
    pl_result_free(&lf->compiled);
    pl_result_free(&lf->pre);
    pl_result_free(&lf->post);
    free(lf->middle_in);
    free(lf->post_in);
    lf->middle_in = lf->post_in = NULL;
}

static void free_model(ag_saved_model *m)
{
    if (!m)
        return;
    for (int i = 0; m->fns && i < m->man->n_functions; i++) {
        sm_loaded_function_release(&m->fns[i]);
        free(m->fns[i].text);
        if (m->fns[i].rec)
            pthread_mutex_destroy(&m->fns[i].lock);
    }
    for (int i = 0; m->vars && i < m->man->n_variables; i++)
        if (m->vars[i])
            ag_variable_free_at((ag_loc){0}, m->vars[i]);
    free(m->fns);
    free(m->vars);
    free(m->sigs);
    free(m->specs);
    free(m->man);
    free(m->dir);
    free(m);
}

/* ag_shutdown frees what was loaded and not freed, before the runtime
 * frees the variables under it. */
static void models_shutdown(void)
{
    pthread_mutex_lock(&models_lock);
    ag_saved_model *list = models;
    models = NULL;
    hooked = false;
    pthread_mutex_unlock(&models_lock);
    while (list) {
        ag_saved_model *next = list->next;
        free_model(list);
        list = next;
    }
}

static void track(ag_saved_model *m)
{
    pthread_mutex_lock(&models_lock);
    if (!hooked) {
        rt_at_shutdown(models_shutdown);
        hooked = true;
    }
    m->next = models;
    models = m;
    pthread_mutex_unlock(&models_lock);
}

void ag_saved_model_free(ag_saved_model *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&models_lock);
    ag_saved_model **p = &models;
    while (*p && *p != m)
        p = &(*p)->next;
    bool found = *p != NULL;
    if (found)
        *p = m->next;
    pthread_mutex_unlock(&models_lock);
    if (found)
        free_model(m);
}

/* Whether the manifest's last line is "complete: true", as agc writes it:
 * a manifest cut anywhere lacks it. */
static bool ends_complete(const char *text, size_t n)
{
    static const char last[] = "complete: true";
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\r'))
        n--;
    size_t k = sizeof last - 1;
    return n >= k && !memcmp(text + n - k, last, k) && (n == k || text[n - k - 1] == '\n');
}

static bool read_manifest(ag_saved_model *m, char *err, size_t errlen)
{
    char *path = path_in(m, SM_MANIFEST_FILE);
    size_t n = 0;
    char *text = sf_read_regular(path, NULL, MAX_MANIFEST, &n, err, errlen);
    bool ok = false;
    if (text && strlen(text) != n)
        snprintf(err, errlen, "%s: holds a NUL byte: not a manifest", path);
    else if (text && !ends_complete(text, n))
        sm_manifest_truncated(path, err, errlen); /* not the parser's error in the cut */
    else if (text)
        ok = sm_manifest_parse(text, path, m->man, err, errlen);
    free(text);
    free(path);
    return ok;
}

ag_saved_model *ag_saved_model_load_at(ag_loc loc, const char *dir)
{
    if (!dir || !*dir) {
        rt_report(loc, "ag_saved_model_load: no directory given");
        return NULL;
    }
    ag_saved_model *m = rt_xcalloc(1, sizeof *m);
    m->dir = rt_xstrdup(dir);
    m->man = rt_xcalloc(1, sizeof *m->man);
    char err[1024] = "";
    bool ok = read_manifest(m, err, sizeof err) && load_variables(loc, m, err, sizeof err);
    if (ok) {
        m->fns = rt_xcalloc((size_t)m->man->n_functions + 1, sizeof *m->fns);
        for (int i = 0; ok && i < m->man->n_functions; i++)
            ok = load_function(m, i, err, sizeof err);
    }
    ok = ok && load_signatures(m, err, sizeof err);
    if (!ok) {
        rt_report(loc, "cannot load the saved model '%s': %s", dir, err);
        free_model(m);
        return NULL;
    }
    track(m);
    return m;
}

int sm_function_index(const ag_saved_model *m, const char *name)
{
    for (int i = 0; i < m->man->n_functions; i++)
        if (strcmp(m->man->functions[i].name, name) == 0)
            return i;
    return -1;
}

const rt_value *sm_variable_value(const ag_saved_model *m, int i)
{
    return m->vars[i]->value;
}
