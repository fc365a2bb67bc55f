//! VFS tools written in Rust with `jptool::VfsTool`, run as real tool
//! processes: this test program is also the tool (`--vfs-tool MODE`), so
//! the host spawns a Rust program built on the crate, in the OS sandbox
//! in required mode, under a `VfsHost` and under a `Registry`; policy
//! prompts are answered by closures, at once and later; files come from
//! a memory backend, a directory, and a host-supplied `FilesBackend`
//! answering at once and later. A tool on attached fds runs in a thread
//! of this process instead (process.run, http, errors).
//!
//! Its own harness (`harness = false` in Cargo.toml): the tool mode must
//! decide before any test runs. Every wait is bounded; nothing sleeps.
//! At the end, no fd is left open and no child unreaped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use jptool::{
    ConnectOptions, Enforced, ErrorKind, Files, FilesBackend, FilesRequest, GrepQuery, Kind,
    PolicyRequest, Registry, RegistryOptions, RequestTimeout, SandboxMode, VfsHost, VfsHostOptions,
    VfsTool,
};

/// Generous: a bound against hangs, never a measure.
const LIMIT: Option<Duration> = Some(Duration::from_secs(60));

// ---- The tool side ----------------------------------------------------------------

/// The tool's modes; each ends with a result (or an error) that says what
/// it saw, one "key: value" line per step.
fn tool_main(mode: &str) -> i32 {
    let pending = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = pending.clone();
    let options = ConnectOptions::default().on_pending(move |_, _| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let mut tool = match VfsTool::connect_with(options) {
        Ok(tool) => tool,
        Err(e) => {
            eprintln!("connect: {}", e);
            return 2;
        }
    };
    let count = move || pending.load(std::sync::atomic::Ordering::SeqCst);
    let report = match mode {
        "explore" => explore(&mut tool, &count),
        "ask" => ask(&mut tool, &count),
        "stateful" => stateful(&mut tool),
        "secret" => secret(&mut tool),
        other => Err(format!("unknown mode {}", other)),
    };
    let sent = match report {
        Ok(text) => tool.result_text(&text),
        Err(text) => tool.error(&text, &["the test tool"], false),
    };
    match sent {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sending the result: {}", e);
            1
        }
    }
}

fn step<T>(what: &str, r: jptool::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{}: {}", what, e))
}

