/* libFuzzer harness for the tool side of the VFS engine (the SDK's
 * parser): any bytes a host may write, after a valid init when the first
 * byte is odd (so the rest reaches the responses), fed in pieces. Three
 * requests are outstanding; every reply that arrives is decoded the way
 * jpt_vfs_tool_read() and jpt_vfs_tool_collect() decode it, and every
 * input taken. Nothing may crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vfs-tool/vfs-tool.h"

static const char init_line[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":{\"name\":\"t\"},"
    "\"protocol_version\":\"0.1.0\"}}\n";

static void on_pending(uint64_t id, const char *reason, void *ud)
{
    (void)id;
    (void)ud;
    if (reason == NULL || strlen(reason) > 4096)
        abort();
}

/* fs.read's decoding: content unescaped to the storage's start, then
 * base64 when the encoding says so. */
static void decode_file(jpt__vfs_reply *r)
{
    jpt__json_iter it;
    jpt__vfs_span key, value, content = {NULL, 0}, encoding = {NULL, 0};
    size_t n;

    if (jpt__json_type(r->result) != JPT__JSON_OBJECT)
        return;
    jpt__json_iter_init(&it, r->result);
    while (jpt__json_next_member(&it, &key, &value)) {
        if (jpt__json_key_is(key, "content"))
            content = value;
        else if (jpt__json_key_is(key, "encoding"))
            encoding = value;
    }
    if (content.p == NULL || jpt__json_type(content) != JPT__JSON_STRING)
        return;
    n = jpt__json_unescape(content, r->storage);
    if (encoding.p != NULL)
        jpt__base64_decode(r->storage, n, (unsigned char *)r->storage, &n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jpt__vfs_client *c;
    uint64_t id;
    char *input;

    if (jpt__vfs_client_new(4096, 0, &c) != JPT_OK)
        abort();
    jpt__vfs_client_on_pending(c, on_pending, NULL);
    if (size > 0 && (data[0] & 1) && jpt__vfs_client_feed(c, init_line, sizeof(init_line) - 1) != JPT_OK)
        abort();
    if (jpt__vfs_client_ready(c)) {
        if (jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id) != JPT_OK || id != 1 ||
            jpt__vfs_client_request(c, "fs.list_dir", "{\"path\":\"b\"}", &id) != JPT_OK ||
            jpt__vfs_client_request_write(c, "c", "\x01\xff", 2, &id) != JPT_OK || id != 3)
            abort();
    }
    size_t piece = size > 0 ? (size_t)(data[0] >> 1) % 64 + 1 : 1;
    for (size_t off = size > 0 ? 1 : 0; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        if (jpt__vfs_client_feed(c, (const char *)data + off, n) != JPT_OK)
            break;
    }
    jpt__vfs_client_eof(c);
    for (uint64_t i = 1; i <= 3; i++) {
        jpt__vfs_reply *r = jpt__vfs_client_reply(c, i);
        if (r != NULL && r->done && r->code == 0) {
            if (r->result.p < r->storage || r->result.n == 0)
                abort();
            decode_file(r);
        }
        jpt__vfs_client_forget(c, i);
    }
    while (jpt__vfs_client_next_input(c, &input))
        jpt__free(input);
    for (int f = JPT__VFS_INIT_NAME; f <= JPT__VFS_INIT_VERSION; f++)
        if (jpt__vfs_client_ready(c) && jpt__vfs_client_init(c, f) == NULL)
            abort();
    jpt__vfs_client_free(c);
    return 0;
}
