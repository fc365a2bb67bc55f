#!/bin/sh
# Generates jptool's Rust bindings with bindgen and builds the example with
# rustc (no crates needed). Exits 77 (meson's "skipped") when bindgen or
# rustc is not installed.
# usage: build.sh OUT_DIR LIBDIR INCLUDEDIR   (then OUT_DIR/jptool-rust runs it)
set -eu
out=$1
libdir=$2
include=$3
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v bindgen >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
    echo "bindgen or rustc not installed: the Rust example is skipped"
    exit 77
fi
mkdir -p "$out"
# Only jptool's own API: the allowlists keep libc's declarations out.
bindgen "$include/jptool/jptool.h" --allowlist-function 'jpt_.*' \
    --allowlist-type 'jpt_.*' --allowlist-var 'JPT_.*' --size_t-is-usize -o "$out/jptool_bindings.rs" \
    -- -I "$include"
JPTOOL_BINDINGS="$out/jptool_bindings.rs" rustc --edition 2021 -O "$here/main.rs" \
    -o "$out/jptool-rust" -L "$libdir" -l jptool -C "link-args=-Wl,-rpath,$libdir"
"$out/jptool-rust"
