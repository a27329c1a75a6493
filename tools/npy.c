/*
 * npy.c - tensors in NumPy's .npy format, for agc-model's inputs and
 * outputs (the format saved_model_cli's users have at hand).
 *
 * A .npy file is a magic string, a version, a header length, a Python
 * dict literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), })
 * and the data in C order. Little-endian f4, f8, i4, i8 and b1 are read
 * and written; bf16 has no NumPy dtype and is written as f4.
 */
#include "npy.h"

#include <stdlib.h>
#include <string.h>

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    const char *descr;
    ag_dtype dtype;
} descrs[] = {
    {"<f4", AG_F32}, {"<f8", AG_F64}, {"<i4", AG_I32}, {"<i8", AG_I64}, {"|b1", AG_BOOL},
    {"|i1", AG_I8},
};

/* The value of 'key' in the header dict, or NULL. */
static const char *dict_value(const char *dict, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(dict, quoted);
    if (!p)
        return NULL;
    p += strlen(quoted);
    while (*p == ' ' || *p == ':')
        p++;
    return p;
}

static bool parse_shape(const char *p, ag_shape *s)
{
    if (*p++ != '(')
        return false;
    s->rank = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            return true;
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || s->rank == AG_MAX_RANK)
            return false;
        s->dims[s->rank++] = d;
        p = end;
    }
}

static bool parse_header(const char *dict, ag_dtype *dt, ag_shape *s, char *err, size_t errlen)
{
    const char *d = dict_value(dict, "descr"), *f = dict_value(dict, "fortran_order"),
               *sh = dict_value(dict, "shape");
    if (!d || !f || !sh || !parse_shape(sh, s)) {
        snprintf(err, errlen, "not a .npy header this reader understands");
        return false;
    }
    if (strncmp(f, "False", 5) != 0) {
        snprintf(err, errlen, "Fortran order is not supported: save it in C order");
        return false;
    }
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (strncmp(d + 1, descrs[i].descr, 3) == 0 && d[0] == '\'' && d[4] == '\'') {
            *dt = descrs[i].dtype;
            return true;
        }
    snprintf(err, errlen, "dtype %.6s is not supported (little-endian f4, f8, i4, i8, b1 are)",
             d);
    return false;
}

ag_tensor npy_read(const char *data, size_t n, char *err, size_t errlen)
{
    ag_tensor none = {0, 0};
    if (n < 10 || memcmp(data, magic, 6) != 0) {
        snprintf(err, errlen, "not a .npy file (no \\x93NUMPY magic)");
        return none;
    }
    int major = (unsigned char)data[6];
    size_t head = major == 1 ? 10 : 12;
    if ((major != 1 && major != 2 && major != 3) || n < head) {
        snprintf(err, errlen, ".npy version %d is not supported", major);
        return none;
    }
    const unsigned char *u = (const unsigned char *)data + 8;
    size_t hlen = major == 1 ? (size_t)(u[0] | u[1] << 8)
                             : (size_t)u[0] | (size_t)u[1] << 8 | (size_t)u[2] << 16 |
                                   (size_t)u[3] << 24;
    if (hlen > n - head) {
        snprintf(err, errlen, "the .npy header runs past the end of the file");
        return none;
    }
    char *dict = malloc(hlen + 1);
    memcpy(dict, data + head, hlen);
    dict[hlen] = '\0';
    ag_dtype dt;
    ag_shape s;
    bool ok = parse_header(dict, &dt, &s, err, errlen);
    free(dict);
    if (!ok)
        return none;
    size_t elem = dt == AG_F32 || dt == AG_I32 ? 4 : dt == AG_BOOL || dt == AG_I8 ? 1 : 8;
    size_t numel = 1;
    for (int i = 0; i < s.rank; i++) {
        if (s.dims[i] && numel > (n / (size_t)s.dims[i]))
            numel = SIZE_MAX; /* more than the file can hold */
        else
            numel *= (size_t)s.dims[i];
    }
    if (numel == SIZE_MAX || numel * elem != n - head - hlen) {
        snprintf(err, errlen, "the .npy data is not the size its shape says (truncated?)");
        return none;
    }
    return ag_from_data_at((ag_loc){0}, dt, s, data + head + hlen);
}

bool npy_write(FILE *out, ag_tensor t)
{
    ag_dtype dt = ag_dtype_of(t);
    ag_shape s = ag_shape_get(t);
    int64_t numel = ag_num_elements(t);
    const char *descr = "<f4";
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
        if (descrs[i].dtype == dt)
            descr = descrs[i].descr;
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       descr);
    for (int i = 0; i < s.rank; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld%s", (long long)s.dims[i],
                        s.rank == 1 || i + 1 < s.rank ? ", " : "");
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    /* magic, version, length, dict padded with spaces to 64 bytes, '\n' */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    unsigned hlen = (unsigned)(len + pad + 1);
    fwrite(magic, 1, 6, out);
    fputc(1, out);
    fputc(0, out);
    fputc((int)(hlen & 0xFF), out);
    fputc((int)(hlen >> 8), out);
    fprintf(out, "%s%*s\n", dict, pad, "");
    for (int64_t i = 0; i < numel; i++) {
        double v = ag_get_f64_at((ag_loc){0}, t, i);
        if (dt == AG_F64) {
            fwrite(&v, 8, 1, out);
        } else if (dt == AG_I32) {
            int32_t x = (int32_t)v;
            fwrite(&x, 4, 1, out);
        } else if (dt == AG_I64) {
            int64_t x = (int64_t)v;
            fwrite(&x, 8, 1, out);
        } else if (dt == AG_BOOL) {
            fputc(v != 0, out);
        } else if (dt == AG_I8) {
            int8_t x = (int8_t)v;
            fwrite(&x, 1, 1, out);
        } else {
            float x = (float)v;
            fwrite(&x, 4, 1, out);
        }
    }
    return !ferror(out);
}
