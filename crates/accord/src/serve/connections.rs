//! The connection flags: how many clients, and how slow, the server puts up with.

use std::time::Duration;

use accord_server::serve::ConnectionLimits;

/// Connection limits (docs/limits.md, "Connections").
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectionArgs {
    /// Connections served at once; at the cap, new ones wait in the accept backlog.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_MAX_CONNECTIONS")]
    pub max_connections: u32,
    /// Requests handled at once (a stream counts until its response starts); beyond, 503 with
    /// Retry-After.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..), env = "ACCORD_MAX_IN_FLIGHT")]
    pub max_in_flight: u32,
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
}

impl ConnectionArgs {
    /// The limits these flags set.
    pub fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.max_connections as usize,
            max_in_flight: self.max_in_flight as usize,
            header_timeout: Duration::from_secs_f64(self.header_timeout),
            idle_timeout: Duration::from_secs_f64(self.idle_timeout),
            body_timeout: Duration::from_secs_f64(self.body_timeout),
            write_timeout: Duration::from_secs_f64(self.write_timeout),
            ..ConnectionLimits::default()
        }
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

    fn limits(args: &[&str]) -> Result<ConnectionLimits, clap::Error> {
        Ok(Flags::try_parse_from(["serve"].iter().chain(args))?.connections.limits())
    }

    #[test]
    fn the_flags_default_to_the_library_defaults_and_set_each_limit() {
        assert_eq!(limits(&[]).expect("defaults"), ConnectionLimits::default());
        let set = limits(&[
            "--max-connections=7",
            "--max-in-flight=3",
            "--header-timeout=0.5",
            "--idle-timeout=2",
            "--body-timeout=4",
            "--write-timeout=5",
        ])
        .expect("valid flags");
        assert_eq!((set.max_connections, set.max_in_flight), (7, 3));
        assert_eq!(set.header_timeout, Duration::from_millis(500));
        assert_eq!(set.idle_timeout, Duration::from_secs(2));
        assert_eq!(set.body_timeout, Duration::from_secs(4));
        assert_eq!(set.write_timeout, Duration::from_secs(5));
        assert!(limits(&["--max-connections=0"]).is_err());
        assert!(limits(&["--idle-timeout=0"]).is_err());
    }
}
