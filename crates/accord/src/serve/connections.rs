//! The connection flags: how many clients, and how slow, the server puts up with, and how it
//! stops.

use std::time::Duration;

use accord_server::serve::ConnectionLimits;

/// Connection limits and the stop (docs/limits.md, "Connections" and "Stopping").
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectionArgs {
    /// Connections served at once; at the cap, idle connections are closed to make room, then
    /// new ones wait in the accept backlog. Default: sized from the file-descriptor limit, which
    /// the server raises to its hard limit at start (the limit less a quarter, at least 256
    /// descriptors, kept for the store, push and files; between 64 and 32768).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_MAX_CONNECTIONS")]
    pub max_connections: Option<u32>,
    /// Requests handled at once (a stream counts until its response starts); beyond, 503 with
    /// Retry-After.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_MAX_IN_FLIGHT")]
    pub max_in_flight: u32,
    /// Seconds a new connection has to send its first byte; then it closes.
    #[arg(long, default_value_t = 5.0, value_parser = super::positive_seconds, env = "ACCORD_FIRST_BYTE_TIMEOUT")]
    pub first_byte_timeout: f64,
    /// Seconds a client has to send a request head once it has begun; then the connection closes.
    #[arg(long, default_value_t = 10.0, value_parser = super::positive_seconds, env = "ACCORD_HEADER_TIMEOUT")]
    pub header_timeout: f64,
    /// Seconds a connection may stay open with no request; then it closes.
    #[arg(long, default_value_t = 60.0, value_parser = super::positive_seconds, env = "ACCORD_IDLE_TIMEOUT")]
    pub idle_timeout: f64,
    /// Seconds a client has to send a request body after its head; then the connection closes.
    #[arg(long, default_value_t = 30.0, value_parser = super::positive_seconds, env = "ACCORD_BODY_TIMEOUT")]
    pub body_timeout: f64,
    /// Seconds a response may wait for its client to read; then the connection closes.
    #[arg(long, default_value_t = 30.0, value_parser = super::positive_seconds, env = "ACCORD_WRITE_TIMEOUT")]
    pub write_timeout: f64,
    /// Seconds a stop (SIGTERM, SIGINT) waits for requests in flight to finish; then they are
    /// cut. A second signal cuts them at once.
    #[arg(long, default_value_t = 30.0, value_parser = seconds_or_zero, env = "ACCORD_SHUTDOWN_GRACE")]
    pub shutdown_grace: f64,
    /// Seconds between a stop signal and closing the listeners, while `/health` answers 503 and
    /// everything else is still served, so that a load balancer stops sending first. Default 0.
    #[arg(long, default_value_t = 0.0, value_parser = seconds_or_zero, env = "ACCORD_SHUTDOWN_DELAY")]
    pub shutdown_delay: f64,
}

/// Seconds, 0 included.
fn seconds_or_zero(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && (0.0..=86_400.0).contains(&seconds) => Ok(seconds),
        _ => Err("expected a number of seconds from 0 to 86400".into()),
    }
}

/// The fewest descriptors kept out of the connection cap, for the store, push deliveries,
/// backends and files.
const RESERVED_DESCRIPTORS: u64 = 256;
/// The default cap's bounds.
const MIN_DEFAULT_CONNECTIONS: u64 = 64;
const MAX_DEFAULT_CONNECTIONS: u64 = 32_768;

/// The default connection cap under a file-descriptor limit: the limit less a quarter (at least
/// 256), between 64 and 32,768; 512 when the limit is unknown.
pub fn connection_cap(descriptor_limit: Option<u64>) -> usize {
    match descriptor_limit {
        Some(limit) => {
            let reserved = (limit / 4).max(RESERVED_DESCRIPTORS);
            let cap = limit.saturating_sub(reserved).clamp(MIN_DEFAULT_CONNECTIONS, MAX_DEFAULT_CONNECTIONS);
            usize::try_from(cap).unwrap_or(usize::MAX)
        }
        None => ConnectionLimits::default().max_connections,
    }
}

