//! The push-config rules of the task service: the webhooks a caller registers for its tasks,
//! their limits and owner scoping, and the claims a push worker delivers them through.
//!
//! The sealed storage of a config and its delivery cursor are the store's ([`crate::task::push`]);
//! sending a delivery over HTTP is the server's. This room owns what lies between.

use std::time::Duration;

use super::{Caller, TaskService};
use crate::error::{Error, ErrorKind};
use crate::model::{TaskEventKind, TaskId, now_ms};
use crate::task::push::{
    DeliverFrom, MAX_PUSH_CONFIG_ID_LEN, MAX_PUSH_CONFIGS_PER_TASK, MAX_PUSH_URL_LEN, PushConfig, PushDelivery,
    PushPut, PushSettle, StoredPushConfig,
};
use crate::task::runtime::TaskFailure;

impl TaskService {
    /// `config` as it will be kept: an id of at most [`MAX_PUSH_CONFIG_ID_LEN`] bytes (a fresh
    /// one when empty), a URL of at most [`MAX_PUSH_URL_LEN`] bytes. The URL's target is the
    /// face's to check (its SSRF policy), before it calls the service.
    pub(super) fn checked_push_config(&self, mut config: PushConfig) -> Result<PushConfig, Error> {
        if config.id.is_empty() {
            config.id = TaskId::generate().to_string();
        }
        if config.id.len() > MAX_PUSH_CONFIG_ID_LEN {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a push config id has at most {MAX_PUSH_CONFIG_ID_LEN} bytes"),
            ));
        }
        if config.url.is_empty() || config.url.len() > MAX_PUSH_URL_LEN {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a push config needs a url of at most {MAX_PUSH_URL_LEN} bytes"),
            ));
        }
        Ok(config)
    }

    fn push_not_found(id: &TaskId, config_id: &str) -> Error {
        Error::new(ErrorKind::PushConfigNotFound, format!("the task has no push config \"{config_id}\"")).about(id)
    }

    fn open_push(&self, stored: &StoredPushConfig) -> Result<PushConfig, Error> {
        self.config.push_key.open(stored).map_err(|unsealable| {
            tracing::error!(task = %stored.task_id, config = %stored.id, "{unsealable}");
            Error::new(ErrorKind::Unavailable, "a push config could not be read with this server's push key")
        })
    }

    /// Registers (or replaces, by id) a webhook for the caller's task; its deliveries start as
    /// `from` says for a new config, and where they stood for a replaced one. Returns the config
    /// as kept (with its id, generated when it had none).
    pub async fn set_push_config(
        &self,
        caller: &Caller,
        id: &TaskId,
        config: PushConfig,
        from: DeliverFrom,
    ) -> Result<PushConfig, Error> {
        let config = self.checked_push_config(config)?;
        let stored = self.config.push_key.stored(id, &config, now_ms());
        match self.runtime.store().put_push_config(&caller.owner, stored, from).await.map_err(TaskFailure::from)? {
            PushPut::Stored => Ok(config),
            PushPut::TaskNotFound => Err(TaskFailure::NotFound { id: id.clone() }.into()),
            PushPut::TooMany => Err(Error::new(
                ErrorKind::InvalidRequest,
                format!("a task has at most {MAX_PUSH_CONFIGS_PER_TASK} push configs; delete one first"),
            )
            .about(id)),
        }
    }

    /// The caller's task's webhooks, by id.
    pub async fn push_configs(&self, caller: &Caller, id: &TaskId) -> Result<Vec<PushConfig>, Error> {
        let stored = self.runtime.store().push_configs(id, &caller.owner).await.map_err(TaskFailure::from)?;
        let stored = stored.ok_or_else(|| Error::from(TaskFailure::NotFound { id: id.clone() }))?;
        stored.iter().map(|config| self.open_push(config)).collect()
    }

    /// One of the caller's task's webhooks ([`ErrorKind::PushConfigNotFound`] when the task has none
    /// with this id).
    pub async fn push_config(&self, caller: &Caller, id: &TaskId, config_id: &str) -> Result<PushConfig, Error> {
        let configs = self.push_configs(caller, id).await?;
        configs.into_iter().find(|config| config.id == config_id).ok_or_else(|| Self::push_not_found(id, config_id))
    }

    /// Deletes one of the caller's task's webhooks. Idempotent: deleting a config that is not
    /// there succeeds.
    pub async fn delete_push_config(&self, caller: &Caller, id: &TaskId, config_id: &str) -> Result<(), Error> {
        match self.runtime.store().delete_push_config(id, &caller.owner, config_id).await.map_err(TaskFailure::from)? {
            Some(_) => Ok(()),
            None => Err(TaskFailure::NotFound { id: id.clone() }.into()),
        }
    }

    /// Takes up to `limit` webhooks with updates to deliver, for `worker`, until `lease`
    /// passes (see [`TaskStore::claim_push_deliveries`](crate::task::TaskStore::claim_push_deliveries)), each opened, with at most `events`
    /// log entries. A config this server's key cannot open is given up on: its pending updates
    /// are passed with a dead letter in the task's log.
    pub async fn claim_push_deliveries(
        &self,
        worker: &str,
        lease: Duration,
        limit: usize,
        events: usize,
    ) -> Result<Vec<(PushConfig, PushDelivery)>, Error> {
        let now = now_ms();
        let lease_until = now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
        let store = self.runtime.store();
        let claimed =
            store.claim_push_deliveries(worker, now, lease_until, limit, events).await.map_err(TaskFailure::from)?;
        let mut deliveries = Vec::with_capacity(claimed.len());
        for delivery in claimed {
            match self.config.push_key.open(&delivery.config) {
                Ok(config) => deliveries.push((config, delivery)),
                Err(unsealable) => {
                    let Some(last) = delivery.events.last() else { continue };
                    tracing::error!(task = %delivery.config.task_id, config = %delivery.config.id, "{unsealable}");
                    let dead_letter = TaskEventKind::PushDeadLetter {
                        config_id: delivery.config.id.clone(),
                        sequence: last.sequence,
                        attempts: 0,
                        reason: unsealable.to_string(),
                    };
                    let settle = PushSettle {
                        delivered_through: last.sequence,
                        attempts: 0,
                        next_attempt_at: now,
                        dead_letter: Some(dead_letter),
                    };
                    let config = &delivery.config;
                    store
                        .settle_push_delivery(&config.task_id, &config.id, worker, settle, now)
                        .await
                        .map_err(TaskFailure::from)?;
                }
            }
        }
        Ok(deliveries)
    }

    /// Ends `worker`'s delivery of a webhook (see [`TaskStore::settle_push_delivery`](crate::task::TaskStore::settle_push_delivery)): `false`
    /// when another worker took it over meanwhile, or it was deleted.
    pub async fn settle_push_delivery(
        &self,
        delivery: &PushDelivery,
        worker: &str,
        settle: PushSettle,
    ) -> Result<bool, Error> {
        let config = &delivery.config;
        Ok(self
            .runtime
            .store()
            .settle_push_delivery(&config.task_id, &config.id, worker, settle, now_ms())
            .await
            .map_err(TaskFailure::from)?)
    }
}
