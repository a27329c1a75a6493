/*
 * bench_mlp.h - the MLP 784-512-512-10 that bench_bf16 and bench_quant
 * compile, as agc would stage it (its descriptor and trace by hand, so
 * that the benchmarks build without agc), and DESC, which makes such a
 * descriptor.
 */
#ifndef BENCH_MLP_H
#define BENCH_MLP_H

#include <ag.h>

#define DESC(fname, np, names, kinds, nout, trampoline)                                   \
    static const ag_function_desc fname##_desc = {#fname, __FILE__, __LINE__, np, names,  \
                                                  kinds, NULL, NULL, nout, trampoline, 0}

enum { MLP_B = 64, MLP_IN = 784, MLP_H = 512, MLP_OUT = 10 };

static const ag_arg_kind K_T7[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR,
                                   AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR};
static const char *const N_MLP[] = {"x", "w1", "b1", "w2", "b2", "w3", "b3"};

/*   AG_FUNCTION ag_tensor mlp(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2,
 *                             ag_tensor b2, ag_tensor w3, ag_tensor b3) {
 *       ag_tensor h1 = ag_relu(ag_add(ag_matmul(x, w1), b1));
 *       ag_tensor h2 = ag_relu(ag_add(ag_matmul(h1, w2), b2));
 *       return ag_softmax(ag_add(ag_matmul(h2, w3), b3), -1);
 *   }                                                                  */
static void mlp_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor h1 = ag_relu(ag_add(ag_matmul(a[0].tensor, a[1].tensor), a[2].tensor));
    ag_tensor h2 = ag_relu(ag_add(ag_matmul(h1, a[3].tensor), a[4].tensor));
    o[0] = ag_softmax(ag_add(ag_matmul(h2, a[5].tensor), a[6].tensor), -1);
}
DESC(mlp, 7, N_MLP, K_T7, 1, mlp_trace);

#endif
