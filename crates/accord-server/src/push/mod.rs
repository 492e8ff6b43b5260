//! Push notifications (A2A webhooks): the SSRF guard for webhook URLs ([`guard`]), the client
//! that POSTs one notification ([`sender`]), and the webhook route for an agent that receives
//! notifications ([`receiver`]).

pub mod guard;
pub mod receiver;
pub mod sender;
