//! The store conformance suite on PostgreSQL: every scenario on a store over a fresh database.
//!
//! Needs a server: `scripts/with-postgres cargo test -p accord-store-postgres`.

mod common;

use std::sync::Arc;

use accord_engine::task::TaskStore;

accord_test_support::store_conformance_tests!(|| async { common::fresh_store().await as Arc<dyn TaskStore> });
