//! `accord serve` as a real process, for the tests that need one.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `accord serve` on a free loopback port, killed on drop.
pub struct Served {
    child: Child,
    /// Its base URL, without a trailing `/`.
    pub url: String,
}

impl Served {
    /// The conformance agent, on an in-process store.
    pub fn conformance() -> Self {
        Self::start(&["--agent", "conformance", "--store", "memory"])
    }

    /// `accord serve --port 0` with `args` (the demo agent unless they say otherwise).
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        assert!(first.starts_with("Accord ") && first.contains(" agent listening on "), "{first}");
        let url = first.rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
        // Keep reading whatever else the server prints, so its stdout never closes under it.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }

    /// Kills the process with SIGKILL and waits for it: a crash, not a shutdown.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
