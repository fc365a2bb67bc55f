/* The access policy (vfs.h, "The access policy"; issue 9 §3): the default
 * policy, every rule and its precedence, sensitive paths (built in, case,
 * names beneath directories, extension, no shrinking, "ask"), the path
 * contract, every configuration error with its message, and allocation
 * failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "test-util.h"

#define ALLOW JPT_VERDICT_ALLOW
#define DENY JPT_VERDICT_DENY
#define ASK JPT_VERDICT_ASK
#define READ JPT_ACCESS_READ
#define WRITE JPT_ACCESS_WRITE
#define LIST JPT_ACCESS_LIST

static jpt_policy *policy(const char *json)
{
    jpt_policy *p = NULL;
    int rc = jpt_policy_new(json, &p);

    if (rc != JPT_OK)
        fail_msg("jpt_policy_new(%s): %s: %s", json ? json : "NULL", jpt_status_name(rc),
                 p != NULL ? jpt_policy_errmsg(p) : "");
    assert_string_equal(jpt_policy_errmsg(p), "");
    return p;
}

/* Checks the verdict and the exact reason; frees what it holds before it
 * fails, so that a valgrind run shows only the library's leaks. */
static void expect(const jpt_policy *p, int access, const char *target, int verdict,
                   const char *reason)
{
    char *got = NULL;
    char text[1024];
    int rc = jpt_policy_check(p, access, target, &got);

    snprintf(text, sizeof(text), "%s", got != NULL ? got : "(no reason)");
    jpt_free(got);
    if (rc != verdict || strcmp(text, reason) != 0)
        fail_msg("check(%d, '%s'): expected %d \"%s\", got %d \"%s\"", access, target,
                 verdict, reason, rc, text);
}

/* Only the verdict (the reason is not asked for). */
static void expect_verdict(const jpt_policy *p, int access, const char *target, int verdict)
{
    int rc = jpt_policy_check(p, access, target, NULL);

    if (rc != verdict)
        fail_msg("check(%d, '%s'): expected %d, got %d", access, target, verdict, rc);
}

/* jpt_policy_new() refuses `json` with exactly `message`; the policy it
 * still hands out denies everything, naming the message. */
static void expect_refused(const char *json, const char *message)
{
    jpt_policy *p = NULL;
    char got[JPT__ERRMSG_MAX], reason[1024], expected[1024];
    char *r = NULL;
    int rc = jpt_policy_new(json, &p);

    if (rc != JPT_ERR_INVALID || p == NULL) {
        jpt_policy_free(p);
        fail_msg("%s: expected JPT_ERR_INVALID and a policy, got %s", json,
                 jpt_status_name(rc));
    }
    snprintf(got, sizeof(got), "%s", jpt_policy_errmsg(p));
    int verdict = jpt_policy_check(p, READ, "src/main.rs", &r);
    snprintf(reason, sizeof(reason), "%s", r != NULL ? r : "");
    jpt_free(r);
    int hardlinks = jpt_policy_hardlinks_allowed(p);
    jpt_policy_free(p);
    if (strcmp(got, message) != 0)
        fail_msg("%s:\n expected \"%s\"\n      got \"%s\"", json, message, got);
    snprintf(expected, sizeof(expected),
             "fs.read 'src/main.rs': denied: the sandbox configuration was refused (%s)",
             message);
    assert_int_equal(verdict, DENY);
    assert_string_equal(reason, expected);
    assert_int_equal(hardlinks, 0);
}

/* ---- The default policy ----------------------------------------------------------- */

/* D11: "A VFS tool with no sandbox section gets the default policy:
 * workspace read-only, no network, no subprocess spawning." */
static void default_policy_reads_and_lists_the_workspace(void **state)
{
    (void)state;
    const char *configs[] = {NULL, "{}"};
    for (size_t i = 0; i < 2; i++) {
        jpt_policy *p = policy(configs[i]);
        expect(p, READ, "src/main.rs", ALLOW,
               "fs.read 'src/main.rs': allowed: the default policy lets tools read the "
               "workspace");
        expect(p, LIST, ".", ALLOW,
               "fs.list_dir '.': allowed: the default policy lets tools read the workspace");
        expect(p, READ, "README.md", ALLOW,
               "fs.read 'README.md': allowed: the default policy lets tools read the "
               "workspace");
        jpt_policy_free(p);
    }
}

static void default_policy_asks_before_any_write(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    expect(p, WRITE, "src/main.rs", ASK,
           "fs.write 'src/main.rs': needs approval: not covered by the policy (the "
           "workspace is read-only: filesystem.writable is false)");
    expect(p, WRITE, "new.txt", ASK,
           "fs.write 'new.txt': needs approval: not covered by the policy (the workspace is "
           "read-only: filesystem.writable is false)");
    jpt_policy_free(p);
}

/* D11's default: no URL is listed and no command has a rule, so a request
 * of either is not covered, and asked about as an uncovered write is;
 * "uncovered": "deny" refuses them. */
static void default_policy_asks_for_network_and_processes(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    expect(p, JPT_ACCESS_HTTP, "https://api.github.com/repos/o/r", ASK,
           "http 'https://api.github.com/repos/o/r': needs approval: not covered by the "
           "policy (network.allow lists no URL)");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"check\",\"--message-format=json\"]", ASK,
           "process.run 'cargo': needs approval: not covered by the policy (commands has no "
           "rule for this program)");
    jpt_policy_free(p);
    p = policy("{\"uncovered\":\"deny\"}");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\"]", DENY,
           "process.run 'cargo': denied: not covered by the policy (commands has no rule for "
           "this program)");
    expect(p, JPT_ACCESS_HTTP, "https://api.github.com/", DENY,
           "http 'https://api.github.com/': denied: not covered by the policy (network.allow "
           "lists no URL)");
    jpt_policy_free(p);
}

/* The reason the person asked reads shows the path or program without a
 * character that displays other than it reads: a bidirectional override
 * would make "exe.txt" of "txt.exe", a C1 control or a line separator
 * start a line of the tool's choosing. */
static void a_reason_quotes_controls_and_bidi_overrides(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    expect(p, JPT_ACCESS_PROCESS, "[\"ls\\u202etxt.exe\\u2069\\u0085x\\u200e\"]", ASK,
           "process.run 'ls?txt.exe?" "?x?': needs approval: not covered by the policy (commands "
           "has no rule for this program)");
    expect(p, WRITE, "docs/\xe2\x80\xae" "exe.md\x1b[2J\xe2\x80\xa8\xd8\x9c", ASK,
           "fs.write 'docs/?exe.md?[2J?" "?': needs approval: not covered by the policy (the "
           "workspace is read-only: filesystem.writable is false)");
    /* What is not a control stays as it is. */
    expect(p, WRITE, "docs/\xc3\xa9" "t\xc3\xa9.md", ASK,
           "fs.write 'docs/\xc3\xa9" "t\xc3\xa9.md': needs approval: not covered by the policy (the "
           "workspace is read-only: filesystem.writable is false)");
    jpt_policy_free(p);
}

static void default_policy_denies_sensitive_paths(void **state)
{
    (void)state;
    jpt_policy *p = policy("{}");
    expect(p, READ, ".env", DENY,
           "fs.read '.env': denied: path is in the sensitive paths list (.env)");
    jpt_policy_free(p);
}

static void hardlinks_are_denied_unless_allowed(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    assert_int_equal(jpt_policy_hardlinks_allowed(p), 0);
    jpt_policy_free(p);
    p = policy("{\"filesystem\":{\"hardlinks\":\"deny\"}}");
    assert_int_equal(jpt_policy_hardlinks_allowed(p), 0);
    jpt_policy_free(p);
    p = policy("{\"filesystem\":{\"hardlinks\":\"allow\"}}");
    assert_int_equal(jpt_policy_hardlinks_allowed(p), 1);
    jpt_policy_free(p);
    assert_int_equal(jpt_policy_hardlinks_allowed(NULL), 0);
}

/* ---- Sensitive paths ---------------------------------------------------------------- */

typedef struct sensitive_case {
    const char *path;
    const char *pattern;
} sensitive_case;

/* rfd/README.md's list, each pattern at the root and deeper. */
static const sensitive_case builtin_cases[] = {
    {".env", ".env"},
    {"app/.env", ".env"},
    {".env.local", ".env.*"},
    {"deploy/.env.production", ".env.*"},
    {".ssh", ".ssh/"},
    {".ssh/id_ecdsa", ".ssh/"},
    {"home/user/.ssh/known_hosts", ".ssh/"},
    {".gnupg/private-keys-v1.d/key", ".gnupg/"},
    {".aws/credentials", ".aws/credentials"},
    {"home/.aws/credentials", ".aws/credentials"},
    {".kube/config", ".kube/config"},
    {".docker/config.json", ".docker/config.json"},
    {".git/config", ".git/config"},
    {"vendor/lib/.git/config", ".git/config"},
    {".git/hooks", ".git/hooks/"},
    {".git/hooks/pre-commit", ".git/hooks/"},
    {"sub/.git/hooks/post-checkout", ".git/hooks/"},
    {"server.pem", "*.pem"},
    {"certs/ca.pem", "*.pem"},
    {".pem", "*.pem"},
    {"id_rsa", "id_rsa*"},
    {"keys/id_rsa.pub", "id_rsa*"},
    {"id_ed25519", "id_ed25519*"},
    {"id_ed25519.pub", "id_ed25519*"},
};

static void every_builtin_pattern_is_denied_for_every_access(void **state)
{
    (void)state;
    static const struct {
        int access;
        const char *method;
    } kinds[] = {{READ, "fs.read"}, {WRITE, "fs.write"}, {LIST, "fs.list_dir"}};
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\".\"],\"writable\":true}}");
    char reason[512];

    for (size_t i = 0; i < sizeof(builtin_cases) / sizeof(builtin_cases[0]); i++)
        for (size_t k = 0; k < 3; k++) {
            snprintf(reason, sizeof(reason),
                     "%s '%s': denied: path is in the sensitive paths list (%s)",
                     kinds[k].method, builtin_cases[i].path, builtin_cases[i].pattern);
            expect(p, kinds[k].access, builtin_cases[i].path, DENY, reason);
        }
    jpt_policy_free(p);
}

static void names_match_case_insensitively(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    expect(p, READ, ".ENV", DENY,
           "fs.read '.ENV': denied: path is in the sensitive paths list (.env)");
    expect(p, READ, "keys/Id_Rsa.pub", DENY,
           "fs.read 'keys/Id_Rsa.pub': denied: path is in the sensitive paths list "
           "(id_rsa*)");
    expect(p, READ, ".SSH/config", DENY,
           "fs.read '.SSH/config': denied: path is in the sensitive paths list (.ssh/)");
    expect(p, READ, "CA.PEM", DENY,
           "fs.read 'CA.PEM': denied: path is in the sensitive paths list (*.pem)");
    expect(p, READ, ".Git/Config", DENY,
           "fs.read '.Git/Config': denied: path is in the sensitive paths list "
           "(.git/config)");
    expect(p, READ, ".Env.Production", DENY,
           "fs.read '.Env.Production': denied: path is in the sensitive paths list "
           "(.env.*)");
    expect_verdict(p, READ, ".GIT/HOOKS/Pre-Commit", DENY);
    expect_verdict(p, READ, "ID_ED25519", DENY);
    jpt_policy_free(p);
}

/* A case-folding file system (ext4 casefold, APFS) opens ".ssh" for
 * ".\u017Fsh" and ".kube" for ".\u212Aube". */
static void characters_folding_to_ascii_letters_match(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    expect(p, READ, ".\xC5\xBFsh/id", DENY,
           "fs.read '.\xC5\xBFsh/id': denied: path is in the sensitive paths list (.ssh/)");
    expect(p, READ, ".\xE2\x84\xAAube/config", DENY,
           "fs.read '.\xE2\x84\xAAube/config': denied: path is in the sensitive paths list "
           "(.kube/config)");
    expect_verdict(p, READ, ".s\xC5\xBF", ALLOW); /* ".ss": no pattern */
    jpt_policy_free(p);
}

static void names_that_only_look_alike_are_not_sensitive(void **state)
{
    (void)state;
    static const char *const paths[] = {
        ".envrc", "env", "my.env", "x.pem.bak", "my_id_rsa", ".sshx/id", "ssh/id",
        "credentials", ".aws/credentials.bak", ".aws/config", "config", ".git/config.d",
        ".git/description", "hooks/pre-commit", "git/hooks/x", ".kube/cache/x",
        ".docker/daemon.json", "docker/config.json",
        /* a Python virtual environment named ".env" is a directory: ".env"
         * matches the last name only */
        ".env/bin/activate",
    };
    jpt_policy *p = policy(NULL);

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        expect_verdict(p, READ, paths[i], ALLOW);
    jpt_policy_free(p);
}

