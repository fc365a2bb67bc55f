/* The race of TESTING.md: "a directory replaced by a symlink between check
 * and use". A thread swaps a real directory inside the root with a symlink
 * to a directory outside it (renameat2 RENAME_EXCHANGE, so one of the two
 * is always there under each name) while the backend reads, writes, lists
 * and greps beneath that name, 10 000 rounds, in both resolution modes.
 * Every outcome is counted; an access that touched the outside directory
 * is an escape, and there must be none. */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files/files.h"
#include "test-files-util.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

/* Under memcheck, which runs one thread at a time and every access slowly,
 * a few hundred rounds check the memory use; the race itself is the
 * native run's. */
#define ROUNDS (RUNNING_ON_VALGRIND ? 200 : 10000)

typedef struct swapper {
    int root_fd;
    atomic_bool stop;
    atomic_long swaps;
} swapper;

static void *swap_loop(void *ud)
{
    swapper *s = ud;

    while (!atomic_load(&s->stop)) {
        if (renameat2(s->root_fd, "d", s->root_fd, "swap", RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&s->swaps, 1);
        if (RUNNING_ON_VALGRIND)
            sched_yield(); /* memcheck runs one thread at a time */
    }
    return NULL;
}

typedef struct tally {
    long ok, refused, escapes;
} tally;

static void count(tally *t, int rc, bool escaped)
{
    if (escaped)
        t->escapes++;
    else if (rc == JPT_OK)
        t->ok++;
    else
        t->refused++;
}

/* The symlink is "../outside", or with `prefix` the outside directory's
 * absolute path after that prefix. */
static void race(unsigned flags, const char *prefix)
{
    char *base = fu_tempdir();
    char root[4096], outside[4096], target[8192];
    jpt_files *f;
    swapper s = {.stop = false, .swaps = 0};
    tally t = {0, 0, 0};
    pthread_t thread;

    snprintf(root, sizeof(root), "%s/root", base);
    snprintf(outside, sizeof(outside), "%s/outside", base);
    fu_write(outside, "f", "SECRET");
    fu_write(outside, "only-outside", "SECRET");
    fu_write(root, "d/f", "inside");
    if (prefix == NULL)
        snprintf(target, sizeof(target), "../outside");
    else
        snprintf(target, sizeof(target), "%s%s", prefix, outside);
    fu_symlink(root, "swap", target);
    assert_int_equal(jpt_files_open_dir(root, flags, &f), JPT_OK);
    s.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(s.root_fd >= 0);
    assert_int_equal(pthread_create(&thread, NULL, swap_loop, &s), 0);

    for (int i = 0; i < ROUNDS; i++) {
        char *data = NULL, *json = NULL;
        size_t len;
        jpt_files_entry *e = NULL;
        size_t n = 0;
        int rc;
        switch (i % 4) {
        case 0:
            rc = jpt_files_read(f, "d/f", 0, &data, &len, NULL);
            count(&t, rc, rc == JPT_OK && strcmp(data, "SECRET") == 0);
            jpt_free(data);
            break;
        case 1:
            rc = jpt_files_write(f, "d/w", "written", 7);
            count(&t, rc, false); /* checked below: nothing appears outside */
            break;
        case 2: {
            rc = jpt_files_list_dir(f, "d", &e, &n);
            bool escaped = false;
            for (size_t k = 0; k < n; k++)
                escaped |= strcmp(e[k].name, "only-outside") == 0;
            count(&t, rc, escaped);
            jpt_free(e);
            break;
        }
        default:
            rc = jpt_files_grep(f, "{\"pattern\":\"SECRET|inside\",\"paths\":[\"d\"]}", &json);
            count(&t, rc, rc == JPT_OK && strstr(json, "SECRET") != NULL);
            jpt_free(json);
        }
    }
    atomic_store(&s.stop, true);
    pthread_join(thread, NULL);
    close(s.root_fd);
    jpt_files_free(f);

    char *secret = fu_read(outside, "f", NULL);
    bool outside_intact = strcmp(secret, "SECRET") == 0 && fu_count_entries(outside) == 2;
    free(secret);
    print_message("%s, symlink to %s: %ld swaps; %ld ok, %ld refused, %ld escapes\n",
                  flags & JPT__FILES_FORCE_WALK ? "walk" : "openat2", target,
                  (long)atomic_load(&s.swaps), t.ok, t.refused, t.escapes);
    fu_rmtree(base);
    free(base);
    assert_true(outside_intact);
    assert_int_equal(t.escapes, 0);
    assert_int_equal(t.ok + t.refused, ROUNDS);
}

static void swapping_a_directory_for_a_relative_symlink_never_escapes(void **state)
{
    (void)state;
    race(0, NULL);
    race(JPT__FILES_FORCE_WALK, NULL);
}

static void swapping_a_directory_for_an_absolute_symlink_never_escapes(void **state)
{
    (void)state;
    race(0, "");
    race(JPT__FILES_FORCE_WALK, "");
    /* Through a magic link as well. */
    race(0, "/proc/self/root");
    race(JPT__FILES_FORCE_WALK, "/proc/self/root");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swapping_a_directory_for_a_relative_symlink_never_escapes),
        cmocka_unit_test(swapping_a_directory_for_an_absolute_symlink_never_escapes),
    };

    return TU_RUN(tests);
}
