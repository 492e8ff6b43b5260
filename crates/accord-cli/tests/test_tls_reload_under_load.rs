//! The certificate of `accord serve --tls-cert --tls-key` swapped under load: two wrk runs keep
//! HTTPS requests coming for the whole test (A2A `SendMessage` over keep-alive connections, and
//! `GET /health` with `Connection: close`, so that every request is a new handshake) while the
//! test swaps the certificate and key for new pairs, picked up by the 5 s poll and by SIGHUP, and
//! once for a pair whose key is not the certificate's. No request may fail: wrk must count no
//! socket error (connect, read, write, timeout) and no answer that is not 2xx; a new handshake
//! must present the newest good certificate after each swap and the old one while the bad pair is
//! in place, which must be logged in exactly one ERROR line naming its files.
//!
//! The pairs are swapped as a mounted Kubernetes secret is: each pair is written to a directory
//! of its own, and the served paths go through a symbolic link (`live`) that one rename(2) points
//! at the new directory, so that certificate and key change together. (Renaming the two files one
//! after the other would let a poll between the renames see a mismatched pair and log an ERROR,
//! as docs/tls.md says.)
//!
//! Needs wrk (Debian package `wrk`): without it the test is skipped with a message, except in CI
//! (`CI=true`), where it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use accord_test_support::tls::{Pki, ServeProcess, presented_certificate};
use serde_json::Value;

/// How long a swap may take to be seen: the poll runs every 5 s.
const POLL_SEEN: Duration = Duration::from_secs(12);
/// More than one poll period: time for a second poll to (wrongly) try the bad pair again.
const ONE_POLL_MORE: Duration = Duration::from_millis(5_500);
const REFUSED: &str = "TLS certificate not reloaded";

fn wrk_installed() -> bool {
    Command::new("wrk").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// A pair of certificate and key files in a directory of their own.
struct Pair {
    dir: PathBuf,
    der: Vec<u8>,
}

/// The served files: `<pki>/live/cert.pem` and `<pki>/live/cert.key`, through the link `live`.
struct Live<'a> {
    pki: &'a Pki,
    pairs: u32,
}

impl<'a> Live<'a> {
    fn new(pki: &'a Pki) -> Self {
        Self { pki, pairs: 0 }
    }

    fn certificate(&self) -> PathBuf {
        self.pki.path("live").join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.pki.path("live").join("cert.key")
    }

    /// A new pair for 127.0.0.1; with `foreign_key`, its key is another pair's (a mismatch).
    fn pair(&mut self, foreign_key: bool) -> Pair {
        self.pairs += 1;
        let name = format!("pair-{}", self.pairs);
        std::fs::create_dir_all(self.pki.path(&name)).expect("a pair directory");
        let issued = self.pki.server(&format!("{name}/cert"), &["127.0.0.1"]);
        if foreign_key {
            let other = self.pki.server(&format!("{name}/other"), &["127.0.0.1"]);
            std::fs::rename(&other.key_file, &issued.key_file).expect("replace the key");
        }
        Pair { dir: self.pki.path(&name), der: issued.cert_der.to_vec() }
    }

    /// Points `live` at `pair`: a new link, renamed over the old one (one atomic step).
    fn serve(&self, pair: &Pair) {
        let link = self.pki.path("live");
        let staged = self.pki.path("live.new");
        let _ = std::fs::remove_file(&staged);
        std::os::unix::fs::symlink(&pair.dir, &staged).expect("a link");
        std::fs::rename(&staged, &link).expect("rename the link");
    }
}

/// A wrk run in the background, stopped with SIGINT (wrk then reports and runs the script's
/// `done`).
struct Wrk {
    child: Option<Child>,
    name: &'static str,
}

