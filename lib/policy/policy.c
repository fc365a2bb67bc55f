/* The access policy object (vfs.h, "The access policy"; D11 "Access policy
 * enforcement"): created from the `sandbox` JSON, it gives one request its
 * verdict, by the precedence vfs.h documents, and the reason the tool and
 * the policy handler are told. */
#include <string.h>

#include "policy/policy.h"

/* A target is shown in a reason up to this many bytes. */
#define SHOWN_MAX 200

/* Why a verdict was given; the reason spells it out. */
typedef enum reason_code {
    WHY_REFUSED,          /* the configuration was refused */
    WHY_NOT_NORMALISED,
    WHY_SENSITIVE,        /* detail: the pattern */
    WHY_HOLDS_SENSITIVE,  /* detail: the pattern */
    WHY_GIT_NAME,         /* a write with a ".git" name */
    WHY_GIT_HEAD,         /* a write of a name "HEAD" */
    WHY_ON_THE_WAY,       /* a directory a write creates: its target decides */
    WHY_DENY_UNDER,       /* detail: the filesystem.deny prefix */
    WHY_DENY_HOLDS,       /* detail: the filesystem.deny prefix */
    WHY_ALLOW,            /* detail: the filesystem.allow prefix */
    WHY_ALLOW_DEFAULT,    /* no filesystem.allow: the workspace */
    WHY_ALLOW_WRITABLE,   /* detail: the filesystem.allow prefix */
    WHY_WRITABLE,         /* detail: the filesystem.writable prefix */
    WHY_OUTSIDE_ALLOW,
    WHY_READ_ONLY,
    WHY_OUTSIDE_WRITABLE,
    WHY_COMMAND_ANY,      /* detail: the program */
    WHY_COMMAND_ARGS,     /* detail: the program; index: the args entry */
    WHY_NO_COMMAND,
    WHY_ARGS_UNMATCHED,   /* detail: the program */
    WHY_GIT_RISKY,        /* detail: the argument; more: what it does;
                             index: its place in the arguments */
    WHY_URL_INVALID,      /* detail: libcurl's words */
    WHY_URL_SCHEME,
    WHY_URL_USERINFO,
    WHY_URL_ALLOW,        /* detail: the network.allow entry */
    WHY_URL_LITERAL,      /* an IP literal or localhost no entry names */
    WHY_URL_OUTSIDE,
    WHY_URL_NO_NETWORK,   /* network.allow lists nothing */
} reason_code;

typedef struct decision {
    int verdict;
    reason_code why;
    const char *detail;
    size_t index;
    const char *more;
    const char *program; /* WHY_GIT_RISKY: the rule's key */
    const char *risk;    /* git not covered: a risky argument (more: what
                            it does; index: its place) */
} decision;

static decision make(int verdict, reason_code why, const char *detail)
{
    decision d = {verdict, why, detail, 0, NULL, NULL, NULL};
    return d;
}

/* ---- Creating ------------------------------------------------------------------------ */

/* The end of making the policy `p`: reads `sandbox` into it unless `rc`
 * says reading the text failed already. A refused configuration leaves `p`
 * with its message, denying everything (vfs.h; as sqlite3_open() does);
 * running out of memory frees it. */
static int finish_new(jpt_policy *p, const json_t *sandbox, int rc, jpt_policy **out)
{
    if (rc == JPT_OK)
        rc = jpt__policy_configure(p, sandbox);
    if (rc == JPT_ERR_NOMEM) {
        jpt_policy_free(p);
        p = NULL;
    } else if (rc < 0) {
        jpt__policy_clear(p);
        p->refused = true;
    }
    *out = p;
    return rc;
}

int jpt__policy_new_json(const json_t *sandbox, jpt_policy **out)
{
    jpt_policy *p = jpt__calloc(1, sizeof(*p));

    *out = NULL;
    return p != NULL ? finish_new(p, sandbox, JPT_OK, out) : JPT_ERR_NOMEM;
}

