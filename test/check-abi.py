#!/usr/bin/env python3
"""Checks a library's ABI against each release's baseline with libabigail,
and writes a baseline (--write, for scripts/abi-baseline). Each library has
its own directory of baselines, named <library>-<release>.abi (README
"ABI"): libjptool's in abi/, libjptool-tool's in abi/jptool-tool/.

Both sides are libabigail's abidw description of the library, taken the
same way: only what the public headers define counts (--headers-dir with
--drop-private-types: the library's own structs are opaque to a program),
read from the debug information, so the -O level does not matter but -g
does. abidiff then compares them:

- a function or variable removed or changed, a public struct changed, a
  changed soname: each fails, with abidiff's report;
- functions and variables added since the release pass, and are listed;
- a struct that starts with `size_t size` may grow at its end (common.h,
  "ABI promises"): the members the release did not have are cut off
  before the comparison, and listed. Its members up to there are compared
  as any other struct's. A new member must begin past the released size,
  not in its tail padding, which the release's programs pass as theirs. (libabigail's own suppression for this,
  has_data_member_inserted_at = end, also hides a changed member's type in
  libabigail 2.2, Debian 12's, so it is not used.)
- a symbol added since a release must carry a version node of its own: one
  in a node the release had released (JPTOOL_0.1 for 0.1.0) fails, as the
  release's programs would find it missing from the node it names (the
  library's version script, --map). A node JPTOOL_X.Y is released with
  X.Y.0: a baseline written before (libjptool-tool's first, taken when the
  library was made) may hold the next release's node, still open.

Usage: check-abi.py --abidw ABIDW --abidiff ABIDIFF --headers DIR [--map MAP]
                    LIBRARY BASELINE...
       (a BASELINE that is a directory stands for its *.abi files)
       check-abi.py --abidw ABIDW --headers DIR --write OUT LIBRARY"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# abidiff's exit status is a bit set (libabigail's abidiff manual).
ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2


def describe(args, out):
    """abidw of the library into `out`; None, or why it failed."""
    # Locations are kept (file:line of the headers, for the reports)
    # without the machine's paths.
    cmd = [args.abidw, "--headers-dir", args.headers, "--drop-private-types",
           "--exported-interfaces-only", "--drop-undefined-syms",
           "--no-corpus-path", "--no-comp-dir-path", "--short-locs",
           "--out-file", out, args.library]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        return "%s failed (exit %d): %s" % (" ".join(cmd), result.returncode,
                                            result.stderr.strip())
    if next(ET.parse(out).getroot().iter("function-decl"), None) is None:
        return ("%s has no debug information: the ABI check reads the types "
                "from it (build with -g, meson's -Ddebug=true)" % args.library)
    return None


def definitions(root):
    """{name: [class-decl, …]}: the structs defined (not only declared);
    each translation unit has its own copy."""
    found = {}
    for decl in root.iter("class-decl"):
        if decl.get("is-declaration-only") != "yes" and decl.get("name"):
            found.setdefault(decl.get("name"), []).append(decl)
    return found


def member_names(decl):
    return [var.get("name") for member in decl.findall("data-member")
            for var in member.findall("var-decl")]


def cut_growth(baseline_root, current_root):
    """Cuts each size-versioned struct of `current_root` back to the members
    the baseline had: ({struct: [members cut]}, problems)."""
    grown, problems = {}, []
    current = definitions(current_root)
    for name, decls in definitions(baseline_root).items():
        released = member_names(decls[0])
        if released[:1] != ["size"]:
            continue
        released_bits = int(decls[0].get("size-in-bits"))
        for decl in current.get(name, []):
            members = decl.findall("data-member")
            # Only a struct whose released members come first, by name, grew
            # at its end; abidiff alone would take a member inserted in
            # place of the last one for a harmless rename.
            if len(members) <= len(released) or member_names(decl)[:len(released)] != released:
                continue
            added = member_names(decl)[len(released):]
            offset = int(members[len(released)].get("layout-offset-in-bits"))
            # A member in the released struct's tail padding is inside the
            # size an older program passes, holding whatever its padding
            # held: the size no longer says whether the caller set it.
            if offset < released_bits and name not in grown:
                problems.append("struct %s: %s begins at bit %d, inside the %d bits the "
                                "release's programs pass as its size; begin it at bit %d "
                                "(after a member that fills the padding)"
                                % (name, added[0], offset, released_bits, released_bits))
            grown[name] = added
            for member in members[len(released):]:
                decl.remove(member)
            decl.set("size-in-bits", str(released_bits))
    return grown, problems


def symbols(root):
    """{(name, version)} of the exported functions and variables."""
    return {(s.get("name"), s.get("version") or "")
            for tag in ("elf-function-symbols", "elf-variable-symbols")
            for table in root.iter(tag) for s in table.iter("elf-symbol")}


def numbers(text):
    """(0, 2) for "JPTOOL_0.2" or "0.2.1"; None when it has none."""
    m = re.search(r"(\d+)\.(\d+)(?:\.\d+)?$", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def misplaced(baseline_root, current_root, release, version_map):
    """Symbols the release did not have, in a node it had released: one
    named for a version up to the release's (a node without a number
    counts as released)."""
    released = symbols(baseline_root)
    upto = numbers(release)
    nodes = {version for _, version in released
             if upto is None or numbers(version) is None or numbers(version) <= upto}
    return ["%s@%s is new since %s, but %s is a released node: add it to the "
            "next release's node (%s)" % (name, version, release, version, version_map)
            for name, version in sorted(symbols(current_root) - released)
            if version in nodes]


def abidiff(args, baseline, current, *extra):
    cmd = [args.abidiff, *extra, baseline, current]
    return cmd, subprocess.run(cmd, capture_output=True, text=True)


def release_of(baseline):
    """"0.1.0" for abi/jptool-0.1.0.abi and abi/jptool-tool/jptool-tool-0.1.0.abi."""
    name = os.path.basename(baseline)
    m = re.match(r"^.*-(\d+\.\d+\.\d+)\.abi$", name)
    return m.group(1) if m else name


def compare(args, baseline, current_xml, tmp):
    """Problems of the library against one baseline; prints the report."""
    release = release_of(baseline)
    baseline_root = ET.parse(baseline).getroot()
    current = ET.parse(current_xml)
    grown, problems = cut_growth(baseline_root, current.getroot())
    cut = os.path.join(tmp, "cut-%s.abi" % release)
    current.write(cut, encoding="unicode")

    cmd, full = abidiff(args, baseline, cut)
    report = (full.stdout + full.stderr).rstrip()
    if report:
        print(report)
    for name, members in sorted(grown.items()):
        print("struct %s grew at its end: %s" % (name, ", ".join(members)))
    problems += misplaced(baseline_root, current.getroot(), release, args.map)
    if full.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR):
        return problems + ["abidiff could not compare (exit %d): %s"
                           % (full.returncode, " ".join(cmd))]
    if full.returncode == 0:
        return problems
    # Additions alone set ABIDIFF_ABI_CHANGE, and so does a member's changed
    # type (ABIDIFF_ABI_INCOMPATIBLE_CHANGE is only for what abidiff knows
    # is incompatible): without the additions nothing may be left.
    _, rest = abidiff(args, baseline, cut, "--no-added-syms")
    if rest.returncode != 0:
        problems.append("the ABI changed incompatibly (abidiff exit %d, report above)"
                        % full.returncode)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--abidw", required=True)
    ap.add_argument("--abidiff")
    ap.add_argument("--headers", required=True, help="the public headers' directory")
    ap.add_argument("--write", metavar="OUT", help="write the library's baseline to OUT")
    ap.add_argument("--map", default="lib/jptool.sym",
                    help="the library's version script, named in the messages")
    ap.add_argument("library")
    ap.add_argument("baselines", nargs="*")
    args = ap.parse_args()
    if args.write is not None:
        wrong = describe(args, args.write)
        print(wrong or "%s: %d symbols" % (args.write, len(symbols(ET.parse(args.write).getroot()))))
        return 1 if wrong else 0
    if args.abidiff is None or not args.baselines:
        ap.error("--abidiff and at least one baseline are needed to compare")
    baselines = []
    for path in args.baselines:
        found = sorted(glob.glob(os.path.join(path, "*.abi"))) if os.path.isdir(path) else [path]
        if not found:
            ap.error("no baseline (*.abi) in " + path)
        baselines += found

    with tempfile.TemporaryDirectory() as tmp:
        current = os.path.join(tmp, "current.abi")
        wrong = describe(args, current)
        if wrong is not None:
            print("FAIL " + wrong)
            return 1
        problems = []
        for baseline in baselines:
            release = release_of(baseline)
            print("==> %s against %s (%s)" % (os.path.basename(args.library), release, baseline))
            problems += ["%s: %s" % (release, p) for p in compare(args, baseline, current, tmp)]
    for p in problems:
        print("FAIL " + p)
    print("%d baselines checked, %d problems" % (len(baselines), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
