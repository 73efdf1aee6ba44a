//! Cross-crate tests live in `tests/`; this library only anchors the package.
