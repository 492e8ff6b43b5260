//! The audit events (target `accord::audit`) a test binary emits, recorded: one global recorder
//! per binary, installed by [`install`] before the first request, read by [`events`]. Each event
//! is its fields, by name, as text.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One audit event: its fields, by name (strings as written, other values as `Debug` prints them).
pub type AuditEvent = BTreeMap<String, String>;

type Events = Arc<Mutex<Vec<AuditEvent>>>;

struct Recorder(Events);

#[derive(Default)]
struct Fields(AuditEvent);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "accord::audit"
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(fields.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn recorded() -> &'static Events {
    static EVENTS: OnceLock<Events> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let events = Events::default();
        tracing::subscriber::set_global_default(Recorder(Arc::clone(&events)))
            .expect("one global recorder per test binary");
        events
    })
}

/// Starts recording (call before any request of the test).
pub fn install() {
    recorded();
}

/// The events recorded so far whose `event` field is `name`.
pub fn events(name: &str) -> Vec<AuditEvent> {
    let events = recorded().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    events.iter().filter(|event| event.get("event").is_some_and(|event| event == name)).cloned().collect()
}

/// How many events named `name` have every field of `with` as given.
pub fn count(name: &str, with: &[(&str, &str)]) -> usize {
    events(name)
        .iter()
        .filter(|event| with.iter().all(|(field, value)| event.get(*field).is_some_and(|found| found == value)))
        .count()
}
