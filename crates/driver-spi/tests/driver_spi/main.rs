//! Integration tests of the driver contract, the reference driver and the conformance kit.
#![allow(clippy::unwrap_used, reason = "tests")]

mod config;
mod events;
mod fuzz;
#[cfg(feature = "conformance")]
mod kit_fails;
mod process;
mod redactor_forms;
mod reference;
mod secrets;
mod session;
mod types;

use std::future::Future;

use compat_fingerprint::{Fingerprint, Kind};
use driver_spi::{ProfilePayload, Request, RuntimePayload, SessionContext};
use run_service::{EnvBinding, McpServer, RunId, ServiceRef};

const TEST: Kind = Kind::new("agent-sdk 2026-11-30 driver-spi tests v1");

/// A fingerprint named by a label.
pub(crate) fn fp(label: &str) -> Fingerprint {
    Fingerprint::of(TEST, |e| e.str(label))
}

/// A profile with these exact and session-compatibility labels.
pub(crate) fn profile(exact: &str, session: &str) -> ProfilePayload {
    ProfilePayload::new(fp(exact), fp(session))
}

/// Runs a future to completion on a current-thread runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// One allocation of an MCP run service: a port, a bearer env-var name and a token.
pub(crate) struct Allocation {
    pub(crate) port: u16,
    pub(crate) env_name: &'static str,
    pub(crate) token: &'static str,
}

impl Allocation {
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn server(&self) -> McpServer {
        McpServer::streamable_http("agent-ui", self.url()).with_bearer_token_env(self.env_name)
    }

    pub(crate) fn service(&self) -> ServiceRef {
        ServiceRef::new("agent-ui", "Agent UI")
            .with_url(self.url())
            .with_port(self.port)
            .with_mcp(self.server())
            .with_secret_env(EnvBinding::new(self.env_name, self.token))
    }
}

pub(crate) const FIRST: Allocation = Allocation {
    port: 4101,
    env_name: "UI_TOKEN_A",
    token: "canary-secret-a-7d41c2",
};

pub(crate) const SECOND: Allocation = Allocation {
    port: 4202,
    env_name: "UI_TOKEN_B",
    token: "canary-secret-b-0e93f8",
};

/// A request that carries an allocation, with a session context and a profile.
pub(crate) fn request(
    run: &str,
    allocation: &Allocation,
    session: SessionContext,
    profile: ProfilePayload,
) -> Request {
    Request::new(RunId::new(run), format!("prompt of {run}"), profile)
        .with_session(session)
        .with_runtime(RuntimePayload::from_services([allocation.service()]))
        .with_mcp([allocation.server()])
        .with_workspace("/work/space")
        .with_model("test-model")
}
