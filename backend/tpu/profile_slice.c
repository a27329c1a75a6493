/*
 * profile_slice.c - the profile's part for a call on several chips
 * (tpu_profile_print_slice): a row per chip with its busy units and HBM
 * bytes, then the ICI: each kind of collective's count, bytes and time,
 * and the share of the call spent waiting on the links (cycles when only
 * a link worked).
 *
 * When every split is even, every chip runs the same program and the
 * rows are the same figures (printed so that a reader sees the slice
 * whole). When a dimension splits unevenly (partition.h), the chips run
 * programs on shares that differ by a unit of rows or columns: each row
 * is its own chip's, with the cycle its call ended, and the profile's
 * units above are the slowest chip's, which a line names.
 */
#include "program.h"

#include "collective.h"
#include "words.h"

static void chip_rows(const tpu_profile *prof, FILE *out)
{
    if (prof->programs > 1)
        fprintf(out, "  slice %dx%d: %d chips, running %d programs on shares that differ by a "
                     "unit; the units above are chip %d's, the slowest\n",
                prof->mesh_x, prof->mesh_y, prof->chips, prof->programs, prof->slowest);
    else
        fprintf(out, "  slice %dx%d: %d chips, each running the same program on its share\n",
                prof->mesh_x, prof->mesh_y, prof->chips);
    fprintf(out, "  chip  (x,y)      mxu      vpu      xlu  dma.hbm    ici.x    ici.y  "
                 "hbm bytes%s\n", prof->programs > 1 ? "  cycles" : "");
    for (int c = 0; c < prof->chips && c < TPU_MAX_CHIPS; c++) {
        const tpu_chip_figures *f = &prof->chip[c];
        fprintf(out, "  %4d  (%d,%d) %8lld %8lld %8lld %8lld %8lld %8lld  %lld", c,
                c % prof->mesh_x, c / prof->mesh_x, (long long)f->mxu, (long long)f->vpu,
                (long long)f->xlu, (long long)f->dma_hbm, (long long)f->ici_x,
                (long long)f->ici_y, (long long)f->hbm_bytes);
        if (prof->programs > 1)
            fprintf(out, "  %lld", (long long)f->cycles);
        fputc('\n', out);
    }
}

void tpu_profile_print_slice(const tpu_profile *prof, FILE *out)
{
    chip_rows(prof, out);
    double hz = prof->seconds > 0 ? (double)prof->cycles / prof->seconds : 1;
    int shown = 0;
    fputs("  ici:", out);
    for (int k = 0; k < 3; k++) {
        if (!prof->coll_count[k])
            continue;
        fprintf(out, "%s %lld %s, %lld bytes, %.3f us", shown++ ? ";" : "",
                (long long)prof->coll_count[k], tpu_coll_name((tpu_collective)k),
                (long long)prof->coll_bytes[k], (double)prof->coll_cycles[k] / hz * 1e6);
    }
    if (!shown)
        fputs(" no collectives", out);
    int64_t waiting = prof->share[TPU_UNIT_ICI_X] + prof->share[TPU_UNIT_ICI_Y];
    fprintf(out, "\n  waiting on links %.1f%% of the call (%lld %s only a link worked)\n",
            prof->cycles ? 100.0 * (double)waiting / (double)prof->cycles : 0.0,
            (long long)waiting, sw_plural(waiting, "cycle", "cycles"));
}
