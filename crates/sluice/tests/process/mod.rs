//! Starts the real `sluice server` binary as a child process (what the SIGKILL tests
//! kill), on free loopback ports.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Starts `sluice server` on `dir` with a free port and `settings` (`key=value`);
/// returns it and its address once it listens. Its log is drained in the background.
#[allow(dead_code)]
pub fn start(dir: &Path, settings: &[&str]) -> (Child, SocketAddr) {
    let (child, address, _) = start_with(dir, settings, &[], None);
    (child, address)
}

/// `sluice server --with-registry` on free ports: returns it, the broker's address and
/// the registry's base URL once both listen.
#[allow(dead_code)]
pub fn start_with_registry(dir: &Path, settings: &[&str]) -> (Child, SocketAddr, String) {
    let (child, address, registry) = start_with(
        dir,
        settings,
        &["--with-registry", "--registry-listen", "127.0.0.1:0"],
        Some("sluice: schema registry listening on "),
    );
    (child, address, registry.expect("the registry's line"))
}

/// `sluice server` with `args` and `settings`, as [`start`]; waits also for the stderr
/// line starting with `also_wait_for` and returns the rest of it.
#[allow(dead_code)]
pub fn start_with_args(
    dir: &Path,
    settings: &[&str],
    args: &[&str],
    also_wait_for: &str,
) -> (Child, SocketAddr, String) {
    let (child, address, other) = start_with(dir, settings, args, Some(also_wait_for));
    (child, address, other.expect("the awaited line"))
}

/// `sluice server` on `dir` with free loopback ports, `args`, then `settings`
/// (`key=value`, later ones win), stderr piped; not started.
#[allow(dead_code)]
pub fn server_command(dir: &Path, args: &[&str], settings: &[&str]) -> Command {
    let mut command = Command::new(SLUICE);
    command
        .args(["server", "--set"])
        .arg(format!("log.dirs={}", dir.display()))
        .args([
            "--set",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "--set",
            "advertised.listeners=PLAINTEXT://127.0.0.1:0",
        ])
        .args(args);
    for setting in settings {
        command.args(["--set", setting]);
    }
    command.stderr(Stdio::piped());
    command
}

/// Spawns `command` (a [`server_command`], perhaps with more set on it) and returns it
/// with its client address once it listens.
#[allow(dead_code)]
pub fn spawn(command: Command) -> (Child, SocketAddr) {
    let (child, address, _) = spawn_and_wait(command, None);
    (child, address)
}

fn start_with(
    dir: &Path,
    settings: &[&str],
    args: &[&str],
    also_wait_for: Option<&str>,
) -> (Child, SocketAddr, Option<String>) {
    spawn_and_wait(server_command(dir, args, settings), also_wait_for)
}

fn spawn_and_wait(
    mut command: Command,
    also_wait_for: Option<&str>,
) -> (Child, SocketAddr, Option<String>) {
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut address = None;
    let mut other = None;
    while address.is_none() || (also_wait_for.is_some() && other.is_none()) {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the server exited before listening"
        );
        let text = line.trim();
        if let Some(found) = text.strip_prefix("sluice: listening on PLAINTEXT://") {
            address = Some(found.parse().unwrap());
        }
        if let Some(prefix) = also_wait_for
            && let Some(found) = text.strip_prefix(prefix)
        {
            other = Some(found.to_string());
        }
    }
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, address.expect("an address"), other)
}
