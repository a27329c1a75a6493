// '::' is not C. clang 17 to 19 never finish parsing it right after a '('
// or after sizeof / alignof (llvm-project issue 195367): fuzzing found agc
// hanging on `ag_scalar_i32(::20)`. agc reports it before libclang parses
// the file (in any preprocessor branch: it looks at the text). Elsewhere,
// as in this file's C++ part and C23 attribute, clang handles it itself.
// RUN: printf '#include <ag.h>\nAG_FUNCTION ag_tensor f(ag_tensor x)\n{\n    return ag_add(x, ag_scalar_i32(::20));\n}\n' > %t.call.c
// RUN: not timeout 60 %agc %t.call.c -o %t.c 2>&1 | FileCheck %s --check-prefix=CALL
// RUN: printf 'int y;\nint g(int);\nint f(void) { return g(1, ::y); }\n' > %t.arg.c
// RUN: not timeout 60 %agc %t.arg.c -o %t.c 2>&1 | FileCheck %s --check-prefix=ARG
// RUN: printf 'int y;\nint f(void) { return (int)sizeof ::y; }\n' > %t.sizeof.c
// RUN: not timeout 60 %agc %t.sizeof.c -o %t.c 2>&1 | FileCheck %s --check-prefix=SIZEOF
// RUN: timeout 60 %agc -std=c2x %s -o %t.c && %cc -std=c2x %t.c
#include <ag.h>

#ifdef __cplusplus
static int global = ::other::value + ag::b;
#endif

[[gnu::unused]] static int unused_but_fine;

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return ag_add(x, 1);
}

// CALL: .call.c:4:36: error: '::' is not C; remove it
// CALL-NEXT: 4 | return ag_add(x, ag_scalar_i32(::20));
// CALL: 1 error generated.
// ARG: .arg.c:3:27: error: '::' is not C; remove it
// SIZEOF: .sizeof.c:2:34: error: '::' is not C; remove it
