//! The JWS side of `accord card`: `sign --jws` appends an official A2A card signature to an
//! agent card, `verify` checks a card's `signatures` against pinned keys and JWKS documents, and
//! `jwks` publishes public keys as a JWKS. The formats are `accord_card::jws`'s.

use std::path::PathBuf;
use std::time::Duration;

use accord_card::jws::{
    JwsAlgorithm, JwsSignOptions, JwsVerifyOptions, JwsVerifyOutcome, TrustStore, sign_agent_card,
    verify_agent_card_json,
};
use accord_card::{CryptoProvider, PublicKey, public_key_to_jwk};
use serde_json::Value;

use crate::{EXIT_FAILED, EXIT_UNREACHABLE, Failure, usage};

/// The largest card or JWKS document fetched over HTTP.
const MAX_FETCHED_BYTES: usize = 1024 * 1024;

fn failed(message: impl Into<String>) -> Failure {
    Failure { code: EXIT_FAILED, message: message.into() }
}

/// `accord card sign --jws`: `card` (any JSON object, an A2A agent card) with one more
/// signature by `key`.
pub(crate) fn sign(
    card: &[u8],
    source: &str,
    key: &accord_card::PrivateKey,
    kid: Option<&str>,
    jku: Option<&str>,
) -> Result<(Value, String), Failure> {
    let value: Value =
        serde_json::from_slice(card).map_err(|error| failed(format!("{source} is not JSON: {error}")))?;
    let mut options = JwsSignOptions::new();
    if let Some(kid) = kid {
        options = options.with_kid(kid);
    }
    if let Some(jku) = jku {
        options = options.with_jku(jku);
    }
    let signed = sign_agent_card(&value, key, &options).map_err(|error| failed(format!("cannot sign: {error}")))?;
    let kid = signed["signatures"]
        .as_array()
        .and_then(|all| all.last())
        .and_then(|signature| signature["protected"].as_str())
        .and_then(|protected| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(protected).ok()
        })
        .and_then(|header| serde_json::from_slice::<Value>(&header).ok())
        .and_then(|header| header["kid"].as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok((signed, kid))
}

/// The trust store of `--pub` PEMs (trusted for any `kid`) and `--jwks` files or URLs.
pub(crate) async fn trust_store(
    pems: &[PathBuf],
    jwks: &[String],
    tls: &accord_cli::tls_args::TlsArgs,
) -> Result<TrustStore, Failure> {
    let mut store = TrustStore::new();
    for path in pems {
        let pem = std::fs::read_to_string(path)
            .map_err(|error| usage(format!("--pub: cannot read {}: {error}", path.display())))?;
        let key = PublicKey::from_pem(&pem).map_err(|error| usage(format!("--pub {}: {error}", path.display())))?;
        store.add_key(None, key);
    }
    for source in jwks {
        let text = if crate::card_cmd::is_url(source) {
            fetch(source, "JWKS", tls).await?
        } else {
            std::fs::read(source).map_err(|error| usage(format!("--jwks: cannot read {source}: {error}")))?
        };
        let document: Value =
            serde_json::from_slice(&text).map_err(|error| usage(format!("--jwks {source}: not JSON: {error}")))?;
        let skipped = store
            .add_jwks(&document, &CryptoProvider::default())
            .map_err(|error| usage(format!("--jwks {source}: {error}")))?;
        if skipped > 0 {
            eprintln!("{source}: skipped {skipped} key(s) of a kind Accord does not verify with");
        }
    }
    if store.keys().is_empty() {
        return Err(usage("no trusted key: pass --pub PEM or --jwks FILE|URL"));
    }
    Ok(store)
}

