// --emit=obj,header: an object file whose C functions have the user's
// prototypes (everything else in it is local), and their header.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %agc --emit=obj,header %s -o %t/model.o
// RUN: nm %t/model.o | FileCheck --check-prefix=NM %s
// RUN: FileCheck --check-prefix=HEADER %s < %t/model.h
// The header compiles once the struct it returns is declared:
// RUN: printf '#include <ag.h>\ntypedef struct moments { ag_tensor mean, var; } moments;\n#include "%t/model.h"\n' | %cc -x c -
//
// --emit=header alone writes the header to -o:
// RUN: %agc --emit=header %s -o %t/only.h && FileCheck --check-prefix=HEADER %s < %t/only.h
//
// Cross-compiling: an AArch64 object.
// RUN: %agc --emit=obj --target-triple aarch64-linux-gnu %s -o %t/arm.o
// RUN: readelf -h %t/arm.o | FileCheck --check-prefix=ARM %s
// RUN: %agc --emit=asm --target-triple aarch64-linux-gnu %s | FileCheck --check-prefix=ARMASM %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu haswell %s | FileCheck --check-prefix=X86ASM %s
#include <ag.h>

typedef struct moments {
    ag_tensor mean, var;
} moments;

AG_FUNCTION AG_SIGNATURE("f32[8,4]")
moments stats(ag_tensor x)
{
    ag_tensor m = ag_reduce_mean(x, 0, false);
    ag_tensor d = ag_sub(x, m);
    return (moments){m, ag_reduce_mean(ag_mul(d, d), 0, false)};
}

AG_FUNCTION AG_SIGNATURE("f32[?], k=2, on=1")
ag_tensor scaled(ag_tensor x, long k, bool on)
{
    return on ? ag_mul(x, (float)k) : x;
}

// A function without a signature is not compiled ahead of time.
AG_FUNCTION ag_tensor untyped(ag_tensor x) { return x; }

// NM-NOT: untyped
// NM-DAG: U ag_aot_call
// NM-DAG: T scaled
// NM-DAG: T stats
// NM-DAG: t agc_stats_graph
// NM-NOT: untyped

// HEADER: #ifndef AGC_{{.*}}_H_
// HEADER: #include <ag.h>
// HEADER: compiled for AG_SIGNATURE("f32[8,4]")
// HEADER: moments stats(ag_tensor x);
// HEADER: compiled for AG_SIGNATURE("f32[?], k=2, on=1")
// HEADER: ag_tensor scaled(ag_tensor x, long k, bool on);
// HEADER-NOT: untyped

// ARM: Machine: AArch64
// ARMASM: stats:
// ARMASM: bl ag_aot_call
// X86ASM: stats:
// X86ASM: callq ag_aot_call
