/*
 * options.c - reading the converter's options (converter.md §2) from a
 * string or a file with the tables of options_schema.c, checking them
 * (options_check.c), and printing them back.
 */
#include "options.h"

#include "options_table.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- reading */

bool cv_options_parse(const char *text, const char *source, cv_options *out, char *err,
                      size_t errlen)
{
    if (!source)
        source = "<string>";
    cv_options_init(out);
    return tp_parse(text, source, &cv_options_message, out, err, errlen) &&
           cv_options_check(out, source, err, errlen);
}


bool cv_options_read_file(const char *path, cv_options *out, char *err, size_t errlen)
{
    char *text = tp_read_file(path, "the converter options", err, errlen);
    if (!text) {
        cv_options_init(out);
        return false;
    }
    bool ok = cv_options_parse(text, path, out, err, errlen);
    free(text);
    return ok;
}

/* The canonical text: the table's printer (fields that differ from their
 * defaults, in the table's order). The converted model records its
 * options this way, and cv_options_parse reads them back unchanged. */
void cv_options_print(const cv_options *o, FILE *out)
{
    ot_print(&cv_options_message, o, out);
}
