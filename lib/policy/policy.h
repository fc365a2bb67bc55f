/* The policy room's internal interface (vfs.h, "The access policy"): the
 * policy object, the check the VFS host calls with the method it serves,
 * and the layers below it. Never installed.
 *
 *   policy.c   the object, the verdict on a request, the reason
 *   config.c   the `sandbox` JSON read into the object, with its messages
 *   secret.c   ${VAR} substitution in http headers, for the URLs whose
 *              network.allow entries name the variable, and the values
 *              substituted, for the scrubber (common/scrub.h)
 *   network.c  URLs parsed, their paths normalised, and compared as
 *              network.allow says
 *   pattern.c  sensitive name patterns: built-in list, folding, matching
 *   path.c     normalised relative paths and prefixes
 *   git.c      git's options and subcommands a commands rule must name */
#ifndef JPT_LIB_POLICY_H
#define JPT_LIB_POLICY_H

#include <stdbool.h>

#include <curl/curl.h>

#include "common/json.h"
#include "common/scrub.h"
#include "jptool/vfs.h"

/* The names a file system holds are at most NAME_MAX (255) bytes long: a
 * configured name longer than that is a mistake. */
#define JPT__POLICY_NAME_MAX 255

/* Path prefixes of filesystem.allow, .writable or .deny, normalised ("." is
 * the whole workspace). */
typedef struct jpt__policy_prefixes {
    char **paths;
    size_t n;
} jpt__policy_prefixes;

/* One entry of commands.<program>.args: the arguments must be `words`
 * exactly, or with `rest` ("**" last) begin with them. */
typedef struct jpt__policy_args {
    char **words;
    size_t n;
    bool rest;
} jpt__policy_args;

/* A sandbox.commands.<program> rule (RFD 016's CommandRule, vfs.h). */
typedef struct jpt__policy_command {
    char *program;          /* the key: a name looked up in PATH, or absolute */
    jpt__policy_args *args; /* NULL: any arguments */
    size_t n_args;
    char **envs;            /* the variables that may be forwarded */
    size_t n_envs;
    int timeout_ms;         /* JPT_VFS_PROCESS_TIMEOUT_MS unless configured */
    size_t output_limit;    /* JPT_VFS_PROCESS_OUTPUT_LIMIT unless configured */
    unsigned process_limit; /* processes alive at once in its OS sandbox; 0:
                               not configured (the sandbox's default) */
} jpt__policy_command;

/* A sensitive path pattern. */
typedef struct jpt__policy_pattern {
    char *storage;     /* owns text and names; NULL for a built-in */
    const char *text;  /* as the list or configuration writes it */
    const char *names; /* folded names joined by '/', without the trailing '/' */
    size_t n_names;
    bool dir; /* a trailing '/': the directory and everything beneath */
} jpt__policy_pattern;

/* What a URL's host is (network.c). */
#define JPT__URL_NAME 0      /* a name to resolve */
#define JPT__URL_IP 1        /* an IPv4 or IPv6 literal */
#define JPT__URL_LOCALHOST 2 /* "localhost" or a name under ".localhost" */

/* A URL parsed for the network policy: a network.allow entry, or a
 * request's URL. */
typedef struct jpt__policy_url {
    CURLU *u;          /* libcurl's parse, which a transfer may use as is
                          (its path replaced by `path`) */
    char *text;        /* the URL as libcurl writes it back; for an entry,
                          as configured (for reasons) */
    char *scheme;      /* lower case */
    char *host;        /* lower case; IPv6 literals canonical, in brackets */
    unsigned port;     /* the scheme's default when none is written */
    char *path;        /* "/" at least, normalised (network.c): what is
                          sent and what is compared */
    int kind;          /* JPT__URL_* */
    bool userinfo;     /* a user, password or login options */
    /* An entry's own (config.c; jpt__policy_clear frees them): */
    char **envs;       /* the variables it carries (its "envs") */
    size_t n_envs;
    bool global_envs;  /* a string entry: it carries network.envs */
    bool private_ok;   /* "private": its origin's host name may resolve to
                          a private address */
} jpt__policy_url;

/* network.* defaults and bounds (vfs.h). */
#define JPT__NETWORK_TIMEOUT_MS 30000
#define JPT__NETWORK_MAX_TIMEOUT_MS 600000
#define JPT__NETWORK_MAX_RESPONSE 10000000u
#define JPT__NETWORK_MAX_REDIRECTS 20

