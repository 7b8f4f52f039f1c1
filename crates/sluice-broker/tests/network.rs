//! The network layer against a live node on a free loopback port: ApiVersions at every
//! version, the unsupported-version fallback, pipelining order, and bad input (oversized,
//! negative, garbage, unknown API, unsupported versions, lying array counts) closing only
//! the offending connection while the node keeps serving others.

mod common;

use common::TestNode;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn api_versions_frame(version: i16, correlation_id: i32) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::ApiVersions as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str("sluice-test"));
    let mut body = BytesMut::new();
    header
        .encode(
            &mut body,
            ApiKey::ApiVersions.request_header_version(version),
        )
        .unwrap();
    let mut request = ApiVersionsRequest::default();
    if version >= 3 {
        request.client_software_name = StrBytes::from_static_str("sluice-test");
        request.client_software_version = StrBytes::from_static_str("1.0");
    }
    request.encode(&mut body, version).unwrap();
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    frame
}

async fn read_response(stream: &mut TcpStream) -> Option<Bytes> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).await.ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

/// Decodes an ApiVersions response (its header is always v0).
fn decode_api_versions(mut body: Bytes, version: i16) -> (i32, ApiVersionsResponse) {
    let header = ResponseHeader::decode(&mut body, 0).unwrap();
    (
        header.correlation_id,
        ApiVersionsResponse::decode(&mut body, version).unwrap(),
    )
}

#[tokio::test]
async fn api_versions_at_every_supported_version() {
    let node = TestNode::start(&[]).await;
    let address = node.address;
    let mut stream = TcpStream::connect(address).await.unwrap();
    for version in 0..=4 {
        stream
            .write_all(&api_versions_frame(version, 100 + i32::from(version)))
            .await
            .unwrap();
        let body = read_response(&mut stream).await.expect("a response");
        let (correlation_id, response) = decode_api_versions(body, version);
        assert_eq!(correlation_id, 100 + i32::from(version));
        assert_eq!(response.error_code, 0, "v{version}");
        let entry = response
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ApiVersions as i16)
            .expect("ApiVersions is advertised");
        assert_eq!((entry.min_version, entry.max_version), (0, 4));
    }
}

#[tokio::test]
async fn a_newer_api_versions_gets_a_v0_unsupported_version_answer() {
    let node = TestNode::start(&[]).await;
    let address = node.address;
    let mut stream = TcpStream::connect(address).await.unwrap();
    // Version 9 does not exist: the body is v4-shaped, the answer is v0.
    let mut frame = api_versions_frame(4, 7);
    frame[4..6].copy_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
    frame[6..8].copy_from_slice(&9i16.to_be_bytes());
    stream.write_all(&frame).await.unwrap();
    let (correlation_id, response) =
        decode_api_versions(read_response(&mut stream).await.unwrap(), 0);
    assert_eq!(correlation_id, 7);
    assert_eq!(response.error_code, 35);
    // As Kafka 4.1: only ApiVersions' own range, so the client can retry.
    let listed: Vec<(i16, i16, i16)> = response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    assert_eq!(listed, vec![(18, 0, 4)]);
    // The connection stays usable.
    stream.write_all(&api_versions_frame(3, 8)).await.unwrap();
    let (correlation_id, response) =
        decode_api_versions(read_response(&mut stream).await.unwrap(), 3);
    assert_eq!((correlation_id, response.error_code), (8, 0));
}

