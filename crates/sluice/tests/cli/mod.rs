//! A `sluice server` process for the CLI tests, and the `sluice <tool>` commands run
//! against it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};

#[path = "../process/mod.rs"]
mod process;
use std::sync::{Arc, Mutex};

pub const SLUICE: &str = process::SLUICE;

/// A `sluice server` on free ports with its own log dir; killed when dropped.
pub struct Server {
    child: Child,
    pub address: String,
    /// What the server wrote to stderr, for failure messages.
    log: Arc<Mutex<String>>,
    _data: tempfile::TempDir,
}

impl Server {
    /// Starts a server with these `key=value` settings on top of the embedded defaults.
    pub fn start(settings: &[&str]) -> Server {
        let data = tempfile::tempdir().unwrap();
        // Port 0 is advertised as the port bound, as in Kafka, so the cluster metadata
        // (and FindCoordinator) names a broker the client can reach.
        let mut all = vec!["advertised.listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"];
        all.extend_from_slice(settings);
        let mut child = process::server_command(data.path(), &[], &all)
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(String::new()));
        let mut line = String::new();
        let address = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the server exited before listening: {}",
                log.lock().unwrap()
            );
            log.lock().unwrap().push_str(&line);
            if let Some(address) = line
                .trim()
                .strip_prefix("sluice: listening on PLAINTEXT://")
            {
                break address.to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            sink.lock().unwrap().push_str(&rest);
        });
        Server {
            child,
            address,
            log,
            _data: data,
        }
    }

    /// The server's port.
    pub fn port(&self) -> &str {
        self.address.rsplit(':').next().unwrap()
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Runs `sluice <tool> --bootstrap-server <this server> <args>`.
    pub fn run(&self, tool: &str, args: &[&str]) -> Output {
        run(tool, &self.address, args)
    }

    /// Runs `sluice <tool> --bootstrap-server <this server> <args>` with `input` on stdin.
    pub fn run_input(&self, tool: &str, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(SLUICE)
            .args([tool, "--bootstrap-server", &self.address])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A command that refuses its arguments exits before reading stdin: a closed pipe
        // then is its answer, not the test's failure.
        if let Err(error) = child.stdin.take().unwrap().write_all(input.as_bytes()) {
            assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
        }
        child.wait_with_output().unwrap()
    }

    /// Runs a command that must succeed; returns its stdout and stderr.
    pub fn ok(&self, tool: &str, args: &[&str]) -> (String, String) {
        let output = self.run(tool, args);
        assert!(
            output.status.success(),
            "sluice {tool} {args:?} failed: {}\nserver log:\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
        (
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }

    /// Runs a command that must fail; returns its stderr.
    pub fn fails(&self, tool: &str, args: &[&str]) -> String {
        let output = self.run(tool, args);
        assert!(
            !output.status.success(),
            "sluice {tool} {args:?} should fail; printed: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8(output.stderr).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `sluice <tool> --bootstrap-server <bootstrap> <args>`.
pub fn run(tool: &str, bootstrap: &str, args: &[&str]) -> Output {
    Command::new(SLUICE)
        .args([tool, "--bootstrap-server", bootstrap])
        .args(args)
        .output()
        .unwrap()
}
