/* jpt_uri_canonicalize(): one string per resource identity (state.h; RFD 058
 * "URI canonicalization"; issue 2 §3). */
#include <stdio.h>
#include <string.h>

#include "test-util.h"

/* Failures free what they hold first, so a valgrind run shows only the
 * library's own leaks. */
static void assert_canonical(const char *uri, const char *root, const char *expected)
{
    char *out = NULL;
    char got[512];
    int rc = jpt_uri_canonicalize(uri, root, &out);
    if (rc != JPT_OK)
        fail_msg("'%s' (root %s): %s", uri, root ? root : "NULL", jpt_status_name(rc));
    assert_non_null(out);
    snprintf(got, sizeof(got), "%s", out);
    jpt_free(out);
    if (strcmp(got, expected) != 0)
        fail_msg("'%s' (root %s): expected '%s', got '%s'", uri, root ? root : "NULL",
                 expected, got);
}

static void assert_invalid(const char *uri, const char *root)
{
    char *out = NULL;
    char got[512];
    int rc = jpt_uri_canonicalize(uri, root, &out);
    snprintf(got, sizeof(got), "%s", out != NULL ? out : "no output");
    jpt_free(out);
    if (rc != JPT_ERR_INVALID)
        fail_msg("'%s' (root %s): expected JPT_ERR_INVALID, got %s (%s)",
                 uri ? uri : "NULL", root ? root : "NULL", jpt_status_name(rc), got);
    assert_null(out);
}

/* ---- File URIs: identity ---------------------------------------------------- */

/* RFD 058: "`file:///project/./src/../src/main.rs` and
 * `file:///project/src/main.rs` must resolve to the same identity." */
static void dot_segments_give_the_same_identity(void **state)
{
    (void)state;
    assert_canonical("file:///project/./src/../src/main.rs", NULL,
                     "file:///project/src/main.rs");
    assert_canonical("file:///project/src/main.rs", NULL, "file:///project/src/main.rs");
}

static void paths_under_root_are_relative_to_it(void **state)
{
    (void)state;
    assert_canonical("file:///project/./src/../src/main.rs", "/project", "src/main.rs");
    assert_canonical("file:///project/src/main.rs", "/project", "src/main.rs");
}

static void root_may_be_a_file_uri(void **state)
{
    (void)state;
    assert_canonical("file:///project/src/main.rs", "file:///project", "src/main.rs");
}

static void root_is_canonicalized_too(void **state)
{
    (void)state;
    assert_canonical("file:///project/src/main.rs", "/project/", "src/main.rs");
    assert_canonical("file:///project/src/main.rs", "/x/../project//.", "src/main.rs");
    assert_canonical("file:///my project/a", "file:///my%20project/", "a");
}

static void root_itself_is_dot(void **state)
{
    (void)state;
    assert_canonical("file:///project", "/project", ".");
    assert_canonical("file:///project/", "/project", ".");
    assert_canonical("file:///project/src/..", "/project", ".");
}

/* TESTING.md: "a sibling directory whose name extends the root's
 * (`<root>` vs `<root>-evil`)". */
static void sibling_extending_root_name_is_not_under_root(void **state)
{
    (void)state;
    assert_canonical("file:///project-evil/x", "/project", "file:///project-evil/x");
    assert_canonical("file:///projectx", "/project", "file:///projectx");
}

static void parent_of_root_is_not_under_root(void **state)
{
    (void)state;
    assert_canonical("file:///project/..", "/project", "file:///");
    assert_canonical("file:///etc/passwd", "/project", "file:///etc/passwd");
}

static void everything_is_under_root_slash(void **state)
{
    (void)state;
    assert_canonical("file:///etc/passwd", "/", "etc/passwd");
    assert_canonical("file:///", "/", ".");
}

static void double_slashes_are_collapsed(void **state)
{
    (void)state;
    assert_canonical("file:///project//src///main.rs", NULL, "file:///project/src/main.rs");
    assert_canonical("file:///project//src///main.rs", "/project", "src/main.rs");
}

