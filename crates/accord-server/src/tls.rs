//! TLS served by the serve loop: a certificate chain and its key, read from PEM files, swapped
//! for new ones without a restart.
//!
//! [`TlsConfig`] is what [`crate::serve::Server::tls`] takes. It holds a rustls server
//! configuration (TLS 1.2 and 1.3, the aws-lc-rs provider, ALPN `h2` and `http/1.1`) whose
//! certificate is looked up on every handshake, so that [`TlsConfig::reload`] changes what new
//! handshakes present while open connections go on with the one they have. A pair that does not
//! load (a bad PEM, a key that does not match the certificate) leaves the current one in place.
//! The certificate's notAfter is published as the gauge [`CERTIFICATE_EXPIRY_GAUGE`].
//!
//! What this module must not do: name a flag or a face. Which files, and when to reload them, is
//! the program's business; errors name the file and the cause, never key material.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use futures_util::{Stream, StreamExt as _};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The gauge of the served certificate's expiry: its notAfter, in seconds since the Unix epoch.
pub const CERTIFICATE_EXPIRY_GAUGE: &str = "accord_tls_certificate_expiry_seconds";

/// Why a certificate and key did not load. Its text names the file and the cause, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be read or holds no usable certificate.
    Certificate {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        cause: String,
    },
    /// The key file could not be read or holds no usable private key.
    Key {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        cause: String,
    },
    /// The file of client certificate authorities could not be read or holds no usable one.
    ClientCa {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        cause: String,
    },
    /// The key is not the certificate's (their public keys differ).
    Mismatch {
        /// The certificate file.
        certificate: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Certificate { file, cause } => write!(f, "TLS certificate {}: {cause}", file.display()),
            Self::Key { file, cause } => write!(f, "TLS key {}: {cause}", file.display()),
            Self::ClientCa { file, cause } => write!(f, "TLS client CA {}: {cause}", file.display()),
            Self::Mismatch { certificate, key } => write!(
                f,
                "TLS key {} does not match the certificate {} (their public keys differ)",
                key.display(),
                certificate.display()
            ),
        }
    }
}

impl std::error::Error for TlsError {}

/// The files a certificate and its key are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM: the server's certificate first, then its intermediates.
    pub certificate: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: PathBuf,
}

/// A loaded pair: the rustls key, the notAfter of its certificate, and the files' modification
/// times when they were read.
#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    modified: (Stamp, Stamp),
}

/// What tells a file's new version from its old one: its modification time, its length and its
/// inode (a file replaced by a rename, or a symlink pointed elsewhere, has another inode even when
/// a copy kept the time, as `cp -p` and `rsync -t` do).
type Stamp = Option<(SystemTime, u64, u64)>;

/// The certificate every new handshake gets: the last pair that loaded.
#[derive(Debug)]
struct CurrentCertificate(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock still holds a whole `Arc` (it is swapped in one store).
        Some(self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
    }
}

/// Whether a client must present a certificate ([`TlsConfig::client_certificates`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A client may present one; one that does not is served anonymous. A certificate that is
    /// presented must still verify.
    Optional,
    /// A client without a certificate the authorities vouch for is refused at the handshake.
    Required,
}

/// The certificate a client presented and the handshake verified against the configured
/// authorities: the serve loop puts it into the extensions of each request of the connection,
/// and the authentication layer reads it ([`crate::auth::AuthConfig::client_certificates`]).
#[derive(Clone, PartialEq, Eq)]
pub struct PeerCertificate {
    der: Arc<[u8]>,
}

impl fmt::Debug for PeerCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerCertificate").field("subject", &self.subject()).finish_non_exhaustive()
    }
}

impl PeerCertificate {
    /// A certificate from its DER.
    pub fn from_der(der: &[u8]) -> Self {
        Self { der: der.into() }
    }

