/* libFuzzer harness for jpt_schema_check: the input is split at its first
 * NUL into a schema and a value; any bytes must give JPT_OK, a mismatch
 * with a reason, or a parse error with a reason, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 2);
    char *why = NULL;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = text[size + 1] = '\0';
    const char *schema = text;
    const char *value = text + strlen(text) + 1;
    if (value > text + size)
        value = "null";
    int rc = jpt_schema_check(schema, value, &why);
    if (rc != JPT_OK && rc != JPT_ERR_INVALID && rc != JPT_ERR_NOMEM)
        abort();
    if (rc == JPT_ERR_INVALID && why == NULL)
        abort();
    jpt_free(why);
    free(text);
    return 0;
}