static void trailing_slash_is_dropped(void **state)
{
    (void)state;
    assert_canonical("file:///project/src/", NULL, "file:///project/src");
    assert_canonical("file:///project/src/", "/project", "src");
}

/* `..` cannot climb above "/" (RFC 3986 §5.2.4 remove_dot_segments). */
static void dot_dot_above_slash_stays_at_slash(void **state)
{
    (void)state;
    assert_canonical("file:///../../etc/passwd", NULL, "file:///etc/passwd");
    assert_canonical("/../../etc/passwd", NULL, "file:///etc/passwd");
    assert_canonical("file:///..", NULL, "file:///");
}

static void file_scheme_is_case_insensitive(void **state)
{
    (void)state;
    assert_canonical("FILE:///project/src/main.rs", "/project", "src/main.rs");
}

/* RFC 8089 §2: the authority may be left out ("file:/path"). */
static void file_uri_without_authority_is_local(void **state)
{
    (void)state;
    assert_canonical("file:/project/src/main.rs", "/project", "src/main.rs");
}

/* RFC 8089 §2: "localhost" is the local machine. */
static void file_uri_with_localhost_is_local(void **state)
{
    (void)state;
    assert_canonical("file://localhost/project/src/main.rs", "/project", "src/main.rs");
}

/* ---- File URIs: percent-encoding ---------------------------------------------- */

static void percent_escapes_in_file_paths_are_decoded(void **state)
{
    (void)state;
    assert_canonical("file:///project/%7euser/%41.rs", "/project", "~user/A.rs");
    assert_canonical("file:///project/%7Euser/A.rs", "/project", "~user/A.rs");
}

/* Decoding comes before dot-segment resolution, so "%2E%2E" is "..". */
static void encoded_dot_segments_are_resolved(void **state)
{
    (void)state;
    assert_canonical("file:///project/src/%2E%2E/lib.rs", "/project", "lib.rs");
}

/* state.h: "any other path as a file:///… URI with canonical
 * percent-encoding". */
static void spaces_outside_root_are_percent_encoded(void **state)
{
    (void)state;
    assert_canonical("/tmp/my notes/a b.txt", "/project", "file:///tmp/my%20notes/a%20b.txt");
    assert_canonical("file:///tmp/my%20notes/a%20b.txt", "/project",
                     "file:///tmp/my%20notes/a%20b.txt");
}

static void non_ascii_outside_root_is_percent_encoded_in_uppercase(void **state)
{
    (void)state;
    assert_canonical("/tmp/caf\xC3\xA9.txt", NULL, "file:///tmp/caf%C3%A9.txt");
    assert_canonical("file:///tmp/caf%c3%a9.txt", NULL, "file:///tmp/caf%C3%A9.txt");
}

static void non_ascii_under_root_is_a_plain_relative_path(void **state)
{
    (void)state;
    assert_canonical("file:///project/caf%C3%A9%20menu.txt", "/project",
                     "caf\xC3\xA9 menu.txt");
}

/* Sub-delimiters, ':' and '@' are allowed in a path (RFC 3986 §3.3). */
static void path_characters_allowed_by_rfc3986_are_not_encoded(void **state)
{
    (void)state;
    assert_canonical("/tmp/a:b@c+d=e,f;g!h$i&j'k(l)m*n", NULL,
                     "file:///tmp/a:b@c+d=e,f;g!h$i&j'k(l)m*n");
}

static void percent_sign_in_a_bare_path_is_a_literal_percent(void **state)
{
    (void)state;
    assert_canonical("/tmp/100%", NULL, "file:///tmp/100%25");
    assert_canonical("/tmp/a%41", NULL, "file:///tmp/a%2541");
}

/* ---- Bare paths ------------------------------------------------------------------- */

static void bare_absolute_path_is_a_file_path(void **state)
{
    (void)state;
    assert_canonical("/project/src/main.rs", "/project", "src/main.rs");
    assert_canonical("/project/./src/../src/main.rs", NULL, "file:///project/src/main.rs");
}

