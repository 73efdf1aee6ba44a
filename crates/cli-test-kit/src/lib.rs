//! The driver test kit: what the CLI driver crates' own tests, conformance runs and `turns`
//! benches share, kept out of the production crates. Only ever a dev-dependency.
//!
//! * [`fuzz_translator!`] and its parts ([`check_stream`], [`check_no_trace`], [`take_line`]
//!   over [`events`] and [`any_line`]): one fuzz that every [`Translator`](driver_cli::Translator)
//!   runs;
//! * [`replay`] and [`replay_dir`]: recorded CLI transcripts replayed through a translator and
//!   compared with blessed goldens;
//! * [`rpc_replay`]: two-way JSON-RPC transcripts of a resident protocol session, replayed by
//!   method and id, with the kit as the server of a real driver's resident loop;
//! * [`run`], [`failed_kind`], [`checkpoint`] and [`translate_all`]: the start of most driver
//!   and translator tests;
//! * [`FakeCli`]: one typed fake CLI for every dialect, over the scripted `fake-cli`; and
//!   [`FakeCliFactory`], the one conformance factory over it;
//! * [`assert_canary_hidden`]: the one check that a model key the driver knows reaches no
//!   event, output or log;
//! * [`thread_of_turns`] and [`run_turns_bench`]: the measuring part of every driver's `turns`
//!   bench;
//! * [`stream_json`]: the scripted resident fake of the stream-json CLIs (Claude Code,
//!   CodeBuddy).
//!
//! Translators are private to their driver crates, so the fuzz and the replay are called from
//! a `#[cfg(test)]` module inside the crate, which dev-depends on this one (an `ignore`d
//! sketch: `translator()` and the fixtures are each driver crate's own, private):
//!
//! ```ignore
//! // The fuzz: well-formed streams, no trace of a malformed event, any line taken.
//! cli_test_kit::fuzz_translator!(translator(), WORDS, KEYS);
//!
//! #[test]
//! fn transcripts() {
//!     cli_test_kit::replay_dir(fixtures, |request| {
//!         options.translator(request, request.redactor())
//!     });
//! }
//! ```
//!
//! # Invariants
//! - **Public API only.** The kit reaches `driver-cli`, `driver-process` and `driver-spi`
//!   through what they publish, so it tests what a dialect crate can rely on, and a production
//!   crate never grows an item for its tests' sake.
//! - **A dev-dependency only.** No production crate depends on it; `driver-cli` uses it only
//!   from its integration tests (its unit tests would link a second copy of itself).
//! - **Deterministic.** The fuzz runs under `test-support`'s fixed-seed configuration; a
//!   replay depends on nothing a recording may vary (ids, timestamps, durations).
//!
//! # What it deliberately does not do
//! It knows no CLI's dialect: each driver crate scripts its own CLI's lines over [`FakeCli`]
//! (only the stream-json fake, shared by two dialects, lives here). It records no transcript:
//! `transcript-recorder` records the one-way fixtures, and a two-way transcript is given to
//! [`rpc_replay`] as a file. It panics where a test should fail, and is no model for library
//! code.
//!
//! Stability: internal to this workspace (`publish = false`); it changes with its tests.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod canary;
mod factory;
mod fake;
mod fuzz;
mod replay;
pub mod rpc_replay;
mod runs;
pub mod stream_json;
mod turns;

pub use canary::{
    CANARY, assert_canary_hidden, assert_canary_hidden_in_approvals, canary_request, canary_secret,
};
pub use factory::{
    FakeCliFactory, STEER_PROMPT, TOOL_USE_PROMPT, process_mode, unscripted_policy_clauses,
};
pub use fake::FakeCli;
pub use fuzz::{any_line, check_no_trace, check_stream, event, events, nasty_text, take_line};
pub use replay::{replay, replay_dir};
pub use runs::{checkpoint, failed_kind, run, translate_all};
pub use turns::{TurnsRow, run_turns_bench, thread_of_turns};