/// GETs `url` (https, or http on a loopback host) with a size limit.
pub(crate) async fn fetch(url: &str, what: &str, tls: &accord_cli::tls_args::TlsArgs) -> Result<Vec<u8>, Failure> {
    let parsed = reqwest::Url::parse(url).map_err(|error| usage(format!("{url}: not a URL: {error}")))?;
    let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if parsed.scheme() != "https" && !(parsed.scheme() == "http" && loopback) {
        return Err(usage(format!("{url}: the {what} must be fetched over https (plain http only on loopback)")));
    }
    let unreachable = |message: String| Failure { code: EXIT_UNREACHABLE, message };
    let client = tls.http_client(Duration::from_secs(20)).map_err(Failure::from)?;
    let response = match client.get(parsed.clone()).header("accept", "application/json").send().await {
        Ok(response) => response,
        Err(error) => {
            // A refused TLS 1.3 handshake can reach the HTTP client as a closed connection: try
            // the handshake again to name it.
            let mut cause = accord_client::tls_failure(&error);
            if cause.is_none() && !error.is_timeout() {
                let tls = tls.load().map_err(Failure::from)?.unwrap_or_default();
                cause = tls.refusal(&parsed).await;
            }
            let cause = cause.map(|cause| format!(": TLS: {cause}")).unwrap_or_default();
            return Err(unreachable(format!("cannot fetch the {what} at {url}: {error}{cause}")));
        }
    };
    if !response.status().is_success() {
        return Err(unreachable(format!("the {what} at {url} answered {}", response.status())));
    }
    let body = response.bytes().await.map_err(|error| unreachable(format!("reading {url}: {error}")))?;
    if body.len() > MAX_FETCHED_BYTES {
        return Err(failed(format!("the {what} at {url} is larger than {MAX_FETCHED_BYTES} bytes")));
    }
    Ok(body.to_vec())
}

/// The algorithms of `--algorithms`, or every one.
pub(crate) fn algorithms(names: &[String]) -> Result<Vec<JwsAlgorithm>, Failure> {
    if names.is_empty() {
        return Ok(JwsAlgorithm::ALL.to_vec());
    }
    names
        .iter()
        .map(|name| {
            JwsAlgorithm::from_name(name.trim())
                .ok_or_else(|| usage(format!("--algorithms: unknown JWS algorithm {name:?} (ES256, EdDSA, ML-DSA-87)")))
        })
        .collect()
}

/// Verifies the card text; prints one line per signature (or JSON) and fails unless one verified.
pub(crate) fn verify(card: &[u8], trust: &TrustStore, allowed: Vec<JwsAlgorithm>, json: bool) -> Result<(), Failure> {
    let outcome = verify_agent_card_json(card, trust, &JwsVerifyOptions::new().with_algorithms(allowed));
    if json {
        crate::print_json(&serde_json::to_value(&outcome).unwrap_or(Value::Null), true);
    } else {
        print_outcome(&outcome);
    }
    if outcome.valid {
        Ok(())
    } else {
        let reason = outcome.reason.map_or("invalid", |reason| reason.as_str());
        Err(failed(format!("the card's signatures are not valid: {reason}")))
    }
}

fn print_outcome(outcome: &JwsVerifyOutcome) {
    if outcome.valid {
        println!("valid");
    } else {
        println!("invalid: {}", outcome.reason.map_or("invalid", |reason| reason.as_str()));
    }
    for verdict in &outcome.signatures {
        let status = match verdict.reason {
            None => "valid".to_owned(),
            Some(reason) => format!("invalid: {reason}"),
        };
        let alg = verdict.alg.as_deref().unwrap_or("?");
        let kid = verdict.kid.as_deref().unwrap_or("?");
        let mut line = format!("signature {}: {status} (alg {alg}, kid {kid}", verdict.index);
        if let Some(fingerprint) = &verdict.key_fingerprint {
            line.push_str(&format!(", key {fingerprint}"));
        }
        line.push(')');
        println!("{line}");
    }
}

/// `accord card jwks`: the public keys as a JWKS, each under its `kid`.
pub(crate) fn jwks(pems: &[PathBuf], kids: &[String]) -> Result<(), Failure> {
    if !kids.is_empty() && kids.len() != pems.len() {
        return Err(usage("give one --kid per key, in the same order, or none (the RFC 7638 thumbprints)"));
    }
    let mut keys = Vec::new();
    for (index, path) in pems.iter().enumerate() {
        let pem =
            std::fs::read_to_string(path).map_err(|error| usage(format!("cannot read {}: {error}", path.display())))?;
        let key = PublicKey::from_pem(&pem).map_err(|error| usage(format!("{}: {error}", path.display())))?;
        let jwk = public_key_to_jwk(&key, kids.get(index).map(String::as_str))
            .map_err(|error| failed(format!("{}: {error}", path.display())))?;
        keys.push(jwk);
    }
    crate::print_json(&serde_json::json!({ "keys": keys }), true);
    Ok(())
}
