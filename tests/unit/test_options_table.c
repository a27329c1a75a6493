/*
 * test_options_table.c - option messages made from tables
 * (support/options_table.h): defaults, required fields, bounds with
 * their places, the canonical and the inline printers; the one
 * BatchOptions table (pipeline/batch_options.def) behind ag_batcher_new,
 * the converter and the saved model, with one set of bounds and
 * defaults; docs/converter-options.md's tables made from the tables.
 */
#include "batch.h"
#include "manifest.h"
#include "options.h"
#include "options_table.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ------------------------------------------------------- a table of its own */

typedef struct demo {
    int64_t size;  /* required, [1, 100] */
    int64_t count; /* default 3, at least 1 */
    double rate;   /* default 0.5, [0, 1] */
    bool on;
    int mode;      /* enum, default 1 */
    char label[16];
    int64_t items[4];
    int n_items;
    struct {
        tp_loc size, count, rate, on, mode, label, items[4];
    } at;
} demo;

static const char *const modes[] = {"OFF", "AUTO", "ALWAYS", NULL};

#define ROW(f, type_, ...) \
    {.name = #f, .type = type_, .offset = offsetof(demo, f), .loc_offset = offsetof(demo, at.f), \
     .flags = TP_BOUNDS_LATER, __VA_ARGS__}
static const tp_field demo_fields[] = {
    {.name = "size", .type = TP_INT, .offset = offsetof(demo, size),
     .loc_offset = offsetof(demo, at.size), .lo = 1, .hi = 100,
     .flags = TP_REQUIRED | TP_BOUNDS_LATER, .doc = "how big"},
    ROW(count, TP_INT, .def = 3, .lo = 1, .hi = HUGE_VAL, .doc = "how many"),
    ROW(rate, TP_DOUBLE, .def = 0.5, .lo = 0, .hi = 1, .doc = "how often"),
    ROW(on, TP_BOOL, .doc = "whether"),
    ROW(mode, TP_ENUM, .enums = modes, .def = 1, .doc = "which"),
    ROW(label, TP_STRING, .capacity = 16, .def_text = "x", .doc = "what"),
    {.name = "items", .type = TP_INT, .offset = offsetof(demo, items), .repeated = true,
     .capacity = 4, .count_offset = offsetof(demo, n_items), .elem_size = sizeof(int64_t),
     .loc_offset = offsetof(demo, at.items), .lo = 0, .hi = 9, .flags = TP_BOUNDS_LATER,
     .doc = "some digits"},
};
static const tp_message demo_message = {"Demo", demo_fields, 7};

/* Reads text over the defaults, then every check; the error or "". */
static const char *demo_read(const char *text, demo *d, char *err, size_t n)
{
    memset(d, 0, sizeof *d);
    ot_defaults(&demo_message, d);
    if (!tp_parse(text, "d.txt", &demo_message, d, err, n) ||
        !ot_check(&demo_message, d, (tp_loc){1, 1}, OT_CHECK_ALL, "d.txt", err, n))
        return err;
    return "";
}

static void test_defaults_from_the_table(void **state)
{
    (void)state;
    demo d;
    memset(&d, 0, sizeof d);
    ot_defaults(&demo_message, &d);
    assert_int_equal(d.count, 3);
    assert_true(d.rate == 0.5);
    assert_int_equal(d.mode, 1);
    assert_string_equal(d.label, "x");
    assert_int_equal(d.n_items, 0);
}

static void test_required_and_bounds(void **state)
{
    (void)state;
    demo d;
    char err[256];
    assert_string_equal(demo_read("count: 2", &d, err, sizeof err),
                        "d.txt:1:1: Demo needs size (how big)");
    assert_string_equal(demo_read("size: 7", &d, err, sizeof err), "");
    assert_string_equal(demo_read("size: 101", &d, err, sizeof err),
                        "d.txt:1:7: size must be in [1, 100], got 101");
    assert_string_equal(demo_read("size: 1\ncount: 0", &d, err, sizeof err),
                        "d.txt:2:8: count must be at least 1, got 0");
    assert_string_equal(demo_read("size: 1 rate: 1.5", &d, err, sizeof err),
                        "d.txt:1:15: rate must be in [0, 1], got 1.5");
    assert_string_equal(demo_read("size: 1 items: [1, 10]", &d, err, sizeof err),
                        "d.txt:1:20: items[1] must be in [0, 9], got 10");
    /* the reader leaves TP_BOUNDS_LATER bounds alone */
    memset(&d, 0, sizeof d);
    assert_true(tp_parse("size: 0", "d.txt", &demo_message, &d, err, sizeof err));
    /* only the checks asked for */
    assert_true(ot_check(&demo_message, &d, (tp_loc){0}, OT_CHECK_ELEMENTS, "d", err,
                         sizeof err));
    assert_false(ot_check(&demo_message, &d, (tp_loc){0}, OT_CHECK_SINGULAR, "d", err,
                          sizeof err));
    assert_string_equal(err, "d:1:7: size must be in [1, 100], got 0");
}

