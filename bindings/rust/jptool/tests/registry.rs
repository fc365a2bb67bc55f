//! The safe API driving real calls: tool processes (sh), an inquiry
//! answered from a closure, builtins implemented in Rust, the event loop
//! through the registry's fd, the turn end and shutdown. Every wait is
//! bounded; no test sleeps.

use std::cell::{Cell, RefCell};
use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use jptool::{
    Builtin, Dialect, ErrorKind, EventKind, Handle, Inquiry, Kind, Registry, State, Target, TurnEnd,
};

/// Generous: a bound against hangs, never a measure.
const LIMIT: Option<Duration> = Some(Duration::from_secs(60));

const SHELL: &str =
    r#"{"tools":[{"name":"sh","description":"A shell","stateful":true,"command":["sh"]}]}"#;

/// A one-shot tool that asks (JP's legacy needs_input) until its {{tool}}
/// JSON carries the answer `confirm: true`.
const ASKING: &str = r#"{"tools":[{"name":"deploy","question_target":"assistant","command":["sh","-c","case \"$1\" in *'\"confirm\":true'*) echo deployed;; *) echo '{\"type\":\"needs_input\",\"question\":{\"id\":\"confirm\",\"text\":\"Deploy to production?\",\"answer_type\":\"Boolean\"}}';; esac","sh","{{tool}}"]}]}"#;

fn results(registry: &Registry, calls: &str) -> String {
    let batch = registry.submit(calls).expect("submit");
    registry.wait(&batch, LIMIT).expect("wait");
    batch.results_json().expect("results")
}

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
}

const POLLIN: c_short = 1;

/// One turn of a host's loop: poll the registry's fd for at most its
/// timeout (-1: until readable), then dispatch what is ready.
fn step(registry: &Registry) {
    let timeout = registry
        .timeout()
        .map_or(-1, |d| d.as_millis().min(60_000) as c_int);
    let mut p = PollFd {
        fd: registry.as_raw_fd(),
        events: POLLIN,
        revents: 0,
    };
    assert!(unsafe { poll(&mut p, 1, timeout) } >= 0, "poll failed");
    while registry.dispatch().expect("dispatch") {}
}

#[test]
fn stateful_shell_spawns_applies_and_is_awaited() {
    let r = Registry::new().unwrap();
    r.load_tools(SHELL).unwrap();
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c1","name":"sh","arguments":{"action":"spawn","id":"shell"}}]"#
        ),
        r#"[{"id":"c1","content":"{\"id\":\"shell\",\"state\":\"running\",\"content\":\"\"}","is_error":false}]"#
    );
    // wait_secs: the apply waits for the echo instead of settling early.
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c2","name":"sh","arguments":{"action":"apply","id":"shell","input":"echo hello\n","wait_secs":60}}]"#
        ),
        r#"[{"id":"c2","content":"{\"id\":\"shell\",\"state\":\"running\",\"content\":\"hello\\n\"}","is_error":false}]"#
    );
    // An apply and an await in one batch, answered in Anthropic's shape; a
    // failed handle ends as a failed one-shot call does.
    let batch = r
        .submit(
            r#"[{"type":"text","text":"Stopping it."},
                {"type":"tool_use","id":"toolu_1","name":"sh","input":{"action":"apply","id":"shell","input":"exit 3\n","wait_secs":60}},
                {"type":"tool_use","id":"toolu_2","name":"await","input":{"all":["shell"]}}]"#,
        )
        .unwrap();
    r.wait(&batch, LIMIT).unwrap();
    assert!(batch.is_done());
    assert_eq!(
        batch.results_json_as(Dialect::AS_CALLED).unwrap(),
        r#"[{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"id\":\"shell\",\"state\":\"stopped\",\"error\":\"Error: The tool failed (exit status 3).\"}","is_error":true},{"type":"tool_result","tool_use_id":"toolu_2","content":"{\"completed\":[{\"id\":\"shell\",\"state\":\"stopped\",\"result\":\"Error: The tool failed (exit status 3).\"}],\"pending\":[]}","is_error":false}]"#
    );
    assert_eq!(r.take_notifications().unwrap(), "[]");
}

