//! The start of most driver and translator tests: a run with its events, its failure class
//! and its checkpoint; a translator driven over well-formed events.

use driver_cli::{Tracked, Translator};
use driver_spi::{DriverEvent, FailureKind, Request};
use serde_json::Value;

/// Runs `request` on `driver` and returns the result with every event the run emitted: the
/// start of most driver tests.
pub async fn run(
    driver: &dyn driver_spi::Driver,
    request: Request,
) -> (
    Result<driver_spi::Response, driver_spi::DriverError>,
    Vec<DriverEvent>,
) {
    let sink = std::sync::Arc::new(driver_spi::CollectingSink::new());
    let result = driver.run(request, sink.clone()).await;
    (result, sink.take())
}

/// The failure class of a run's result: a failed run's, or a response's failure; `None` for a
/// success or an error that is not a failure (a refusal, a rejected resume).
pub fn failed_kind(
    result: &Result<driver_spi::Response, driver_spi::DriverError>,
) -> Option<FailureKind> {
    match result {
        Err(driver_spi::DriverError::Failed(f)) => Some(f.kind),
        Ok(r) => r.failure.as_ref().map(|f| f.kind),
        Err(_) => None,
    }
}

/// The checkpoint a host would store from `response`.
///
/// # Panics
/// When the response has none: the test expected a clean turn.
pub fn checkpoint(response: &driver_spi::Response) -> driver_spi::SessionState {
    response
        .persistable_checkpoint()
        .expect("a clean turn's checkpoint")
        .clone()
}

/// Drives `translator` over `events` as the driver does and returns it with every event it
/// produced: the start of most translator unit tests.
///
/// # Panics
/// When an event is malformed: the test's input must be well formed.
pub fn translate_all<T: Translator>(
    translator: T,
    events: &[Value],
) -> (Tracked<T>, Vec<DriverEvent>) {
    let mut translator = Tracked::new(translator);
    let mut out = Vec::new();
    for event in events {
        out.extend(translator.translate(event).expect("a well-formed event"));
    }
    (translator, out)
}
