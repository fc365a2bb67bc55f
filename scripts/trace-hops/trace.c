/* One stateful spawn, from submit to the batch's result: every call that
 * crosses from one file of lib/registry to another, counted. */
#include <jptool/registry.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;
static int on;

void __cyg_profile_func_enter(void *fn, void *site) __attribute__((no_instrument_function));
void __cyg_profile_func_enter(void *fn, void *site)
{
    if (on && out != NULL)
        fprintf(out, "%p %p\n", fn, site);
}
void __cyg_profile_func_exit(void *fn, void *site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
}

int main(void)
{
    jpt_registry *r;
    jpt_batch *b;
    char *res;

    if (jpt_registry_new(NULL, &r) < 0)
        return 1;
    jpt_registry_load_tools(r, "{\"tools\":[{\"name\":\"t\",\"stateful\":true,\"command\":[\"sh\",\"-c\",\"echo hi\"]}]}", 0);
    out = fopen(getenv("TRACE_OUT") != NULL ? getenv("TRACE_OUT") : "trace.txt", "w");
    on = 1;
    jpt_registry_submit(r, "[{\"id\":\"c\",\"name\":\"t\",\"arguments\":{\"action\":\"spawn\",\"id\":\"h\",\"wait_secs\":5}}]", &b);
    jpt_registry_wait(r, b, 10000);
    jpt_batch_results_json(b, &res);
    on = 0;
    fclose(out);
    puts(res);
    jpt_free(res);
    jpt_batch_free(b);
    jpt_registry_free(r);
    return 0;
}
