/* The jpt_files object: one backend behind one face. Its public
 * constructors build a backend and wrap it; a request goes to the
 * backend's submit, a request in flight to its step and cancel. */
#include <string.h>

#include "files/files.h"

/* ---- The object ------------------------------------------------------------------- */

/* The object, allocated before its backend so that nothing the backend
 * holds (a host's release) must be undone when it cannot be. */
static jpt_files *object_new(void)
{
    jpt_files *f = jpt__calloc(1, sizeof(*f));

    if (f != NULL)
        f->refs = 1;
    return f;
}

jpt_files *jpt__files_ref(jpt_files *f)
{
    f->refs++;
    return f;
}

void jpt__files_unref(jpt_files *f)
{
    if (f == NULL || --f->refs > 0)
        return;
    f->be.ops->release(f->be.impl);
    jpt__free(f);
}

JPT_EXPORT int jpt_files_open_dir(const char *root, unsigned flags, jpt_files **out)
{
    jpt__errbuf e;
    jpt_files *f;
    unsigned known = JPT_FILES_ALLOW_HARDLINKS | JPT_FILES_FSYNC | JPT__FILES_FORCE_WALK;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: out is NULL");
    *out = NULL;
    if (root == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: root is NULL");
    if ((flags & ~known) != 0)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: unknown flags 0x%x",
                         flags & ~known);
    e.text[0] = '\0';
    int rc = (f = object_new()) != NULL ? jpt__files_dir_new(root, flags, &e, &f->be)
                                        : jpt__err(&e, JPT_ERR_NOMEM, "open_dir: out of memory");
    if (rc < 0) {
        jpt__free(f);
        return jpt__fail(rc, "jpt_files_open_dir '%s': %s", root,
                         e.text[0] != '\0' ? e.text : jpt_strerror(rc));
    }
    *out = f;
    return JPT_OK;
}

JPT_EXPORT int jpt_files_new_memory(jpt_files **out)
{
    jpt_files *f;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new_memory: out is NULL");
    *out = NULL;
    if ((f = object_new()) == NULL || jpt__files_memory_new(&f->be) < 0) {
        jpt__free(f);
        return jpt__fail(JPT_ERR_NOMEM, "jpt_files_new_memory: out of memory");
    }
    *out = f;
    return JPT_OK;
}

JPT_EXPORT int jpt_files_new(const jpt_files_ops *ops, void *ud, jpt_files **out)
{
    jpt_files *f;
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new: out is NULL");
    *out = NULL;
    if (ops == NULL || ops->call == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new: %s",
                         ops == NULL ? "ops is NULL" : "ops->call is NULL");
    if ((rc = jpt__struct_check(ops, ops->size, sizeof(*ops))) < 0)
        return jpt__fail(rc, rc == JPT_ERR_INVALID
                                 ? "jpt_files_new: ops->size is less than jpt_files_ops"
                                 : "jpt_files_new: ops sets fields this jptool does not know "
                                   "(built against a newer one)");
    if ((f = object_new()) == NULL || jpt__files_host_new(ops, ud, &f->be) < 0) {
        jpt__free(f);
        return jpt__fail(JPT_ERR_NOMEM, "jpt_files_new: out of memory");
    }
    *out = f;
    return JPT_OK;
}

JPT_EXPORT void jpt_files_free(jpt_files *f)
{
    jpt__files_unref(f);
}

JPT_EXPORT const char *jpt_files_errmsg(const jpt_files *f)
{
    return f != NULL ? f->err.text : "";
}

int jpt__files_root_fd(const jpt_files *f)
{
    return f->be.ops->root_fd != NULL ? f->be.ops->root_fd(f->be.impl) : -1;
}

/* ---- Requests ----------------------------------------------------------------------- */

int jpt__files_submit(jpt_files *f, int method, const jpt__vfs_params *p,
                      const jpt__files_opts *opts, jpt__files_done_fn done, void *ud,
                      jpt__files_call **pending)
{
    if (pending != NULL)
        *pending = NULL;
    if (f == NULL || p == NULL || done == NULL || pending == NULL ||
        method < JPT__VFS_FS_READ || method > JPT__VFS_FS_GREP)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    jpt__files_request rq = {method, p, opts, done, ud, &f->err};
    return f->be.ops->submit(f->be.impl, &rq, pending);
}

bool jpt__files_call_needs_step(const jpt__files_call *c)
{
    return c->be->step != NULL;
}

int jpt__files_step(jpt__files_call *c, uint64_t budget_ns)
{
    return c->be->step(c, budget_ns);
}

void jpt__files_cancel(jpt__files_call *c)
{
    c->be->cancel(c);
}