JPT_EXPORT int jpt_policy_new(const char *sandbox_json, jpt_policy **out)
{
    json_t *sandbox = NULL;
    json_error_t err;
    int rc = JPT_OK;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_policy_new: out is NULL");
    jpt_policy *p = jpt__calloc(1, sizeof(*p));
    *out = NULL;
    if (p == NULL)
        return jpt__fail(JPT_ERR_NOMEM, "jpt_policy_new: out of memory");
    if (sandbox_json != NULL) {
        rc = jpt__json_load(sandbox_json, strlen(sandbox_json),
                            JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &sandbox, &err);
        if (rc == JPT_ERR_INVALID)
            jpt__err(&p->err, rc, "sandbox: invalid JSON at line %d, column %d: %s", err.line,
                     err.column, err.text);
    }
    rc = finish_new(p, sandbox, rc, out);
    json_decref(sandbox);
    /* A refused configuration's policy keeps its message too. */
    if (rc < 0)
        jpt__fail(rc, "jpt_policy_new: %s",
                  *out != NULL && jpt_policy_errmsg(*out)[0] != '\0' ? jpt_policy_errmsg(*out)
                                                                      : jpt_strerror(rc));
    return rc;
}

JPT_EXPORT void jpt_policy_free(jpt_policy *p)
{
    if (p == NULL)
        return;
    jpt__policy_clear(p);
    jpt__free(p);
}

JPT_EXPORT const char *jpt_policy_errmsg(const jpt_policy *p)
{
    return p != NULL ? p->err.text : "";
}

JPT_EXPORT int jpt_policy_hardlinks_allowed(const jpt_policy *p)
{
    return p != NULL && !p->refused && p->hardlinks;
}

/* ---- Deciding ---------------------------------------------------------------------- */

/* Steps 5 and 6 of the precedence: what grants the request, or why nothing
 * does. */
static decision decide_grant(const jpt_policy *p, bool write, const char *path)
{
    const char *prefix;
    size_t i;

    if (write) {
        if (p->writable_all && (prefix = jpt__prefixes_find(&p->allow, path, false, &i)))
            return make(JPT_VERDICT_ALLOW, WHY_ALLOW_WRITABLE, prefix);
        if ((prefix = jpt__prefixes_find(&p->writable, path, false, &i)) != NULL)
            return make(JPT_VERDICT_ALLOW, WHY_WRITABLE, prefix);
        return make(p->uncovered_verdict,
                    p->writable_all            ? WHY_OUTSIDE_ALLOW
                    : p->writable.paths != NULL ? WHY_OUTSIDE_WRITABLE
                                                : WHY_READ_ONLY,
                    NULL);
    }
    if ((prefix = jpt__prefixes_find(&p->allow, path, false, &i)) != NULL)
        return make(JPT_VERDICT_ALLOW, p->allow_configured ? WHY_ALLOW : WHY_ALLOW_DEFAULT,
                    prefix);
    if ((prefix = jpt__prefixes_find(&p->writable, path, false, &i)) != NULL)
        return make(JPT_VERDICT_ALLOW, WHY_WRITABLE, prefix);
    return make(p->uncovered_verdict, WHY_OUTSIDE_ALLOW, NULL);
}

/* A filesystem.deny prefix that denies `path`: one it is under, or, for a
 * write, one beneath it (renaming or deleting the directory would take the
 * prefix's files out of the list's reach). */
static bool find_denied(const jpt_policy *p, bool write, const char *path, decision *d)
{
    size_t i;

    if (jpt__prefixes_find(&p->deny_folded, path, true, &i) != NULL) {
        *d = make(JPT_VERDICT_DENY, WHY_DENY_UNDER, p->deny.paths[i]);
        return true;
    }
    for (i = 0; write && i < p->deny_folded.n; i++)
        if (jpt__path_above(path, p->deny_folded.paths[i])) {
            *d = make(JPT_VERDICT_DENY, WHY_DENY_HOLDS, p->deny.paths[i]);
            return true;
        }
    return false;
}

/* Whether a write of `path` is sensitive as a repository's: with
 * filesystem.git "protected" (the default), a write that makes or changes
 * a git repository is a way out of the sandbox — the next `git status` of
 * the user runs a core.fsmonitor or a hook the tool wrote (issue 15 §2).
 * Git finds a repository in a directory's ".git" (a directory, or a file
 * naming one: "gitdir: …"), or in the directory itself when it holds
 * HEAD, objects/ and refs/ (a bare repository, which git uses as it finds
 * it unless safe.bareRepository is "explicit"); so a write is sensitive
 * when a name of its path is ".git", or its last name is "HEAD" (without
 * one, no directory is a repository), in any case. */
static bool git_sensitive(const jpt_policy *p, const char *path, reason_code *why)
{
    if (p->git_writable)
        return false;
    if (jpt__pattern_has_name(path, ".git", false)) {
        *why = WHY_GIT_NAME;
        return true;
    }
    if (jpt__pattern_has_name(path, "head", true)) {
        *why = WHY_GIT_HEAD;
        return true;
    }
    return false;
}