/* rfd/README.md: matching is by name when the request comes, so a file the
 * tool creates (or that appears) after it started is covered. */
static void a_name_never_seen_before_is_covered(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":true}}");
    expect(p, WRITE, "generated/2026/.env.test", DENY,
           "fs.write 'generated/2026/.env.test': denied: path is in the sensitive paths "
           "list (.env.*)");
    expect_verdict(p, READ, "generated/2026/.env.test", DENY);
    jpt_policy_free(p);
}

/* Renaming ".git" to "g" would turn ".git/config" into "g/config"; a
 * directory that may hold a pattern of several names cannot be written,
 * renamed or deleted, though it can be read and listed. */
static void directories_holding_sensitive_paths_cannot_be_written(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":true}}");
    expect(p, WRITE, ".git", DENY,
           "fs.write '.git': denied: path may hold a path of the sensitive paths list "
           "(.git/config)");
    expect(p, WRITE, "home/.aws", DENY,
           "fs.write 'home/.aws': denied: path may hold a path of the sensitive paths list "
           "(.aws/credentials)");
    expect_verdict(p, WRITE, ".kube", DENY);
    expect_verdict(p, WRITE, ".Docker", DENY);
    expect_verdict(p, READ, ".git", ALLOW);
    expect_verdict(p, LIST, ".git", ALLOW);
    expect_verdict(p, WRITE, ".aws/config", ALLOW);
    expect_verdict(p, WRITE, "home", ALLOW);
    jpt_policy_free(p);
}

static void configured_patterns_extend_the_list(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"sensitive_paths\":[\"secrets/\",\"*.key\",\"config/prod.yaml\","
                           "\"**/.secret.*\",\"backup-????.tar\"]}");
    expect(p, READ, "app/secrets/db", DENY,
           "fs.read 'app/secrets/db': denied: path is in the sensitive paths list "
           "(secrets/)");
    expect(p, READ, "tls/Server.KEY", DENY,
           "fs.read 'tls/Server.KEY': denied: path is in the sensitive paths list (*.key)");
    expect(p, READ, "deploy/config/prod.yaml", DENY,
           "fs.read 'deploy/config/prod.yaml': denied: path is in the sensitive paths list "
           "(config/prod.yaml)");
    expect(p, READ, ".secret.json", DENY,
           "fs.read '.secret.json': denied: path is in the sensitive paths list "
           "(**/.secret.*)");
    expect_verdict(p, READ, "backup-2026.tar", DENY);
    expect_verdict(p, READ, "backup-26.tar", ALLOW);
    expect_verdict(p, READ, "config/dev.yaml", ALLOW);
    expect_verdict(p, WRITE, "deploy/config", DENY); /* may hold config/prod.yaml */
    expect(p, READ, ".env", DENY,
           "fs.read '.env': denied: path is in the sensitive paths list (.env)");
    jpt_policy_free(p);
}

/* rfd/README.md: a configuration "can never shrink the built-in list". */
static void no_configuration_shrinks_the_list(void **state)
{
    (void)state;
    static const char *const configs[] = {
        "{\"sensitive_paths\":[]}",
        "{\"filesystem\":{\"allow\":[\".env\",\".ssh\"],\"writable\":true}}",
        "{\"filesystem\":{\"writable\":[\".env\",\".ssh\"]}}",
        "{\"sensitive_paths\":[\"other\"],\"uncovered\":\"ask\"}",
    };
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        jpt_policy *p = policy(configs[i]);
        expect_verdict(p, READ, ".env", DENY);
        expect_verdict(p, WRITE, ".env", DENY);
        expect_verdict(p, READ, ".ssh/id_rsa", DENY);
        jpt_policy_free(p);
    }
    /* and no key removes from it */
    expect_refused("{\"sensitive\":\"allow\"}",
                   "sensitive: expected \"deny\" or \"ask\", got \"allow\"");
    expect_refused("{\"sensitive_paths\":{\"remove\":[\".env\"]}}",
                   "sensitive_paths: expected an array of patterns, got an object");
}

static void sensitive_ask_sends_them_to_the_handler(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"sensitive\":\"ask\",\"filesystem\":{\"writable\":true}}");
    expect(p, READ, ".env", ASK,
           "fs.read '.env': needs approval: path is in the sensitive paths list (.env)");
    expect(p, WRITE, ".git", ASK,
           "fs.write '.git': needs approval: path may hold a path of the sensitive paths "
           "list (.git/config)");
    expect_verdict(p, READ, "src/main.rs", ALLOW);
    jpt_policy_free(p);
}

/* issue 15 §2: writing git's files is a way out (the next `git status`
 * runs a core.fsmonitor the tool wrote): any ".git" name and a file named
 * HEAD are sensitive to writes, in any case; reads are as before. */
static void git_files_are_sensitive_to_writes(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":true}}");
    static const char *const refused[] = {
        ".git/HEAD", ".GIT/commondir", ".Git/objects/info/alternates", "sub/.git",
        "sub/.git/config", "a/b/.gIT/x/y", "HEAD", "bare/head", "x/Head", ".git",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        expect_verdict(p, WRITE, refused[i], DENY);
    expect(p, WRITE, "sub/.git/objects/x", DENY,
           "fs.write 'sub/.git/objects/x': denied: path is in a git repository's own files "
           "(a '.git' name), which could make git run commands; filesystem.git is "
           "\"protected\"");
    expect(p, WRITE, "bare/HEAD", DENY,
           "fs.write 'bare/HEAD': denied: a file named HEAD makes its directory a git "
           "repository, which could make git run commands; filesystem.git is \"protected\"");
    static const char *const written[] = {
        ".gitignore", ".github/workflows/ci.yml", "git/HEAD.md", "HEADER", "x.git/y",
        "HEAD/x", "src/.gitattributes", "my.git",
    };
    for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++)
        expect_verdict(p, WRITE, written[i], ALLOW);
    expect_verdict(p, READ, ".git/HEAD", ALLOW);
    expect_verdict(p, LIST, ".git/refs", ALLOW);
    expect_verdict(p, READ, "bare/HEAD", ALLOW);
    jpt_policy_free(p);

    /* "sensitive": "ask" asks about them, as about the list's. */
    p = policy("{\"sensitive\":\"ask\",\"filesystem\":{\"writable\":true}}");
    expect_verdict(p, WRITE, ".git/HEAD", ASK);
    jpt_policy_free(p);

    /* "git": "writable": the host says the tool may; the other rules
     * decide, and the list's .git/config and .git/hooks/ stay. */
    p = policy("{\"filesystem\":{\"writable\":true,\"git\":\"writable\"}}");
    expect_verdict(p, WRITE, ".git/HEAD", ALLOW);
    expect_verdict(p, WRITE, "bare/HEAD", ALLOW);
    expect_verdict(p, WRITE, ".git/config", DENY);
    expect_verdict(p, WRITE, ".git/hooks/pre-commit", DENY);
    jpt_policy_free(p);
    p = policy("{\"filesystem\":{\"git\":\"writable\"}}");
    expect_verdict(p, WRITE, ".git/HEAD", ASK); /* the workspace is read-only */
    jpt_policy_free(p);
    p = policy("{\"filesystem\":{\"writable\":true,\"git\":\"protected\"}}");
    expect_verdict(p, WRITE, ".git/HEAD", DENY);
    jpt_policy_free(p);
}

/* A directory a write creates on its way (the files room's check before
 * it makes any) is refused for what its name is, and never for want of a
 * grant: that is its target's check. */
static void a_directory_a_write_creates_is_judged_by_its_name(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":[\"out/gen\"],"
                           "\"deny\":[\"secret\"]}}");
    char *reason = NULL;

    /* "out" is not writable, but making it is how "out/gen/x" is written */
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, "out", NULL, NULL, NULL), ALLOW);
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, "elsewhere", NULL, NULL, NULL),
                     ALLOW);
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, "a/.env", NULL, NULL, &reason),
                     DENY);
    assert_string_equal(reason, "fs.write 'a/.env': denied: path is in the sensitive paths "
                                "list (.env)");
    jpt_free(reason);
    static const char *const refused[] = {".ssh", "x/.ssh/keys", "secret", "Secret/a",
                                          ".git", "sub/.GIT", "bare/HEAD", "id_rsa"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (jpt__policy_check(p, JPT__ACCESS_CREATE, refused[i], NULL, NULL, NULL) != DENY)
            fail_msg("making the directory '%s' is not refused", refused[i]);
    /* an empty directory neither moves a sensitive path nor a denied one */
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, ".aws", NULL, NULL, NULL), ALLOW);
    jpt_policy_free(p);
    p = policy("{\"filesystem\":{\"deny\":[\"a/b/secret\"]}}");
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, "a", NULL, NULL, NULL), ALLOW);
    jpt_policy_free(p);
    p = policy("{\"sensitive\":\"ask\"}");
    assert_int_equal(jpt__policy_check(p, JPT__ACCESS_CREATE, "x/.ssh", NULL, NULL, NULL), ASK);
    jpt_policy_free(p);
}

/* Compiling each built-in pattern's text gives its table entry. */
static void builtin_table_matches_its_patterns(void **state)
{
    (void)state;
    assert_int_equal(jpt__pattern_builtin_count(), 12);
    for (size_t i = 0; i < jpt__pattern_builtin_count(); i++) {
        const jpt__policy_pattern *b = jpt__pattern_builtin(i);
        jpt__policy_pattern c;
        const char *why = NULL;
        assert_int_equal(jpt__pattern_compile(b->text, &c, &why), JPT_OK);
        assert_string_equal(c.text, b->text);
        assert_string_equal(c.names, b->names);
        assert_int_equal(c.n_names, b->n_names);
        assert_int_equal(c.dir, b->dir);
        jpt__free(c.storage);
    }
}

/* ---- Grants -------------------------------------------------------------------------- */

static void allow_prefixes_match_whole_names(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"src\",\"docs/api\"]}}");
    expect(p, READ, "src", ALLOW, "fs.read 'src': allowed: under 'src' in filesystem.allow");
    expect(p, READ, "src/a/b.c", ALLOW,
           "fs.read 'src/a/b.c': allowed: under 'src' in filesystem.allow");
    expect(p, LIST, "docs/api", ALLOW,
           "fs.list_dir 'docs/api': allowed: under 'docs/api' in filesystem.allow");
    expect(p, READ, "src2/x", ASK,
           "fs.read 'src2/x': needs approval: not covered by the policy (outside "
           "filesystem.allow)");
    expect_verdict(p, READ, "srcx", ASK);
    expect_verdict(p, LIST, "docs", ASK);
    expect_verdict(p, READ, "docs/apix", ASK);
    expect_verdict(p, LIST, ".", ASK);
    jpt_policy_free(p);
}

static void allow_prefixes_are_normalised(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"./src/\",\"lib//x\",\"a/../docs\"]}}");
    expect(p, READ, "src/x", ALLOW, "fs.read 'src/x': allowed: under 'src' in filesystem.allow");
    expect(p, READ, "lib/x/y", ALLOW,
           "fs.read 'lib/x/y': allowed: under 'lib/x' in filesystem.allow");
    expect(p, READ, "docs", ALLOW, "fs.read 'docs': allowed: under 'docs' in filesystem.allow");
    expect_verdict(p, READ, "a", ASK);
    jpt_policy_free(p);
}

/* Allowing less on a case-insensitive file system is the safe mistake. */
static void allow_prefixes_match_case_exactly(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"src\"],\"writable\":true}}");
    expect_verdict(p, READ, "SRC/x", ASK);
    expect_verdict(p, WRITE, "Src/x", ASK);
    jpt_policy_free(p);
}

static void an_empty_allow_list_grants_nothing(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[]}}");
    expect(p, LIST, ".", ASK,
           "fs.list_dir '.': needs approval: not covered by the policy (outside "
           "filesystem.allow)");
    expect_verdict(p, READ, "src/main.rs", ASK);
    jpt_policy_free(p);
}

/* D11's example: filesystem.allow = ["."], filesystem.writable = true. */
static void writable_true_makes_the_allowed_prefixes_writable(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\".\"],\"writable\":true}}");
    expect(p, WRITE, "src/main.rs", ALLOW,
           "fs.write 'src/main.rs': allowed: under '.' in filesystem.allow, and "
           "filesystem.writable is true");
    jpt_policy_free(p);

    p = policy("{\"filesystem\":{\"allow\":[\"src\"],\"writable\":true}}");
    expect(p, WRITE, "src/a.c", ALLOW,
           "fs.write 'src/a.c': allowed: under 'src' in filesystem.allow, and "
           "filesystem.writable is true");
    expect(p, WRITE, "README.md", ASK,
           "fs.write 'README.md': needs approval: not covered by the policy (outside "
           "filesystem.allow)");
    jpt_policy_free(p);

    p = policy("{\"filesystem\":{\"writable\":true}}"); /* allow defaults to "." */
    expect_verdict(p, WRITE, "any/where", ALLOW);
    jpt_policy_free(p);
}

