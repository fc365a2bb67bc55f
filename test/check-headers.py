#!/usr/bin/env python3
"""Compiles each public header alone: as C11 with -Wall -Wextra -pedantic
-Werror, and as C++ when a C++ compiler is given. A header that needs
another header first, leaks a GNU extension or lacks extern "C" fails."""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile


def compile_one(compiler, flags, source_suffix, header, include):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "check" + source_suffix)
        with open(src, "w") as f:
            f.write('#include <jptool/%s>\n' % os.path.basename(header))
            if source_suffix == ".cpp":
                # Only a declaration inside extern "C" links to a C symbol;
                # taking the address of one proves the guard is there.
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

    c_flags = ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror"]
    cxx_flags = ["-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]
    ok = True
    for header in args.headers:
        ok &= compile_one(args.cc, c_flags, ".c", header, args.include)
        if args.cxx:
            ok &= compile_one(args.cxx, cxx_flags, ".cpp", header, args.include)
    checked = "C11" + (" and C++" if args.cxx else "")
    if not args.cxx:
        print("note: no C++ compiler found; checked as C11 only")
    print("%d headers %s as %s" % (len(args.headers), "compile alone" if ok else "FAILED", checked))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
