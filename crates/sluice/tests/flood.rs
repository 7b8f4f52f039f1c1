//! A broker must survive its clients (issue 19, resource limits), tested against the
//! real `sluice server` process: thousands of slow-loris connections (each declaring a
//! ~100 MB request and then trickling a byte a second) and a consumer asking for
//! 2^31-1 bytes of 50 partitions, beside a producer that must keep being served.
//!
//! It checks what the limits promise: the broker's resident memory stays under a stated
//! bound (a declared frame reserves nothing before its bytes arrive; a Fetch answer is
//! capped by `fetch.max.bytes`), the trickling connections are closed once
//! `connections.max.idle.ms` passes, and every one of the producer's writes during the
//! flood is acknowledged. The throughput figures it prints (producer records/s before
//! and during the flood, peak RSS) go to docs/reliability.md; they are not asserted
//! (speed is for benchmarks).

mod process;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use sluice_client::ClientConfig;
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, NewTopic};

/// Slow-loris connections, as many as the file descriptor limit allows up to this.
const CONNECTIONS: usize = 5_000;
/// What each of them declares: socket.request.max.bytes, Kafka's default.
const DECLARED_BYTES: i32 = 104_857_600;
const BIG_PARTITIONS: i32 = 50;
/// Bytes written to each of the 50 partitions: 80 MB in all, more than the 55 MB a
/// Fetch answer may carry (`fetch.max.bytes`, Kafka's default).
const BYTES_PER_PARTITION: usize = 1_600_000;
const IDLE_MS: u64 = 8_000;
/// The broker's resident memory may grow by at most this over the flood: the trickling
/// connections' buffers (16 KiB each at most), one capped Fetch answer (55 MB) in
/// flight at a time, and the allocator's slack. Measured: +164 MiB; +1,051 MiB when each
/// frame's first buffer was 1 MiB.
const RSS_GROWTH_BOUND: u64 = 512 << 20;

/// The resident set size of a process (`VmRSS`), in bytes.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .expect("VmRSS in /proc/<pid>/status")
        * 1024
}

/// Raises this process's open-file limit to its hard limit (the server inherits it);
/// returns the soft limit now in force.
fn raise_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// A Fetch v12 frame for partitions 0..BIG_PARTITIONS of "big" from offset 0, asking
/// for i32::MAX bytes in all and per partition.
fn greedy_fetch(correlation_id: i32) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::Fetch as i16;
    header.request_api_version = 12;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str("greedy"));
    let request = FetchRequest::default()
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(i32::MAX)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("big")))
                .with_partitions(
                    (0..BIG_PARTITIONS)
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(i32::MAX)
                        })
                        .collect(),
                ),
        ]);
    let mut body = BytesMut::new();
    header
        .encode(&mut body, ApiKey::Fetch.request_header_version(12))
        .unwrap();
    request.encode(&mut body, 12).unwrap();
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    frame
}

/// Sends the greedy Fetch and returns the size of the answer.
fn fetch_everything(address: SocketAddr, correlation_id: i32) -> usize {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(&greedy_fetch(correlation_id)).unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let size = i32::from_be_bytes(size) as usize;
    let mut response = vec![0u8; size];
    stream.read_exact(&mut response).unwrap();
    assert_eq!(&response[0..4], &correlation_id.to_be_bytes());
    size
}

/// Writes records to "steady" for `seconds`, each acknowledged before the next batch
/// of 100 goes; returns records per second. Panics on a failed write.
async fn produce_steadily(producer: &Producer, seconds: u64, label: &str) -> f64 {
    let started = Instant::now();
    let mut written = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let mut deliveries = Vec::with_capacity(100);
        for i in 0..100 {
            let record = ProducerRecord::new("steady", format!("{label}-{written}-{i}"));
            deliveries.push(producer.send(record).await.expect("send"));
        }
        for delivery in deliveries {
            delivery
                .await
                .unwrap_or_else(|e| panic!("a write during {label} failed: {e}"));
        }
        written += 100;
    }
    written as f64 / started.elapsed().as_secs_f64()
}

