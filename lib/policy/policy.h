/* The policy room's internal interface (vfs.h, "The access policy"): the
 * policy object, the check the VFS host calls with the method it serves,
 * and the layers below it. Never installed.
 *
 *   policy.c   the object, the verdict on a request, the reason
 *   config.c   the `sandbox` JSON read into the object, with its messages
 *   pattern.c  sensitive name patterns: built-in list, folding, matching
 *   path.c     normalised relative paths and prefixes */
#ifndef JPT_LIB_POLICY_H
#define JPT_LIB_POLICY_H

#include <stdbool.h>

#include "common/json.h"
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
} jpt__policy_command;

/* A sensitive path pattern. */
typedef struct jpt__policy_pattern {
    char *storage;     /* owns text and names; NULL for a built-in */
    const char *text;  /* as the list or configuration writes it */
    const char *names; /* folded names joined by '/', without the trailing '/' */
    size_t n_names;
    bool dir; /* a trailing '/': the directory and everything beneath */
} jpt__policy_pattern;

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
    int sensitive_verdict; /* JPT_VERDICT_DENY or _ASK */
    int uncovered_verdict; /* JPT_VERDICT_ASK or _DENY */
    jpt__policy_pattern *patterns; /* sensitive_paths, after the built-ins */
    size_t n_patterns;
    jpt__policy_command *commands; /* sandbox.commands, in no particular order */
    size_t n_commands;
};

/* ---- policy.c ---------------------------------------------------------------- */

/* jpt_policy_new() from a parsed `sandbox` value (NULL for none), for a
 * room that holds the tool definition as JSON: the same results, and on
 * JPT_ERR_INVALID the refused policy with its message. */
int jpt__policy_new_json(const json_t *sandbox, jpt_policy **out);

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
