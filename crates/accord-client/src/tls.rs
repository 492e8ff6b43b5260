//! The clients' one TLS setting: extra trusted CA certificates, and a client certificate for
//! mutual TLS. [`TlsOptions`] names the PEM files; [`TlsOptions::load`] reads and checks them once
//! into a [`TlsConfig`], which every client of the crate builds from: the Lucid [`Client`] (and so
//! the signed-card and JSON-RPC tasks calls) through [`Client::with_tls`](crate::Client::with_tls), the A2A client through
//! [`A2aClientOptions::tls`] (its card fetch, JSON-RPC and HTTP+JSON bindings, and gRPC over
//! `https://`).
//!
//! **Trust.** The CA file's certificates are trusted *in addition to* the platform's roots, which
//! stay the default: a private CA is added without losing the public ones. (A pinned-only trust
//! store is a different setting, not this one.)
//!
//! **Failures.** A file that cannot be read, holds no PEM certificate or key, or a key that does not
//! match its certificate is [`ClientError::TlsConfig`], before anything is sent. A handshake that
//! fails — an unknown issuer, an expired certificate, a name mismatch, a client certificate the
//! server required or refused — is a transport error whose message names the cause
//! ([`ClientError::Transport`], [`ClientError::GrpcTransport`]).
//!
//! [`A2aClientOptions::tls`]: crate::a2a::A2aClientOptions::tls
//! [`ClientError::GrpcTransport`]: crate::ClientError::GrpcTransport

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ClientError;

/// Where the TLS material is: PEM files. Every field is optional; the default is the platform's
/// roots and no client certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of CA certificates (one or more `CERTIFICATE` blocks) trusted in addition to the
    /// platform's roots.
    pub ca_file: Option<PathBuf>,
    /// A PEM file with the client certificate (the leaf first, then any intermediates), presented
    /// when a server asks for one (mutual TLS). Needs [`client_key`](Self::client_key).
    pub client_cert: Option<PathBuf>,
    /// A PEM file with the client certificate's private key (PKCS#8, PKCS#1 or SEC1). Needs
    /// [`client_cert`](Self::client_cert).
    pub client_key: Option<PathBuf>,
}

impl TlsOptions {
    /// Whether anything differs from the defaults.
    pub fn is_empty(&self) -> bool {
        self.ca_file.is_none() && self.client_cert.is_none() && self.client_key.is_none()
    }

    /// Reads and checks the files: each must hold what it is for, and the key must be the
    /// certificate's.
    pub fn load(&self) -> Result<TlsConfig, ClientError> {
        let roots = match &self.ca_file {
            Some(path) => read_ca_file(path)?,
            None => Vec::new(),
        };
        let identity = match (&self.client_cert, &self.client_key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(Arc::new(read_identity(cert, key)?)),
            (Some(cert), None) => {
                return Err(config_error(cert, "is a client certificate without its private key (client key)"));
            }
            (None, Some(key)) => {
                return Err(config_error(key, "is a client key without its certificate (client certificate)"));
            }
        };
        Ok(TlsConfig { roots, identity })
    }
}

/// TLS material read and checked by [`TlsOptions::load`]: the extra trusted roots and the client
/// identity. Cheap to clone; its `Debug` shows no key material.
#[derive(Clone, Default)]
pub struct TlsConfig {
    roots: Vec<CertificateDer<'static>>,
    identity: Option<Arc<ClientIdentity>>,
}

/// A client certificate chain and its key, as PEM text re-encoded from what was read (so that
/// blocks other than certificates and keys, such as `EC PARAMETERS`, are left behind).
struct ClientIdentity {
    chain_pem: String,
    key_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("extra_roots", &self.roots.len())
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

impl TlsConfig {
    /// How many extra roots were loaded.
    pub fn extra_roots(&self) -> usize {
        self.roots.len()
    }

    /// Whether a client certificate is configured.
    pub fn has_client_certificate(&self) -> bool {
        self.identity.is_some()
    }

    /// A `reqwest` builder with this setting applied (callers add their timeouts).
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> Result<reqwest::ClientBuilder, ClientError> {
        let mut roots = Vec::with_capacity(self.roots.len());
        for root in &self.roots {
            roots.push(reqwest::Certificate::from_der(root).map_err(ClientError::HttpClient)?);
        }
        let mut builder = builder.tls_certs_merge(roots);
        if let Some(identity) = &self.identity {
            let pem = format!("{}{}", identity.chain_pem, identity.key_pem);
            builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).map_err(ClientError::HttpClient)?);
        }
        Ok(builder)
    }

    /// An HTTP client with this setting and a 10 s connect timeout.
    pub fn http_client(&self) -> Result<reqwest::Client, ClientError> {
        self.apply(reqwest::Client::builder().connect_timeout(Duration::from_secs(10)))?
            .build()
            .map_err(ClientError::HttpClient)
    }

    /// The gRPC channel's TLS setting: the platform's roots, these roots, this identity.
    #[cfg(feature = "grpc")]
    pub(crate) fn grpc(&self) -> tonic::transport::ClientTlsConfig {
        let mut config = tonic::transport::ClientTlsConfig::new().with_native_roots();
        if !self.roots.is_empty() {
            let pem: String = self.roots.iter().map(|root| pem_block("CERTIFICATE", root)).collect();
            config = config.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        if let Some(identity) = &self.identity {
            config = config.identity(tonic::transport::Identity::from_pem(&identity.chain_pem, &identity.key_pem));
        }
        config
    }
}

/// How long [`TlsConfig::refusal`] waits for the server's verdict once the client's side of the
/// handshake is done. A server that refuses sends its alert at once, on reading the client's last
/// handshake message: one round trip.
const REFUSAL_WAIT: Duration = Duration::from_secs(1);