    /// The certificate's DER.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// Who the certificate names: its first URI subject alternative name (a SPIFFE id, say),
    /// else its first DNS name, else its subject's common name. `None` if it has none of them.
    pub fn subject(&self) -> Option<String> {
        let parts = tbs_parts(&self.der)?;
        let (uri, dns) = parts.extensions.map(alt_names).unwrap_or_default();
        uri.or(dns).or_else(|| common_name(parts.subject))
    }

    /// The DER of the issuer's distinguished name: which authority vouched for the subject.
    pub fn issuer(&self) -> Option<&[u8]> {
        tbs_parts(&self.der).map(|parts| parts.issuer)
    }
}

/// How many handshakes may be in progress at once by default
/// ([`TlsConfig::max_handshakes`]).
pub const DEFAULT_MAX_HANDSHAKES: usize = 64;

/// TLS for the serve loop: the certificate files, the rustls configuration built on them (client
/// certificates verified against authorities, if [`TlsConfig::client_certificates`]), and the
/// cap on handshakes in progress. Cheap to clone; clones share the certificate, so a reload
/// through one is seen by all.
#[derive(Clone)]
pub struct TlsConfig {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    current: Arc<CurrentCertificate>,
    /// The modification times of the files the current pair was read from.
    modified: Arc<std::sync::Mutex<(Stamp, Stamp)>>,
    server: Arc<rustls::ServerConfig>,
    max_handshakes: usize,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("files", &self.files)
            .field("max_handshakes", &self.max_handshakes)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads the certificate chain and key of `files` and builds the server configuration:
    /// TLS 1.2 and 1.3, ALPN `h2` then `http/1.1`. RSA, ECDSA and Ed25519 keys are accepted.
    pub fn from_files(files: TlsFiles) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let loaded = load(&files, &provider)?;
        publish_expiry(&loaded.key);
        let current = Arc::new(CurrentCertificate(RwLock::new(loaded.key)));
        let server = server_config(&provider, &current, None, &files.certificate)?;
        Ok(Self {
            files,
            provider,
            current,
            modified: Arc::new(std::sync::Mutex::new(loaded.modified)),
            server,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
        })
    }

    /// Asks clients for a certificate issued by one of the authorities of `ca_file` (PEM, one or
    /// more certificates): `Required` refuses a handshake without one, `Optional` serves it
    /// anonymous. A presented certificate that does not verify (another authority, expired, not
    /// yet valid, not for client authentication) is refused either way. A verified certificate
    /// reaches each request as a [`PeerCertificate`].
    pub fn client_certificates(mut self, ca_file: &Path, mode: ClientAuth) -> Result<Self, TlsError> {
        let ca_error = |cause: String| TlsError::ClientCa { file: ca_file.to_path_buf(), cause };
        let authorities = CertificateDer::pem_file_iter(ca_file)
            .map_err(|error| ca_error(pem_cause(&error)))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ca_error(pem_cause(&error)))?;
        let mut roots = rustls::RootCertStore::empty();
        for authority in authorities {
            roots.add(authority).map_err(|error| ca_error(format!("not a usable CA certificate ({error})")))?;
        }
        if roots.is_empty() {
            return Err(ca_error("no CERTIFICATE block in the file".into()));
        }
        let mut verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), self.provider.clone());
        if mode == ClientAuth::Optional {
            verifier = verifier.allow_unauthenticated();
        }
        let verifier = verifier.build().map_err(|error| ca_error(error.to_string()))?;
        self.server = server_config(&self.provider, &self.current, Some(verifier), &self.files.certificate)?;
        Ok(self)
    }

    /// How many handshakes may be in progress at once (default [`DEFAULT_MAX_HANDSHAKES`]): a
    /// connection beyond waits for one to finish, its wait counted, like the handshake itself,
    /// under the first-byte timeout. At least 1.
    pub fn max_handshakes(mut self, max: usize) -> Self {
        self.max_handshakes = max.max(1);
        self
    }

    /// The files the pair is read from.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }

    /// The notAfter of the certificate new handshakes present, in seconds since the Unix epoch
    /// (`None` if it could not be read from the certificate).
    pub fn expiry(&self) -> Option<i64> {
        let key = self.current.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        key.cert.first().and_then(|certificate| not_after(certificate.as_ref()))
    }

    /// Sets the gauge [`CERTIFICATE_EXPIRY_GAUGE`] to the current certificate's notAfter (done on
    /// every load; again here for a metrics recorder installed after the first).
    pub fn publish_expiry(&self) {
        publish_expiry(&self.current.0.read().unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    /// Reads the files again and, if they load, makes new handshakes present the new pair; if
    /// not, the current pair stays and the error says why. Either way the files' modification
    /// times are remembered: [`TlsConfig::reload_if_changed`] does not try files that were
    /// refused here again until one changes once more.
    pub fn reload(&self) -> Result<(), TlsError> {
        // Taken before the reads, as `load` does: a file written meanwhile is seen by the next poll.
        let attempted = modified_times(&self.files);
        let loaded = load(&self.files, &self.provider).inspect_err(|_| {
            *self.modified.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = attempted;
        })?;
        publish_expiry(&loaded.key);
        *self.current.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = loaded.key;
        *self.modified.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = loaded.modified;
        Ok(())
    }

    /// Reloads ([`TlsConfig::reload`]) if either file's modification time differs from when the
    /// current pair was read; `None` when neither changed. A pair that failed is not tried again
    /// until a file changes once more.
    pub fn reload_if_changed(&self) -> Option<Result<(), TlsError>> {
        let now = modified_times(&self.files);
        {
            let mut seen = self.modified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if *seen == now {
                return None;
            }
            // Remembered at once: a pair that does not load is reported once, not at every poll.
            *seen = now;
        }
        Some(self.reload())
    }

    /// Keeps the pair current until dropped (spawn it, abort it with the server): reloads when a
    /// file's modification time changes (checked every `period`) and whenever `reload_now`
    /// yields (the program's SIGHUP, say). A new pair is logged at INFO; one that does not load
    /// keeps the one in use and is logged once at ERROR, with why.
    pub async fn keep_reloaded(self, period: Duration, mut reload_now: impl Stream<Item = ()> + Unpin) {
        let mut poll = tokio::time::interval(period);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut asked = true;
        loop {
            let outcome = tokio::select! {
                _ = poll.tick() => self.reload_if_changed(),
                next = reload_now.next(), if asked => match next {
                    Some(()) => Some(self.reload()),
                    None => {
                        asked = false;
                        None
                    }
                },
            };
            match outcome {
                Some(Ok(())) => tracing::info!(
                    certificate = %self.files.certificate.display(),
                    expiry = self.expiry(),
                    "TLS certificate reloaded: new handshakes use it"
                ),
                Some(Err(error)) => tracing::error!("TLS certificate not reloaded, the one in use stays: {error}"),
                None => {}
            }
        }
    }

    /// The rustls configuration of the serve loop's acceptor.
    pub(crate) fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.server.clone()
    }

    pub(crate) fn handshake_cap(&self) -> usize {
        self.max_handshakes
    }
}

