//! incompatible tests.
