/* libFuzzer harness for the host side of the VFS engine: any bytes a tool
 * may write, fed in pieces whose sizes the input chooses. The engine must
 * never crash or leak, and everything it writes back must be lines of
 * valid JSON (no raw newline inside a message, D11 "Message framing").
 * Calls are answered in every way a host answers them: file content (the
 * call's own params as bytes), JSON, errors, pending, or left to the
 * engine's free. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vfs/vfs.h"

static unsigned calls;

static void serve(void *ud, jpt__vfs_call *c)
{
    const jpt__vfs_params *p = jpt__vfs_call_params(c);
    const char *text = p->path != NULL ? p->path : p->pattern != NULL ? p->pattern : "";

    (void)ud;
    /* Typed params hold what they promise. */
    if ((jpt__vfs_call_method(c) == JPT__VFS_FS_WRITE && p->content == NULL) ||
        (jpt__vfs_call_method(c) == JPT__VFS_FS_RENAME && (p->from == NULL || p->to == NULL)) ||
        (p->npaths > 0 && p->paths == NULL) || p->context > JPT__VFS_GREP_MAX_CONTEXT)
        abort();
    for (size_t i = 0; i < p->npaths; i++)
        if (p->paths[i] == NULL)
            abort();
    switch (calls++ % 5) {
    case 0:
        if (jpt__vfs_call_method(c) == JPT__VFS_FS_WRITE)
            jpt__vfs_call_answer_read(c, p->content, p->content_len);
        else
            jpt__vfs_call_answer_read(c, text, strlen(text));
        break;
    case 1:
        jpt__vfs_call_answer_json(c, "{\n\"entries\": []\r\n}", 18);
        break;
    case 2:
        jpt__vfs_call_pending(c, text);
        jpt__vfs_call_answer_error(c, JPT_VFS_E_ACCESS_DENIED, "denied: '%s'", text);
        break;
    case 3:
        jpt__vfs_call_pending(c, "held");
        break; /* left unanswered */
    default:
        jpt__vfs_call_answer_error(c, JPT_VFS_E_NOT_FOUND, "%s", text);
    }
}

static void drop_state(void *ud, jpt_state *st, bool final)
{
    (void)final;
    (void)ud;
    if (st == NULL || jpt_state_kind(st) < JPT_STATE_RUNNING || jpt_state_kind(st) > JPT_STATE_STOPPED)
        abort();
    jpt_state_unref(st);
}

/* Every line written must be one JSON value. */
static void check_output(jpt__vfs_engine *e)
{
    const char *p;
    size_t n = jpt__vfs_engine_output(e, &p);
    jpt__json_error err;

    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        if (nl == NULL)
            abort();
        if (jpt__json_validate(p, (size_t)(nl - p), &err) != JPT_OK)
            abort();
        n -= (size_t)(nl - p) + 1;
        p = nl + 1;
    }
    jpt__vfs_engine_output_done(e, jpt__vfs_engine_output(e, &p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A small line limit, so long lines are dropped too; violations past
     * the limit end the run as they end a session. */
    jpt__vfs_limits limits = {.max_message = 2048, .max_violations = 64};
    jpt__vfs_handlers h = {.state = drop_state};
    jpt__vfs_init init = {"fuzz", "{\"a\":[1,\"\\n\"]}", NULL, NULL};
    jpt__vfs_engine *e;
    jpt__errbuf err;

    for (int m = 0; m < JPT__VFS_METHODS; m++)
        if (m != JPT__VFS_HTTP_GET)
            h.method[m] = serve;
    if (jpt__vfs_engine_new(&limits, &h, &init, &err, &e) != JPT_OK)
        abort();
    calls = 0;
    /* The first byte sets the size of the pieces. */
    size_t piece = size > 0 ? (size_t)data[0] % 64 + 1 : 1;
    size_t off = size > 0 ? 1 : 0;
    int rc = JPT_OK;
    while (off < size && rc == JPT_OK) {
        size_t n = size - off < piece ? size - off : piece, used;
        rc = jpt__vfs_engine_feed(e, (const char *)data + off, n, &used);
        if (used > n)
            abort();
        check_output(e);
        off += used;
        /* With its output written and few calls held, the engine always
         * takes more. */
        if (rc == JPT_OK && used == 0)
            abort();
    }
    if (rc != JPT_OK && rc != JPT_ERR_PROTOCOL)
        abort();
    if (rc == JPT_OK) {
        jpt__vfs_engine_eof(e);
        jpt__vfs_engine_apply(e, (const char *)data, size);
        jpt__vfs_engine_cancel(e);
        check_output(e);
    }
    jpt__vfs_engine_free(e);
    return 0;
}
