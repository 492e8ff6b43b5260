//! Push notifications on the command line: `accord push set|get|list|delete`, which manage a
//! task's webhooks on an A2A agent (the serving side's settings are `accord::serve::PushArgs`).

use accord_client::a2a::{A2aClient, A2aClientOptions};
use accord_types::a2a::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig,
};
use clap::{Args, Subcommand};
use reqwest::header::{self, HeaderValue};

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
    /// How to reach the agent over TLS.
    #[command(flatten)]
    pub tls: crate::tls_args::TlsArgs,
}

impl AgentArgs {
    async fn client(&self) -> Result<A2aClient, String> {
        let tls = self.tls.load().map_err(|error| error.to_string())?;
        let mut options = A2aClientOptions { tls, ..A2aClientOptions::default() };
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
