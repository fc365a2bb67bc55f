/* A block's fields: the owned copies of text (and of JSON written as
 * text) a content block holds, set, copied and cleared. The bottom of the
 * state room: block.c reads blocks into fields, state.c keeps blocks in a
 * state, and both use these. */
#include <string.h>

#include "state/impl.h"

void jpt__block_clear(jpt__block *b)
{
    for (int i = 0; i <= JPT__FIELD_MAX; i++)
        jpt__free(b->f[i].ptr);
    memset(b, 0, sizeof(*b));
}

int jpt__block_copy(const jpt__block *src, jpt__block *dst)
{
    memset(dst, 0, sizeof(*dst));
    dst->type = src->type;
    for (int i = 0; i <= JPT__FIELD_MAX; i++) {
        if (src->f[i].ptr == NULL)
            continue;
        if (jpt__field_set(&dst->f[i], src->f[i].ptr, src->f[i].len) < 0) {
            jpt__block_clear(dst);
            return JPT_ERR_NOMEM;
        }
    }
    return JPT_OK;
}

int jpt__field_set(jpt__field *f, const char *p, size_t n)
{
    char *copy = jpt__memdup0(p, n);

    if (copy == NULL)
        return JPT_ERR_NOMEM;
    jpt__free(f->ptr);
    f->ptr = copy;
    f->len = n;
    return JPT_OK;
}

int jpt__field_set_json(jpt__field *f, const json_t *v)
{
    char *text;
    int rc = jpt__json_dump(v, JSON_COMPACT | JSON_ENCODE_ANY, &text);

    if (rc < 0)
        return rc;
    jpt__free(f->ptr);
    f->ptr = text;
    f->len = strlen(text);
    return JPT_OK;
}

json_t *jpt__json_reload(const char *text, size_t len)
{
    /* The text was written by jansson from a value that may hold NUL
     * characters, escaped as \u0000; jansson reads them back only when
     * allowed to. */
    bool nomem;

    return jpt__json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL, &nomem);
}
