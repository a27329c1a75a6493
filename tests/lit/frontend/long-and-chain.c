// A condition of 20,000 staged terms joined by && converts, each term in a
// staged if of its own, in time linear in the chain's length. It used to
// take quadratic time twice over (every construct's name was looked up
// among all the others, and every && searched its whole left operand for
// ag_bool again) and then crashed: the chain is a tree 20,000 deep, which
// overflowed the stack libclang parses on (clang itself crashes on it).
// It takes about 6 s of CPU; the timeout, far above it so that a loaded
// machine does not fail it, still stops the quadratic kind (minutes).
// RUN: awk -f %S/Inputs/and-chain.awk -v n=20000 > %t.c
// RUN: timeout 300 %agc %t.c -o %t.ag.c
// RUN: grep -c 'ag_if_at' %t.ag.c | FileCheck %s --check-prefix=COUNT
// RUN: FileCheck %s < %t.ag.c
// COUNT: {{^}}20000{{$}}
// CHECK: f__and_4_19999