/* state.h: "relative ones against `root`". */
static void bare_relative_path_is_resolved_against_root(void **state)
{
    (void)state;
    assert_canonical("src/main.rs", "/project", "src/main.rs");
    assert_canonical("./src/../src//main.rs", "/project", "src/main.rs");
    assert_canonical("../project/src/main.rs", "/project", "src/main.rs");
    assert_canonical(".", "/project", ".");
}

static void bare_relative_path_leaving_root_becomes_file_uri(void **state)
{
    (void)state;
    assert_canonical("../other/x.rs", "/project", "file:///other/x.rs");
}

/* Detail the header leaves open: without a root a relative path stays
 * relative (normalised, with leading ".." kept). */
static void bare_relative_path_without_root_stays_relative(void **state)
{
    (void)state;
    assert_canonical("./src/../src/main.rs", NULL, "src/main.rs");
    assert_canonical("../x/./y/", NULL, "../x/y");
}

/* ---- URIs with an authority ---------------------------------------------------------- */

static void https_scheme_and_host_are_lowercased(void **state)
{
    (void)state;
    assert_canonical("HTTPS://Example.COM/Path/File.HTML", NULL,
                     "https://example.com/Path/File.HTML");
}

static void https_default_port_is_dropped(void **state)
{
    (void)state;
    assert_canonical("https://example.com:443/x", NULL, "https://example.com/x");
}

static void http_default_port_is_dropped(void **state)
{
    (void)state;
    assert_canonical("http://example.com:80/x", NULL, "http://example.com/x");
}

static void non_default_port_is_kept(void **state)
{
    (void)state;
    assert_canonical("https://example.com:8443/x", NULL, "https://example.com:8443/x");
    assert_canonical("http://example.com:443/x", NULL, "http://example.com:443/x");
}

static void https_dot_segments_are_resolved(void **state)
{
    (void)state;
    assert_canonical("https://example.com/a/./b/../c", NULL, "https://example.com/a/c");
}

/* RFC 3986 §6.2.2: "%2E" is an unreserved ".", so "%2E%2E" is a dot
 * segment and is resolved like "..". */
static void https_encoded_dot_segments_are_resolved(void **state)
{
    (void)state;
    assert_canonical("https://example.com/a/%2E%2E/b", NULL, "https://example.com/b");
    assert_canonical("https://example.com/a/%2e/b", NULL, "https://example.com/a/b");
}

/* RFC 3986 §6.2.2.2: unreserved characters decoded, other escapes in
 * uppercase hex. */
static void https_percent_encoding_is_normalised(void **state)
{
    (void)state;
    assert_canonical("https://example.com/%7euser/%41", NULL, "https://example.com/~user/A");
    assert_canonical("https://example.com/a%2fb%3a", NULL, "https://example.com/a%2Fb%3A");
}

static void https_query_is_kept_and_normalised(void **state)
{
    (void)state;
    assert_canonical("https://Example.com/search?q=a%2fb&x=%7e1", NULL,
                     "https://example.com/search?q=a%2Fb&x=~1");
}

static void https_fragment_is_kept(void **state)
{
    (void)state;
    assert_canonical("https://example.com/doc#Section-2", NULL,
                     "https://example.com/doc#Section-2");
}

/* Detail the header leaves open: libcurl gives an empty path as "/". */
static void https_empty_path_becomes_slash(void **state)
{
    (void)state;
    assert_canonical("https://example.com", NULL, "https://example.com/");
}

static void root_does_not_apply_to_web_uris(void **state)
{
    (void)state;
    assert_canonical("https://example.com/project/x", "/project", "https://example.com/project/x");
}

static void unknown_scheme_with_authority_is_normalised(void **state)
{
    (void)state;
    assert_canonical("GIT://Example.com/a/../repo.git", NULL, "git://example.com/repo.git");
}

/* ---- Opaque URIs ------------------------------------------------------------------------ */