/// Raises the process's soft limit of open file descriptors to its hard limit, as Go's runtime
/// and nginx do, and returns the soft limit in force afterwards (`None` where there is no such
/// limit, or it is unlimited). A refused raise keeps the old limit.
pub fn raise_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
            if let Err(error) = setrlimit(Resource::Nofile, raised) {
                tracing::debug!(%error, "could not raise the file-descriptor limit");
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

impl ConnectionArgs {
    /// The limits these flags set, the default connection cap sized from the process's current
    /// file-descriptor limit.
    pub fn limits(&self) -> ConnectionLimits {
        self.limits_under(current_descriptor_limit())
    }

    /// The limits these flags set, the default connection cap sized from `descriptor_limit`.
    pub fn limits_under(&self, descriptor_limit: Option<u64>) -> ConnectionLimits {
        let max_connections = match self.max_connections {
            Some(cap) => cap as usize,
            None => connection_cap(descriptor_limit),
        };
        ConnectionLimits {
            max_connections,
            max_in_flight: self.max_in_flight as usize,
            first_byte_timeout: Duration::from_secs_f64(self.first_byte_timeout),
            header_timeout: Duration::from_secs_f64(self.header_timeout),
            idle_timeout: Duration::from_secs_f64(self.idle_timeout),
            body_timeout: Duration::from_secs_f64(self.body_timeout),
            write_timeout: Duration::from_secs_f64(self.write_timeout),
            ..ConnectionLimits::default()
        }
    }

    /// How long a stop waits for requests in flight.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_grace)
    }

    /// How long a stop keeps serving, `/health` answering 503, before it closes the listeners.
    pub fn shutdown_delay(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_delay)
    }
}

/// The soft limit of open file descriptors, if there is one.
fn current_descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        connections: ConnectionArgs,
    }

    fn flags(args: &[&str]) -> Result<ConnectionArgs, clap::Error> {
        Ok(Flags::try_parse_from(["serve"].iter().chain(args))?.connections)
    }

    fn limits(args: &[&str]) -> Result<ConnectionLimits, clap::Error> {
        Ok(flags(args)?.limits_under(Some(1024)))
    }

    #[test]
    fn the_flags_default_to_the_library_defaults_and_set_each_limit() {
        let defaults = limits(&[]).expect("defaults");
        assert_eq!(defaults, ConnectionLimits { max_connections: 768, ..ConnectionLimits::default() });
        let set = limits(&[
            "--max-connections=7",
            "--max-in-flight=3",
            "--first-byte-timeout=0.25",
            "--header-timeout=0.5",
            "--idle-timeout=2",
            "--body-timeout=4",
            "--write-timeout=5",
        ])
        .expect("valid flags");
        assert_eq!((set.max_connections, set.max_in_flight), (7, 3));
        assert_eq!(set.first_byte_timeout, Duration::from_millis(250));
        assert_eq!(set.header_timeout, Duration::from_millis(500));
        assert_eq!(set.idle_timeout, Duration::from_secs(2));
        assert_eq!(set.body_timeout, Duration::from_secs(4));
        assert_eq!(set.write_timeout, Duration::from_secs(5));
        assert!(limits(&["--max-connections=0"]).is_err());
        assert!(limits(&["--idle-timeout=0"]).is_err());
        assert!(limits(&["--first-byte-timeout=0"]).is_err());
    }

    #[test]
    fn the_default_cap_follows_the_descriptor_limit_and_leaves_room() {
        assert_eq!(connection_cap(None), 512);
        assert_eq!(connection_cap(Some(256)), 64, "never below 64");
        assert_eq!(connection_cap(Some(1024)), 768, "256 kept under a 1024 limit");
        assert_eq!(connection_cap(Some(20_000)), 15_000, "a quarter kept");
        assert_eq!(connection_cap(Some(1 << 20)), 32_768, "bounded, whatever the limit");
        assert_eq!(flags(&["--max-connections=9"]).expect("valid").limits_under(Some(1 << 20)).max_connections, 9);
    }

    #[test]
    fn the_stop_flags_take_zero_and_refuse_the_absurd() {
        let args = flags(&[]).expect("defaults");
        assert_eq!((args.shutdown_grace(), args.shutdown_delay()), (Duration::from_secs(30), Duration::ZERO));
        let args = flags(&["--shutdown-grace=0", "--shutdown-delay=1.5"]).expect("valid");
        assert_eq!((args.shutdown_grace(), args.shutdown_delay()), (Duration::ZERO, Duration::from_millis(1500)));
        assert!(flags(&["--shutdown-grace=-1"]).is_err());
        assert!(flags(&["--shutdown-delay=inf"]).is_err());
    }

    #[test]
    fn raising_the_descriptor_limit_leaves_it_at_least_where_it_was() {
        let before = current_descriptor_limit();
        let after = raise_descriptor_limit();
        match (before, after) {
            (Some(before), Some(after)) => assert!(after >= before),
            (None, after) => assert_eq!(after, None, "unlimited stays unlimited"),
            (Some(_), None) => {}
        }
    }
}
