// libclang reads an included file to its end: agc refuses to let it read
// a device, a FIFO or a file over 256 MiB (memory and time are bounded
// here so that a regression fails instead of exhausting them). An
// #include in a group the preprocessor skips is fine.
// RUN: rm -rf %t && mkdir -p %t && mkfifo %t/pipe.h && printf '#include "pipe.h"\n' > %t/via.h
// RUN: not sh -c '%memory-limit exec timeout 20 %agc -DZERO %s -o %t/out.c' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not sh -c '%memory-limit exec timeout 20 %agc -DFIFO -I%t %s -o %t/out.c' 2>&1 | FileCheck %s --check-prefix=FIFO
// RUN: %agc %s -o %t/out.c
#include <ag.h>

#if defined(ZERO)
#include "/dev/zero"
#elif defined(FIFO)
#include <via.h>
#endif

#if 0
#include "/dev/urandom"
#endif

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    return x;
}

// ZERO: diag-include-device.c:12:10: error: agc does not read '/dev/zero': it is not a regular file
// ZERO-NEXT: {{^}}   12 | #include "/dev/zero"
// ZERO-NEXT: {{^}}      |          ^
// ZERO: 1 error generated.
// FIFO: via.h:1:10: error: agc does not read '{{.*}}pipe.h': it is not a regular file
