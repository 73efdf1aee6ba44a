//! Auto traits drivers rely on: processes and their futures move across threads.

use crate::command::CliCommand;
use crate::command::Limits;
use crate::error::ProcessError;
use crate::files::RunFiles;
use crate::output::SideOutput;
use crate::process::CliProcess;
use crate::process::Finished;
use crate::version::Version;

fn send_sync<T: Send + Sync>() {}

fn send<T: Send>(_: &T) {}

#[test]
fn public_types_are_send_and_sync() {
    send_sync::<CliCommand>();
    send_sync::<CliProcess>();
    send_sync::<ProcessError>();
    send_sync::<Finished>();
    send_sync::<Limits>();
    send_sync::<RunFiles<'static>>();
    send_sync::<SideOutput>();
    send_sync::<Version>();
}

#[test]
fn futures_are_send() {
    // A compile-time check: naming the function makes the compiler check its body.
    fn check(mut process: CliProcess) {
        send(&process.next_line());
        send(&process.next_json());
        send(&process.wait());
    }
    let _: fn(CliProcess) = check;
}
