//! The one test binary of agentctl: the binary run as a process, one module per command or
//! concern. `acp_serve` drives `agentctl acp` with a client on the maintained ACP crate,
//! `acp_codex` the same restart with the real Codex CLI behind it, `acp_headers` with an
//! editor server that requires a secret header, `acp_plan` an ACP agent's thinking and plan
//! reaching the editor. `run`, `approve`, `structured` and `ownership` drive `agentctl run` and
//! `threads explain` with the reference runtime; `threads` lists, shows and deletes stored
//! Threads (SQLite and PostgreSQL); `env`, `bundle` and `serve` cover `auth status`,
//! `runtime-env show`, `support-bundle` and `serve --dev`; `real_clis` runs the real Codex,
//! Claude Code, CodeBuddy and Gemini CLIs against the test kit's mock model servers (a visible
//! `SKIPPED` without the binary, a failure under CI); `docs` checks that the docs name what the
//! code offers. What the modules share is in `support`.
//!
//! The PostgreSQL tests need `THREAD_STORE_POSTGRES_URL` (`--skip postgres` skips them
//! visibly).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod acp;
mod acp_codex;
mod acp_headers;
mod acp_plan;
mod acp_serve;
mod approve;
mod bundle;
mod docs;
mod env;
mod ownership;
mod real_clis;
mod run;
mod serve;
mod structured;
mod support;
mod threads;
mod worker;
