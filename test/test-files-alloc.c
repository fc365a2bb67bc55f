/* Allocation failure in ProjectFiles: every operation of each backend is
 * run with its 1st, 2nd, … Nth allocation failing until it succeeds; each
 * failing run must return JPT_ERR_NOMEM and leave nothing allocated
 * (TESTING.md). jansson's and pcre2's allocations go through the same
 * counting allocator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files/files.h"
#include "test-files-util.h"

/* Runs the D11 methods in turn, stopping at the first failure. */
static int exercise(jpt_files *f)
{
    static const char *const calls[][2] = {
        {"fs.write", "{\"path\":\"a/b/c.txt\",\"content\":\"fn main() {}\\nmain\\n\"}"},
        {"fs.write", "{\"path\":\"a/bin\",\"content\":\"AAECAw==\",\"encoding\":\"base64\"}"},
        {"fs.read", "{\"path\":\"a/b/c.txt\"}"},
        {"fs.read", "{\"path\":\"a/bin\"}"},
        {"fs.list_dir", "{\"path\":\"a\"}"},
        {"fs.exists", "{\"path\":\"a/b\"}"},
        {"fs.metadata", "{\"path\":\"a/b/c.txt\"}"},
        {"fs.grep", "{\"pattern\":\"ma[i]n\",\"context\":1}"},
        {"fs.grep", "{\"pattern\":\"main\",\"fixed_strings\":true,\"paths\":[\"a/b\"]}"},
        /* Invalid UTF-8 repaired (by the reader, then by the literal scan)
         * and a line past the match limit listed. */
        {"fs.write", "{\"path\":\"a/u.txt\",\"encoding\":\"base64\",\"content\":"
                     "\"bWFpbiD/IHgKb2sKYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYSEK\"}"},
        {"fs.grep", "{\"pattern\":\"(*LIMIT_MATCH=5)(?<!x)ma.n|(a+)+$\",\"context\":1}"},
        {"fs.grep", "{\"pattern\":\"main\\\\b.\\\\W\\\\s\",\"paths\":[\"a/u.txt\"]}"},
        {"fs.delete", "{\"path\":\"a/u.txt\"}"},
        {"fs.rename", "{\"from\":\"a/b/c.txt\",\"to\":\"d/e.txt\"}"},
        {"fs.delete", "{\"path\":\"d/e.txt\"}"},
        {"fs.delete", "{\"path\":\"a/bin\"}"},
    };
    int rc = JPT_OK;

    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]) && rc == JPT_OK; i++) {
        char *out = NULL;
        rc = jpt_files_call(f, calls[i][0], calls[i][1], &out);
        jpt_free(out);
    }
    if (rc == JPT_OK) {
        char *data = NULL;
        size_t len;
        jpt_files_entry *e = NULL;
        size_t n;
        if ((rc = jpt_files_write(f, "x/y", "\0\1", 2)) == JPT_OK &&
            (rc = jpt_files_read(f, "x/y", 0, &data, &len, NULL)) == JPT_OK)
            rc = jpt_files_list_dir(f, "x", &e, &n);
        jpt_free(data);
        jpt_free(e);
        if (rc == JPT_OK)
            rc = jpt_files_delete(f, "x/y");
    }
    return rc;
}

static int memory_op(void *ctx)
{
    jpt_files *f;
    (void)ctx;
    int rc = jpt_files_new_memory(&f);

    if (rc < 0)
        return rc;
    rc = exercise(f);
    jpt_files_free(f);
    return rc;
}

static void memory_backend_survives_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("memory backend", memory_op, NULL);
}

static int dir_op(void *ctx)
{
    jpt_files *f;

    /* Each run starts from an empty directory, whatever the last one left. */
    fu_rmtree(fu_path(ctx, "a"));
    fu_rmtree(fu_path(ctx, "d"));
    fu_rmtree(fu_path(ctx, "x"));
    int rc = jpt_files_open_dir(ctx, 0, &f);

    if (rc < 0)
        return rc;
    rc = exercise(f);
    jpt_files_free(f);
    return rc;
}

static void directory_backend_survives_allocation_failure(void **state)
{
    char *base = fu_tempdir();

    (void)state;
    tu_sweep("directory backend", dir_op, base);
    assert_int_equal(fu_count_entries(base), 3); /* a, d and x, emptied */
    fu_rmtree(base);
    free(base);
}

/* A host that answers every request at once, the way a database would. */
static int host_call(jpt_files_request *req, const char *method, const char *params, void *ud)
{
    (void)params;
    (void)ud;
    if (strcmp(method, "fs.read") == 0)
        return jpt_files_request_reply(req, "{\"content\":\"AAE=\",\"encoding\":\"base64\"}");
    if (strcmp(method, "fs.list_dir") == 0)
        return jpt_files_request_reply(req, "{\"entries\":[{\"path\":\"y\",\"kind\":\"file\"}]}");
    if (strcmp(method, "fs.exists") == 0)
        return jpt_files_request_reply(req, "{\"exists\":true}");
    if (strcmp(method, "fs.metadata") == 0)
        return jpt_files_request_reply(req, "{\"kind\":\"file\",\"size\":2}");
    if (strcmp(method, "fs.grep") == 0)
        return jpt_files_request_reply(req, "{\"matches\":[]}");
    return jpt_files_request_reply(req, "{}");
}

static int host_op(void *ctx)
{
    jpt_files_ops ops = {sizeof(ops), host_call, NULL, NULL};
    jpt_files *f;
    (void)ctx;
    int rc = jpt_files_new(&ops, NULL, &f);

    if (rc < 0)
        return rc;
    rc = exercise(f);
    jpt_files_free(f);
    return rc;
}

static void host_backend_survives_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("host backend", host_op, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_backend_survives_allocation_failure),
        cmocka_unit_test(directory_backend_survives_allocation_failure),
        cmocka_unit_test(host_backend_survives_allocation_failure),
    };

    tu_install_counting_allocator();
    return TU_RUN(tests);
}