/* The precedence of vfs.h for a file system request. A directory that a
 * write creates on its way (JPT__ACCESS_CREATE) is judged by steps 1 to 4
 * as a write, and allowed past them: what grants the write is the check of
 * its target (issue 15 §2). */
static decision decide_path(const jpt_policy *p, int access, const char *path)
{
    bool write = access == JPT_ACCESS_WRITE, create = access == JPT__ACCESS_CREATE;
    bool inside;
    reason_code git_why;
    decision d;

    if (!jpt__path_is_normalized(path))
        return make(JPT_VERDICT_DENY, WHY_NOT_NORMALISED, NULL);

    /* Moving or deleting a directory may take a sensitive path out of the
     * list's reach; making an empty one cannot. */
    const jpt__policy_pattern *pattern = jpt__pattern_find(p, path, write, &inside);
    bool sensitive = pattern != NULL;
    decision flagged = make(p->sensitive_verdict, inside ? WHY_HOLDS_SENSITIVE : WHY_SENSITIVE,
                            sensitive ? pattern->text : NULL);
    if (!sensitive && (write || create) && git_sensitive(p, path, &git_why)) {
        sensitive = true;
        flagged = make(p->sensitive_verdict, git_why, NULL);
    }
    if (sensitive && flagged.verdict == JPT_VERDICT_DENY)
        return flagged;
    if (find_denied(p, write, path, &d))
        return d;
    if (sensitive)
        return flagged;
    if (create)
        return make(JPT_VERDICT_ALLOW, WHY_ON_THE_WAY, NULL);
    return decide_grant(p, write, path);
}

/* ---- Processes ---------------------------------------------------------------------- */

const jpt__policy_command *jpt__policy_command_find(const jpt_policy *p, const char *program)
{
    for (size_t i = 0; p != NULL && !p->refused && i < p->n_commands; i++)
        if (strcmp(p->commands[i].program, program) == 0)
            return &p->commands[i];
    return NULL;
}

/* Whether the arguments argv[1..] fit the entry `a`. */
static bool args_match(const jpt__policy_args *a, const json_t *argv)
{
    size_t n = json_array_size(argv) - 1;

    if (n < a->n || (!a->rest && n != a->n))
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(json_string_value(json_array_get(argv, i + 1)), a->words[i]) != 0)
            return false;
    return true;
}

/* For git, the first of the arguments past the `named` ones a rule
 * matched that the rule must name, with what it does in *does and its
 * place in *at; NULL when none (or not git). */
static const char *git_risk(const json_t *argv, size_t named, const char **does, size_t *at,
                            int *rc)
{
    size_t nargs = json_array_size(argv) - 1;

    *does = NULL;
    if (!jpt__policy_is_git(json_string_value(json_array_get(argv, 0))))
        return NULL;
    const char **args = jpt__calloc(nargs + 1, sizeof(char *));
    if (args == NULL) {
        *rc = JPT_ERR_NOMEM;
        return NULL;
    }
    for (size_t i = 0; i < nargs; i++)
        args[i] = json_string_value(json_array_get(argv, i + 1));
    *does = jpt__policy_git_risk(args, nargs, named, at);
    jpt__free(args);
    return *does != NULL ? json_string_value(json_array_get(argv, *at + 1)) : NULL;
}

/* A rule matched: for git, a denial when what it did not name is risky. */
static decision git_checked(const json_t *argv, const char *program, size_t named,
                            decision allowed, int *rc)
{
    const char *does;
    size_t at = 0;
    const char *arg = git_risk(argv, named, &does, &at, rc);

    if (arg == NULL)
        return allowed;
    decision d = make(JPT_VERDICT_DENY, WHY_GIT_RISKY, arg);
    d.index = at;
    d.more = does;
    d.program = program;
    return d;
}

/* Not covered: for git, the reason the person asked reads also names what
 * a risky argument does. */
static decision git_noted(const json_t *argv, decision uncovered, int *rc)
{
    uncovered.risk = git_risk(argv, 0, &uncovered.more, &uncovered.index, rc);
    return uncovered;
}

/* RFD 016's CommandRule: the program's rule, then its argument lists; for
 * git, an entry allows only what it names of git's risky arguments (the
 * first such denial is the verdict when no entry allows). */
