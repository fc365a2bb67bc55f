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
        if (*p == '\n' && p[1] == '\0')
            break;
        putchar(*p);
        if (*p == '\n')
            printf("%*s", (int)strlen(prefix), "");
    }
    putchar('\n');
}

/* One result as the model reads it: a host hands each result's content to
 * its model (and its is_error flag, where the provider has one). */
static void show_result(const json_t *result)
{
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
    } else if (json_object_get(response, "completed") != NULL) {
        /* The await tool's answer (RFD 037), shown as the model gets it. */
        char *pretty = json_dumps(response, JSON_INDENT(2));
        indented("    ", pretty);
        free(pretty);
    } else
        indented("    ", content);
    json_decref(response);
    putchar('\n');
}

/* One model message: its tool calls, submitted as one batch, and their
 * results. `calls` is [{"name", "arguments"}] without ids. */
static void batch(jpt_registry *r, const char *calls)
{
    json_t *list = json_loads(calls, 0, NULL);
    size_t i;
    json_t *c;
    jpt_batch *b = NULL;
    char *text = NULL, *results = NULL;

    json_array_foreach(list, i, c) {
        char id[32];
        snprintf(id, sizeof(id), "call_%zu", i + 1);
        json_object_set_new(c, "id", json_string(id));
        text = json_dumps(json_object_get(c, "arguments"), JSON_COMPACT);
        printf("assistant → %s %s\n", json_string_value(json_object_get(c, "name")), text);
        free(text);
    }
    text = json_dumps(list, JSON_COMPACT);
    if (jpt_registry_submit(r, text, &b) != JPT_OK)
        die("submit", r);
    free(text);
    if (jpt_registry_wait(r, b, 60000) != JPT_OK)
        die("wait", r);
    if (jpt_batch_results_json(b, &results) != JPT_OK)
        die("results", r);
    json_t *res = json_loads(results, 0, NULL);
    json_array_foreach(res, i, c) show_result(c);
    json_decref(res);
    json_decref(list);
    jpt_free(results);
    jpt_batch_free(b);
}

/* One model turn with a single tool call. */
static void call(jpt_registry *r, const char *tool, const char *arguments)
{
    char calls[4096];

    snprintf(calls, sizeof(calls), "[{\"name\":\"%s\",\"arguments\":%s}]", tool, arguments);
    batch(r, calls);
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
             " \"command\":[\"%s/merge.py\",\"{{tool}}\"],\"question_target\":\"assistant\"},"
             /* Stand-ins for RFD 037's examples: the same shape of output,
              * the same difference in duration. */
             "{\"name\":\"cargo_check\",\"description\":\"cargo check\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"echo '    Checking jp_cli v0.1.0'; sleep 1; "
             "echo '    Finished dev profile: ok, 0 warnings'\"]},"
             "{\"name\":\"cargo_test\",\"description\":\"cargo test\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"echo 'running 42 tests'; sleep 2; "
             "echo 'test result: ok. 42 passed'\"]},"
             "{\"name\":\"crate_search\",\"description\":\"crates.io search\",\"stateful\":true,"
             " \"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"sleep 0.5; echo 'tokio, async-std, smol'\"]},"
             "{\"name\":\"github_code_search\",\"description\":\"GitHub code search\","
             " \"stateful\":true,\"actions\":[\"fetch\",\"abort\"],\"settle_ms\":100,"
             " \"command\":[\"sh\",\"-c\",\"sleep 5; echo 'tokio::spawn in 12k files'\"]}"
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

    heading("RFD 037: check and test in parallel, awaited in the same message");
    batch(r, "[{\"name\":\"cargo_check\",\"arguments\":{\"action\":\"spawn\",\"id\":\"check\"}},"
             "{\"name\":\"cargo_test\",\"arguments\":{\"action\":\"spawn\",\"id\":\"test\"}},"
             "{\"name\":\"await\",\"arguments\":{\"all\":[\"check\",\"test\"]}}]");

    heading("RFD 037: a race between two searches, the first answer wins");
    batch(r, "[{\"name\":\"crate_search\",\"arguments\":{\"action\":\"spawn\",\"id\":\"crates\"}},"
             "{\"name\":\"github_code_search\",\"arguments\":{\"action\":\"spawn\",\"id\":\"github\"}},"
             "{\"name\":\"await\",\"arguments\":{\"any\":[\"crates\",\"github\"]}}]");
    printf("(the slower search is still running; the assistant stops it:)\n\n");
    call(r, "github_code_search", "{\"action\":\"abort\",\"id\":\"github\"}");

    jpt_registry_free(r);
    char cleanup[256];
    snprintf(cleanup, sizeof(cleanup), "rm -rf '%s'", repo);
    return system(cleanup) == 0 ? 0 : 1;
}
