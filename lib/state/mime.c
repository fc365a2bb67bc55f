/* Mime type -> code fence language, for rendering resources (RFD 058,
 * "JP-controlled resource formatting"). The names are the ones Markdown
 * highlighters (linguist, highlight.js) recognise. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "state/impl.h"

static const struct {
    const char *mime;
    const char *lang;
} fence_langs[] = {
    {"application/graphql", "graphql"},
    {"application/javascript", "javascript"},
    {"application/json", "json"},
    {"application/ld+json", "json"},
    {"application/sql", "sql"},
    {"application/toml", "toml"},
    {"application/typescript", "typescript"},
    {"application/x-httpd-php", "php"},
    {"application/x-javascript", "javascript"},
    {"application/x-ndjson", "json"},
    {"application/x-python", "python"},
    {"application/x-ruby", "ruby"},
    {"application/x-sh", "bash"},
    {"application/x-tex", "latex"},
    {"application/x-yaml", "yaml"},
    {"application/xml", "xml"},
    {"application/yaml", "yaml"},
    {"text/css", "css"},
    {"text/csv", "csv"},
    {"text/html", "html"},
    {"text/javascript", "javascript"},
    {"text/jsx", "jsx"},
    {"text/markdown", "markdown"},
    {"text/plain", "text"},
    {"text/python", "python"},
    {"text/rust", "rs"},
    {"text/tsx", "tsx"},
    {"text/typescript", "typescript"},
    {"text/x-c", "c"},
    {"text/x-c++", "cpp"},
    {"text/x-c++hdr", "cpp"},
    {"text/x-c++src", "cpp"},
    {"text/x-chdr", "c"},
    {"text/x-clojure", "clojure"},
    {"text/x-cmake", "cmake"},
    {"text/x-csharp", "csharp"},
    {"text/x-csrc", "c"},
    {"text/x-dart", "dart"},
    {"text/x-diff", "diff"},
    {"text/x-dockerfile", "dockerfile"},
    {"text/x-elixir", "elixir"},
    {"text/x-erlang", "erlang"},
    {"text/x-go", "go"},
    {"text/x-haskell", "haskell"},
    {"text/x-ini", "ini"},
    {"text/x-java", "java"},
    {"text/x-java-source", "java"},
    {"text/x-kotlin", "kotlin"},
    {"text/x-lua", "lua"},
    {"text/x-makefile", "makefile"},
    {"text/x-markdown", "markdown"},
    {"text/x-nix", "nix"},
    {"text/x-ocaml", "ocaml"},
    {"text/x-patch", "diff"},
    {"text/x-perl", "perl"},
    {"text/x-php", "php"},
    {"text/x-protobuf", "protobuf"},
    {"text/x-python", "python"},
    {"text/x-r", "r"},
    {"text/x-ruby", "ruby"},
    {"text/x-rust", "rs"},
    {"text/x-scala", "scala"},
    {"text/x-script.python", "python"},
    {"text/x-sh", "bash"},
    {"text/x-shellscript", "bash"},
    {"text/x-sql", "sql"},
    {"text/x-swift", "swift"},
    {"text/x-tex", "latex"},
    {"text/x-toml", "toml"},
    {"text/x-typescript", "typescript"},
    {"text/x-vue", "vue"},
    {"text/x-yaml", "yaml"},
    {"text/x-zig", "zig"},
    {"text/xml", "xml"},
    {"text/yaml", "yaml"},
};

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);

    return n >= k && strncasecmp(s + n - k, suffix, k) == 0;
}

JPT_EXPORT const char *jpt_mime_fence_lang(const char *mime_type)
{
    if (mime_type == NULL)
        return NULL;

    /* The essence only: "text/x-python; charset=utf-8" -> "text/x-python". */
    size_t n = strcspn(mime_type, ";");
    while (n > 0 && (mime_type[n - 1] == ' ' || mime_type[n - 1] == '\t'))
        n--;
    while (n > 0 && (*mime_type == ' ' || *mime_type == '\t')) {
        mime_type++;
        n--;
    }

    for (size_t i = 0; i < sizeof(fence_langs) / sizeof(fence_langs[0]); i++)
        if (strlen(fence_langs[i].mime) == n &&
            strncasecmp(fence_langs[i].mime, mime_type, n) == 0)
            return fence_langs[i].lang;
    /* RFC 6839 structured syntax suffixes: application/vnd.api+json. */
    if (ends_with(mime_type, n, "+json"))
        return "json";
    if (ends_with(mime_type, n, "+xml"))
        return "xml";
    if (ends_with(mime_type, n, "+yaml"))
        return "yaml";
    return NULL;
}