static decision decide_process(const jpt_policy *p, const json_t *argv, int *rc)
{
    const char *program = json_string_value(json_array_get(argv, 0));
    const jpt__policy_command *cmd = jpt__policy_command_find(p, program);
    decision refused = make(0, WHY_ARGS_UNMATCHED, NULL);

    if (cmd == NULL)
        return git_noted(argv, make(p->uncovered_verdict, WHY_NO_COMMAND, NULL), rc);
    if (cmd->args == NULL)
        return git_checked(argv, cmd->program, 0,
                           make(JPT_VERDICT_ALLOW, WHY_COMMAND_ANY, cmd->program), rc);
    for (size_t i = 0; i < cmd->n_args; i++) {
        if (!args_match(&cmd->args[i], argv))
            continue;
        decision d = make(JPT_VERDICT_ALLOW, WHY_COMMAND_ARGS, cmd->program);
        d.index = i;
        d = git_checked(argv, cmd->program, cmd->args[i].n, d, rc);
        if (d.verdict == JPT_VERDICT_ALLOW || *rc < 0)
            return d;
        if (refused.verdict == 0)
            refused = d;
    }
    if (refused.verdict != 0)
        return refused;
    return git_noted(argv, make(p->uncovered_verdict, WHY_ARGS_UNMATCHED, cmd->program), rc);
}

/* The network.allow verdict on a URL (vfs.h, "network.allow"). */
static decision decide_url(const jpt_policy *p, const char *target, int *rc)
{
    jpt__policy_url url;
    const char *why = NULL;
    decision d;

    *rc = jpt__policy_url_parse(target, &url, &why);
    if (*rc == JPT_ERR_NOMEM)
        return make(JPT_VERDICT_DENY, WHY_URL_INVALID, NULL);
    *rc = JPT_OK;
    if (why != NULL)
        return make(JPT_VERDICT_DENY, WHY_URL_INVALID, why);
    const jpt__policy_url *entry = jpt__policy_url_find(p, &url);
    if (!jpt__policy_url_is_web(&url))
        d = make(JPT_VERDICT_DENY, WHY_URL_SCHEME, NULL);
    else if (url.userinfo)
        d = make(JPT_VERDICT_DENY, WHY_URL_USERINFO, NULL);
    else if (entry != NULL)
        d = make(JPT_VERDICT_ALLOW, WHY_URL_ALLOW, entry->text);
    else if (url.kind != JPT__URL_NAME)
        d = make(JPT_VERDICT_DENY, WHY_URL_LITERAL, NULL);
    else
        d = make(p->uncovered_verdict, p->n_urls > 0 ? WHY_URL_OUTSIDE : WHY_URL_NO_NETWORK,
                 NULL);
    jpt__policy_url_clear(&url);
    return d;
}

/* ---- The reason ---------------------------------------------------------------------- */

static const char *method_of(int access)
{
    switch (access) {
    case JPT_ACCESS_READ:
        return "fs.read";
    case JPT_ACCESS_WRITE:
    case JPT__ACCESS_CREATE:
        return "fs.write";
    case JPT_ACCESS_LIST:
        return "fs.list_dir";
    case JPT_ACCESS_HTTP:
        return "http";
    default:
        return "process.run";
    }
}

static const char *outcome_of(int verdict)
{
    return verdict == JPT_VERDICT_ALLOW  ? "allowed"
           : verdict == JPT_VERDICT_DENY ? "denied"
                                         : "needs approval";
}

/* Appends n bytes of `shown` quoted: each character that would display
 * other than it reads (a control, a bidirectional override:
 * jpt__utf8_misleading) as '?', so that a tool cannot make the person
 * asked read another path or command than the one it sent; cut at
 * SHOWN_MAX bytes on a character boundary with "…" after. */
