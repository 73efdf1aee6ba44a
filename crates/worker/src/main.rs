//! `agent-worker`: serves one credential namespace's drivers over the worker protocol on its
//! stdin and stdout (see the `worker` crate). It is started by a host, in the namespace's
//! runtime environment; its own environment is what that environment allowed, and it passes
//! the same allow-list on to the runtimes it runs.

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => return std::process::ExitCode::FAILURE,
    };
    runtime.block_on(worker::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        worker::MAX_LINE,
        runtime_env::HostEnv::capture(),
    ));
    std::process::ExitCode::SUCCESS
}
