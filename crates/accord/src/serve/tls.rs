//! The TLS flags: HTTPS served by the agent's listeners, and the reload of its certificate.

use std::path::PathBuf;
use std::time::Duration;

use accord_server::tls::{TlsConfig, TlsFiles};

use super::ServeError;

/// How often the certificate and key files are checked for a change.
pub const TLS_RELOAD_POLL: Duration = Duration::from_secs(5);

/// HTTPS (docs/tls.md): with a certificate and its key, every listener of the server (the
/// agent's port and `--grpc-port`) speaks TLS 1.2 and 1.3 only, and the card's URLs are
/// `https://`. The files are read again when they change (checked every five seconds) and on
/// SIGHUP; a pair that does not load keeps the one in use.
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
}

impl TlsArgs {
    /// The TLS of the listeners, if a certificate is given: a file that does not load is a usage
    /// error naming it and the cause.
    pub fn config(&self) -> Result<Option<TlsConfig>, ServeError> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(certificate), Some(key)) => {
                let files = TlsFiles { certificate: certificate.clone(), key: key.clone() };
                TlsConfig::from_files(files).map(Some).map_err(|error| ServeError::usage(error.to_string()))
            }
            (None, None) => Ok(None),
            (Some(_), None) => Err(ServeError::usage("--tls-cert needs --tls-key")),
            (None, Some(_)) => Err(ServeError::usage("--tls-key needs --tls-cert")),
        }
    }
}

/// Reloads `tls`'s certificate and key when a file changes (polled every [`TLS_RELOAD_POLL`])
/// and on SIGHUP, until aborted. A pair that does not load keeps the one in use and logs one
/// ERROR line saying why.
pub(super) async fn keep_reloaded(tls: TlsConfig) {
    let mut hangups = Hangups::watch();
    let mut poll = tokio::time::interval(TLS_RELOAD_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let outcome = tokio::select! {
            _ = poll.tick() => tls.reload_if_changed(),
            () = hangups.next() => Some(tls.reload()),
        };
        match outcome {
            Some(Ok(())) => tracing::info!(
                certificate = %tls.files().certificate.display(),
                expiry = tls.expiry(),
                "TLS certificate reloaded: new handshakes use it"
            ),
            Some(Err(error)) => tracing::error!("TLS certificate not reloaded, the one in use stays: {error}"),
            None => {}
        }
    }
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
