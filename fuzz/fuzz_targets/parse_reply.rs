//! Fuzzes the reply parser (and the applier on what it returns): neither
//! may panic on any input. Run with `cargo fuzz run parse_reply` (nightly);
//! CI runs the proptest twin in `tests/it/patch_props.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swarm::patch::{apply, parse_reply, ReplyContext};

fuzz_target!(|data: &[u8]| {
    let Ok(reply) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = ReplyContext {
        target_prefix: "proj".into(),
        requested: vec!["pkg/app.py".into()],
        language: swarm::lang::code_language(&["pkg/app.py".to_string()]),
    };
    if let Ok(edits) = parse_reply(reply, &ctx) {
        // Use the reply itself as the current file text: arbitrary bytes.
        let read = |_: &str| Some(data.to_vec());
        let _ = apply(&edits, &read);
    }
});
