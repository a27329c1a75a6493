/*
 * optimizer.c - Keras's optimizers: SGD (momentum, Nesterov), Adam and
 * AdamW, to the formulas of tf.keras.optimizers (Keras 3).
 *
 * An update is written with the public ops (their _at forms, at the
 * user's line), so the same code runs eagerly and, while an AG_FUNCTION
 * is traced, records graph nodes: the assigns are effects the passes
 * keep. Slot variables are made by ag_variable_new on the first apply
 * that sees a variable, so a traced training step makes them on its
 * function's first trace only (ir/trace.c's rule, tf.function's
 * "singleton variables").
 */
#include "optimizer.h"
#include "rt.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define OPTIMIZER_MAGIC 0x0B71A12Eu

typedef enum opt_kind { OPT_SGD, OPT_ADAM, OPT_ADAMW } opt_kind;

/* The slots of one variable: SGD's momentum (none when momentum is 0),
 * Adam's first and second moments. */
typedef struct slot_set {
    ag_variable var;
    ag_variable slot[2];
    int n_slots;
} slot_set;

struct ag_optimizer_s {
    uint32_t magic;
    uint64_t serial;
    opt_kind kind;
    double lr, momentum, beta_1, beta_2, epsilon, weight_decay;
    bool nesterov;
    ag_variable step; /* Adam's: i64, Keras's `iterations` */
    slot_set *sets;
    int n_sets, cap_sets;
    bool warned_unconnected;
};

/* ------------------------------------------------------------ registry */

/* The live optimizers: a freed one is recognized without reading it. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ag_optimizer *registry;
static int registry_count, registry_cap;
static uint64_t last_serial;

static int registry_index(ag_optimizer o)
{
    for (int i = 0; i < registry_count; i++)
        if (registry[i] == o)
            return i;
    return -1;
}

static void registry_add(ag_optimizer o)
{
    pthread_mutex_lock(&registry_lock);
    if (registry_count == registry_cap) {
        registry_cap = registry_cap ? 2 * registry_cap : 8;
        registry = rt_xrealloc(registry, (size_t)registry_cap * sizeof *registry);
    }
    registry[registry_count++] = o;
    o->serial = ++last_serial;
    pthread_mutex_unlock(&registry_lock);
}

static bool registry_remove(ag_optimizer o)
{
    pthread_mutex_lock(&registry_lock);
    int at = registry_index(o);
    if (at >= 0)
        registry[at] = registry[--registry_count];
    pthread_mutex_unlock(&registry_lock);
    return at >= 0;
}

/* o's serial if it is live, else 0. */
static uint64_t serial_of(ag_optimizer o)
{
    pthread_mutex_lock(&registry_lock);
    uint64_t s = registry_index(o) >= 0 ? o->serial : 0;
    pthread_mutex_unlock(&registry_lock);
    return s;
}

uint64_t rt_optimizer_serial(ag_loc loc, ag_optimizer o)
{
    uint64_t s = serial_of(o);
    if (!s)
        rt_report(loc, "ag_optimizer: not a live optimizer (freed, or never created)");
    return s;
}

static bool live(ag_loc loc, const char *fn, ag_optimizer o)
{
    if (serial_of(o))
        return true;
    rt_report_absent(loc, "%s: not a live optimizer (freed, or never created)", fn);
    return false;
}

/* ----------------------------------------------------------- lifetime */

static void destroy(ag_loc loc, ag_optimizer o)
{
    for (int i = 0; i < o->n_sets; i++)
        for (int k = 0; k < o->sets[i].n_slots; k++)
            ag_variable_free_at(loc, o->sets[i].slot[k]);
    ag_variable_free_at(loc, o->step);
    free(o->sets);
    o->magic = 0;
    free(o);
}

/* ag_shutdown: the optimizers still alive, before their slot variables
 * go with the others. */
static void free_all(void)
{
    pthread_mutex_lock(&registry_lock);
    ag_optimizer *all = registry;
    int n = registry_count;
    registry = NULL;
    registry_count = registry_cap = 0;
    pthread_mutex_unlock(&registry_lock);
    for (int i = 0; i < n; i++)
        destroy((ag_loc){0}, all[i]); /* at exit: no line of the program */
    free(all);
}

static ag_optimizer create(opt_kind kind)
{
    ag_optimizer o = rt_xcalloc(1, sizeof *o);
    o->magic = OPTIMIZER_MAGIC;
    o->kind = kind;
    rt_at_shutdown(free_all);
    registry_add(o);
    return o;
}

void ag_optimizer_free_at(ag_loc loc, ag_optimizer o)
{
    if (!o)
        return; /* like free(NULL); also what a failed constructor returned */
    if (!registry_remove(o)) {
        rt_report(loc, "ag_optimizer_free: not a live optimizer (freed, or never created)");
        return;
    }
    destroy(loc, o);
}

