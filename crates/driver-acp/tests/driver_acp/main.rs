//! The ACP driver's tests: the driver against a scripted fake ACP agent (`fake_agent`, an
//! agent registered by its command, `support`), and the driver-spi conformance kit over it
//! (`conformance`, which `cargo xtask conformance` runs by exact name).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod conformance;
mod fake_agent;
mod support;
