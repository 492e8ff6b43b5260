//! `accord serve --agent conformance` as a real process, for the tests that need it.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The conformance agent on a free loopback port, killed on drop.
pub struct Served {
    child: Child,
    /// Its base URL, without a trailing `/`.
    pub url: String,
}

impl Served {
    pub fn conformance() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_accord"))
            .args(["serve", "--agent", "conformance", "--port", "0", "--store", "memory"])
            .env("ACCORD_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start accord serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("utf-8");
        assert!(first.starts_with("Accord conformance agent listening on "), "{first}");
        let url = first.rsplit(' ').next().expect("url").trim_end_matches('/').to_owned();
        // Keep reading whatever else the server prints, so its stdout never closes under it.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
