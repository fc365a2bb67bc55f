/* grep_files: a VFS tool that searches the workspace's files through the
 * host's fs.grep (pcre2, run by the host in its own loop), and answers
 * the way `rg --no-heading -n` prints.
 *
 * Arguments:
 *   pattern           a regular expression (pcre2 syntax), required
 *   paths             files or directories to search (default: the whole
 *                     workspace)
 *   extensions        only files ending in one of these ("c" or ".c")
 *   context           lines shown before and after each match, 0 to 100
 *                     (default 0)
 *   case_insensitive  boolean (default false)
 *   fixed_strings     boolean: the pattern is a plain string (default false)
 *   max_matches       the most matching lines returned, 1 to 100000
 *                     (default: the host's cap, 1000)
 *
 * The result is one text block: a matching line as "path:N:content", a
 * context line as "path-N-content", "--" between groups of lines that are
 * not adjacent, then a summary ("3 matching lines in 2 files", saying so
 * when the host stopped at max_matches, and naming the lines the host
 * skipped because the pattern ran past pcre2's limits on them). No match
 * is not an error: "No matches for …". The host skips binary files,
 * sensitive paths (.env, …) and .git/. Errors: the host's (a pattern that does not compile, a path
 * of `paths` that does not exist), and bad arguments. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tool-util.h"

int main(void)
{
    static const char *const known[] = {"pattern", "paths", "extensions", "context",
                                        "case_insensitive", "fixed_strings", "max_matches",
                                        NULL};
    json_t *args;
    jpt_vfs_tool *t = vt_connect("grep_files", known, &args);
    jpt_vfs_grep_query q = {.size = sizeof(q)};
    char *result = NULL;

    q.pattern = vt_arg_string(t, args, "pattern", true, true);
    const char **paths = vt_arg_strings(t, args, "paths", &q.npaths);
    for (size_t i = 0; i < q.npaths; i++)
        paths[i] = vt_normal_path(t, "paths", paths[i]); /* the host takes no "a//b" */
    q.paths = paths;
    q.extensions = vt_arg_strings(t, args, "extensions", &q.nextensions);
    q.context = (unsigned)vt_arg_uint(t, args, "context", 0, 0, 100);
    q.case_insensitive = vt_arg_bool(t, args, "case_insensitive", false);
    q.fixed_strings = vt_arg_bool(t, args, "fixed_strings", false);
    q.max_matches = vt_arg_uint(t, args, "max_matches", 0, 1, 100000);
    if (jpt_vfs_tool_grep(t, &q, &result) != JPT_OK)
        vt_fail_host(t);

    json_t *r = json_loads(result, 0, NULL), *file, *line;
    if (!json_is_array(json_object_get(r, "matches")))
        vt_fail(t, "the host's fs.grep answer has no \"matches\" array");
    vt_text out = {0};
    size_t i, k, files = 0, matching = 0;
    json_array_foreach(json_object_get(r, "matches"), i, file) {
        const char *path = json_string_value(json_object_get(file, "path"));
        json_int_t previous = -1;
        bool counted = false;
        json_array_foreach(json_object_get(file, "lines"), k, line) {
            json_int_t number = json_integer_value(json_object_get(line, "line_number"));
            const char *content = json_string_value(json_object_get(line, "content"));
            bool match = json_is_true(json_object_get(line, "is_match"));
            /* A gap, within a file or between files, when context is shown
             * (as rg separates its groups). */
            if (q.context > 0 && out.len > 0 && number != previous + 1)
                vt_append(&out, "--\n", 3);
            vt_printf(&out, "%s%c%" JSON_INTEGER_FORMAT "%c%s\n", path != NULL ? path : "?",
                      match ? ':' : '-', number, match ? ':' : '-',
                      content != NULL ? content : "");
            previous = number;
            if (match) {
                matching++;
                counted = true;
            }
        }
        files += counted;
    }
    vt_text skipped = {0};
    json_int_t nskipped = json_integer_value(json_object_get(r, "skipped_count"));
    if (nskipped > 0) {
        /* The model should know the answer may be incomplete, and where. */
        json_t *first = json_array_get(json_object_get(r, "skipped"), 0);
        const char *path = json_string_value(json_object_get(first, "path"));
        vt_printf(&skipped,
                  " (%" JSON_INTEGER_FORMAT " line%s skipped: the pattern ran past the regex "
                  "engine's limits on %s, the first %s:%" JSON_INTEGER_FORMAT ")",
                  nskipped, nskipped == 1 ? "" : "s", nskipped == 1 ? "it" : "them",
                  path != NULL ? path : "?", json_integer_value(json_object_get(first, "line_number")));
    }
    if (matching == 0) {
        vt_text none = {0};
        vt_printf(&none, "No matches for '%s'", q.pattern);
        if (q.npaths > 0) {
            vt_append(&none, " in", 3);
            for (i = 0; i < q.npaths; i++)
                vt_printf(&none, "%s '%s'", i > 0 ? "," : "", q.paths[i]);
        }
        if (skipped.len > 0)
            vt_append(&none, skipped.p, skipped.len);
        vt_append(&none, ".", 1);
        vt_done_text(t, vt_str(&none));
    }
    vt_printf(&out, "\n%zu matching line%s in %zu file%s", matching, matching == 1 ? "" : "s",
              files, files == 1 ? "" : "s");
    if (json_is_true(json_object_get(r, "truncated")))
        vt_printf(&out, " (the search stopped at max_matches: there are more)");
    if (skipped.len > 0)
        vt_append(&out, skipped.p, skipped.len);
    vt_done_text(t, vt_str(&out));
}
