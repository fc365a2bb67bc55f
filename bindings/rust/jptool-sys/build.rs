//! Links libjptool. Where the library is, in this order:
//!  - JPTOOL_LIB_DIR, a directory holding libjptool.so (the meson test sets
//!    it to the build tree's lib/);
//!  - `pkg-config --libs-only-L jptool`, when pkg-config knows jptool (an
//!    install under a prefix the linker does not search, or
//!    PKG_CONFIG_PATH=build/meson-uninstalled for the build tree);
//!  - otherwise the linker's default path (/usr/lib, /usr/local/lib).
//!
//! At run time the dynamic linker finds libjptool.so.0 as usual
//! (ldconfig, or LD_LIBRARY_PATH for a build tree).

use std::env;
use std::process::Command;

fn pkg_config_dirs() -> Vec<String> {
    let output = match Command::new("pkg-config")
        .args(["--libs-only-L", "jptool"])
        .output()
    {
        Ok(output) if output.status.success() => output,
        _ => return Vec::new(),
    };
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(str::to_owned)
        .collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=JPTOOL_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dirs = match env::var("JPTOOL_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => vec![dir],
        _ => pkg_config_dirs(),
    };
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=jptool");
    // For the build scripts of crates that depend on this one (links =
    // "jptool": DEP_JPTOOL_LIB_DIRS): the jptool crate gives its own tests
    // and examples an rpath there, so that a VFS tool written with it
    // finds the library in the OS sandbox's clean environment.
    println!("cargo:lib_dirs={}", dirs.join(":"));
}