int rt_optimizer_num_slots(ag_optimizer o)
{
    int n = o->step != NULL;
    for (int i = 0; i < o->n_sets; i++)
        n += o->sets[i].n_slots;
    return n;
}

/* --------------------------------------------------------- construction */

/* A hyperparameter must be finite, >= 0 and below `limit` (or at most it,
 * when `closed`); Keras rejects the others at construction too. */
static bool check_param(ag_loc loc, const char *fn, const char *name, double v, double limit,
                        bool closed)
{
    bool ok = isfinite(v) && v >= 0 && (closed ? v <= limit : v < limit);
    if (ok)
        return true;
    if (isinf(limit))
        rt_report(loc, "%s: %s is %g; it must be a finite number >= 0", fn, name, v);
    else
        rt_report(loc, "%s: %s is %g; it must be in [0, %g%s", fn, name, v, limit,
                  closed ? "]" : ")");
    return false;
}

static bool check_adam(ag_loc loc, const char *fn, double lr, double beta_1, double beta_2,
                       double epsilon)
{
    return check_param(loc, fn, "learning_rate", lr, INFINITY, false) &&
           check_param(loc, fn, "beta_1", beta_1, 1, false) &&
           check_param(loc, fn, "beta_2", beta_2, 1, false) &&
           check_param(loc, fn, "epsilon", epsilon, INFINITY, false);
}

ag_optimizer ag_optimizer_sgd_at(ag_loc loc, double learning_rate, double momentum,
                                 bool nesterov)
{
    const char *fn = "ag_optimizer_sgd";
    if (!check_param(loc, fn, "learning_rate", learning_rate, INFINITY, false) ||
        !check_param(loc, fn, "momentum", momentum, 1, true))
        return NULL;
    ag_optimizer o = create(OPT_SGD);
    o->lr = learning_rate;
    o->momentum = momentum;
    o->nesterov = nesterov;
    return o;
}

static ag_optimizer make_adam(opt_kind kind, double lr, double beta_1, double beta_2,
                              double epsilon, double weight_decay)
{
    ag_optimizer o = create(kind);
    o->lr = lr;
    o->beta_1 = beta_1;
    o->beta_2 = beta_2;
    o->epsilon = epsilon;
    o->weight_decay = weight_decay;
    return o;
}

ag_optimizer ag_optimizer_adam_at(ag_loc loc, double learning_rate, double beta_1,
                                  double beta_2, double epsilon)
{
    if (!check_adam(loc, "ag_optimizer_adam", learning_rate, beta_1, beta_2, epsilon))
        return NULL;
    return make_adam(OPT_ADAM, learning_rate, beta_1, beta_2, epsilon, 0);
}

ag_optimizer ag_optimizer_adamw_at(ag_loc loc, double learning_rate, double beta_1,
                                   double beta_2, double epsilon, double weight_decay)
{
    const char *fn = "ag_optimizer_adamw";
    if (!check_adam(loc, fn, learning_rate, beta_1, beta_2, epsilon) ||
        !check_param(loc, fn, "weight_decay", weight_decay, INFINITY, false))
        return NULL;
    return make_adam(OPT_ADAMW, learning_rate, beta_1, beta_2, epsilon, weight_decay);
}

/* ----------------------------------------------------------------- slots */

/* A variable of zeros shaped like x (made while tracing: on the first
 * trace only, or ag_variable_new reports the singleton rule). */
static ag_variable zeros_variable(ag_loc loc, ag_dtype dt, ag_shape shape)
{
    ag_tensor z = ag_fill_at(loc, dt, shape, 0.0);
    ag_variable v = ag_is_error(z) ? NULL : ag_variable_new_at(loc, z);
    ag_free_at(loc, z);
    return v;
}

static int slots_wanted(ag_optimizer o)
{
    return o->kind != OPT_SGD ? 2 : o->momentum != 0 ? 1 : 0;
}

static slot_set *find_set(ag_optimizer o, ag_variable var)
{
    for (int i = 0; i < o->n_sets; i++)
        if (o->sets[i].var == var)
            return &o->sets[i];
    return NULL;
}

/* var's slots, made at its first apply; NULL after reporting. */
static slot_set *slots_of(ag_loc loc, ag_optimizer o, ag_variable var, const rt_value *w)
{
    slot_set *s = find_set(o, var);
    if (s)
        return s;
    slot_set fresh = {.var = var};
    for (int k = 0; k < slots_wanted(o); k++) {
        if (!(fresh.slot[k] = zeros_variable(loc, w->dtype, w->shape))) {
            for (int j = 0; j < k; j++)
                ag_variable_free_at(loc, fresh.slot[j]);
            return NULL;
        }
        fresh.n_slots++;
    }
    if (o->n_sets == o->cap_sets) {
        o->cap_sets = o->cap_sets ? 2 * o->cap_sets : 8;
        o->sets = rt_xrealloc(o->sets, (size_t)o->cap_sets * sizeof *o->sets);
    }
    o->sets[o->n_sets] = fresh;
    return &o->sets[o->n_sets++];
}

