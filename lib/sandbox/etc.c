/* The secrets of /etc (sandbox.h, "etc.c"): what of /etc no tool reads
 * though it reads the rest, which of them this system has, and a grant of
 * /etc entry by entry around them; and the owned path lists the room
 * keeps. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/sandbox.h"

/* A process without capabilities still owns root's files when it is
 * root: password hashes, sudo's rules, the host's private keys and stored
 * credentials. A name may end in a '*' pattern (fnmatch) of the names in
 * its directory. */
static const char *const etc_secrets[] = {
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/ipsec.secrets",
    "/etc/ipsec.d/private",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/letsencrypt/archive",
    "/etc/letsencrypt/keys",
    "/etc/mysql/debian.cnf",
    "/etc/libvirt/secrets",
};

#define N_SECRETS (sizeof(etc_secrets) / sizeof(etc_secrets[0]))

/* ---- Path lists ------------------------------------------------------------------ */

int jpt__pathv_add(jpt__pathv *l, const char *path, bool flag)
{
    char **grown = jpt__array_reserve(l->v, &l->cap, l->n + 2, sizeof(*grown), 8);
    if (grown == NULL)
        return JPT_ERR_NOMEM;
    l->v = grown;
    bool *flags = jpt__realloc(l->flag, l->cap * sizeof(*flags));
    if (flags == NULL)
        return JPT_ERR_NOMEM;
    l->flag = flags;
    if ((l->v[l->n] = jpt__strdup(path)) == NULL)
        return JPT_ERR_NOMEM;
    l->flag[l->n++] = flag;
    l->v[l->n] = NULL;
    return JPT_OK;
}

void jpt__pathv_free(jpt__pathv *l)
{
    for (size_t i = 0; i < l->n; i++)
        jpt__free(l->v[i]);
    jpt__free(l->v);
    jpt__free(l->flag);
    memset(l, 0, sizeof(*l));
}

const char *const *jpt__pathv_list(const jpt__pathv *l)
{
    return l->n > 0 ? (const char *const *)l->v : NULL;
}

/* ---- Finding them ---------------------------------------------------------------- */

/* The directory of secret `i` (what holds it, or what its pattern
 * lists), in `out`. */
static void parent_of(size_t i, char out[PATH_MAX])
{
    const char *slash = strrchr(etc_secrets[i], '/');

    snprintf(out, PATH_MAX, "%.*s", (int)(slash - etc_secrets[i]), etc_secrets[i]);
}

/* A secret appears, goes or is replaced only by a change of the
 * directory that holds it: the modification times of those directories
 * (and /etc's, for a grant around them) tell when to look again. */
static void stamp(struct timespec out[JPT__ETC_DIRS])
{
    char dir[PATH_MAX];
    struct stat st;

    memset(out, 0, sizeof(struct timespec) * JPT__ETC_DIRS);
    for (size_t i = 0; i < N_SECRETS && i < JPT__ETC_DIRS; i++) {
        size_t n = (size_t)(strrchr(etc_secrets[i], '/') - etc_secrets[i]);
        bool seen = false;
        /* Each directory once. */
        for (size_t j = 0; j < i && !seen; j++)
            seen = strncmp(etc_secrets[j], etc_secrets[i], n + 1) == 0 &&
                   strchr(etc_secrets[j] + n + 1, '/') == NULL;
        parent_of(i, dir);
        if (!seen && stat(dir, &st) == 0)
            out[i] = st.st_mtim;
    }
}

/* `path`, if it exists, as its real path (a symbolic link is followed:
 * the mount covers what it leads to). */
static int add_existing(jpt__pathv *out, const char *path)
{
    char real[PATH_MAX];
    struct stat st;

    if (lstat(path, &st) != 0)
        return JPT_OK;
    if (S_ISLNK(st.st_mode)) {
        if (realpath(path, real) == NULL || stat(real, &st) != 0)
            return JPT_OK;
        path = real;
    }
    return jpt__pathv_add(out, path, S_ISDIR(st.st_mode));
}

static int find(jpt__pathv *out)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int rc = JPT_OK;

    for (size_t i = 0; rc == JPT_OK && i < N_SECRETS; i++) {
        const char *name = strrchr(etc_secrets[i], '/') + 1;
        if (strchr(name, '*') == NULL) {
            rc = add_existing(out, etc_secrets[i]);
            continue;
        }
        parent_of(i, dir);
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d != NULL && rc == JPT_OK && (e = readdir(d)) != NULL)
            if (fnmatch(name, e->d_name, FNM_PERIOD) == 0 &&
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
                rc = add_existing(out, path);
        if (d != NULL)
            closedir(d);
    }
    return rc;
}

int jpt__etc_secrets(jpt__etc *e, jpt__errbuf *err)
{
    struct timespec now[JPT__ETC_DIRS];
    jpt__pathv found = {0};
    int rc;

    stamp(now);
    if (e->known && memcmp(now, e->stamps, sizeof(now)) == 0)
        return JPT_OK;
    if ((rc = find(&found)) < 0) {
        jpt__pathv_free(&found);
        return jpt__err(err, rc, "out of memory listing the secrets of /etc");
    }
    jpt__pathv_free(&e->found);
    e->found = found;
    memcpy(e->stamps, now, sizeof(now));
    e->known = true;
    e->generation++;
    return JPT_OK;
}

void jpt__etc_free(jpt__etc *e)
{
    jpt__pathv_free(&e->found);
    memset(e, 0, sizeof(*e));
}

/* ---- Granting around them -------------------------------------------------------- */

/* Whether `path` is `dir` or beneath it. */
static bool beneath(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int allow_around_dir(int ruleset, const char *dir, const jpt__pathv *secrets,
                            uint64_t access, uint64_t handled, jpt__errbuf *err)
{
    char path[PATH_MAX];
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = JPT_OK;

    if (d == NULL)
        return errno == ENOENT ? JPT_OK
                               : jpt__err(err, JPT_ERR_IO, "sandbox: listing %s: %s", dir,
                                          strerror(errno));
    while (rc == JPT_OK && (e = readdir(d)) != NULL) {
        struct stat st;
        bool secret = false, holds = false;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
            lstat(path, &st) != 0 || S_ISLNK(st.st_mode))
            continue;
        for (size_t i = 0; i < secrets->n; i++) {
            secret |= strcmp(secrets->v[i], path) == 0;
            holds |= beneath(secrets->v[i], path);
        }
        if (secret)
            continue;
        if (holds && S_ISDIR(st.st_mode))
            rc = allow_around_dir(ruleset, path, secrets, access, handled, err);
        else if (jpt__landlock_allow(ruleset, path, access, handled) < 0)
            rc = jpt__err(err, JPT_ERR_IO, "sandbox: Landlock rule for '%.200s': %s", path,
                          strerror(errno));
    }
    closedir(d);
    return rc;
}

int jpt__etc_allow_around(int ruleset, const jpt__etc *e, uint64_t access, uint64_t handled,
                          jpt__errbuf *err)
{
    /* Symbolic links need no rule: Landlock checks what they lead to. */
    return allow_around_dir(ruleset, "/etc", &e->found, access, handled, err);
}
