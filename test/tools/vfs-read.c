/* vfs-read: the smallest VFS tool that does real work: it connects (reads
 * `init`), reads the file its first command-line argument names with one
 * fs.read, answers with the file's text as its result, and exits. Nothing
 * else: what it costs is the process's start, the libraries it loads and
 * the protocol.
 *
 * Unlike the other tools here it links the shared libjptool-tool, as a
 * tool outside this tree does (pkg-config jptool-tool): test-tool-library
 * runs it in the OS sandbox, which must let it load that library. The
 * benchmark bench-tool-start builds it a second time, linked to libjptool,
 * so that the two differ only in what the loader does. Any failure ends
 * the tool with an error notification and exit status 1. */
#include <stdio.h>

#include <jptool/vfs_tool.h>

int main(int argc, char **argv)
{
    jpt_vfs_tool *t = NULL;
    char *data = NULL;
    int rc = jpt_vfs_tool_connect(&t);

    if (rc != JPT_OK) {
        fprintf(stderr, "vfs-read: %s\n",
                t != NULL ? jpt_vfs_tool_errmsg(t) : jpt_last_error());
        jpt_vfs_tool_free(t);
        return 1;
    }
    if (argc < 2) {
        jpt_vfs_tool_error(t, "usage: vfs-read PATH", NULL, 0, 0);
        jpt_vfs_tool_free(t);
        return 1;
    }
    if ((rc = jpt_vfs_tool_read(t, argv[1], &data, NULL)) == JPT_OK)
        rc = jpt_vfs_tool_result_text(t, data);
    else
        jpt_vfs_tool_error(t, jpt_vfs_tool_errmsg(t), NULL, 0, 0);
    if (rc != JPT_OK)
        fprintf(stderr, "vfs-read: %s\n", jpt_vfs_tool_errmsg(t));
    jpt_free(data);
    jpt_vfs_tool_free(t);
    return rc == JPT_OK ? 0 : 1;
}