/* Adam's step count, an i64 scalar variable (so that a traced step reads
 * and increments it), made at the first apply. */
static bool ensure_step(ag_loc loc, ag_optimizer o)
{
    if (o->kind == OPT_SGD || o->step)
        return true;
    ag_tensor zero = ag_scalar_i64_at(loc, 0);
    o->step = ag_is_error(zero) ? NULL : ag_variable_new_at(loc, zero);
    ag_free_at(loc, zero);
    return o->step != NULL;
}

/* ---------------------------------------------------------------- checks */

static bool is_unconnected(ag_tensor g)
{
    return g.id == 0 && g.gen == 0;
}

static bool check_arrays(ag_loc loc, int n, const ag_tensor *grads, const ag_variable *vars)
{
    const char *fn = "ag_optimizer_apply";
    if (n < 0)
        rt_report(loc, "%s: n is %d; it must be >= 0", fn, n);
    else if (n > 0 && (!grads || !vars))
        rt_report(loc, "%s: %s is NULL but n is %d", fn, !grads ? "grads" : "vars", n);
    else
        return true;
    return false;
}

static bool is_float(ag_dtype dt)
{
    return dt == AG_F32 || dt == AG_F64 || dt == AG_BF16;
}

/* The gradient g of variable i, whose value (read) is w, must be a
 * floating-point tensor of w's dtype and shape. */
static bool check_pair(ag_loc loc, int i, ag_tensor g, const rt_value *w)
{
    const char *fn = "ag_optimizer_apply";
    char ws[96], gs[96];
    rt_shape_str(&w->shape, ws, sizeof ws);
    if (!is_float(w->dtype)) {
        rt_report(loc, "%s: variable %d is %s%s; optimizers update floating-point variables "
                       "(f32, f64, bf16)", fn, i, ag_dtype_name(w->dtype), ws);
        return false;
    }
    const rt_value *gv = rt_handle_get(loc, g);
    if (!gv)
        return false;
    rt_shape_str(&gv->shape, gs, sizeof gs);
    if (gv->dtype == w->dtype && ag_shape_equal(gv->shape, w->shape))
        return true;
    rt_report(loc, "%s: gradient %d is %s%s but variable %d is %s%s; a gradient has its "
                   "variable's dtype and shape", fn, i, ag_dtype_name(gv->dtype), gs, i,
              ag_dtype_name(w->dtype), ws);
    return false;
}

/* --------------------------------------------------------------- updates */

#define T(x) ag__tensor_operand(x)
#define F(x) ag__float_operand(x)

/* tf.keras.optimizers.SGD: v = m*v - lr*g; w += v, or with Nesterov
 * w += m*v - lr*g; without momentum w -= lr*g. */
static void sgd_update(ag_loc loc, ag_optimizer o, const slot_set *s, ag_tensor g)
{
    ag_tensor lr_g = ag_mul_at(loc, T(g), F(o->lr));
    if (s->n_slots == 0) {
        ag_assign_sub_at(loc, s->var, lr_g);
        return;
    }
    ag_tensor v = ag_variable_read_at(loc, s->slot[0]);
    ag_tensor v_new = ag_sub_at(loc, T(ag_mul_at(loc, T(v), F(o->momentum))), T(lr_g));
    ag_assign_at(loc, s->slot[0], v_new);
    if (o->nesterov)
        ag_assign_add_at(loc, s->var,
                         ag_sub_at(loc, T(ag_mul_at(loc, T(v_new), F(o->momentum))), T(lr_g)));
    else
        ag_assign_add_at(loc, s->var, v_new);
}

/* beta^t, computed in the variable's dtype as Keras does. */
static ag_tensor power(ag_loc loc, ag_dtype dt, double beta, ag_tensor t)
{
    return ag_pow_at(loc, T(ag_scalar_at(loc, dt, beta)), T(t));
}

/* Keras's moment update m += (x - m) * (1 - beta); the new value. */
static ag_tensor moment(ag_loc loc, ag_variable m, ag_tensor x, double beta)
{
    ag_tensor old = ag_variable_read_at(loc, m);
    ag_tensor now = ag_add_at(loc, T(old), T(ag_mul_at(loc, T(ag_sub_at(loc, T(x), T(old))),
                                                        F(1 - beta))));
    ag_assign_at(loc, m, now);
    return now;
}

