//! Audit events reach `tracing` under a stable target with fixed field names.
//!
//! Its own test binary with a single test: `tracing` caches per-callsite interest globally, so a
//! scoped subscriber in a binary whose other tests emit the same events on other threads can
//! miss some of them.

use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use accord_card::{CardOptions, PrivateKey, SignOptions, VerifyOptions, create_card, sign_card, verify_card};
use serde_json::json;

const T0_MS: u64 = 1_767_225_600_000;
const DAY_MS: u64 = 86_400_000;

/// Records the audit events that reach `tracing`, with their fields as strings.
mod tracing_capture {
    use std::collections::BTreeMap;
    use std::fmt;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    pub(crate) type Captured = Arc<Mutex<Vec<(String, Level, BTreeMap<String, String>)>>>;

    pub(crate) struct Recorder(pub(crate) Captured);

    struct Fields<'a>(&'a mut BTreeMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }

        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }

        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.insert(field.name().to_owned(), value.to_string());
        }
    }

    impl Subscriber for Recorder {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }

        fn record(&self, _: &Id, _: &Record<'_>) {}

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, event: &Event<'_>) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            let metadata = event.metadata();
            self.0.lock().expect("lock").push((metadata.target().to_owned(), *metadata.level(), fields));
        }

        fn enter(&self, _: &Id) {}

        fn exit(&self, _: &Id) {}
    }
}

#[test]
fn audit_events_reach_tracing_under_a_stable_target() {
    let captured = tracing_capture::Captured::default();
    let recorder = tracing_capture::Recorder(captured.clone());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/keys/ml-dsa-87.pyca.private.pem");
    let key = PrivateKey::from_pem(&fs::read_to_string(path).expect("golden key")).expect("key");
    let public_pem = key.public_key().to_pem().expect("pem");
    let card =
        create_card(CardOptions::new("agent.example.com", "ops-bot-1").capability("chat.respond")).expect("card");
    let options = VerifyOptions::new().at(UNIX_EPOCH + Duration::from_millis(T0_MS + 60_000));
    tracing::subscriber::with_default(recorder, || {
        let signing = SignOptions::new().at(UNIX_EPOCH + Duration::from_millis(T0_MS));
        let envelope = sign_card(&card, &key, &signing).expect("sign").to_value();
        assert!(verify_card(&envelope, &public_pem, &options).valid);
        let mut bad = envelope.clone();
        bad["signature"] = json!("@");
        verify_card(&bad, &public_pem, &options);
    });
    let events = captured.lock().expect("lock");
    let audit: Vec<_> = events.iter().filter(|(target, _, _)| target == accord_card::AUDIT_TARGET).collect();
    assert_eq!(accord_card::AUDIT_TARGET, "accord::audit");
    assert_eq!(audit.len(), 3, "{events:?}");
    let (_, level, signed) = audit[0];
    assert_eq!(*level, tracing::Level::INFO);
    assert_eq!(signed["action"], "a2a.card_signed");
    assert_eq!(signed["outcome"], "success");
    assert_eq!(signed["issuer"], "agent.example.com");
    assert_eq!(signed["agent_id"], "ops-bot-1");
    assert_eq!(signed["algorithm"], "ml-dsa-87");
    assert_eq!(signed["expires_at"], (T0_MS + DAY_MS).to_string());
    assert!(signed["key_fingerprint"].starts_with("sha256:"));
    assert!(!signed.contains_key("reason"), "absent fields are not recorded");
    let (_, _, verified) = audit[1];
    assert_eq!(verified["action"], "a2a.card_verified");
    assert_eq!(verified["signing_input"], "shake256-digest");
    let (_, level, rejected) = audit[2];
    assert_eq!(*level, tracing::Level::WARN);
    assert_eq!(rejected["action"], "a2a.card_rejected");
    assert_eq!(rejected["outcome"], "denied");
    assert_eq!(rejected["reason"], "signature-base64-bad");
    for (_, _, fields) in &audit {
        for value in fields.values() {
            assert!(!value.contains("PRIVATE KEY"), "{value}");
        }
    }
}
