#!/usr/bin/env python3
"""Checks the library's ABI against each release's baseline (abi/*.abi,
written by scripts/abi-baseline; README "ABI") with libabigail's abidiff.

Only what the public headers define counts (--headers-dir2 with
--drop-private-types: the library's own structs are opaque to a program).
A function or variable that is removed or changed, a public struct that
changes other than by growing at its end where abi/jptool.abignore allows
it, a changed soname: each fails, with abidiff's report. Functions added
since the release pass and are listed. And a symbol added since a release
must carry a version node of its own: one that is in a released node of
lib/jptool.sym fails, as a program linked against the release would find
it missing from the node it names.

Usage: check-abi.py --abidiff ABIDIFF --nm NM --headers DIR --suppressions FILE
                    LIBRARY BASELINE..."""
import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

# abidiff's exit status is a bit set (libabigail's abidiff documentation).
ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2


def abidiff(args, baseline, library, *extra):
    cmd = [args.abidiff, "--headers-dir2", args.headers, "--drop-private-types",
           "--fail-no-debug-info", "--suppressions", args.suppressions,
           *extra, baseline, library]
    result = subprocess.run(cmd, capture_output=True, text=True)
    return cmd, result


def compare(args, baseline):
    """abidiff of the baseline and the library: None when compatible, else
    what is wrong. Prints the report."""
    cmd, full = abidiff(args, baseline, args.library)
    report = (full.stdout + full.stderr).rstrip()
    if full.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR):
        print(report)
        return "abidiff could not compare (exit %d): %s" % (full.returncode, " ".join(cmd))
    if full.returncode == 0:
        return None
    # Added functions and variables alone also set ABIDIFF_ABI_CHANGE, and
    # so does a struct member's changed type (not only what abidiff knows
    # to be incompatible): without the additions there must be nothing.
    _, rest = abidiff(args, baseline, args.library, "--no-added-syms")
    print(report)
    if rest.returncode != 0:
        return "the ABI changed incompatibly (abidiff exit %d, report above)" % full.returncode
    return None


def baseline_symbols(baseline):
    """{(name, version)} of the release's exported functions and variables."""
    root = ET.parse(baseline).getroot()
    return {(s.get("name"), s.get("version") or "")
            for tag in ("elf-function-symbols", "elf-variable-symbols")
            for table in root.iter(tag) for s in table.iter("elf-symbol")}


def library_symbols(args):
    """{(name, version)} the library exports."""
    out = subprocess.run([args.nm, "--dynamic", "--defined-only", args.library],
                         capture_output=True, text=True, check=True).stdout
    symbols = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) != 3 or fields[1] == "A":  # "A": a version node itself
            continue
        name, _, version = fields[2].replace("@@", "@").partition("@")
        symbols.add((name, version))
    return symbols


def check_nodes(args, baseline):
    """Problems: symbols the release did not have in a node it released."""
    released = baseline_symbols(baseline)
    versions = {version for _, version in released}
    return ["%s@%s is new since %s, but %s is a released node: add it to the "
            "next release's node (lib/jptool.sym)"
            % (name, version, os.path.basename(baseline), version)
            for name, version in sorted(library_symbols(args) - released)
            if version in versions]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--abidiff", required=True)
    ap.add_argument("--nm", required=True)
    ap.add_argument("--headers", required=True)
    ap.add_argument("--suppressions", required=True)
    ap.add_argument("library")
    ap.add_argument("baselines", nargs="+")
    args = ap.parse_args()

    problems = []
    for baseline in args.baselines:
        name = os.path.basename(baseline)
        print("==> %s against %s" % (os.path.basename(args.library), name))
        wrong = compare(args, baseline)
        if wrong is not None:
            problems.append("%s: %s" % (name, wrong))
        problems += ["%s: %s" % (name, p) for p in check_nodes(args, baseline)]
    for p in problems:
        print("FAIL " + p)
    print("%d baselines checked, %d problems" % (len(args.baselines), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
