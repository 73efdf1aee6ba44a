//! Replays what the pinned Claude Code CLI printed (`tests/fixtures/claude-code-2.1.197/`, recorded by
//! `cargo xtask transcripts record`) through this dialect's translator and compares the
//! events and the verdict with the blessed `.events` goldens beside each transcript.
//! Re-bless after a reviewed change with `cargo xtask transcripts bless`.

use std::path::Path;

use driver_cli::Dialect as _;

#[test]
fn recorded_transcripts_replay_to_their_goldens() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/claude-code-2.1.197");
    let dialect = driver_stream_json::StreamJsonDialect::<crate::dialect::ClaudeCode>::from(
        crate::ClaudeCodeOptions::new(),
    );
    cli_test_kit::replay_dir(&fixtures, |request| {
        dialect.translator(request, request.redactor())
    });
}
