#![doc = include_str!("../README.md")]

mod config;
mod sql;
mod store;
mod wakeups;

pub use config::PostgresStoreConfig;
pub use store::{Housekeeping, LISTENER_APPLICATION_NAME, PostgresStore};
