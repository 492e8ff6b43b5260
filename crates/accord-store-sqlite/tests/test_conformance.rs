//! The store conformance suite of `accord-test-support`, run against [`SqliteStore`]: each
//! scenario gets a fresh store on a fresh SQLite file, deleted afterwards.
//!
//! [`SqliteStore`]: accord_store_sqlite::SqliteStore

mod support;

accord_test_support::store_conformance_tests!(support::ScratchStore::open_shared);