static void a_writable_list_grants_writing_and_reading_there(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"src\"],\"writable\":[\"build\"]}}");
    expect(p, WRITE, "build/out.o", ALLOW,
           "fs.write 'build/out.o': allowed: under 'build' in filesystem.writable");
    expect(p, READ, "build/out.o", ALLOW,
           "fs.read 'build/out.o': allowed: under 'build' in filesystem.writable");
    expect(p, WRITE, "src/a.c", ASK,
           "fs.write 'src/a.c': needs approval: not covered by the policy (outside "
           "filesystem.writable)");
    expect_verdict(p, READ, "src/a.c", ALLOW);
    jpt_policy_free(p);

    p = policy("{\"filesystem\":{\"writable\":[]}}");
    expect(p, WRITE, "a", ASK,
           "fs.write 'a': needs approval: not covered by the policy (outside "
           "filesystem.writable)");
    jpt_policy_free(p);
}

static void writable_false_grants_no_write(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\".\"],\"writable\":false}}");
    expect(p, WRITE, "a", ASK,
           "fs.write 'a': needs approval: not covered by the policy (the workspace is "
           "read-only: filesystem.writable is false)");
    expect(p, READ, "a", ALLOW, "fs.read 'a': allowed: under '.' in filesystem.allow");
    jpt_policy_free(p);
}

static void uncovered_deny_refuses_what_nothing_grants(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"uncovered\":\"deny\",\"filesystem\":{\"allow\":[\"src\"]}}");
    expect(p, READ, "README.md", DENY,
           "fs.read 'README.md': denied: not covered by the policy (outside "
           "filesystem.allow)");
    expect(p, WRITE, "src/a.c", DENY,
           "fs.write 'src/a.c': denied: not covered by the policy (the workspace is "
           "read-only: filesystem.writable is false)");
    expect_verdict(p, READ, "src/a.c", ALLOW);
    jpt_policy_free(p);

    p = policy("{\"uncovered\":\"ask\"}");
    expect_verdict(p, WRITE, "a", ASK);
    jpt_policy_free(p);
}

/* ---- Deny and precedence -------------------------------------------------------------- */

/* TESTING.md: "deny and allow on the same path". */
static void deny_beats_allow_on_the_same_path(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"src\"],\"writable\":[\"src\"],"
                           "\"deny\":[\"src\",\"docs/private\"]}}");
    expect(p, READ, "src/a.c", DENY, "fs.read 'src/a.c': denied: under 'src' in filesystem.deny");
    expect(p, WRITE, "src", DENY, "fs.write 'src': denied: under 'src' in filesystem.deny");
    expect(p, LIST, "docs/private/x", DENY,
           "fs.list_dir 'docs/private/x': denied: under 'docs/private' in filesystem.deny");
    expect_verdict(p, READ, "docs/public", ASK);
    jpt_policy_free(p);
}

/* A deny list must not be dodged on a case-insensitive file system. */
static void deny_prefixes_match_case_insensitively(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"deny\":[\"Secrets/Prod\"]}}");
    expect(p, READ, "secrets/prod/db.yaml", DENY,
           "fs.read 'secrets/prod/db.yaml': denied: under 'Secrets/Prod' in filesystem.deny");
    expect_verdict(p, READ, "SECRETS/PROD", DENY);
    expect_verdict(p, READ, "secrets/\xC5\xBFtaging", ALLOW);
    expect_verdict(p, READ, "secrets/products", ALLOW);
    jpt_policy_free(p);
}

/* Renaming "config" would move "config/prod" out of the deny list's reach. */
static void directories_holding_denied_prefixes_cannot_be_written(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":true,\"deny\":[\"config/prod\"]}}");
    expect(p, WRITE, "config", DENY,
           "fs.write 'config': denied: path holds 'config/prod', which filesystem.deny lists");
    expect(p, WRITE, ".", DENY,
           "fs.write '.': denied: path holds 'config/prod', which filesystem.deny lists");
    expect_verdict(p, WRITE, "CONFIG", DENY);
    expect_verdict(p, READ, "config", ALLOW);
    expect_verdict(p, WRITE, "config/dev", ALLOW);
    expect_verdict(p, WRITE, "conf", ALLOW);
    jpt_policy_free(p);
}

/* vfs.h's order: not normalised, sensitive (deny), filesystem.deny,
 * sensitive (ask), grants, uncovered. */
static void precedence_is_as_documented(void **state)
{
    (void)state;
    /* a sensitive path that the deny list names too: the sensitive reason */
    jpt_policy *p = policy("{\"filesystem\":{\"deny\":[\".env\"]}}");
    expect(p, READ, ".env", DENY,
           "fs.read '.env': denied: path is in the sensitive paths list (.env)");
    jpt_policy_free(p);

    /* deny beats ask */
    p = policy("{\"sensitive\":\"ask\",\"filesystem\":{\"deny\":[\".env\"]}}");
    expect(p, READ, ".env", DENY, "fs.read '.env': denied: under '.env' in filesystem.deny");
    expect_verdict(p, READ, "app/.env", ASK);
    jpt_policy_free(p);

    /* ask (sensitive) beats allow */
    p = policy("{\"sensitive\":\"ask\",\"filesystem\":{\"allow\":[\".env\"]}}");
    expect_verdict(p, READ, ".env", ASK);
    jpt_policy_free(p);

    /* not normalised beats everything, even a refused path's grant */
    p = policy("{\"filesystem\":{\"allow\":[\".\"]}}");
    expect(p, READ, "a/../.env", DENY, "fs.read 'a/../.env': denied: path is not normalised");
    jpt_policy_free(p);
}

/* ---- The path contract ---------------------------------------------------------------- */

static void paths_that_are_not_normalised_are_denied(void **state)
{
    (void)state;
    static const char *const paths[] = {
        "", "/", "/etc/passwd", "a//b", "a/", "./a", "a/./b", "a/..", "../x", "..",
        "a/../b", "//a", ".//", "a/b/.",
    };
    char reason[256];
    jpt_policy *p = policy("{\"filesystem\":{\"writable\":true}}");

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        snprintf(reason, sizeof(reason), "fs.read '%s': denied: path is not normalised",
                 paths[i]);
        expect(p, READ, paths[i], DENY, reason);
        expect_verdict(p, WRITE, paths[i], DENY);
        expect_verdict(p, LIST, paths[i], DENY);
    }
    jpt_policy_free(p);
}

static void expect_normalized(const char *path, const char *expected)
{
    char *out = NULL;
    char got[256];
    int rc = jpt_policy_normalize_path(path, &out);

    snprintf(got, sizeof(got), "%s", out != NULL ? out : "(none)");
    jpt_free(out);
    if (rc != JPT_OK || strcmp(got, expected) != 0)
        fail_msg("normalize('%s'): expected '%s', got %s '%s'", path, expected,
                 jpt_status_name(rc), got);
}

static void expect_not_normalizable(const char *path)
{
    char *out = (char *)&out;
    int rc = jpt_policy_normalize_path(path, &out);

    if (rc != JPT_ERR_INVALID)
        fail_msg("normalize('%s'): expected JPT_ERR_INVALID, got %s", path ? path : "NULL",
                 jpt_status_name(rc));
    assert_null(out);
}

static void normalize_path_gives_the_form_checks_take(void **state)
{
    (void)state;
    expect_normalized("a/b", "a/b");
    expect_normalized("./a//b/", "a/b");
    expect_normalized("a/../b", "b");
    expect_normalized("a/b/../../c", "c");
    expect_normalized("", ".");
    expect_normalized(".", ".");
    expect_normalized("./", ".");
    expect_normalized("a/..", ".");
    expect_normalized("a/./././b//.", "a/b");
    expect_normalized("...", "...");
    expect_normalized("..a/b..", "..a/b..");
    expect_not_normalizable("/a");
    expect_not_normalizable("/");
    expect_not_normalizable("..");
    expect_not_normalizable("../a");
    expect_not_normalizable("a/../..");
    expect_not_normalizable("a/../../b");
    expect_not_normalizable(NULL);
    assert_int_equal(jpt_policy_normalize_path("a", NULL), JPT_ERR_INVALID);
}

/* What the normaliser gives, a check takes: a pre-check sees through
 * "x/../.env". */
static void a_normalized_request_is_checked_by_its_names(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    char *path = NULL;
    assert_int_equal(jpt_policy_normalize_path("src/../.env", &path), JPT_OK);
    int verdict = jpt_policy_check(p, READ, path, NULL);
    jpt_free(path);
    assert_int_equal(verdict, DENY);
    jpt_policy_free(p);
}

/* ---- The check call --------------------------------------------------------------------- */

static void check_refuses_bad_arguments(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    char *reason = (char *)&reason;

    assert_int_equal(jpt_policy_check(NULL, READ, "a", &reason), JPT_ERR_INVALID);
    assert_null(reason);
    assert_int_equal(jpt_policy_check(p, READ, NULL, &reason), JPT_ERR_INVALID);
    assert_int_equal(jpt_policy_check(p, 0, "a", &reason), JPT_ERR_INVALID);
    assert_int_equal(jpt_policy_check(p, JPT_ACCESS_PROCESS + 1, "a", &reason),
                     JPT_ERR_INVALID);
    assert_null(reason);
    assert_int_equal(jpt_policy_new(NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_policy_errmsg(NULL), "");
    jpt_policy_free(NULL);
    jpt_policy_free(p);
}

/* vfs.h: a process target is a JSON array of strings, the program first. */
static void a_process_target_is_a_json_argv(void **state)
{
    (void)state;
    static const char *const invalid[] = {
        "cargo", "[]", "[\"\"]", "[\"cargo\",1]", "{\"program\":\"cargo\"}", "[null]",
        "[\"a\\u0000b\"]", "",
    };
    jpt_policy *p = policy(NULL);
    char *reason = (char *)&reason;

    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        int rc = jpt_policy_check(p, JPT_ACCESS_PROCESS, invalid[i], &reason);
        if (rc != JPT_ERR_INVALID)
            fail_msg("process target %s: expected JPT_ERR_INVALID, got %d", invalid[i], rc);
        assert_null(reason);
    }
    expect(p, JPT_ACCESS_PROCESS, "[\"git\"]", ASK,
           "process.run 'git': needs approval: not covered by the policy (commands has no "
           "rule for this program)");
    jpt_policy_free(p);
}

/* The VFS host names the method it serves and the path as the tool asked
 * for it (jpt__policy_check): a symlink "src/config" resolved to ".env" is
 * denied without naming where it leads. */
static void the_reason_names_the_request_served(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    char *reason = NULL;
    char text[256];

    int rc = jpt__policy_check(p, READ, ".ssh/id_rsa", "fs.metadata", NULL, &reason);
    snprintf(text, sizeof(text), "%s", reason);
    jpt_free(reason);
    assert_int_equal(rc, DENY);
    assert_string_equal(text,
                        "fs.metadata '.ssh/id_rsa': denied: path is in the sensitive paths "
                        "list (.ssh/)");

    rc = jpt__policy_check(p, READ, ".env", NULL, "src/config", &reason);
    snprintf(text, sizeof(text), "%s", reason);
    jpt_free(reason);
    assert_int_equal(rc, DENY);
    assert_string_equal(text,
                        "fs.read 'src/config': denied: path is in the sensitive paths list "
                        "(.env)");
    jpt_policy_free(p);
}

static void long_targets_are_cut_in_reasons(void **state)
{
    (void)state;
    jpt_policy *p = policy(NULL);
    char path[512], expected[1024];

    /* 198 ASCII bytes, then "é" (2 bytes) would end at byte 200; then more */
    memset(path, 'a', 199);
    memcpy(path + 199, "\xC3\xA9/.env", 8);
    snprintf(expected, sizeof(expected),
             "fs.read '%.199s\xE2\x80\xA6': denied: path is in the sensitive paths list (.env)",
             path);
    expect(p, READ, path, DENY, expected);

    /* exactly 200 bytes are shown whole */
    memset(path, 'b', 200);
    path[200] = '\0';
    snprintf(expected, sizeof(expected),
             "fs.read '%s': allowed: the default policy lets tools read the workspace", path);
    expect(p, READ, path, ALLOW, expected);
    jpt_policy_free(p);
}

/* Matching costs time linear in the path (pattern.c): a one-mebibyte name
 * against patterns that would blow up a backtracking matcher, and a path
 * of 100 000 names against directory patterns. A quadratic or exponential
 * matcher would not finish within the suite's timeout. */