/// The server configuration: TLS 1.3 and 1.2, the current certificate, ALPN `h2` then
/// `http/1.1`, client certificates verified by `verifier` if any.
fn server_config(
    provider: &Arc<CryptoProvider>,
    current: &Arc<CurrentCertificate>,
    verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
    certificate: &Path,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|error| TlsError::Certificate { file: certificate.to_path_buf(), cause: error.to_string() })?;
    let builder = match verifier {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut server = builder.with_cert_resolver(current.clone());
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(server))
}

fn modified_times(files: &TlsFiles) -> (Stamp, Stamp) {
    use std::os::unix::fs::MetadataExt as _;
    let modified = |path: &Path| {
        let metadata = std::fs::metadata(path).ok()?;
        Some((metadata.modified().ok()?, metadata.len(), metadata.ino()))
    };
    (modified(&files.certificate), modified(&files.key))
}

fn load(files: &TlsFiles, provider: &CryptoProvider) -> Result<Loaded, TlsError> {
    // The times are taken before the reads: a file written between the two is read again at the
    // next poll rather than missed.
    let modified = modified_times(files);
    let certificate_error = |cause: String| TlsError::Certificate { file: files.certificate.clone(), cause };
    let chain = CertificateDer::pem_file_iter(&files.certificate)
        .map_err(|error| certificate_error(pem_cause(&error)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| certificate_error(pem_cause(&error)))?;
    if chain.is_empty() {
        return Err(certificate_error("no CERTIFICATE block in the file".into()));
    }
    let key_error = |cause: String| TlsError::Key { file: files.key.clone(), cause };
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|error| key_error(pem_cause(&error)))?;
    let certified = CertifiedKey::from_der(chain, key, provider).map_err(|error| match error {
        rustls::Error::InconsistentKeys(_) => {
            TlsError::Mismatch { certificate: files.certificate.clone(), key: files.key.clone() }
        }
        rustls::Error::InvalidCertificate(cause) => certificate_error(format!("not a usable certificate ({cause:?})")),
        // The key provider's errors say which kind of key it could not use, not the key.
        other => key_error(format!("not a usable private key ({other})")),
    })?;
    Ok(Loaded { key: Arc::new(certified), modified })
}

