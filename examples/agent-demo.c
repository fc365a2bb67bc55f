/* agent-demo: a scripted agent (no model needed) driving jptool the way a
 * real one would, printed as a chat transcript.
 *
 *   agent-demo TOOLS_DIR
 *
 * It loads a tool config, prints the tool schemas the model would see, then
 * replays RFD 009's interactive staging (`git add --patch` in a scratch
 * repository, through spawn / apply / fetch) and a one-shot call whose tool
 * asks two questions, answered by the inquiry handler as an assistant
 * would. TOOLS_DIR holds the example tools (examples/tools). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <jptool/jptool.h>

static void die(const char *what, jpt_registry *r)
{
    fprintf(stderr, "agent-demo: %s: %s\n", what, r != NULL ? jpt_registry_errmsg(r) : "");
    exit(1);
}

static void heading(const char *text)
{
    printf("\n=== %s ===\n\n", text);
}

/* Prints a multi-line text indented, as a transcript shows a message. */
static void indented(const char *prefix, const char *text)
{
    printf("%s", prefix);
    for (const char *p = text; *p != '\0'; p++) {
        putchar(*p);
        if (*p == '\n' && p[1] != '\0')
            printf("%*s", (int)strlen(prefix), "");
    }
    putchar('\n');
}

/* One model turn: a single tool call, and the result the model reads. */
static void call(jpt_registry *r, const char *tool, const char *arguments)
{
    char calls[4096];
    jpt_batch *b = NULL;
    char *results = NULL;

    snprintf(calls, sizeof(calls), "[{\"id\":\"call\",\"name\":\"%s\",\"arguments\":%s}]",
             tool, arguments);
    printf("assistant → %s %s\n", tool, arguments);
    if (jpt_registry_submit(r, calls, &b) != JPT_OK)
        die("submit", r);
    if (jpt_registry_wait(r, b, 60000) != JPT_OK)
        die("wait", r);
    if (jpt_batch_results_json(b, &results) != JPT_OK)
        die("results", r);
    /* A host hands each result's content to its model (and its is_error
     * flag, where the provider has one). */
    json_t *list = json_loads(results, 0, NULL);
    json_t *result = json_array_get(list, 0);
    const char *content = json_string_value(json_object_get(result, "content"));
    printf("tool ←%s\n", json_is_true(json_object_get(result, "is_error")) ? " (error)" : "");
    /* A stateful action answers with RFD 009's {"id","state",...} JSON;
     * the transcript shows it unpacked. */
    json_t *response = json_loads(content, 0, NULL);
    const char *state = json_string_value(json_object_get(response, "state"));
    if (state != NULL) {
        const char *text = json_string_value(json_object_get(response, "content"));
        if (text == NULL)
            text = json_string_value(json_object_get(response, "result"));
        if (text == NULL)
            text = json_string_value(json_object_get(response, "error"));
        printf("    [handle %s: %s]\n", json_string_value(json_object_get(response, "id")),
               state);
        indented("    ", text != NULL ? text : "");
    } else
        indented("    ", content);
    json_decref(response);
    putchar('\n');
    json_decref(list);
    jpt_free(results);
    jpt_batch_free(b);
}

/* The assistant's side of an inquiry: in a real host, a structured model
 * call or a prompt to the user. Here, scripted answers. */
static void answer_inquiry(jpt_inquiry *q, void *ud)
{
    int *round = ud;
    static const char *const answers[] = {"\"develop\"", "true"};
    const jpt_state *context = jpt_inquiry_context(q);

    printf("  [inquiry for the %s] %s\n",
           jpt_inquiry_target(q) == JPT_TARGET_ASSISTANT ? "assistant" : "user",
           jpt_inquiry_question_json(q));
    for (size_t i = 0; i < jpt_state_block_count(context); i++)
        printf("  [shown before it] %s\n",
               jpt_state_block_field(context, i, JPT_FIELD_TEXT, NULL));
    printf("  [answer] %s\n", answers[*round]);
    if (jpt_inquiry_answer(q, answers[(*round)++]) != JPT_OK)
        printf("  [answer refused] %s\n", jpt_inquiry_errmsg(q));
}

static int shell(const char *dir, const char *cmd)
{
    char line[2048];
    snprintf(line, sizeof(line), "cd '%s' && %s", dir, cmd);
    return system(line);
}

int main(int argc, char **argv)
{
    char repo[] = "/tmp/jptool-demo-XXXXXX";
    char config[4096];
    jpt_registry *r = NULL;
    int round = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: agent-demo TOOLS_DIR\n");
        return 2;
    }
    if (mkdtemp(repo) == NULL ||
        shell(repo, "git init -q && git config user.email demo@example.com && "
                    "git config user.name demo && seq 1 30 > notes.txt && "
                    "git add notes.txt && git commit -qm 'first notes' && "
                    "sed -i 's/^2$/two/; s/^28$/twenty-eight/' notes.txt") != 0) {
        fprintf(stderr, "agent-demo: could not prepare a git repository in %s\n", repo);
        return 1;
    }

    jpt_registry_options opts = {sizeof(opts), .root = repo, .settle_ms = 250};
    if (jpt_registry_new(&opts, &r) != JPT_OK)
        die("registry", NULL);
    snprintf(config, sizeof(config),
             "{\"tools\":["
             "{\"name\":\"git\",\"description\":\"Interactive git.\",\"stateful\":true,"
             " \"command\":[\"git\",\"add\",\"--patch\"],"
             " \"env\":{\"set\":{\"GIT_PAGER\":\"cat\"}}},"
             "{\"name\":\"merge\",\"description\":\"Merge a feature branch.\","
             " \"parameters\":{\"type\":\"object\",\"properties\":"
             "  {\"feature\":{\"type\":\"string\"}}},"
             " \"command\":[\"%s/merge.py\",\"{{tool}}\"],\"question_target\":\"assistant\"}"
             "]}",
             argv[1]);
    if (jpt_registry_load_tools(r, config, 0) != JPT_OK)
        die("load_tools", r);
    jpt_registry_set_inquiry_handler(r, answer_inquiry, &round);

    char *schemas = NULL;
    heading("The tools as the model sees them (Anthropic format)");
    if (jpt_registry_tools_json(r, JPT_DIALECT_ANTHROPIC, &schemas) != JPT_OK)
        die("tools_json", r);
    printf("%s\n", schemas);
    jpt_free(schemas);

    heading("RFD 009: interactive staging with git add --patch");
    call(r, "git", "{\"action\":\"spawn\",\"id\":\"staging\"}");
    call(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"y\\n\"}");
    call(r, "git", "{\"action\":\"fetch\",\"id\":\"staging\"}");
    call(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"n\\n\"}");
    printf("(git diff --cached now holds the first hunk only:)\n");
    fflush(stdout);
    shell(repo, "git diff --cached --stat");

    heading("A one-shot call whose tool asks, answered through the inquiry handler");
    call(r, "merge", "{\"feature\":\"search-v2\"}");

    jpt_registry_free(r);
    char cleanup[256];
    snprintf(cleanup, sizeof(cleanup), "rm -rf '%s'", repo);
    return system(cleanup) == 0 ? 0 : 1;
}
