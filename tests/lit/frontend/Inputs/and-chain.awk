# An AG_FUNCTION whose if condition is n staged terms joined by && (line 4).
BEGIN {
    printf "#include <ag.h>\nAG_FUNCTION ag_tensor f(ag_tensor x)\n{\n"
    printf "    if (ag_bool(ag_greater(x, 0))"
    for (i = 1; i < n; i++)
        printf " && ag_bool(ag_greater(x, %d))", i
    printf ")\n        x = ag_neg(x);\n    return x;\n}\n"
}
