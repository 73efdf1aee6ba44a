//! Provider conformance kit (feature `conformance`).
