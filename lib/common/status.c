/* Status codes: one table gives each code its name and its text, so that the
 * header, jpt_strerror() and jpt_status_name() never drift apart. */
#include "common.h"

#define JPT__STATUS_TABLE(X)                                                   \
    X(JPT_OK, "success")                                                       \
    X(JPT_ERR_INVALID, "invalid argument or malformed input")                  \
    X(JPT_ERR_NOMEM, "out of memory")                                          \
    X(JPT_ERR_NOT_FOUND, "not found")                                          \
    X(JPT_ERR_EXISTS, "already exists")                                        \
    X(JPT_ERR_STATE, "not valid in the current state")                         \
    X(JPT_ERR_UNSUPPORTED, "not supported")                                    \
    X(JPT_ERR_DENIED, "denied by the access policy")                           \
    X(JPT_ERR_TIMEOUT, "timed out")                                            \
    X(JPT_ERR_CANCELLED, "cancelled")                                          \
    X(JPT_ERR_IO, "input/output error")                                        \
    X(JPT_ERR_PROTOCOL, "protocol violation by the peer")                      \
    X(JPT_ERR_AGAIN, "nothing ready yet")                                      \
    X(JPT_ERR_SANDBOX, "OS sandbox required but not enforceable here")         \
    X(JPT_ERR_LIMIT, "size or count limit exceeded")

JPT_EXPORT const char *jpt_strerror(int status)
{
    switch (status) {
#define X(code, text)                                                          \
    case code:                                                                 \
        return text;
        JPT__STATUS_TABLE(X)
#undef X
    }
    return "unknown status";
}

JPT_EXPORT const char *jpt_status_name(int status)
{
    switch (status) {
#define X(code, text)                                                          \
    case code:                                                                 \
        return #code;
        JPT__STATUS_TABLE(X)
#undef X
    }
    return NULL;
}

JPT_EXPORT const char *jpt_version(void)
{
    return JPT_VERSION_STRING;
}
