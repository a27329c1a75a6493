// The descriptor, trace trampoline, registration and wrapper of an
// AG_FUNCTION: parameter kinds from the C types, the signature and alias
// from the annotations, outputs from the return type.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

typedef enum mode { MODE_A, MODE_B } mode;
typedef struct pair {
    ag_tensor first, second;
} pair;

AG_FUNCTION AG_SIGNATURE("f32[?], i32[]") AG_ALIAS("tpu_func")
pair swap(ag_tensor a, ag_tensor b, ag_tensor_array ta, ag_variable v, double scale, mode m,
          bool flag)
{
    (void)ta;
    (void)v;
    (void)scale;
    (void)m;
    (void)flag;
    pair p = {b, a};
    return p;
}

// The annotations are dropped from the prototype and the wrapper.
// CHECK: } pair;
// CHECK-EMPTY:
// CHECK-NEXT: pair swap(ag_tensor a, ag_tensor b, ag_tensor_array ta, ag_variable v, double scale, mode m, bool flag);
// CHECK-LABEL: static pair swap__staged(ag_tensor a, ag_tensor b, ag_tensor_array ta, ag_variable v, double scale, mode m, bool flag)
// CHECK-LABEL: static void swap__trace(const ag_arg *ag__args, ag_tensor *ag__out)
// CHECK-NEXT: {
// CHECK-NEXT:     pair ag__ret = swap__staged(ag__args[0].tensor, ag__args[1].tensor, (ag_tensor_array){ag__args[2].tensor}, ag__args[3].variable, (double)ag__args[4].f, (mode)ag__args[5].i, (bool)ag__args[6].i);
// CHECK-NEXT:     ag__out[0] = ag__ret.first;
// CHECK-NEXT:     ag__out[1] = ag__ret.second;
// CHECK-NEXT: }
// CHECK: static const char *const swap__param_names[] = {"a", "b", "ta", "v", "scale", "m", "flag"};
// CHECK-NEXT: static const ag_arg_kind swap__param_kinds[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR_ARRAY, AG_ARG_VARIABLE, AG_ARG_FLOAT, AG_ARG_INT, AG_ARG_INT};
// CHECK-NEXT: static const ag_function_desc swap__desc = {
// CHECK-NEXT:     .name = "swap",
// CHECK-NEXT:     .file = "{{.*}}descriptor.c",
// CHECK-NEXT:     .line = 13,
// CHECK-NEXT:     .n_params = 7,
// CHECK-NEXT:     .param_names = swap__param_names,
// CHECK-NEXT:     .param_kinds = swap__param_kinds,
// CHECK-NEXT:     .signature = "f32[?], i32[]",
// CHECK-NEXT:     .alias = "tpu_func",
// CHECK-NEXT:     .n_outputs = 2,
// CHECK-NEXT:     .trace = swap__trace,
// CHECK-NEXT:     .flags = 0,
// CHECK-NEXT: };
// CHECK: __attribute__((constructor)) static void swap__register(void)
// CHECK-NEXT: {
// CHECK-NEXT:     ag_function_register(&swap__desc);
// CHECK-NEXT: }
// CHECK: #line 13 "{{.*}}descriptor.c"
// CHECK-NEXT: pair swap(ag_tensor a, ag_tensor b, ag_tensor_array ta, ag_variable v, double scale, mode m, bool flag)
// CHECK-NEXT: #line
// CHECK-NEXT: {
// CHECK-NEXT:     ag_arg ag__args[7] = {
// CHECK-NEXT:         {.kind = AG_ARG_TENSOR, .tensor = a},
// CHECK-NEXT:         {.kind = AG_ARG_TENSOR, .tensor = b},
// CHECK-NEXT:         {.kind = AG_ARG_TENSOR_ARRAY, .tensor = ta.list},
// CHECK-NEXT:         {.kind = AG_ARG_VARIABLE, .variable = v},
// CHECK-NEXT:         {.kind = AG_ARG_FLOAT, .f = scale},
// CHECK-NEXT:         {.kind = AG_ARG_INT, .i = m},
// CHECK-NEXT:         {.kind = AG_ARG_INT, .i = flag},
// CHECK-NEXT:     };
// CHECK-NEXT:     ag_tensor ag__out[2];
// CHECK-NEXT:     ag_function_call_at((ag_loc){"{{.*}}descriptor.c", 13}, &swap__desc, ag__args, ag__out);
// CHECK-NEXT:     pair ag__ret;
// CHECK-NEXT:     ag__ret.first = ag__out[0];
// CHECK-NEXT:     ag__ret.second = ag__out[1];
// CHECK-NEXT:     return ag__ret;
// CHECK-NEXT: }
