//! The ACP driver's tests: the driver against a scripted fake ACP agent (`fake_agent`, an
//! agent registered by its command, `support`), the driver-spi conformance kit over it
//! (`conformance`, which `cargo xtask conformance` runs by exact name), and the real
//! `gemini --acp` and `codebuddy --acp`, offline (`real_gemini`, `real_codebuddy`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod conformance;
mod fake_agent;
mod real_codebuddy;
mod real_gemini;
mod real_support;
mod support;
