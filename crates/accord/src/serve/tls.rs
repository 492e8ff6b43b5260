//! The TLS flags: HTTPS served by the agent's listeners, and the reload of its certificate.

use std::path::PathBuf;
use std::time::Duration;

use accord_server::auth::ClientCertificates;
use accord_server::tls::{ClientAuth, TlsConfig, TlsFiles};

use super::ServeError;

/// How often the certificate and key files are checked for a change.
pub const TLS_RELOAD_POLL: Duration = Duration::from_secs(5);

/// HTTPS (docs/tls.md): with a certificate and its key, every listener of the server (the
/// agent's port and `--grpc-port`) speaks TLS 1.2 and 1.3 only, and the card's URLs are
/// `https://`. The files are read again when they change (checked every five seconds) and on
/// SIGHUP; a pair that does not load keeps the one in use. With `--tls-client-ca`, clients
/// authenticate with certificates (mutual TLS): a verified certificate is a principal, its scopes
/// those `--tls-client-scopes` grants its subject.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM: the server's certificate first, then its
    /// intermediates). Needs --tls-key.
    #[arg(long, value_name = "FILE", env = "ACCORD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC; RSA, ECDSA or
    /// Ed25519). Needs --tls-cert.
    #[arg(long, value_name = "FILE", env = "ACCORD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Ask clients for a certificate issued by one of these authorities (PEM): mutual TLS. A
    /// verified certificate is a principal named by its first URI SAN (a SPIFFE id), else its
    /// first DNS SAN, else its common name. Needs --tls-cert.
    #[arg(long, value_name = "FILE", env = "ACCORD_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Whether a client certificate is `required` (a handshake without one is refused) or
    /// `optional` (a client without one is anonymous). Default: required.
    #[arg(long, value_enum, default_value = "required", env = "ACCORD_TLS_CLIENT_AUTH", requires = "tls_client_ca")]
    pub tls_client_auth: ClientAuthArg,
    /// The scopes a client certificate's subject holds: `SUBJECT=SCOPE,SCOPE` (e.g.
    /// `spiffe://example.org/ns/shop/sa/client=shop:quote,shop:pay`). Repeatable; a subject not
    /// named holds no scope. Needs --tls-client-ca, or --trusted-proxy: a proxy that terminates
    /// TLS names the client's certificate in X-Forwarded-Client-Cert.
    #[arg(long, value_name = "SUBJECT=SCOPES", value_parser = parse_client_scopes, env = "ACCORD_TLS_CLIENT_SCOPES")]
    pub tls_client_scopes: Vec<ClientScopes>,
}

/// `--tls-client-auth`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientAuthArg {
    /// A client without a certificate is served anonymous.
    Optional,
    /// A handshake without a certificate is refused.
    #[default]
    Required,
}

impl From<ClientAuthArg> for ClientAuth {
    fn from(mode: ClientAuthArg) -> Self {
        match mode {
            ClientAuthArg::Optional => Self::Optional,
            ClientAuthArg::Required => Self::Required,
        }
    }
}

/// One `--tls-client-scopes`: a certificate subject and the scopes it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientScopes {
    /// The subject (a SPIFFE id, a DNS name or a common name).
    pub subject: String,
    /// Its scopes.
    pub scopes: Vec<String>,
}

/// `SUBJECT=SCOPE,SCOPE`: split at the last `=` (a SPIFFE id or a DNS name has none; scopes have
/// none).
fn parse_client_scopes(text: &str) -> Result<ClientScopes, String> {
    let (subject, scopes) =
        text.rsplit_once('=').ok_or("expected SUBJECT=SCOPE,SCOPE (e.g. spiffe://example.org/sa/client=shop:pay)")?;
    let subject = subject.trim();
    let scopes: Vec<String> =
        scopes.split(',').map(str::trim).filter(|scope| !scope.is_empty()).map(str::to_owned).collect();
    if subject.is_empty() || scopes.is_empty() {
        return Err("expected a subject and at least one scope: SUBJECT=SCOPE,SCOPE".into());
    }
    Ok(ClientScopes { subject: subject.to_owned(), scopes })
}

