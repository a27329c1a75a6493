// What libclang must not read is refused however the directive names it:
// an #embed (even with a limit), an #include of a macro (#define or -D)
// naming a device or a FIFO, and an #include of a FIFO in the directory
// of a source named without one. Each used to block in open() or read
// without end. An #embed in a group the preprocessor skips is fine.
// RUN: rm -rf %t && mkdir -p %t && mkfifo %t/pipe.h && cp %s %t/in.c
// RUN: not sh -c '%memory-limit exec timeout 20 %agc -DEMBED %s -o %t/out.c' 2>&1 | FileCheck %s --check-prefix=EMBED
// RUN: not sh -c '%memory-limit exec timeout 20 %agc -DMACRO %s -o %t/out.c' 2>&1 | FileCheck %s --check-prefix=MACRO
// RUN: not sh -c '%memory-limit exec timeout 20 %agc -DFLAG "-DNAME=\"%t/pipe.h\"" %s -o %t/out.c' 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: cd %t && not sh -c '%memory-limit exec timeout 20 %agc -DHERE in.c -o out.c' 2>&1 | FileCheck %s --check-prefix=HERE
// RUN: %agc %s -o %t/out.c
#include <ag.h>

#define ZERO "/dev/zero"
#define ZERO_AGAIN ZERO

#if defined(EMBED)
static const char zeros[] = {
#embed "/dev/zero" limit(10)
};
#elif defined(MACRO)
#include ZERO_AGAIN
#elif defined(FLAG)
#include NAME
#elif defined(HERE)
#include "pipe.h"
#endif

#if 0
static const char skipped[] = {
#embed "/dev/urandom"
};
#endif

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return x;
}

// EMBED: diag-include-not-file.c:19:8: error: agc does not read '/dev/zero': it is not a regular file
// EMBED-NEXT: {{^}}   19 | #embed "/dev/zero" limit(10)
// EMBED-NEXT: {{^}}      |        ^
// EMBED: 1 error generated.
// MACRO: diag-include-not-file.c:22:10: error: agc does not read '/dev/zero': it is not a regular file
// MACRO-NEXT: {{^}}   22 | #include ZERO_AGAIN
// MACRO: 1 error generated.
// FLAG: diag-include-not-file.c:24:10: error: agc does not read '{{.*}}pipe.h': it is not a regular file
// FLAG-NEXT: {{^}}   24 | #include NAME
// HERE: in.c:26:10: error: agc does not read '{{.*}}pipe.h': it is not a regular file
// HERE-NEXT: {{^}}   26 | #include "pipe.h"
