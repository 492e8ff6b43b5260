//! Push notifications on the command line: `accord serve`'s webhook settings, and
//! `accord push set|get|list|delete`, which manage a task's webhooks on an A2A agent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use accord_client::a2a::{A2aClient, A2aClientOptions};
use accord_engine::task::PushKey;
use accord_server::push::PushSettings;
use accord_server::push::guard::WebhookPolicy;
use accord_types::a2a::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig,
};
use clap::{Args, Subcommand};
use reqwest::header::{self, HeaderValue};

/// The file `accord serve` keeps its push key in, in the working directory, unless told otherwise.
pub const DEFAULT_PUSH_KEY_FILE: &str = "accord-push.key";

/// `accord serve`'s push-notification settings.
#[derive(Args, Debug, Clone, Default)]
pub struct PushServeArgs {
    /// Networks webhooks may reach beside public addresses, over `http` as well as `https`:
    /// `loopback`, `private` (RFC 1918 and IPv6 ULA), or an address or CIDR. Repeat the flag or
    /// separate entries with commas. Without it, webhooks must be `https` to public addresses.
    #[arg(long = "webhook-allow", value_delimiter = ',', env = "ACCORD_WEBHOOK_ALLOW")]
    pub webhook_allow: Vec<String>,
    /// The file holding the key push configs are sealed with at rest (32 bytes; made, readable
    /// by its owner only, when missing). Every worker sharing a store needs the same key.
    /// Default: `accord-push.key` in the working directory for a durable store; a fresh key per
    /// process for `memory`.
    #[arg(long, env = "ACCORD_PUSH_KEY_FILE")]
    pub push_key_file: Option<PathBuf>,
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

impl PushServeArgs {
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
        Ok(Some(
            PushSettings::default()
                .policy(policy)
                .retries(self.push_max_attempts, first_retry, Duration::from_secs(300).max(first_retry))
                .lease(Duration::from_millis(self.push_lease_ms.max(100))),
        ))
    }

    /// The key push configs are sealed with: read from (or made in) the key file for a durable
    /// store, fresh for an in-process one unless a file is named.
    pub fn key(&self, durable: bool) -> Result<PushKey, String> {
        match (&self.push_key_file, durable) {
            (Some(path), _) => load_or_make_key(path),
            (None, true) => load_or_make_key(Path::new(DEFAULT_PUSH_KEY_FILE)),
            (None, false) => Ok(PushKey::generate()),
        }
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

/// What `accord push` does.
#[derive(Subcommand, Debug)]
pub enum PushCommand {
    /// Register (or replace, by id) a webhook for a task's updates.
    Set {
        /// Which agent, and as whom.
        #[command(flatten)]
        agent: AgentArgs,
        /// The task.
        task_id: String,
        /// Where updates are POSTed.
        url: String,
        /// The config's id (default: one the agent makes).
        #[arg(long)]
        id: Option<String>,
        /// A token the webhook receives as `X-A2A-Notification-Token`.
        #[arg(long, env = "ACCORD_PUSH_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The `Authorization` scheme of each POST (e.g. `Bearer`).
        #[arg(long)]
        auth_scheme: Option<String>,
        /// The `Authorization` credentials of each POST.
        #[arg(long, env = "ACCORD_PUSH_CREDENTIALS", hide_env_values = true)]
        auth_credentials: Option<String>,
    },
    /// Show one of a task's webhooks.
    Get {
        /// Which agent, and as whom.
        #[command(flatten)]
        agent: AgentArgs,
        /// The task.
        task_id: String,
        /// The config's id.
        config_id: String,
    },
    /// List a task's webhooks.
    List {
        /// Which agent, and as whom.
        #[command(flatten)]
        agent: AgentArgs,
        /// The task.
        task_id: String,
    },
    /// Remove one of a task's webhooks (removing one that is not there succeeds).
    Delete {
        /// Which agent, and as whom.
        #[command(flatten)]
        agent: AgentArgs,
        /// The task.
        task_id: String,
        /// The config's id.
        config_id: String,
    },
    /// Receive webhooks locally and print each delivery as a line of JSON.
    Listen(crate::push_listen::ListenArgs),
}

/// Which agent, and as whom.
#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    /// The agent's base URL or card URL.
    pub agent: String,
    /// A bearer token to call the agent with (the tasks' owner).
    #[arg(long, env = "ACCORD_BEARER", hide_env_values = true)]
    pub bearer: Option<String>,
}

impl AgentArgs {
    async fn client(&self) -> Result<A2aClient, String> {
        let mut options = A2aClientOptions::default();
        if let Some(token) = &self.bearer {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| "--bearer contains characters a header cannot carry".to_owned())?;
            options.headers.insert(header::AUTHORIZATION, value);
        }
        let url = if self.agent.contains("/.well-known/") {
            self.agent.clone()
        } else {
            format!("{}/.well-known/agent-card.json", self.agent.trim_end_matches('/'))
        };
        A2aClient::from_card_url(&url, options).await.map_err(|error| error.to_string())
    }
}

/// Runs an `accord push` command, printing what the agent answered as JSON.
pub async fn run(command: PushCommand) -> Result<(), String> {
    let printed = match command {
        PushCommand::Set { agent, task_id, url, id, token, auth_scheme, auth_credentials } => {
            let authentication = match (auth_scheme, auth_credentials) {
                (Some(scheme), credentials) => Some(AuthenticationInfo { scheme, credentials }),
                (None, Some(_)) => return Err("--auth-credentials needs --auth-scheme".into()),
                (None, None) => None,
            };
            let config =
                TaskPushNotificationConfig { tenant: None, id, task_id: Some(task_id), url, token, authentication };
            let kept = agent.client().await?.create_push_config(config).await.map_err(|error| error.to_string())?;
            serde_json::to_value(redacted(kept))
        }
        PushCommand::Get { agent, task_id, config_id } => {
            let request = GetTaskPushNotificationConfigRequest { tenant: None, task_id, id: config_id };
            let config = agent.client().await?.get_push_config(request).await.map_err(|error| error.to_string())?;
            serde_json::to_value(redacted(config))
        }
        PushCommand::List { agent, task_id } => {
            let request =
                ListTaskPushNotificationConfigsRequest { tenant: None, task_id, page_size: None, page_token: None };
            let list = agent.client().await?.list_push_configs(request).await.map_err(|error| error.to_string())?;
            serde_json::to_value(list.configs.into_iter().map(redacted).collect::<Vec<_>>())
        }
        PushCommand::Delete { agent, task_id, config_id } => {
            let request = DeleteTaskPushNotificationConfigRequest { tenant: None, task_id, id: config_id };
            agent.client().await?.delete_push_config(request).await.map_err(|error| error.to_string())?;
            Ok(serde_json::json!({"deleted": true}))
        }
        PushCommand::Listen(args) => return crate::push_listen::listen(args).await,
    };
    let printed = printed.map_err(|error| error.to_string())?;
    println!("{}", serde_json::to_string_pretty(&printed).unwrap_or_default());
    Ok(())
}

/// A config as printed: the token and credentials are not echoed to a terminal or a log.
fn redacted(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    if config.token.is_some() {
        config.token = Some("<set>".into());
    }
    if let Some(auth) = config.authentication.as_mut()
        && auth.credentials.is_some()
    {
        auth.credentials = Some("<set>".into());
    }
    config
}
