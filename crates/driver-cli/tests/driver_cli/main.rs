//! `driver-cli`'s own tests through its public SPI: a small test dialect over the scripted
//! fake CLI ([`prompt_ended`]), so the resident loop's rules are checked without going
//! through a real CLI's dialect crate, also against a replayed two-way transcript
//! ([`replayed`]).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod prompt_ended;
mod replayed;
