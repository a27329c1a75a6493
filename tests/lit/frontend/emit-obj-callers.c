// --emit=obj,header: each function is also compiled as NAME_at, which
// takes the caller's ag_loc first (as ag.h's ops do), and the header makes
// NAME(...) a macro passing AG_HERE, so that a call that does not match
// what was compiled is reported at the caller's line (tests/e2e
// aot_callers runs such calls). ag_loc by value is a pointer and a word
// (two registers on both targets), after the sret pointer when there is one.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %agc --emit=header %s -o %t/model.h && FileCheck --check-prefix=HEADER %s < %t/model.h
// RUN: printf '#include <ag.h>\ntypedef struct triple { ag_tensor a, b, c; } triple;\n#include "%t/model.h"\nag_tensor f(ag_tensor x) { return scale(x, 3); }\ntriple g(ag_tensor x) { return spread(x, 1); }\nag_tensor h(void) { return seven(); }\n' | %cc -x c -
// AGC_NO_CALLER_LINES keeps plain functions, which a file may declare again:
// RUN: printf '#define AGC_NO_CALLER_LINES\n#include <ag.h>\ntypedef struct triple { ag_tensor a, b, c; } triple;\n#include "%t/model.h"\nag_tensor scale(ag_tensor x, int k);\n' | %cc -x c -
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu %s | FileCheck --check-prefix=IR %s
// RUN: %agc --emit=llvm --target-triple aarch64-linux-gnu %s | FileCheck --check-prefix=IR %s
//
// A function named like another's NAME_at would clash with it:
// RUN: printf '#include <ag.h>\nAG_FUNCTION AG_SIGNATURE("f32[2]")\nag_tensor norm(ag_tensor x) { return x; }\nAG_FUNCTION AG_SIGNATURE("f32[2]")\nag_tensor norm_at(ag_tensor x) { return x; }\n' > %t/clash.c
// RUN: not %agc --emit=obj %t/clash.c -o %t/clash.o 2>&1 | FileCheck --check-prefix=CLASH %s
// RUN: %agc --emit=ir --function norm %t/clash.c | FileCheck --check-prefix=CLASH-IR %s
#include <ag.h>

typedef struct triple {
    ag_tensor a, b, c;
} triple;

AG_FUNCTION AG_SIGNATURE("f32[?], k=3")
ag_tensor scale(ag_tensor x, int k) { return ag_mul(x, k); }

AG_FUNCTION AG_SIGNATURE("f32[2], on=1")
struct triple spread(ag_tensor x, bool on)
{
    return (triple){x, on ? ag_neg(x) : x, x};
}

AG_FUNCTION AG_SIGNATURE("")
ag_tensor seven(void) { return ag_scalar_i32(7); }

// HEADER: ag_tensor scale(ag_tensor x, int k);
// HEADER-NEXT: ag_tensor scale_at(ag_loc ag__loc, ag_tensor x, int k);
// HEADER-NEXT: #ifndef AGC_NO_CALLER_LINES
// HEADER-NEXT: #define scale(...) scale_at(AG_HERE, __VA_ARGS__)
// HEADER-NEXT: #endif
// HEADER: struct triple spread(ag_tensor x, bool on);
// HEADER-NEXT: struct triple spread_at(ag_loc ag__loc, ag_tensor x, bool on);
// HEADER: #define spread(...) spread_at(AG_HERE, __VA_ARGS__)
// HEADER: ag_tensor seven(void);
// HEADER-NEXT: ag_tensor seven_at(ag_loc ag__loc);
// HEADER-NEXT: #ifndef AGC_NO_CALLER_LINES
// HEADER-NEXT: #define seven() seven_at(AG_HERE)

// IR-LABEL: define i64 @scale(i64 %x, i32 %k)
// IR: call i1 @ag_aot_call(ptr nonnull @agc_aot_scale,
// IR-LABEL: define i64 @scale_at(ptr %file, i64 %line, i64 %x, i32 %k)
// IR: call i1 @ag_aot_call_at(ptr %file, i64 %line, ptr nonnull @agc_aot_scale,
// IR-LABEL: define void @spread_at(ptr {{.*}}sret([3 x i64]) %0, ptr %file, i64 %line, i64 %x, i1 zeroext %on)
// IR: call i1 @ag_aot_call_at(ptr %file, i64 %line, ptr nonnull @agc_aot_spread,
// IR-LABEL: define i64 @seven_at(ptr %file, i64 %line)
// IR: call i1 @ag_aot_call_at(ptr %file, i64 %line, ptr nonnull @agc_aot_seven,

// CLASH: clash.c:4: error: 'norm_at' clashes with the function 'norm_at' that --emit=obj defines for 'norm' (its callers' locations): rename one of them
// CLASH-IR: func @norm(
