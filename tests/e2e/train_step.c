/* train_step: the tf.function guide's training step, with the optimizer a
 * parameter of the AG_FUNCTION (keyed by identity, like a Python object).
 * The gradient of sum((w - x)^2) is written by hand, 2 (w - x), so no
 * tape is needed; 20 steps of Adam trace once and give the eager build's
 * weights. The guide's fix for a second optimizer, a function per
 * optimizer, runs SGD with Nesterov momentum through its own function
 * (second_optimizer.c shows the error without it). */
#include "e2e.h"

static void step(ag_variable w, ag_tensor x, ag_optimizer opt)
{
    ag_tensor g = ag_mul(ag_sub(ag_variable_read(w), x), 2.0);
    ag_optimizer_apply(opt, 1, &g, &w);
}

AG_FUNCTION void train_step(ag_variable w, ag_tensor x, ag_optimizer opt)
{
    step(w, x, opt);
}

/* the same step, for the second optimizer */
AG_FUNCTION void train_step_sgd(ag_variable w, ag_tensor x, ag_optimizer opt)
{
    step(w, x, opt);
}

static void train(const char *what, ag_optimizer opt,
                  void (*fn)(ag_variable, ag_tensor, ag_optimizer))
{
    ag_variable w = ag_variable_new(ag_from_data(AG_F32, AG_SHAPE(2), ((const float[]){0.5f, -1.0f})));
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2), ((const float[]){2.0f, 1.0f}));
    for (int i = 0; i < 20; i++)
        fn(w, x, opt);
    ag_print(what, ag_variable_read(w));
    ag_free(x);
    ag_variable_free(w);
}

int main(void)
{
    ag_optimizer adam = ag_optimizer_adam_default(0.1);
    ag_optimizer sgd = ag_optimizer_sgd(0.05, 0.9, true);
    train("adam, 20 steps:", adam, train_step);
    train("sgd nesterov, 20 steps:", sgd, train_step_sgd);
    printf("traces of train_step: %s\n",
           ag_function_trace_count("train_step") <= 1 ? "at most one" : "more");
    ag_optimizer_free(adam);
    ag_optimizer_free(sgd);
    ag_shutdown();
    return 0;
}
