//! The jptool crate's own tests and examples find libjptool where
//! jptool-sys linked it (JPTOOL_LIB_DIR, or pkg-config's directory) by
//! an rpath, not only by LD_LIBRARY_PATH: the VFS tools among them run in
//! the OS sandbox with a clean environment (PATH alone). A crate that
//! depends on jptool links as jptool-sys says, without this rpath
//! (cargo passes rustc-link-arg to this package's own targets only).

use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_JPTOOL_LIB_DIRS");
    let dirs = env::var("DEP_JPTOOL_LIB_DIRS").unwrap_or_default();
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
