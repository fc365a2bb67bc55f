/* libFuzzer harness for jpt_uri_canonicalize: any bytes (up to a NUL) as a
 * URI, against no root and a fixed one; canonicalising a result again must
 * give the same result (the identity is stable). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *uri, const char *root)
{
    char *once = NULL, *twice = NULL;
    int rc = jpt_uri_canonicalize(uri, root, &once);

    if (rc != JPT_OK && rc != JPT_ERR_INVALID && rc != JPT_ERR_NOMEM)
        abort();
    if (rc != JPT_OK)
        return;
    /* A relative result names a path beneath the root: canonical again
     * against the same root. */
    if (jpt_uri_canonicalize(once, root, &twice) == JPT_OK && strcmp(once, twice) != 0)
        abort();
    jpt_free(once);
    jpt_free(twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);

    if (uri == NULL)
        return 0;
    memcpy(uri, data, size);
    uri[size] = '\0';
    check(uri, NULL);
    check(uri, "/project");
    free(uri);
    return 0;
}
