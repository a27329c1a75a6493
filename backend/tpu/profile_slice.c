/*
 * profile_slice.c - the profile's part for a call on several chips
 * (tpu_profile_print_slice): a row per chip with its busy units and HBM
 * bytes, then the ICI: each kind of collective's count, bytes and time,
 * and the share of the call spent waiting on the links (cycles when only
 * a link worked).
 *
 * Every chip runs the same program on an equal share (partition.h), so
 * the chips' rows are the same figures: they are printed so that a
 * reader sees the slice whole, and so that an uneven split, if one ever
 * comes, has its place.
 */
#include "program.h"

#include "collective.h"
#include "words.h"

static void chip_rows(const tpu_profile *prof, FILE *out)
{
    fprintf(out, "  slice %dx%d: %d chips, each running the same program on its share\n",
            prof->mesh_x, prof->mesh_y, prof->chips);
    fprintf(out, "  chip  (x,y)      mxu      vpu      xlu  dma.hbm    ici.x    ici.y  "
                 "hbm bytes\n");
    for (int c = 0; c < prof->chips; c++)
        fprintf(out, "  %4d  (%d,%d) %8lld %8lld %8lld %8lld %8lld %8lld  %lld\n", c,
                c % prof->mesh_x, c / prof->mesh_x, (long long)prof->busy[TPU_UNIT_MXU],
                (long long)prof->busy[TPU_UNIT_VPU], (long long)prof->busy[TPU_UNIT_XLU],
                (long long)prof->busy[TPU_UNIT_HBM], (long long)prof->busy[TPU_UNIT_ICI_X],
                (long long)prof->busy[TPU_UNIT_ICI_Y], (long long)prof->hbm_bytes);
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