impl TlsConfig {
    /// Why the server at `url` (an `https` URL) refuses this client's TLS handshake, in words, or
    /// `None` when it does not (or cannot be reached, or `url` is not `https`).
    ///
    /// Under TLS 1.3 a server that requires or refuses a client certificate says so after the
    /// client's side of the handshake is done, in an alert. An HTTP client that has already
    /// handed the connection its request then reports the closed connection and loses the alert.
    /// This makes one more connection with the same trust and identity, finishes the handshake,
    /// and reads the server's answer (an alert, or nothing for one second); nothing is sent
    /// but the handshake. The clients of this crate call it when an `https` request fails with no
    /// TLS cause of its own ([`ClientError::tls_cause`]).
    pub async fn refusal(&self, url: &url::Url) -> Option<String> {
        use tokio::io::AsyncReadExt as _;
        if url.scheme() != "https" {
            return None;
        }
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = url.port_or_known_default()?;
        let name = rustls::pki_types::ServerName::try_from(host.clone()).ok()?;
        let connector = tokio_rustls::TlsConnector::from(Arc::new(self.probe_config()?));
        let attempt = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await.ok()?;
            let mut stream = match connector.connect(name, tcp).await {
                Ok(stream) => stream,
                Err(error) => return crate::handshake::tls_failure(&error),
            };
            let mut byte = [0_u8; 1];
            match tokio::time::timeout(REFUSAL_WAIT, stream.read(&mut byte)).await {
                Ok(Err(error)) => crate::handshake::tls_failure(&error),
                _ => None,
            }
        };
        tokio::time::timeout(Duration::from_secs(10), attempt).await.ok().flatten()
    }

    /// A rustls client setting that trusts what the HTTP client trusts (the platform's roots and
    /// these) and presents this identity.
    fn probe_config(&self) -> Option<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(self.roots.iter().cloned(), provider.clone())
                .ok()?;
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .ok()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        match &self.identity {
            Some(identity) => builder.with_client_auth_cert(identity.chain.clone(), identity.key.clone_key()).ok(),
            None => Some(builder.with_no_client_auth()),
        }
    }

    /// `error` with the TLS cause a probe of its `https` URL finds ([`Self::refusal`]), when it is
    /// a failure to reach the peer that names no cause of its own.
    pub(crate) async fn explain(&self, mut error: ClientError) -> ClientError {
        let url = match &error {
            ClientError::Transport { url, source, handshake: None, .. }
                if !source.is_timeout() && crate::handshake::tls_failure(source).is_none() =>
            {
                url.clone()
            }
            #[cfg(feature = "grpc")]
            ClientError::GrpcTransport { url, status, handshake: None, .. }
                if crate::handshake::tls_failure(status.as_ref()).is_none() =>
            {
                url.clone()
            }
            _ => return error,
        };
        let Ok(url) = url::Url::parse(&url) else { return error };
        if let Some(cause) = self.refusal(&url).await {
            match &mut error {
                ClientError::Transport { handshake, .. } => *handshake = Some(cause),
                #[cfg(feature = "grpc")]
                ClientError::GrpcTransport { handshake, .. } => *handshake = Some(cause),
                _ => {}
            }
        }
        error
    }
}

fn config_error(path: &Path, reason: impl Into<String>) -> ClientError {
    ClientError::TlsConfig { path: path.display().to_string(), reason: reason.into() }
}

fn read(path: &Path) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path).map_err(|error| config_error(path, format!("cannot be read: {error}")))
}

/// The certificates of a PEM file, each checked to be usable as a trust anchor.
fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let certs = read_certificates(path)?;
    let mut store = rustls::RootCertStore::empty();
    for (index, cert) in certs.iter().enumerate() {
        store.add(cert.clone()).map_err(|error| {
            config_error(path, format!("certificate {} is not a usable CA certificate: {error}", index + 1))
        })?;
    }
    Ok(certs)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let bytes = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| config_error(path, format!("is not valid PEM: {error}")))?;
    if certs.is_empty() {
        return Err(config_error(path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(certs)
}

fn read_identity(cert_path: &Path, key_path: &Path) -> Result<ClientIdentity, ClientError> {
    let chain = read_certificates(cert_path)?;
    let key_bytes = read(key_path)?;
    // The key's own parse error could quote it: say only what is wrong.
    let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|error| match error {
        rustls::pki_types::pem::Error::NoItemsFound => {
            config_error(key_path, "holds no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)")
        }
        _ => config_error(key_path, "is not a valid PEM private key"),
    })?;
    let label = match &key {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    let key_pem = pem_block(label, key.secret_der());
    let kept = key.clone_key();
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    rustls::sign::CertifiedKey::from_der(chain.clone(), key, &provider).map_err(|error| match error {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            config_error(key_path, format!("does not match the certificate in {}", cert_path.display()))
        }
        rustls::Error::InvalidCertificate(_) | rustls::Error::InvalidCertRevocationList(_) => {
            config_error(cert_path, "its first certificate cannot be read")
        }
        _ => config_error(key_path, "is a private key of a kind that cannot sign TLS handshakes"),
    })?;
    let chain_pem = chain.iter().map(|cert| pem_block("CERTIFICATE", cert)).collect();
    Ok(ClientIdentity { chain_pem, key_pem, chain, key: kept })
}

/// One PEM block (RFC 7468): base64 in lines of 64.
fn pem_block(label: &str, der: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut block = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        block.push_str(&String::from_utf8_lossy(line));
        block.push('\n');
    }
    block.push_str(&format!("-----END {label}-----\n"));
    block
}
