//! A VFS tool (D11) written in Rust with `jptool::VfsTool`: it finds the
//! TODO and FIXME lines of the workspace with fs.grep, writes a report to
//! TODO.md (a write the host's policy may have to ask about), and ends
//! with a summary. It touches no file itself: a host starts it with its
//! stdin and stdout as the protocol's pipes, in the OS sandbox, and
//! serves every request after the tool's access policy.
//!
//! The host examples run it: `vfs_host` under a VfsHost, `files_backend`
//! under a Registry's "vfs" tool definition. Run directly, it has no host
//! and says so.

use jptool::{GrepQuery, VfsTool};

/// The matches in fs.grep's result, `{"matches":[{"path","lines":[{
/// "line_number","content","is_match"}]}]}`, as "path:line: content". A
/// real tool parses it with serde_json; this crate has no JSON parser, so
/// the example reads the compact form the host sends.
fn matched_lines(result: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for file in result.split(r#"{"path":""#).skip(1) {
        let path = file.split('"').next().unwrap_or("");
        for line in file.split(r#"{"line_number":"#).skip(1) {
            let number = line.split(',').next().unwrap_or("");
            let content = line
                .split(r#""content":""#)
                .nth(1)
                .and_then(|c| c.split(r#"","is_match""#).next())
                .unwrap_or("");
            lines.push(format!("{}:{}: {}", path, number, content));
        }
    }
    lines
}

fn run(tool: &mut VfsTool<'_>) -> jptool::Result<String> {
    eprintln!("{} started with {}", tool.name(), tool.arguments());
    let mut query = GrepQuery::new(r"\b(TODO|FIXME)\b");
    query.max_matches = Some(100);
    let lines = matched_lines(&tool.grep(&query)?);
    let report = format!("# Open items\n\n{}\n", lines.join("\n"));
    // May wait for the host's policy prompt (D11 `pending`).
    tool.write("TODO.md", report.as_bytes())?;
    Ok(format!(
        "{} open items; the list is in TODO.md",
        lines.len()
    ))
}

fn main() {
    // stdout is the protocol: diagnostics go to stderr.
    let mut tool = match VfsTool::connect() {
        Ok(tool) => tool,
        Err(e) => {
            eprintln!("vfs_tool: no VFS host to talk to: {}", e);
            std::process::exit(2);
        }
    };
    let sent = match run(&mut tool) {
        Ok(summary) => tool.result_text(&summary),
        Err(e) => tool.error(e.message(), &[], false),
    };
    if let Err(e) = sent {
        eprintln!("vfs_tool: the host did not take the result: {}", e);
        std::process::exit(1);
    }
}
