//! matrix tests.