struct jpt_policy {
    jpt__errbuf err;
    bool refused; /* the configuration was refused: every check denies */
    jpt__policy_prefixes allow;
    bool allow_configured; /* else allow is the default ["."] */
    bool writable_all;     /* filesystem.writable: true */
    jpt__policy_prefixes writable;
    jpt__policy_prefixes deny;        /* as configured, for reasons */
    jpt__policy_prefixes deny_folded; /* the same, folded for matching */
    bool hardlinks;
    bool git_writable;     /* filesystem.git: "writable" */
    int sensitive_verdict; /* JPT_VERDICT_DENY or _ASK */
    int uncovered_verdict; /* JPT_VERDICT_ASK or _DENY */
    jpt__policy_pattern *patterns; /* sensitive_paths, after the built-ins */
    size_t n_patterns;
    jpt__policy_command *commands; /* sandbox.commands, in no particular order */
    size_t n_commands;
    /* network */
    jpt__policy_url *urls; /* network.allow */
    size_t n_urls;
    char **envs;           /* network.envs: what string entries carry */
    size_t n_envs;
    int redirects;         /* network.redirects: hops followed, 0: none */
    int http_timeout_ms;   /* network.timeout_ms */
    size_t max_response;   /* network.max_response_bytes */
};

/* ---- policy.c ---------------------------------------------------------------- */

/* jpt_policy_new() from a parsed `sandbox` value (NULL for none), for a
 * room that holds the tool definition as JSON: the same results, and on
 * JPT_ERR_INVALID the refused policy with its message. */
int jpt__policy_new_json(const json_t *sandbox, jpt_policy **out);

/* jpt__policy_check()'s access for a directory that a write creates on
 * its way to what it writes (fs.write, fs.rename's target): refused (or
 * asked) where a write of that path would be for what it is — a sensitive
 * name, under filesystem.deny, a repository's name — and allowed
 * otherwise: granting the write is the check of its target (issue 15 §2).
 * Its reason names "fs.write". */
#define JPT__ACCESS_CREATE 16

/* jpt_policy_check() for the VFS host, whose reason names what the tool
 * asked for: `method` ("fs.metadata"; NULL: the access kind's own) and
 * `shown`, the path as requested (NULL: `target`), so that a verdict on a
 * resolved path never tells the tool where a symlink leads (issue 9 §2:
 * error texts never name "a resolved symlink target"). An empty `method`
 * leaves the request's name out: "<outcome>: <why>", for a caller that
 * says which request it is (the files room's guard). */
int jpt__policy_check(const jpt_policy *p, int access, const char *target,
                      const char *method, const char *shown, char **reason);

/* The commands.<program> rule for `program` (compared exactly), or NULL:
 * none, or a refused configuration. */
const jpt__policy_command *jpt__policy_command_find(const jpt_policy *p, const char *program);

/* ---- git.c ---------------------------------------------------------------------- */

/* Whether `program` names git (its last path component is "git"). */
bool jpt__policy_is_git(const char *program);

/* The index in git's arguments `args` (after the program) of its
 * subcommand, past git's own options and their values; `nargs` when
 * there is none. */
size_t jpt__policy_git_subcommand(const char *const *args, size_t nargs);

/* The options of git itself among `args` (before the subcommand) that
 * change which repository and configuration it reads (-C, -c, --git-dir,
 * --work-tree, --config-env, --bare, with their values), in order, into
 * `out` (room for `nargs`); returns how many. */
size_t jpt__policy_git_where(const char *const *args, size_t nargs, const char **out);

/* The first of git's arguments `args` past the first `named` (those a
 * rule's fixed words matched) that a rule must name to allow (vfs.h,
 * "commands.<program>"): what it does, and *at its index; NULL when
 * none. */
const char *jpt__policy_git_risk(const char *const *args, size_t nargs, size_t named,
                                 size_t *at);

/* The environment of every git child, and the configuration it always
 * gets in the command-line scope: the i-th name and value (i below the
 * count returned). */
size_t jpt__policy_git_env(size_t i, const char **name, const char **value);
size_t jpt__policy_git_config(size_t i, const char **key, const char **value);

/* Whether a git child's environment sets `name` (jpt__policy_git_env,
 * GIT_CONFIG_*): never forwarded to a process. */
bool jpt__policy_env_is_git(const char *name);

