//! The four push-config operations of both A2A bindings, and the inline config of a send, over
//! the task service's webhooks.
//!
//! A config's URL passes the server's SSRF policy ([`WebhookPolicy`]) before it is stored; the
//! delivery side checks the address again when it connects. A config is the task owner's, like
//! the task: another caller is answered as for a task that does not exist.

use accord_engine::task::{Caller, DeliverFrom, PushAuthentication, PushConfig, TaskId};
use accord_types::a2a::{self, A2aError, A2aErrorKind};

use super::{A2aCore, a2a_error, invalid_params};
use crate::push::deliver::PushProjection;
use crate::push::guard::WebhookPolicy;

/// How the A2A faces' push notifications are written: each update of a task's log as the
/// `StreamResponse`s a stream would carry, in ProtoJSON — what the delivery worker POSTs.
pub(crate) fn projection() -> PushProjection {
    PushProjection::new(|event, context_id| {
        super::stream_responses(event, context_id)
            .into_iter()
            .filter_map(|(_, response)| serde_json::to_vec(&response).ok().map(bytes::Bytes::from))
            .collect()
    })
}

impl A2aCore {
    /// The push policy, or `PushNotificationNotSupportedError` when this server sends none.
    fn push_policy(&self) -> Result<&WebhookPolicy, A2aError> {
        self.push.as_deref().ok_or_else(|| {
            A2aError::new(A2aErrorKind::PushNotificationNotSupported)
                .with_message("this agent does not send push notifications (capabilities.pushNotifications is false)")
        })
    }

    /// The engine's config for a wire config whose URL the policy accepts.
    pub(crate) fn push_config_of(&self, config: a2a::TaskPushNotificationConfig) -> Result<PushConfig, A2aError> {
        let policy = self.push_policy()?;
        if let Err(refused) = policy.check_url(&config.url) {
            return Err(invalid_params(&format!("the webhook URL is refused: {refused}"))
                .with_metadata("reason", refused.reason()));
        }
        Ok(PushConfig {
            id: config.id.unwrap_or_default(),
            url: config.url,
            token: config.token.filter(|token| !token.is_empty()),
            authentication: config
                .authentication
                .map(|auth| PushAuthentication { scheme: auth.scheme, credentials: auth.credentials }),
        })
    }

    /// `CreateTaskPushNotificationConfig`: registers (or replaces, by id) a webhook for the
    /// caller's task; updates from now on are delivered to it.
    pub(crate) async fn create_push_config(
        &self,
        request: a2a::TaskPushNotificationConfig,
        caller: Caller,
    ) -> Result<a2a::TaskPushNotificationConfig, A2aError> {
        let caller = caller.within(request.tenant.as_deref());
        let tenant = request.tenant.clone();
        let task_id =
            request.task_id.clone().filter(|id| !id.is_empty()).ok_or_else(|| invalid_params("taskId is required"))?;
        let config = self.push_config_of(request)?;
        let id = TaskId::new(task_id);
        let kept = self.service.set_push_config(&caller, &id, config, DeliverFrom::Now).await.map_err(a2a_error)?;
        Ok(wire_config(&id, kept, tenant))
    }

    /// `GetTaskPushNotificationConfig`.
    pub(crate) async fn get_push_config(
        &self,
        request: a2a::GetTaskPushNotificationConfigRequest,
        caller: Caller,
    ) -> Result<a2a::TaskPushNotificationConfig, A2aError> {
        self.push_policy()?;
        let caller = caller.within(request.tenant.as_deref());
        let id = TaskId::new(request.task_id);
        let config = self.service.push_config(&caller, &id, &request.id).await.map_err(a2a_error)?;
        Ok(wire_config(&id, config, request.tenant))
    }

    /// `ListTaskPushNotificationConfigs`: by id, in pages of `pageSize` (default: all of them; a
    /// task has at most ten); `pageToken` is the last id of the previous page.
    pub(crate) async fn list_push_configs(
        &self,
        request: a2a::ListTaskPushNotificationConfigsRequest,
        caller: Caller,
    ) -> Result<a2a::ListTaskPushNotificationConfigsResponse, A2aError> {
        self.push_policy()?;
        let caller = caller.within(request.tenant.as_deref());
        let id = TaskId::new(request.task_id);
        let configs = self.service.push_configs(&caller, &id).await.map_err(a2a_error)?;
        let after = request.page_token.filter(|token| !token.is_empty());
        let mut rest: Vec<PushConfig> = configs
            .into_iter()
            .filter(|config| after.as_deref().is_none_or(|after| config.id.as_str() > after))
            .collect();
        let size = match request.page_size {
            Some(size) if size > 0 => usize::try_from(size).unwrap_or(usize::MAX),
            _ => rest.len(),
        };
        let more = rest.len() > size;
        rest.truncate(size);
        let next_page_token =
            if more { rest.last().map(|config| config.id.clone()).unwrap_or_default() } else { String::new() };
        let tenant = request.tenant;
        Ok(a2a::ListTaskPushNotificationConfigsResponse {
            configs: rest.into_iter().map(|config| wire_config(&id, config, tenant.clone())).collect(),
            next_page_token,
        })
    }

    /// `DeleteTaskPushNotificationConfig`: idempotent.
    pub(crate) async fn delete_push_config(
        &self,
        request: a2a::DeleteTaskPushNotificationConfigRequest,
        caller: Caller,
    ) -> Result<a2a::Empty, A2aError> {
        self.push_policy()?;
        let caller = caller.within(request.tenant.as_deref());
        let id = TaskId::new(request.task_id);
        self.service.delete_push_config(&caller, &id, &request.id).await.map_err(a2a_error)?;
        Ok(a2a::Empty {})
    }
}

/// The wire form of a kept config: what its owner set, with its task and id.
fn wire_config(task_id: &TaskId, config: PushConfig, tenant: Option<String>) -> a2a::TaskPushNotificationConfig {
    a2a::TaskPushNotificationConfig {
        tenant,
        id: Some(config.id),
        task_id: Some(task_id.to_string()),
        url: config.url,
        token: config.token,
        authentication: config
            .authentication
            .map(|auth| a2a::AuthenticationInfo { scheme: auth.scheme, credentials: auth.credentials }),
    }
}
