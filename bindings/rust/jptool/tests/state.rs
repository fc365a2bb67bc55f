//! State: parsing tool output, reading and building blocks, JSON forms and
//! rendering; the helpers state.h exports on their own.

use jptool::{
    mime_fence_lang, schema_check, uri_canonicalize, BlockType, ErrorKind, Field, JsonForm, Kind,
    Resource, State,
};

#[test]
fn parsed_envelope_renders_relative_to_the_root() {
    let s = State::parse(
        br#"{"content":[{"type":"resource","resource":{"uri":"file:///project/src/lib.rs","mimeType":"text/rust","text":"pub fn f() {}\n"}}]}"#,
    )
    .unwrap();
    assert_eq!(s.kind(), Kind::Stopped);
    assert_eq!(s.block_count(), 1);
    assert_eq!(s.block_type(0), Some(BlockType::Resource));
    assert_eq!(s.block_type(1), None);
    assert_eq!(s.block_field(0, Field::MimeType), Some(&b"text/rust"[..]));
    assert_eq!(s.block_field(0, Field::Id), None);
    assert_eq!(
        s.render(Some("/project")).unwrap(),
        "src/lib.rs:\n```rs\npub fn f() {}\n```"
    );
}

#[test]
fn raw_output_keeps_its_bytes() {
    let s = State::parse_raw(b"{\"content\":[]}\0\xff").unwrap();
    assert_eq!(
        s.block_field(0, Field::Text),
        Some(&b"{\"content\":[]}\0\xff"[..])
    );
    assert_eq!(
        s.block_field_str(0, Field::Text).unwrap(),
        "{\"content\":[]}\0\u{fffd}"
    );
}

#[test]
fn malformed_blocks_become_warnings() {
    let s =
        State::parse(br#"{"content":[{"type":"bogus"},{"type":"text","text":"kept"}]}"#).unwrap();
    assert_eq!(s.block_count(), 1);
    assert_eq!(s.warnings().len(), 1);
}

#[test]
fn built_state_serialises_in_every_form() {
    let mut s = State::new(Kind::Waiting).unwrap();
    s.add_text("Feature is 2 commits ahead.").unwrap();
    s.add_question(
        "confirm",
        "Merge?",
        Some(r#"{"type":"boolean"}"#),
        Some("false"),
    )
    .unwrap();
    assert_eq!(
        s.to_json(JsonForm::ToolState, false).unwrap(),
        r#"{"type":"waiting","content":"Feature is 2 commits ahead.","question":{"id":"confirm","text":"Merge?","default":false,"answer_type":"Boolean"}}"#
    );
    let back = State::parse(s.to_json(JsonForm::Envelope, false).unwrap().as_bytes()).unwrap();
    assert_eq!(back.kind(), Kind::Waiting);
    assert_eq!(
        back.block_field_str(1, Field::Schema).unwrap(),
        r#"{"type":"boolean"}"#
    );
}

#[test]
fn error_state_has_message_trace_and_refuses_content() {
    let mut s = State::new(Kind::Stopped).unwrap();
    s.add_resource(&Resource {
        uri: "file:///w/a.txt".into(),
        text: Some("a".into()),
        ..Resource::default()
    })
    .unwrap();
    s.set_error("it broke", true).unwrap();
    s.add_error_trace("at step 2").unwrap();
    assert!(s.is_error());
    assert!(s.error_transient());
    assert_eq!(s.error_message(), "it broke");
    assert_eq!(s.error_trace(), vec!["at step 2".to_owned()]);
    let e = s.add_text("more").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(!e.message().is_empty());
}

#[test]
fn shared_state_is_immutable() {
    let mut s = State::new(Kind::Running).unwrap();
    let shared = s.clone();
    assert_eq!(s.add_text("x").unwrap_err().kind(), ErrorKind::State);
    assert_eq!(shared.block_count(), 0);
}

#[test]
fn builders_refuse_what_c_strings_cannot_carry() {
    let mut s = State::new(Kind::Stopped).unwrap();
    let e = s.add_text("a\0b").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(
        e.message(),
        "the text holds a NUL byte, which jptool's C strings cannot carry"
    );
    assert_eq!(
        s.add_block_json("{").unwrap_err().kind(),
        ErrorKind::Invalid
    );
    s.set_structured_content(r#"{"n":1}"#).unwrap();
    assert_eq!(s.structured_content(), Some(r#"{"n":1}"#));
}

#[test]
fn helpers() {
    assert_eq!(
        uri_canonicalize("file:///w/./src//x.rs", Some("/w")).unwrap(),
        "src/x.rs"
    );
    assert_eq!(
        uri_canonicalize("", None).unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(
        mime_fence_lang("text/x-python; charset=utf-8"),
        Some("python")
    );
    assert_eq!(mime_fence_lang("application/x-unknown"), None);
    schema_check(r#"{"type":"array","items":{"type":"string"}}"#, r#"["a"]"#).unwrap();
    let e = schema_check(
        r#"{"type":"array","items":{"type":"string"}}"#,
        r#"["a",2]"#,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.message(), "at /1: expected string, got integer");
    assert_eq!(jptool::version(), "0.1.0");
    assert_eq!(jptool::strerror(-1), "invalid argument or malformed input");
    assert_eq!(jptool::status_name(-9), Some("JPT_ERR_CANCELLED"));
}

#[test]
fn states_are_shared_across_threads_and_stay_immutable() {
    let mut s = State::new(Kind::Stopped).unwrap();
    s.add_text("made on one thread").unwrap();
    let mut mine = s.clone();
    let theirs = std::thread::spawn(move || {
        let text = s.render(None).unwrap();
        (s, text)
    });
    // Both are shared now: a builder fails here, without asking the
    // library, whose refusal would write the message other threads read.
    let e = mine.add_text("more").unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            ErrorKind::State,
            "the state is shared (cloned, or held by the library) and can no longer change"
        )
    );
    let (mut s, text) = theirs.join().unwrap();
    assert_eq!(text, "made on one thread");
    assert_eq!(s.add_text("x").unwrap_err().kind(), ErrorKind::State);
    assert_eq!(mine.block_count(), 1);
}

#[test]
fn serialising_errors_name_the_form_or_the_root() {
    let s = State::with_text(Kind::Running, "working").unwrap();
    assert_eq!(
        s.to_json(JsonForm::Outcome, false).unwrap_err().message(),
        "to_json: the legacy Outcome form cannot express a running state"
    );
    assert_eq!(
        s.render(Some("relative/root")).unwrap_err().message(),
        "render: the root 'relative/root' is not an absolute path or file:// URI"
    );
}