impl Wrk {
    fn start(name: &'static str, origin: &str, script: &Path, mode: &str, close: bool) -> Self {
        let mut command = Command::new("wrk");
        command.args(["-t", "1", "-c", "4", "-d", "120s", "--timeout", "10s", "-s"]).arg(script);
        if close {
            command.args(["-H", "Connection: close"]);
        }
        let child = command
            .arg(origin)
            .args(["--", mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wrk");
        Self { child: Some(child), name }
    }

    /// Stops it and returns its script's report.
    fn finish(mut self) -> Value {
        let child = self.child.take().expect("wrk runs");
        let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        assert!(status.expect("kill").success(), "kill -INT wrk");
        let output = child.wait_with_output().expect("wrk's output");
        assert!(output.status.success(), "{}: wrk exited {:?}", self.name, output.status);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report = stdout.lines().rev().find(|line| line.starts_with('{')).unwrap_or_else(|| {
            panic!("{}: no report from wrk: {stdout}\n{}", self.name, String::from_utf8_lossy(&output.stderr))
        });
        let report: Value = serde_json::from_str(report).expect("wrk's report is JSON");
        eprintln!("wrk {}: {report}", self.name);
        report
    }
}

impl Drop for Wrk {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until a new handshake presents `der`.
async fn until_presented(server: &ServeProcess, pki: &Pki, der: &[u8], what: &str) {
    let deadline = Instant::now() + POLL_SEEN;
    while presented_certificate(server.port(), &pki.ca_der).await != der {
        assert!(Instant::now() < deadline, "{what}: the new certificate is not presented after {POLL_SEEN:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn refusals(server: &ServeProcess) -> Vec<String> {
    server.stderr().lines().filter(|line| line.contains(REFUSED)).map(str::to_owned).collect()
}

#[tokio::test]
async fn certificate_swaps_under_https_load_fail_no_request() {
    if !wrk_installed() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "wrk is missing in CI (.ci/run installs it)");
        eprintln!("skipped: wrk is not installed (Debian package wrk)");
        return;
    }
    let pki = Pki::new("reload-load");
    let mut live = Live::new(&pki);
    let first = live.pair(false);
    live.serve(&first);
    let certificate = live.certificate();
    let key = live.key();
    let server = ServeProcess::start(
        env!("CARGO_BIN_EXE_accord"),
        [std::ffi::OsStr::new("--tls-cert"), certificate.as_os_str(), "--tls-key".as_ref(), key.as_os_str()],
    );
    assert!(server.origin.starts_with("https://127.0.0.1:"), "{:?}", server.banner);
    assert_eq!(presented_certificate(server.port(), &pki.ca_der).await, first.der);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls-reload.lua");
    let kept = Wrk::start("keep-alive SendMessage", &server.origin, &script, "send", false);
    let fresh = Wrk::start("Connection: close /health", &server.origin, &script, "health", true);
    tokio::time::sleep(Duration::from_secs(1)).await;

    // A new pair, seen by the poll.
    let second = live.pair(false);
    live.serve(&second);
    until_presented(&server, &pki, &second.der, "a swap seen by the poll").await;

    // Another, and SIGHUP.
    let third = live.pair(false);
    live.serve(&third);
    server.hangup();
    until_presented(&server, &pki, &third.der, "a swap and SIGHUP").await;

    // A key that is not the certificate's: one ERROR line, and the third pair stays, for longer
    // than another poll.
    let bad = live.pair(true);
    live.serve(&bad);
    let deadline = Instant::now() + POLL_SEEN;
    while refusals(&server).is_empty() {
        assert!(Instant::now() < deadline, "no ERROR line for the bad pair: {}", server.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let until = Instant::now() + ONE_POLL_MORE;
    while Instant::now() < until {
        assert_eq!(
            presented_certificate(server.port(), &pki.ca_der).await,
            third.der,
            "the pair in use stays while the bad one is in place"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let refused = refusals(&server);
    assert_eq!(refused.len(), 1, "exactly one ERROR line for the bad pair: {refused:#?}");
    let line = &refused[0];
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains(&key.display().to_string()), "names the key file: {line}");
    assert!(line.contains(&certificate.display().to_string()), "names the certificate file: {line}");
    assert!(line.contains("does not match the certificate"), "says why: {line}");

    // Good pairs again, with SIGHUP, twice.
    let fourth = live.pair(false);
    live.serve(&fourth);
    server.hangup();
    until_presented(&server, &pki, &fourth.der, "a good pair after the bad one").await;
    let fifth = live.pair(false);
    live.serve(&fifth);
    server.hangup();
    until_presented(&server, &pki, &fifth.der, "the last swap").await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let reports = [kept.finish(), fresh.finish()];
    for report in &reports {
        let count = |field: &str| report[field].as_u64().unwrap_or_else(|| panic!("{field} in {report}"));
        assert!(count("answered") > 0, "wrk got answers: {report}");
        for field in ["connect", "read", "write", "timeout", "non2xx", "wrong", "status"] {
            assert_eq!(count(field), 0, "wrk counted {field} failures: {report}");
        }
        assert_eq!(count("answered"), count("requests"), "every request was answered: {report}");
    }
    assert_eq!(
        presented_certificate(server.port(), &pki.ca_der).await,
        fifth.der,
        "a fresh handshake presents the newest certificate"
    );
    let stderr = server.stderr();
    assert_eq!(refusals(&server).len(), 1, "one ERROR line in all: {stderr}");
    assert!(!stderr.contains("PRIVATE KEY"), "no key material in the log: {stderr}");
}
