/* second_optimizer: the tf.function guide's pitfall. A training step
 * traced with one optimizer made that optimizer's slot variables on its
 * first call; called with a second optimizer it traces again, and the
 * second optimizer would make new slots there: the guide's error
 * ("only supports singleton variables created on the first call"). The
 * eager build, which has no traces, trains with both
 * (second_optimizer.eager.expected); train_step.c shows the fix. */
#include "e2e.h"

AG_FUNCTION void train_step(ag_variable w, ag_tensor x, ag_optimizer opt)
{
    ag_tensor g = ag_mul(ag_sub(ag_variable_read(w), x), 2.0);
    ag_optimizer_apply(opt, 1, &g, &w);
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_variable w = ag_variable_new(ag_zeros(AG_F32, AG_SHAPE(2)));
    ag_tensor x = ag_ones(AG_F32, AG_SHAPE(2));
    ag_optimizer first = ag_optimizer_sgd(0.25, 0.5, false);
    ag_optimizer second = ag_optimizer_adam_default(0.1);
    train_step(w, x, first);
    e2e_print_error("with the first optimizer");
    train_step(w, x, second);
    e2e_print_error("with the second optimizer");
    ag_optimizer_free(first);
    ag_optimizer_free(second);
    ag_shutdown();
    return 0;
}