#[test]
fn one_call_is_cancelled_and_another_stopped_by_its_time_limit() {
    let r = Registry::new().unwrap();
    r.load_tools(r#"{"tools":[{"name":"nap","command":["sleep","60"]},{"name":"ok","command":["echo","done"]}]}"#)
        .unwrap();
    let batch = r
        .submit(r#"[{"id":"a","name":"nap","arguments":{}},{"id":"b","name":"nap","arguments":{}},{"id":"c","name":"ok","arguments":{}}]"#)
        .unwrap();
    assert_eq!(
        batch.cancel_call("nope").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    batch.cancel_call("a").unwrap();
    batch.set_call_timeout(Some("b"), 200).unwrap();
    r.wait(&batch, LIMIT).unwrap();
    let results = batch.results_json().unwrap();
    assert!(
        results.contains("The call `nap` was cancelled"),
        "{}",
        results
    );
    assert!(
        results.contains("reached the host's time limit of 200 ms"),
        "{}",
        results
    );
    assert!(
        results.contains(r#""id":"c","content":"done\n","is_error":false"#),
        "{}",
        results
    );
}

#[test]
fn output_handler_streams_bytes_without_consuming_them() {
    let r = Registry::new().unwrap();
    r.load_tools(
        r#"{"tools":[{"name":"both","command":["sh","-c","printf out; printf err >&2"]}]}"#,
    )
    .unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let kept = seen.clone();
    r.set_output_handler(move |o| {
        kept.borrow_mut().push((
            o.id.to_string(),
            o.tool.to_string(),
            o.stateful,
            o.stderr,
            o.data.to_vec(),
        ))
    });
    let out = results(&r, r#"[{"id":"c1","name":"both","arguments":{}}]"#);
    assert!(out.contains(r#""content":"out""#), "{}", out);
    let seen = seen.borrow();
    let stdout: Vec<u8> = seen
        .iter()
        .filter(|s| !s.3)
        .flat_map(|s| s.4.clone())
        .collect();
    let stderr: Vec<u8> = seen
        .iter()
        .filter(|s| s.3)
        .flat_map(|s| s.4.clone())
        .collect();
    assert_eq!(stdout, b"out");
    assert_eq!(stderr, b"err");
    assert!(seen.iter().all(|s| s.0 == "c1" && s.1 == "both" && !s.2));
    r.clear_output_handler();
}

#[test]
fn one_shot_tool_answers_in_the_shape_of_its_call() {
    let r = Registry::new().unwrap();
    r.load_tools(
        r#"{"tools":[{"name":"greet","parameters":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},
            "command":["sh","-c","printf 'hello %s\\n' \"$1\"","sh","{{arguments.name}}"]}]}"#,
    )
    .unwrap();
    let batch = r
        .submit(r#"[{"id":"call_1","type":"function","function":{"name":"greet","arguments":"{\"name\":\"rust\"}"}}]"#)
        .unwrap();
    assert_eq!(
        batch.results_json_as(Dialect::OPENAI).unwrap_err().kind(),
        ErrorKind::State
    );
    r.wait(&batch, LIMIT).unwrap();
    assert_eq!(
        batch.results_json_as(Dialect::AS_CALLED).unwrap(),
        r#"[{"role":"tool","tool_call_id":"call_1","content":"hello rust\n"}]"#
    );
    // A call that fails its tool's schema gets an error result.
    assert_eq!(
        results(&r, r#"[{"id":"c2","name":"greet","arguments":{}}]"#),
        r#"[{"id":"c2","content":"Invalid arguments for `greet`: at the top level: missing required property \"name\"","is_error":true}]"#
    );
}

#[test]
fn inquiry_is_answered_from_a_closure() {
    let r = Registry::new().unwrap();
    r.load_tools(ASKING).unwrap();
    let asked = Rc::new(RefCell::new(Vec::new()));
    let seen = asked.clone();
    r.set_inquiry_handler(move |mut q: Inquiry| {
        seen.borrow_mut().push((
            q.tool().map(str::to_owned),
            q.call_id().map(str::to_owned),
            q.target(),
            q.question_json().to_owned(),
        ));
        let refused = q.answer("\"yes\"").unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Invalid);
        assert_eq!(
            refused.message(),
            "the answer does not fit question 'confirm': at the top level: expected boolean, got string"
        );
        assert!(q.is_pending());
        q.answer("true").unwrap();
        assert!(!q.is_pending());
    });
    assert_eq!(
        results(&r, r#"[{"id":"c1","name":"deploy","arguments":{}}]"#),
        r#"[{"id":"c1","content":"deployed\n","is_error":false}]"#
    );
    assert_eq!(
        *asked.borrow(),
        vec![(
            Some("deploy".to_owned()),
            Some("c1".to_owned()),
            Target::Assistant,
            r#"{"id":"confirm","text":"Deploy to production?","schema":{"type":"boolean"}}"#
                .to_owned()
        )]
    );
}

#[test]
fn inquiry_kept_by_the_host_is_answered_later() {
    let r = Registry::new().unwrap();
    r.load_tools(ASKING).unwrap();
    let held: Rc<RefCell<Vec<Inquiry>>> = Rc::new(RefCell::new(Vec::new()));
    let keep = held.clone();
    r.set_inquiry_handler(move |q| keep.borrow_mut().push(q));
    let batch = r
        .submit(r#"[{"id":"c1","name":"deploy","arguments":{}}]"#)
        .unwrap();
    while held.borrow().is_empty() {
        step(&r);
    }
    assert!(!batch.is_done());
    let mut q = held.borrow_mut().pop().unwrap();
    q.answer("true").unwrap();
    r.wait(&batch, LIMIT).unwrap();
    assert_eq!(
        batch.results_json().unwrap(),
        r#"[{"id":"c1","content":"deployed\n","is_error":false}]"#
    );
    assert_eq!(q.answer("true").unwrap_err().kind(), ErrorKind::State);
}

#[test]
fn inquiry_dropped_unanswered_ends_its_call() {
    let r = Registry::new().unwrap();
    r.load_tools(ASKING).unwrap();
    r.set_inquiry_handler(drop);
    assert_eq!(
        results(&r, r#"[{"id":"c1","name":"deploy","arguments":{}}]"#),
        r#"[{"id":"c1","content":"The question `confirm` was not answered: the host dropped the question unanswered","is_error":true}]"#
    );
}

#[test]
fn inquiry_outlives_its_registry() {
    let held: Rc<RefCell<Vec<Inquiry>>> = Rc::new(RefCell::new(Vec::new()));
    {
        let r = Registry::new().unwrap();
        r.load_tools(ASKING).unwrap();
        let keep = held.clone();
        r.set_inquiry_handler(move |q| keep.borrow_mut().push(q));
        let _batch = r
            .submit(r#"[{"id":"c1","name":"deploy","arguments":{}}]"#)
            .unwrap();
        while held.borrow().is_empty() {
            step(&r);
        }
    }
    let mut q = held.borrow_mut().pop().unwrap();
    assert!(!q.is_pending());
    assert_eq!(q.answer("true").unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
#[should_panic(expected = "the handler panicked")]
fn panic_in_the_inquiry_handler_resumes_in_wait() {
    let r = Registry::new().unwrap();
    r.load_tools(ASKING).unwrap();
    r.set_inquiry_handler(|_| panic!("the handler panicked"));
    let batch = r
        .submit(r#"[{"id":"c1","name":"deploy","arguments":{}}]"#)
        .unwrap();
    let _ = r.wait(&batch, LIMIT);
}

#[test]
fn builtin_closure_runs_a_one_shot_call() {
    let r = Registry::new().unwrap();
    r.add_builtin(
        r#"{"name":"echo_args","description":"Says what it got"}"#,
        |h: &Handle, args: &str| -> jptool::Result<()> {
            let text = format!("{} got {}", h.tool(), args);
            h.update(&State::with_text(Kind::Stopped, &text)?)?;
            assert!(!h.is_live());
            assert_eq!(
                h.update(&State::new(Kind::Stopped)?).unwrap_err().kind(),
                ErrorKind::State
            );
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c1","name":"echo_args","arguments":{"text":"hi"}}]"#
        ),
        r#"[{"id":"c1","content":"echo_args got {\"text\":\"hi\"}","is_error":false}]"#
    );
}

#[test]
fn builtin_error_fails_its_call() {
    let r = Registry::new().unwrap();
    r.add_builtin(r#"{"name":"refuse"}"#, |_: &Handle, _: &str| {
        Err(jptool::Error::new(ErrorKind::Denied, "not today"))
    })
    .unwrap();
    assert_eq!(
        results(&r, r#"[{"id":"c1","name":"refuse","arguments":{}}]"#),
        r#"[{"id":"c1","content":"`refuse` could not run: the tool failed to start: denied by the access policy","is_error":true}]"#
    );
}

/// A stateful builtin: counts the input it is given, and records aborts.
#[derive(Default)]
struct Counter {
    total: Cell<i64>,
    aborted: RefCell<Vec<String>>,
    handles: RefCell<Vec<Handle>>,
}

/// The tool the registry keeps; the test keeps the counter too.
struct CounterTool(Rc<Counter>);

impl Builtin for CounterTool {
    fn start(&self, handle: &Handle, arguments_json: &str) -> jptool::Result<()> {
        self.0.handles.borrow_mut().push(handle.clone());
        handle.update(&State::with_text(
            Kind::Running,
            &format!("counting from {}", arguments_json),
        )?)
    }

    fn apply(&self, handle: &Handle, input_json: &str) -> jptool::Result<()> {
        let n: i64 = input_json
            .trim_matches('"')
            .parse()
            .map_err(|_| jptool::Error::new(ErrorKind::Invalid, "not a number"))?;
        self.0.total.set(self.0.total.get() + n);
        handle.update(&State::with_text(
            Kind::Running,
            &format!("total {}", self.0.total.get()),
        )?)
    }

    fn abort(&self, handle: &Handle) {
        self.0.aborted.borrow_mut().push(handle.id().to_owned());
    }
}

#[test]
fn builtin_stateful_tool_takes_input_and_is_aborted() {
    let counter = Rc::new(Counter::default());
    let r = Registry::new().unwrap();
    r.add_builtin(
        r#"{"name":"counter","stateful":true,"parameters":{"type":"object","properties":{"from":{"type":"integer"}}}}"#,
        CounterTool(counter.clone()),
    )
    .unwrap();
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c1","name":"counter","arguments":{"action":"spawn","id":"n","from":0}}]"#
        ),
        r#"[{"id":"c1","content":"{\"id\":\"n\",\"state\":\"running\",\"content\":\"counting from {\\\"from\\\":0}\"}","is_error":false}]"#
    );
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c2","name":"counter","arguments":{"action":"apply","id":"n","input":"5"}}]"#
        ),
        r#"[{"id":"c2","content":"{\"id\":\"n\",\"state\":\"running\",\"content\":\"total 5\"}","is_error":false}]"#
    );
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c3","name":"counter","arguments":{"action":"abort","id":"n"}}]"#
        ),
        r#"[{"id":"c3","content":"{\"id\":\"n\",\"state\":\"stopped\",\"result\":\"[aborted]\"}","is_error":false}]"#
    );
    assert_eq!(*counter.aborted.borrow(), vec!["n".to_owned()]);
    let kept = counter.handles.borrow()[0].clone();
    assert!(!kept.is_live());
    assert_eq!(
        kept.update(&State::new(Kind::Running).unwrap())
            .unwrap_err()
            .kind(),
        ErrorKind::State
    );
}

#[test]
fn dropping_the_registry_aborts_live_builtin_handles() {
    let counter = Rc::new(Counter::default());
    {
        let r = Registry::new().unwrap();
        r.add_builtin(
            r#"{"name":"counter","stateful":true}"#,
            CounterTool(counter.clone()),
        )
        .unwrap();
        results(
            &r,
            r#"[{"id":"c1","name":"counter","arguments":{"action":"spawn","id":"n"}}]"#,
        );
        assert!(counter.handles.borrow()[0].is_live());
    }
    assert_eq!(*counter.aborted.borrow(), vec!["n".to_owned()]);
    assert!(!counter.handles.borrow()[0].is_live());
    // The registry's clone of the builtin went with it.
    assert_eq!(Rc::strong_count(&counter), 1);
}

#[test]
fn host_loop_polls_the_fd_and_reads_events() {
    let r = Registry::new().unwrap();
    r.load_tools(SHELL).unwrap();
    let batch = r
        .submit(r#"[{"id":"c1","name":"sh","arguments":{"action":"spawn","id":"shell"}}]"#)
        .unwrap();
    let mut seen = Vec::new();
    while !batch.is_done() {
        step(&r);
        for e in r.events() {
            seen.push((e.kind(), e.call_id().map(str::to_owned), e.is_for(&batch)));
        }
    }
    assert_eq!(
        seen,
        vec![
            (EventKind::CallDone, Some("c1".to_owned()), true),
            (EventKind::BatchDone, None, true),
        ]
    );
    // Closing without blocking: shutdown, dispatch until it is complete.
    while !r.shutdown().unwrap() {
        step(&r);
    }
    let kinds: Vec<EventKind> = r.events().map(|e| e.kind()).collect();
    assert!(kinds.contains(&EventKind::Shutdown), "{:?}", kinds);
    assert_eq!(r.submit("[]").unwrap_err().kind(), ErrorKind::State);
}

#[test]
fn waker_wakes_a_poll_from_another_thread() {
    let r = Registry::new().unwrap();
    let waker = r.waker();
    std::thread::scope(|s| {
        s.spawn(move || waker.wake());
        let mut p = PollFd {
            fd: r.as_raw_fd(),
            events: POLLIN,
            revents: 0,
        };
        assert_eq!(unsafe { poll(&mut p, 1, -1) }, 1);
    });
    while r.dispatch().unwrap() {}
}

#[test]
fn turn_end_asks_the_assistant_which_handles_to_keep() {
    let r = Registry::new().unwrap();
    r.load_tools(SHELL).unwrap();
    results(
        &r,
        r#"[{"id":"c1","name":"sh","arguments":{"action":"spawn","id":"shell"}}]"#,
    );
    let asked = Rc::new(Cell::new(0));
    let count = asked.clone();
    r.set_inquiry_handler(move |mut q| {
        count.set(count.get() + 1);
        assert_eq!(
            (q.tool(), q.call_id(), q.target()),
            (None, None, Target::Assistant)
        );
        q.answer(r#"{"handles":[{"id":"shell","action":"abort"}]}"#)
            .unwrap();
    });
    let model = r.submit("[]").unwrap();
    let batch = r.end_turn(TurnEnd::Policies).unwrap();
    let e = r.take_turn_text(Some(&batch)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(e.message().contains("still settling"), "{}", e.message());
    r.wait(&batch, LIMIT).unwrap();
    assert_eq!(asked.get(), 1);
    assert_eq!(batch.results_json().unwrap(), "[]");
    // The host trial: the turn end's results answer no call of the
    // model's; they reach it as text, with the notifications.
    let e = batch.results_json_as(Dialect::ANTHROPIC).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("take_turn_text"), "{}", e.message());
    let e = r.take_turn_text(Some(&model)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("not a turn end's"), "{}", e.message());
    let text = r.take_turn_text(Some(&batch)).unwrap();
    let (head, tail) = text.split_once(" stopped after ").expect(&text);
    let (secs, tail) = tail.split_once(" s]").expect(&text);
    assert!(secs.parse::<f64>().is_ok(), "{}", text);
    assert_eq!(head, "[Notification: handle `shell` (tool `sh`)");
    assert_eq!(
        tail,
        "\nThe turn ended: the handle was aborted, as the answer to the turn-end question \
         chose, and its output discarded\n\n"
    );
    // Taken: the next call gives only what came since.
    assert_eq!(r.take_turn_text(None).unwrap(), "");
    assert_eq!(r.take_notifications().unwrap(), "[]");
    assert_eq!(
        results(
            &r,
            r#"[{"id":"c2","name":"sh","arguments":{"action":"fetch","id":"shell"}}]"#
        ),
        r#"[{"id":"c2","content":"Handle `shell` has stopped, and a notification gave its result","is_error":true}]"#
    );
}

/// A call without an object to keep its message (a constructor, a parser)
/// carries the thread's last error (issue 16: `jpt_registry_new` with a
/// missing root said nothing).
#[test]
fn errors_of_calls_without_an_object_carry_the_library_message() {
    let options = jptool::RegistryOptions {
        root: Some("/nonexistent/jptool/root".into()),
        ..Default::default()
    };
    let e = Registry::with_options(&options).expect_err("a missing root is refused");
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(
        e.message(),
        "jpt_registry_new: root '/nonexistent/jptool/root': No such file or directory"
    );
    assert_eq!(jptool::last_error(), e.message());
    drop(Registry::new().unwrap());
    assert_eq!(jptool::last_error(), "");
    let e = jptool::uri_canonicalize("", None).unwrap_err();
    assert_eq!(e.message(), "jpt_uri_canonicalize: the URI is empty");
    // A directory where the state file should be: it cannot be removed.
    let dir = std::env::temp_dir().join(format!("jptool-rust-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    let e = jptool::reap_stale(&dir).unwrap_err();
    std::fs::remove_dir(&dir).unwrap();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.message().starts_with("jpt_registry_reap_stale: removing"),
        "{}",
        e
    );
}

#[test]
fn errors_carry_the_code_and_the_library_message() {
    let r = Registry::new().unwrap();
    let e = r.load_tools(r#"{"tools":[{"name":"x"}]}"#).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.code(), -1);
    assert_eq!(e.name(), Some("JPT_ERR_INVALID"));
    assert_eq!(
        e.message(),
        "tool 'x': 'command' is required for a stdio tool"
    );
    assert_eq!(
        e.to_string(),
        "tool 'x': 'command' is required for a stdio tool (JPT_ERR_INVALID)"
    );
    r.load_tools(SHELL).unwrap();
    assert_eq!(r.load_tools(SHELL).unwrap_err().kind(), ErrorKind::Exists);
    r.load_tools_replacing(SHELL).unwrap();
    assert_eq!(r.submit("{").unwrap_err().kind(), ErrorKind::Invalid);
    assert_eq!(
        r.tools_json(Dialect::AS_CALLED).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(r.load_tools("\0").unwrap_err().kind(), ErrorKind::Invalid);
    let tools = r.tools_json(Dialect::ANTHROPIC).unwrap();
    assert!(
        tools.starts_with(
            r#"[{"name":"sh","description":"A shell","input_schema":{"type":"object""#
        ),
        "{}",
        tools
    );
    assert!(r
        .tools_json(Dialect::OPENAI.strict())
        .unwrap()
        .contains(r#""strict":true"#));
}

#[test]
fn waker_outlives_its_registry_and_then_wakes_nothing() {
    let r = Registry::new().unwrap();
    let waker = r.waker();
    assert!(std::thread::spawn({
        let waker = waker.clone();
        move || waker.wake()
    })
    .join()
    .unwrap());
    drop(r);
    assert!(!std::thread::spawn(move || waker.wake()).join().unwrap());
}

#[test]
fn failures_without_a_library_message_name_the_call_and_the_argument() {
    let r = Registry::new().unwrap();
    r.load_tools(SHELL).unwrap();
    assert_eq!(
        r.tools_json(Dialect::GEMINI.strict())
            .unwrap_err()
            .message(),
        "tools_json: 0x403 is not a dialect"
    );
    let batch = r.submit("[]").unwrap();
    // (This one has the library's message, the registry's.)
    assert_eq!(
        batch.results_json_as(Dialect::MCP).unwrap_err().message(),
        "jpt_batch_results_json_as: 4 is not a results dialect (JPT_DIALECT_AS_CALLED, _OPENAI, _OPENAI_RESPONSES, _ANTHROPIC, _GEMINI)"
    );
    assert_eq!(
        batch.cancel_call("c9").unwrap_err().message(),
        "cancel_call: the batch has no call 'c9'"
    );
    assert_eq!(
        batch
            .set_call_timeout(Some("c9"), 10)
            .unwrap_err()
            .message(),
        "set_call_timeout: the batch has no call 'c9'"
    );
    let other = Registry::new().unwrap();
    assert_eq!(
        other.wait(&batch, LIMIT).unwrap_err().message(),
        "wait: the batch belongs to another registry"
    );
    r.wait(&batch, LIMIT).unwrap();
    let sandbox = r.tool_sandbox("sh").unwrap();
    assert!(sandbox.enforced.is_empty(), "{:?}", sandbox);
    assert_eq!(
        r.add_files("bad name", &jptool::Files::memory().unwrap())
            .unwrap_err()
            .kind(),
        ErrorKind::Invalid
    );
}