static void hostile_paths_are_matched_in_linear_time(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *path = malloc(n + 1);
    jpt_policy *p = policy("{\"sensitive_paths\":[\"*a*a*a*a*a*a*a*a*a*a*b\","
                           "\"x/y/z/\",\"a*a*a*a*a*a*a*c/\"]}");

    assert_non_null(path);
    memset(path, 'a', n);
    path[n] = '\0';
    expect_verdict(p, READ, path, ALLOW);
    path[n - 1] = 'b';
    expect_verdict(p, READ, path, DENY);

    for (size_t i = 0; i + 1 < n; i += 2) {
        path[i] = i % 6 == 0 ? 'x' : 'y';
        path[i + 1] = '/';
    }
    path[n - 1] = 'z';
    expect_verdict(p, READ, path, ALLOW);
    expect_verdict(p, WRITE, path, ASK);
    free(path);
    jpt_policy_free(p);
}

/* ---- Configuration errors ---------------------------------------------------------------- */

typedef struct refusal {
    const char *json;
    const char *message;
} refusal;

static const refusal refusals[] = {
    /* the section */
    {"not json", "sandbox: invalid JSON at line 1, column 3: invalid token near 'not'"},
    {"{\"sensitive\":\"ask\",\"sensitive\":\"deny\"}",
     "sandbox: invalid JSON at line 1, column 30: duplicate object key near '\"sensitive\"'"},
    {"{\"sensitive_paths\":[\"a\\u0000b\"]}",
     "sandbox: invalid JSON at line 1, column 30: \\u0000 is not allowed without "
     "JSON_ALLOW_NUL near '\"a\\u0000b\"'"},
    {"[]", "sandbox: expected an object, got an array"},
    {"null", "sandbox: expected an object, got null"},
    {"{\"filesytem\":{}}",
     "sandbox: unknown key 'filesytem' (known: filesystem, network, commands, "
     "sensitive_paths, sensitive, uncovered)"},
    {"{\"filesystem.allow\":[\".\"]}",
     "sandbox: unknown key 'filesystem.allow' (known: filesystem, network, commands, "
     "sensitive_paths, sensitive, uncovered); write dotted keys as nested objects"},
    /* filesystem */
    {"{\"filesystem\":[]}", "filesystem: expected an object, got an array"},
    {"{\"filesystem\":{\"git\":true}}",
     "filesystem.git: expected \"writable\" or \"protected\", got a boolean"},
    {"{\"filesystem\":{\"git\":\"allow\"}}",
     "filesystem.git: expected \"writable\" or \"protected\", got \"allow\""},
    {"{\"filesystem\":{\"readable\":true}}",
     "filesystem: unknown key 'readable' (known: allow, writable, deny, hardlinks, git)"},
    {"{\"filesystem\":{\"allow\":\".\"}}",
     "filesystem.allow: expected an array of paths, got a string"},
    {"{\"filesystem\":{\"allow\":[\".\",3]}}",
     "filesystem.allow[1]: expected a string, got an integer"},
    {"{\"filesystem\":{\"allow\":[\"/etc\"]}}",
     "filesystem.allow[0]: '/etc' is absolute: paths are relative to the workspace root"},
    {"{\"filesystem\":{\"allow\":[\"src/../../x\"]}}",
     "filesystem.allow[0]: 'src/../../x' leaves the workspace root"},
    {"{\"filesystem\":{\"allow\":[\"\"]}}",
     "filesystem.allow[0]: '' is empty (\".\" is the whole workspace)"},
    {"{\"filesystem\":{\"writable\":\"yes\"}}",
     "filesystem.writable: expected a boolean or an array of paths, got a string"},
    {"{\"filesystem\":{\"writable\":[\"..\"]}}",
     "filesystem.writable[0]: '..' leaves the workspace root"},
    {"{\"filesystem\":{\"deny\":[\"/home\"]}}",
     "filesystem.deny[0]: '/home' is absolute: paths are relative to the workspace root"},
    {"{\"filesystem\":{\"deny\":null}}", "filesystem.deny: expected an array of paths, got null"},
    {"{\"filesystem\":{\"hardlinks\":true}}",
     "filesystem.hardlinks: expected \"allow\" or \"deny\", got a boolean"},
    {"{\"filesystem\":{\"hardlinks\":\"maybe\"}}",
     "filesystem.hardlinks: expected \"allow\" or \"deny\", got \"maybe\""},
    /* sensitive paths */
    {"{\"sensitive_paths\":\".env\"}", "sensitive_paths: expected an array of patterns, got a string"},
    {"{\"sensitive_paths\":[true]}", "sensitive_paths[0]: expected a string, got a boolean"},
    {"{\"sensitive_paths\":[\"\"]}", "sensitive_paths[0]: '' is empty"},
    {"{\"sensitive_paths\":[\"ok\",\"/etc/shadow\"]}",
     "sensitive_paths[1]: '/etc/shadow' is absolute: patterns name files inside the "
     "workspace, at any depth"},
    {"{\"sensitive_paths\":[\"~/.myapp/secrets\"]}",
     "sensitive_paths[0]: '~/.myapp/secrets' names a home directory: patterns name files "
     "inside the workspace, at any depth"},
    {"{\"sensitive_paths\":[\"a/**/b\"]}",
     "sensitive_paths[0]: 'a/**/b' has a '**' name: patterns match at any depth already, "
     "and '*' matches within a name"},
    {"{\"sensitive_paths\":[\"**\"]}",
     "sensitive_paths[0]: '**' has a '**' name: patterns match at any depth already, and "
     "'*' matches within a name"},
    {"{\"sensitive_paths\":[\"a//b\"]}", "sensitive_paths[0]: 'a//b' has an empty name"},
    {"{\"sensitive_paths\":[\"./x\"]}",
     "sensitive_paths[0]: './x' has a '.' or '..' name: patterns match names, they are not "
     "resolved"},
    {"{\"sensitive_paths\":[\"**/\"]}", "sensitive_paths[0]: '**/' has no name"},
    {"{\"sensitive\":\"allow\"}", "sensitive: expected \"deny\" or \"ask\", got \"allow\""},
    {"{\"sensitive\":1}", "sensitive: expected \"deny\" or \"ask\", got an integer"},
    {"{\"uncovered\":\"allow\"}", "uncovered: expected \"ask\" or \"deny\", got \"allow\""},
    /* network */
    {"{\"network\":true}", "network: expected an object, got a boolean"},
    {"{\"network\":{\"proxy\":\"x\"}}",
     "network: unknown key 'proxy' (known: allow, envs, redirects, timeout_ms, "
     "max_response_bytes)"},
    {"{\"network\":{\"allow\":[\"https://exa mple.com/\"]}}",
     "network.allow[0]: 'https://exa mple.com/' is not a valid URL (Bad hostname)"},
    {"{\"network\":{\"allow\":[\"file:///etc\"]}}",
     "network.allow[0]: 'file:///etc' is not an http:// or https:// URL"},
    {"{\"network\":{\"redirects\":-1}}",
     "network.redirects: expected an integer from 0 to 20, got -1"},
    {"{\"network\":{\"redirects\":21}}",
     "network.redirects: expected an integer from 0 to 20, got 21"},
    {"{\"network\":{\"redirects\":true}}",
     "network.redirects: expected an integer from 0 to 20, got a boolean"},
    {"{\"network\":{\"timeout_ms\":0}}",
     "network.timeout_ms: expected an integer from 1 to 600000, got 0"},
    {"{\"network\":{\"timeout_ms\":1.5}}",
     "network.timeout_ms: expected an integer from 1 to 600000, got a number"},
    {"{\"network\":{\"max_response_bytes\":10485761}}",
     "network.max_response_bytes: expected an integer from 1 to 10485760, got 10485761"},
    {"{\"network\":{\"allow\":\"https://x\"}}",
     "network.allow: expected an array of URL prefixes, got a string"},
    {"{\"network\":{\"allow\":[\"ftp://example.com\"]}}",
     "network.allow[0]: 'ftp://example.com' is not an http:// or https:// URL"},
    {"{\"network\":{\"allow\":[\"example.com\"]}}",
     "network.allow[0]: 'example.com' is not an http:// or https:// URL"},
    {"{\"network\":{\"allow\":[\"https://allowed@evil.example\"]}}",
     "network.allow[0]: 'https://allowed@evil.example' has user information: an allowed "
     "prefix names a host and a path"},
    {"{\"network\":{\"allow\":[\"https://example.com/?q=1\"]}}",
     "network.allow[0]: 'https://example.com/?q=1' has a query: an allowed prefix names a "
     "host and a path"},
    {"{\"network\":{\"allow\":[\"https://example.com/#x\"]}}",
     "network.allow[0]: 'https://example.com/#x' has a fragment: an allowed prefix names a "
     "host and a path"},
    {"{\"network\":{\"envs\":[\"GITHUB-TOKEN\"]}}",
     "network.envs[0]: 'GITHUB-TOKEN' is not an environment variable name (letters, digits "
     "and '_', not starting with a digit)"},
    {"{\"network\":{\"envs\":[\"1X\"]}}",
     "network.envs[0]: '1X' is not an environment variable name (letters, digits and '_', "
     "not starting with a digit)"},
    {"{\"network\":{\"envs\":\"TOKEN\"}}",
     "network.envs: expected an array of variable names, got a string"},
    {"{\"network\":{\"allow\":[1]}}",
     "network.allow[0]: expected a URL prefix or an object {\"url\", \"envs\", \"private\"}, "
     "got an integer"},
    {"{\"network\":{\"allow\":[{\"envs\":[]}]}}", "network.allow[0]: 'url' is required"},
    {"{\"network\":{\"allow\":[{\"url\":1}]}}",
     "network.allow[0].url: expected a URL prefix, got an integer"},
    {"{\"network\":{\"allow\":[{\"url\":\"https://x/\",\"token\":1}]}}",
     "network.allow[0]: unknown key 'token' (known: url, envs, private)"},
    {"{\"network\":{\"allow\":[{\"url\":\"https://x/\",\"envs\":[\"A-B\"]}]}}",
     "network.allow[0].envs[0]: 'A-B' is not an environment variable name (letters, digits "
     "and '_', not starting with a digit)"},
    {"{\"network\":{\"allow\":[{\"url\":\"https://x/\",\"private\":\"yes\"}]}}",
     "network.allow[0].private: expected a boolean, got a string"},
    {"{\"network\":{\"allow\":[{\"url\":\"ftp://x/\"}]}}",
     "network.allow[0]: 'ftp://x/' is not an http:// or https:// URL"},
    {"{\"network\":{\"allow\":[\"https://x/a/..%2fb\"]}}",
     "network.allow[0]: 'https://x/a/..%2fb' is not a valid URL (its path hides a dot segment "
     "(behind an encoded '/', a backslash, a ';' parameter or a second percent-encoding), "
     "which servers read differently)"},
    /* commands */
    {"{\"commands\":[]}", "commands: expected an object, got an array"},
    {"{\"commands\":{\"\":{}}}", "commands: a program name is empty"},
    {"{\"commands\":{\"git\":[]}}", "commands.git: expected an object, got an array"},
    {"{\"commands\":{\"git\":{\"env\":[]}}}",
     "commands.git: unknown key 'env' (known: args, envs, timeout_ms, output_limit, "
     "process_limit)"},
    {"{\"commands\":{\"bin/tool\":{}}}",
     "commands.bin/tool: a relative path: name a program found in PATH, or give its "
     "absolute path"},
    {"{\"commands\":{\"./x\":{}}}",
     "commands../x: a relative path: name a program found in PATH, or give its absolute "
     "path"},
    {"{\"commands\":{\"make\":{\"envs\":[\"HOME\",\"LD_PRELOAD\"]}}}",
     "commands.make.envs[1]: 'LD_PRELOAD' is read by the dynamic loader or the C library to "
     "load code or files, and is never forwarded"},
    {"{\"commands\":{\"make\":{\"envs\":[\"GCONV_PATH\"]}}}",
     "commands.make.envs[0]: 'GCONV_PATH' is read by the dynamic loader or the C library to "
     "load code or files, and is never forwarded"},
    {"{\"commands\":{\"make\":{\"envs\":[\"GLIBC_TUNABLES\"]}}}",
     "commands.make.envs[0]: 'GLIBC_TUNABLES' is read by the dynamic loader or the C library "
     "to load code or files, and is never forwarded"},
    {"{\"commands\":{\"make\":{\"timeout_ms\":0}}}",
     "commands.make.timeout_ms: expected an integer from 1 to 86400000, got 0"},
    {"{\"commands\":{\"make\":{\"timeout_ms\":\"5s\"}}}",
     "commands.make.timeout_ms: expected an integer from 1 to 86400000, got a string"},
    {"{\"commands\":{\"make\":{\"process_limit\":1}}}",
     "commands.make.process_limit: expected an integer from 2 to 65536, got 1"},
    {"{\"commands\":{\"make\":{\"process_limit\":65537}}}",
     "commands.make.process_limit: expected an integer from 2 to 65536, got 65537"},
    {"{\"commands\":{\"make\":{\"output_limit\":63}}}",
     "commands.make.output_limit: expected an integer from 64 to 4194304, got 63"},
    {"{\"commands\":{\"make\":{\"output_limit\":4194305}}}",
     "commands.make.output_limit: expected an integer from 64 to 4194304, got 4194305"},
    {"{\"commands\":{\"git\":{\"args\":[]}}}",
     "commands.git.args: expected a non-empty array of argument lists, got an empty array "
     "(leave args out to allow any arguments)"},
    {"{\"commands\":{\"git\":{\"args\":\"log\"}}}",
     "commands.git.args: expected a non-empty array of argument lists, got a string (leave "
     "args out to allow any arguments)"},
    {"{\"commands\":{\"git\":{\"args\":[\"log\"]}}}",
     "commands.git.args[0]: expected an array of strings, got a string"},
    {"{\"commands\":{\"git\":{\"args\":[[\"log\",1]]}}}",
     "commands.git.args[0][1]: expected a string, got an integer"},
    {"{\"commands\":{\"git\":{\"args\":[[\"status\"],[\"**\",\"log\"]]}}}",
     "commands.git.args[1][0]: '**' may only be the last element"},
    {"{\"commands\":{\"curl\":{\"envs\":[\"A=B\"]}}}",
     "commands.curl.envs[0]: 'A=B' is not an environment variable name (letters, digits and "
     "'_', not starting with a digit)"},
};

