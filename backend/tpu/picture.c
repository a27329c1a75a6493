/*
 * picture.c - a timeline as a picture that opens anywhere (program.h's
 * tpu_picture_write): one SVG document, no script, no font or style
 * from the network.
 *
 *   title        which calls, of how many, of which function and device
 *   rows         "calls" (a box per call), then one per unit
 *   boxes        one per instruction, coloured by unit, its name inside
 *                when it fits, and in a tooltip (<title>) its name, value,
 *                user's line, start and length in microseconds
 *   axis         microseconds on the trace's axis (Perfetto's too)
 *   legend       what each colour is
 */
#include "program.h"

#include <math.h>
#include <string.h>

enum { LEFT = 120, WIDTH = 1100, TOP = 48, ROW = 26, BOX = 20, RIGHT = 20 };

static const struct {
    const char *color, *meaning;
} unit_style[TPU_N_QUEUES] = {
    [TPU_UNIT_H2D] = {"#e4572e", "host link in"},
    [TPU_UNIT_D2H] = {"#f28e2b", "host link out"},
    [TPU_UNIT_HBM] = {"#edc948", "HBM <-> VMEM staging"},
    [TPU_UNIT_MXU] = {"#4e79a7", "matrix units"},
    [TPU_UNIT_VPU] = {"#59a14f", "vector unit"},
    [TPU_UNIT_XLU] = {"#b07aa1", "cross-lane unit"},
    [TPU_UNIT_SCALAR] = {"#9c755f", "scalar unit: control flow"},
    [TPU_UNIT_HOST] = {"#ff9da7", "ops on the host"},
    [TPU_UNIT_ICI_X] = {"#76b7b2", "chip links along x"},
    [TPU_UNIT_ICI_Y] = {"#499894", "chip links along y"},
};
static const char *const call_color = "#bab0ac";

typedef struct axis {
    double t0, t1; /* microseconds at the plot's left and right */
} axis;

static double x_of(const axis *a, double us)
{
    double span = a->t1 > a->t0 ? a->t1 - a->t0 : 1;
    return LEFT + (us - a->t0) / span * WIDTH;
}

/* Text for XML: names come from C identifiers and the device spec. */
static void put_escaped(const char *s, FILE *out)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* A box from us to us + len on row `row`, a tooltip, its name when the
 * box is wide enough (7 px a character). */
static void put_box(const axis *a, int row, double us, double len, const char *color,
                    const char *cls, const char *label, const char *tip, FILE *out)
{
    double x = x_of(a, us), w = x_of(a, us + len) - x;
    int y = TOP + row * ROW;
    fprintf(out, "<g class=\"%s\"><rect class=\"box\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
                 "height=\"%d\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>",
            cls, x, y, w < 0.5 ? 0.5 : w, BOX, color);
    put_escaped(tip, out);
    fputs("</title></rect>", out);
    if (w >= 7.0 * (double)strlen(label) + 4) {
        fprintf(out, "<text x=\"%.2f\" y=\"%d\" class=\"in\">", x + 2, y + 14);
        put_escaped(label, out);
        fputs("</text>", out);
    }
    fputs("</g>\n", out);
}

static void put_call(const axis *a, const tpu_picture_call *c, FILE *out)
{
    const tpu_timeline *t = c->t;
    double us = 1e6 / t->clock_hz;
    char label[96], tip[256];
    snprintf(label, sizeof label, "@%s", t->function);
    snprintf(tip, sizeof tip, "call %lld: @%s on %s, %.3f us from %.3f us", c->index,
             t->function, t->device, (double)t->cycles * us, c->offset_us);
    put_box(a, 0, c->offset_us, (double)t->cycles * us, call_color, "call", label, tip, out);
    for (int i = 0; i < t->n; i++) {
        const tpu_event *e = &t->ev[i];
        if (e->program != t->shown)
            continue; /* a slice: the slowest chip's program only */
        char name[80], where[32] = "";
        if (e->value >= 0)
            snprintf(name, sizeof name, "%s %%%d", e->what, e->value);
        else
            snprintf(name, sizeof name, "%s", e->what);
        if (e->line)
            snprintf(where, sizeof where, ", line %d", e->line);
        snprintf(tip, sizeof tip, "%s%s: %.3f us from %.3f us (%s, call %lld)", name, where,
                 (double)e->cycles * us, c->offset_us + (double)e->start * us,
                 tpu_unit_name(e->unit), c->index);
        put_box(a, 1 + (int)e->unit, c->offset_us + (double)e->start * us,
                (double)e->cycles * us, unit_style[e->unit].color, tpu_unit_name(e->unit),
                name, tip, out);
    }
}