impl TlsArgs {
    /// The TLS of the listeners, if a certificate is given: a file that does not load is a usage
    /// error naming it and the cause.
    pub fn config(&self) -> Result<Option<TlsConfig>, ServeError> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(certificate), Some(key)) => {
                let files = TlsFiles { certificate: certificate.clone(), key: key.clone() };
                let mut tls = TlsConfig::from_files(files).map_err(|error| ServeError::usage(error.to_string()))?;
                if let Some(ca) = &self.tls_client_ca {
                    tls = tls
                        .client_certificates(ca, self.tls_client_auth.into())
                        .map_err(|error| ServeError::usage(error.to_string()))?;
                }
                Ok(Some(tls))
            }
            (None, None) => Ok(None),
            (Some(_), None) => Err(ServeError::usage("--tls-cert needs --tls-key")),
            (None, Some(_)) => Err(ServeError::usage("--tls-key needs --tls-cert")),
        }
    }
}

impl TlsArgs {
    /// The principals of client certificates: when `--tls-client-ca` asks for them, or when
    /// `--tls-client-scopes` is given behind a trusted proxy (`behind_trusted_proxy`) that names
    /// them in `X-Forwarded-Client-Cert`. Scopes with neither are a usage error.
    pub fn client_certificates(&self, behind_trusted_proxy: bool) -> Result<Option<ClientCertificates>, ServeError> {
        let forwarded = behind_trusted_proxy && !self.tls_client_scopes.is_empty();
        if self.tls_client_ca.is_none() && !forwarded {
            if !self.tls_client_scopes.is_empty() {
                return Err(ServeError::usage(
                    "--tls-client-scopes needs --tls-client-ca, or --trusted-proxy for a proxy that names client \
                     certificates in X-Forwarded-Client-Cert",
                ));
            }
            return Ok(None);
        }
        let mapping = self
            .tls_client_scopes
            .iter()
            .fold(ClientCertificates::new(), |mapping, entry| mapping.scopes(&entry.subject, &entry.scopes));
        Ok(Some(mapping))
    }
}

/// Reloads `tls`'s certificate and key when a file changes (polled every [`TLS_RELOAD_POLL`])
/// and on SIGHUP, until aborted ([`TlsConfig::keep_reloaded`]).
pub(super) async fn keep_reloaded(tls: TlsConfig) {
    let hangups = futures_util::stream::unfold(Hangups::watch(), |mut hangups| async move {
        hangups.next().await;
        Some(((), hangups))
    });
    tls.keep_reloaded(TLS_RELOAD_POLL, Box::pin(hangups)).await;
}

/// The process's SIGHUPs (none where there are no such signals, or they cannot be watched).
struct Hangups {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangups {
    fn watch() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signal = signal(SignalKind::hangup())
                .map_err(|error| {
                    tracing::warn!(%error, "cannot watch SIGHUP: the TLS files are reloaded only when they change");
                })
                .ok();
            Self { signal }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next SIGHUP (never, if none can come).
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = self.signal.as_mut()
            && signal.recv().await.is_some()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[test]
    fn client_scopes_are_a_subject_and_its_scopes() {
        let parsed =
            parse_client_scopes("spiffe://example.org/ns/shop/sa/client=shop:quote, shop:pay").expect("parses");
        assert_eq!(parsed.subject, "spiffe://example.org/ns/shop/sa/client");
        assert_eq!(parsed.scopes, ["shop:quote", "shop:pay"]);
        assert!(parse_client_scopes("spiffe://example.org/sa/client").is_err(), "no scopes");
        assert!(parse_client_scopes("=shop:pay").is_err(), "no subject");
        assert!(parse_client_scopes("client=,").is_err(), "empty scopes");
    }

    #[test]
    fn the_client_flags_need_a_certificate_and_a_client_ca() {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            tls: TlsArgs,
        }
        let parse = |args: &[&str]| Only::try_parse_from(std::iter::once("serve").chain(args.iter().copied()));
        assert!(parse(&[]).is_ok_and(|only| only.tls.client_certificates(false).is_ok_and(|none| none.is_none())));
        let scopes_only = parse(&["--tls-client-scopes", "a=x"]).expect("parses");
        assert!(scopes_only.tls.client_certificates(false).is_err(), "scopes with neither a client CA nor a proxy");
        assert!(scopes_only.tls.client_certificates(true).is_ok_and(|some| some.is_some()), "behind a proxy");
        assert!(parse(&["--tls-client-ca", "ca.pem"]).is_err(), "a client CA without a certificate");
        assert!(parse(&["--tls-client-auth", "optional"]).is_err(), "a mode without a client CA");
        let only = parse(&[
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "--tls-client-ca",
            "ca.pem",
            "--tls-client-scopes",
            "a=x,y",
            "--tls-client-scopes",
            "b=z",
        ])
        .expect("parses");
        assert_eq!(only.tls.tls_client_auth, ClientAuthArg::Required, "required by default");
        assert_eq!(only.tls.tls_client_scopes.len(), 2);
    }
}
