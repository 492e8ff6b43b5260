//! The authentication flags: an operator's bearer token, JWTs against a JWKS, API keys; turned
//! into the server's [`AuthConfig`] (which the card's security schemes come from).

use accord_engine::task::AccessToken;
use accord_server::auth::{ApiKeys, AuthConfig, BearerTokens};
#[cfg(feature = "jwt")]
use accord_server::auth::{JwksSource, JwtConfig, JwtVerifier, parse_algorithms};

/// The authentication flags. Every principal they admit is the agent's operator and holds the
/// scopes given to [`Serve::operator_scopes`](super::Serve::operator_scopes).
#[derive(Debug, Clone, clap::Args)]
pub struct AuthArgs {
    /// A bearer token (20 to 256 characters) for the agent's operator: it holds the operator's
    /// scopes (the demo agent's is `demo:slow`, which its JSON-RPC tasks face requires for the
    /// `slow` skill). Only its SHA-256 is kept.
    #[arg(long, visible_alias = "demo-token", env = "ACCORD_BEARER_TOKEN", hide_env_values = true)]
    pub bearer_token: Option<String>,
    /// Accept bearer JWTs signed by a key of this JWKS: a file path or an https URL (read at
    /// start-up, read again when a token names an unknown key, at most once a minute). Needs
    /// --jwt-issuer and --jwt-audience.
    #[arg(long, env = "ACCORD_JWKS", requires_all = ["jwt_issuer", "jwt_audience"])]
    pub jwks: Option<String>,
    /// The `iss` every JWT must carry.
    #[arg(long, env = "ACCORD_JWT_ISSUER", requires = "jwks")]
    pub jwt_issuer: Option<String>,
    /// The `aud` every JWT must carry.
    #[arg(long, env = "ACCORD_JWT_AUDIENCE", requires = "jwks")]
    pub jwt_audience: Option<String>,
    /// The accepted JWT algorithms, comma-separated (e.g. `RS256,ES256`; HMAC ones are refused).
    /// Default: those of the JWKS's keys.
    #[arg(long, env = "ACCORD_JWT_ALGORITHMS", requires = "jwks")]
    pub jwt_algorithms: Option<String>,
    /// An API key callers may send in --api-key-header (repeatable; `sha256:HEX` gives the key by
    /// its SHA-256). Only the hash is kept.
    #[arg(long = "api-key", env = "ACCORD_API_KEYS", value_delimiter = ',', hide_env_values = true)]
    pub api_keys: Vec<String>,
    /// The header API keys are read from.
    #[arg(long, default_value = accord_server::auth::DEFAULT_API_KEY_HEADER, env = "ACCORD_API_KEY_HEADER")]
    pub api_key_header: String,
    /// Refuse anonymous callers on every face (401 in the face's shape): a credential of a
    /// configured scheme is required. The cards, `/health` and the landing page stay open.
    /// Needs --bearer-token, --jwks or --api-key.
    #[arg(long, env = "ACCORD_REQUIRE_AUTH")]
    pub require_auth: bool,
    /// A proxy (an address or a CIDR range; repeatable, or comma-separated in the variable)
    /// whose `X-Forwarded-For` names the client. The rate limit and the anonymous callers'
    /// share count callers by that address; from any other peer the header is ignored.
    #[arg(long = "trusted-proxy", env = "ACCORD_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_proxy)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// An address (a /32 or /128) or a CIDR range.
fn parse_proxy(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("expected an IP address or a CIDR range such as 10.0.0.0/8, not {text:?}"))
}

impl AuthArgs {
    /// The configuration the flags describe: every principal they admit holds `scopes`.
    /// The error names the flag, never a secret.
    pub async fn config(&self, scopes: &[String]) -> Result<AuthConfig, String> {
        let mut config = AuthConfig::new();
        if let Some(token) = &self.bearer_token {
            let token = AccessToken::parse(token).map_err(|error| format!("--bearer-token: {error}"))?;
            config = config.bearer(BearerTokens::new().with(&token, "operator", scopes.iter().map(String::as_str)));
        }
        #[cfg(feature = "jwt")]
        if let (Some(jwks), Some(issuer), Some(audience)) = (&self.jwks, &self.jwt_issuer, &self.jwt_audience) {
            let mut jwt = JwtConfig::new(JwksSource::parse(jwks), issuer, audience);
            if let Some(algorithms) = &self.jwt_algorithms {
                jwt =
                    jwt.algorithms(parse_algorithms(algorithms).map_err(|error| format!("--jwt-algorithms: {error}"))?);
            }
            config = config.jwt(JwtVerifier::load(jwt).await.map_err(|error| format!("--jwks: {error}"))?);
        }
        #[cfg(not(feature = "jwt"))]
        if self.jwks.is_some() {
            return Err("--jwks needs a build with the `jwt` cargo feature".into());
        }
        let keys: Vec<&str> = self.api_keys.iter().map(|key| key.trim()).filter(|key| !key.is_empty()).collect();
        if !keys.is_empty() {
            let mut api_keys =
                ApiKeys::new(&self.api_key_header).map_err(|error| format!("--api-key-header: {error}"))?;
            for (index, key) in keys.into_iter().enumerate() {
                let subject = format!("api-key-{}", index + 1);
                api_keys = match key.strip_prefix("sha256:") {
                    Some(hash) => api_keys
                        .with_hash(hash, subject, scopes.iter().map(String::as_str))
                        .map_err(|error| format!("--api-key: {error}"))?,
                    None => api_keys.with_key(key, subject, scopes.iter().map(String::as_str)),
                };
            }
            config = config.api_keys(api_keys);
        }
        if self.require_auth {
            if config.is_empty() {
                return Err("--require-auth needs a credential scheme: --bearer-token, --jwks or --api-key".into());
            }
            config = config.require_credentials(true);
        }
        Ok(config)
    }
}
