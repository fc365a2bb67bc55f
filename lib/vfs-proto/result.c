/* The results of the fs.* methods in D11's shapes, written from typed
 * values (bytes, a kind and size, entries) straight into a buffer: the
 * one writer of them, for the host engine (lib/vfs) and for
 * jpt_files_call() (lib/files), which hands a host what a tool would get.
 * The backends behind them never write JSON. */
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
