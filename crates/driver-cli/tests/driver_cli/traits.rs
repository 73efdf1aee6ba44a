//! Auto traits drivers rely on: processes and their futures move across threads.

use driver_cli::{CliCommand, CliError, CliProcess, Finished, Limits, RunFiles, Version};

fn send_sync<T: Send + Sync>() {}

fn send<T: Send>(_: &T) {}

#[test]
fn public_types_are_send_and_sync() {
    send_sync::<CliCommand>();
    send_sync::<CliProcess>();
    send_sync::<CliError>();
    send_sync::<Finished>();
    send_sync::<Limits>();
    send_sync::<RunFiles<'static>>();
    send_sync::<Version>();
}

#[allow(dead_code, reason = "compile-time check only")]
fn futures_are_send(mut process: CliProcess) {
    send(&process.next_line());
    send(&process.next_json());
    send(&process.wait());
}
