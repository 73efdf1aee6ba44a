//! Integration tests of `agent`: Threads, the run-service compatibility contract, restarts,
//! races, and secret hygiene.
#![allow(clippy::unwrap_used, reason = "tests")]

mod approvals;
mod contract;
mod endpoints;
mod explain;
mod incompatible;
mod lifecycle;
mod matrix;
mod ownership;
mod persistence;
mod prewarm;
mod races;
mod steer;
mod sticky;
mod sticky_killed;
mod streams;
mod structured;
mod tools;
