//! `agentctl serve --dev`: the dev-only HTTP endpoints `GET /auth/status` and
//! `GET /runtime-env`, on loopback only, behind a bearer token generated at start and printed
//! once.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::env::{EnvOptions, build};
use crate::{Failure, exit, output};

struct Shared {
    options: EnvOptions,
    /// blake3 of the token: a presented token is hashed and compared in constant time.
    token_digest: blake3::Hash,
}

/// Serves until interrupted (Ctrl-C).
pub(crate) async fn serve(options: &EnvOptions, bind: IpAddr, port: u16) -> Result<(), Failure> {
    if !bind.is_loopback() {
        return Err(Failure::new(
            exit::USAGE,
            "serve --dev binds loopback addresses only (127.0.0.1, ::1)",
        ));
    }
    // Fail early on options that cannot build an environment.
    build(options)?;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|_| Failure::new(exit::FAILURE, "the operating system's random source failed"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let shared = Arc::new(Shared {
        options: options.clone(),
        token_digest: blake3::hash(token.as_bytes()),
    });
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(bind, port))
        .await
        .map_err(|e| Failure::new(exit::FAILURE, format!("cannot listen: {e}")))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::new(exit::FAILURE, format!("cannot listen: {e}")))?;
    let app = Router::new()
        .route("/auth/status", get(auth_status))
        .route("/runtime-env", get(runtime_env))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), gate))
        .with_state(shared);
    let mut out = output::Out::stdout();
    out.line(&format!("listening on http://{address}"))?;
    // Printed once: it is not stored anywhere and cannot be shown again.
    out.line(&format!("token {token}"))?;
    drop(out);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Failure::new(exit::FAILURE, format!("the server failed: {e}")))
}

async fn gate(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| blake3::hash(t.trim().as_bytes()));
    if presented != Some(shared.token_digest) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    next.run(request).await
}

fn json_response(value: Result<serde_json::Value, Failure>) -> Response {
    match value {
        Ok(value) => (
            [(header::CONTENT_TYPE, "application/json")],
            value.to_string(),
        )
            .into_response(),
        Err(failure) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            failure.message().to_owned(),
        )
            .into_response(),
    }
}

async fn auth_status(State(shared): State<Arc<Shared>>) -> Response {
    json_response(build(&shared.options).and_then(|env| {
        serde_json::to_value(env.auth_statuses())
            .map_err(|e| Failure::new(exit::FAILURE, e.to_string()))
    }))
}

async fn runtime_env(State(shared): State<Arc<Shared>>) -> Response {
    json_response(build(&shared.options).and_then(|env| {
        serde_json::to_value(env.summary()).map_err(|e| Failure::new(exit::FAILURE, e.to_string()))
    }))
}
