/* The adapter that serves the request interface on a synchronous backend
 * (the directory and memory backends): a request is one call of the
 * backend's method, answered before submit returns, except fs.grep, an
 * iterator stepped through by the host. The results are typed values;
 * fs.read's bytes go into a buffer kept from request to request. */
#include <string.h>

#include "files/files.h"

/* A grep in flight: it holds a reference to the adapter. */
typedef struct grep_call {
    jpt__files_call base;
    jpt__files_sync *f;
    jpt__grep *grep;
    jpt__files_done_fn done;
    void *ud;
} grep_call;

static void sync_unref(jpt__files_sync *f)
{
    if (--f->refs > 0)
        return;
    f->be->destroy(f);
    jpt__buf_free(&f->data);
    jpt__free(f);
}

/* Runs method `m` (not fs.grep) on the backend into `r`; fs.read reads
 * into `data`, entries go into `list`. */
static int call_method(jpt__files_sync *f, const jpt__files_request *rq, jpt__buf *data,
                       jpt__files_list *list, jpt__vfs_fs_result *r)
{
    char path[JPT__FILES_PATH_MAX + 1], shown[256];
    char to[JPT__FILES_PATH_MAX + 1], shown_to[256];
    const jpt__vfs_params *p = rq->p;
    int m = rq->method;
    jpt__files_ctx c = {jpt__vfs_method_name(m), shown, rq->opts, rq->e};
    int rc;

    if ((rc = jpt__files_take_path(m, m == JPT__VFS_FS_RENAME ? p->from : p->path, path, shown,
                                   rq->e)) < 0)
        return rc;
    switch (m) {
    case JPT__VFS_FS_READ:
        if ((rc = f->be->read(f, &c, path, data)) == JPT_OK) {
            r->data = data->data;
            r->len = data->len;
        }
        return rc;
    case JPT__VFS_FS_WRITE:
        return f->be->write(f, &c, path, p->content != NULL ? p->content : "", p->content_len);
    case JPT__VFS_FS_EXISTS:
    case JPT__VFS_FS_METADATA:
        rc = f->be->stat(f, &c, path, &r->kind, m == JPT__VFS_FS_METADATA ? &r->size : NULL);
        if (rc == JPT_OK && m == JPT__VFS_FS_METADATA && r->kind == 0)
            rc = jpt__err(rq->e, JPT_ERR_NOT_FOUND, "fs.metadata '%s': not found", shown);
        return rc;
    case JPT__VFS_FS_LIST_DIR:
        if ((rc = f->be->list(f, &c, path, list)) == JPT_OK) {
            r->entries = list->v;
            r->nentries = list->n;
        }
        return rc;
    case JPT__VFS_FS_DELETE:
        return f->be->remove(f, &c, path);
    default: /* JPT__VFS_FS_RENAME */
        if ((rc = jpt__files_take_path(m, p->to, to, shown_to, rq->e)) < 0)
            return rc;
        return f->be->rename(f, &c, path, to, shown_to);
    }
}

/* A buffer to keep for the next request: its memory, unless a request
 * larger than most made it grow beyond KEEP_BYTES. */
#define KEEP_BYTES (2u << 20)

static jpt__buf keep(jpt__buf b)
{
    if (b.cap > KEEP_BYTES)
        jpt__buf_free(&b);
    return b;
}

static const jpt__files_backend sync_backend;

static int begin_grep(jpt__files_sync *f, const jpt__files_request *rq,
                      jpt__files_call **pending)
{
    jpt__grep *g;
    int rc = jpt__grep_begin(f, rq->p, rq->opts, rq->e, &g);

    if (rc < 0) {
        rq->done(rq->ud, rc, NULL, rq->e->text);
        return JPT_OK;
    }
    grep_call *c = jpt__calloc(1, sizeof(*c));
    if (c == NULL) {
        jpt__grep_free(g);
        return jpt__err(rq->e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    }
    c->base.be = &sync_backend;
    c->f = f;
    f->refs++;
    c->grep = g;
    c->done = rq->done;
    c->ud = rq->ud;
    *pending = &c->base;
    return JPT_OK;
}

static int sync_submit(void *impl, const jpt__files_request *rq, jpt__files_call **pending)
{
    jpt__files_sync *f = impl;

    if (rq->method == JPT__VFS_FS_GREP)
        return begin_grep(f, rq, pending);
    /* The buffer serves one request after another (no fresh megabyte per
     * fs.read); a request submitted from inside `done` while it is lent
     * out gets its own. */
    jpt__buf data = JPT__BUF_INIT;
    bool own = !f->lent;
    if (own) {
        data = f->data;
        data.len = 0;
        f->lent = true;
    }
    jpt__files_list list = {NULL, 0, 0};
    jpt__vfs_fs_result r = {0};
    int rc = call_method(f, rq, &data, &list, &r);
    rq->done(rq->ud, rc, rc < 0 ? NULL : &r, rc < 0 ? rq->e->text : NULL);
    jpt__files_list_free(&list);
    if (own) {
        f->data = keep(data);
        f->lent = false;
    } else
        jpt__buf_free(&data);
    return JPT_OK;
}

static void grep_call_free(grep_call *c)
{
    jpt__grep_free(c->grep);
    sync_unref(c->f);
    jpt__free(c);
}

static int sync_step(jpt__files_call *base, uint64_t budget_ns)
{
    grep_call *c = (grep_call *)base;
    int rc = jpt__grep_step(c->grep, budget_ns);

    if (rc == 1)
        return 1;
    if (rc == 0) {
        jpt__vfs_fs_result r = {0};
        r.json = jpt__grep_result(c->grep, &r.json_len);
        c->done(c->ud, JPT_OK, &r, NULL);
    } else
        c->done(c->ud, rc, NULL, jpt__grep_errmsg(c->grep));
    grep_call_free(c);
    return 0;
}

static void sync_cancel(jpt__files_call *base)
{
    grep_call_free((grep_call *)base);
}

static int sync_root_fd(const void *impl)
{
    const jpt__files_sync *f = impl;

    return f->be->root_fd != NULL ? f->be->root_fd(f) : -1;
}

static void sync_release(void *impl)
{
    sync_unref(impl);
}

static const jpt__files_backend sync_backend = {
    .submit = sync_submit,
    .step = sync_step,
    .cancel = sync_cancel,
    .root_fd = sync_root_fd,
    .release = sync_release,
};

int jpt__files_sync_new(const jpt__files_sync_ops *be, void *impl, unsigned flags,
                        jpt__files_be *out)
{
    jpt__files_sync *f = jpt__calloc(1, sizeof(*f));

    if (f == NULL)
        return JPT_ERR_NOMEM;
    f->refs = 1;
    f->be = be;
    f->impl = impl;
    f->flags = flags;
    out->ops = &sync_backend;
    out->impl = f;
    return JPT_OK;
}
