/* tool-start-read: the smallest VFS tool that does real work, for
 * bench-tool-start: it connects (reads `init`), reads the file its first
 * command-line argument names with one fs.read, answers with the file's
 * text as its result, and exits. Nothing else: what it costs is the
 * process's start, the libraries it loads and the protocol.
 *
 * bench-tool-start builds it twice from this file: linked to
 * libjptool-tool (the tool side alone, libc only) and to libjptool (the
 * host's library, with everything the host needs), so the two differ only
 * in what the loader does. Any failure ends the tool with an error
 * notification and exit status 1. */
#include <stdio.h>

#include <jptool/vfs_tool.h>

int main(int argc, char **argv)
{
    jpt_vfs_tool *t = NULL;
    char *data = NULL;
    int rc = jpt_vfs_tool_connect(&t);

    if (rc != JPT_OK) {
        fprintf(stderr, "tool-start-read: %s\n",
                t != NULL ? jpt_vfs_tool_errmsg(t) : jpt_last_error());
        jpt_vfs_tool_free(t);
        return 1;
    }
    if (argc < 2) {
        jpt_vfs_tool_error(t, "usage: tool-start-read PATH", NULL, 0, 0);
        jpt_vfs_tool_free(t);
        return 1;
    }
    if ((rc = jpt_vfs_tool_read(t, argv[1], &data, NULL)) == JPT_OK)
        rc = jpt_vfs_tool_result_text(t, data);
    else
        jpt_vfs_tool_error(t, jpt_vfs_tool_errmsg(t), NULL, 0, 0);
    if (rc != JPT_OK)
        fprintf(stderr, "tool-start-read: %s\n", jpt_vfs_tool_errmsg(t));
    jpt_free(data);
    jpt_vfs_tool_free(t);
    return rc == JPT_OK ? 0 : 1;
}