/// A PEM error in words; the file's bytes are never quoted.
fn pem_cause(error: &rustls_pki_types::pem::Error) -> String {
    use rustls_pki_types::pem::Error;
    match error {
        Error::Io(error) => format!("cannot read it ({error})"),
        Error::NoItemsFound => "no PEM block of the expected kind in the file".into(),
        Error::MissingSectionEnd { .. } => "a PEM block has no END line".into(),
        Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".into(),
        Error::Base64Decode(_) => "a PEM block is not valid base64".into(),
        _ => "not a valid PEM file".into(),
    }
}

fn publish_expiry(key: &CertifiedKey) {
    if let Some(expiry) = key.cert.first().and_then(|certificate| not_after(certificate.as_ref())) {
        // Unix seconds fit an f64 exactly for the next 285 million years.
        #[allow(clippy::cast_precision_loss)]
        metrics::gauge!(CERTIFICATE_EXPIRY_GAUGE).set(expiry as f64);
    }
}

/// The notAfter of a DER certificate, in seconds since the Unix epoch.
///
/// No X.509 parser is in the dependency tree, and the server reads only a few fields (notAfter,
/// the issuer, the subject's names), so it walks the DER by hand (RFC 5280 §4.1). A Time is a
/// UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or a GeneralizedTime (`YYYYMMDDHHMMSSZ`). rustls
/// has checked the certificate parses by then; anything unexpected gives `None`.
pub fn not_after(certificate: &[u8]) -> Option<i64> {
    let validity = tbs_parts(certificate)?.validity;
    let not_before_rest = der_item(validity)?.2;
    let (tag, time, _) = der_item(not_before_rest)?;
    let text = std::str::from_utf8(time).ok()?.strip_suffix('Z')?;
    if !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let (year, rest) = match (tag, text.len()) {
        (0x17, 12) => {
            let short: i32 = text[..2].parse().ok()?;
            (if short >= 50 { 1900 + short } else { 2000 + short }, &text[2..])
        }
        (0x18, 14) => (text[..4].parse().ok()?, &text[4..]),
        _ => return None,
    };
    let field = |at: usize| rest[at..at + 2].parse::<u8>().ok();
    let month = time::Month::try_from(field(0)?).ok()?;
    let date = time::Date::from_calendar_date(year, month, field(2)?).ok()?;
    let clock = time::Time::from_hms(field(4)?, field(6)?, field(8)?).ok()?;
    Some(time::PrimitiveDateTime::new(date, clock).assume_utc().unix_timestamp())
}

const SEQUENCE: u8 = 0x30;

/// The fields of a certificate's tbsCertificate that the server reads.
struct TbsParts<'a> {
    /// The issuer Name, whole (tag and length included).
    issuer: &'a [u8],
    /// The content of the validity SEQUENCE.
    validity: &'a [u8],
    /// The content of the subject Name.
    subject: &'a [u8],
    /// The content of the extensions SEQUENCE, if any.
    extensions: Option<&'a [u8]>,
}

