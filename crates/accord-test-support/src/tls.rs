//! TLS for tests: a throwaway certificate authority ([`Pki`]) that writes PEM files; an `accord
//! serve` process started by a test ([`ServeProcess`]) and the certificate a new handshake is
//! presented ([`presented_certificate`]); and a router served over TLS on a loopback port
//! ([`TlsServer`]), optionally asking for or requiring a client certificate that handlers can read
//! ([`TlsPeer`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A certificate authority made for one test, and the directory its PEM files are written to
/// (removed when the value is dropped).
pub struct Pki {
    dir: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, DER.
    pub ca_der: CertificateDer<'static>,
    /// The CA certificate as a PEM file.
    pub ca_file: PathBuf,
}

/// A certificate issued by a [`Pki`], with its key, in memory and as PEM files.
pub struct Issued {
    /// The certificate, DER.
    pub cert_der: CertificateDer<'static>,
    /// The private key, PKCS#8 DER.
    pub key_der: Vec<u8>,
    /// The certificate as a PEM file.
    pub cert_file: PathBuf,
    /// The key as a PEM file.
    pub key_file: PathBuf,
}

impl Pki {
    /// A new CA named `name`, its certificate written to `<dir>/<name>-ca.pem`.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("accord-tls-{name}-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, format!("{name} test CA"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        let cert = params.self_signed(&key).expect("the CA certificate");
        let ca_file = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&ca_file, cert.pem()).expect("write the CA file");
        Self { ca_der: cert.der().clone(), issuer: Issuer::new(params, key), dir, ca_file }
    }

    /// A server certificate for `names` (DNS names or IP addresses), valid now.
    pub fn server(&self, file: &str, names: &[&str]) -> Issued {
        self.issue(file, names, ExtendedKeyUsagePurpose::ServerAuth, false)
    }

    /// A server certificate for `names` that expired in 2021.
    pub fn expired_server(&self, file: &str, names: &[&str]) -> Issued {
        self.issue(file, names, ExtendedKeyUsagePurpose::ServerAuth, true)
    }

    /// A client certificate whose subject is `common_name`.
    pub fn client(&self, file: &str, common_name: &str) -> Issued {
        self.issue(file, &[common_name], ExtendedKeyUsagePurpose::ClientAuth, false)
    }

    /// A path in this PKI's directory, for files a test writes itself.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn issue(&self, file: &str, names: &[&str], usage: ExtendedKeyUsagePurpose, expired: bool) -> Issued {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("leaf parameters");
        params.distinguished_name.push(DnType::CommonName, names.first().cloned().unwrap_or_default());
        params.extended_key_usages = vec![usage];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().expect("a leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("the leaf certificate");
        let cert_file = self.dir.join(format!("{file}.pem"));
        let key_file = self.dir.join(format!("{file}.key"));
        std::fs::write(&cert_file, cert.pem()).expect("write the certificate");
        std::fs::write(&key_file, key.serialize_pem()).expect("write the key");
        Issued { cert_der: cert.der().clone(), key_der: key.serialize_der(), cert_file, key_file }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Whether the server asks for a client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A certificate issued by the given CA is required: a handshake without one fails.
    Required,
}

/// What a handler knows of the TLS connection it is served on (axum `ConnectInfo<TlsPeer>`).
#[derive(Debug, Clone)]
pub struct TlsPeer {
    /// The client's address.
    pub addr: SocketAddr,
    /// The client certificate the peer presented (the leaf, DER), if any.
    pub client_certificate: Option<CertificateDer<'static>>,
}

impl Connected<IncomingStream<'_, TlsListener>> for TlsPeer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener that completes a TLS handshake before handing a connection to axum; a failed
/// handshake is counted and skipped.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    failures: tokio::sync::mpsc::UnboundedSender<String>,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = TlsPeer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else { continue };
            match tokio::time::timeout(Duration::from_secs(10), self.acceptor.accept(tcp).into_fallible()).await {
                Ok(Ok(stream)) => {
                    let client_certificate =
                        stream.get_ref().1.peer_certificates().and_then(|chain| chain.first()).cloned();
                    return (stream, TlsPeer { addr, client_certificate });
                }
                Ok(Err((error, tcp))) => {
                    let _ = self.failures.send(error.to_string());
                    // The alert that says why must reach the client: a close with its first
                    // request unread would reset the connection and destroy it.
                    tokio::spawn(linger(tcp));
                }
                Err(_) => {
                    let _ = self.failures.send("handshake timed out".into());
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(TlsPeer { addr: self.tcp.local_addr()?, client_certificate: None })
    }
}

