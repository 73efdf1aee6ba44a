//! What the two OpenAI wires (Chat Completions and Responses) answer alike: their routing and
//! the body of a scripted error.

use serde_json::{Value, json};

use crate::server::{Route, no_route, route_path};

/// `POST …<model_suffix>` is a model request, `GET …/models` answers `models`, anything else is
/// a 404 whose body `not_found` builds from the [`no_route`] message (the two APIs' 404 bodies
/// differ in a field).
pub(crate) fn route(
    method: &str,
    path: &str,
    model_suffix: &str,
    models: &Value,
    not_found: fn(String) -> Value,
) -> Route {
    let path = route_path(path);
    if method == "POST" && path.ends_with(model_suffix) {
        Route::Model
    } else if method == "GET" && path.ends_with("/models") {
        Route::json(200, models)
    } else {
        Route::json(404, &not_found(no_route(method, path)))
    }
}

/// The body of a scripted error, whatever its status.
pub(crate) fn error_body(message: &str) -> Value {
    json!({"error": {"message": message, "type": "test_kit_error", "code": null}})
}
