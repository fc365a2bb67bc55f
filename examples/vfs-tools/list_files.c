/* list_files: a VFS tool that lists a directory of the workspace through
 * the host (fs.list_dir), optionally its whole tree.
 *
 * Arguments:
 *   path         the directory, relative to the workspace root (default ".")
 *   recursive    true: the directories beneath too (default false); a
 *                directory named ".git" is listed but not entered, and
 *                symlinks are not followed
 *   pattern      a glob matched against each entry's name (fnmatch(3): *
 *                ? [...]), e.g. "*.c"; only matching entries are shown,
 *                but every directory is still entered
 *   max_entries  how many entries to show at most (default 1000)
 *
 * The result is one text block: the entries' paths relative to the
 * workspace root (so read_file takes them as they are), one a line, sorted
 * bytewise, a directory ending in '/' and a symlink in '@' (as `ls -F`
 * marks them). A directory beneath `path` that the host refuses to list
 * (a sensitive one such as .ssh/) is skipped, with a line saying so. The
 * requests for each level of the tree are pipelined: sent together, then
 * collected. Errors: the host's for `path` itself (not found, not a
 * directory, denied), and bad arguments. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "tool-util.h"

#define DEFAULT_MAX 1000
#define MAX_MAX 100000
/* Entries gathered before the walk stops: bounds memory on a huge tree. */
#define GATHER_LIMIT 200000

typedef struct list {
    char **v;
    size_t n, cap;
} list;

static void push(list *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap != 0 ? l->cap * 2 : 16;
        l->v = vt_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = s;
}

static void clear(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* `dir`/`name`, the root's entries without "./". */
static char *join(const char *dir, const char *name, const char *suffix)
{
    vt_text b = {0};

    if (strcmp(dir, ".") != 0)
        vt_printf(&b, "%s/", dir);
    vt_printf(&b, "%s%s", name, suffix);
    return b.p;
}

static char *list_params(const char *dir)
{
    json_t *p = json_pack("{s:s}", "path", dir);
    char *text = p != NULL ? json_dumps(p, JSON_COMPACT) : NULL;

    if (text == NULL)
        vt_out_of_memory();
    json_decref(p);
    return text;
}

int main(void)
{
    static const char *const known[] = {"path", "recursive", "pattern", "max_entries", NULL};
    json_t *args;
    jpt_vfs_tool *t = vt_connect("list_files", known, &args);
    const char *arg = vt_arg_string(t, args, "path", false, true);
    char *top = vt_normal_path(t, "path", arg != NULL ? arg : ".");
    bool recursive = vt_arg_bool(t, args, "recursive", false);
    const char *pattern = vt_arg_string(t, args, "pattern", false, true);
    size_t max = (size_t)vt_arg_uint(t, args, "max_entries", DEFAULT_MAX, 1, MAX_MAX);
    list level = {0}, next = {0}, shown = {0};
    vt_text skipped = {0};
    bool cut = false;

    push(&level, vt_xstrdup(top));
    for (int depth = 0; level.n > 0 && !cut; depth++) {
        uint64_t *ids = vt_xmalloc(level.n * sizeof(*ids));
        for (size_t i = 0; i < level.n; i++) {
            char *params = list_params(level.v[i]);
            if (jpt_vfs_tool_submit(t, "fs.list_dir", params, &ids[i]) != JPT_OK)
                vt_fail_host(t);
            free(params);
        }
        for (size_t i = 0; i < level.n; i++) {
            char *result = NULL;
            if (jpt_vfs_tool_collect(t, ids[i], &result) != JPT_OK) {
                if (depth == 0 || jpt_vfs_tool_error_code(t) == 0)
                    vt_fail_host(t);
                vt_printf(&skipped, "(skipped %s/: %s)\n", level.v[i], jpt_vfs_tool_errmsg(t));
                continue;
            }
            json_t *r = json_loads(result, 0, NULL), *entry;
            size_t k;
            json_array_foreach(json_object_get(r, "entries"), k, entry) {
                const char *name = json_string_value(json_object_get(entry, "path"));
                const char *kind = json_string_value(json_object_get(entry, "kind"));
                if (name == NULL || kind == NULL)
                    vt_fail(t, "the host's fs.list_dir answer for '%s' has an entry without "
                               "a path or kind",
                            level.v[i]);
                bool dir = strcmp(kind, "dir") == 0;
                if (dir && recursive && !cut && strcmp(name, ".git") != 0)
                    push(&next, join(level.v[i], name, ""));
                if (pattern != NULL && fnmatch(pattern, name, 0) != 0)
                    continue;
                /* The walk stops growing, but every request sent is
                 * still collected. */
                if (shown.n == GATHER_LIMIT) {
                    cut = true;
                    continue;
                }
                push(&shown, join(level.v[i], name,
                                  dir                               ? "/"
                                  : strcmp(kind, "symlink") == 0 ? "@"
                                                                    : ""));
            }
            json_decref(r);
            jpt_free(result);
        }
        free(ids);
        clear(&level);
        list swap = level;
        level = next;
        next = swap;
    }

    if (shown.n > 0) /* qsort's base must not be NULL, even for no element */
        qsort(shown.v, shown.n, sizeof(*shown.v), by_bytes);
    vt_text out = {0};
    for (size_t i = 0; i < shown.n && i < max; i++)
        vt_printf(&out, "%s\n", shown.v[i]);
    if (shown.n == 0 && pattern != NULL)
        vt_printf(&out, "(no entries match '%s')\n", pattern);
    else if (shown.n == 0)
        vt_printf(&out, "(no entries)\n");
    if (shown.n > max)
        vt_printf(&out, "(%zu more not shown: raise max_entries or narrow the pattern)\n",
                  shown.n - max);
    if (cut)
        vt_printf(&out, "(the walk stopped after %d entries)\n", GATHER_LIMIT);
    vt_append(&out, vt_str(&skipped), skipped.len);
    out.p[--out.len] = '\0'; /* the last newline */
    vt_done_text(t, out.p);
}
