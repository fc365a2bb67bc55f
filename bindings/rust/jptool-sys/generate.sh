#!/bin/sh
# Generates jptool-sys/src/bindings.rs from the public headers with bindgen,
# formatted by rustfmt (Debian 12's: bindgen 0.60, rustfmt 1.63, found in
# /usr/bin first, so the output is the same on every machine).
#
#   generate.sh [INCLUDE_DIR]          rewrites src/bindings.rs
#   generate.sh --check [INCLUDE_DIR]  regenerates into a temporary file and
#                                      fails, showing the diff, when the
#                                      committed file differs; exits 77
#                                      (meson's "skipped") without bindgen
#                                      or rustfmt
# INCLUDE_DIR defaults to the source tree's include/.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH=/usr/bin:$PATH
export PATH

check=false
if [ "${1:-}" = "--check" ]; then
    check=true
    shift
fi
include=${1:-$here/../../../include}
committed=$here/src/bindings.rs

for program in bindgen rustfmt; do
    if ! command -v "$program" >/dev/null 2>&1; then
        echo "generate.sh: $program is not installed (Debian: apt-get install $program)" >&2
        if $check; then
            exit 77
        fi
        exit 1
    fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only jptool's own API: the allowlists keep libc's declarations out. Every
# #define is a C int (the functions take them as int or unsigned).
bindgen "$include/jptool/jptool.h" \
    --allowlist-function 'jpt_.*' --allowlist-type 'jpt_.*' --allowlist-var 'JPT_.*' \
    --size_t-is-usize --default-macro-constant-type signed --no-rustfmt-bindings \
    -o "$tmp/raw.rs" -- -I "$include"
rustfmt --edition 2021 <"$tmp/raw.rs" >"$tmp/bindings.rs"

if $check; then
    if ! diff -u "$committed" "$tmp/bindings.rs"; then
        echo "jptool-sys/src/bindings.rs is out of date with $include/jptool:" \
             "run bindings/rust/jptool-sys/generate.sh and commit the result" >&2
        exit 1
    fi
    echo "jptool-sys/src/bindings.rs matches the headers"
    exit 0
fi
cp "$tmp/bindings.rs" "$committed"
echo "wrote $committed"
