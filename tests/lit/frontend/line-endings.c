// Lines may end with \n, \r\n or a lone \r, as for clang and cc: agc's
// line numbers (diagnostics, #line) agree with theirs, and its output of a
// file with old Mac line ends compiles (fuzzing found a buffer overflow in
// the caret line of a diagnostic on such a file).
// RUN: printf '#include <ag.h>\r\rAG_FUNCTION ag_tensor f(ag_tensor x)\r{\r    if (ag_bool(ag_greater(x, 0))) // c\r        x = ag_neg(x);\r    return x;\r}\r' > %t.cr.c
// RUN: %agc %t.cr.c -o %t.cr.ag.c && %cc %t.cr.ag.c
// RUN: tr '\r' '\n' < %t.cr.ag.c | FileCheck %s --check-prefix=CR
// RUN: printf '#include <ag.h>\r\nAG_FUNCTION ag_tensor f(ag_tensor x)\r\n{\r\n    while (ag_bool(ag_greater(x, 0)))\r\n        x = ag_sub(x, 1);\r\n    return x;\r\n}\r\n' > %t.crlf.c
// RUN: %agc %t.crlf.c -o %t.crlf.ag.c && %cc %t.crlf.ag.c
// RUN: tr -d '\r' < %t.crlf.ag.c | FileCheck %s --check-prefix=CRLF
// RUN: printf 'int a;\rint b = "x;\r' > %t.bad.c
// RUN: not %agc %t.bad.c -o %t.bad.ag.c 2>&1 | FileCheck %s --check-prefix=BAD

// CR: #line 6 "{{.*}}line-endings.c.tmp.cr.c"
// CR-NEXT: x = ag_neg(x);
// CR: ag_if_at((ag_loc){"{{.*}}.cr.c", 5}
// CRLF: #line 5 "{{.*}}line-endings.c.tmp.crlf.c"
// CRLF-NEXT: x = ag_sub(x, 1);
// BAD: .bad.c:2:9: error: expected expression
// BAD-NEXT: 2 | int b = "x;
// BAD-NEXT: |         ^
