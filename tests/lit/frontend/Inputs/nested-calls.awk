# An AG_FUNCTION returning n nested calls of ag_neg (line 4).
BEGIN {
    printf "#include <ag.h>\nAG_FUNCTION ag_tensor f(ag_tensor x)\n{\n    return "
    for (i = 0; i < n; i++)
        printf "ag_neg("
    printf "x"
    for (i = 0; i < n; i++)
        printf ")"
    printf ";\n}\n"
}
