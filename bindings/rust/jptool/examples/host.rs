//! A Rust agent host in miniature: the tool list it would send, one model
//! message's tool calls (Anthropic's tool_use blocks, as they arrive) run
//! as a batch — a stateful shell spawned, a one-shot tool whose question
//! the inquiry handler answers, a builtin tool implemented in Rust — then
//! the next message's apply and await on the shell, and the turn's end;
//! the registry driven from a poll() loop on its fd.
//!
//!     cargo run --offline --example host
//!
//! (with JPTOOL_LIB_DIR and LD_LIBRARY_PATH naming a build tree's lib/
//! when jptool is not installed; `meson test rust` runs it so).

use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::AsRawFd;

use jptool::{Batch, Dialect, Handle, Kind, Registry, State, Target};

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
}

/// The host's loop: wait for the registry's fd (at most its timeout),
/// dispatch, read the events, until the batch is done. A real host polls
/// its own fds (the model's connection, the terminal) alongside.
fn drive(registry: &Registry, batch: &Batch<'_>) -> jptool::Result<()> {
    while !batch.is_done() {
        let timeout = registry
            .timeout()
            .map_or(-1, |d| d.as_millis().min(c_int::MAX as u128) as c_int);
        let mut p = PollFd {
            fd: registry.as_raw_fd(),
            events: 1, // POLLIN
            revents: 0,
        };
        if unsafe { poll(&mut p, 1, timeout) } < 0 {
            return Err(jptool::Error::new(jptool::ErrorKind::Io, "poll failed"));
        }
        while registry.dispatch()? {}
        for event in registry.events() {
            println!("  event: {:?}", event);
        }
    }
    Ok(())
}

fn main() -> jptool::Result<()> {
    println!("jptool {}", jptool::version());
    let registry = Registry::new()?;
    registry.load_tools(
        r#"{"tools":[
            {"name":"sh","description":"A shell","stateful":true,"command":["sh"]},
            {"name":"deploy","description":"Deploys, after asking","question_target":"assistant",
             "command":["sh","-c","case \"$1\" in *'\"confirm\":true'*) echo deployed;; *) echo '{\"type\":\"needs_input\",\"question\":{\"id\":\"confirm\",\"text\":\"Deploy?\",\"answer_type\":\"Boolean\"}}';; esac","sh","{{tool}}"]}
        ]}"#,
    )?;
    // A builtin: the host's own code, run as a tool.
    registry.add_builtin(
        r#"{"name":"word_count","description":"Counts the words of its arguments",
            "parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}"#,
        |handle: &Handle, arguments: &str| {
            let words = arguments.split_whitespace().count();
            handle.update(&State::with_text(Kind::Stopped, &format!("{} words", words))?)
        },
    )?;
    // Questions for the assistant would go to the model; this host says yes.
    registry.set_inquiry_handler(|mut inquiry| {
        println!(
            "  {:?} question: {}",
            inquiry.target(),
            inquiry.question_json()
        );
        let answer = if inquiry.target() == Target::Assistant {
            "true"
        } else {
            "false"
        };
        if let Err(e) = inquiry.answer(answer) {
            println!("  answer refused: {}", e);
        }
    });
    println!("tools: {}", registry.tools_json(Dialect::ANTHROPIC)?);

    // The assistant message's content, submitted as it came.
    let batch = registry.submit(
        r#"[{"type":"text","text":"Let me check."},
            {"type":"tool_use","id":"toolu_1","name":"sh","input":{"action":"spawn","id":"shell"}},
            {"type":"tool_use","id":"toolu_2","name":"deploy","input":{}},
            {"type":"tool_use","id":"toolu_3","name":"word_count","input":{"text":"one two three"}}]"#,
    )?;
    drive(&registry, &batch)?;
    // The next user message's content: one tool_result per tool_use.
    println!("results: {}", batch.results_json_as(Dialect::AS_CALLED)?);

    // The next assistant message drives the shell and awaits its end
    // (RFD 037): the await answers once the handle has stopped.
    let batch = registry.submit(
        r#"[{"type":"tool_use","id":"toolu_4","name":"sh","input":{"action":"apply","id":"shell","input":"echo from the shell; exit 0\n"}},
            {"type":"tool_use","id":"toolu_5","name":"await","input":{"all":["shell"]}}]"#,
    )?;
    drive(&registry, &batch)?;
    let results = batch.results_json_as(Dialect::AS_CALLED)?;
    println!("results: {}", results);
    if !results.contains(r#"\"state\":\"stopped\""#) {
        return Err(jptool::Error::new(
            jptool::ErrorKind::State,
            "the shell did not stop",
        ));
    }

    let end = registry.end_turn(jptool::TurnEnd::Abort)?;
    drive(&registry, &end)?;
    Ok(())
}