/// Reads, lists, greps and writes through the host; and checks that the
/// OS sandbox holds: no file and no socket of its own.
fn explore(tool: &mut VfsTool<'_>, pending: &dyn Fn() -> usize) -> Result<String, String> {
    let mut out = vec![
        format!("name: {}", tool.name()),
        format!("arguments: {}", tool.arguments()),
        format!("protocol: {}", tool.protocol_version()),
    ];
    let text = step("read", tool.read("src/a.txt"))?;
    out.push(format!("read: {}", String::from_utf8_lossy(&text)));
    out.push(format!(
        "exists: {}",
        step("exists", tool.exists("src/a.txt"))?
    ));
    out.push(format!("missing: {}", step("exists", tool.exists("nope"))?));
    let m = step("metadata", tool.metadata("src/a.txt"))?;
    out.push(format!("metadata: {:?} {}", m.kind, m.size));
    out.push(format!("list: {}", step("list_dir", tool.list_dir("src"))?));
    let mut query = GrepQuery::new("hel+o");
    query.paths = vec!["src".into()];
    out.push(format!("grep: {}", step("grep", tool.grep(&query))?));
    // Pipelined: both outstanding, collected in the other order.
    let r = step("submit_read", tool.submit_read("src/a.txt"))?;
    let x = step(
        "submit",
        tool.submit("fs.exists", Some(r#"{"path":"src"}"#)),
    )?;
    out.push(format!("collect: {}", step("collect", tool.collect(x))?));
    let bytes = step("collect_read", tool.collect_read(r))?;
    out.push(format!("collect_read: {}", bytes.len()));
    let e = tool.collect(r).unwrap_err();
    out.push(format!(
        "collected twice: {:?} rpc {:?}",
        e.kind(),
        e.rpc_code()
    ));
    let e = tool.read("src/none.txt").unwrap_err();
    out.push(format!(
        "read missing: {:?} rpc {:?}: {}",
        e.kind(),
        e.rpc_code(),
        e.message()
    ));
    // Uncovered by the policy: the host's handler is asked, and the tool
    // told `pending` meanwhile.
    step("write", tool.write("notes.txt", b"written by a Rust tool"))?;
    out.push(format!("pending: {}", pending()));
    // The OS sandbox: the protocol is the only way out.
    out.push(format!(
        "open /etc/passwd: {}",
        match std::fs::read("/etc/passwd") {
            Ok(_) => "allowed".to_owned(),
            Err(e) => format!("{:?}", e.kind()),
        }
    ));
    out.push(format!(
        "socket: {}",
        match std::net::TcpListener::bind("127.0.0.1:0") {
            Ok(_) => "allowed".to_owned(),
            Err(e) => format!("{:?}", e.kind()),
        }
    ));
    Ok(out.join("\n"))
}

/// A write the policy asks about: what the host's answer was.
fn ask(tool: &mut VfsTool<'_>, pending: &dyn Fn() -> usize) -> Result<String, String> {
    let answer = match tool.write("notes.txt", b"x") {
        Ok(()) => "allowed".to_owned(),
        Err(e) => format!("{:?} rpc {:?}: {}", e.kind(), e.rpc_code(), e.message()),
    };
    Ok(format!("write: {}\npending: {}", answer, pending()))
}

/// What the policy must refuse whatever the backend: a sensitive file,
/// and a write to a read-only workspace with no handler to ask.
fn secret(tool: &mut VfsTool<'_>) -> Result<String, String> {
    let outcome = |r: jptool::Result<()>| match r {
        Ok(()) => "allowed".to_owned(),
        Err(e) => format!("{:?}", e.kind()),
    };
    let read = outcome(tool.read(".env").map(drop));
    let write = outcome(tool.write("notes.txt", b"x"));
    Ok(format!("read .env: {}\nwrite: {}", read, write))
}

/// RFD 009 through D11: a state per input, until "quit".
fn stateful(tool: &mut VfsTool<'_>) -> Result<String, String> {
    step(
        "state",
        tool.state(r#"{"type":"running","content":"ready"}"#),
    )?;
    let mut inputs = 0;
    loop {
        let input = step("next_input", tool.next_input())?;
        if input == r#""quit""# {
            return Ok(format!("bye after {} inputs", inputs));
        }
        inputs += 1;
        let state = format!(
            r#"{{"type":"running","content":"got {}"}}"#,
            input.replace('\\', "\\\\").replace('"', "\\\"")
        );
        step("state", tool.state(&state))?;
    }
}

// ---- The host side ------------------------------------------------------------------

/// This program as the tool, in `mode`.
fn tool_argv(mode: &str) -> Vec<String> {
    let exe = std::env::current_exe().expect("the test program's path");
    vec![exe.display().to_string(), "--vfs-tool".into(), mode.into()]
}

/// Where the library lives when it is not a system one (the build tree):
/// the tool's OS sandbox must let it read it.
fn sandbox_read() -> Vec<PathBuf> {
    std::env::var_os("JPTOOL_LIB_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| vec![std::fs::canonicalize(d).expect("JPTOOL_LIB_DIR")])
        .unwrap_or_default()
}

fn json_list(paths: &[PathBuf]) -> String {
    let items: Vec<String> = paths
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    format!("[{}]", items.join(","))
}

/// The workspace the tools see, in `files`.
fn fill(files: &Files) {
    files.write("src/a.txt", b"hello from files\n").unwrap();
    files.write("src/b.txt", b"nothing here\n").unwrap();
}

fn memory_files() -> Files {
    let files = Files::memory().unwrap();
    fill(&files);
    files
}

/// A temporary directory holding the workspace, and its backend.
fn dir_files(what: &str) -> (TempDir, Files) {
    let dir = TempDir::new(what);
    let files = Files::open_dir(&dir.0).unwrap();
    fill(&files);
    (dir, files)
}

/// The text of the tool's final state.
fn final_text(host: &VfsHost) -> String {
    let state = host.state().unwrap().expect("the tool reported");
    assert_eq!(state.kind(), Kind::Stopped);
    let text = state.render(None).unwrap();
    assert!(!state.is_error(), "{}", text);
    text
}

fn vfs_host_spawns_a_rust_tool_in_the_required_sandbox() {
    let (dir, files) = dir_files("explore");
    let host = VfsHost::with_options(&VfsHostOptions {
        files: Some(files.clone()),
        sandbox_mode: SandboxMode::Required,
        sandbox_read: sandbox_read(),
        request_timeout: RequestTimeout::After(Duration::from_secs(60)),
        ..VfsHostOptions::default()
    })
    .unwrap();
    let asked = Rc::new(RefCell::new(Vec::new()));
    let log = asked.clone();
    host.set_policy_handler(move |request: PolicyRequest| {
        log.borrow_mut().push(format!(
            "{} {} {} {:?} {:?} {}",
            request.tool(),
            request.method(),
            request.path(),
            request.access(),
            request.id(),
            request.reason()
        ));
        request.allow().unwrap();
    });
    host.spawn(
        &tool_argv("explore"),
        r#"{"name":"explorer","arguments":{"n":1}}"#,
    )
    .unwrap();
    let sandbox = host.sandbox().unwrap();
    assert!(
        sandbox
            .enforced
            .contains(Enforced::NO_NEW_PRIVS | Enforced::SECCOMP | Enforced::FILES),
        "{:?}: {}",
        sandbox.enforced,
        sandbox.report
    );
    host.run(LIMIT).unwrap();
    assert!(host.is_done());
    assert_eq!(
        final_text(&host),
        "name: explorer\n\
         arguments: {\"n\":1}\n\
         protocol: 0.1.0\n\
         read: hello from files\n\n\
         exists: true\n\
         missing: false\n\
         metadata: File 17\n\
         list: [{\"path\":\"a.txt\",\"kind\":\"file\"},{\"path\":\"b.txt\",\"kind\":\"file\"}]\n\
         grep: {\"matches\":[{\"path\":\"src/a.txt\",\"lines\":[{\"line_number\":1,\"content\":\"hello from files\",\"is_match\":true}]}],\"truncated\":false}\n\
         collect: {\"exists\":true}\n\
         collect_read: 17\n\
         collected twice: NotFound rpc None\n\
         read missing: NotFound rpc Some(-32002): fs.read 'src/none.txt': not found\n\
         pending: 1\n\
         open /etc/passwd: PermissionDenied\n\
         socket: PermissionDenied"
    );
    assert_eq!(
        *asked.borrow(),
        vec!["explorer fs.write notes.txt Some(Write) None needs approval: not covered by the policy (the workspace is read-only: filesystem.writable is false)".to_owned()]
    );
    assert_eq!(
        std::fs::read(dir.0.join("notes.txt")).unwrap(),
        b"written by a Rust tool"
    );
}

fn policy_request_kept_and_denied_later() {
    let (dir, files) = dir_files("later");
    // The tool writes notes.txt, a link to docs/notes.md: the request
    // names both (what it touches, and what the tool wrote).
    std::fs::create_dir(dir.0.join("docs")).unwrap();
    std::os::unix::fs::symlink("docs/notes.md", dir.0.join("notes.txt")).unwrap();
    let host = VfsHost::with_options(&VfsHostOptions {
        files: Some(files),
        sandbox_read: sandbox_read(),
        ..VfsHostOptions::default()
    })
    .unwrap();
    let held: Rc<RefCell<Vec<PolicyRequest>>> = Rc::default();
    let keep = held.clone();
    host.set_policy_handler(move |request| keep.borrow_mut().push(request));
    host.spawn(&tool_argv("ask"), r#"{"name":"asker"}"#)
        .unwrap();
    while held.borrow().is_empty() {
        poll_step(host.as_raw_fd(), host.timeout());
        while host.dispatch().unwrap() {}
    }
    assert!(!host.is_done());
    let request = held.borrow_mut().pop().unwrap();
    assert_eq!(
        (request.method(), request.path(), request.requested_path()),
        ("fs.write", "docs/notes.md", "notes.txt")
    );
    request.deny(Some("not today")).unwrap();
    host.run(LIMIT).unwrap();
    assert_eq!(
        final_text(&host),
        "write: Denied rpc Some(-32001): fs.write 'notes.txt': denied by the host: not today\npending: 1"
    );
}

fn policy_handler_panic_denies_and_resumes_in_run() {
    let (_dir, files) = dir_files("panic");
    let host = VfsHost::with_options(&VfsHostOptions {
        files: Some(files),
        sandbox_read: sandbox_read(),
        ..VfsHostOptions::default()
    })
    .unwrap();
    host.set_policy_handler(|_| panic!("the policy handler panicked"));
    host.spawn(&tool_argv("ask"), r#"{"name":"asker"}"#)
        .unwrap();
    let payload = panic::catch_unwind(AssertUnwindSafe(|| host.run(LIMIT))).unwrap_err();
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"the policy handler panicked")
    );
    host.clear_policy_handler();
    host.run(LIMIT).unwrap();
    assert_eq!(
        final_text(&host),
        "write: Denied rpc Some(-32001): fs.write 'notes.txt': denied by the host: the host's policy handler panicked\npending: 1"
    );
}

/// A host-supplied backend over a memory one: fs.read answered inside
/// the call, the rest queued and answered later, from the host's loop.
struct Deferred {
    inner: Files,
    queue: RefCell<VecDeque<FilesRequest>>,
    methods: RefCell<Vec<String>>,
}

struct DeferredBackend(Rc<Deferred>);

impl FilesBackend for DeferredBackend {
    fn call(&self, request: FilesRequest) {
        self.0
            .methods
            .borrow_mut()
            .push(request.method().to_owned());
        if request.method() == "fs.read" {
            answer(&self.0.inner, request);
        } else {
            self.0.queue.borrow_mut().push_back(request);
        }
    }
}

fn answer(inner: &Files, request: FilesRequest) {
    match inner.call(request.method(), request.params_json()) {
        Ok(result) => request.reply(&result).unwrap(),
        Err(e) => request.fail(e.kind(), e.message()).unwrap(),
    }
}

fn registry_runs_rust_vfs_tools_on_a_host_supplied_backend() {
    let deferred = Rc::new(Deferred {
        inner: memory_files(),
        queue: RefCell::default(),
        methods: RefCell::default(),
    });
    let store = Files::from_backend(DeferredBackend(deferred.clone())).unwrap();
    let root = TempDir::new("registry");
    let r = Registry::with_options(&RegistryOptions {
        root: Some(root.0.clone()),
        sandbox_mode: SandboxMode::Required,
        ..RegistryOptions::default()
    })
    .unwrap();
    r.add_files("store", &store).unwrap();
    drop(store); // the registry holds its own reference
    let read = json_list(&sandbox_read());
    let exe = std::env::current_exe().unwrap().display().to_string();
    r.load_tools(&format!(
        r#"{{"tools":[
            {{"name":"explorer","runtime":"vfs","files":"store","command":[{exe:?},"--vfs-tool","explore"],
              "os_sandbox":{{"mode":"required","read":{read}}}}},
            {{"name":"counter","runtime":"vfs","stateful":true,"files":"store",
              "command":[{exe:?},"--vfs-tool","stateful"],"os_sandbox":{{"read":{read}}}}},
            {{"name":"writer","runtime":"vfs","command":[{exe:?},"--vfs-tool","ask"],
              "os_sandbox":{{"read":{read}}}}}]}}"#,
        exe = exe,
        read = read
    ))
    .unwrap();
    let report = r.tool_sandbox("explorer").unwrap();
    assert!(
        report
            .enforced
            .contains(Enforced::SECCOMP | Enforced::FILES),
        "{}",
        report.report
    );
    assert_eq!(
        r.tool_sandbox("nope").unwrap_err().message(),
        "tool_sandbox: no tool 'nope'"
    );
    let ids = Rc::new(RefCell::new(Vec::new()));
    let log = ids.clone();
    r.set_policy_handler(move |request| {
        log.borrow_mut().push(request.id().map(str::to_owned));
        request.allow_always().unwrap();
    });

    let run = |calls: &str| -> String {
        let batch = r.submit(calls).unwrap();
        while !batch.is_done() {
            poll_step(r.as_raw_fd(), r.timeout());
            while r.dispatch().unwrap() {}
            // The backend's later answers, from the host's loop.
            while let Some(request) = deferred.queue.borrow_mut().pop_front() {
                answer(&deferred.inner, request);
            }
        }
        batch.results_json().unwrap()
    };
    let one_shot = run(r#"[{"id":"c1","name":"explorer","arguments":{}}]"#);
    assert!(one_shot.starts_with(r#"[{"id":"c1","content":"name: explorer\narguments: {}\nprotocol: 0.1.0\nread: hello from files\n\nexists: true\n"#), "{}", one_shot);
    assert!(
        one_shot.ends_with(
            r#"open /etc/passwd: PermissionDenied\nsocket: PermissionDenied","is_error":false}]"#
        ),
        "{}",
        one_shot
    );
    assert_eq!(
        deferred.inner.read("notes.txt", None).unwrap().data,
        b"written by a Rust tool"
    );
    assert!(deferred.methods.borrow().contains(&"fs.write".to_owned()));
    // Answered at once (fs.read) and later (the rest).
    assert!(deferred.methods.borrow().contains(&"fs.read".to_owned()));

    // The registry's policy handler, for a tool on the registry's root.
    assert_eq!(
        run(r#"[{"id":"w1","name":"writer","arguments":{}}]"#),
        r#"[{"id":"w1","content":"write: allowed\npending: 1","is_error":false}]"#
    );
    // Each request names its call (the explorer's write on the store is
    // asked about too: the library checks every backend).
    assert_eq!(ids.borrow().last(), Some(&Some("w1".to_owned())));
    assert!(
        ids.borrow()
            .iter()
            .all(|id| matches!(id.as_deref(), Some("c1") | Some("w1"))),
        "{:?}",
        ids.borrow()
    );
    assert_eq!(std::fs::read(root.0.join("notes.txt")).unwrap(), b"x");

    assert_eq!(
        run(r#"[{"id":"s1","name":"counter","arguments":{"action":"spawn","id":"n"}}]"#),
        r#"[{"id":"s1","content":"{\"id\":\"n\",\"state\":\"running\",\"content\":\"ready\"}","is_error":false}]"#
    );
    assert_eq!(
        run(
            r#"[{"id":"s2","name":"counter","arguments":{"action":"apply","id":"n","input":"hi"}}]"#
        ),
        r#"[{"id":"s2","content":"{\"id\":\"n\",\"state\":\"running\",\"content\":\"got \\\"hi\\\"\"}","is_error":false}]"#
    );
    assert_eq!(
        run(
            r#"[{"id":"s3","name":"counter","arguments":{"action":"apply","id":"n","input":"quit"}},
                {"id":"s4","name":"await","arguments":{"all":["n"]}}]"#
        ),
        r#"[{"id":"s3","content":"{\"id\":\"n\",\"state\":\"stopped\",\"result\":\"bye after 1 inputs\"}","is_error":false},{"id":"s4","content":"{\"completed\":[{\"id\":\"n\",\"state\":\"stopped\",\"result\":\"bye after 1 inputs\"}],\"pending\":[]}","is_error":false}]"#
    );
}

/// A tool on attached fds, in a thread of this process: the host's
/// processes, its HTTP refusal and error codes, through the directory
/// backend.
fn attached_tool_runs_processes_and_is_refused_http() {
    let dir = TempDir::new("attached");
    std::fs::write(dir.0.join("data.txt"), "one\ntwo\n").unwrap();
    let host = VfsHost::with_options(&VfsHostOptions {
        root: Some(dir.0.clone()),
        sandbox_json: Some(
            r#"{"commands":{"echo":{"args":[["hello","**"]]}},"uncovered":"deny"}"#.into(),
        ),
        ..VfsHostOptions::default()
    })
    .unwrap();
    let (host_end, tool_end) = UnixStream::pair().unwrap();
    let host_write = host_end.try_clone().unwrap();
    host.attach(
        OwnedFd::from(host_end),
        OwnedFd::from(host_write),
        r#"{"name":"attached"}"#,
    )
    .unwrap();
    assert_eq!(host.sandbox().unwrap_err().kind(), ErrorKind::State);
    let tool = std::thread::spawn(move || -> Result<String, String> {
        let fd = tool_end.as_fd();
        let mut tool = step(
            "connect",
            VfsTool::connect_fds(fd, fd, ConnectOptions::default()),
        )?;
        let run = step(
            "process_run",
            tool.process_run("echo", &["hello", "world"], &[]),
        )?;
        let refused = tool.process_run("echo", &["bye"], &[]).unwrap_err();
        let http = tool
            .http_get("https://example.com/", &[("Accept", "text/plain")])
            .unwrap_err();
        let lines = step("read", tool.read("data.txt"))?;
        let text = format!(
            "{:?} {:?} {:?}\n{:?} {:?}\n{:?} {:?}: {}\n{}",
            run.exit,
            run.stdout,
            run.stderr,
            refused.kind(),
            refused.rpc_code(),
            http.kind(),
            http.rpc_code(),
            http.message(),
            String::from_utf8_lossy(&lines).lines().count()
        );
        step("result", tool.result_text(&text))?;
        Ok(text)
    });
    host.run(LIMIT).unwrap();
    let text = tool.join().unwrap().unwrap();
    assert_eq!(final_text(&host), text);
    assert_eq!(
        text,
        "Code(0) \"hello world\\n\" \"\"\n\
         Denied Some(-32001)\n\
         Denied Some(-32001): http.get 'https://example.com/': denied: not covered by the policy (network.allow lists no URL)\n\
         2"
    );
}

/// http.get and http.post from a tool on attached fds, against the test
/// suite's HTTP server (test/http_test_server.py) on 127.0.0.1, which the
/// policy allows: headers go out, status, headers and body come back.
fn attached_tool_fetches_over_http() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../test/http_test_server.py");
    let mut server = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the test suite's HTTP server");
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let base = format!("http://127.0.0.1:{}", port);

    let (_dir, files) = dir_files("http");
    let host = VfsHost::with_options(&VfsHostOptions {
        files: Some(files),
        sandbox_json: Some(format!(r#"{{"network":{{"allow":["{}"]}}}}"#, base)),
        ..VfsHostOptions::default()
    })
    .unwrap();
    let (host_end, tool_end) = UnixStream::pair().unwrap();
    let host_write = host_end.try_clone().unwrap();
    host.attach(
        OwnedFd::from(host_end),
        OwnedFd::from(host_write),
        r#"{"name":"fetcher"}"#,
    )
    .unwrap();
    let tool = std::thread::spawn(move || {
        let fd = tool_end.as_fd();
        let mut tool = VfsTool::connect_fds(fd, fd, ConnectOptions::default()).unwrap();
        let hello = tool.http_get(&format!("{}/hello", base), &[]).unwrap();
        let echo = tool
            .http_post(
                &format!("{}/echo", base),
                &[("X-Test", "from Rust")],
                b"posted \xff",
            )
            .unwrap();
        let missing = tool
            .http_get(&format!("{}/status?code=404", base), &[])
            .unwrap();
        tool.result_text("fetched").unwrap();
        (hello, echo, missing)
    });
    host.run(LIMIT).unwrap();
    let (hello, echo, missing) = tool.join().unwrap();
    drop(server.stdin.take()); // the server ends with its stdin
    assert!(server.wait().unwrap().success());
    assert_eq!(
        (hello.status, hello.body.as_slice()),
        (200, &b"hello\n"[..])
    );
    assert!(
        hello.headers_json.starts_with(r#"[{"name":"#),
        "{}",
        hello.headers_json
    );
    assert_eq!(echo.status, 200);
    let body = String::from_utf8(echo.body).unwrap();
    assert!(body.contains(r#""method": "POST""#), "{}", body);
    assert!(body.contains(r#""X-Test": "from Rust""#), "{}", body);
    assert!(body.contains(r#""body": "posted \ufffd""#), "{}", body);
    assert!(
        echo.headers_json
            .contains(r#"{"name":"X-Echo-X-Test","value":"from Rust"}"#),
        "{}",
        echo.headers_json
    );
    assert_eq!(
        (missing.status, missing.body.as_slice()),
        (404, &b"status 404"[..])
    );
    assert_eq!(final_text(&host), "fetched");
}

/// The tool's on_pending closure panics: the panic resumes from the
/// blocking call it ran in, once that call is complete.
fn on_pending_panic_resumes_from_the_tool_call() {
    let (dir, files) = dir_files("pending");
    let host = VfsHost::with_options(&VfsHostOptions {
        files: Some(files),
        ..VfsHostOptions::default()
    })
    .unwrap();
    host.set_policy_handler(|request| request.allow().unwrap());
    let (host_end, tool_end) = UnixStream::pair().unwrap();
    let host_write = host_end.try_clone().unwrap();
    host.attach(
        OwnedFd::from(host_end),
        OwnedFd::from(host_write),
        r#"{"name":"pending"}"#,
    )
    .unwrap();
    let tool = std::thread::spawn(move || {
        let fd = tool_end.as_fd();
        let options =
            ConnectOptions::default().on_pending(|_, reason| panic!("pending: {}", reason));
        let mut tool = VfsTool::connect_fds(fd, fd, options).unwrap();
        let payload =
            panic::catch_unwind(AssertUnwindSafe(|| tool.write("notes.txt", b"x"))).unwrap_err();
        tool.result_text("done").unwrap();
        payload.downcast_ref::<String>().cloned()
    });
    host.run(LIMIT).unwrap();
    assert_eq!(
        tool.join().unwrap().as_deref(),
        Some("pending: fs.write 'notes.txt': needs approval: not covered by the policy (the workspace is read-only: filesystem.writable is false)")
    );
    assert_eq!(final_text(&host), "done");
    assert_eq!(std::fs::read(dir.0.join("notes.txt")).unwrap(), b"x");
}

/// Connecting to something that is not a D11 host fails with the SDK's
/// message.
fn connecting_to_a_host_that_breaks_the_protocol_fails_with_its_message() {
    use std::io::Write;
    let (mut host_end, tool_end) = UnixStream::pair().unwrap();
    host_end.write_all(b"this is not JSON-RPC\n").unwrap();
    let fd = tool_end.as_fd();
    let e = VfsTool::connect_fds(fd, fd, ConnectOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol);
    assert!(!e.message().is_empty() && e.rpc_code().is_none(), "{:?}", e);
    drop(host_end);
    let e = VfsTool::connect_fds(fd, fd, ConnectOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{:?}", e);
}

/// The access policy holds whatever the backend: D11 checks every request,
/// and a memory or host-supplied backend is no way around it.
fn memory_and_host_backends_are_checked_by_the_policy() {
    let memory = memory_files();
    memory.write(".env", b"API_KEY=secret").unwrap();
    let deferred = Rc::new(Deferred {
        inner: memory.clone(),
        queue: RefCell::default(),
        methods: RefCell::default(),
    });
    let host_supplied = Files::from_backend(DeferredBackend(deferred.clone())).unwrap();
    for files in [memory, host_supplied] {
        let host = VfsHost::with_options(&VfsHostOptions {
            files: Some(files),
            sandbox_read: sandbox_read(),
            ..VfsHostOptions::default()
        })
        .unwrap();
        host.spawn(&tool_argv("secret"), r#"{"name":"secret"}"#)
            .unwrap();
        while !host.is_done() {
            poll_step(host.as_raw_fd(), host.timeout());
            while host.dispatch().unwrap() {}
            while let Some(request) = deferred.queue.borrow_mut().pop_front() {
                answer(&deferred.inner, request);
            }
        }
        assert_eq!(final_text(&host), "read .env: Denied\nwrite: Denied");
    }
}

// ---- The harness ------------------------------------------------------------------

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
}

/// One turn of a host's loop: poll `fd` for at most `timeout`.
fn poll_step(fd: c_int, timeout: Option<Duration>) {
    let ms = timeout.map_or(60_000, |d| d.as_millis().min(60_000) as c_int);
    let mut p = PollFd {
        fd,
        events: 1,
        revents: 0,
    };
    assert!(unsafe { poll(&mut p, 1, ms) } >= 0, "poll failed");
}

/// A directory of its own under the temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("jptool-rust-{}-{}", what, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--vfs-tool" {
        std::process::exit(tool_main(&args[2]));
    }
    let tests: &[(&str, fn())] = &[
        (
            "vfs_host_spawns_a_rust_tool_in_the_required_sandbox",
            vfs_host_spawns_a_rust_tool_in_the_required_sandbox,
        ),
        (
            "policy_request_kept_and_denied_later",
            policy_request_kept_and_denied_later,
        ),
        (
            "policy_handler_panic_denies_and_resumes_in_run",
            policy_handler_panic_denies_and_resumes_in_run,
        ),
        (
            "registry_runs_rust_vfs_tools_on_a_host_supplied_backend",
            registry_runs_rust_vfs_tools_on_a_host_supplied_backend,
        ),
        (
            "attached_tool_runs_processes_and_is_refused_http",
            attached_tool_runs_processes_and_is_refused_http,
        ),
        (
            "attached_tool_fetches_over_http",
            attached_tool_fetches_over_http,
        ),
        (
            "on_pending_panic_resumes_from_the_tool_call",
            on_pending_panic_resumes_from_the_tool_call,
        ),
        (
            "connecting_to_a_host_that_breaks_the_protocol_fails_with_its_message",
            connecting_to_a_host_that_breaks_the_protocol_fails_with_its_message,
        ),
        (
            "memory_and_host_backends_are_checked_by_the_policy",
            memory_and_host_backends_are_checked_by_the_policy,
        ),
    ];
    let filters: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let fds = open_fds();
    let mut failed = Vec::new();
    for (name, test) in tests {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        if panic::catch_unwind(test).is_ok() {
            println!("test {} ... ok", name);
        } else {
            println!("test {} ... FAILED", name);
            failed.push(*name);
        }
    }
    assert_eq!(open_fds(), fds, "an fd was left open");
    // No child left: waitpid answers ECHILD.
    assert_eq!(
        unsafe { waitpid(-1, std::ptr::null_mut(), 1) },
        -1,
        "a child was left"
    );
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(10));
    if !failed.is_empty() {
        println!("failed: {:?}", failed);
        std::process::exit(101);
    }
}