static char *print_demo(const demo *d, bool inline_)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (inline_)
        ot_print_inline(&demo_message, d, f);
    else
        ot_print(&demo_message, d, f);
    fclose(f);
    return text;
}

static void test_printers(void **state)
{
    (void)state;
    demo d;
    char err[256];
    assert_string_equal(demo_read("size: 5", &d, err, sizeof err), "");
    char *text = print_demo(&d, false);
    assert_string_equal(text, "size: 5\n"); /* required, and nothing else differs */
    free(text);
    assert_string_equal(
        demo_read("size: 5 count: 4 rate: 0.25 on: true mode: OFF label: 'a\"b' items: [1, 2]",
                  &d, err, sizeof err),
        "");
    text = print_demo(&d, false);
    assert_string_equal(text, "size: 5\ncount: 4\nrate: 0.25\non: true\nmode: OFF\n"
                              "label: \"a\\\"b\"\nitems: 1\nitems: 2\n");
    demo back;
    assert_string_equal(demo_read(text, &back, err, sizeof err), "");
    memset(&d.at, 0, sizeof d.at);
    memset(&back.at, 0, sizeof back.at);
    assert_memory_equal(&d, &back, sizeof d);
    free(text);
    text = print_demo(&d, true);
    assert_string_equal(text, "size: 5 count: 4 rate: 0.25 on: true mode: OFF "
                              "label: \"a\\\"b\" items: [1, 2]");
    free(text);
}

static void test_markdown(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ot_markdown(&demo_message, f);
    fclose(f);
    assert_string_equal(text,
                        "| field | type | default | meaning |\n"
                        "|---|---|---|---|\n"
                        "| `size` | integer, 1 to 100 | required | how big |\n"
                        "| `count` | integer, >= 1 | 3 | how many |\n"
                        "| `rate` | number, 0 to 1 | 0.5 | how often |\n"
                        "| `on` | bool | `false` | whether |\n"
                        "| `mode` | `OFF`, `AUTO` or `ALWAYS` | `AUTO` | which |\n"
                        "| `label` | string | `\"x\"` | what |\n"
                        "| `items` | repeated integer, 0 to 9 (at most 4) | none | some digits |\n");
    free(text);
}

/* ------------------------------------------------------ one BatchOptions */

/* The converter's error for `batch_options { max_batch_size: 8 FIELD: V }`. */
static void converter_error(const char *field, long long v, char *err, size_t n)
{
    char text[200];
    snprintf(text, sizeof text, "batch_options { max_batch_size: 8 %s: %lld }", field, v);
    cv_options *o = malloc(sizeof *o);
    if (cv_options_parse(text, "o", o, err, n))
        snprintf(err, n, "(accepted)");
    free(o);
}

/* The manifest's error for a function record batched with FIELD: V. */
static void manifest_error(const char *field, long long v, char *err, size_t n)
{
    char text[300];
    snprintf(text, sizeof text,
             "format_version: 1\nfunction { name: \"f\" batch { max_batch_size: 8 %s: %lld } }\n"
             "complete: true\n", field, v);
    sm_manifest *m = malloc(sizeof *m);
    if (sm_manifest_parse(text, "m", m, err, n))
        snprintf(err, n, "(accepted)");
    free(m);
}

/* ag_batcher_new's check of FIELD = V (with max_batch_size 8). */
static void api_error(const char *field, long long v, char *err, size_t n)
{
    ag_batch_options o = {.max_batch_size = 8};
    if (strcmp(field, "num_batch_threads") == 0)
        o.num_batch_threads = (int)v;
    else if (strcmp(field, "max_enqueued_batches") == 0)
        o.max_enqueued_batches = (int)v;
    else
        o.batch_timeout_micros = v;
    if (bt_options_check(&o, err, n))
        snprintf(err, n, "(accepted)");
}

/* Each bound of the table, just outside and just inside, is refused and
 * accepted alike by all three readers. */