/* A round step (1, 2 or 5 times a power of ten) for about 8 ticks. */
static double tick_step(double span)
{
    double raw = span > 0 ? span / 8 : 1, p = pow(10, floor(log10(raw)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void put_axis(const axis *a, int y, FILE *out)
{
    double step = tick_step(a->t1 - a->t0);
    fprintf(out, "<g class=\"axis\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                 "stroke=\"#333\"/>\n", LEFT, y, LEFT + WIDTH, y);
    for (double t = ceil(a->t0 / step) * step; t <= a->t1 + step * 1e-9; t += step) {
        double x = x_of(a, t);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#ccc\"/>"
                     "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                x, TOP - 4, x, y + 4, x, y + 18, t);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">time (us)</text></g>\n",
            LEFT - 8, y + 18);
}

static void put_rows(int units, FILE *out)
{
    for (int r = 0; r <= units; r++)
        fprintf(out, "<text class=\"row\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
                LEFT - 8, TOP + r * ROW + 14,
                r ? tpu_unit_name((tpu_unit)(r - 1)) : "calls");
}

static void put_legend(int units, int y, FILE *out)
{
    fputs("<g class=\"legend\">\n", out);
    int x = LEFT;
    for (int u = -1; u < units; u++) {
        const char *color = u < 0 ? call_color : unit_style[u].color;
        const char *meaning = u < 0 ? "a call" : unit_style[u].meaning;
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                     "<text x=\"%d\" y=\"%d\">", x, y, color, x + 16, y + 10);
        put_escaped(meaning, out);
        fputs("</text>\n", out);
        x += 24 + 7 * (int)strlen(meaning);
        if (x > LEFT + WIDTH - 160) {
            x = LEFT;
            y += 18;
        }
    }
    fputs("</g>\n", out);
}

static void put_title(const tpu_picture_call *calls, int n, long long dropped, FILE *out)
{
    const tpu_timeline *last = calls[n - 1].t;
    fprintf(out, "<text class=\"title\" x=\"%d\" y=\"20\">tpu-model timeline of @", LEFT);
    put_escaped(last->function, out);
    fputs(" on ", out);
    put_escaped(last->device, out);
    if (n == 1)
        fprintf(out, ": call %lld of %lld</text>\n", calls[0].index, calls[0].index);
    else
        fprintf(out, ": calls %lld to %lld of %lld</text>\n", calls[0].index,
                calls[n - 1].index, calls[n - 1].index);
    fprintf(out, "<text x=\"%d\" y=\"36\">", LEFT);
    if (dropped)
        fprintf(out, "the last %d calls; the %lld before them are in the Chrome trace only. "
                     "Hover over a box for its name, line and times.", n, dropped);
    else
        fputs("every call of the Chrome trace. Hover over a box for its name, line and times.",
              out);
    fputs("</text>\n", out);
}

bool tpu_picture_write(const tpu_picture_call *calls, int n, long long dropped, FILE *out)
{
    if (n <= 0)
        return false;
    const tpu_picture_call *last = &calls[n - 1];
    axis a = {calls[0].offset_us,
              last->offset_us + (double)last->t->cycles * 1e6 / last->t->clock_hz};
    int units = TPU_N_UNITS; /* and a slice's links, when a call has them */
    for (int i = 0; i < n; i++)
        units = calls[i].t->chips > 1 ? TPU_N_QUEUES : units;
    int axis_y = TOP + (units + 1) * ROW + 4, height = axis_y + 80;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                 "<style>.title{font-weight:bold;font-size:14px} .in{font-size:11px;"
                 "pointer-events:none} .row{font-weight:bold}</style>\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            LEFT + WIDTH + RIGHT, height, LEFT + WIDTH + RIGHT, height);
    put_title(calls, n, dropped, out);
    put_rows(units, out);
    put_axis(&a, axis_y, out);
    for (int k = 0; k < n; k++)
        put_call(&a, &calls[k], out);
    put_legend(units, axis_y + 32, out);
    fputs("</svg>\n", out);
    return !ferror(out);
}
