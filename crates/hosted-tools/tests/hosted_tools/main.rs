//! Integration tests of `hosted-tools`: a real rmcp client over HTTP against the provider's
//! server: listing, calling, the bearer gate, per-run attribution, events and shutdown.
#![allow(clippy::unwrap_used, reason = "tests")]

mod support;

mod attribution;
mod gate;
mod idle;
mod serve;
