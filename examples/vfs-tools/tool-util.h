/* What the example VFS tools share: connecting to the host, reading the
 * call's arguments with precise messages, a growing text, and the end of a
 * run (a result or an error notification, then exit). Every file access
 * goes through the SDK (include/jptool/vfs_tool.h); nothing here opens a
 * file. */
#ifndef VFS_TOOLS_TOOL_UTIL_H
#define VFS_TOOLS_TOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <jptool/vfs_tool.h>

/* Connects over stdin/stdout and parses the call's arguments (an object).
 * On failure writes why to stderr and exits 1: there is no host to tell.
 * `known` lists the argument names the tool takes (NULL-terminated); any
 * other ends the run with an error naming it. */
jpt_vfs_tool *vt_connect(const char *program, const char *const *known, json_t **args);

/* Ends the run with an error notification (RFD 009 ToolError, not
 * transient) whose message is the formatted text, and exits 0. */
_Noreturn void vt_fail(jpt_vfs_tool *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends the run with the host's message of the last failed SDK call. */
_Noreturn void vt_fail_host(jpt_vfs_tool *t);

/* Ends the run with a result of plain text, and exits 0. */
_Noreturn void vt_done_text(jpt_vfs_tool *t, const char *text);

/* Ends the run with a result of RFD 058 content blocks (a JSON array; the
 * reference is taken), and exits 0. */
_Noreturn void vt_done_blocks(jpt_vfs_tool *t, json_t *blocks);

/* Arguments. Each ends the run with an error naming the argument when it
 * has the wrong type or is out of range. */

/* A string; NULL when absent and not required. `nonempty`: "" is refused. */
const char *vt_arg_string(jpt_vfs_tool *t, const json_t *args, const char *name, bool required,
                          bool nonempty);
/* A boolean; `dflt` when absent. */
bool vt_arg_bool(jpt_vfs_tool *t, const json_t *args, const char *name, bool dflt);
/* A whole number from `min` to `max`; `dflt` when absent. */
uint64_t vt_arg_uint(jpt_vfs_tool *t, const json_t *args, const char *name, uint64_t dflt,
                     uint64_t min, uint64_t max);
/* An array of non-empty strings, as a NULL-terminated array (free with
 * free(); the strings belong to `args`) and its length in *n; NULL with *n
 * 0 when absent. */
const char **vt_arg_strings(jpt_vfs_tool *t, const json_t *args, const char *name, size_t *n);

/* A path argument in the form the host and git's index both use: "." and
 * empty names dropped, no trailing '/'; "." for the root. Any ".." name is
 * refused (the host refuses it too). Returns a new string (free()). */
char *vt_normal_path(jpt_vfs_tool *t, const char *arg, const char *path);

/* Text that grows; out of memory ends the process (exit 1). */
typedef struct vt_text {
    char *p;
    size_t len, cap;
} vt_text;

void vt_append(vt_text *b, const char *s, size_t n);
void vt_printf(vt_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far ("" when nothing was added); the buffer stays b's. */
const char *vt_str(vt_text *b);
void vt_text_free(vt_text *b);

/* Says "out of memory" on stderr and exits 1. */
_Noreturn void vt_out_of_memory(void);

/* malloc, realloc and strdup that end the process (exit 1) when out of
 * memory. */
void *vt_xmalloc(size_t n);
void *vt_xrealloc(void *p, size_t n);
char *vt_xstrdup(const char *s);

#endif
