//! The byte and count budgets a server holds requests, tasks and answers to: what one
//! caller may make the server keep or send (see `docs/limits.md`, "Budgets"). Each flag sets one
//! limit of the engine's or the server's configuration; this module only carries them there.

use std::time::Duration;

use accord_engine::idempotency::IdempotencyConfig;
use accord_engine::task::{ListLimits, RuntimeConfig, ServiceConfig, TaskLimits};

use super::store::{DurableLimits, StoreOptions};

/// The budgets' flags.
#[derive(Debug, Clone, clap::Args)]
pub struct BudgetArgs {
    /// The most bytes of invoke responses kept for idempotent replay (e.g. `64MiB`). A response
    /// that does not fit is remembered by its digest: a repeat of its request is refused (409)
    /// rather than run again.
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes, env = "ACCORD_IDEMPOTENCY_BYTES")]
    pub idempotency_bytes: usize,
    /// The largest task input, as JSON (larger ones are refused before anything is stored).
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes, env = "ACCORD_MAX_INPUT_BYTES")]
    pub max_input_bytes: usize,
    /// The largest message a send may bring, with its metadata, as JSON.
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes, env = "ACCORD_MAX_MESSAGE_BYTES")]
    pub max_message_bytes: usize,
    /// The most messages a task's history may hold: follow-ups beyond are refused.
    #[arg(long, default_value_t = 100, env = "ACCORD_MAX_HISTORY")]
    pub max_history: usize,
    /// The most bytes of artifacts a task may hold, as JSON: a handler that produces more fails
    /// its task with `artifacts_too_large`.
    #[arg(long, default_value = "16MiB", value_parser = parse_bytes, env = "ACCORD_MAX_ARTIFACT_BYTES")]
    pub max_artifact_bytes: usize,
    /// How many history messages each listed task carries when the request asks for no number.
    #[arg(long, default_value_t = 0, env = "ACCORD_LIST_HISTORY_LENGTH")]
    pub list_history_length: usize,
    /// The most history messages each listed task carries, whatever the request asks.
    #[arg(long, default_value_t = 20, env = "ACCORD_LIST_MAX_HISTORY_LENGTH")]
    pub list_max_history_length: usize,
    /// The most bytes of tasks one list page carries: a page stops early, with a next-page token.
    #[arg(long, default_value = "4MiB", value_parser = parse_bytes, env = "ACCORD_LIST_PAGE_BYTES")]
    pub list_page_bytes: usize,
    /// Durable stores (SQLite, PostgreSQL): the most unfinished tasks at once; new tasks beyond
    /// are refused until some end. `0` sets no limit.
    #[arg(long, default_value_t = 100_000, env = "ACCORD_STORE_ACTIVE_TASKS")]
    pub store_active_tasks: usize,
    /// How long an ended task is kept after its last change, in every store: a number with `s`,
    /// `m`, `h` or `d` (e.g. `24h`, `7d`).
    #[arg(long, default_value = "24h", value_parser = parse_duration, env = "ACCORD_STORE_RETENTION")]
    pub store_retention: Duration,
}

impl BudgetArgs {
    /// The idempotency store's limits.
    pub fn idempotency(&self) -> IdempotencyConfig {
        IdempotencyConfig { max_bytes: self.idempotency_bytes, ..IdempotencyConfig::default() }
    }

    /// `config` with the task and list limits.
    pub fn service(&self, config: ServiceConfig) -> ServiceConfig {
        let limits = TaskLimits::default()
            .max_input_bytes(self.max_input_bytes)
            .max_message_bytes(self.max_message_bytes)
            .max_history(self.max_history);
        let lists = ListLimits::default()
            .default_history_length(self.list_history_length)
            .max_history_length(self.list_max_history_length)
            .max_page_bytes(self.list_page_bytes);
        config.limits(limits).lists(lists)
    }

    /// `config` with the artifacts' limit.
    pub fn runtime(&self, config: RuntimeConfig) -> RuntimeConfig {
        config.max_artifact_bytes(self.max_artifact_bytes)
    }

    /// `options` with the stores' task cap and retention.
    pub fn store(&self, mut options: StoreOptions) -> StoreOptions {
        options.durable = DurableLimits {
            max_active_tasks: (self.store_active_tasks > 0).then_some(self.store_active_tasks),
            retention: self.store_retention,
        };
        options.memory.retention = self.store_retention;
        options
    }
}

/// A size: a number of bytes, or a number followed by `KiB`, `MiB` or `GiB`.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err("expected a number of bytes, or a number followed by KiB, MiB or GiB".into()),
    };
    let number: usize = number.parse().map_err(|_| "expected a number of bytes".to_owned())?;
    number.checked_mul(1 << shift).filter(|bytes| *bytes > 0).ok_or_else(|| "the size must be above 0 and fit".into())
}

/// A duration: a number followed by `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        _ => return Err("expected a number followed by s, m, h or d (e.g. 24h)".into()),
    };
    let number: u64 = number.parse().map_err(|_| "expected a number followed by s, m, h or d".to_owned())?;
    number
        .checked_mul(seconds)
        .filter(|seconds| *seconds > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| "the duration must be above 0 and fit".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        budgets: BudgetArgs,
    }

    #[test]
    fn durable_stores_get_a_task_cap_and_a_day_of_retention_by_default() {
        use clap::Parser as _;
        let defaults = Serve::parse_from(["serve"]).budgets;
        let options = defaults.store(StoreOptions::default());
        assert_eq!(options.durable.max_active_tasks, Some(100_000));
        assert_eq!(options.durable.retention, Duration::from_secs(24 * 60 * 60));
        assert_eq!(options.memory.retention, Duration::from_secs(24 * 60 * 60));
        let set = Serve::parse_from(["serve", "--store-active-tasks", "0", "--store-retention", "7d"]).budgets;
        let options = set.store(StoreOptions::default());
        assert_eq!(
            options.durable,
            DurableLimits { max_active_tasks: None, retention: Duration::from_secs(7 * 86_400) }
        );
        assert_eq!(defaults.idempotency().max_bytes, 64 << 20);
        let service = defaults.service(ServiceConfig::default());
        assert_eq!((service.limits, service.lists), (TaskLimits::default(), ListLimits::default()));
        assert_eq!(defaults.runtime(RuntimeConfig::default()).max_artifact_bytes, 16 << 20);
    }

    #[test]
    fn sizes_and_durations_read_their_units() {
        assert_eq!(parse_bytes("4MiB"), Ok(4 << 20));
        assert_eq!(parse_bytes("512"), Ok(512));
        assert!(parse_bytes("0").is_err());
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("0s").is_err());
    }
}
