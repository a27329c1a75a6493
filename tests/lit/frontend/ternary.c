// A ?: with a staged condition is a staged if assigning a temporary, which
// replaces it in the statement. A ?: with a C condition stays C.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor a, ag_tensor b, int c)
{
    ag_tensor m = ag_add(ag_bool(ag_greater(a, b)) ? a : b, 1);
    return c ? m : ag_neg(m);
}

// CHECK-LABEL: static void f__cond_9_then(void *ag__state)
// CHECK:     ag__cond_9 = a;
// CHECK-LABEL: static void f__cond_9_else(void *ag__state)
// CHECK:     ag__cond_9 = b;
// CHECK-LABEL: static ag_tensor f__staged(ag_tensor a, ag_tensor b, int c)
// CHECK:     ag_tensor ag__cond_9 = {0, 0};
// CHECK:         static const char *const ag__s_cond_9_names[] = {"<?: value>"};
// CHECK:         ag_if_at((ag_loc){"{{.*}}ternary.c", 9}, ag_greater(a, b), 1, {{.*}}, f__cond_9_then, f__cond_9_else,
// CHECK:     ag_tensor m = ag_add(ag__cond_9, 1);
// CHECK-NEXT:     return c ? m : ag_neg(m);
