//! ProjectFiles and the access policy called directly: the directory and
//! memory backends, a host-supplied one implemented as a Rust trait
//! (answered at once, later, after a cancel, by a panicking backend), the
//! policy's verdicts and its refusals; each error with the library's
//! message.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::rc::Rc;

use jptool::{
    normalize_path, Access, Check, DirEntry, DirOptions, ErrorKind, FileKind, Files, FilesBackend,
    FilesRequest, Metadata, Policy, Verdict,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("jptool-rust-files-{}-{}", what, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The methods on a backend, the same answers whichever it is.
fn exercise(files: &Files) {
    files.write("src/main.rs", b"fn main() {}\n").unwrap();
    files.write("bin/blob", b"\0\x01\x02").unwrap();
    let text = files.read("src/main.rs", None).unwrap();
    assert_eq!(
        (text.data.as_slice(), text.utf8),
        (&b"fn main() {}\n"[..], true)
    );
    let blob = files.read("bin/blob", None).unwrap();
    assert_eq!(
        (blob.data.as_slice(), blob.utf8),
        (&b"\0\x01\x02"[..], false)
    );
    let e = files.read("src/main.rs", Some(4)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().starts_with("fs.read 'src/main.rs': "), "{}", e);
    assert!(files.exists("src").unwrap());
    assert!(!files.exists("nope").unwrap());
    assert_eq!(
        files.metadata("src/main.rs").unwrap(),
        Metadata {
            kind: FileKind::File,
            size: 13
        }
    );
    assert_eq!(files.metadata("src").unwrap().kind, FileKind::Dir);
    assert_eq!(
        files.list_dir(".").unwrap(),
        vec![
            DirEntry {
                name: "bin".into(),
                kind: FileKind::Dir
            },
            DirEntry {
                name: "src".into(),
                kind: FileKind::Dir
            }
        ]
    );
    files.rename("src/main.rs", "src/lib.rs").unwrap();
    let e = files.rename("bin/blob", "src/lib.rs").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Exists);
    assert_eq!(
        files
            .grep(r#"{"pattern":"fn \\w+","paths":["src"]}"#)
            .unwrap(),
        r#"{"matches":[{"path":"src/lib.rs","lines":[{"line_number":1,"content":"fn main() {}","is_match":true}]}],"truncated":false}"#
    );
    assert_eq!(
        files.call("fs.exists", r#"{"path":"src/lib.rs"}"#).unwrap(),
        r#"{"exists":true}"#
    );
    files.delete("src/lib.rs").unwrap();
    let e = files.read("src/lib.rs", None).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (ErrorKind::NotFound, "fs.read 'src/lib.rs': not found")
    );
    let e = files.read("../etc/passwd", None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message().starts_with("fs.read '../etc/passwd': "),
        "{}",
        e
    );
    let e = files.call("fs.chmod", "{}").unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (ErrorKind::Unsupported, "unknown method 'fs.chmod'")
    );
    assert_eq!(
        files.write("a\0b", b"").unwrap_err().message(),
        "the path holds a NUL byte, which jptool's C strings cannot carry"
    );
}

#[test]
fn directory_backend_serves_every_method_beneath_its_root() {
    let dir = TempDir::new("dir");
    let files = Files::open_dir_with(
        &dir.0,
        DirOptions {
            fsync: true,
            ..DirOptions::default()
        },
    )
    .unwrap();
    exercise(&files);
    assert_eq!(
        std::fs::read(dir.0.join("bin/blob")).unwrap(),
        b"\0\x01\x02"
    );
    // A symlink out of the root is refused wherever it is met.
    std::os::unix::fs::symlink("/etc", dir.0.join("out")).unwrap();
    assert_eq!(
        files.read("out/passwd", None).unwrap_err().kind(),
        ErrorKind::Denied
    );
}

#[test]
fn memory_backend_serves_the_same() {
    exercise(&Files::memory().unwrap());
}

#[test]
fn constructors_fail_with_the_library_message() {
    let e = Files::open_dir("/nonexistent/jptool").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.message().contains("/nonexistent/jptool"), "{}", e);
    assert_eq!(e.message(), jptool::last_error());
}

/// A backend over a memory one, which answers fs.exists at once and
/// keeps the rest for later; it records cancels and its own drop.
struct Store {
    inner: Files,
    later: RefCell<Vec<FilesRequest>>,
    cancelled: RefCell<Vec<u64>>,
    dropped: Rc<Cell<bool>>,
}

struct StoreBackend(Rc<Store>);

impl FilesBackend for StoreBackend {
    fn call(&self, request: FilesRequest) {
        match request.method() {
            "fs.exists" => {
                let result = self
                    .0
                    .inner
                    .call(request.method(), request.params_json())
                    .unwrap();
                request.reply(&result).unwrap();
            }
            "fs.delete" => panic!("the backend panicked"),
            "fs.rename" => drop(request),
            _ => self.0.later.borrow_mut().push(request),
        }
    }

