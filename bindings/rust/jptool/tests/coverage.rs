//! Every function libjptool exports (the version script, lib/jptool.sym)
//! has a safe wrapper here, or a documented reason to have none: the
//! crate's source (comments left out) calls it as `sys::jpt_…(`, or
//! `jptool::UNWRAPPED` lists it with a reason. Also the other way: an
//! UNWRAPPED entry names an exported function, has a reason, and is not
//! called after all (a stale entry hides nothing). A function the library
//! adds fails this test until it is wrapped or listed.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `text` without its `/* … */` comments.
fn without_block_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = match rest[start..].find("*/") {
            Some(end) => &rest[start + end + 2..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The names in the `global:` parts of the version script's nodes.
fn exported(script: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut global = false;
    for line in without_block_comments(script).lines() {
        let line = line.trim();
        if line == "global:" {
            global = true;
        } else if line == "local:" || line.starts_with('}') {
            global = false;
        } else if global && !line.is_empty() {
            let name = line.trim_end_matches(';').trim();
            assert!(
                name.starts_with("jpt_")
                    && name.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric()),
                "lib/jptool.sym: '{}' is not a jpt_ function name",
                line
            );
            names.insert(name.to_owned());
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("the crate's src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().map_or(false, |e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `jpt_` functions the crate's source calls through `sys::`, line
/// comments (doc comments included) and block comments left out.
fn called(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut names = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("a source file");
        // Line comments first: a doc comment may hold "/*" (a glob).
        let lines: Vec<&str> = text
            .lines()
            .map(|line| line.find("//").map_or(line, |i| &line[..i]))
            .collect();
        let code = without_block_comments(&lines.join("\n"));
        let mut rest = code.as_str();
        while let Some(i) = rest.find("sys::jpt_") {
            rest = &rest[i + "sys::".len()..];
            let end = rest
                .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                .unwrap_or(rest.len());
            if rest[end..].trim_start().starts_with('(') {
                names.insert(rest[..end].to_owned());
            }
            rest = &rest[end..];
        }
    }
    names
}

#[test]
fn every_exported_function_is_wrapped_or_listed_with_a_reason() {
    let script_path = crate_dir().join("../../../lib/jptool.sym");
    let script = fs::read_to_string(&script_path)
        .unwrap_or_else(|e| panic!("{}: {}", script_path.display(), e));
    let exported = exported(&script);
    let called = called(&crate_dir().join("src"));
    let unwrapped: BTreeSet<String> = jptool::UNWRAPPED.iter().map(|u| u.0.to_owned()).collect();

    for (name, reason) in jptool::UNWRAPPED {
        assert!(
            exported.contains(*name),
            "UNWRAPPED lists {}, which the library does not export",
            name
        );
        assert!(
            !reason.trim().is_empty(),
            "UNWRAPPED gives no reason for {}",
            name
        );
        assert!(
            !called.contains(*name),
            "UNWRAPPED lists {}, but the crate calls it",
            name
        );
    }
    let wrapped: Vec<&String> = exported.iter().filter(|n| called.contains(*n)).collect();
    let missing: Vec<&String> = exported
        .iter()
        .filter(|n| !called.contains(*n) && !unwrapped.contains(*n))
        .collect();
    println!(
        "lib/jptool.sym exports {} functions: {} wrapped, {} not wrapped with a reason, {} missing",
        exported.len(),
        wrapped.len(),
        unwrapped.len(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "exported functions with no safe wrapper and no reason in jptool::UNWRAPPED: {:?}",
        missing
    );
}

/// The check itself: a script with a function nobody calls fails it, and
/// comments do not count as calls.
#[test]
fn the_check_finds_a_function_without_a_wrapper() {
    let script =
        "/* jpt_in_a_comment; */\nJPTOOL_0.1 {\nglobal:\n\tjpt_version;\nlocal:\n\t*;\n};\n\
                  JPTOOL_9.9 {\nglobal:\n\tjpt_not_wrapped_anywhere;\n} JPTOOL_0.1;\n";
    let exported = exported(script);
    assert_eq!(
        exported.iter().map(String::as_str).collect::<Vec<_>>(),
        vec!["jpt_not_wrapped_anywhere", "jpt_version"]
    );
    let crate_calls = called(&crate_dir().join("src"));
    assert!(crate_calls.contains("jpt_version"));
    assert!(!crate_calls.contains("jpt_not_wrapped_anywhere"));
    // lib.rs mentions jpt_free in its docs; the call is what counts.
    let dir = std::env::temp_dir().join(format!("jptool-coverage-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("a.rs"),
        "// sys::jpt_commented_out();\n/// sys::jpt_in_docs()\n/* sys::jpt_in_a_block() */\n\
         fn f() { unsafe { sys::jpt_called (x) }; let g = sys::jpt_not_a_call; }\n",
    )
    .unwrap();
    let found = called(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        vec!["jpt_called".to_owned()]
    );
}