/// Walks a DER certificate (RFC 5280 §4.1): Certificate ::= SEQUENCE { tbsCertificate SEQUENCE {
/// [0] version OPTIONAL, serialNumber, signature, issuer, validity, subject,
/// subjectPublicKeyInfo, [1] issuerUniqueID OPTIONAL, [2] subjectUniqueID OPTIONAL,
/// [3] extensions OPTIONAL }, … }.
fn tbs_parts(certificate: &[u8]) -> Option<TbsParts<'_>> {
    let (tag, certificate, _) = der_item(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, mut tbs, _) = der_item(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, _, rest) = der_item(tbs)?;
    if tag == 0xA0 {
        tbs = rest;
    }
    // serialNumber, signature.
    for _ in 0..2 {
        tbs = der_item(tbs)?.2;
    }
    let (_, _, rest) = der_item(tbs)?;
    let issuer = &tbs[..tbs.len() - rest.len()];
    tbs = rest;
    let (tag, validity, rest) = der_item(tbs)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, subject, rest) = der_item(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    // subjectPublicKeyInfo.
    let mut rest = der_item(rest)?.2;
    let mut extensions = None;
    while let Some((tag, content, next)) = der_item(rest) {
        if tag == 0xA3 {
            let (tag, inner, _) = der_item(content)?;
            extensions = (tag == SEQUENCE).then_some(inner);
        }
        rest = next;
    }
    Some(TbsParts { issuer, validity, subject, extensions })
}

/// The first URI and the first DNS name of a subjectAltName extension (OID 2.5.29.17), if any.
fn alt_names(mut extensions: &[u8]) -> (Option<String>, Option<String>) {
    const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1D, 0x11];
    while let Some((_, extension, next)) = der_item(extensions) {
        extensions = next;
        let Some((0x06, oid, mut rest)) = der_item(extension) else { continue };
        if oid != SUBJECT_ALT_NAME {
            continue;
        }
        // critical BOOLEAN DEFAULT FALSE, then the extnValue OCTET STRING.
        if let Some((0x01, _, after)) = der_item(rest) {
            rest = after;
        }
        let Some((0x04, value, _)) = der_item(rest) else { break };
        let Some((SEQUENCE, mut names, _)) = der_item(value) else { break };
        let (mut uri, mut dns) = (None, None);
        while let Some((tag, name, next)) = der_item(names) {
            names = next;
            let text = std::str::from_utf8(name).ok().map(str::to_owned);
            match tag {
                // [6] uniformResourceIdentifier, [2] dNSName (IA5String, implicitly tagged).
                0x86 if uri.is_none() => uri = text,
                0x82 if dns.is_none() => dns = text,
                _ => {}
            }
        }
        return (uri, dns);
    }
    (None, None)
}

/// The first common name (OID 2.5.4.3) of a Name's content.
fn common_name(mut name: &[u8]) -> Option<String> {
    const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    while let Some((_, set, next)) = der_item(name) {
        name = next;
        let mut attributes = set;
        while let Some((_, attribute, next)) = der_item(attributes) {
            attributes = next;
            let Some((0x06, oid, rest)) = der_item(attribute) else { continue };
            if oid == COMMON_NAME {
                let (_, value, _) = der_item(rest)?;
                return std::str::from_utf8(value).ok().map(str::to_owned);
            }
        }
    }
    None
}

/// One DER item at the start of `bytes`: its tag, its content and what follows it.
fn der_item(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7F);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count].iter().fold(0usize, |length, &byte| (length << 8) | usize::from(byte));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return None;
    }
    Some((tag, &rest[..length], &rest[length..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_walk_refuses_truncated_input() {
        assert_eq!(not_after(&[]), None);
        assert_eq!(not_after(&[0x30, 0x82, 0x01]), None);
        assert_eq!(not_after(&[0x30, 0x05, 0x30, 0x03, 0x02, 0x01]), None);
    }
}