#[tokio::test]
async fn api_versions_v3_checks_the_client_software_name() {
    let node = TestNode::start(&[]).await;
    let address = node.address;
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut header = RequestHeader::default();
    header.request_api_key = ApiKey::ApiVersions as i16;
    header.request_api_version = 3;
    header.correlation_id = 11;
    let mut body = BytesMut::new();
    header.encode(&mut body, 2).unwrap();
    let mut request = ApiVersionsRequest::default();
    request.client_software_name = StrBytes::from_static_str("bad name!");
    request.client_software_version = StrBytes::from_static_str("1.0");
    request.encode(&mut body, 3).unwrap();
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream.write_all(&frame).await.unwrap();
    let (correlation_id, response) =
        decode_api_versions(read_response(&mut stream).await.unwrap(), 3);
    assert_eq!((correlation_id, response.error_code), (11, 42));
    assert!(response.api_keys.is_empty());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let node = TestNode::start(&[]).await;
    let address = node.address;
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut all = Vec::new();
    for i in 0..200 {
        all.extend_from_slice(&api_versions_frame((i % 5) as i16, i));
    }
    stream.write_all(&all).await.unwrap();
    for i in 0..200 {
        let (correlation_id, response) =
            decode_api_versions(read_response(&mut stream).await.unwrap(), (i % 5) as i16);
        assert_eq!(correlation_id, i);
        assert_eq!(response.error_code, 0);
    }
}

#[tokio::test]
async fn bad_input_closes_only_its_connection() {
    let node = TestNode::start(&[("socket.request.max.bytes", "1024")]).await;
    let address = node.address;
    let mut healthy = TcpStream::connect(address).await.unwrap();
    let mut unknown_api = api_versions_frame(0, 1);
    unknown_api[4..6].copy_from_slice(&999i16.to_be_bytes());
    let with_key = |key: ApiKey, version: i16| {
        let mut frame = api_versions_frame(0, 1);
        frame[4..6].copy_from_slice(&(key as i16).to_be_bytes());
        frame[6..8].copy_from_slice(&version.to_be_bytes());
        frame
    };
    let unserved_api = with_key(ApiKey::AddPartitionsToTxn, 0);
    // Kafka 4.1 advertises Produce from v0 but closes the connection for v0-2
    // (KAFKA-18659); Fetch v3 was removed in 4.0; Metadata v14 does not exist yet.
    let produce_v2 = with_key(ApiKey::Produce, 2);
    let fetch_v3 = with_key(ApiKey::Fetch, 3);
    let metadata_v14 = with_key(ApiKey::Metadata, 14);
    // A Metadata v1 request whose topic array claims 2^31-1 entries in a 16-byte body:
    // decoding must fail on the missing bytes, not reserve memory for the count.
    let body = [
        (ApiKey::Metadata as i16).to_be_bytes().to_vec(),
        1i16.to_be_bytes().to_vec(),
        7i32.to_be_bytes().to_vec(),
        (-1i16).to_be_bytes().to_vec(),
        i32::MAX.to_be_bytes().to_vec(),
    ]
    .concat();
    let mut lying_array = (body.len() as i32).to_be_bytes().to_vec();
    lying_array.extend_from_slice(&body);
    let mut oversized = i32::MAX.to_be_bytes().to_vec(); // a 2 GiB length prefix
    oversized.extend_from_slice(&[0; 16]);
    let mut just_over = 1025i32.to_be_bytes().to_vec();
    just_over.extend_from_slice(&[0; 1025]);
    let mut garbage = 12i32.to_be_bytes().to_vec();
    garbage.extend_from_slice(&[0x00, 0x12, 0x00, 0x03, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("2 GiB length prefix", oversized),
        ("just over socket.request.max.bytes", just_over),
        ("negative length", (-5i32).to_be_bytes().to_vec()),
        (
            "too short for a header",
            [4i32.to_be_bytes(), [0, 18, 0, 0]].concat(),
        ),
        ("garbage header", garbage),
        ("unknown API key", unknown_api),
        ("API not served", unserved_api),
        ("Produce v2", produce_v2),
        ("Fetch v3", fetch_v3),
        ("Metadata v14", metadata_v14),
        ("array count of 2^31-1", lying_array),
    ];
    for (name, bytes) in cases {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(&bytes).await.unwrap();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read_to_end(&mut rest),
        )
        .await;
        assert!(
            matches!(read, Ok(Ok(0))),
            "{name}: the server must close the connection, got {read:?}"
        );
        // Other connections are served.
        healthy.write_all(&api_versions_frame(2, 5)).await.unwrap();
        let (correlation_id, response) =
            decode_api_versions(read_response(&mut healthy).await.unwrap(), 2);
        assert_eq!(
            (correlation_id, response.error_code),
            (5, 0),
            "after {name}"
        );
    }
    // A frame cut short by the client: the server drops it without hanging others.
    let mut cut = TcpStream::connect(address).await.unwrap();
    cut.write_all(&api_versions_frame(0, 1)[..9]).await.unwrap();
    drop(cut);
    healthy.write_all(&api_versions_frame(1, 6)).await.unwrap();
    let (correlation_id, _) = decode_api_versions(read_response(&mut healthy).await.unwrap(), 1);
    assert_eq!(correlation_id, 6);
}

