//! canary tests.
