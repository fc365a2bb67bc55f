/* ask-tool: a one-shot test tool that asks two questions through JP's legacy
 * needs_input Outcome (a Select, then a Boolean) and answers once both
 * answers come back in the re-executed {{tool}} JSON.
 *
 * Usage: ask-tool TOOL_JSON   (TOOL_JSON is read from stdin when absent or "-") */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *ask_branch(void)
{
    return json_pack("{s:s, s:{s:s, s:s, s:s, s:{s:{s:[s,s,s]}}, s:s}}",
                     "type", "needs_input", "question",
                     "id", "branch",
                     "text", "Which branch should I merge into?",
                     "pre_amble", "Feature is 2 commits ahead.",
                     "answer_type", "Select", "options",
                     "main", "develop", "staging",
                     "default", "main");
}

static json_t *ask_confirm(const char *branch)
{
    char text[512];

    snprintf(text, sizeof text, "Really merge into %s?", branch);
    return json_pack("{s:s, s:{s:s, s:s, s:s}}",
                     "type", "needs_input", "question",
                     "id", "confirm", "text", text, "answer_type", "Boolean");
}

static json_t *merge(const char *branch, int confirmed)
{
    char text[512];

    if (!confirmed)
        return json_pack("{s:s, s:s, s:[], s:b}", "type", "error",
                         "message", "merge cancelled", "trace", "transient", 0);
    snprintf(text, sizeof text, "merged into %s", branch);
    return json_pack("{s:s, s:s}", "type", "success", "content", text);
}

int main(int argc, char **argv)
{
    json_t *tool, *answers, *branch, *confirm, *result;
    char *out;
    int status;

    if (argc > 2) {
        fputs("usage: ask-tool [TOOL_JSON|-]\n", stderr);
        return 2;
    }
    if (argc == 2 && strcmp(argv[1], "-") != 0)
        tool = json_loads(argv[1], 0, NULL);
    else
        tool = json_loadf(stdin, 0, NULL);
    if (!json_is_object(tool)) {
        fputs("ask-tool: TOOL_JSON is not a JSON object\n", stderr);
        json_decref(tool);
        return 1;
    }

    answers = json_object_get(tool, "answers");
    branch = json_object_get(answers, "branch");
    confirm = json_object_get(answers, "confirm");
    if (branch == NULL)
        result = ask_branch();
    else if (!json_is_string(branch))
        result = json_pack("{s:s, s:s, s:[], s:b}", "type", "error",
                           "message", "answer 'branch' is not a string",
                           "trace", "transient", 0);
    else if (confirm == NULL)
        result = ask_confirm(json_string_value(branch));
    else
        result = merge(json_string_value(branch), json_is_true(confirm));

    out = result != NULL ? json_dumps(result, JSON_COMPACT) : NULL;
    status = out != NULL ? 0 : 1;
    if (out != NULL)
        printf("%s\n", out);
    free(out);
    json_decref(result);
    json_decref(tool);
    return status;
}
