//! The ACP driver's tests.

#![allow(clippy::unwrap_used, reason = "tests")]

mod real_codebuddy;
mod real_gemini;
mod real_support;
