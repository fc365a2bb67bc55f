/* The results of the fs.* methods in D11's shapes, written from typed
 * values (bytes, a kind and size, entries) straight into a buffer: the
 * one writer of them, for the host engine (lib/vfs) and for
 * jpt_files_call() (lib/files), which hands a host what a tool would get.
 * The backends behind them never write JSON; fs.grep, whose result can
 * hold thousands of lines, writes it piece by piece as it searches with
 * the jpt__vfs_grep_* writers here. */
#include <stdio.h>
#include <string.h>

#include "vfs-proto.h"

static const char *const kind_names[] = {NULL, "file", "dir", "symlink", "other"};

const char *jpt__vfs_kind_name(int kind)
{
    return kind >= 1 && kind <= 4 ? kind_names[kind] : "other";
}

int jpt__vfs_kind_find(const char *name, size_t len)
{
    for (int k = 1; k <= 4; k++)
        if (strlen(kind_names[k]) == len && memcmp(name, kind_names[k], len) == 0)
            return k;
    return 0;
}

/* {"content":…,["encoding":"base64",]"size":N}: one pass sizes the
 * string, one writes it (common's jpt__buf_content). */
static int put_read(jpt__buf *b, const char *data, size_t len)
{
    bool base64;
    int rc = jpt__buf_puts(b, "{\"content\":");

    if (rc == JPT_OK && (rc = jpt__buf_content(b, data, len, &base64)) == JPT_OK)
        rc = jpt__buf_printf(b, "%s\"size\":%zu}", base64 ? ",\"encoding\":\"base64\"," : ",",
                             len);
    return rc;
}

/* {"entries":[{"path":name,"kind":…}]}: a name may be any bytes, and what
 * is not UTF-8 is shown with U+FFFD. */
static int put_entries(jpt__buf *b, const jpt__vfs_fs_entry *v, size_t n)
{
    int rc = jpt__buf_puts(b, "{\"entries\":[");

    for (size_t i = 0; rc == JPT_OK && i < n; i++) {
        if ((rc = jpt__buf_puts(b, i > 0 ? ",{\"path\":" : "{\"path\":")) == JPT_OK &&
            (rc = jpt__buf_json_string(b, v[i].name, strlen(v[i].name))) == JPT_OK)
            rc = jpt__buf_printf(b, ",\"kind\":\"%s\"}", jpt__vfs_kind_name(v[i].kind));
    }
    return rc == JPT_OK ? jpt__buf_puts(b, "]}") : rc;
}

int jpt__vfs_put_fs_result(jpt__buf *b, int method, const jpt__vfs_fs_result *r)
{
    switch (method) {
    case JPT__VFS_FS_READ:
        return put_read(b, r->data != NULL ? r->data : "", r->len);
    case JPT__VFS_FS_EXISTS:
        return jpt__buf_puts(b, r->kind != 0 ? "{\"exists\":true}" : "{\"exists\":false}");
    case JPT__VFS_FS_METADATA:
        return jpt__buf_printf(b, "{\"kind\":\"%s\",\"size\":%llu}", jpt__vfs_kind_name(r->kind),
                               (unsigned long long)r->size);
    case JPT__VFS_FS_LIST_DIR:
        return put_entries(b, r->entries, r->nentries);
    case JPT__VFS_FS_GREP:
        return jpt__json_append_flat(b, r->json, r->json_len);
    default:
        /* fs.write, fs.delete and fs.rename answer {} (D11). */
        return jpt__buf_puts(b, "{}");
    }
}

/* ---- fs.grep's result, piece by piece ---------------------------------------------- */

int jpt__vfs_grep_begin(jpt__buf *b)
{
    return jpt__buf_puts(b, "{\"matches\":[");
}

int jpt__vfs_grep_file(jpt__buf *b, bool first, const char *path)
{
    int rc = jpt__buf_puts(b, first ? "{\"path\":" : ",{\"path\":");

    if (rc == JPT_OK && (rc = jpt__buf_json_string(b, path, strlen(path))) == JPT_OK)
        rc = jpt__buf_puts(b, ",\"lines\":[");
    return rc;
}

/* `before`, the decimal `n`, `after`: without printf, which a grep that
 * puts out a million lines would feel. */
static int put_number(jpt__buf *b, const char *before, uint64_t n, const char *after)
{
    char digits[20];
    size_t len = 0, lb = strlen(before), la = strlen(after);

    do
        digits[sizeof(digits) - ++len] = (char)('0' + n % 10);
    while ((n /= 10) > 0);
    if (jpt__buf_reserve(b, lb + len + la) < 0)
        return JPT_ERR_NOMEM;
    char *w = b->data + b->len;
    memcpy(w, before, lb);
    memcpy(w + lb, digits + sizeof(digits) - len, len);
    memcpy(w + lb + len, after, la + 1);
    b->len += lb + len + la;
    return JPT_OK;
}

int jpt__vfs_grep_line(jpt__buf *b, bool first, uint64_t number, const char *p, size_t n,
                       bool match)
{
    int rc = first ? JPT_OK : jpt__buf_putc(b, ',');

    if (rc == JPT_OK)
        rc = put_number(b, "{\"line_number\":", number, ",\"content\":");
    if (rc == JPT_OK)
        rc = jpt__buf_json_string(b, p, n);
    if (rc == JPT_OK)
        rc = jpt__buf_puts(b, match ? ",\"is_match\":true}" : ",\"is_match\":false}");
    return rc;
}

size_t jpt__vfs_grep_line_size(size_t path_len, size_t content_len)
{
    return (path_len + content_len) * 6 + 128;
}

int jpt__vfs_grep_file_end(jpt__buf *b)
{
    return jpt__buf_puts(b, "]}");
}

int jpt__vfs_grep_skipped(jpt__buf *b, bool first, const char *path, uint64_t number,
                          const char *reason)
{
    int rc = jpt__buf_puts(b, first ? "{\"path\":" : ",{\"path\":");

    if (rc == JPT_OK && (rc = jpt__buf_json_string(b, path, strlen(path))) == JPT_OK &&
        (rc = put_number(b, ",\"line_number\":", number, ",\"reason\":")) == JPT_OK &&
        (rc = jpt__buf_json_string(b, reason, strlen(reason))) == JPT_OK)
        rc = jpt__buf_putc(b, '}');
    return rc;
}

int jpt__vfs_grep_end(jpt__buf *b, bool truncated, const char *skipped, size_t skipped_len,
                      size_t n_skipped)
{
    int rc = jpt__buf_puts(b, truncated ? "],\"truncated\":true" : "],\"truncated\":false");

    if (rc == JPT_OK && n_skipped > 0 &&
        (rc = jpt__buf_puts(b, ",\"skipped\":[")) == JPT_OK &&
        (rc = jpt__buf_append(b, skipped, skipped_len)) == JPT_OK)
        rc = jpt__buf_printf(b, "],\"skipped_count\":%zu", n_skipped);
    return rc == JPT_OK ? jpt__buf_putc(b, '}') : rc;
}