static void malformed_configurations_are_refused_with_their_message(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
        expect_refused(refusals[i].json, refusals[i].message);
}

static void names_longer_than_a_file_system_holds_are_refused(void **state)
{
    (void)state;
    char name[257], json[1024], message[512];

    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(json, sizeof(json), "{\"filesystem\":{\"allow\":[\"src/%s\"]}}", name);
    snprintf(message, sizeof(message),
             "filesystem.allow[0]: 'src/%.76s' has a name longer than 255 bytes, which no "
             "file can have",
             name);
    expect_refused(json, message);

    snprintf(json, sizeof(json), "{\"sensitive_paths\":[\"%s\"]}", name);
    snprintf(message, sizeof(message),
             "sensitive_paths[0]: '%.80s' has a name longer than 255 bytes, which no file "
             "can have",
             name);
    expect_refused(json, message);

    name[255] = '\0'; /* 255 bytes: fine */
    snprintf(json, sizeof(json), "{\"sensitive_paths\":[\"%s\"],\"filesystem\":{\"allow\":[\"%s\"]}}",
             name, name);
    jpt_policy_free(policy(json));
}

/* RFD 016's examples and D11's keys, accepted, and their verdicts. */
static void network_and_commands_are_accepted_in_their_forms(void **state)
{
    (void)state;
    jpt_policy *p = policy(
        "{\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"],[\"diff\",\"**\"],[\"status\"],[]]},"
        "\"curl\":{\"envs\":[\"SLACK_TOKEN\"]},\"cargo\":{},\"/usr/bin/make\":{\"timeout_ms\":5,"
        "\"output_limit\":64,\"process_limit\":2000}},"
        "\"network\":{\"allow\":[\"https://slack.com/api\",\"http://localhost:8080/x\","
        "\"HTTPS://Jira.Example.com\"],\"envs\":[\"JIRA_API_TOKEN\",\"_x1\"],"
        "\"redirects\":3,\"timeout_ms\":1000,\"max_response_bytes\":10485760}}");
    expect(p, JPT_ACCESS_HTTP, "https://slack.com/api/chat.postMessage", ALLOW,
           "http 'https://slack.com/api/chat.postMessage': allowed: under "
           "'https://slack.com/api' in network.allow");
    expect(p, JPT_ACCESS_HTTP, "https://jira.example.com/rest", ALLOW,
           "http 'https://jira.example.com/rest': allowed: under 'HTTPS://Jira.Example.com' in "
           "network.allow");
    expect(p, JPT_ACCESS_HTTP, "http://localhost:8080/x/y", ALLOW,
           "http 'http://localhost:8080/x/y': allowed: under 'http://localhost:8080/x' in "
           "network.allow");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"log\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[0]");
    const jpt__policy_command *make = jpt__policy_command_find(p, "/usr/bin/make");
    assert_non_null(make);
    assert_int_equal(make->timeout_ms, 5);
    assert_int_equal(make->output_limit, 64);
    assert_int_equal(make->process_limit, 2000);
    const jpt__policy_command *curl = jpt__policy_command_find(p, "curl");
    assert_non_null(curl);
    assert_int_equal(curl->timeout_ms, JPT_VFS_PROCESS_TIMEOUT_MS);
    assert_int_equal(curl->output_limit, JPT_VFS_PROCESS_OUTPUT_LIMIT);
    assert_int_equal(curl->process_limit, 0); /* the sandbox's default */
    assert_int_equal(curl->n_envs, 1);
    assert_string_equal(curl->envs[0], "SLACK_TOKEN");
    assert_null(jpt__policy_command_find(p, "make"));
    assert_null(jpt__policy_command_find(p, "Cargo"));
    jpt_policy_free(p);
}

/* RFD 016's CommandRule: a list without "**" is the whole argument list;
 * "**" last allows any further arguments, none included; no args allows
 * anything; the rest is not covered. */
static void commands_allow_their_argument_lists(void **state)
{
    (void)state;
    jpt_policy *p = policy(
        "{\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"],[\"status\"],[],[\"**\"]]},"
        "\"cargo\":{\"args\":[[\"check\",\"**\"],[\"test\",\"--lib\"]]},\"ls\":{}}}");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"log\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[0]");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"log\",\"-p\",\"--all\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[0]");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"status\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[1]");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[2]");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"push\"]", ALLOW,
           "process.run 'git': allowed: the arguments match commands.git.args[3]");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"check\"]", ALLOW,
           "process.run 'cargo': allowed: the arguments match commands.cargo.args[0]");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"check\",\"--workspace\"]", ALLOW,
           "process.run 'cargo': allowed: the arguments match commands.cargo.args[0]");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"test\",\"--lib\"]", ALLOW,
           "process.run 'cargo': allowed: the arguments match commands.cargo.args[1]");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"test\",\"--lib\",\"x\"]", ASK,
           "process.run 'cargo': needs approval: not covered by the policy (the arguments "
           "match none of commands.cargo.args)");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"test\"]", ASK,
           "process.run 'cargo': needs approval: not covered by the policy (the arguments "
           "match none of commands.cargo.args)");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\"]", ASK,
           "process.run 'cargo': needs approval: not covered by the policy (the arguments "
           "match none of commands.cargo.args)");
    expect(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"publish\",\"check\"]", ASK,
           "process.run 'cargo': needs approval: not covered by the policy (the arguments "
           "match none of commands.cargo.args)");
    /* Arguments are compared exactly: no globbing, no case folding. */
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"Check\"]", ASK);
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"cargo\",\"check*\"]", ASK);
    expect(p, JPT_ACCESS_PROCESS, "[\"ls\",\"-la\",\"/\"]", ALLOW,
           "process.run 'ls': allowed: commands.ls allows any arguments");
    /* The program is its rule's key exactly. */
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"/usr/bin/ls\"]", ASK);
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"LS\"]", ASK);
    jpt_policy_free(p);

    /* A refused configuration denies every process too. */
    assert_int_equal(jpt_policy_new("{\"commands\":{\"ls\":{\"x\":1}}}", &p), JPT_ERR_INVALID);
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"ls\"]", DENY);
    assert_null(jpt__policy_command_find(p, "ls"));
    jpt_policy_free(p);
}

/* Issue 15 §3: for git, an args entry allows only what it names of git's
 * options and subcommands that run a program, write or read a file, or
 * change where git looks and what configuration it reads, in any form
 * git takes: an abbreviated long option, a value after '=', short
 * options clustered with an attached value. */
