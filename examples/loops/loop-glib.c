/* loop-glib: the registry driven from a GLib main loop, as a GSource of its
 * own: the registry's fd is one of the source's fds (g_source_add_unix_fd),
 * and prepare() gives the main loop jpt_registry_get_timeout() as the
 * source's timeout, so the loop wakes for work due at a time too. Runs the
 * turn of scenario.h and exits 0 when every result was as expected. */
#include <glib.h>
#include <stdio.h>

#include "scenario.h"

typedef struct registry_source {
    GSource source;
    jpt_registry *r;
    gpointer fd_tag;
} registry_source;

typedef struct host {
    scenario s;
    GMainLoop *loop;
    int rc; /* what the loop ended on, for scenario_end() */
} host;

static gboolean source_prepare(GSource *source, gint *timeout)
{
    registry_source *rs = (registry_source *)source;

    *timeout = jpt_registry_get_timeout(rs->r);
    return *timeout == 0;
}

static gboolean source_check(GSource *source)
{
    registry_source *rs = (registry_source *)source;

    return (g_source_query_unix_fd(source, rs->fd_tag) & G_IO_IN) != 0 ||
           jpt_registry_get_timeout(rs->r) == 0;
}

static gboolean source_dispatch(GSource *source, GSourceFunc callback, gpointer data)
{
    registry_source *rs = (registry_source *)source;
    int rc;

    while ((rc = jpt_registry_dispatch(rs->r)) > 0)
        ;
    if (rc < 0) {
        host *h = data;
        h->rc = rc;
        g_main_loop_quit(h->loop);
        return G_SOURCE_REMOVE;
    }
    return callback(data);
}

static GSourceFuncs registry_source_funcs = {
    .prepare = source_prepare,
    .check = source_check,
    .dispatch = source_dispatch,
};

/* After each dispatch: the scenario's next step. */
static gboolean on_dispatched(gpointer data)
{
    host *h = data;

    if ((h->rc = scenario_step(&h->s)) > 0)
        return G_SOURCE_CONTINUE;
    g_main_loop_quit(h->loop);
    return G_SOURCE_REMOVE;
}

int main(void)
{
    host h = {.rc = 0};
    GSource *source;
    registry_source *rs;

    if (scenario_begin(&h.s, "loop-glib") < 0)
        return scenario_end(&h.s, -1);
    source = g_source_new(&registry_source_funcs, sizeof(registry_source));
    rs = (registry_source *)source;
    rs->r = h.s.r;
    rs->fd_tag = g_source_add_unix_fd(source, jpt_registry_get_fd(h.s.r), G_IO_IN);
    g_source_set_callback(source, on_dispatched, &h, NULL);
    h.loop = g_main_loop_new(NULL, FALSE);
    g_source_attach(source, NULL);
    g_main_loop_run(h.loop);
    g_source_destroy(source);
    g_source_unref(source);
    g_main_loop_unref(h.loop);
    return scenario_end(&h.s, h.rc);
}