/* Keys of a repository's configuration set anew for a run. */
typedef struct jpt__git_overrides {
    char **keys;
    const char **values; /* static strings */
    size_t n, cap_keys, cap_values;
    bool external_diff;  /* diff.external or diff.<driver>.command is set:
                            `git diff` gets --no-ext-diff */
} jpt__git_overrides;

/* Reads what `git config --list -z --show-scope` printed (list[0..n),
 * under jpt__policy_git_env and _config) into the overrides each key
 * that names a program needs (`out`, zeroed first; free it with
 * jpt__policy_git_overrides_free). JPT_OK; JPT_ERR_DENIED with `why` (a
 * key no override can make safe: core.worktree, remote.<name>.uploadpack
 * or .receivepack); JPT_ERR_UNSUPPORTED with `why` (this git ignored the
 * command-line scope); JPT_ERR_NOMEM. */
int jpt__policy_git_overrides(const char *list, size_t n, jpt__git_overrides *out, char *why,
                              size_t cap);
void jpt__policy_git_overrides_free(jpt__git_overrides *o);

/* Whether `name` is an environment variable name: letters, digits and
 * '_', not starting with a digit. */
bool jpt__policy_env_name(const char *name);

/* Whether `name` is an environment variable that makes the dynamic loader
 * or the C library load or read files of the caller's choosing (LD_*,
 * DYLD_*, GCONV_PATH, GLIBC_TUNABLES, …): never forwarded to a process. */
bool jpt__policy_env_is_loader(const char *name);

/* ---- config.c ------------------------------------------------------------------ */

/* Reads `sandbox` (NULL for none) into `p`, which is zeroed but for its
 * error buffer. JPT_ERR_INVALID with the message in p->err, JPT_ERR_NOMEM;
 * on failure `p` holds what was read so far, for jpt__policy_clear(). */
int jpt__policy_configure(jpt_policy *p, const json_t *sandbox);

/* Frees what jpt__policy_configure() read, leaving the error text. */
void jpt__policy_clear(jpt_policy *p);

/* ---- network.c ------------------------------------------------------------------ */

/* Parses `text` with curl_url into `u` (zeroed first), its path
 * normalised (network.c) and put back in the parse, so that what is
 * compared is what is sent: JPT_OK (any scheme libcurl knows; userinfo
 * is flagged, not refused); JPT_ERR_INVALID with *why libcurl's words
 * ("Bad hostname"), "the URL has no host", or why its path cannot be
 * normalised; JPT_ERR_NOMEM. Clear it with jpt__policy_url_clear(). */
int jpt__policy_url_parse(const char *text, jpt__policy_url *u, const char **why);
void jpt__policy_url_clear(jpt__policy_url *u);
/* http or https. */
bool jpt__policy_url_is_web(const jpt__policy_url *u);
/* The same scheme, host and port. */
bool jpt__policy_url_same_origin(const jpt__policy_url *a, const jpt__policy_url *b);
/* Whether the network.allow `entry` covers `url`: same origin, and the
 * path is the entry's or beneath it by whole segments. */
bool jpt__policy_url_covers(const jpt__policy_url *entry, const jpt__policy_url *url);
/* The first entry of network.allow that covers `url`, or NULL. */
const jpt__policy_url *jpt__policy_url_find(const jpt_policy *p, const jpt__policy_url *url);
/* Whether `url`'s host name may resolve to a private address: an entry of
 * its origin says "private": true. */
bool jpt__policy_url_private(const jpt_policy *p, const jpt__policy_url *url);

/* ---- secret.c ------------------------------------------------------------------- */

/* The values one request substituted, each once, for its scrubber. */
typedef struct jpt__policy_values {
    char **values;
    size_t n, cap;
} jpt__policy_values;

/* Appends `text` to `out` with every ${NAME} replaced by the value of the
 * host's environment variable NAME, and adds each value to `values`.
 * NAME is letters, digits and '_', not starting with a digit, and must be
 * carried by `url`: a network.allow entry that covers `url` names it (its
 * "envs", or network.envs for a string entry). JPT_OK; else `why` (`cap`
 * bytes) names the variable and never its value: JPT_ERR_DENIED (no entry
 * names NAME, or none that covers `url`), JPT_ERR_NOT_FOUND (not set),
 * JPT_ERR_INVALID (a "${" without a name and '}'; a value shorter than
 * JPT__SCRUB_MIN_VALUE bytes, or holding a control character other than
 * a tab), JPT_ERR_NOMEM. With `out` NULL, only checks. */