static void urn_scheme_is_lowercased_and_rest_kept(void **state)
{
    (void)state;
    assert_canonical("URN:ISBN:123", NULL, "urn:ISBN:123");
    assert_canonical("urn:ISBN:123", "/project", "urn:ISBN:123");
}

static void mailto_scheme_is_lowercased_and_rest_kept(void **state)
{
    (void)state;
    assert_canonical("MAILTO:Joe@Example.com", NULL, "mailto:Joe@Example.com");
}

/* ---- Invalid input ------------------------------------------------------------------------- */

static void null_uri_is_invalid(void **state)
{
    (void)state;
    assert_invalid(NULL, NULL);
    assert_invalid(NULL, "/project");
}

static void null_out_is_invalid(void **state)
{
    (void)state;
    assert_int_equal(jpt_uri_canonicalize("file:///x", NULL, NULL), JPT_ERR_INVALID);
}

static void empty_uri_is_invalid(void **state)
{
    (void)state;
    assert_invalid("", NULL);
    assert_invalid("", "/project");
}

/* state.h: "a file URI naming a remote host". */
static void file_uri_with_remote_host_is_invalid(void **state)
{
    (void)state;
    assert_invalid("file://otherhost/x", NULL);
    assert_invalid("file://otherhost/project/x", "/project");
}

/* state.h: "an encoded NUL byte". */
static void encoded_nul_in_file_uri_is_invalid(void **state)
{
    (void)state;
    assert_invalid("file:///project/a%00b", NULL);
    assert_invalid("file:///project/a%00", "/project");
}

/* state.h: only a file URI holding an encoded NUL is invalid ("no file name
 * can"); in a web URL %00 is an ordinary escape and is kept. */
static void encoded_nul_in_https_uri_is_kept(void **state)
{
    (void)state;
    assert_canonical("https://example.com/a%00b", NULL, "https://example.com/a%00b");
}

/* state.h: "a URI libcurl rejects". */
static void uri_libcurl_rejects_is_invalid(void **state)
{
    (void)state;
    assert_invalid("https://", NULL);
    assert_invalid("https://exa mple.com/", NULL);
    assert_invalid("http://[::1/x", NULL);
    assert_invalid("https://example.com:99999/", NULL);
}

/* state.h: "a root that is not an absolute path or file URI". */
static void relative_root_is_invalid(void **state)
{
    (void)state;
    assert_invalid("file:///project/src/main.rs", "project");
    assert_invalid("src/main.rs", "./project");
    assert_invalid("/project/src/main.rs", "");
}

static void root_that_is_not_a_file_uri_is_invalid(void **state)
{
    (void)state;
    assert_invalid("file:///project/src/main.rs", "https://example.com/project");
    assert_invalid("file:///project/src/main.rs", "file://otherhost/project");
}

/* The same sentence does not limit the check to file URIs: a bad root is a
 * bad argument whatever the URI. */
static void invalid_root_is_invalid_for_any_uri(void **state)
{
    (void)state;
    assert_invalid("https://example.com/x", "project");
    assert_invalid("urn:ISBN:123", "project");
}

/* Found by fuzzing: a relative path whose first segment holds a colon must
 * not come out looking like a URI with a scheme (RFC 3986 §4.2), or
 * canonicalising the result again would change it. */
static void relative_path_with_a_colon_keeps_a_dot_segment(void **state)
{
    (void)state;
    assert_canonical(".//HTTPS://host/x", NULL, "./HTTPS:/host/x");
    assert_canonical("./HTTPS:/host/x", NULL, "./HTTPS:/host/x");
    assert_canonical("file:///project/a:b/c", "/project", "./a:b/c");
    assert_canonical("./a:b/c", "/project", "./a:b/c");
}

/* Found by fuzzing: a '%' that starts no escape is escaped itself, so the
 * canonical form is stable ("%4%32E" must not turn into "%42E", then "BE"). */
