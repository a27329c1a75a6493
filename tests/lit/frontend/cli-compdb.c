// -p BUILD_DIR: the input's flags come from BUILD_DIR/compile_commands.json.
// Only the flags that matter for parsing are kept (-D, -I made absolute
// against the entry's directory, -std=, -include); -W, -O, -c, -o and the
// dependency flags are dropped (with -Werror kept, the unused variable
// below would stop agc). Flags on agc's command line add to them.
//
// RUN: rm -rf %t && mkdir -p %t/build %t/inc %t/src %t/empty %t/bad
// RUN: echo '#define FROM_HEADER 4' > %t/inc/compdb.h
// RUN: echo '#define FORCED 1' > %t/build/forced.h
// RUN: cp %s %t/src/main.c && cp %s %t/src/other.c
// RUN: printf '[{"directory": "%t/build", "command": "/usr/bin/cc -DFROM_DB=3 -I../inc -include forced.h -std=c11 -Wall -Werror -O2 -MD -MF main.d -o main.o -c ../src/main.c", "file": "../src/main.c"}]\n' > %t/build/compile_commands.json
// RUN: printf '[{"directory": "%t", "arguments": ["cc", "-DFROM_DB=3", "-DMSG=\\"two words\\"", "-I", "inc", "-include", "build/forced.h", "-c", "src/main.c"], "file": "src/main.c"}]\n' > %t/compile_commands.json
// RUN: echo 'not json' > %t/bad/compile_commands.json
//
// RUN: %agc -p %t/build %t/src/main.c -o - | %nochecks | FileCheck %s
// RUN: %agc -p=%t/build/ %t/src/main.c -o - | %nochecks | FileCheck %s
// RUN: cd %t/src && %agc -p ../build main.c -o - | %nochecks | FileCheck %s
// RUN: %agc -p %t %t/src/main.c -o - | %nochecks | FileCheck %s
// RUN: %agc -p %t/build %t/src/main.c -DEXTRA -o - | %nochecks | FileCheck %s --check-prefix=EXTRACHECK
//
// RUN: not %agc -p %t/nowhere %t/src/main.c -o %t/out.c 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: not %agc -p %t/empty %t/src/main.c -o %t/out.c 2>&1 | FileCheck %s --check-prefix=NODB
// RUN: not %agc -p %t/bad %t/src/main.c -o %t/out.c 2>&1 | FileCheck %s --check-prefix=BADDB
// RUN: not %agc -p %t/build %t/src/other.c -o %t/out.c 2>&1 | FileCheck %s --check-prefix=NOTIN
// RUN: %agc %t/src/main.c -p 2>&1; test $? -eq 2
// RUN: test ! -e %t/out.c
#include <ag.h>
#include "compdb.h"

#if FROM_DB != 3 || FROM_HEADER != 4 || !FORCED
#error "the flags of compile_commands.json did not reach libclang"
#endif

AG_FUNCTION ag_tensor scale(ag_tensor x)
{
    int unused;
    if (ag_bool(ag_greater(x, 0)))
        x = ag_mul(x, FROM_DB + FROM_HEADER);
    return x;
}

#ifdef EXTRA
AG_FUNCTION ag_tensor extra(ag_tensor x)
{
    return ag_neg(x);
}
#endif

// CHECK: ag_tensor scale(ag_tensor x);
// CHECK: x = ag_mul(x, FROM_DB + FROM_HEADER);
// CHECK: ag_if_at(
// CHECK-NOT: extra__desc
// EXTRACHECK: static const ag_function_desc extra__desc
// NODIR: agc: error: -p {{.*}}nowhere: no such build directory
// NODB: agc: error: -p {{.*}}empty: no compilation database there ('{{.*}}empty/compile_commands.json' does not exist; CMake writes it with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
// BADDB: agc: error: cannot load the compilation database '{{.*}}bad/compile_commands.json': {{.+}}
// NOTIN: agc: error: '{{.*}}other.c' is not in the compilation database '{{.*}}build/compile_commands.json' (1 entry)
