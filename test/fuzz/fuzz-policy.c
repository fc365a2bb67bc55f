/* libFuzzer harness for the access policy (vfs.h): the input up to its
 * first NUL is a `sandbox` configuration, each NUL-separated piece after it
 * a target, and the configuration text is a target too. Every target is
 * checked with every access kind against the configured policy, the
 * default one and a fixed one that uses every key. Beyond surviving:
 *  - a configuration is accepted with no message or refused with one, and
 *    a refused policy denies;
 *  - a file system check answers a verdict whose reason names it, and (on
 *    an accepted configuration) says "path is not normalised" exactly when
 *    jpt_policy_normalize_path() changes or refuses the target;
 *    normalising is idempotent;
 *  - on the default policy, a name that fnmatch(3) (FNM_CASEFOLD) matches
 *    against a built-in pattern is denied — an independent matcher;
 *  - a process check is JPT_ERR_INVALID exactly when the target is not a
 *    JSON array of strings with a non-empty program; a program without a
 *    rule in `commands` gets the `uncovered` verdict; and a process is
 *    allowed only when its program has a rule whose `args` (if any) admit
 *    its arguments — an independent reading of the configuration, which
 *    may refuse more (options a rule does not name) but never allow more. */
#define _GNU_SOURCE /* FNM_CASEFOLD */
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char rich_config[] =
    "{\"filesystem\":{\"allow\":[\"src\",\"docs/api\"],\"writable\":[\"build\"],"
    "\"deny\":[\"src/Private\"],\"hardlinks\":\"allow\"},"
    "\"sensitive_paths\":[\"*.key\",\"secrets/\",\"config/prod.yaml\",\"a?c*d\"],"
    "\"sensitive\":\"ask\",\"uncovered\":\"deny\","
    "\"network\":{\"allow\":[\"https://example.com/api\"],\"envs\":[\"TOKEN\"]},"
    "\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"]],\"envs\":[\"HOME\"]}}}";

static const char *const single_name_patterns[] = {".env", ".env.*", "*.pem", "id_rsa*",
                                                   "id_ed25519*"};
static const char *const directory_names[] = {".ssh", ".gnupg"};

static const char *outcome(int verdict)
{
    return verdict == JPT_VERDICT_ALLOW  ? "': allowed: "
           : verdict == JPT_VERDICT_DENY ? "': denied: "
                                         : "': needs approval: ";
}

/* Whether the normalised `path` holds a name the built-in list denies,
 * as fnmatch(3) sees it. */