    fn cancel(&self, id: u64) {
        self.0.cancelled.borrow_mut().push(id);
    }
}

impl Drop for StoreBackend {
    fn drop(&mut self) {
        self.0.dropped.set(true);
    }
}

#[test]
fn host_supplied_backend_answers_now_or_later() {
    let dropped = Rc::new(Cell::new(false));
    let store = Rc::new(Store {
        inner: Files::memory().unwrap(),
        later: RefCell::default(),
        cancelled: RefCell::default(),
        dropped: dropped.clone(),
    });
    store.inner.write("a.txt", b"A").unwrap();
    let files = Files::from_backend(StoreBackend(store.clone())).unwrap();

    // Answered inside the call: the direct call gets the answer.
    assert!(files.exists("./a.txt").unwrap());
    // Not answered inside the call: Again, and the request is cancelled,
    // which the backend hears of; it must still be answered.
    let e = files.read("a.txt", None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Again);
    let request = store.later.borrow_mut().pop().unwrap();
    assert_eq!(request.method(), "fs.read");
    assert_eq!(request.params_json(), r#"{"path":"a.txt"}"#);
    assert!(request.is_cancelled());
    assert_eq!(*store.cancelled.borrow(), vec![request.id()]);
    // A result of the wrong shape is refused, and fails the request.
    let e = request.reply(r#"{"text":"A"}"#).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);

    // Dropped unanswered: the request fails, the call with it.
    let e = files.rename("a.txt", "b.txt").unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            ErrorKind::Cancelled,
            "fs.rename 'a.txt': the host dropped the request unanswered"
        )
    );
    // A panic fails the request and resumes from the call.
    let payload = panic::catch_unwind(AssertUnwindSafe(|| files.delete("a.txt"))).unwrap_err();
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the backend panicked")
    );
    assert!(files.exists("a.txt").unwrap());

    // The backend goes once the Files is dropped and nothing is pending.
    let e = files.write("b.txt", b"B").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Again);
    drop(files);
    assert!(!dropped.get(), "a request is still unanswered");
    let request = store.later.borrow_mut().pop().unwrap();
    request.fail(ErrorKind::Denied, "read-only store").unwrap();
    assert!(dropped.get());
}

#[test]
fn policy_gives_verdicts_with_reasons() {
    let policy = Policy::new(Some(
        r#"{"filesystem":{"allow":["src"],"writable":["out"],"deny":["src/private"]},
            "commands":{"cargo":{"args":[["check","**"]]}}}"#,
    ))
    .unwrap();
    let check = |access, target: &str| policy.check(access, target).unwrap();
    assert_eq!(
        check(Access::Read, "src/main.rs"),
        Check {
            verdict: Verdict::Allow,
            reason: "fs.read 'src/main.rs': allowed: under 'src' in filesystem.allow".into()
        }
    );
    assert_eq!(
        check(Access::Read, "src/private/key").verdict,
        Verdict::Deny
    );
    assert_eq!(check(Access::Read, ".env").verdict, Verdict::Deny);
    assert_eq!(check(Access::Write, "out/x").verdict, Verdict::Allow);
    assert_eq!(check(Access::Write, "src/main.rs").verdict, Verdict::Ask);
    assert_eq!(
        check(Access::Process, r#"["cargo","check","--all"]"#).verdict,
        Verdict::Allow
    );
    assert_eq!(
        check(Access::Process, r#"["cargo","publish"]"#).verdict,
        Verdict::Ask
    );
    assert_eq!(
        check(Access::Http, "https://example.com/").verdict,
        Verdict::Ask
    );
    assert!(!policy.hardlinks_allowed());
    let e = policy.check(Access::Process, "cargo").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);

    // The policy is Send and Sync: checked from another thread.
    let shared = std::sync::Arc::new(policy);
    let other = shared.clone();
    let verdict = std::thread::spawn(move || other.check(Access::List, "src").unwrap().verdict)
        .join()
        .unwrap();
    assert_eq!(verdict, Verdict::Allow);
}

#[test]
fn refused_policies_and_paths_carry_the_library_message() {
    let e = Policy::new(Some(r#"{"filesystem":{"allow":["/etc"]}}"#)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(
        e.message()
            .contains("filesystem.allow[0]: '/etc' is absolute"),
        "{}",
        e
    );
    let e = Policy::new(Some("{")).unwrap_err();
    assert!(e.message().starts_with("sandbox: invalid JSON"), "{}", e);
    assert!(Policy::new(Some(r#"{"filesystem":{"hardlinks":"allow"}}"#))
        .unwrap()
        .hardlinks_allowed());
    assert_eq!(normalize_path("./src//a/../b/").unwrap(), "src/b");
    assert_eq!(normalize_path("").unwrap(), ".");
    let e = normalize_path("../x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), jptool::last_error());
    assert!(!e.message().is_empty());
}
