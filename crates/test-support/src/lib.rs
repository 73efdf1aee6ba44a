//! What the workspace's tests share, so it is written once: the fixed proptest configuration
//! every fuzz and property test runs under and, with feature `host`, the fixtures of tests
//! that run whole hosts ([`host`]: a rotating run-service provider, agents over a SQLite file
//! reopened as after a restart; [`tools`]: a hosted `lookup_order` tool and an MCP client).
//!
//! Invariants: a configuration here is deterministic (a fixed seed) and writes no
//! failure-persistence files, so a failing case is the same on every machine and a test run
//! leaves nothing in the source tree.
//!
//! What it does not do: it holds no fixture that only one test binary uses (those live beside
//! their tests), and it is never a dependency of library code, only a dev-dependency. The
//! `host` fixtures build on the public APIs of `agent`, `driver-spi`, `run-service` and
//! `thread-store` only.
//!
//! Stability: internal to this workspace (`publish = false`); it changes with its tests.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "host")]
pub mod tools;

use proptest::test_runner::{Config, RngSeed};

/// The seed most of the workspace's fuzz tests share.
pub const SEED: u64 = 0x1513_f022;

/// Cases in a fuzz run of adversarial input.
pub const FUZZ_CASES: u32 = 10_000;

/// Cases in a property run over structured input.
pub const PROPERTY_CASES: u32 = 256;

/// `cases` cases from the fixed `seed`, with no failure-persistence files.
///
/// ```
/// let config = test_support::proptest_config(test_support::PROPERTY_CASES, 7);
/// assert_eq!(config.cases, 256);
/// assert!(config.failure_persistence.is_none());
/// ```
pub fn proptest_config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Adversarial short text for fuzzing a JSONL event translator's string fields: control
/// characters, multi-byte and zero-width characters, id-like words, JSON-ish punctuation and
/// long runs of one character.
pub fn nasty_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        3 => "\\PC{0,16}",
        1 => "[\\x00-\\x1f\\x7f ]{0,6}",
        3 => "[a-zA-Z0-9_-]{0,12}",
        1 => "[{}\\[\\]\":,\\\\0-9a-z ]{0,32}",
        1 => "[é€\u{1d11e}\u{200b}\u{0}]{0,8}",
        1 => (any::<char>(), 60usize..300).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

/// A fuzz run: [`FUZZ_CASES`] cases from [`SEED`].
pub fn fuzz_config() -> Config {
    proptest_config(FUZZ_CASES, SEED)
}