static void stray_percent_is_escaped_so_canonical_forms_are_stable(void **state)
{
    (void)state;
    assert_canonical("urn:x:%4%32E", NULL, "urn:x:%2542E");
    assert_canonical("urn:x:%2542E", NULL, "urn:x:%2542E");
    assert_canonical("urn:x:100%", NULL, "urn:x:100%25");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stray_percent_is_escaped_so_canonical_forms_are_stable),
        cmocka_unit_test(relative_path_with_a_colon_keeps_a_dot_segment),
        cmocka_unit_test(dot_segments_give_the_same_identity),
        cmocka_unit_test(paths_under_root_are_relative_to_it),
        cmocka_unit_test(root_may_be_a_file_uri),
        cmocka_unit_test(root_is_canonicalized_too),
        cmocka_unit_test(root_itself_is_dot),
        cmocka_unit_test(sibling_extending_root_name_is_not_under_root),
        cmocka_unit_test(parent_of_root_is_not_under_root),
        cmocka_unit_test(everything_is_under_root_slash),
        cmocka_unit_test(double_slashes_are_collapsed),
        cmocka_unit_test(trailing_slash_is_dropped),
        cmocka_unit_test(dot_dot_above_slash_stays_at_slash),
        cmocka_unit_test(file_scheme_is_case_insensitive),
        cmocka_unit_test(file_uri_without_authority_is_local),
        cmocka_unit_test(file_uri_with_localhost_is_local),
        cmocka_unit_test(percent_escapes_in_file_paths_are_decoded),
        cmocka_unit_test(encoded_dot_segments_are_resolved),
        cmocka_unit_test(spaces_outside_root_are_percent_encoded),
        cmocka_unit_test(non_ascii_outside_root_is_percent_encoded_in_uppercase),
        cmocka_unit_test(non_ascii_under_root_is_a_plain_relative_path),
        cmocka_unit_test(path_characters_allowed_by_rfc3986_are_not_encoded),
        cmocka_unit_test(percent_sign_in_a_bare_path_is_a_literal_percent),
        cmocka_unit_test(bare_absolute_path_is_a_file_path),
        cmocka_unit_test(bare_relative_path_is_resolved_against_root),
        cmocka_unit_test(bare_relative_path_leaving_root_becomes_file_uri),
        cmocka_unit_test(bare_relative_path_without_root_stays_relative),
        cmocka_unit_test(https_scheme_and_host_are_lowercased),
        cmocka_unit_test(https_default_port_is_dropped),
        cmocka_unit_test(http_default_port_is_dropped),
        cmocka_unit_test(non_default_port_is_kept),
        cmocka_unit_test(https_dot_segments_are_resolved),
        cmocka_unit_test(https_encoded_dot_segments_are_resolved),
        cmocka_unit_test(https_percent_encoding_is_normalised),
        cmocka_unit_test(https_query_is_kept_and_normalised),
        cmocka_unit_test(https_fragment_is_kept),
        cmocka_unit_test(https_empty_path_becomes_slash),
        cmocka_unit_test(root_does_not_apply_to_web_uris),
        cmocka_unit_test(unknown_scheme_with_authority_is_normalised),
        cmocka_unit_test(urn_scheme_is_lowercased_and_rest_kept),
        cmocka_unit_test(mailto_scheme_is_lowercased_and_rest_kept),
        cmocka_unit_test(null_uri_is_invalid),
        cmocka_unit_test(null_out_is_invalid),
        cmocka_unit_test(empty_uri_is_invalid),
        cmocka_unit_test(file_uri_with_remote_host_is_invalid),
        cmocka_unit_test(encoded_nul_in_file_uri_is_invalid),
        cmocka_unit_test(encoded_nul_in_https_uri_is_kept),
        cmocka_unit_test(uri_libcurl_rejects_is_invalid),
        cmocka_unit_test(relative_root_is_invalid),
        cmocka_unit_test(root_that_is_not_a_file_uri_is_invalid),
        cmocka_unit_test(invalid_root_is_invalid_for_any_uri),
    };
    return TU_RUN(tests);
}