static void test_batch_bounds_are_one(void **state)
{
    (void)state;
    static const struct {
        const char *field;
        long long bad, good;
    } cases[] = {
        {"num_batch_threads", 1025, 1024},
        {"num_batch_threads", -1, 1},
        {"max_enqueued_batches", -1, 1},
        {"batch_timeout_micros", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char c[256], m[256], a[256];
        converter_error(cases[i].field, cases[i].bad, c, sizeof c);
        manifest_error(cases[i].field, cases[i].bad, m, sizeof m);
        api_error(cases[i].field, cases[i].bad, a, sizeof a);
        if (!strstr(c, cases[i].field) || !strstr(m, cases[i].field) ||
            !strstr(a, cases[i].field))
            fail_msg("%s %lld: converter \"%s\", manifest \"%s\", api \"%s\"",
                     cases[i].field, cases[i].bad, c, m, a);
        converter_error(cases[i].field, cases[i].good, c, sizeof c);
        manifest_error(cases[i].field, cases[i].good, m, sizeof m);
        api_error(cases[i].field, cases[i].good, a, sizeof a);
        assert_string_equal(c, "(accepted)");
        assert_string_equal(m, "(accepted)");
        assert_string_equal(a, "(accepted)");
    }
    char a[256];
    api_error("num_batch_threads", 1025, a, sizeof a);
    assert_string_equal(a, "num_batch_threads must be at most 1024, got 1025");
}

/* The defaults: what the converter and the manifest fill in is what a
 * zero field of ag_batch_options means. */
static void test_batch_defaults_are_one(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    cv_options_init(o);
    ag_batch_options api = {.max_batch_size = 8};
    bt_options_fill_defaults(&api);
    assert_int_equal(o->batch_options[0].num_batch_threads, api.num_batch_threads);
    assert_int_equal(o->batch_options[0].max_enqueued_batches, api.max_enqueued_batches);
    assert_int_equal(o->batch_options[0].batch_timeout_micros, api.batch_timeout_micros);
    assert_int_equal(api.max_enqueued_batches, 10); /* TensorFlow's */
    free(o);
    sm_manifest *m = malloc(sizeof *m);
    char err[256];
    assert_true(sm_manifest_parse("format_version: 1\nfunction { name: \"f\" batch { "
                                  "max_batch_size: 8 } }\ncomplete: true\n",
                                  "m", m, err, sizeof err));
    int allowed[BT_MAX_BATCH_SIZES];
    ag_batch_options from_record;
    sm_batch_options(&m->functions[0].batch, &from_record, allowed);
    assert_int_equal(from_record.num_batch_threads, api.num_batch_threads);
    assert_int_equal(from_record.max_enqueued_batches, api.max_enqueued_batches);
    assert_int_equal(from_record.max_batch_size, 8);
    free(m);
}

/* -------------------------------------------------------------- the docs */

static char *read_doc(const char *name)
{
    /* the source tree's root: TEST_TPU_SPEC is its backend/tpu/v5e.textproto */
    char path[1024];
    snprintf(path, sizeof path, "%s", TEST_TPU_SPEC);
    char *slash = strstr(path, "backend/tpu/");
    assert_non_null(slash);
    snprintf(slash, sizeof path - (size_t)(slash - path), "docs/%s", name);
    char err[256];
    char *text = tp_read_file(path, "the doc", err, sizeof err);
    if (!text)
        fail_msg("%s", err);
    return text;
}

/* Each message's reference table in docs/converter-options.md is
 * exactly the one its table makes (on a difference, the table to paste
 * is printed). */
static void test_converter_docs_are_the_tables(void **state)
{
    (void)state;
    const tp_message *messages[] = {&cv_options_message, &cv_tpu_function_message,
                                    &cv_batch_message, &cv_batch_target_message,
                                    &cv_bf16_message, &cv_sharding_message,
                                    &cv_external_message, &cv_quantization_message,
                                    &cv_dataset_entry_message, &cv_dataset_file_message,
                                    &cv_calibration_message,
                                    &cv_calibration_parameters_message};
    char *doc = read_doc("converter-options.md");
    bool ok = true;
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
        char *table = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&table, &len);
        ot_markdown(messages[i], f);
        fclose(f);
        if (!strstr(doc, table)) {
            printf("docs/converter-options.md lacks the table of %s:\n%s\n",
                          messages[i]->name, table);
            ok = false;
        }
        free(table);
    }
    free(doc);
    assert_true(ok);
}

/* docs/batching.md's table of ag_batch_options names every row. */
static void test_batching_doc_names_every_option(void **state)
{
    (void)state;
    char *doc = read_doc("batching.md");
    for (int i = 0; i < cv_batch_message.n_fields; i++) {
        const tp_field *f = &cv_batch_message.fields[i];
        char cell[80];
        snprintf(cell, sizeof cell, "| `%s`", f->name);
        if (f->type != TP_MESSAGE && !strstr(doc, cell))
            fail_msg("docs/batching.md has no row for %s", f->name);
    }
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_from_the_table),
        cmocka_unit_test(test_required_and_bounds),
        cmocka_unit_test(test_printers),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_batch_bounds_are_one),
        cmocka_unit_test(test_batch_defaults_are_one),
        cmocka_unit_test(test_converter_docs_are_the_tables),
        cmocka_unit_test(test_batching_doc_names_every_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
