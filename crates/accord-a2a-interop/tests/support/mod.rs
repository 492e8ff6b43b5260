//! Shared by the tests (and, by path, the examples) of this crate.

pub(crate) mod rust_peer;