int jpt__policy_substitute(const jpt_policy *p, const jpt__policy_url *url, const char *text,
                           jpt__buf *out, jpt__policy_values *values, char *why, size_t cap);
/* Whether every ${NAME} of `text` (checked already) is carried by `url`:
 * whether a header holding them may go to that URL (a redirect's hop). */
bool jpt__policy_url_carries(const jpt_policy *p, const jpt__policy_url *url, const char *text);
/* Adds `value` to `values` unless it is there (JPT_ERR_NOMEM). */
int jpt__policy_values_add(jpt__policy_values *values, const char *value);
/* Adds the value of every variable the policy lends a tool — named in
 * network.envs, in an entry's "envs", in a commands rule's "envs"; PATH
 * and unset ones aside — as the host's environment holds it now: what any
 * response, output or message that reaches the tool is scrubbed of,
 * whether or not that request used it (a server may keep a value and show
 * it to a later request; a child may find one). JPT_ERR_NOMEM. */
int jpt__policy_lent_values(const jpt_policy *p, jpt__policy_values *values);
/* The scrubber's set of the values (NULL: none). JPT_OK, JPT_ERR_NOMEM. */
int jpt__policy_values_scrub_set(const jpt__policy_values *v, jpt__scrub_set **out);
void jpt__policy_values_free(jpt__policy_values *v);

/* ---- pattern.c ----------------------------------------------------------------- */

/* Fills `pt` from the configured pattern `text`: JPT_OK; JPT_ERR_INVALID
 * with *why saying what is wrong with it ("is absolute: …"); JPT_ERR_NOMEM
 * (*why NULL). Free pt->storage. */
int jpt__pattern_compile(const char *text, jpt__policy_pattern *pt, const char **why);

/* The first pattern of `p`'s list (built-in ones first) that matches the
 * normalised `path`, or NULL. With `as_container`, failing that, a pattern
 * of several names whose first names end `path` — a directory that may
 * hold what the pattern matches — and *inside is set then. */
const jpt__policy_pattern *jpt__pattern_find(const jpt_policy *p, const char *path,
                                             bool as_container, bool *inside);

/* Whether a name of the normalised `path` (with `last`: its last name)
 * is `name` (folded, as the list's names are) when read folded. */
bool jpt__pattern_has_name(const char *path, const char *name, bool last);

/* The built-in list, for the tests. */
size_t jpt__pattern_builtin_count(void);
const jpt__policy_pattern *jpt__pattern_builtin(size_t i);

/* ---- path.c ---------------------------------------------------------------------- */

/* The next character of a name as matching sees it, and its width in bytes
 * (`p` < `end`): ASCII letters in lower case; U+017F (long s) as 's' and
 * U+212A (Kelvin sign) as 'k', which case-folding file systems fold to
 * those letters; any other byte as it is. */
int jpt__fold_char(const char *p, const char *end, size_t *width);

/* Appends n bytes of `text` folded (jpt__fold_char()) to `out`. */
int jpt__fold(const char *text, size_t n, jpt__buf *out);

/* Normalises `path` lexically into the empty buffer `out`
 * (jpt_policy_normalize_path()): JPT_OK; JPT_ERR_INVALID with *why saying
 * what is wrong ("is absolute: …", "leaves the workspace root");
 * JPT_ERR_NOMEM. */
int jpt__path_normalize(const char *path, jpt__buf *out, const char **why);

/* Whether `path` is in the normalised form jpt_policy_check() requires. */
bool jpt__path_is_normalized(const char *path);

/* The length of the longest name of a normalised path. */
size_t jpt__path_longest_name(const char *path);

/* Whether the normalised `path` is `prefix` or beneath it ("." holds
 * everything). With `fold`, `prefix` is folded and `path` is read folded. */
bool jpt__path_under(const char *path, const char *prefix, bool fold);

/* Whether the normalised `path`, read folded, is a directory above the
 * folded prefix (a proper ancestor: "." is above every prefix but itself). */
bool jpt__path_above(const char *path, const char *folded_prefix);

/* The first prefix of `list` that `path` is under, with its index, or NULL. */
const char *jpt__prefixes_find(const jpt__policy_prefixes *list, const char *path,
                               bool fold, size_t *index);

#endif /* JPT_LIB_POLICY_H */
