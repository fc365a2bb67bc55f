#!/usr/bin/env python3
"""Compiles each public header alone in every language standard a program
may use it from: C99, C11 and C17, and C++11, C++17 and C++20 when a C++
compiler is given, each with -Wall -Wextra -pedantic -Werror. A header
that needs another header first, leaks a GNU extension or a newer
standard's feature, declares a function without a prototype, or lacks
extern "C" fails."""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

WARNINGS = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
# -Wstrict-prototypes: in C, `int f();` declares no parameters' types.
C_STANDARDS = ["c99", "c11", "c17"]
C_FLAGS = WARNINGS + ["-Wstrict-prototypes"]
CXX_STANDARDS = ["c++11", "c++17", "c++20"]
CXX_FLAGS = WARNINGS


def compile_one(compiler, flags, source_suffix, header, include):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "check" + source_suffix)
        with open(src, "w") as f:
            f.write('#include <jptool/%s>\n' % os.path.basename(header))
            if source_suffix == ".cpp":
                # Only a declaration inside extern "C" links to a C symbol;
                # declaring one again with C linkage proves the guard is
                # there (a conflicting linkage does not compile).
                f.write('extern "C" const char *jpt_version(void);\n')
            f.write("int main(void) { return 0; }\n")
        cmd = shlex.split(compiler) + flags + ["-I", include, "-fsyntax-only", src]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            print("FAIL %s (%s):\n%s" % (header, " ".join(cmd), result.stderr))
            return False
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--include", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--cxx")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()

    runs = [(args.cc, ["-std=" + std] + C_FLAGS, ".c", std) for std in C_STANDARDS]
    if args.cxx:
        runs += [(args.cxx, ["-std=" + std] + CXX_FLAGS, ".cpp", std) for std in CXX_STANDARDS]
    else:
        print("note: no C++ compiler found; checked as C only")
    ok = True
    for header in args.headers:
        for compiler, flags, suffix, _ in runs:
            ok &= compile_one(compiler, flags, suffix, header, args.include)
    checked = ", ".join(std.upper() for _, _, _, std in runs)
    print("%d headers %s as %s" % (len(args.headers), "compile alone" if ok else "FAILED", checked))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
