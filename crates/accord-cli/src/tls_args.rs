//! The TLS flags of every command that calls a peer (`invoke`, `stream`, `task …`, `card
//! show|verify|lint`, `rpc …`, `push set|get|list|delete`): one [`TlsArgs`] group flattened into
//! each, read into the client library's [`TlsOptions`].

use std::path::PathBuf;

use accord_client::{Client, ClientError, TlsConfig, TlsOptions};

/// How to reach a peer over TLS: extra trusted CAs and a client certificate for mutual TLS.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// A PEM file of CA certificates trusted in addition to the system's roots (for a peer whose
    /// certificate a private CA issued).
    #[arg(long, env = "ACCORD_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// A PEM file with the client certificate to present when the peer asks for one (mutual
    /// TLS); needs --client-key.
    #[arg(long, env = "ACCORD_CLIENT_CERT", value_name = "FILE")]
    pub client_cert: Option<PathBuf>,
    /// A PEM file with the client certificate's private key; needs --client-cert.
    #[arg(long, env = "ACCORD_CLIENT_KEY", value_name = "FILE")]
    pub client_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The flags as the client library's options.
    pub fn options(&self) -> TlsOptions {
        TlsOptions {
            ca_file: self.ca_file.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
        }
    }

    /// The files read and checked; `None` when no flag is given (the platform's roots, no client
    /// certificate).
    pub fn load(&self) -> Result<Option<TlsConfig>, ClientError> {
        let options = self.options();
        if options.is_empty() { Ok(None) } else { options.load().map(Some) }
    }

    /// A Lucid client (also the signed-card and JSON-RPC tasks client) with these settings.
    pub fn client(&self) -> Result<Client, ClientError> {
        match self.load()? {
            Some(tls) => Client::with_tls(&tls),
            None => Ok(Client::new()),
        }
    }

    /// A plain HTTP client with these settings and `timeout` per request, for fetches outside
    /// the client library (a JWKS, an agent card read as bytes).
    pub fn http_client(&self, timeout: std::time::Duration) -> Result<reqwest::Client, ClientError> {
        let builder = reqwest::Client::builder().timeout(timeout);
        let builder = match self.load()? {
            Some(tls) => tls.apply(builder)?,
            None => builder,
        };
        builder.build().map_err(ClientError::HttpClient)
    }
}
