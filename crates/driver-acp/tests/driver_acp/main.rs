//! The ACP driver's tests.
