/*
 * tool_diag.h - how agc-opt, agc-model and agc-convert report errors, in
 * the form of clang's driver (and of agc, frontend/diag.c):
 *
 *   TOOL: error: MESSAGE           about the command line or a file the
 *                                  user named (the message names it)
 *   FILE:LINE: error: MESSAGE      a library error at the user's line
 *
 * Never a file of agc's own: the tools are built with AG_INSIDE_AGC
 * (runtime/include/ag.h), so their calls into the library carry no
 * location, and what the library reports names the user's files.
 */
#ifndef AG_TOOLS_TOOL_DIAG_H_
#define AG_TOOLS_TOOL_DIAG_H_

#include <stdbool.h>

/* The tool's name, which its messages open with. */
void tool_set_name(const char *name);
const char *tool_name(void);

/* "TOOL: error: MESSAGE\n" on stderr. */
void tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The library's last error (ag_last_error), in the form above; false if
 * there was none. */
bool tool_report_last_error(void);

#endif
