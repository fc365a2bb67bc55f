#!/bin/sh
# Runs the Rust crates' tests and example against a build tree, with
# Debian's toolchain (/usr/bin first: rustc 1.63, cargo 0.66 on Debian 12),
# offline and with no crates from outside. Exits 77 (meson's "skipped")
# where cargo or rustc is not installed; scripts/run-tests installs them.
#
#   cargo-test.sh LIBDIR TARGET_DIR
# LIBDIR holds libjptool.so (the build tree's lib/); TARGET_DIR is cargo's
# build directory (inside the meson build tree, so the source stays clean).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
libdir=$1
target=$2
PATH=/usr/bin:$PATH
export PATH

for program in cargo rustc; do
    if ! command -v "$program" >/dev/null 2>&1; then
        echo "$program is not installed: the Rust tests are skipped" >&2
        exit 77
    fi
done
echo "$(rustc --version), $(cargo --version)"

# build.rs links the build tree's library; the tests load it at run time.
JPTOOL_LIB_DIR=$libdir
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export JPTOOL_LIB_DIR LD_LIBRARY_PATH

cd "$here"
cargo test --offline --locked --target-dir "$target"
cargo run --offline --locked --target-dir "$target" --example host