static int builtin_sensitive(const char *path)
{
    const char *last = strrchr(path, '/');
    last = last != NULL ? last + 1 : path;
    for (size_t i = 0; i < sizeof(single_name_patterns) / sizeof(*single_name_patterns); i++)
        if (fnmatch(single_name_patterns[i], last, FNM_CASEFOLD) == 0)
            return 1;
    for (const char *p = path;;) {
        size_t n = strcspn(p, "/");
        for (size_t i = 0; i < 2; i++)
            if (n == strlen(directory_names[i]) && strncasecmp(p, directory_names[i], n) == 0)
                return 1;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

/* The normalised form of `target`, or NULL if it has none. */
static char *normalized(const char *target)
{
    char *once = NULL, *twice = NULL;
    int rc = jpt_policy_normalize_path(target, &once);

    if (rc == JPT_ERR_INVALID)
        return NULL;
    if (rc != JPT_OK)
        abort();
    if (jpt_policy_normalize_path(once, &twice) != JPT_OK || strcmp(once, twice) != 0)
        abort();
    jpt_free(twice);
    return once;
}

static void check_path(const jpt_policy *p, int access, const char *method,
                       const char *target, int is_normal, int is_default)
{
    char *reason = NULL;
    int verdict = jpt_policy_check(p, access, target, &reason);

    if (verdict != JPT_VERDICT_ALLOW && verdict != JPT_VERDICT_DENY &&
        verdict != JPT_VERDICT_ASK)
        abort();
    if (reason == NULL || strncmp(reason, method, strlen(method)) != 0 ||
        strstr(reason, outcome(verdict)) == NULL)
        abort();
    static const char not_normal[] = "': denied: path is not normalised";
    size_t len = strlen(reason);
    int says_not_normal = len >= sizeof(not_normal) - 1 &&
                          strcmp(reason + len - (sizeof(not_normal) - 1), not_normal) == 0;
    /* A refused configuration denies before looking at the path. */
    int refused = jpt_policy_errmsg(p)[0] != '\0';
    if (refused ? verdict != JPT_VERDICT_DENY : says_not_normal != !is_normal)
        abort();
    if (is_default && is_normal && builtin_sensitive(target) && verdict != JPT_VERDICT_DENY)
        abort();
    jpt_free(reason);
}

/* The process target as the policy reads it (a JSON array of strings, the
 * program first and not empty), or NULL. */
static json_t *process_argv(const char *target)
{
    json_t *argv = json_loads(target, 0, NULL);
    const char *program = json_string_value(json_array_get(argv, 0));
    int valid = program != NULL && program[0] != '\0';

    for (size_t i = 1; valid && i < json_array_size(argv); i++)
        valid = json_is_string(json_array_get(argv, i));
    if (!valid) {
        json_decref(argv);
        return NULL;
    }
    return argv;
}

/* Whether the argument list `list` of a rule admits argv[1..]: equal, or
 * a prefix followed by "**" as its last element. */
static int list_admits(const json_t *list, const json_t *argv)
{
    size_t n = json_array_size(list), nargs = json_array_size(argv) - 1;
    const char *last = json_string_value(json_array_get(list, n > 0 ? n - 1 : 0));
    int open = n > 0 && last != NULL && strcmp(last, "**") == 0;
    size_t fixed = open ? n - 1 : n;

    if (open ? nargs < fixed : nargs != fixed)
        return 0;
    for (size_t i = 0; i < fixed; i++) {
        const char *want = json_string_value(json_array_get(list, i));
        if (want == NULL || strcmp(want, json_string_value(json_array_get(argv, i + 1))) != 0)
            return 0;
    }
    return 1;
}

static void check_process(const jpt_policy *p, const json_t *config, const char *target)
{
    json_t *argv = process_argv(target);
    int rc = jpt_policy_check(p, JPT_ACCESS_PROCESS, target, NULL);

    if ((argv == NULL) != (rc == JPT_ERR_INVALID))
        abort();
    if (argv == NULL)
        return;
    if (rc != JPT_VERDICT_ALLOW && rc != JPT_VERDICT_DENY && rc != JPT_VERDICT_ASK)
        abort();
    if (jpt_policy_errmsg(p)[0] != '\0') {
        /* A refused configuration denies. */
        if (rc != JPT_VERDICT_DENY)
            abort();
        json_decref(argv);
        return;
    }
    const json_t *rule = json_object_get(json_object_get(config, "commands"),
                                         json_string_value(json_array_get(argv, 0)));
    const char *uncovered = json_string_value(json_object_get(config, "uncovered"));
    int uncovered_verdict = uncovered != NULL && strcmp(uncovered, "deny") == 0
                                ? JPT_VERDICT_DENY
                                : JPT_VERDICT_ASK;
    if (rule == NULL && rc != uncovered_verdict)
        abort();
    if (rc == JPT_VERDICT_ALLOW) {
        const json_t *lists = json_object_get(rule, "args"), *list;
        size_t i;
        int admitted = lists == NULL;
        json_array_foreach(lists, i, list) admitted = admitted || list_admits(list, argv);
        if (!admitted)
            abort();
    }
    json_decref(argv);
}

static void check_target(const jpt_policy *p, const json_t *config, const char *target,
                         int is_default)
{
    static const struct {
        int access;
        const char *method;
    } kinds[] = {{JPT_ACCESS_READ, "fs.read '"},
                 {JPT_ACCESS_WRITE, "fs.write '"},
                 {JPT_ACCESS_LIST, "fs.list_dir '"}};
    char *normal = normalized(target);
    int is_normal = normal != NULL && strcmp(normal, target) == 0;

    for (size_t i = 0; i < 3; i++)
        check_path(p, kinds[i].access, kinds[i].method, target, is_normal, is_default);
    if (normal != NULL)
        for (size_t i = 0; i < 3; i++)
            check_path(p, kinds[i].access, kinds[i].method, normal, 1, is_default);
    jpt_free(normal);

    /* URLs have a harness of their own (fuzz-policy-url): a verdict with
     * its reason here. */
    char *reason = NULL;
    int verdict = jpt_policy_check(p, JPT_ACCESS_HTTP, target, &reason);
    if (verdict != JPT_ERR_NOMEM &&
        (verdict <= 0 || reason == NULL || strncmp(reason, "http '", 6) != 0))
        abort();
    jpt_free(reason);
    check_process(p, config, target);
}

static jpt_policy *make_policy(const char *config)
{
    jpt_policy *p = NULL;
    int rc = jpt_policy_new(config, &p);

    if (p == NULL || (rc != JPT_OK && rc != JPT_ERR_INVALID))
        abort();
    if ((rc == JPT_OK) != (jpt_policy_errmsg(p)[0] == '\0'))
        abort();
    if (rc != JPT_OK && jpt_policy_check(p, JPT_ACCESS_READ, "src", NULL) != JPT_VERDICT_DENY)
        abort();
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    /* The default and the fixed policy are made once (kept to the end). */
    static jpt_policy *fixed[2];
    if (fixed[0] == NULL) {
        fixed[0] = make_policy(NULL);
        fixed[1] = make_policy(rich_config);
    }
    static json_t *fixed_config[2];
    if (fixed_config[1] == NULL) {
        fixed_config[0] = json_object();
        fixed_config[1] = json_loads(rich_config, 0, NULL);
        if (fixed_config[0] == NULL || fixed_config[1] == NULL)
            abort();
    }
    jpt_policy *configured = make_policy(text);
    /* The configuration as an independent reader sees it ({} when refused:
     * a refused policy is checked as denying everything). */
    json_t *config = json_loads(text, 0, NULL);
    if (!json_is_object(config)) {
        json_decref(config);
        config = json_object();
    }
    const jpt_policy *policies[3] = {configured, fixed[0], fixed[1]};
    const json_t *configs[3] = {config, fixed_config[0], fixed_config[1]};
    for (size_t i = 0; i < 3; i++)
        for (size_t at = 0; at <= size; at += strlen(text + at) + 1)
            check_target(policies[i], configs[i], text + at, i == 1);
    json_decref(config);
    jpt_policy_free(configured);
    free(text);
    return 0;
}
