/* read_file: a VFS tool that reads a text file of the workspace through
 * the host (fs.read) and answers with its lines, numbered as `cat -n`
 * numbers them.
 *
 * Arguments:
 *   path    the file, relative to the workspace root (required)
 *   offset  the first line to show, from 1 (default 1)
 *   limit   how many lines to show at most (default 2000)
 *
 * The result is one text block: each line as "%6u<TAB>line" (its newline
 * kept, carriage returns too), and when lines are left out a last line
 * "(lines A-B of N; the next read starts at offset B+1)". An empty file is
 * "(empty file)". Errors: the host's (not found, denied: a sensitive path
 * such as .env), a file that holds NUL bytes (binary), an offset past the
 * end, and bad arguments. */
#include <inttypes.h>
#include <string.h>

#include "tool-util.h"

#define DEFAULT_LIMIT 2000
#define MAX_LINES 10000000 /* more than a 10 MB file can hold */

int main(void)
{
    static const char *const known[] = {"path", "offset", "limit", NULL};
    json_t *args;
    jpt_vfs_tool *t = vt_connect("read_file", known, &args);
    char *path = vt_normal_path(t, "path", vt_arg_string(t, args, "path", true, true));
    uint64_t offset = vt_arg_uint(t, args, "offset", 1, 1, MAX_LINES);
    uint64_t limit = vt_arg_uint(t, args, "limit", DEFAULT_LIMIT, 1, MAX_LINES);
    char *data = NULL;
    size_t len = 0;

    if (jpt_vfs_tool_read(t, path, &data, &len) != JPT_OK)
        vt_fail_host(t);
    if (memchr(data, '\0', len) != NULL)
        vt_fail(t, "'%s' is not a text file: it holds NUL bytes (%zu bytes in all)", path, len);
    if (len == 0) {
        if (offset > 1)
            vt_fail(t, "offset %" PRIu64 " is past the end of '%s', which is empty", offset,
                    path);
        vt_done_text(t, "(empty file)");
    }

    uint64_t total = 0;
    for (const char *p = data; p < data + len; total++) {
        const char *nl = memchr(p, '\n', (size_t)(data + len - p));
        p = nl != NULL ? nl + 1 : data + len;
    }
    if (offset > total)
        vt_fail(t, "offset %" PRIu64 " is past the end of '%s', which has %" PRIu64 " line%s",
                offset, path, total, total == 1 ? "" : "s");

    vt_text out = {0};
    uint64_t line = 1, last = offset + limit - 1 < total ? offset + limit - 1 : total;
    for (const char *p = data; p < data + len && line <= last; line++) {
        const char *nl = memchr(p, '\n', (size_t)(data + len - p));
        const char *end = nl != NULL ? nl + 1 : data + len;
        if (line >= offset) {
            vt_printf(&out, "%6" PRIu64 "\t", line);
            vt_append(&out, p, (size_t)(end - p));
        }
        p = end;
    }
    if (offset > 1 || last < total) {
        if (out.p[out.len - 1] != '\n')
            vt_append(&out, "\n", 1);
        vt_printf(&out, "(lines %" PRIu64 "-%" PRIu64 " of %" PRIu64, offset, last, total);
        if (last < total)
            vt_printf(&out, "; the next read starts at offset %" PRIu64, last + 1);
        vt_append(&out, ")", 1);
    }
    /* The text result replaces invalid UTF-8 with U+FFFD (vfs_tool.h). */
    vt_done_text(t, vt_str(&out));
}