/// A router served over TLS on `127.0.0.1:<ephemeral port>` until dropped.
pub struct TlsServer {
    /// The bound address.
    pub addr: SocketAddr,
    /// `https://localhost:<port>` (the name the test certificates are issued for).
    pub origin: String,
    handshake_failures: tokio::sync::mpsc::UnboundedReceiver<String>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TlsServer {
    /// Serves `app` with the certificate `identity`; with [`ClientAuth::Required`], only to
    /// clients presenting a certificate issued by `pki`.
    pub async fn start(app: Router, identity: &Issued, pki: &Pki, client_auth: ClientAuth) -> Self {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = match client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Required => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(pki.ca_der.clone()).expect("the CA as a root");
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .expect("a client verifier");
                builder.with_client_cert_verifier(verifier)
            }
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.key_der.clone()));
        let mut config =
            builder.with_single_cert(vec![identity.cert_der.clone()], key).expect("the server certificate");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = tcp.local_addr().expect("local address");
        let (failures, handshake_failures) = tokio::sync::mpsc::unbounded_channel();
        let listener = TlsListener { tcp, acceptor: TlsAcceptor::from(Arc::new(config)), failures };
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app.into_make_service_with_connect_info::<TlsPeer>())
                .with_graceful_shutdown(async {
                    let _ = signal.await;
                })
                .await
                .expect("test TLS server");
        });
        Self {
            addr,
            origin: format!("https://localhost:{}", addr.port()),
            handshake_failures,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// A URL on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.origin, path)
    }

    /// The next handshake the server saw fail, as rustls put it (waits up to 5 s).
    pub async fn handshake_failure(&mut self) -> Option<String> {
        tokio::time::timeout(Duration::from_secs(5), self.handshake_failures.recv()).await.ok().flatten()
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Reads a PEM file written by [`Pki`] (for tests that corrupt or combine them).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("a PEM file")
}

/// Closes a socket whose handshake was refused so that the client reads the alert: the FIN, then
/// what the client still sends is read and dropped for up to two seconds.
async fn linger(mut tcp: TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let _ = tcp.shutdown().await;
    let mut scratch = [0u8; 4096];
    let drain = async { while matches!(tcp.read(&mut scratch).await, Ok(read) if read > 0) {} };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
}

/// An `accord serve` process started by a test, killed when dropped: the URL its first line
/// printed, the lines of its start summary, and its standard error as it comes.
pub struct ServeProcess {
    child: std::process::Child,
    /// The URL the server listens on (`https://127.0.0.1:<port>` over TLS), without a trailing `/`.
    pub origin: String,
    /// The start summary, up to its `task store:` line.
    pub banner: Vec<String>,
    stderr: Arc<std::sync::Mutex<String>>,
}

impl ServeProcess {
    /// Starts `binary serve --port 0 --store memory ARGS…` (the test's `env!("CARGO_BIN_EXE_accord")`)
    /// with `ACCORD_LOG=error`, and waits for its start summary.
    pub fn start<I, S>(binary: &str, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        use std::io::{BufRead as _, BufReader};
        use std::process::{Command, Stdio};
        let mut child = Command::new(binary)
            .args(["serve", "--port", "0", "--store", "memory"])
            .args(args)
            .env("ACCORD_LOG", "error")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start accord serve");
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let collected = stderr.clone();
        let errors = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(errors).lines().map_while(Result::ok) {
                let mut text = collected.lock().expect("lock");
                text.push_str(&line);
                text.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        let origin = first.rsplit(" listening on ").next().expect("url").trim_end_matches('/').to_owned();
        let mut banner = vec![first];
        for line in lines.by_ref() {
            let line = line.expect("utf-8");
            let done = line.starts_with("task store:");
            banner.push(line);
            if done {
                break;
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, origin, banner, stderr }
    }

    /// The port of [`ServeProcess::origin`].
    pub fn port(&self) -> u16 {
        self.origin.rsplit(':').next().and_then(|port| port.parse().ok()).expect("a port")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the process SIGHUP (with `kill -HUP`).
    pub fn hangup(&self) {
        let status = std::process::Command::new("kill").args(["-HUP", &self.child.id().to_string()]).status();
        assert!(status.expect("kill").success(), "kill -HUP");
    }

    /// What the process wrote to standard error so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The DER of the certificate a new TLS handshake with `127.0.0.1:port` is presented, verified
/// against the authority `ca` (a fresh client each time: no session is resumed).
pub async fn presented_certificate(port: u16, ca: &CertificateDer<'static>) -> Vec<u8> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.expect("handshake");
    stream.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec()
}
