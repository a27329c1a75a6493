// -MD writes a Make dependency file like cc -MD: the output as the target,
// the input and every header it includes; -MF names the file, -MT the
// target, -MP adds phony targets, -MMD leaves out system headers. The
// default name is the output's with .d appended (out.ag.c.d), never the
// out.ag.d that cc -MMD writes for out.ag.o.
// RUN: rm -rf %t.dir && mkdir -p %t.dir && echo '#define K 2' > %t.dir/cli_deps.h
// RUN: %agc -I%t.dir -MD %s -o %t.dir/out.ag.c
// RUN: FileCheck %s --check-prefix=MD < %t.dir/out.ag.c.d
// RUN: %agc -I%t.dir -MD -MF %t.dir/custom.d -MT mytarget -MP %s -o %t.dir/out.ag.c
// RUN: FileCheck %s --check-prefix=MF < %t.dir/custom.d
// RUN: %agc -I%t.dir -MMD %s -o %t.dir/out2.ag.c
// RUN: FileCheck %s --check-prefix=MMD < %t.dir/out2.ag.c.d
#include <ag.h>
#include "cli_deps.h"

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return ag_mul(x, K);
}

// MD: {{.*}}out.ag.c: {{.*}}cli-deps.c
// MD: ag.h
// MD: cli_deps.h
// MF: mytarget: {{.*}}cli-deps.c
// MF: cli_deps.h
// MF: {{^.*}}cli_deps.h:
// MMD: out2.ag.c: {{.*}}cli-deps.c
// MMD-NOT: ag.h
// MMD: cli_deps.h
