/* What jptool lets git do for a tool (vfs.h, "commands.<program>" and
 * "process.run"; issue 15 §3: git gets no configuration the tool can
 * write):
 *   - the arguments a commands rule must name: git's options and
 *     subcommands that run a program, write or read a file the rule did
 *     not name, or change where git looks and what configuration it
 *     reads. git takes an unambiguous prefix of a long option ("--out=x"
 *     is --output=x), a value after '=' or in the next argument, and
 *     short options clustered with their value attached ("-nOless"), so
 *     every such form is caught;
 *   - the environment and the configuration overrides a git child runs
 *     with: no system or global configuration, and every key that names
 *     a program (or hooks, or templates) set to a harmless value in the
 *     command-line scope, which wins over the repository's own, for the
 *     keys jptool knows and for each key of the repository's
 *     configuration that names a program under a name of its choosing
 *     (filter.<driver>.smudge, diff.<driver>.textconv, alias.<name>, …),
 *     read before each run. */
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool in(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* ---- Arguments ------------------------------------------------------------------------- */

/* An option that runs a program, names a file, or moves git elsewhere. */
typedef struct risky_option {
    const char *subcommand; /* NULL: any */
    const char *name;       /* "--output" (any prefix of it too), or "-O" */
    const char *does;
} risky_option;

static const char runs[] = "runs a program";
static const char writes[] = "writes a file the rule does not name";
static const char reads[] = "reads files outside the repository";
static const char configures[] = "sets git's configuration";

static const risky_option risky_options[] = {
    {NULL, "--output", writes},               /* diff, log, show, archive */
    {NULL, "--output-directory", writes},     /* format-patch */
    {NULL, "--open-files-in-pager", runs},    /* grep */
    {NULL, "--upload-pack", runs},            /* fetch, clone, ls-remote, pull */
    {NULL, "--receive-pack", runs},           /* push, send-pack */
    {NULL, "--exec", runs},                   /* push, archive, rebase */
    {NULL, "--extcmd", runs},                 /* difftool */
    {NULL, "--ext-diff", runs},               /* diff, log, show */
    {NULL, "--textconv", runs},               /* diff, log, show, grep, blame */
    {NULL, "--config", configures},           /* clone */
    {NULL, "--config-env", configures},
    {NULL, "--template", "copies hooks, which git runs, from a directory"}, /* init, clone */
    {NULL, "--separate-git-dir", "puts the repository outside the workspace"},
    {NULL, "--no-index", reads},              /* diff, grep */
    {NULL, "--recurse-submodules",
     "runs git in submodules, whose configuration is not checked"},
    {NULL, "--index-output", writes},         /* read-tree */
    {NULL, "--prefix", writes},               /* checkout-index */
    {NULL, "--export-marks", writes},         /* fast-export, fast-import */
    {NULL, "--import-marks", reads},
    {NULL, "--import-marks-if-exists", reads},
    {NULL, "--export-pack-edges", writes},
    {"grep", "-O", runs},
    {"clone", "-c", configures},
    {"clone", "-u", runs},
    {"ls-remote", "-u", runs},
    {"archive", "-o", writes},
    {"format-patch", "-o", writes},
    {"rebase", "-x", runs},
};

/* Subcommands that run programs, serve or schedule by design (a tool, a
 * browser, a daemon, a shell command), or write git's configuration for
 * the next git to run. */
static const char *const risky_subcommands[] = {
    "archimport", "bisect", "citool", "config", "credential", "cvsexportcommit", "cvsimport",
    "cvsserver", "daemon", "difftool", "filter-branch", "fsmonitor--daemon", "gui", "help",
    "imap-send", "instaweb", "maintenance", "mergetool", "p4", "receive-pack", "remote-ext",
    "remote-fd", "send-email", "shell", "submodule", "svn", "upload-archive", "upload-pack",
    "web--browse",
};

/* Whether `subcommand` is one of them, or a credential helper
 * ("credential-store", "credential-cache--daemon", …). */
static bool risky_subcommand(const char *subcommand)
{
    return strncmp(subcommand, "credential", 10) == 0 ||
           in(risky_subcommands, COUNT(risky_subcommands), subcommand);
}

/* git's own options that take their value in the next argument. */
static const char *const global_with_value[] = {
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
};

bool jpt__policy_is_git(const char *program)
{
    const char *slash = strrchr(program, '/');

    return strcmp(slash != NULL ? slash + 1 : program, "git") == 0;
}

size_t jpt__policy_git_subcommand(const char *const *args, size_t nargs)
{
    for (size_t i = 0; i < nargs; i++) {
        if (args[i][0] != '-')
            return i;
        if (in(global_with_value, COUNT(global_with_value), args[i]))
            i++;
    }
    return nargs;
}

size_t jpt__policy_git_where(const char *const *args, size_t nargs, const char **out)
{
    static const char *const where[] = {"-C", "-c", "--git-dir", "--work-tree", "--config-env",
                                        "--bare"};
    size_t sub = jpt__policy_git_subcommand(args, nargs), n = 0;

    for (size_t i = 0; i < sub; i++) {
        bool value = in(global_with_value, COUNT(global_with_value), args[i]);
        size_t len = strcspn(args[i], "=");
        for (size_t k = 0; k < COUNT(where); k++)
            if (strlen(where[k]) == len && memcmp(args[i], where[k], len) == 0) {
                out[n++] = args[i];
                if (value && i + 1 < sub)
                    out[n++] = args[i + 1];
            }
        i += value;
    }
    return n;
}

/* Whether the long option `arg` ("--out=x") names `option` ("--output"):
 * its name before any '=' is a prefix of the option's. */
static bool names_long(const char *arg, const char *option)
{
    size_t n = strcspn(arg + 2, "=");

    return n > 0 && strlen(option + 2) >= n && memcmp(arg + 2, option + 2, n) == 0;
}

/* What `arg`, an argument of `subcommand` (NULL: none), does that a rule
 * must name, or NULL. A cluster of short options is read letter by letter
 * as git reads it, so a risky letter anywhere in it counts (a value
 * attached to another option that holds the letter is refused too: the
 * rule must name it). */
static const char *option_risk(const char *subcommand, const char *arg)
{
    if (arg[0] != '-' || arg[1] == '\0')
        return NULL;
    for (size_t i = 0; i < COUNT(risky_options); i++) {
        const risky_option *o = &risky_options[i];
        if (o->subcommand != NULL &&
            (subcommand == NULL || strcmp(o->subcommand, subcommand) != 0))
            continue;
        if (arg[1] == '-' ? o->name[1] == '-' && names_long(arg, o->name)
                          : o->name[1] != '-' && strchr(arg + 1, o->name[1]) != NULL)
            return o->does;
    }
    return NULL;
}

const char *jpt__policy_git_risk(const char *const *args, size_t nargs, size_t named,
                                 size_t *at)
{
    size_t sub = jpt__policy_git_subcommand(args, nargs);

    /* git's own options come before the subcommand. */
    for (size_t i = named; i < sub; i++)
        if (args[i][0] == '-') {
            *at = i;
            return "is an option of git itself, before the subcommand (as -c, -C, --git-dir, "
                   "--exec-path, -p), which changes the configuration git reads, where it "
                   "looks or what it runs";
        }
    const char *subcommand = sub < nargs ? args[sub] : NULL;
    if (sub >= named && subcommand != NULL && risky_subcommand(subcommand)) {
        *at = sub;
        return "runs programs, serves, or writes git's configuration by design";
    }
    for (size_t i = sub + 1 > named ? sub + 1 : named; i < nargs; i++) {
        const char *why = option_risk(subcommand, args[i]);
        if (why != NULL) {
            *at = i;
            return why;
        }
    }
    return NULL;
}

/* ---- The environment and the configuration ---------------------------------------------- */

/* Every git child's environment: no system or global configuration, no
 * prompt, and the programs the environment names (which win over the
 * configuration's) harmless. "cat" is no pager, ":" no editor (git's own
 * conventions); an empty GIT_ASKPASS and GIT_PROXY_COMMAND are none. */
static const char *const git_env[][2] = {
    {"GIT_CONFIG_NOSYSTEM", "1"},  {"GIT_CONFIG_SYSTEM", "/dev/null"},
    {"GIT_CONFIG_GLOBAL", "/dev/null"}, {"GIT_ATTR_NOSYSTEM", "1"},
    {"GIT_TERMINAL_PROMPT", "0"},  {"GIT_ASKPASS", ""},
    {"GIT_PAGER", "cat"},          {"GIT_EDITOR", ":"},
    {"GIT_SEQUENCE_EDITOR", ":"},  {"GIT_SSH_COMMAND", "ssh"},
    {"GIT_PROXY_COMMAND", ""},
};

/* The keys jptool always sets in the command-line scope (vfs.h lists
 * them): hooks from nowhere, no file system monitor, pager, editor,
 * credential helper, alternate-refs command or templates, git's own
 * signing programs, and no transport but git's built-in ones. */
static const char *const git_config[][2] = {
    {"core.hooksPath", "/dev/null"},
    {"core.fsmonitor", "false"},
    {"core.pager", "cat"},
    {"core.editor", ":"},
    {"sequence.editor", ":"},
    {"core.askPass", ""},
    {"core.sshCommand", "ssh"},
    {"core.alternateRefsCommand", ""},
    {"credential.helper", ""}, /* empty: the list of helpers is reset */
    {"gpg.program", "gpg"},
    {"gpg.openpgp.program", "gpg"},
    {"gpg.x509.program", "gpgsm"},
    {"gpg.ssh.program", "ssh-keygen"},
    {"gpg.ssh.defaultKeyCommand", ""},
    {"interactive.diffFilter", "cat"},
    /* A mistyped subcommand is not run as the one it resembles (which a
     * rule may not allow: "confi" would run config). */
    {"help.autocorrect", "0"},
    {"init.templateDir", ""},
    {"http.saveCookies", "false"},
    {"submodule.recurse", "false"},
    {"protocol.allow", "never"},
    {"protocol.file.allow", "user"},
    {"protocol.git.allow", "always"},
    {"protocol.http.allow", "always"},
    {"protocol.https.allow", "always"},
    {"protocol.ssh.allow", "always"},
    {"protocol.ext.allow", "never"},
};

size_t jpt__policy_git_env(size_t i, const char **name, const char **value)
{
    if (i < COUNT(git_env)) {
        *name = git_env[i][0];
        *value = git_env[i][1];
    }
    return COUNT(git_env);
}

size_t jpt__policy_git_config(size_t i, const char **key, const char **value)
{
    if (i < COUNT(git_config)) {
        *key = git_config[i][0];
        *value = git_config[i][1];
    }
    return COUNT(git_config);
}

bool jpt__policy_env_is_git(const char *name)
{
    for (size_t i = 0; i < COUNT(git_env); i++)
        if (strcmp(git_env[i][0], name) == 0)
            return true;
    /* GIT_CONFIG_COUNT, _KEY_<n>, _VALUE_<n>, _PARAMETERS: the overrides. */
    return strncmp(name, "GIT_CONFIG", 10) == 0;
}

/* A key of the repository's configuration under a name of its choosing
 * ("<section>.<name>.<variable>"), and what it is set to. */
typedef struct named_key {
    const char *section;
    const char *variable;
    const char *value;    /* NULL: the run is refused */
} named_key;

static const named_key named_keys[] = {
    /* gitattributes(5): empty commands are no filter, and an optional
     * one is skipped. */
    {"filter", "clean", ""},
    {"filter", "smudge", ""},
    {"filter", "process", ""},
    {"filter", "required", "false"},
    /* A text conversion that changes nothing. */
    {"diff", "textconv", "cat"},
    /* Run only by `git diff` (which gets --no-ext-diff then, run.c) and
     * --ext-diff (which a rule must name): it fails, running nothing. */
    {"diff", "command", "false"},
    /* git's own text merge, as without a driver. */
    {"merge", "driver", "git merge-file --marker-size=%L %A %O %B"},
    {"credential", "helper", ""},
    /* The first value set wins (remote.c): an override cannot. */
    {"remote", "uploadpack", NULL},
    {"remote", "receivepack", NULL},
    /* Run by the subcommands a rule must name (risky_subcommands). */
    {"difftool", "cmd", ""},
    {"difftool", "path", ""},
    {"mergetool", "cmd", ""},
    {"mergetool", "path", ""},
    {"man", "cmd", ""},
    {"man", "path", ""},
    {"browser", "cmd", ""},
    {"browser", "path", ""},
    {"guitool", "cmd", ""},
};

/* Sets `key` to `value` in `out` (a key once). */
static int set_key(jpt__git_overrides *out, const char *key, size_t len, const char *value)
{
    for (size_t i = 0; i < out->n; i++)
        if (strlen(out->keys[i]) == len && memcmp(out->keys[i], key, len) == 0)
            return JPT_OK;
    char **grown = jpt__array_reserve(out->keys, &out->cap_keys, out->n + 1, sizeof(char *), 16);
    const char **values = grown != NULL ? jpt__array_reserve(out->values, &out->cap_values,
                                                             out->n + 1, sizeof(char *), 16)
                                        : NULL;
    if (grown != NULL)
        out->keys = grown;
    if (values == NULL)
        return JPT_ERR_NOMEM;
    out->values = values;
    jpt__buf b = JPT__BUF_INIT;
    if (jpt__buf_append(&b, key, len) < 0 || (out->keys[out->n] = jpt__buf_take(&b)) == NULL) {
        jpt__buf_free(&b);
        return JPT_ERR_NOMEM;
    }
    out->values[out->n++] = value;
    return JPT_OK;
}

/* One key (lower-case section and variable, as `git config --list`
 * prints them) and its value (NULL: none): what it must be set to, a
 * refusal in `why`, or nothing. */
static int judge_key(const char *key, size_t len, const char *value, jpt__git_overrides *out,
                     char *why, size_t cap)
{
    const char *dot = memchr(key, '.', len), *last = key + len;

    while (last > key && last[-1] != '.')
        last--;
    if (dot == NULL || last == key)
        return JPT_OK;
    size_t section = (size_t)(dot - key), variable = (size_t)(key + len - last);
    bool named = last - 1 > dot; /* "<section>.<name>.<variable>" */
#define IS(s) (section == strlen(s) && memcmp(key, (s), section) == 0)
#define VAR(v) (variable == strlen(v) && memcmp(last, (v), variable) == 0)
    if (IS("alias") || (IS("pager") && !named))
        /* An empty alias fails ("expansion of alias failed"); a pager
         * runs only on a terminal, and never here: off all the same. */
        return set_key(out, key, len, IS("alias") ? "" : "false");
    if (IS("core") && VAR("worktree")) {
        snprintf(why, cap, "the repository's configuration sets core.worktree, which could "
                           "point git at files outside the workspace");
        return JPT_ERR_DENIED;
    }
    if (IS("submodule") && named && VAR("update") && value != NULL && value[0] == '!')
        /* "!command" runs a command. */
        return set_key(out, key, len, "none");
    /* diff.external, diff.<driver>.command */
    if (IS("diff") && (named ? VAR("command") : VAR("external")))
        out->external_diff = true;
    if (IS("diff") && !named && VAR("external"))
        return set_key(out, key, len, "false");
    for (size_t i = 0; named && i < COUNT(named_keys); i++) {
        const named_key *k = &named_keys[i];
        if (!IS(k->section) || !VAR(k->variable))
            continue;
        if (k->value != NULL)
            return set_key(out, key, len, k->value);
        snprintf(why, cap, "the repository's configuration sets %.*s, a program git would run, "
                           "and the first value set wins, so jptool cannot override it",
                 (int)(len > 120 ? 120 : len), key);
        return JPT_ERR_DENIED;
    }
#undef IS
#undef VAR
    return JPT_OK;
}

int jpt__policy_git_overrides(const char *list, size_t n, jpt__git_overrides *out, char *why,
                              size_t cap)
{
    const char *p = list, *end = list + n;
    bool ours = false;

    memset(out, 0, sizeof(*out));
    /* "<scope>\0<key>\n<value>\0", or "<scope>\0<key>\0" for a key
     * without a value. */
    while (p < end) {
        const char *scope = p, *nul = memchr(p, '\0', (size_t)(end - p));
        if (nul == NULL)
            break;
        const char *key = nul + 1, *entry_end = memchr(key, '\0', (size_t)(end - key));
        if (entry_end == NULL)
            break;
        const char *nl = memchr(key, '\n', (size_t)(entry_end - key));
        size_t len = (size_t)((nl != NULL ? nl : entry_end) - key);
        p = entry_end + 1;
        if (strcmp(scope, "command") == 0) {
            /* Our own overrides: this git reads them. */
            ours = true;
            continue;
        }
        int rc = judge_key(key, len, nl != NULL ? nl + 1 : NULL, out, why, cap);
        if (rc < 0)
            return rc;
    }
    if (!ours) {
        snprintf(why, cap, "this git does not read GIT_CONFIG_COUNT (git 2.31 or later does), "
                           "so its configuration cannot be made safe");
        return JPT_ERR_UNSUPPORTED;
    }
    return JPT_OK;
}

void jpt__policy_git_overrides_free(jpt__git_overrides *o)
{
    for (size_t i = 0; i < o->n; i++)
        jpt__free(o->keys[i]);
    jpt__free(o->keys);
    jpt__free(o->values);
    memset(o, 0, sizeof(*o));
}
