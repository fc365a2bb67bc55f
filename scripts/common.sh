# Shared by scripts/run-tests, run-demo and run-bench: say what is done, and
# install from Debian's packages whatever a fresh Debian 12 machine lacks.

step() {
    printf '\n==> %s\n' "$*"
}

run() {
    printf '+ %s\n' "$*"
    "$@"
}

# Debian packages the build, the tests and the demo need: the event-loop
# examples' libuv and GLib; for the Python package's pip tests setuptools
# and wheel, installed and as the wheels an isolated build takes; for the
# Rust bindings rustc and cargo, and for their freshness check bindgen
# (which loads libclang at run time and parses with clang's own headers,
# stddef.h) and rustfmt, which formats what it generates; openssl makes the
# self-signed certificate of test-vfs-http's HTTPS server; libabigail's
# abidw and abidiff (abigail-tools) check the ABI against abi/ (README "ABI");
# the official JSON Schema Test Suite (json-schema-test-suite: draft 7 among
# its drafts) is what test-schema-suite checks jpt_schema_check against.
# mypy checks the Python package's types in strict mode (test python-mypy).
JPT_PACKAGES="meson ninja-build pkg-config gcc g++ libc6-dev \
libjansson-dev libpcre2-dev libcurl4-openssl-dev libcmocka-dev libseccomp-dev \
valgrind python3 git libuv1-dev libglib2.0-dev \
python3-venv python3-pip python3-setuptools python3-wheel \
python3-setuptools-whl python3-wheel-whl \
ripgrep rustc cargo bindgen rustfmt libclang1-14 libclang-common-14-dev openssl \
abigail-tools json-schema-test-suite mypy"

install_dependencies() {
    missing=""
    for pkg in $JPT_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing="$missing $pkg"
        fi
    done
    if [ -z "$missing" ]; then
        step "Dependencies: all installed"
        return 0
    fi
    step "Installing missing Debian packages:$missing"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    run $sudo apt-get update
    # shellcheck disable=SC2086 # the list is meant to split into words
    run env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing
}

# Installs the Debian package of each program that is not in $PATH, given
# as program:package ("node:nodejs"). For programs some machines have from
# elsewhere (a node with its own npm): a package list would fight those.
install_commands() {
    missing=""
    for pair in "$@"; do
        if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
            missing="$missing ${pair#*:}"
        fi
    done
    if [ -z "$missing" ]; then
        return 0
    fi
    step "Installing missing programs' Debian packages:$missing"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    run $sudo apt-get update
    # shellcheck disable=SC2086 # the list is meant to split into words
    run env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing
}

# Configures build directory $1 with the remaining arguments, or
# reconfigures it if it exists (so the scripts can run again).
configure() {
    dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        run meson setup --reconfigure "$dir" "$@"
    else
        run meson setup "$dir" "$@"
    fi
}
