//! A signed card: the blamejs envelope at `/.well-known/agent-card.signed.json` and the JWS
//! signature the card routes carry, both from one private key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use accord_card::PrivateKey;
use accord_server::{JwsCardConfig, SIGNED_CARD_PATH, SignedCardConfig};
use zeroize::Zeroizing;

use super::ServeError;

/// The signed-card flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SignedCardArgs {
    /// Publish a signed card at /.well-known/agent-card.signed.json, signed with this private key
    /// (a PKCS#8 PEM, as written by `accord card keygen`).
    #[arg(long, value_name = "KEY", env = "ACCORD_SIGNING_KEY")]
    pub signing_key: Option<PathBuf>,
    /// The signed card's issuer [default: the --host value, e.g. 127.0.0.1].
    #[arg(long, value_name = "ISSUER", requires = "signing_key")]
    pub card_issuer: Option<String>,
    /// The signed card's agent id [default: the agent's name].
    #[arg(long, value_name = "ID", requires = "signing_key")]
    pub card_agent_id: Option<String>,
    /// Serve the signed card at /.well-known/agent.json too, instead of the plain card.
    #[arg(long, requires = "signing_key")]
    pub signed_card_at_legacy_path: bool,
    /// The `kid` of the JWS signature the card routes carry [default: the key's RFC 7638
    /// thumbprint].
    #[arg(long, value_name = "KID", requires = "signing_key")]
    pub card_kid: Option<String>,
    /// The `jku` of that JWS signature: the https URL of a JWKS with the public key.
    #[arg(long, value_name = "URL", requires = "signing_key")]
    pub card_jku: Option<String>,
}

impl SignedCardArgs {
    /// The JWS signature of the served card, or `None` without `--signing-key` or with a key
    /// that has no JWS algorithm (SLH-DSA: then only the envelope is signed, and a warning says
    /// so).
    pub fn load_jws(&self) -> Result<Option<JwsCardConfig>, ServeError> {
        let Some(path) = &self.signing_key else { return Ok(None) };
        let key = read_private_key(path, "--signing-key").map_err(ServeError::usage)?;
        if accord_card::JwsAlgorithm::for_key(key.algorithm()).is_none() {
            tracing::warn!(algorithm = %key.algorithm(), "no JWS algorithm for this key: the card routes stay unsigned");
            return Ok(None);
        }
        let mut options = accord_card::JwsSignOptions::new();
        if let Some(kid) = &self.card_kid {
            options = options.with_kid(kid);
        }
        if let Some(jku) = &self.card_jku {
            options = options.with_jku(jku);
        }
        // Checked now rather than on the first request: a bad kid or jku is a usage error.
        accord_card::jws::sign_agent_card_signature(&serde_json::json!({"name": "check"}), &key, &options)
            .map_err(|error| ServeError::usage(format!("--card-kid / --card-jku: {error}")))?;
        let config = JwsCardConfig::new()
            .signer(Arc::new(key), options)
            .map_err(|error| ServeError::usage(format!("--signing-key: {error}")))?;
        Ok(Some(config))
    }

    /// The signed-card configuration these flags ask for, or `None` without `--signing-key`.
    pub fn load(&self, host: &str, agent_name: &str) -> Result<Option<SignedCardConfig>, ServeError> {
        let Some(path) = &self.signing_key else { return Ok(None) };
        let key = read_private_key(path, "--signing-key").map_err(ServeError::usage)?;
        let algorithm = key.algorithm();
        let fingerprint = key.public_key().fingerprint().unwrap_or_default().to_owned();
        let issuer = self.card_issuer.clone().unwrap_or_else(|| default_issuer(host));
        let agent_id = self.card_agent_id.clone().unwrap_or_else(|| agent_name.to_owned());
        let config = SignedCardConfig::new(Arc::new(key), issuer.clone(), agent_id.clone()).map_err(|error| {
            ServeError::usage(format!(
                "the signed card cannot name issuer {issuer:?} and agent id {agent_id:?}: {error} \
                 (set --card-issuer and --card-agent-id)"
            ))
        })?;
        tracing::info!(
            %issuer,
            %agent_id,
            %algorithm,
            %fingerprint,
            path = SIGNED_CARD_PATH,
            legacy_path = self.signed_card_at_legacy_path,
            "publishing a signed card"
        );
        Ok(Some(config.serve_at_legacy_path(self.signed_card_at_legacy_path)))
    }
}

/// The issuer when none is given: the listen host as typed, without IPv6 brackets. Loopback and
/// IP hosts (`127.0.0.1`, `::1`) fit the card's id pattern; a host that does not is refused with
/// a hint to pass `--card-issuer`.
fn default_issuer(host: &str) -> String {
    host.trim().trim_start_matches('[').trim_end_matches(']').to_owned()
}

/// Reads a private key (a PKCS#8 PEM, as written by `accord card keygen`); the file's text is
/// wiped from memory after use. The error names `flag` and the file, never the key.
pub fn read_private_key(path: &Path, flag: &str) -> Result<PrivateKey, String> {
    let pem = std::fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(|error| format!("{flag}: cannot read {}: {error}", path.display()))?;
    PrivateKey::from_pem(&pem).map_err(|error| format!("{flag} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_issuer_is_the_host_without_brackets() {
        assert_eq!(default_issuer("127.0.0.1"), "127.0.0.1");
        assert_eq!(default_issuer("[::1]"), "::1");
        assert_eq!(default_issuer("localhost"), "localhost");
    }
}
