/*
 * bf16_api.c - the bf16 pass from C (ag.h): its options
 * (ag_set_bf16_options) and its accuracy report (ag_bf16_report).
 *
 * The options are settings (runtime/core/config.def, bf16*), which every
 * later trace's pipeline reads from its snapshot. The report traces the
 * function as the function cache does, but stops after tracing: the f32
 * graph and a converted copy (same node ids) are run on the reference
 * executor by passes/bf16_report.c, which agc-opt --bf16-report uses too.
 */
#include "function.h"
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- options */

/* Whether every name in the comma-separated list is an op of the table;
 * else the first that is not, in bad. */
static bool ops_known(const char *list, char *bad, size_t n)
{
    for (const char *p = list; p && *p;) {
        p += strspn(p, ", ");
        size_t len = strcspn(p, ", ");
        if (len == 0)
            break;
        bool found = false;
        for (int op = 0; op < RT_OP_COUNT && !found; op++)
            found = strlen(rt_ops[op].name) == len && strncmp(rt_ops[op].name, p, len) == 0;
        if (!found) {
            snprintf(bad, n, "%.*s", (int)len, p);
            return false;
        }
        p += len;
    }
    return true;
}

/* The options as settings (the setter layer): NULL clears them. enabled
 * is written only when on, so that AG_BF16=1 still turns conversion on
 * (either does, as before). */
static void set_bf16_settings(const ag_bf16_options *o)
{
    rt_config_set(RT_CFG_BF16, o && o->enabled ? "1" : NULL);
    rt_config_set(RT_CFG_BF16_FILTERLIST, o ? (o->filterlist ? o->filterlist : "") : NULL);
    rt_config_set(RT_CFG_BF16_SCOPE, o ? (o->scope ? o->scope : "all") : NULL);
    rt_config_set(RT_CFG_BF16_IO, o ? (o->io ? "1" : "0") : NULL);
    rt_config_set(RT_CFG_BF16_SKIP_SAFETY_CHECKS,
                  o ? (o->skip_safety_checks ? "1" : "0") : NULL);
    rt_config_set(RT_CFG_BF16_ELEMENTWISE, o ? (o->elementwise ? o->elementwise : "f32") : NULL);
}

bool ag_set_bf16_options_at(ag_loc loc, const ag_bf16_options *options)
{
    if (!options) {
        set_bf16_settings(NULL);
        return true;
    }
    const char *list = options->filterlist ? options->filterlist : "";
    const char *scope = options->scope ? options->scope : "all";
    const char *elementwise = options->elementwise ? options->elementwise : "f32";
    char bad[64];
    size_t room = sizeof ((pass_bf16_options *)0)->filterlist;
    if (strlen(list) >= room) {
        rt_report(loc, "ag_set_bf16_options: the filterlist is %zu characters long; at most "
                       "%zu fit", strlen(list), room - 1);
        return false;
    }
    if (!ops_known(list, bad, sizeof bad)) {
        rt_report(loc, "ag_set_bf16_options: the filterlist names '%s', which is no op; ops are "
                       "named as in the IR (matmul, tanh, softmax, ...)", bad);
        return false;
    }
    if (strcmp(scope, "all") != 0 && strcmp(scope, "tpu") != 0) {
        rt_report(loc, "ag_set_bf16_options: scope \"%s\" is none of \"all\" (the whole "
                       "function) and \"tpu\" (its nodes on the tpu-model)", scope);
        return false;
    }
    if (strcmp(elementwise, "f32") != 0 && strcmp(elementwise, "bf16") != 0) {
        rt_report(loc, "ag_set_bf16_options: elementwise \"%s\" is none of \"f32\" (elementwise "
                       "ops compute in f32 between bf16 values) and \"bf16\" (each op's result "
                       "rounds)", elementwise);
        return false;
    }
    set_bf16_settings(options);
    return true;
}

/* ---------------------------------------------------------------- report */

/* fn again, with the same ids: the report matches the converted graph's
 * nodes to the f32 graph's by id. */