/// `connections.max.idle.ms`: a connection that sends nothing, and one that trickles the
/// bytes of a request it never completes (slow loris), are closed once idle that long;
/// one that keeps sending requests stays open. Before the key was honoured both stayed
/// open for as long as their clients liked.
#[tokio::test]
async fn idle_and_trickling_connections_are_closed_after_connections_max_idle_ms() {
    let node = TestNode::start(&[("connections.max.idle.ms", "400")]).await;
    let address = node.address;
    let mut silent = TcpStream::connect(address).await.unwrap();
    let mut trickling = TcpStream::connect(address).await.unwrap();
    trickling.write_all(&1000i32.to_be_bytes()).await.unwrap();
    let mut busy = TcpStream::connect(address).await.unwrap();
    let started = std::time::Instant::now();
    let mut trickle_closed = false;
    // Bounded: 3 s of 100 ms rounds, far past the 400 ms limit.
    for round in 0..30 {
        busy.write_all(&api_versions_frame(0, round)).await.unwrap();
        assert!(
            read_response(&mut busy).await.is_some(),
            "a connection with requests every 100 ms was closed"
        );
        if !trickle_closed && trickling.write_all(&[0u8]).await.is_err() {
            trickle_closed = true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(started.elapsed() >= std::time::Duration::from_secs(3));
    // A closed connection reads end-of-stream (or a reset) at once.
    let mut byte = [0u8; 1];
    let silent_read =
        tokio::time::timeout(std::time::Duration::from_secs(5), silent.read(&mut byte))
            .await
            .expect("the silent connection is still open after 3 s idle");
    assert!(matches!(silent_read, Ok(0) | Err(_)), "{silent_read:?}");
    let trickling_read =
        tokio::time::timeout(std::time::Duration::from_secs(5), trickling.read(&mut byte))
            .await
            .expect("the trickling connection is still open after 3 s without a request");
    assert!(
        matches!(trickling_read, Ok(0) | Err(_)),
        "{trickling_read:?}"
    );
    node.stop().await;
}

/// `max.connections.per.ip`: a client address at its limit has its next connection
/// closed at once, and gets a slot back when one of its connections closes;
/// `max.connections`: at the node's limit a new connection waits (in the backlog)
/// until one closes. Before the keys were honoured every connection was served.
#[tokio::test]
async fn connection_limits_per_address_and_per_node() {
    let per_ip = TestNode::start(&[("max.connections.per.ip", "2")]).await;
    let mut first = TcpStream::connect(per_ip.address).await.unwrap();
    let mut second = TcpStream::connect(per_ip.address).await.unwrap();
    for (round, stream) in [&mut first, &mut second].into_iter().enumerate() {
        stream
            .write_all(&api_versions_frame(0, round as i32))
            .await
            .unwrap();
        assert!(read_response(stream).await.is_some());
    }
    let mut third = TcpStream::connect(per_ip.address).await.unwrap();
    let _ = third.write_all(&api_versions_frame(0, 3)).await;
    let refused =
        tokio::time::timeout(std::time::Duration::from_secs(5), read_response(&mut third))
            .await
            .expect("the connection over the per-address limit is closed at once");
    assert!(
        refused.is_none(),
        "a third connection from one address was served"
    );
    drop(first);
    // The slot comes back once the broker has seen the close.
    let mut served = false;
    for attempt in 0..50 {
        let mut again = TcpStream::connect(per_ip.address).await.unwrap();
        let _ = again.write_all(&api_versions_frame(0, 10 + attempt)).await;
        if read_response(&mut again).await.is_some() {
            served = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(served, "no slot came back after a connection closed");
    per_ip.stop().await;

    let per_node = TestNode::start(&[("max.connections", "1")]).await;
    let mut only = TcpStream::connect(per_node.address).await.unwrap();
    only.write_all(&api_versions_frame(0, 1)).await.unwrap();
    assert!(read_response(&mut only).await.is_some());
    let mut waiting = TcpStream::connect(per_node.address).await.unwrap();
    waiting.write_all(&api_versions_frame(0, 2)).await.unwrap();
    assert!(
        tokio::time::timeout(
            std::time::Duration::from_millis(500),
            read_response(&mut waiting)
        )
        .await
        .is_err(),
        "a second connection was served at max.connections=1"
    );
    drop(only);
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        read_response(&mut waiting),
    )
    .await
    .expect("the waiting connection is served once the other closes");
    assert!(answered.is_some());
    per_node.stop().await;
}

/// queued.max.requests: at the limit, connections stop reading until a queued request
/// is taken up. With a limit of 1, a request queued behind a 3 s long-poll Fetch on its
/// own connection holds the one place, and another connection's request waits for it
/// (it was answered at once before the limit existed).
#[tokio::test]
async fn queued_max_requests_backpressures_every_connection_at_the_limit() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{FetchRequest, FetchResponse, MetadataRequest, TopicName};
    let node = TestNode::start(&[("queued.max.requests", "1")]).await;
    assert_eq!(
        common::create_assigned(node.address, "slow", &[1], &[]).await,
        0
    );
    let mut polling = common::Wire::connect(node.address).await;
    let fetch = FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(3000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("slow")))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let started = std::time::Instant::now();
    polling.send(&fetch, 12).await;
    // Queued behind the long poll on its connection: it holds the one place.
    polling
        .send(&MetadataRequest::default().with_topics(None), 12)
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut other = TcpStream::connect(node.address).await.unwrap();
    other.write_all(&api_versions_frame(0, 5)).await.unwrap();
    let answer = read_response(&mut other)
        .await
        .expect("answered in the end");
    let waited = started.elapsed();
    assert_eq!(decode_api_versions(answer, 0).1.error_code, 0);
    assert!(
        waited >= std::time::Duration::from_millis(2500),
        "answered {waited:?} after the long poll began, not after it ended"
    );
    let (_, fetched): (i32, FetchResponse) = polling.receive(ApiKey::Fetch, 12).await;
    assert_eq!(fetched.responses[0].partitions[0].error_code, 0);
    node.stop().await;
}

/// queued.max.request.bytes: request bytes are taken from the pool as they arrive and a
/// connection whose next bytes do not fit waits. One connection holding the whole 1 MiB
/// pool in the bytes of an unfinished request holds back another's request until it
/// goes (that request was answered at once before the pool existed).
#[tokio::test]
async fn queued_max_request_bytes_holds_back_reads_until_bytes_are_freed() {
    let node = TestNode::start(&[
        ("socket.request.max.bytes", "1048576"),
        ("queued.max.request.bytes", "1048576"),
    ])
    .await;
    let mut hog = TcpStream::connect(node.address).await.unwrap();
    hog.write_all(&1_048_000i32.to_be_bytes()).await.unwrap();
    hog.write_all(&vec![0u8; 1_040_000]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut other = TcpStream::connect(node.address).await.unwrap();
    other.write_all(&api_versions_frame(0, 6)).await.unwrap();
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(1), read_response(&mut other))
            .await
            .is_err(),
        "a request was read while the pool was full"
    );
    drop(hog);
    let answer = tokio::time::timeout(std::time::Duration::from_secs(5), read_response(&mut other))
        .await
        .expect("answered once the other connection's bytes were freed")
        .expect("a response");
    assert_eq!(decode_api_versions(answer, 0).1.error_code, 0);
    node.stop().await;
}