static void git_rules_allow_only_the_risky_arguments_they_name(void **state)
{
    (void)state;
    jpt_policy *p = policy(
        "{\"commands\":{\"git\":{\"args\":[[\"diff\",\"**\"],[\"diff\",\"--no-index\",\"**\"],"
        "[\"grep\",\"**\"],[\"-C\",\"sub\",\"status\"],[\"config\",\"--get\",\"**\"],"
        "[\"log\",\"**\"]]},\"/usr/bin/git\":{},\"ls\":{}}}");
    static const char *const allowed[] = {
        "[\"git\",\"diff\",\"--stat\"]",
        "[\"git\",\"diff\",\"--no-index\",\"a\",\"b\"]",
        "[\"git\",\"diff\",\"--output-indicator-new=+\"]",
        "[\"git\",\"diff\",\"--no-ext-diff\",\"--no-textconv\",\"--no-recurse-submodules\"]",
        "[\"git\",\"grep\",\"-n\",\"-o\",\"-C3\",\"x\"]",
        "[\"git\",\"-C\",\"sub\",\"status\"]",
        "[\"git\",\"config\",\"--get\",\"user.name\"]",
        "[\"git\",\"log\",\"--oneline\",\"-p\"]",
        "[\"/usr/bin/git\",\"status\",\"-uno\"]",
        "[\"/usr/bin/git\",\"cherry-pick\",\"-x\",\"abc\"]",
        "[\"/usr/bin/git\",\"clone\",\"--depth\",\"1\",\"https://example.com/r\"]",
        "[\"/usr/bin/git\"]",
        "[\"ls\",\"--output\",\"-O\"]",
    };
    static const char *const denied[] = {
        "[\"git\",\"diff\",\"x\",\"--no-index\",\"a\",\"b\"]",
        "[\"git\",\"diff\",\"--no-i\",\"a\",\"b\"]",
        "[\"git\",\"diff\",\"--output\",\"x\"]",
        "[\"git\",\"diff\",\"--outp=x\"]",
        "[\"git\",\"diff\",\"--ext-d\"]",
        "[\"git\",\"log\",\"--textconv\"]",
        "[\"git\",\"grep\",\"-O\",\"x\"]",
        "[\"git\",\"grep\",\"-Oless\",\"x\"]",
        "[\"git\",\"grep\",\"-inO\",\"x\"]",
        "[\"git\",\"grep\",\"--open-files-in-pager=vi\",\"x\"]",
        "[\"git\",\"grep\",\"--no-index\",\"x\"]",
        "[\"/usr/bin/git\",\"-C\",\"/\",\"status\"]",
        "[\"/usr/bin/git\",\"config\",\"core.fsmonitor\",\"x\"]",
        "[\"/usr/bin/git\",\"clone\",\"-c\",\"core.hooksPath=x\",\"u\"]",
        "[\"/usr/bin/git\",\"clone\",\"-qcx=y\",\"u\"]",
        "[\"/usr/bin/git\",\"clone\",\"-u\",\"x\",\"u\"]",
        "[\"/usr/bin/git\",\"clone\",\"--config\",\"x=y\",\"u\"]",
        "[\"/usr/bin/git\",\"clone\",\"--template=/x\",\"u\"]",
        "[\"/usr/bin/git\",\"clone\",\"--recurse-submodules\",\"u\"]",
        "[\"/usr/bin/git\",\"init\",\"--separate-git-dir=/x\"]",
        "[\"/usr/bin/git\",\"fetch\",\"--upl=x\"]",
        "[\"/usr/bin/git\",\"ls-remote\",\"-u\",\"x\",\".\"]",
        "[\"/usr/bin/git\",\"push\",\"--receive-pack=x\"]",
        "[\"/usr/bin/git\",\"push\",\"--exec=x\"]",
        "[\"/usr/bin/git\",\"rebase\",\"-x\",\"make\"]",
        "[\"/usr/bin/git\",\"rebase\",\"--exec\",\"make\"]",
        "[\"/usr/bin/git\",\"format-patch\",\"-o\",\"/tmp\"]",
        "[\"/usr/bin/git\",\"archive\",\"-o\",\"/tmp/x\",\"HEAD\"]",
        "[\"/usr/bin/git\",\"checkout-index\",\"--prefix=/tmp/\",\"-a\"]",
        "[\"/usr/bin/git\",\"read-tree\",\"--index-output=/tmp/x\",\"HEAD\"]",
        "[\"/usr/bin/git\",\"fast-export\",\"--export-marks=/tmp/x\"]",
        "[\"/usr/bin/git\",\"-c\",\"x=y\",\"log\"]",
        "[\"/usr/bin/git\",\"--git-dir=/x\",\"log\"]",
        "[\"/usr/bin/git\",\"--work-tree\",\"/\",\"status\"]",
        "[\"/usr/bin/git\",\"--exec-path=/x\",\"log\"]",
        "[\"/usr/bin/git\",\"--namespace=x\",\"log\"]",
        "[\"/usr/bin/git\",\"--super-prefix=x\",\"log\"]",
        "[\"/usr/bin/git\",\"--config-env=a=B\",\"log\"]",
        "[\"/usr/bin/git\",\"-p\",\"log\"]",
        "[\"/usr/bin/git\",\"bisect\",\"run\",\"sh\"]",
        "[\"/usr/bin/git\",\"submodule\",\"foreach\",\"sh\"]",
        "[\"/usr/bin/git\",\"difftool\"]",
        "[\"/usr/bin/git\",\"help\",\"log\"]",
        "[\"/usr/bin/git\",\"filter-branch\",\"--tree-filter\",\"sh\"]",
        "[\"/usr/bin/git\",\"maintenance\",\"start\"]",
    };
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        expect_verdict(p, JPT_ACCESS_PROCESS, allowed[i], ALLOW);
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
        expect_verdict(p, JPT_ACCESS_PROCESS, denied[i], DENY);
    /* The first entry that matches and is refused says why. */
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"diff\",\"--stat\",\"--out=x\"]", DENY,
           "process.run 'git': denied: argument 3 '--out=x' writes a file the rule does not "
           "name: allowed only where a commands.git.args entry names it");
    expect(p, JPT_ACCESS_PROCESS, "[\"/usr/bin/git\",\"-C\",\"/\",\"status\"]", DENY,
           "process.run '/usr/bin/git': denied: argument 1 '-C' is an option of git itself, before the "
           "subcommand (as -c, -C, --git-dir, --exec-path, -p), which changes the "
           "configuration git reads, where it looks or what it runs: allowed only where a "
           "commands./usr/bin/git.args entry names it");
    expect(p, JPT_ACCESS_PROCESS, "[\"/usr/bin/git\",\"submodule\",\"foreach\",\"sh\"]", DENY,
           "process.run '/usr/bin/git': denied: argument 1 'submodule' runs programs, serves, "
           "or writes git's configuration by design: allowed only where a "
           "commands./usr/bin/git.args entry names it");
    /* Arguments no entry matches are not covered, as for any program: the
     * person asked sees the whole command line. */
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"git\",\"push\"]", ASK);
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"git\",\"-C\",\"/\",\"status\"]", ASK);
    expect_verdict(p, JPT_ACCESS_PROCESS, "[\"git\",\"config\",\"core.fsmonitor\",\"x\"]", ASK);
    /* ... who is told what a risky argument does. */
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"push\",\"--receive-pack=x\"]", ASK,
           "process.run 'git': needs approval: not covered by the policy (the arguments match "
           "none of commands.git.args); beware: argument 2 '--receive-pack=x' runs a program");
    jpt_policy_free(p);
    p = policy(NULL);
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"-c\",\"core.pager=x\",\"log\"]", ASK,
           "process.run 'git': needs approval: not covered by the policy (commands has no rule "
           "for this program); beware: argument 1 '-c' is an option of git itself, before the "
           "subcommand (as -c, -C, --git-dir, --exec-path, -p), which changes the "
           "configuration git reads, where it looks or what it runs");
    expect(p, JPT_ACCESS_PROCESS, "[\"git\",\"log\"]", ASK,
           "process.run 'git': needs approval: not covered by the policy (commands has no rule "
           "for this program)");
    jpt_policy_free(p);

    /* git's own variables are never forwarded to it. */
    expect_refused("{\"commands\":{\"git\":{\"envs\":[\"GIT_AUTHOR_NAME\",\"GIT_CONFIG_COUNT\"]}}}",
                   "commands.git.envs[1]: 'GIT_CONFIG_COUNT' is set by jptool for git (it "
                   "keeps git's configuration from running programs), and is never forwarded");
    expect_refused("{\"commands\":{\"/usr/bin/git\":{\"envs\":[\"GIT_SSH_COMMAND\"]}}}",
                   "commands./usr/bin/git.envs[0]: 'GIT_SSH_COMMAND' is set by jptool for git "
                   "(it keeps git's configuration from running programs), and is never "
                   "forwarded");
    jpt_policy_free(policy("{\"commands\":{\"ssh\":{\"envs\":[\"GIT_SSH_COMMAND\"]}}}"));
}

/* What `git config --list -z --show-scope` prints: "<scope>\0<key>\n<value>\0"
 * ("<scope>\0<key>\0" without a value), here with '|' for each NUL. */
static size_t scan_text(const char *with_bars, char *out, size_t cap)
{
    size_t n = strlen(with_bars);

    assert_true(n < cap);
    for (size_t i = 0; i < n; i++)
        out[i] = with_bars[i] == '|' ? '\0' : with_bars[i];
    return n;
}

/* Each key of `keys` ("key=value" lines) is set, in order, and nothing else. */
static void assert_overrides(const jpt__git_overrides *o, const char *const *expected, size_t n)
{
    char line[512];

    if (o->n != n)
        fail_msg("expected %zu overrides, got %zu", n, o->n);
    for (size_t i = 0; i < n; i++) {
        snprintf(line, sizeof(line), "%s=%s", o->keys[i], o->values[i]);
        assert_string_equal(line, expected[i]);
    }
}

static const char planted_scan[] =
    "command|core.hookspath\n/dev/null|"
    "local|core.repositoryformatversion\n0|local|core.bare\nfalse|"
    "local|filter.Crypt.smudge\ngit-crypt smudge|local|filter.Crypt.clean\nx|"
    "local|filter.Crypt.required|"
    "local|diff.Crypt.textconv\nx|local|diff.pdf.command\nx|local|diff.external\nx|"
    "local|merge.ours.driver\ntrue|local|alias.st\nstatus|local|alias.lg\n!sh|"
    "local|pager.log\nless|local|credential.https://example.com.helper\nstore|"
    "local|submodule.lib.update\n!make|local|submodule.doc.update\nrebase|"
    "local|difftool.kdiff.cmd\nx|local|remote.origin.url\nhttps://example.com/r|"
    "local|user.name\nt|local|diff.pdf.xfuncname\nx|";

/* `check` (a bool, or NULL): assert what was read. */
static int scan_planted(void *check)
{
    jpt__git_overrides o;
    char text[2048], why[256];
    size_t n = scan_text(planted_scan, text, sizeof(text));
    int rc = jpt__policy_git_overrides(text, n, &o, why, sizeof(why));

    if (rc == JPT_OK && check != NULL && *(bool *)check) {
        static const char *const expected[] = {
            "filter.Crypt.smudge=",
            "filter.Crypt.clean=",
            "filter.Crypt.required=false",
            "diff.Crypt.textconv=cat",
            "diff.pdf.command=false",
            "diff.external=false",
            "merge.ours.driver=git merge-file --marker-size=%L %A %O %B",
            "alias.st=",
            "alias.lg=",
            "pager.log=false",
            "credential.https://example.com.helper=",
            "submodule.lib.update=none",
            "difftool.kdiff.cmd=",
        };
        assert_overrides(&o, expected, sizeof(expected) / sizeof(expected[0]));
        assert_true(o.external_diff);
    }
    jpt__policy_git_overrides_free(&o);
    return rc;
}

/* Issue 15 §3: every key of a repository's configuration that names a
 * program under a name of its choosing gets a harmless value; what no
 * override can make safe refuses the run. */
static void git_configuration_keys_that_name_programs_are_overridden(void **state)
{
    (void)state;
    jpt__git_overrides o;
    char text[1024], why[256];
    size_t n;

    bool check = true;
    assert_int_equal(scan_planted(&check), JPT_OK);
    tu_sweep("jpt__policy_git_overrides", scan_planted, NULL);

    n = scan_text("command|core.hookspath\n/dev/null|local|remote.origin.uploadpack\nx|", text,
                  sizeof(text));
    assert_int_equal(jpt__policy_git_overrides(text, n, &o, why, sizeof(why)), JPT_ERR_DENIED);
    assert_string_equal(why, "the repository's configuration sets remote.origin.uploadpack, a "
                             "program git would run, and the first value set wins, so jptool "
                             "cannot override it");
    jpt__policy_git_overrides_free(&o);
    n = scan_text("command|core.hookspath\n/dev/null|worktree|core.worktree\n/|", text,
                  sizeof(text));
    assert_int_equal(jpt__policy_git_overrides(text, n, &o, why, sizeof(why)), JPT_ERR_DENIED);
    assert_string_equal(why, "the repository's configuration sets core.worktree, which could "
                             "point git at files outside the workspace");
    jpt__policy_git_overrides_free(&o);
    /* A git that did not read the command-line scope cannot be made safe. */
    n = scan_text("local|core.bare\nfalse|", text, sizeof(text));
    assert_int_equal(jpt__policy_git_overrides(text, n, &o, why, sizeof(why)),
                     JPT_ERR_UNSUPPORTED);
    assert_string_equal(why, "this git does not read GIT_CONFIG_COUNT (git 2.31 or later does), "
                             "so its configuration cannot be made safe");
    jpt__policy_git_overrides_free(&o);
    /* Outside a repository: nothing to override. */
    n = scan_text("command|core.hookspath\n/dev/null|", text, sizeof(text));
    assert_int_equal(jpt__policy_git_overrides(text, n, &o, why, sizeof(why)), JPT_OK);
    assert_int_equal(o.n, 0);
    assert_false(o.external_diff);
    jpt__policy_git_overrides_free(&o);
}

static void loader_variables_are_known(void **state)
{
    (void)state;
    static const char *const loader[] = {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
                                         "LD_", "DYLD_INSERT_LIBRARIES", "GCONV_PATH",
                                         "GLIBC_TUNABLES", "LOCPATH", "NLSPATH"};
    static const char *const plain[] = {"HOME", "PATH", "TMPDIR", "LD", "ld_preload",
                                        "OLD_PRELOAD", "CARGO_TERM_COLOR"};
    for (size_t i = 0; i < sizeof(loader) / sizeof(loader[0]); i++)
        assert_true(jpt__policy_env_is_loader(loader[i]));
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        assert_false(jpt__policy_env_is_loader(plain[i]));
}

/* ---- network.allow ---------------------------------------------------------------- */

/* Issue 10: entries "matched on the URL parsed with curl_url (scheme,
 * lowercased host, default port filled, path prefix by whole segments)". */
