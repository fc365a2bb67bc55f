#!/usr/bin/env python3
"""Checks the shape of libjptool-tool, the tool side's own library (issue 17
§3: a tool process loads nothing but the C library):

  - the library needs the C library alone: its NEEDED entries (readelf -d)
    are libc's and the dynamic loader's (and, in a sanitizer build, the
    sanitizers' runtimes);
  - each --program given (the VFS tools of the tree written on the SDK)
    links it rather than libjptool, the host's library, which would bring
    libcurl, pcre2, libseccomp and jansson into every tool process;
  - its version script is libjptool's restricted to its symbols: each
    symbol in the node jptool.sym has it in, and each node inheriting the
    same one (README "ABI"), so that the two maps never disagree.

Usage: check-tool-library.py [--sanitizers] [--program EXE]... READELF LIBRARY TOOL_MAP MAP"""
import argparse
import re
import subprocess
import sys

NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
LIBC = re.compile(r"^(libc\.so\.\d+|ld-linux[\w.-]*\.so\.\d+|ld64\.so\.\d+)$")
SANITIZERS = re.compile(r"^lib(a|ub|t|l)san\.so\.\d+$")
HOST_LIBRARY = re.compile(r"^libjptool\.so\.\d+$")
NODE = re.compile(r"^(\w[\w.]*)\s*\{(.*?)\}\s*([\w.]*)\s*;", re.M | re.S)
SYMBOL = re.compile(r"^\s*(jpt_\w+);\s*$", re.M)


def needed(readelf, path):
    out = subprocess.run([readelf, "-d", "-W", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("FAIL %s -d %s: %s" % (readelf, path, out.stderr.strip()))
    return NEEDED.findall(out.stdout)


def read_map(path):
    """({symbol: node}, {node: parent}) of a version script."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    where, parent = {}, {}
    for name, body, inherits in NODE.findall(text):
        parent[name] = inherits or None
        for symbol in SYMBOL.findall(body.split("local:")[0]):
            where[symbol] = name
    return where, parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sanitizers", action="store_true",
                    help="a sanitizer build: their runtimes may be needed too")
    ap.add_argument("--program", action="append", default=[])
    ap.add_argument("readelf")
    ap.add_argument("library")
    ap.add_argument("tool_map")
    ap.add_argument("map")
    args = ap.parse_args()
    problems = []

    libs = needed(args.readelf, args.library)
    for lib in libs:
        if not LIBC.match(lib) and not (args.sanitizers and SANITIZERS.match(lib)):
            problems.append("%s needs %s: the tool side may need the C library alone"
                            % (args.library, lib))
    print("%s needs %s" % (args.library, ", ".join(libs)))
    for program in args.program:
        libs = needed(args.readelf, program)
        for lib in filter(HOST_LIBRARY.match, libs):
            problems.append("%s needs %s, the host's library: a VFS tool links "
                            "libjptool-tool (dependency jptool-tool)" % (program, lib))
        print("%s needs %s" % (program, ", ".join(libs)))

    tool_where, tool_parent = read_map(args.tool_map)
    where, parent = read_map(args.map)
    if not tool_where:
        problems.append("%s lists no symbol" % args.tool_map)
    for symbol, node in sorted(tool_where.items()):
        if symbol not in where:
            problems.append("%s is in %s but not in %s" % (symbol, args.tool_map, args.map))
        elif where[symbol] != node:
            problems.append("%s is in node %s of %s but in %s of %s"
                            % (symbol, node, args.tool_map, where[symbol], args.map))
    for node, inherits in sorted(tool_parent.items()):
        if node not in parent:
            problems.append("node %s of %s is not a node of %s" % (node, args.tool_map, args.map))
        elif parent[node] != inherits:
            problems.append("node %s inherits %s in %s but %s in %s"
                            % (node, inherits, args.tool_map, parent[node], args.map))

    for p in problems:
        print("FAIL " + p)
    print("%d symbols in %d nodes checked, %d programs, %d problems"
          % (len(tool_where), len(tool_parent), len(args.program), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
