//! races tests.
