//! lifecycle tests.