static int put_shown(jpt__buf *b, const char *shown, size_t n)
{
    size_t cut = n;
    int rc = JPT_OK;

    if (n > SHOWN_MAX) {
        cut = SHOWN_MAX;
        while (cut > 0 && ((unsigned char)shown[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 sequence */
    }
    for (size_t i = 0; rc == JPT_OK && i < cut;) {
        size_t m = jpt__utf8_misleading(shown + i, n - i), run = 0;
        if (m > 0) {
            rc = jpt__buf_putc(b, '?');
            i += m;
            continue;
        }
        while (i + run < cut && jpt__utf8_misleading(shown + i + run, n - i - run) == 0)
            run++;
        rc = jpt__buf_append(b, shown + i, run);
        i += run;
    }
    return rc == JPT_OK && cut < n ? jpt__buf_puts(b, "\xE2\x80\xA6") : rc;
}

/* "argument 2 '--output=x' writes a file the rule does not name: allowed
 * only where a commands.git.args entry names it" */
static int put_git_risk(jpt__buf *b, decision d)
{
    int rc = jpt__buf_printf(b, "argument %zu '", d.index + 1);

    if (rc == JPT_OK)
        rc = put_shown(b, d.detail, strlen(d.detail));
    if (rc == JPT_OK)
        rc = jpt__buf_printf(b, "' %s: allowed only where a commands.%s.args entry names it",
                             d.more, d.program);
    return rc;
}

/* "; beware: argument 1 '-c' is an option of git itself, …" */
static int put_git_note(jpt__buf *b, decision d)
{
    if (d.risk == NULL)
        return JPT_OK;
    int rc = jpt__buf_printf(b, "; beware: argument %zu '", d.index + 1);
    if (rc == JPT_OK)
        rc = put_shown(b, d.risk, strlen(d.risk));
    return rc == JPT_OK ? jpt__buf_printf(b, "' %s", d.more) : rc;
}

static int put_why(jpt__buf *b, const jpt_policy *p, decision d)
{
    int rc;

    switch (d.why) {
    case WHY_REFUSED:
        return jpt__buf_printf(b, "the sandbox configuration was refused (%s)", p->err.text);
    case WHY_NOT_NORMALISED:
        return jpt__buf_puts(b, "path is not normalised");
    case WHY_SENSITIVE:
        return jpt__buf_printf(b, "path is in the sensitive paths list (%s)", d.detail);
    case WHY_HOLDS_SENSITIVE:
        return jpt__buf_printf(b, "path may hold a path of the sensitive paths list (%s)",
                               d.detail);
    case WHY_GIT_NAME:
        return jpt__buf_puts(b, "path is in a git repository's own files (a '.git' name), "
                                "which could make git run commands; filesystem.git is "
                                "\"protected\"");
    case WHY_GIT_HEAD:
        return jpt__buf_puts(b, "a file named HEAD makes its directory a git repository, "
                                "which could make git run commands; filesystem.git is "
                                "\"protected\"");
    case WHY_ON_THE_WAY:
        return jpt__buf_puts(b, "a directory the write creates; its target is judged");
    case WHY_DENY_UNDER:
        return jpt__buf_printf(b, "under '%s' in filesystem.deny", d.detail);
    case WHY_DENY_HOLDS:
        return jpt__buf_printf(b, "path holds '%s', which filesystem.deny lists", d.detail);
    case WHY_ALLOW:
        return jpt__buf_printf(b, "under '%s' in filesystem.allow", d.detail);
    case WHY_ALLOW_DEFAULT:
        return jpt__buf_puts(b, "the default policy lets tools read the workspace");
    case WHY_ALLOW_WRITABLE:
        return jpt__buf_printf(b, "under '%s' in filesystem.allow, and filesystem.writable "
                                  "is true",
                               d.detail);
    case WHY_WRITABLE:
        return jpt__buf_printf(b, "under '%s' in filesystem.writable", d.detail);
    case WHY_OUTSIDE_ALLOW:
        return jpt__buf_puts(b, "not covered by the policy (outside filesystem.allow)");
    case WHY_READ_ONLY:
        return jpt__buf_puts(b, "not covered by the policy (the workspace is read-only: "
                                "filesystem.writable is false)");
    case WHY_OUTSIDE_WRITABLE:
        return jpt__buf_puts(b, "not covered by the policy (outside filesystem.writable)");
    case WHY_COMMAND_ANY:
        return jpt__buf_printf(b, "commands.%s allows any arguments", d.detail);
    case WHY_COMMAND_ARGS:
        return jpt__buf_printf(b, "the arguments match commands.%s.args[%zu]", d.detail,
                               d.index);
    case WHY_NO_COMMAND:
        rc = jpt__buf_puts(b, "not covered by the policy (commands has no rule for this "
                              "program)");
        return rc == JPT_OK ? put_git_note(b, d) : rc;
    case WHY_ARGS_UNMATCHED:
        rc = jpt__buf_printf(b, "not covered by the policy (the arguments match none of "
                                "commands.%s.args)",
                             d.detail);
        return rc == JPT_OK ? put_git_note(b, d) : rc;
    case WHY_GIT_RISKY:
        return put_git_risk(b, d);
    case WHY_URL_INVALID:
        return d.detail != NULL ? jpt__buf_printf(b, "not a valid URL (%s)", d.detail)
                                : jpt__buf_puts(b, "out of memory reading the URL");
    case WHY_URL_SCHEME:
        return jpt__buf_puts(b, "only http:// and https:// URLs are served");
    case WHY_URL_USERINFO:
        return jpt__buf_puts(b, "the URL has user information (user@host), which is refused");
    case WHY_URL_ALLOW:
        return jpt__buf_printf(b, "under '%s' in network.allow", d.detail);
    case WHY_URL_LITERAL:
        /* Also for a listed address under another path than its entry's:
         * "names it" alone would read as granted. */
        return jpt__buf_puts(b, "an IP address or localhost is allowed only under a "
                                "network.allow entry that names it as such, and is never "
                                "asked about");
    case WHY_URL_OUTSIDE:
        return jpt__buf_puts(b, "not covered by the policy (outside network.allow)");
    case WHY_URL_NO_NETWORK:
        return jpt__buf_puts(b, "not covered by the policy (network.allow lists no URL)");
    }
    return JPT_OK;
}

/* "<method> '<shown>': <outcome>: <why>" into *reason. */
static int write_reason(const jpt_policy *p, const char *method, const char *shown,
                        size_t shown_len, decision d, char **reason)
{
    jpt__buf b = JPT__BUF_INIT;
    /* An empty method: the caller names the request itself. */
    int rc = method[0] != '\0' ? jpt__buf_printf(&b, "%s '", method) : JPT_OK;

    if (rc == JPT_OK && method[0] != '\0')
        rc = put_shown(&b, shown, shown_len);
    if (rc == JPT_OK)
        rc = jpt__buf_printf(&b, "%s%s: ", method[0] != '\0' ? "': " : "",
                             outcome_of(d.verdict));
    if (rc == JPT_OK)
        rc = put_why(&b, p, d);
    if (rc == JPT_OK && (*reason = jpt__buf_take(&b)) == NULL)
        rc = JPT_ERR_NOMEM;
    jpt__buf_free(&b);
    return rc;
}

/* ---- Checking ------------------------------------------------------------------------ */

/* A process target: a JSON array of strings, the program first (not
 * empty). Its program is what a reason shows. */
static int read_process_target(const char *target, json_t **argv)
{
    json_error_t err;
    int rc = jpt__json_load(target, strlen(target), 0, argv, &err);

    if (rc < 0)
        return rc;
    const char *name = json_string_value(json_array_get(*argv, 0));
    bool valid = name != NULL && name[0] != '\0';
    for (size_t i = 1; valid && i < json_array_size(*argv); i++)
        valid = json_is_string(json_array_get(*argv, i));
    if (!valid) {
        json_decref(*argv);
        *argv = NULL;
        return JPT_ERR_INVALID;
    }
    return JPT_OK;
}

int jpt__policy_check(const jpt_policy *p, int access, const char *target,
                      const char *method, const char *shown, char **reason)
{
    json_t *argv = NULL;
    decision d;
    int rc = JPT_OK;

    if (reason != NULL)
        *reason = NULL;
    if (p == NULL || target == NULL ||
        ((access < JPT_ACCESS_READ || access > JPT_ACCESS_PROCESS) &&
         access != JPT__ACCESS_CREATE))
        return JPT_ERR_INVALID;
    if (access == JPT_ACCESS_PROCESS) {
        if ((rc = read_process_target(target, &argv)) < 0)
            return rc;
        shown = json_string_value(json_array_get(argv, 0));
    } else if (shown == NULL)
        shown = target;

    if (p->refused)
        d = make(JPT_VERDICT_DENY, WHY_REFUSED, NULL);
    else if (access == JPT_ACCESS_HTTP)
        d = decide_url(p, target, &rc);
    else if (access == JPT_ACCESS_PROCESS)
        d = decide_process(p, argv, &rc);
    else
        d = decide_path(p, access, target);

    if (rc == JPT_OK && reason != NULL)
        rc = write_reason(p, method != NULL ? method : method_of(access), shown, strlen(shown),
                          d, reason);
    json_decref(argv);
    return rc < 0 ? rc : d.verdict;
}

JPT_EXPORT int jpt_policy_check(const jpt_policy *p, int access, const char *target,
                                char **reason)
{
    return jpt__policy_check(p, access, target, NULL, NULL, reason);
}
