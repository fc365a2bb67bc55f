/* libFuzzer harness for jpt_state_parse: any bytes must give a state (never
 * a crash), and every state must serialise in each form, render, and parse
 * back from its JSON to the same JSON (the round trip of issue 2, in the
 * form that holds for invalid UTF-8 too). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

static void check_form(const jpt_state *s, int form)
{
    char *first = NULL, *second = NULL;
    jpt_state *again = NULL;

    if (jpt_state_to_json(s, form, 0, &first) != JPT_OK) {
        /* Only the legacy Outcome may refuse, and only a running state. */
        if (form != JPT_JSON_OUTCOME || jpt_state_kind(s) != JPT_STATE_RUNNING)
            abort();
        return;
    }
    if (jpt_state_parse(first, strlen(first), 0, &again) != JPT_OK ||
        jpt_state_to_json(again, form, 0, &second) != JPT_OK ||
        strcmp(first, second) != 0)
        abort();
    jpt_free(first);
    jpt_free(second);
    jpt_state_unref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jpt_render_options opts = {sizeof(opts), "/project"};

    for (unsigned flags = 0; flags <= JPT_PARSE_RAW; flags += JPT_PARSE_RAW) {
        jpt_state *s = NULL;
        char *text = NULL;
        if (jpt_state_parse((const char *)data, size, flags, &s) != JPT_OK)
            abort();
        if (jpt_state_render(s, &opts, &text) != JPT_OK)
            abort();
        jpt_free(text);
        check_form(s, JPT_JSON_ENVELOPE);
        check_form(s, JPT_JSON_TOOL_STATE);
        check_form(s, JPT_JSON_OUTCOME);
        jpt_state_unref(s);
    }
    return 0;
}