static void network_allow_matches_origin_and_whole_segments(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"uncovered\":\"deny\",\"network\":{\"allow\":["
                           "\"https://api.github.com/repos/o/\",\"http://Example.COM:8080\","
                           "\"https://a.example/x/y\"]}}");
    static const struct {
        const char *url;
        int verdict;
    } cases[] = {
        {"https://api.github.com/repos/o", ALLOW},
        {"https://api.github.com/repos/o/r/issues?state=open#top", ALLOW},
        {"https://API.GitHub.com:443/repos/o/r", ALLOW},
        {"https://api.github.com/repos/o2", DENY},
        {"https://api.github.com/repos/O/r", DENY},
        {"https://api.github.com/repos/o%2Fr", DENY}, /* one segment, "o%2Fr" */
        {"https://api.github.com/repos/o/../../admin", DENY},
        {"https://api.github.com/repos/x/../o/r", ALLOW},
        {"http://api.github.com/repos/o/r", DENY},
        {"https://api.github.com:8443/repos/o/r", DENY},
        {"https://api.github.com.evil.example/repos/o/r", DENY},
        {"https://evilapi.github.com/repos/o/r", DENY},
        {"http://example.com:8080/", ALLOW},
        {"http://example.com:8080/anything/at/all", ALLOW},
        {"http://example.com/", DENY},
        {"https://a.example/x/y", ALLOW},
        {"https://a.example/x/y/", ALLOW},
        {"https://a.example/x/yz", DENY},
        {"https://a.example/x", DENY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        expect_verdict(p, JPT_ACCESS_HTTP, cases[i].url, cases[i].verdict);
    expect(p, JPT_ACCESS_HTTP, "https://api.github.com/repos/o2", DENY,
           "http 'https://api.github.com/repos/o2': denied: not covered by the policy "
           "(outside network.allow)");
    jpt_policy_free(p);
}

/* Refused whatever the list says, and never asked: another scheme,
 * userinfo ("https://allowed@evil/" names the host evil), a URL libcurl
 * cannot read; IP literals and localhost unless listed as such. */
static void some_urls_are_refused_outright(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"network\":{\"allow\":[\"https://allowed.example/\","
                           "\"http://10.0.0.1/\",\"http://[2001:DB8::1]/\"]}}");
    expect(p, JPT_ACCESS_HTTP, "https://allowed.example@evil.example/", DENY,
           "http 'https://allowed.example@evil.example/': denied: the URL has user "
           "information (user@host), which is refused");
    expect_verdict(p, JPT_ACCESS_HTTP, "https://user:pass@allowed.example/", DENY);
    expect_verdict(p, JPT_ACCESS_HTTP, "https://:@allowed.example/", DENY);
    expect(p, JPT_ACCESS_HTTP, "ftp://allowed.example/", DENY,
           "http 'ftp://allowed.example/': denied: only http:// and https:// URLs are served");
    expect(p, JPT_ACCESS_HTTP, "file:///etc/passwd", DENY,
           "http 'file:///etc/passwd': denied: only http:// and https:// URLs are served");
    expect(p, JPT_ACCESS_HTTP, "https://exa mple/", DENY,
           "http 'https://exa mple/': denied: not a valid URL (Bad hostname)");
    expect(p, JPT_ACCESS_HTTP, "http://127.0.0.1/", DENY,
           "http 'http://127.0.0.1/': denied: an IP address or localhost is allowed only under "
           "a network.allow entry that names it as such, and is never asked about");
    static const char *const literals[] = {
        "http://2130706433/", "http://0177.0.0.1/", "http://0x7f000001/", "http://[::1]/",
        "http://[::ffff:127.0.0.1]/", "http://localhost/", "http://LOCALHOST./",
        "http://x.localhost/", "http://10.0.0.2/", "http://[2001:db8::2]/",
    };
    for (size_t i = 0; i < sizeof(literals) / sizeof(*literals); i++)
        expect_verdict(p, JPT_ACCESS_HTTP, literals[i], DENY);
    /* The listed ones, in any spelling of the same address. */
    static const char *const listed[] = {
        "http://10.0.0.1/x", "http://167772161/", "http://012.0.0.1/", "http://10.1/",
        "http://[2001:db8::1]/", "http://[2001:0DB8:0:0:0:0:0:1]/",
    };
    for (size_t i = 0; i < sizeof(listed) / sizeof(*listed); i++)
        expect_verdict(p, JPT_ACCESS_HTTP, listed[i], ALLOW);
    jpt_policy_free(p);

    /* A listed address under another path than its entry's: refused too,
     * and the reason does not say the address is unlisted. */
    p = policy("{\"network\":{\"allow\":[\"http://127.0.0.1:8080/api/\"]}}");
    expect(p, JPT_ACCESS_HTTP, "http://127.0.0.1:8080/other", DENY,
           "http 'http://127.0.0.1:8080/other': denied: an IP address or localhost is allowed "
           "only under a network.allow entry that names it as such, and is never asked about");
    expect_verdict(p, JPT_ACCESS_HTTP, "http://127.0.0.1:8080/api/x", ALLOW);
    jpt_policy_free(p);
}

/* ---- ${VAR} ------------------------------------------------------------------------- */

static jpt__policy_url parsed(const char *text)
{
    jpt__policy_url u;
    const char *why = NULL;

    assert_int_equal(jpt__policy_url_parse(text, &u, &why), JPT_OK);
    return u;
}

/* Issue 15 §5: a variable goes only to a URL that an entry naming it
 * covers — its own "envs", or network.envs for a string entry. */
static void substitution_takes_only_variables_the_url_carries(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"network\":{\"allow\":[\"https://a.example/api\","
                           "{\"url\":\"https://b.example/\",\"envs\":[\"JPT_T_OBJ\"]}],"
                           "\"envs\":[\"JPT_T_TOKEN\",\"JPT_T_SHORT\",\"JPT_T_NL\","
                           "\"JPT_T_UNSET\"]}}");
    jpt__policy_values values = {0};
    jpt__buf out = JPT__BUF_INIT;
    jpt__policy_url a = parsed("https://a.example/api/x"), b = parsed("https://B.example/y");
    jpt__policy_url c = parsed("https://c.example/"), a_out = parsed("https://a.example/other");
    char why[512];

    setenv("JPT_T_TOKEN", "tok-12345678", 1);
    setenv("JPT_T_OBJ", "obj-12345678", 1);
    setenv("JPT_T_SHORT", "1234567", 1);
    setenv("JPT_T_NL", "line\nbreak-here", 1);
    setenv("JPT_T_OTHER", "other-12345678", 1);
    unsetenv("JPT_T_UNSET");
    assert_int_equal(jpt__policy_substitute(p, &a, "Bearer ${JPT_T_TOKEN} $x ${JPT_T_TOKEN}$",
                                            &out, &values, why, sizeof(why)),
                     JPT_OK);
    assert_string_equal(out.data, "Bearer tok-12345678 $x tok-12345678$");
    out.len = 0;
    assert_int_equal(jpt__policy_substitute(p, &b, "${JPT_T_OBJ}", &out, &values, why,
                                            sizeof(why)),
                     JPT_OK);
    assert_string_equal(out.data, "obj-12345678");
    assert_int_equal(values.n, 2); /* each value once */
    static const char not_sent[] =
        " is not sent to this URL: no network.allow entry that covers it names the "
        "variable (a URL the policy asks about, or one that an entry without the variable "
        "covers, gets no secret)";
    char obj_on_a[300], token_on_b[300];
    snprintf(obj_on_a, sizeof(obj_on_a), "${JPT_T_OBJ}%s", not_sent);
    snprintf(token_on_b, sizeof(token_on_b), "${JPT_T_TOKEN}%s", not_sent);
    const struct {
        const jpt__policy_url *url;
        const char *text;
        int rc;
        const char *why;
    } bad[] = {
        {&a, "${JPT_T_OTHER}", JPT_ERR_DENIED,
         "${JPT_T_OTHER} is not in network.envs nor in the envs of a network.allow entry"},
        {&a, "${JPT_T_OBJ}", JPT_ERR_DENIED, obj_on_a},
        {&b, "${JPT_T_TOKEN}", JPT_ERR_DENIED, token_on_b},
        {&c, "${JPT_T_TOKEN}", JPT_ERR_DENIED, token_on_b},
        {&a_out, "${JPT_T_TOKEN}", JPT_ERR_DENIED, token_on_b},
        {&a, "${JPT_T_UNSET}", JPT_ERR_NOT_FOUND,
         "${JPT_T_UNSET} is not set in the host's environment"},
        {&a, "${JPT_T_SHORT}", JPT_ERR_INVALID,
         "the value of ${JPT_T_SHORT} is shorter than 8 bytes, too short to be kept out of "
         "what the tool receives"},
        {&a, "${JPT_T_NL}", JPT_ERR_INVALID,
         "the value of ${JPT_T_NL} holds a line break or another control character, which a "
         "header cannot carry"},
        {&a, "${}", JPT_ERR_INVALID,
         "'${' is not followed by a variable name and '}' (write ${NAME} with letters, digits "
         "and '_')"},
        {&a, "${a-b}", JPT_ERR_INVALID,
         "'${' is not followed by a variable name and '}' (write ${NAME} with letters, digits "
         "and '_')"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        out.len = 0;
        assert_int_equal(jpt__policy_substitute(p, bad[i].url, bad[i].text, &out, &values, why,
                                                sizeof(why)),
                         bad[i].rc);
        assert_string_equal(why, bad[i].why);
        /* The check alone says the same. */
        assert_int_equal(jpt__policy_substitute(p, bad[i].url, bad[i].text, NULL, NULL, why,
                                                sizeof(why)),
                         bad[i].rc);
    }
    /* What a redirect's hop may carry. */
    assert_true(jpt__policy_url_carries(p, &a, "Bearer ${JPT_T_TOKEN}"));
    assert_true(jpt__policy_url_carries(p, &c, "no variable"));
    assert_false(jpt__policy_url_carries(p, &b, "Bearer ${JPT_T_TOKEN}"));
    assert_false(jpt__policy_url_carries(p, &a, "${JPT_T_TOKEN}${JPT_T_OBJ}"));
    assert_int_equal(values.n, 2);
    jpt__policy_url_clear(&a);
    jpt__policy_url_clear(&b);
    jpt__policy_url_clear(&c);
    jpt__policy_url_clear(&a_out);
    jpt__buf_free(&out);
    jpt__policy_values_free(&values);
    jpt_policy_free(p);
}

/* Issue 15 §5: "Match on the normalised path": what is compared is what
 * is sent (the parse's path replaced), percent-encoded unreserved
 * characters decoded and dot segments removed after; what a lenient
 * server would read as another path is refused. */
static void url_paths_are_normalised_and_put_back(void **state)
{
    (void)state;
    static const struct {
        const char *url, *path;
    } same[] = {
        {"http://h/api/%2e%2e/admin", "/admin"},
        {"http://h/api/%2E%2E/admin", "/admin"},
        {"http://h/api/.%2e/admin", "/admin"},
        {"http://h/api/x/%2E%2e/admin", "/api/admin"},
        {"http://h/%61pi/%7Euser/%5f", "/api/~user/_"},
        {"http://h/a%2Fb/c", "/a%2fb/c"}, /* libcurl writes escapes in lower case */
        {"http://h/a/./b/../c", "/a/c"},
        {"http://h/api//../x", "/api/x"},
        {"http://h/api//x", "/api//x"},
        {"http://h/a;v=1/b", "/a;v=1/b"},
        {"http://h/%25/x", "/%25/x"},
        {"http://h", "/"},
        {"http://h/..", "/"},
        {"http://h/a?q=/../b", "/a"},
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(*same); i++) {
        jpt__policy_url u = parsed(same[i].url);
        assert_string_equal(u.path, same[i].path);
        /* The text, and what the transfer sends, hold the same path. */
        char *sent = NULL;
        assert_int_equal(curl_url_get(u.u, CURLUPART_PATH, &sent, 0), CURLUE_OK);
        assert_string_equal(sent, same[i].path);
        curl_free(sent);
        assert_non_null(strstr(u.text, same[i].path));
        jpt__policy_url_clear(&u);
    }
    static const struct {
        const char *url, *why;
    } refused[] = {
        {"http://h/api/..%2fadmin", "its path hides a dot segment"},
        {"http://h/api/..%2Fadmin", "its path hides a dot segment"},
        {"http://h/api/x/..%5c..%5cadmin", "its path hides a dot segment"},
        {"http://h/api/x\\..\\..\\admin", "its path hides a dot segment"},
        {"http://h/api/..;/admin", "its path hides a dot segment"},
        {"http://h/api/.;x/admin", "its path hides a dot segment"},
        {"http://h/api/%252e%252e/admin", "its path hides a dot segment"},
        {"http://h/api/%25252e%25252e/admin", "its path hides a dot segment"},
        {"http://h/api/.../admin", "its path hides a dot segment"},
        {"http://h/api/x%00/admin", "its path holds an encoded NUL byte"},
        {"http://h/api/%c0%ae%c0%ae/admin", "its path holds overlong UTF-8"},
        {"http://h/api/%zz", "its path has a '%' that is not followed by two hex digits"},
        {"http://h/api/%2", "its path has a '%' that is not followed by two hex digits"},
        {"http://h/%2525252525", "its path is percent-encoded more than three times over"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        jpt__policy_url u;
        const char *why = NULL;
        assert_int_equal(jpt__policy_url_parse(refused[i].url, &u, &why), JPT_ERR_INVALID);
        assert_non_null(why);
        if (strncmp(why, refused[i].why, strlen(refused[i].why)) != 0)
            fail_msg("%s: '%s' does not begin '%s'", refused[i].url, why, refused[i].why);
    }
    /* The verdict is on the normalised path. */
    jpt_policy *p = policy("{\"uncovered\":\"deny\",\"network\":{\"allow\":"
                           "[\"https://x.example/api\"]}}");
    expect_verdict(p, JPT_ACCESS_HTTP, "https://x.example/api/%2e%2e/admin", DENY);
    expect_verdict(p, JPT_ACCESS_HTTP, "https://x.example/%61pi/v1", ALLOW);
    expect_verdict(p, JPT_ACCESS_HTTP, "https://x.example/api/v1/%2e%2e/v2", ALLOW);
    expect(p, JPT_ACCESS_HTTP, "https://x.example/api/..%2fadmin", DENY,
           "http 'https://x.example/api/..%2fadmin': denied: not a valid URL (its path hides a "
           "dot segment (behind an encoded '/', a backslash, a ';' parameter or a second "
           "percent-encoding), which servers read differently)");
    jpt_policy_free(p);
}

/* jpt__policy_new_json(), for rooms that hold the section parsed: the
 * same policy, and the same refusal. */
static void a_parsed_section_gives_the_same_policy(void **state)
{
    (void)state;
    json_error_t err;
    json_t *sandbox = json_loads("{\"filesystem\":{\"allow\":[\"src\"]}}", 0, &err);
    jpt_policy *p = NULL;

    assert_non_null(sandbox);
    assert_int_equal(jpt__policy_new_json(sandbox, &p), JPT_OK);
    json_decref(sandbox);
    expect(p, READ, "src/a", ALLOW, "fs.read 'src/a': allowed: under 'src' in filesystem.allow");
    expect_verdict(p, READ, "b", ASK);
    jpt_policy_free(p);

    assert_int_equal(jpt__policy_new_json(NULL, &p), JPT_OK);
    expect_verdict(p, READ, "b", ALLOW);
    jpt_policy_free(p);

    sandbox = json_loads("{\"sensitive\":\"never\"}", 0, &err);
    assert_int_equal(jpt__policy_new_json(sandbox, &p), JPT_ERR_INVALID);
    json_decref(sandbox);
    assert_string_equal(jpt_policy_errmsg(p),
                        "sensitive: expected \"deny\" or \"ask\", got \"never\"");
    expect_verdict(p, READ, "b", DENY);
    jpt_policy_free(p);
}

/* ---- Allocation failure ------------------------------------------------------------------- */

typedef struct new_ctx {
    const char *json;
    int rc;              /* what an unhindered call returns */
    const char *message; /* and its message */
} new_ctx;

/* Out of memory never looks like a malformed configuration, nor the other
 * way round: either JPT_ERR_NOMEM with no policy, or the unhindered result
 * (checked here, so that tu_sweep hears JPT_OK). */
static int new_op(void *ctx)
{
    const new_ctx *c = ctx;
    jpt_policy *p = (jpt_policy *)&p;
    int rc = jpt_policy_new(c->json, &p);

    if (rc == JPT_ERR_NOMEM) {
        assert_null(p);
        return rc;
    }
    tu_fail_at(0);
    char message[JPT__ERRMSG_MAX];
    snprintf(message, sizeof(message), "%s", jpt_policy_errmsg(p));
    jpt_policy_free(p);
    assert_int_equal(rc, c->rc);
    assert_string_equal(message, c->message);
    return JPT_OK;
}

static void policy_new_survives_allocation_failure(void **state)
{
    (void)state;
    static const char *const valid[] = {
        NULL,
        "{}",
        "{\"filesystem\":{\"allow\":[\"src\",\"./lib/\"],\"writable\":[\"build\"],"
        "\"deny\":[\"src/Secret\",\"x\"],\"hardlinks\":\"allow\"},"
        "\"sensitive_paths\":[\"*.key\",\"**/secrets/\",\"config/prod.yaml\"],"
        "\"sensitive\":\"ask\",\"uncovered\":\"deny\","
        "\"network\":{\"allow\":[\"https://example.com/api\",\"http://[::1]:8/\"],"
        "\"envs\":[\"TOKEN\"],\"redirects\":2,\"timeout_ms\":5,\"max_response_bytes\":9},"
        "\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"]],\"envs\":[\"HOME\"]}}}",
        "{\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"],[\"status\"],[]],"
        "\"envs\":[\"HOME\",\"TOKEN\"],\"timeout_ms\":100,\"output_limit\":4096},"
        "\"/bin/ls\":{},\"make\":{\"envs\":[]}}}",
    };
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        new_ctx c = {valid[i], JPT_OK, ""};
        tu_sweep("jpt_policy_new", new_op, &c);
    }
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        new_ctx c = {refusals[i].json, JPT_ERR_INVALID, refusals[i].message};
        tu_sweep("jpt_policy_new (refused)", new_op, &c);
    }
}

