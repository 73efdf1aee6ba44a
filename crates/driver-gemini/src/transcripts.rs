//! Replays what the pinned Gemini CLI printed (`tests/fixtures/gemini-0.61.0/`, recorded by
//! `cargo xtask transcripts record`) through this dialect's translator and compares the
//! events and the verdict with the blessed `.events` goldens beside each transcript.
//! Re-bless after a reviewed change with `cargo xtask transcripts bless`.

use std::path::Path;

use driver_cli::Dialect as _;

#[test]
fn recorded_transcripts_replay_to_their_goldens() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gemini-0.61.0");
    let dialect = crate::dialect::Gemini::from(crate::GeminiOptions::new());
    cli_test_kit::replay_dir(&fixtures, |request| {
        dialect.translator(request, request.redactor())
    });
}