static ir_function *copy_function(const ir_function *fn)
{
    char err[512];
    ir_function *copy = ir_copy(fn, err, sizeof err);
    if (!copy)
        rt_report((ag_loc){0}, "internal error: the graph of '%s' does not parse back: %s",
                  fn->name ? fn->name : "", err);
    return copy;
}

/* The inputs as the trace's arguments and the runs' values; false after
 * reporting what does not fit the function. */
static bool take_inputs(ag_loc loc, const ag_function_desc *d, const ag_tensor *inputs, int n,
                        pl_arg *args, rt_value **values)
{
    if (n != d->n_params) {
        rt_report(loc, "ag_bf16_report: '%s' takes %d parameters but %d inputs were given",
                  d->name, d->n_params, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (d->param_kinds[i] != AG_ARG_TENSOR) {
            rt_report(loc, "ag_bf16_report: parameter '%s' of '%s' is not a tensor; the report "
                           "runs functions of tensors only", d->param_names[i], d->name);
            return false;
        }
        if (!(values[i] = rt_handle_get(loc, inputs[i])))
            return false;
        args[i] = (pl_arg){.kind = AG_ARG_TENSOR,
                           .type = {.dtype = values[i]->dtype, .elem_dtype = values[i]->dtype,
                                    .shape = values[i]->shape}};
    }
    return true;
}

static void fill_report(const pass_bf16_report *rep, ag_bf16_report *out)
{
    memset(out, 0, sizeof *out);
    out->n_outputs = rep->n_outputs < AG_BF16_REPORT_MAX_OUTPUTS ? rep->n_outputs
                                                                 : AG_BF16_REPORT_MAX_OUTPUTS;
    for (int i = 0; i < out->n_outputs; i++) {
        out->max_abs[i] = rep->max_abs[i];
        out->max_rel[i] = rep->max_rel[i];
    }
    if (rep->worst) {
        snprintf(out->worst_op, sizeof out->worst_op, "%s", ir_opcode_name(rep->worst->opcode));
        snprintf(out->worst_file, sizeof out->worst_file, "%s",
                 rep->worst->loc.file ? rep->worst->loc.file : "");
        out->worst_line = rep->worst->loc.line;
        out->worst_growth = rep->worst_growth;
    }
}

bool ag_bf16_report_at(ag_loc loc, const char *name, const ag_tensor *inputs, int n_inputs,
                       ag_bf16_report *out)
{
    const ag_function_desc *d = name ? fn_desc_named(name) : NULL;
    if (!d) {
        rt_report(loc, "ag_bf16_report: no AG_FUNCTION named '%s' is known (call it or "
                       "ag_function_register it first)", name ? name : "(null)");
        return false;
    }
    if (n_inputs < 0 || (n_inputs > 0 && !inputs)) {
        rt_report(loc, "ag_bf16_report: %d inputs at %p", n_inputs, (const void *)inputs);
        return false;
    }
    size_t np = (size_t)(d->n_params > n_inputs ? d->n_params : n_inputs) + 1;
    pl_arg *args = rt_xcalloc(np, sizeof *args);
    rt_value **values = rt_xcalloc(np, sizeof *values);
    pl_result traced = {0};
    ir_function *converted = NULL;
    pass_bf16_report rep;
    /* the trace and the conversion see the same settings */
    const rt_config *c = rt_config_get();
    pass_options o;
    pass_get_options(&o);
    o.config = c;
    o.bf16 = pl_bf16_from_config(c);
    pl_request r = {.desc = d, .args = args, .stop = PL_TRACED, .config = c};
    bool ok = take_inputs(loc, d, inputs, n_inputs, args, values) &&
              (r.target = pl_target_named(loc, "ag_bf16_report", "reference")) &&
              pl_run(&r, &traced) && (converted = copy_function(traced.graph)) &&
              pass_run_with(converted, "bf16", NULL, &o) &&
              pass_bf16_report_run(traced.graph, converted, values, n_inputs, &rep);
    rt_config_release(c);
    if (ok)
        fill_report(&rep, out);
    if (converted)
        ir_function_free(converted);
    pl_result_free(&traced);
    free(args);
    free(values);
    return ok;
}
