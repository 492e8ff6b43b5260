//! Push notifications: the webhook policy, retries and the key push configs are sealed with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_engine::task::PushKey;
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;

/// The file a server keeps its push key in — beside a SQLite store's file, else in the working
/// directory — unless told otherwise.
pub const DEFAULT_PUSH_KEY_FILE: &str = "accord-push.key";

/// The push-notification flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PushArgs {
    /// Networks webhooks may reach beside public addresses, over `http` as well as `https`:
    /// `loopback`, `private` (RFC 1918 and IPv6 ULA), or an address or CIDR. Repeat the flag or
    /// separate entries with commas. Without it, webhooks must be `https` to public addresses.
    #[arg(long = "webhook-allow", value_delimiter = ',', env = "ACCORD_WEBHOOK_ALLOW")]
    pub webhook_allow: Vec<String>,
    /// The file holding the key push configs are sealed with at rest (32 bytes; made, readable
    /// by its owner only, when missing). Every worker sharing a store needs the same key.
    /// Default: `accord-push.key` beside a SQLite store's file (in the working directory for
    /// PostgreSQL); a fresh key per process for `memory`. `accord serve` prints which file.
    #[arg(long, env = "ACCORD_PUSH_KEY_FILE")]
    pub push_key_file: Option<PathBuf>,
    /// A PEM file of CA certificates trusted for `https` webhooks in addition to the system's
    /// roots (a receiver whose certificate a private CA issued).
    #[arg(long, env = "ACCORD_PUSH_CA_FILE", value_name = "FILE")]
    pub push_ca_file: Option<PathBuf>,
    /// Send no push notifications (the card says `pushNotifications: false`).
    #[arg(long, env = "ACCORD_NO_PUSH")]
    pub no_push: bool,
    /// Attempts an update gets before it is given up on.
    #[arg(long, default_value_t = 8, hide = true)]
    pub push_max_attempts: u32,
    /// The wait before the first retry of an update, in milliseconds (each later one doubles).
    #[arg(long, default_value_t = 1000, hide = true)]
    pub push_first_retry_ms: u64,
    /// How long a worker holds a webhook it delivers to before another worker may take it over,
    /// in milliseconds.
    #[arg(long, default_value_t = 120_000, hide = true)]
    pub push_lease_ms: u64,
}

impl PushArgs {
    /// The server's push settings; `None` with `--no-push`.
    pub fn settings(&self) -> Result<Option<PushSettings>, String> {
        if self.no_push {
            return Ok(None);
        }
        let mut policy = WebhookPolicy::default();
        for entry in self.webhook_allow.iter().map(|entry| entry.trim()).filter(|entry| !entry.is_empty()) {
            let networks = WebhookPolicy::parse_allow(entry).map_err(|error| format!("--webhook-allow: {error}"))?;
            policy = policy.allow_networks(networks);
        }
        let first_retry = Duration::from_millis(self.push_first_retry_ms);
        let mut settings = PushSettings::default()
            .policy(policy)
            .retries(self.push_max_attempts, first_retry, Duration::from_secs(300).max(first_retry))
            .lease(Duration::from_millis(self.push_lease_ms.max(100)));
        if let Some(path) = &self.push_ca_file {
            let flag = |reason: String| format!("--push-ca-file {}: {reason}", path.display());
            let pem = std::fs::read(path).map_err(|error| flag(format!("cannot be read: {error}")))?;
            settings = settings.trust_ca_pem(&pem).map_err(flag)?;
        }
        Ok(Some(settings))
    }

    /// The key push configs are sealed with: read from (or made in) the key file for a durable
    /// store, fresh for an in-process one unless a file is named.
    pub fn key(&self, durable: bool) -> Result<PushKey, String> {
        self.key_beside(durable, None).map(|(key, _)| key)
    }

    /// As [`PushArgs::key`], the default file beside `store_file` (a SQLite store's file) rather
    /// than in the working directory; with the file the key was read from or made in, if any.
    pub fn key_beside(&self, durable: bool, store_file: Option<&Path>) -> Result<(PushKey, Option<PathBuf>), String> {
        let path = match (&self.push_key_file, durable) {
            (Some(path), _) => path.clone(),
            (None, true) => match store_file.and_then(Path::parent).filter(|dir| !dir.as_os_str().is_empty()) {
                Some(dir) => dir.join(DEFAULT_PUSH_KEY_FILE),
                None => PathBuf::from(DEFAULT_PUSH_KEY_FILE),
            },
            (None, false) => return Ok((PushKey::generate(), None)),
        };
        let key = load_or_make_key(&path)?;
        Ok((key, Some(path)))
    }
}

/// Reads a push key file (32 bytes), or makes one, readable by its owner only.
pub fn load_or_make_key(path: &Path) -> Result<PushKey, String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let bytes: [u8; 32] = bytes.try_into().map_err(|bytes: Vec<u8>| {
                format!("the push key file {} holds {} bytes, not 32", path.display(), bytes.len())
            })?;
            Ok(PushKey::from_bytes(bytes))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let key = PushKey::generate();
            write_private(path, &key.to_bytes())
                .map_err(|error| format!("cannot write the push key file {}: {error}", path.display()))?;
            Ok(key)
        }
        Err(error) => Err(format!("cannot read the push key file {}: {error}", path.display())),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
