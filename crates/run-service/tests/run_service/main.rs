//! Integration tests for `run-service`: views, validation, secrets and the semantic builder.
#![allow(clippy::unwrap_used, reason = "tests")]

mod fuzz;
mod properties;
mod secret_headers;
mod secrets;
mod semantic;
mod support;
mod validation;
mod views;
