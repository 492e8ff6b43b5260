//! Push notifications (A2A webhooks): the SSRF guard for webhook URLs ([`guard`]), the client
//! that POSTs one notification ([`sender`]), the worker that delivers a task's updates from the
//! task service's outbox ([`PushSettings`] says how; the face that serves push says what each
//! update's body is), and the webhook route for an agent that receives notifications
//! ([`receiver`]). A layer below the faces: it names none.

pub(crate) mod deliver;
pub mod guard;
pub mod receiver;
pub mod sender;

pub use deliver::PushSettings;
