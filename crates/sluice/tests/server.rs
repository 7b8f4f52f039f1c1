//! `sluice server` as an operator runs it: configuration errors name the key, the node
//! listens where the configuration says (port 0: the real port is printed), answers
//! ApiVersions, and SIGTERM shuts it down cleanly (exit 0, clean-shutdown marker and
//! checkpoints written), with its registration in the metadata log.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

#[test]
fn invalid_settings_are_refused_with_the_key_named() {
    let cases = [
        ("num.partitions=0", "num.partitions"),
        (
            "log.message.timestamp.type=EventTime",
            "CreateTime, LogAppendTime",
        ),
        ("listeners", "key=value"),
    ];
    for (setting, expected) in cases {
        let output = Command::new(SLUICE)
            .args(["server", "--set", setting])
            .output()
            .unwrap();
        assert!(!output.status.success(), "{setting}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{setting}: {stderr}");
    }
    let output = Command::new(SLUICE)
        .args(["server", "--config", "/nonexistent/server.properties"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/server.properties"));
}

#[test]
fn version_names_the_kafka_protocol_it_speaks() {
    let output = Command::new(SLUICE).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!(
            "sluice {} (Kafka {} protocol)",
            env!("CARGO_PKG_VERSION"),
            sluice_broker::apis::KAFKA_VERSION
        )
    );
    assert_eq!(sluice_broker::apis::KAFKA_VERSION, "4.1");
}

#[test]
fn serves_api_versions_and_shuts_down_cleanly_on_sigterm() {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(SLUICE)
        .args(["server", "--set"])
        .arg(format!("log.dirs={}", data.path().display()))
        .args([
            "--set",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
            break address.to_string();
        }
    };
    let mut stream = TcpStream::connect(&address).unwrap();
    // ApiVersions v0: header v1 (api key 18, version 0, correlation id, client id), no body.
    let mut request = Vec::new();
    request.extend_from_slice(&18i16.to_be_bytes());
    request.extend_from_slice(&0i16.to_be_bytes());
    request.extend_from_slice(&4242i32.to_be_bytes());
    request.extend_from_slice(&4i16.to_be_bytes());
    request.extend_from_slice(b"test");
    stream
        .write_all(&(request.len() as i32).to_be_bytes())
        .unwrap();
    stream.write_all(&request).unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut response = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut response).unwrap();
    assert_eq!(
        i32::from_be_bytes(response[0..4].try_into().unwrap()),
        4242,
        "correlation id"
    );
    assert_eq!(
        i16::from_be_bytes(response[4..6].try_into().unwrap()),
        0,
        "error code"
    );
    let count = i32::from_be_bytes(response[6..10].try_into().unwrap());
    let entries: Vec<(i16, i16, i16)> = response[10..10 + 6 * count as usize]
        .chunks(6)
        .map(|e| {
            let field = |i: usize| i16::from_be_bytes([e[i], e[i + 1]]);
            (field(0), field(2), field(4))
        })
        .collect();
    assert!(entries.contains(&(18, 0, 4)), "{entries:?}");
    drop(stream);

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "SIGTERM must end the server cleanly: {status}"
    );
    for file in [
        ".kafka_cleanshutdown",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
    ] {
        assert!(
            data.path().join(file).exists(),
            "{file} missing after a clean shutdown"
        );
    }
    // The metadata log (the Raft log, read here as Kafka's tools read it: metadata
    // records) was bootstrapped (the feature levels, the cluster-wide min.insync.replicas)
    // and holds the node's registration; it was closed cleanly and is not listed among
    // the data logs.
    let metadata = sluice_metadata::MetadataLog::open(data.path(), true, 1).unwrap();
    assert_eq!(metadata.image().feature_level("metadata.version"), Some(27));
    // Kafka 4.1's bootstrap levels for a new cluster.
    assert_eq!(
        metadata.image().feature_level("transaction.version"),
        Some(2)
    );
    assert_eq!(metadata.image().feature_level("group.version"), Some(1));
    let registration = metadata.image().broker(1).expect("the node registered");
    assert!(!registration.fenced);
    assert_eq!(registration.endpoints[0].name, "PLAINTEXT");
    assert_eq!(
        metadata.end_offset(),
        7,
        "the quorum's membership and its leader's first entry (a NoOpRecord each), four bootstrap records (metadata.version, group.version, transaction.version, min.insync.replicas), one registration"
    );
    let checkpoint =
        std::fs::read_to_string(data.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(checkpoint, "0\n0\n");
}