/* tf.keras.optimizers.Adam, epsilon outside the square root of the
 * uncorrected v ("epsilon hat" of Kingma and Ba):
 *   alpha = lr * sqrt(1 - b2^t) / (1 - b1^t)
 *   w -= alpha * m / (sqrt(v) + eps)
 * AdamW first decays the weights, decoupled from the gradient:
 *   w -= w * wd * lr. */
static void adam_update(ag_loc loc, ag_optimizer o, const slot_set *s, ag_tensor g,
                        ag_tensor w, ag_tensor step)
{
    ag_dtype dt = ag_dtype_of(g);
    if (o->kind == OPT_ADAMW)
        ag_assign_at(loc, s->var,
                     ag_sub_at(loc, T(w), T(ag_mul_at(loc, T(ag_mul_at(loc, T(w),
                                                                       F(o->weight_decay))),
                                                      F(o->lr)))));
    ag_tensor t = ag_cast_at(loc, ag_add_at(loc, T(step), ag__int_operand(1)), dt);
    ag_tensor alpha = ag_div_at(
        loc, T(ag_mul_at(loc, F(o->lr),
                         T(ag_sqrt_at(loc, ag_sub_at(loc, F(1), T(power(loc, dt, o->beta_2, t))))))),
        T(ag_sub_at(loc, F(1), T(power(loc, dt, o->beta_1, t)))));
    ag_tensor m = moment(loc, s->slot[0], g, o->beta_1);
    ag_tensor v = moment(loc, s->slot[1], ag_square_at(loc, g), o->beta_2);
    ag_tensor denom = ag_add_at(loc, T(ag_sqrt_at(loc, v)), F(o->epsilon));
    ag_assign_sub_at(loc, s->var, ag_div_at(loc, T(ag_mul_at(loc, T(m), T(alpha))), T(denom)));
}

/* ----------------------------------------------------------------- apply */

/* Reads every connected variable into w[] and checks its gradient; the
 * slots are made only once every pair is right. */
static bool read_and_check(ag_loc loc, int n, const ag_tensor *grads,
                           const ag_variable *vars, ag_tensor *w)
{
    for (int i = 0; i < n; i++) {
        if (is_unconnected(grads[i]))
            continue;
        w[i] = ag_variable_read_at(loc, vars[i]);
        const rt_value *wv = ag_is_error(w[i]) ? NULL : rt_handle_get(loc, w[i]);
        if (!wv || !check_pair(loc, i, grads[i], wv))
            return false;
    }
    return true;
}

static bool make_slots(ag_loc loc, ag_optimizer o, int n, const ag_tensor *grads,
                       const ag_variable *vars, const ag_tensor *w)
{
    if (!ensure_step(loc, o))
        return false;
    for (int i = 0; i < n; i++)
        if (!is_unconnected(grads[i]) && !slots_of(loc, o, vars[i], rt_handle_get(loc, w[i])))
            return false;
    return true;
}

static void warn_unconnected(ag_loc loc, ag_optimizer o, int i)
{
    if (o->warned_unconnected)
        return;
    o->warned_unconnected = true;
    rt_warn(loc, "ag_optimizer_apply: gradient %d is the null tensor (the loss does not "
                 "depend on variable %d): that variable is left as it is", i, i);
}

static void update_all(ag_loc loc, ag_optimizer o, int n, const ag_tensor *grads,
                       const ag_variable *vars, const ag_tensor *w)
{
    ag_tensor step = o->step ? ag_variable_read_at(loc, o->step) : (ag_tensor){0, 0};
    for (int i = 0; i < n; i++) {
        if (is_unconnected(grads[i])) {
            warn_unconnected(loc, o, i);
            continue;
        }
        ag_scope_push(); /* each variable's temporaries go before the next's */
        const slot_set *s = find_set(o, vars[i]);
        if (o->kind == OPT_SGD)
            sgd_update(loc, o, s, grads[i]);
        else
            adam_update(loc, o, s, grads[i], w[i], step);
        ag_scope_pop_at(loc);
    }
    if (o->step)
        ag_assign_add_at(loc, o->step, ag_scalar_i64_at(loc, 1));
}

void ag_optimizer_apply_at(ag_loc loc, ag_optimizer o, int n, const ag_tensor *grads,
                           const ag_variable *vars)
{
    if (!live(loc, "ag_optimizer_apply", o) || !check_arrays(loc, n, grads, vars))
        return;
    ag_scope_push();
    ag_tensor *w = rt_xcalloc((size_t)n + 1, sizeof *w);
    if (read_and_check(loc, n, grads, vars, w) && make_slots(loc, o, n, grads, vars, w))
        update_all(loc, o, n, grads, vars, w);
    free(w);
    ag_scope_pop_at(loc);
}
