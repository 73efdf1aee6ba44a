//! Integration tests of the redactor: one binary, one module per concern.
#![allow(clippy::unwrap_used, reason = "tests")]

mod patterns;
mod shapes;
mod stream;