#[test]
fn a_flood_of_slow_connections_and_a_greedy_fetch_leave_memory_bounded_and_a_producer_served() {
    let file_limit = raise_file_limit();
    // Each connection takes a descriptor here and one in the server.
    let connections = CONNECTIONS.min((file_limit.saturating_sub(512) / 2) as usize);
    assert!(
        connections >= 1_000,
        "the open-file limit ({file_limit}) leaves room for only {connections} connections"
    );
    if connections < CONNECTIONS {
        eprintln!("flood: {connections} connections (open-file limit {file_limit})");
    }
    let data = tempfile::tempdir().unwrap();
    let idle = format!("connections.max.idle.ms={IDLE_MS}");
    let (mut server, address) = process::start(data.path(), &[idle.as_str()]);
    let pid = server.id();
    let runtime = tokio::runtime::Runtime::new().unwrap();

    // Two topics: 80 MB over 50 partitions for the greedy consumer, one for the
    // producer.
    let producer = runtime.block_on(async {
        let admin = Admin::connect(ClientConfig::new([address.to_string()]))
            .await
            .unwrap();
        let topics = [
            NewTopic {
                name: "big".into(),
                num_partitions: Some(BIG_PARTITIONS),
                replication_factor: None,
                configs: vec![],
            },
            NewTopic {
                name: "steady".into(),
                num_partitions: Some(1),
                replication_factor: None,
                configs: vec![],
            },
        ];
        let created = admin.create_topics(&topics, false).await.unwrap();
        for (name, result) in created {
            result.unwrap_or_else(|e| panic!("topic {name}: {e}"));
        }
        let producer = Producer::connect(
            ProducerConfig::from_iter([
                ("bootstrap.servers", address.to_string()),
                ("linger.ms", "5".to_string()),
                ("max.request.size", "2097152".to_string()),
            ])
            .unwrap(),
        )
        .await
        .unwrap();
        let value = Bytes::from(vec![b'x'; 100_000]);
        let mut deliveries = Vec::new();
        for partition in 0..BIG_PARTITIONS {
            for _ in 0..BYTES_PER_PARTITION / value.len() {
                let record = ProducerRecord::new("big", value.clone()).with_partition(partition);
                deliveries.push(producer.send(record).await.unwrap());
            }
        }
        for delivery in deliveries {
            delivery.await.unwrap();
        }
        producer
    });

    let baseline = runtime.block_on(produce_steadily(&producer, 3, "baseline"));
    let rss_before = resident_bytes(pid);

    // The flood: every connection declares 100 MB and sends one byte, then one more a
    // second (a slow loris: never a whole request, so idle by connections.max.idle.ms).
    // Opened from 25 threads at once (one by one, loopback SYN retries made it take
    // longer than the idle limit).
    let flood_started = Instant::now();
    let mut trickling: Vec<TcpStream> = std::thread::scope(|scope| {
        let openers: Vec<_> = (0..25)
            .map(|i| {
                scope.spawn(move || {
                    (0..connections / 25 + usize::from(i < connections % 25))
                        .map(|_| {
                            let mut stream = TcpStream::connect(address).unwrap();
                            stream.write_all(&DECLARED_BYTES.to_be_bytes()).unwrap();
                            stream.write_all(&[0u8]).unwrap();
                            stream
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        openers
            .into_iter()
            .flat_map(|opener| opener.join().unwrap())
            .collect()
    });
    let opened_in = flood_started.elapsed();
    assert_eq!(trickling.len(), connections);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(rss_before));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(resident_bytes(pid), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let greedy = std::thread::spawn(move || {
        (0..4)
            .map(|round| fetch_everything(address, round))
            .max()
            .unwrap()
    });
    let trickler = std::thread::spawn(move || {
        // Until every connection was closed by the broker (a write fails, or a read
        // sees the end), a byte a second; returns when the last closed.
        let mut open = trickling.len();
        let mut open_at_first = None;
        let deadline = Instant::now() + Duration::from_millis(IDLE_MS) * 5;
        let mut closed_at = None;
        while Instant::now() < deadline {
            open = 0;
            for stream in &mut trickling {
                if stream.write_all(&[0u8]).is_ok() {
                    open += 1;
                }
            }
            open_at_first.get_or_insert(open);
            if open == 0 {
                closed_at = Some(Instant::now());
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        (open, closed_at, open_at_first.unwrap_or(0))
    });
    let during = runtime.block_on(produce_steadily(&producer, 4, "flood"));
    let largest_answer = greedy.join().unwrap();
    let (still_open, all_closed_at, open_beside_producer) = trickler.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    let grown = peak.saturating_sub(rss_before);
    eprintln!(
        "flood: {connections} slow-loris connections opened in {:.1} s ({open_beside_producer} \
         open when the producer began); producer {baseline:.0} records/s before, {during:.0} \
         during; broker RSS {} MiB before, peak {} MiB (+{} MiB); \
         largest Fetch answer {} bytes; every trickling connection closed {:.1} s after the \
         flood began (connections.max.idle.ms={IDLE_MS})",
        opened_in.as_secs_f64(),
        rss_before >> 20,
        peak >> 20,
        grown >> 20,
        largest_answer,
        all_closed_at.map_or(f64::NAN, |at| (at - flood_started).as_secs_f64()),
    );
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    assert!(
        server.wait().unwrap().success(),
        "the broker stopped cleanly"
    );

    assert_eq!(
        still_open,
        0,
        "{still_open} trickling connections were still open {} ms after the flood began",
        IDLE_MS * 5
    );
    // Opening them, connections.max.idle.ms, and 5 s for the check's granularity (a
    // byte a second here) and a loaded machine.
    let closed_after = all_closed_at.unwrap() - flood_started;
    assert!(
        closed_after <= opened_in + Duration::from_millis(IDLE_MS) + Duration::from_secs(5),
        "the last trickling connection closed {closed_after:?} after the flood began"
    );
    // A Fetch answer is capped by fetch.max.bytes (55 MB; the data was 80 MB) plus the
    // response's framing.
    assert!(
        largest_answer <= 57_671_680 + (1 << 20),
        "a Fetch answer of {largest_answer} bytes"
    );
    assert!(
        largest_answer >= 50_000_000,
        "the greedy Fetch got only {largest_answer} bytes"
    );
    assert!(
        grown < RSS_GROWTH_BOUND,
        "the broker's RSS grew by {grown} bytes over the flood (bound {RSS_GROWTH_BOUND})"
    );
}
