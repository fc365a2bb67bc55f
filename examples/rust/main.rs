//! jptool from Rust through bindgen: the bindings are generated from
//! include/jptool/jptool.h (see build.sh) and included here. The example
//! parses a tool's output and renders it for the model, then runs a one-shot
//! call through a registry, the way a Rust agent host would.
//!
//! Build: examples/rust/build.sh OUT_DIR LIBDIR INCLUDEDIR (needs bindgen
//! and rustc; run by `meson test rust` where both exist).

#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]

mod ffi {
    include!(env!("JPTOOL_BINDINGS"));
}

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;

/// A string the library handed over: copied, then freed with jpt_free.
fn take_string(p: *mut c_char) -> String {
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { ffi::jpt_free(p as *mut std::ffi::c_void) };
    s
}

fn check(status: i32, what: &str) {
    if status != ffi::JPT_OK as i32 {
        let text = unsafe { CStr::from_ptr(ffi::jpt_strerror(status)) };
        panic!("{}: {}", what, text.to_string_lossy());
    }
}

fn render(output: &str) -> String {
    let mut state: *mut ffi::jpt_state = ptr::null_mut();
    check(
        unsafe { ffi::jpt_state_parse(output.as_ptr() as *const c_char, output.len(), 0, &mut state) },
        "jpt_state_parse",
    );
    let root = CString::new("/project").unwrap();
    let opts = ffi::jpt_render_options {
        size: std::mem::size_of::<ffi::jpt_render_options>(),
        root: root.as_ptr(),
    };
    let mut text: *mut c_char = ptr::null_mut();
    check(unsafe { ffi::jpt_state_render(state, &opts, &mut text) }, "jpt_state_render");
    unsafe { ffi::jpt_state_unref(state) };
    take_string(text)
}

fn one_shot(command: &str) -> String {
    let mut r: *mut ffi::jpt_registry = ptr::null_mut();
    check(unsafe { ffi::jpt_registry_new(ptr::null(), &mut r) }, "jpt_registry_new");
    let tools = CString::new(format!(
        r#"{{"tools":[{{"name":"shout","command":["sh","-c","{}"]}}]}}"#,
        command
    ))
    .unwrap();
    check(unsafe { ffi::jpt_registry_load_tools(r, tools.as_ptr(), 0) }, "load_tools");
    let calls = CString::new(r#"[{"id":"c1","name":"shout","arguments":{}}]"#).unwrap();
    let mut batch: *mut ffi::jpt_batch = ptr::null_mut();
    check(unsafe { ffi::jpt_registry_submit(r, calls.as_ptr(), &mut batch) }, "submit");
    check(unsafe { ffi::jpt_registry_wait(r, batch, 10_000) }, "wait");
    let mut results: *mut c_char = ptr::null_mut();
    check(unsafe { ffi::jpt_batch_results_json(batch, &mut results) }, "results");
    unsafe {
        ffi::jpt_batch_free(batch);
        ffi::jpt_registry_free(r);
    }
    take_string(results)
}

fn main() {
    let version = unsafe { CStr::from_ptr(ffi::jpt_version()) };
    println!("jptool {}", version.to_string_lossy());

    let rendered = render(
        r#"{"content":[{"type":"resource","resource":{"uri":"file:///project/src/lib.rs","mimeType":"text/rust","text":"pub fn f() {}\n"}}]}"#,
    );
    assert_eq!(rendered, "src/lib.rs:\n```rs\npub fn f() {}\n```");
    println!("{}", rendered);

    let results = one_shot("echo hello from rust");
    assert_eq!(results, r#"[{"id":"c1","content":"hello from rust\n","is_error":false}]"#);
    println!("{}", results);
}
