#!/bin/sh
# Runs the Rust crates' checks against a build tree, with Debian's
# toolchain (/usr/bin first: rustc 1.63, cargo 0.66 on Debian 12), offline
# and with no crates from outside:
#   - cargo test: the unit, integration and doc tests (the VFS tests run a
#     Rust VFS tool in the OS sandbox; tests/coverage.rs fails when an
#     exported function has no wrapper), then the coverage counts;
#   - the examples, each built and run (vfs_host and files_backend run the
#     vfs_tool example as their tool);
#   - cargo doc --no-deps with warnings denied;
#   - cargo clippy with warnings denied, where `cargo clippy` works (Debian
#     12 packages no clippy; rustup's, found in PATH after /usr/bin, does),
#     else it says that the lints are skipped.
# Exits 77 (meson's "skipped") where cargo or rustc is not installed;
# scripts/run-tests installs them.
#
#   cargo-test.sh LIBDIR TARGET_DIR
# LIBDIR holds libjptool.so (the build tree's lib/); TARGET_DIR is cargo's
# build directory (inside the meson build tree, so the source stays clean).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "$1" && pwd)
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

# build.rs links the build tree's library (and gives the crate's own tests
# and examples an rpath to it, for its sandboxed VFS tools, whose
# environment is clean); the tests load it at run time.
JPTOOL_LIB_DIR=$libdir
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export JPTOOL_LIB_DIR LD_LIBRARY_PATH

cd "$here"
step() {
    printf '\n== %s\n' "$*"
}

step "cargo test"
cargo test --offline --locked --target-dir "$target"
step "coverage of the exported functions"
cargo test --offline --locked --target-dir "$target" --test coverage -- --nocapture --quiet

step "examples"
cargo build --offline --locked --target-dir "$target" --examples
for example in host vfs_host files_backend; do
    step "example $example"
    cargo run --offline --locked --target-dir "$target" --example "$example"
done

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --offline --locked --target-dir "$target"

step "cargo clippy (warnings are errors)"
if cargo clippy --version >/dev/null 2>&1; then
    echo "$(cargo clippy --version)"
    # Its own target directory: clippy's driver is another compiler.
    cargo clippy --offline --locked --target-dir "$target-clippy" --all-targets -- -D warnings
else
    echo "cargo clippy is not installed (Debian 12 packages no clippy): the lints are skipped"
fi
