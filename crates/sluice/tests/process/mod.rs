//! Starts the real `sluice server` binary as a child process (what the SIGKILL tests
//! kill), on free loopback ports.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Starts `sluice server` on `dir` with a free port and `settings` (`key=value`);
/// returns it and its address once it listens. Its log is drained in the background.
pub fn start(dir: &Path, settings: &[&str]) -> (Child, SocketAddr) {
    let mut command = Command::new(SLUICE);
    command
        .args(["server", "--set"])
        .arg(format!("log.dirs={}", dir.display()))
        .args([
            "--set",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "--set",
            "advertised.listeners=PLAINTEXT://127.0.0.1:0",
        ]);
    for setting in settings {
        command.args(["--set", setting]);
    }
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let address = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the server exited before listening"
        );
        if let Some(address) = line
            .trim()
            .strip_prefix("sluice: listening on PLAINTEXT://")
        {
            break address.parse().unwrap();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, address)
}