typedef struct check_ctx {
    const jpt_policy *p;
    int access;
    const char *target;
} check_ctx;

/* A check either runs out of memory with no reason, or gives the verdict
 * and reason of an unhindered check (checked here, so that tu_sweep hears
 * JPT_OK). */
static int check_op(void *ctx)
{
    const check_ctx *c = ctx;
    char *reason = (char *)&reason, *expected = NULL;
    int rc = jpt_policy_check(c->p, c->access, c->target, &reason);

    if (rc == JPT_ERR_NOMEM) {
        assert_null(reason);
        return rc;
    }
    tu_fail_at(0);
    int verdict = jpt_policy_check(c->p, c->access, c->target, &expected);
    bool same = strcmp(reason, expected) == 0;
    jpt_free(reason);
    jpt_free(expected);
    assert_int_equal(rc, verdict);
    assert_true(same);
    return JPT_OK;
}

static void policy_check_survives_allocation_failure(void **state)
{
    (void)state;
    jpt_policy *p = policy("{\"filesystem\":{\"allow\":[\"src\"],\"writable\":true,"
                           "\"deny\":[\"src/private\"]},\"sensitive_paths\":[\"*.key\"],"
                           "\"commands\":{\"git\":{\"args\":[[\"log\",\"**\"]]}},"
                           "\"network\":{\"allow\":[\"https://x/a\",\"http://[::1]/\"]}}");
    static const check_ctx cases[] = {
        {NULL, JPT_ACCESS_HTTP, "https://x/a/b"}, {NULL, JPT_ACCESS_HTTP, "http://[0::1]/"},
        {NULL, JPT_ACCESS_HTTP, "https://u@x/a"}, {NULL, JPT_ACCESS_HTTP, "http://[::1"},
        {NULL, READ, "src/main.rs"},        {NULL, WRITE, "src/a.c"},
        {NULL, READ, ".env"},               {NULL, WRITE, ".git"},
        {NULL, LIST, "src/private"},        {NULL, WRITE, "src"},
        {NULL, READ, "docs/x.key"},         {NULL, READ, "a//b"},
        {NULL, JPT_ACCESS_HTTP, "https://x"}, {NULL, JPT_ACCESS_PROCESS, "[\"cargo\",\"b\"]"},
        {NULL, JPT_ACCESS_PROCESS, "[\"git\",\"log\",\"-p\"]"},
        {NULL, JPT_ACCESS_PROCESS, "[\"git\",\"push\"]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_ctx c = cases[i];
        c.p = p;
        tu_sweep("jpt_policy_check", check_op, &c);
    }
    jpt_policy_free(p);

    jpt_policy *refused = NULL;
    assert_int_equal(jpt_policy_new("[]", &refused), JPT_ERR_INVALID);
    check_ctx c = {refused, READ, "a"};
    tu_sweep("jpt_policy_check (refused)", check_op, &c);
    jpt_policy_free(refused);
}

static int normalize_op(void *ctx)
{
    char *out = (char *)&out;
    int rc = jpt_policy_normalize_path(ctx, &out);

    if (rc == JPT_OK)
        jpt_free(out);
    else
        assert_null(out);
    return rc;
}

static void normalize_path_survives_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("jpt_policy_normalize_path", normalize_op, (void *)"./a//b/../c/./d/");
    tu_sweep("jpt_policy_normalize_path", normalize_op, (void *)"");
}

/* ${VAR} substitution and scrubbing: JPT_ERR_NOMEM and no leak at every
 * allocation, or the whole result. */
static int substitute_op(void *ctx)
{
    const jpt_policy *p = ctx;
    jpt__policy_values values = {0};
    jpt__policy_url url;
    jpt__scrub_set *set = NULL;
    jpt__buf out = JPT__BUF_INIT, clean = JPT__BUF_INIT;
    const char *why_url = NULL;
    char why[256];

    int rc = jpt__policy_url_parse("https://a.example/%61pi/./x", &url, &why_url);
    if (rc == JPT_OK)
        rc = jpt__policy_substitute(p, &url, "Bearer ${JPT_T_SWEEP} and ${JPT_T_SWEEP}", &out,
                                    &values, why, sizeof(why));
    if (rc == JPT_OK)
        rc = jpt__policy_values_scrub_set(&values, &set);
    if (rc == JPT_OK)
        rc = jpt__scrub(set, out.data, out.len, &clean, NULL);
    if (rc == JPT_OK) {
        tu_fail_at(0);
        assert_string_equal(clean.data, "Bearer [REDACTED] and [REDACTED]");
    }
    if (why_url == NULL)
        jpt__policy_url_clear(&url);
    jpt__buf_free(&out);
    jpt__buf_free(&clean);
    jpt__scrub_set_free(set);
    jpt__policy_values_free(&values);
    return rc;
}

static void substitution_survives_allocation_failure(void **state)
{
    (void)state;
    setenv("JPT_T_SWEEP", "sweep-secret-value", 1);
    jpt_policy *p = policy("{\"network\":{\"allow\":[{\"url\":\"https://a.example/api\","
                           "\"envs\":[\"JPT_T_SWEEP\"]}]}}");
    tu_sweep("jpt__policy_substitute", substitute_op, p);
    jpt_policy_free(p);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_policy_reads_and_lists_the_workspace),
        cmocka_unit_test(default_policy_asks_before_any_write),
        cmocka_unit_test(default_policy_asks_for_network_and_processes),
        cmocka_unit_test(a_reason_quotes_controls_and_bidi_overrides),
        cmocka_unit_test(default_policy_denies_sensitive_paths),
        cmocka_unit_test(hardlinks_are_denied_unless_allowed),
        cmocka_unit_test(every_builtin_pattern_is_denied_for_every_access),
        cmocka_unit_test(names_match_case_insensitively),
        cmocka_unit_test(characters_folding_to_ascii_letters_match),
        cmocka_unit_test(names_that_only_look_alike_are_not_sensitive),
        cmocka_unit_test(a_name_never_seen_before_is_covered),
        cmocka_unit_test(directories_holding_sensitive_paths_cannot_be_written),
        cmocka_unit_test(configured_patterns_extend_the_list),
        cmocka_unit_test(no_configuration_shrinks_the_list),
        cmocka_unit_test(sensitive_ask_sends_them_to_the_handler),
        cmocka_unit_test(git_files_are_sensitive_to_writes),
        cmocka_unit_test(a_directory_a_write_creates_is_judged_by_its_name),
        cmocka_unit_test(builtin_table_matches_its_patterns),
        cmocka_unit_test(allow_prefixes_match_whole_names),
        cmocka_unit_test(allow_prefixes_are_normalised),
        cmocka_unit_test(allow_prefixes_match_case_exactly),
        cmocka_unit_test(an_empty_allow_list_grants_nothing),
        cmocka_unit_test(writable_true_makes_the_allowed_prefixes_writable),
        cmocka_unit_test(a_writable_list_grants_writing_and_reading_there),
        cmocka_unit_test(writable_false_grants_no_write),
        cmocka_unit_test(uncovered_deny_refuses_what_nothing_grants),
        cmocka_unit_test(deny_beats_allow_on_the_same_path),
        cmocka_unit_test(deny_prefixes_match_case_insensitively),
        cmocka_unit_test(directories_holding_denied_prefixes_cannot_be_written),
        cmocka_unit_test(precedence_is_as_documented),
        cmocka_unit_test(paths_that_are_not_normalised_are_denied),
        cmocka_unit_test(normalize_path_gives_the_form_checks_take),
        cmocka_unit_test(a_normalized_request_is_checked_by_its_names),
        cmocka_unit_test(check_refuses_bad_arguments),
        cmocka_unit_test(a_process_target_is_a_json_argv),
        cmocka_unit_test(commands_allow_their_argument_lists),
        cmocka_unit_test(git_rules_allow_only_the_risky_arguments_they_name),
        cmocka_unit_test(git_configuration_keys_that_name_programs_are_overridden),
        cmocka_unit_test(loader_variables_are_known),
        cmocka_unit_test(the_reason_names_the_request_served),
        cmocka_unit_test(long_targets_are_cut_in_reasons),
        cmocka_unit_test(hostile_paths_are_matched_in_linear_time),
        cmocka_unit_test(malformed_configurations_are_refused_with_their_message),
        cmocka_unit_test(names_longer_than_a_file_system_holds_are_refused),
        cmocka_unit_test(network_and_commands_are_accepted_in_their_forms),
        cmocka_unit_test(network_allow_matches_origin_and_whole_segments),
        cmocka_unit_test(some_urls_are_refused_outright),
        cmocka_unit_test(substitution_takes_only_variables_the_url_carries),
        cmocka_unit_test(url_paths_are_normalised_and_put_back),
        cmocka_unit_test(a_parsed_section_gives_the_same_policy),
        cmocka_unit_test(policy_new_survives_allocation_failure),
        cmocka_unit_test(policy_check_survives_allocation_failure),
        cmocka_unit_test(normalize_path_survives_allocation_failure),
        cmocka_unit_test(substitution_survives_allocation_failure),
    };
    return TU_RUN(tests);
}
