//! `sluice server` as an operator runs it: configuration errors name the key, the node
//! listens where the configuration says (port 0: the real port is printed), answers
//! ApiVersions, and SIGTERM shuts it down cleanly (exit 0, clean-shutdown marker and
//! checkpoints written), with its registration in the metadata log.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;

mod process;

use process::SLUICE;

/// Reads the server's stderr until it prints its client listener's address; returns
/// the address and the rest of stderr.
fn wait_until_listening(
    child: &mut std::process::Child,
) -> (String, BufReader<std::process::ChildStderr>) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the server exited before listening"
        );
        if let Some(address) = line
            .trim()
            .strip_prefix("sluice: listening on PLAINTEXT://")
        {
            return (address.to_string(), stderr);
        }
    }
}

/// `sluice server` on free loopback ports with a fresh data directory, stderr piped.
fn server_command(data: &tempfile::TempDir) -> Command {
    process::server_command(data.path(), &[], &[])
}

#[test]
fn invalid_settings_are_refused_with_the_key_named() {
    let cases = [
        ("num.partitions=0", "num.partitions"),
        (
            "log.message.timestamp.type=EventTime",
            "CreateTime, LogAppendTime",
        ),
        ("listeners", "key=value"),
        (
            "max.connections.per.ip.overrides=127.0.0.1",
            "max.connections.per.ip.overrides",
        ),
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

/// A voter whose quorum never forms exits after `initial.broker.registration.timeout.ms`
/// (Kafka's key and its 60 s default), and says which setting ran out.
#[test]
fn a_voter_without_its_quorum_exits_naming_the_registration_timeout() {
    let data = tempfile::tempdir().unwrap();
    // Two free ports: this node's controller listener, and a voter nobody runs.
    let ports: Vec<u16> = (0..2)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .collect();
    let output = Command::new(SLUICE)
        .args(["server", "--set"])
        .arg(format!("log.dirs={}", data.path().display()))
        .arg("--set")
        .arg(format!(
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{}",
            ports[0]
        ))
        .arg("--set")
        .arg(format!(
            "controller.quorum.voters=1@127.0.0.1:{},2@127.0.0.1:{}",
            ports[0], ports[1]
        ))
        .args(["--set", "initial.broker.registration.timeout.ms=1500"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("no leader elected within 1500 ms (initial.broker.registration.timeout.ms)"),
        "{stderr}"
    );
}

#[test]
fn serves_api_versions_and_shuts_down_cleanly_on_sigterm() {
    let data = tempfile::tempdir().unwrap();
    let mut child = server_command(&data).spawn().unwrap();
    let (address, _stderr) = wait_until_listening(&mut child);
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
    assert_eq!(
        metadata
            .image()
            .feature_level("eligible.leader.replicas.version"),
        Some(1)
    );
    let registration = metadata.image().broker(1).expect("the node registered");
    assert!(!registration.fenced);
    assert_eq!(registration.endpoints[0].name, "PLAINTEXT");
    assert_eq!(
        metadata.end_offset(),
        8,
        "the quorum's membership and its leader's first entry (a NoOpRecord each), five bootstrap records (metadata.version, group.version, transaction.version, eligible.leader.replicas.version, min.insync.replicas), one registration"
    );
    let checkpoint =
        std::fs::read_to_string(data.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(checkpoint, "0\n0\n");
}

/// A process's virtual memory size (`VmSize` in /proc), in bytes: what reserving a
/// buffer costs even before its pages are touched.
fn virtual_memory_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmSize:"))
        .expect("VmSize in /proc/<pid>/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|value| value.parse().ok())
        .expect("VmSize in kB");
    kib * 1024
}

/// Connections that declare a ~100 MB frame and then trickle bytes (slow loris) hold
/// what they sent, not what they declared: 50 of them must not make the broker reserve
/// 5 GB. Before the frame buffer grew with the bytes that arrive, the broker's VmSize
/// grew by about 5 GB here (each frame's buffer was allocated at its declared size).
#[test]
fn a_declared_frame_size_reserves_no_memory_before_its_bytes_arrive() {
    const CONNECTIONS: usize = 50;
    const DECLARED_BYTES: i32 = 100_000_000;
    let data = tempfile::tempdir().unwrap();
    let mut child = server_command(&data).spawn().unwrap();
    let (address, _stderr) = wait_until_listening(&mut child);
    // ApiVersions v0 (header v1: api key 18, version 0, correlation id, client id "t").
    let api_versions = |correlation_id: i32| {
        let mut request = Vec::new();
        request.extend_from_slice(&18i16.to_be_bytes());
        request.extend_from_slice(&0i16.to_be_bytes());
        request.extend_from_slice(&correlation_id.to_be_bytes());
        request.extend_from_slice(&1i16.to_be_bytes());
        request.extend_from_slice(b"t");
        let mut frame = (request.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&request);
        frame
    };
    let mut healthy = TcpStream::connect(&address).unwrap();
    let answer = |stream: &mut TcpStream, correlation_id: i32| {
        stream.write_all(&api_versions(correlation_id)).unwrap();
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).unwrap();
        let mut response = vec![0u8; i32::from_be_bytes(size) as usize];
        stream.read_exact(&mut response).unwrap();
        assert_eq!(&response[0..4], &correlation_id.to_be_bytes());
    };
    answer(&mut healthy, 0);
    let before = virtual_memory_bytes(child.id());
    let mut trickling = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.write_all(&DECLARED_BYTES.to_be_bytes()).unwrap();
        stream.write_all(&[0u8]).unwrap();
        trickling.push(stream);
    }
    let mut grown_max = 0;
    for round in 1..=10 {
        // The broker keeps answering a healthy client while the others trickle.
        answer(&mut healthy, round);
        for stream in &mut trickling {
            stream.write_all(&[0u8; 16]).unwrap();
        }
        grown_max = grown_max.max(virtual_memory_bytes(child.id()).saturating_sub(before));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    // Each connection may hold one buffer step ahead of its bytes (1 MiB, 50 MiB in
    // all), and new threads may add stacks and glibc allocator arenas (64 MiB each, at
    // most 8 per core); 5 GB is what the declared sizes would reserve.
    let bound: u64 = 2 << 30;
    assert!(
        grown_max < bound,
        "{CONNECTIONS} connections that declared {DECLARED_BYTES} bytes each and sent a few \
         grew the broker's virtual memory by {grown_max} bytes (bound {bound})"
    );
}

/// The broker's CPU time so far (utime + stime from /proc/<pid>/stat), in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which ends with the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Out of file descriptors (EMFILE), the accept loop pauses between attempts instead of
/// retrying at once: the refused connection stays in the backlog, so retrying at once
/// spins a core. Before the pause, the broker below used about one CPU second per
/// second while clients waited.
#[test]
fn out_of_file_descriptors_the_accept_loop_does_not_spin() {
    use std::os::unix::process::CommandExt;
    const FILE_DESCRIPTORS: u64 = 96;
    let data = tempfile::tempdir().unwrap();
    let mut command = server_command(&data);
    // SAFETY: setrlimit is async-signal-safe; it only lowers this child's own limit.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: FILE_DESCRIPTORS,
                rlim_max: FILE_DESCRIPTORS,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let (address, mut stderr) = wait_until_listening(&mut child);
    // Keep reading stderr so the broker never blocks on a full pipe.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    // More connections than the broker has descriptors: the last ones wait in the
    // backlog while every accept fails with EMFILE.
    let clients: Vec<TcpStream> = (0..2 * FILE_DESCRIPTORS)
        .map(|_| TcpStream::connect(&address).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = cpu_seconds(child.id());
    std::thread::sleep(std::time::Duration::from_secs(2));
    let used = cpu_seconds(child.id()) - before;
    drop(clients);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let log = drain.join().unwrap();
    assert!(
        log.contains("accept failed"),
        "the broker never ran out of descriptors: {log}"
    );
    assert!(
        used < 0.4,
        "the broker used {used:.2} CPU seconds in 2 s while out of file descriptors"
    );
}
