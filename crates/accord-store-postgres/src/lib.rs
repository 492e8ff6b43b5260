#![doc = include_str!("../README.md")]

mod config;
mod sql;
mod store;
mod wakeups;
mod writer;

pub use config::{PostgresStoreConfig, SynchronousCommit};
pub use store::{Housekeeping, LISTENER_APPLICATION_NAME, PostgresStore, WRITER_APPLICATION_NAME};
