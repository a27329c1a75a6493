// An else-if chain: the else function of each if holds the next if.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION void fizz(ag_tensor i)
{
    if (ag_bool(ag_equal(ag_mod(i, 15), 0)))
        ag_print("fizzbuzz");
    else if (ag_bool(ag_equal(ag_mod(i, 3), 0)))
        ag_print("fizz");
    else
        ag_print(i);
}

// Inner constructs are lifted first, so they are defined before use.
// CHECK-LABEL: static void fizz__if_8_then(void *ag__state)
// CHECK-NEXT: {
// CHECK-NEXT:     (void)ag__state;
// CHECK:     ag_print("fizzbuzz");
// CHECK-LABEL: static void fizz__if_10_then(
// CHECK:     ag_print("fizz");
// CHECK-LABEL: static void fizz__if_10_else(
// CHECK:     ag_print(i);
// CHECK-LABEL: static void fizz__if_8_else(
// CHECK:         ag_if_at((ag_loc){"{{.*}}else-if.c", 10}, ag_equal(ag_mod(i, 3), 0), 0, NULL, NULL, fizz__if_10_then, fizz__if_10_else, &ag__s_if_10);
// CHECK-LABEL: static void fizz__staged(ag_tensor i)
// CHECK:         ag_if_at((ag_loc){"{{.*}}else-if.c", 8}, ag_equal(ag_mod(i, 15), 0), 0, NULL, NULL, fizz__if_8_then, fizz__if_8_else, &ag__s_if_8);
// A void function has no outputs.
// CHECK-LABEL: static void fizz__trace(const ag_arg *ag__args, ag_tensor *ag__out)
// CHECK-NEXT: {
// CHECK-NEXT:     (void)ag__out;
// CHECK-NEXT:     fizz__staged(ag__args[0].tensor);
// CHECK:     .n_outputs = 0,
// CHECK:     ag_function_call_at((ag_loc){"{{.*}}else-if.c", 6}, &fizz__desc, ag__args, NULL);
