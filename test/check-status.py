#!/usr/bin/env python3
"""Checks the status codes: every JPT_ERR_* the public header defines has the
number it was first given (codes are never renumbered, README "ABI"), the
numbers run 0, -1, -2, … without gaps or repeats, and the library's status
table names each (jpt_status_name) and words it (jpt_strerror).

Usage: check-status.py <include/jptool/common.h> <libjptool.so>"""
import ctypes
import re
import sys

# The numbers as released: a code is only ever added at the end.
FROZEN = ["JPT_OK", "JPT_ERR_INVALID", "JPT_ERR_NOMEM", "JPT_ERR_NOT_FOUND",
          "JPT_ERR_EXISTS", "JPT_ERR_STATE", "JPT_ERR_UNSUPPORTED", "JPT_ERR_DENIED",
          "JPT_ERR_TIMEOUT", "JPT_ERR_CANCELLED", "JPT_ERR_IO", "JPT_ERR_PROTOCOL",
          "JPT_ERR_AGAIN", "JPT_ERR_SANDBOX", "JPT_ERR_LIMIT"]


def main():
    header, library = sys.argv[1], sys.argv[2]
    defined = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^#define (JPT_OK|JPT_ERR_\w+)\s+(-?\d+)", open(header).read(), re.M)}
    lib = ctypes.CDLL(library)
    lib.jpt_status_name.restype = ctypes.c_char_p
    lib.jpt_status_name.argtypes = [ctypes.c_int]
    lib.jpt_strerror.restype = ctypes.c_char_p
    lib.jpt_strerror.argtypes = [ctypes.c_int]
    problems = []

    for i, name in enumerate(FROZEN):
        if defined.get(name) != -i:
            problems.append("%s is %s in the header; it was released as %d"
                            % (name, defined.get(name), -i))
    numbers = sorted(defined.values(), reverse=True)
    if numbers != list(range(0, -len(numbers), -1)):
        problems.append("the codes are not 0, -1, -2, … without gaps or repeats: %s" % numbers)
    for name, value in sorted(defined.items(), key=lambda kv: -kv[1]):
        got = lib.jpt_status_name(value)
        if got is None or got.decode() != name:
            problems.append("jpt_status_name(%d) is %r, not %s" % (value, got, name))
        if lib.jpt_strerror(value).decode() == "unknown status":
            problems.append("jpt_strerror(%d) (%s) has no text" % (value, name))
    below = min(defined.values()) - 1
    if lib.jpt_status_name(below) is not None:
        problems.append("jpt_status_name(%d) names a code the header lacks" % below)

    for p in problems:
        print("FAIL " + p)
    print("%d status codes checked, %d problems" % (len(defined), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
