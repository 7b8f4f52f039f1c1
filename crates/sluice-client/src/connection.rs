//! One TCP connection to one broker, speaking Kafka's framing.
//!
//! A frame is a 4-byte big-endian size and then the request header (v1, or v2 for the
//! flexible versions of an API, as `ApiKey::request_header_version` says) and body.
//! The frames travel over `sluice-protocol`'s [`FrameConnection`], the connection the
//! broker's own broker-to-broker calls use too: requests are pipelined, each with the
//! next correlation id, written whole by one writer task (a caller that gives up
//! mid-request never leaves half a frame on the socket) and matched to their responses
//! by one reader task. At most `max.in.flight.requests.per.connection` requests wait for
//! answers. This module adds Kafka's headers, the ApiVersions handshake and version
//! negotiation.
//!
//! On connect the client asks ApiVersions (v4; a broker that does not know v4 answers
//! UNSUPPORTED_VERSION in a v0 response listing its own range, and the client asks again
//! at the highest version both share, as KIP-511 says). Every later request goes out at
//! the highest version both the broker and this client implement ([`IMPLEMENTED_VERSIONS`]).
//!
//! Failure rules (the frame layer's): a response that does not decode, an unknown
//! correlation id or an oversized frame closes the connection (its stream can no longer
//! be trusted); so does a request timeout (`request.timeout.ms`, [`Error::Timeout`]), as
//! in Kafka's `NetworkClient`. The response whose body does not decode fails with
//! [`Error::Protocol`]; the other requests in flight on a closed connection fail with
//! [`Error::Disconnected`]. The connection is not reopened here (the
//! [`Client`](crate::Client) opens a new one).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use sluice_protocol::connection::{
    ConnectionError, ConnectionSettings, FrameConnection, TrafficObserver,
};
use sluice_protocol::frame;

use crate::config::ClientConfig;
use crate::error::{Error, ErrorCode};
use crate::metrics::network::NetworkSensors;

/// The versions of each API whose fields this client fills and reads: (API, lowest,
/// highest). A request goes out at the highest version the broker also supports.
pub const IMPLEMENTED_VERSIONS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::ApiVersions, 0, 4),
    // v4 is the first with `allow_auto_topic_creation`, which admin calls turn off.
    (ApiKey::Metadata, 4, 13),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::DescribeQuorum, 0, 2),
    // Every version of these two carries the same fields.
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::CreatePartitions, 0, 3),
    // v1 is Kafka 4's floor; v4 adds each directory's total and usable bytes.
    (ApiKey::DescribeLogDirs, 1, 4),
    // The producer and consumer (issue 8). Produce v3 is the first with v2 record
    // batches (Kafka 4's floor); v12 is KIP-890's transactions v2 verification, left to
    // the broker side. Fetch v4 brings isolation levels, v7 sessions, v12 diverging
    // epochs; v13+ names topics by id.
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 2, 9),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::InitProducerId, 0, 5),
    // v4+ is the brokers' batched form (KIP-890).
    (ApiKey::AddPartitionsToTxn, 0, 3),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    // v5 is transactions v2 (an epoch bump per transaction).
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 4),
];

/// The range of `api_key` this client implements, if it implements it.
pub fn implemented_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    IMPLEMENTED_VERSIONS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

/// The highest version in both ranges, if they overlap.
pub fn negotiate(client: (i16, i16), broker: (i16, i16)) -> Option<i16> {
    let highest = client.1.min(broker.1);
    (highest >= client.0.max(broker.0)).then_some(highest)
}

/// The name and version this client reports in ApiVersions v3+ (KIP-511).
const CLIENT_SOFTWARE_NAME: &str = "sluice-client";
const CLIENT_SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// An open connection to one broker, after the ApiVersions handshake.
pub struct Connection {
    client_id: StrBytes,
    request_timeout_ms: u64,
    /// The broker's version range per API key, from its ApiVersions response.
    broker_versions: HashMap<i16, (i16, i16)>,
    frames: FrameConnection,
}

/// The client's byte-rate sensors count what the frame layer writes and reads.
impl TrafficObserver for NetworkSensors {
    fn frame_sent(&self, bytes: usize) {
        self.request_sent(bytes);
    }

    fn frame_received(&self, bytes: usize) {
        self.response_received(bytes);
    }
}

impl Connection {
    /// Opens a TCP connection to `address` (`host:port`) and negotiates API versions.
    pub async fn connect(address: &str, config: &ClientConfig) -> Result<Connection, Error> {
        Connection::connect_observed(address, config, None).await
    }

    /// [`Connection::connect`], recording the bytes of every request and response in
    /// `network` (the client's `outgoing-byte-rate`, ...).
    pub(crate) async fn connect_observed(
        address: &str,
        config: &ClientConfig,
        network: Option<Arc<NetworkSensors>>,
    ) -> Result<Connection, Error> {
        let settings = ConnectionSettings {
            response_max_bytes: config.response_max_bytes,
            max_in_flight_requests: config.max_in_flight_requests_per_connection.max(1),
        };
        let observer = network.map(|network| network as Arc<dyn TrafficObserver>);
        let frames = FrameConnection::connect(
            address,
            config.connection_setup_timeout(),
            settings,
            observer,
        )
        .await
        .map_err(|error| match error {
            ConnectionError::ConnectTimeout { address, .. } => Error::Connect {
                address,
                reason: format!(
                    "no connection within socket.connection.setup.timeout.ms={}",
                    config.socket_connection_setup_timeout_ms
                ),
            },
            ConnectionError::Connect { address, reason } => Error::Connect { address, reason },
            other => Error::Connect {
                address: address.to_string(),
                reason: other.to_string(),
            },
        })?;
        let mut connection = Connection {
            client_id: StrBytes::from_string(config.client_id.clone()),
            request_timeout_ms: config.request_timeout_ms,
            broker_versions: HashMap::new(),
            frames,
        };
        connection.broker_versions = connection.handshake().await?;
        tracing::debug!(address, "connected");
        Ok(connection)
    }

    /// The `host:port` this connection was opened to.
    pub fn address(&self) -> &str {
        self.frames.address()
    }

    /// Whether the connection has closed; a closed connection fails every request.
    pub fn is_closed(&self) -> bool {
        self.frames.is_closed()
    }

    /// The broker's version range for `api_key`, if it serves that API.
    pub fn broker_versions(&self, api_key: ApiKey) -> Option<(i16, i16)> {
        self.broker_versions.get(&(api_key as i16)).copied()
    }

    /// The highest version of `api_key` that both this client and the broker support.
    pub fn version(&self, api_key: ApiKey) -> Result<i16, Error> {
        let client = implemented_versions(api_key).unwrap_or((0, -1));
        let broker = self.broker_versions(api_key);
        broker
            .and_then(|broker| negotiate(client, broker))
            .ok_or_else(|| Error::UnsupportedVersion {
                api: api_key,
                address: self.address().to_string(),
                client_min: client.0,
                client_max: client.1,
                broker: broker.map_or("none".to_string(), |(min, max)| format!("v{min}-{max}")),
            })
    }

    /// Sends `request` at `version` and waits for its response.
    pub async fn send<R: Request>(&self, version: i16, request: &R) -> Result<R::Response, Error> {
        let api_key = api_key::<R>();
        let mut body = self.round_trip(api_key, version, request).await?;
        R::Response::decode(&mut body, version).map_err(|error| {
            self.protocol_error(format!(
                "{api_key:?} v{version} response does not decode: {error}"
            ))
        })
    }

    /// Sends `request` at `version` when the broker sends no response to it (Produce with
    /// `acks=0`): the frame is queued behind the requests already written and nothing is
    /// awaited. It still takes a correlation id, as Kafka's clients do.
    pub async fn send_without_response<R: Request>(
        &self,
        version: i16,
        request: &R,
    ) -> Result<(), Error> {
        let api_key = api_key::<R>();
        let correlation_id = self.frames.next_correlation_id();
        let frame = encode_request(api_key, version, correlation_id, &self.client_id, request)?;
        self.frames
            .send_without_response(frame)
            .map_err(|error| self.connection_error(api_key, error))
    }

    /// Sends one request and returns its response body (after the response header).
    async fn round_trip(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &impl Encodable,
    ) -> Result<Bytes, Error> {
        let correlation_id = self.frames.next_correlation_id();
        let frame = encode_request(api_key, version, correlation_id, &self.client_id, body)?;
        let timeout = std::time::Duration::from_millis(self.request_timeout_ms);
        let mut response = self
            .frames
            .request(correlation_id, frame, timeout)
            .await
            .map_err(|error| self.connection_error(api_key, error))?;
        let header_version = api_key.response_header_version(version);
        if let Err(error) = ResponseHeader::decode(&mut response, header_version) {
            // The stream can no longer be trusted; the request fails as its connection.
            let reason = format!("{api_key:?} v{version} response header does not decode: {error}");
            self.frames.close(reason.clone());
            return Err(Error::Disconnected {
                address: self.address().to_string(),
                reason,
            });
        }
        Ok(response)
    }

    /// A response that does not decode: the connection closes (its stream can no longer
    /// be trusted) and the request fails with a protocol error.
    fn protocol_error(&self, reason: String) -> Error {
        self.frames.close(reason.clone());
        Error::Protocol {
            address: self.address().to_string(),
            reason,
        }
    }

    /// The client's error for a request of `api_key` the connection did not answer.
    fn connection_error(&self, api_key: ApiKey, error: ConnectionError) -> Error {
        match error {
            ConnectionError::Timeout { .. } => Error::Timeout {
                api: api_key,
                address: self.address().to_string(),
                timeout_ms: self.request_timeout_ms,
            },
            ConnectionError::Connect { address, reason }
            | ConnectionError::Disconnected { address, reason } => {
                Error::Disconnected { address, reason }
            }
            other => Error::Disconnected {
                address: self.address().to_string(),
                reason: other.to_string(),
            },
        }
    }

    /// ApiVersions, highest version first; returns the broker's ranges.
    async fn handshake(&self) -> Result<HashMap<i16, (i16, i16)>, Error> {
        let (client_min, client_max) =
            implemented_versions(ApiKey::ApiVersions).expect("ApiVersions is implemented");
        let mut version = client_max;
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
            .with_client_software_version(StrBytes::from_static_str(CLIENT_SOFTWARE_VERSION));
        loop {
            let body = self
                .round_trip(ApiKey::ApiVersions, version, &request)
                .await?;
            let response =
                decode_api_versions(body, version).map_err(|reason| self.protocol_error(reason))?;
            let code = ErrorCode(response.error_code);
            if code == ErrorCode::UNSUPPORTED_VERSION {
                // KIP-511: the response lists the broker's ApiVersions range; a broker
                // that lists none is asked at v0.
                let broker = response
                    .api_keys
                    .iter()
                    .find(|entry| entry.api_key == ApiKey::ApiVersions as i16)
                    .map_or((0, 0), |entry| (entry.min_version, entry.max_version));
                match negotiate((client_min, version - 1), broker) {
                    Some(lower) => {
                        version = lower;
                        continue;
                    }
                    None => {
                        return Err(Error::UnsupportedVersion {
                            api: ApiKey::ApiVersions,
                            address: self.address().to_string(),
                            client_min,
                            client_max,
                            broker: format!("v{}-{}", broker.0, broker.1),
                        });
                    }
                }
            }
            code.check(None)?;
            return Ok(response
                .api_keys
                .iter()
                .map(|entry| (entry.api_key, (entry.min_version, entry.max_version)))
                .collect());
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("address", &self.address())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// The API key of a request type from kafka-protocol.
pub(crate) fn api_key<R: Request>() -> ApiKey {
    ApiKey::try_from(R::KEY).expect("kafka-protocol's request types have known API keys")
}

/// Frames one request: size, header (v1 or v2 by the API's flexible versions), body.
pub fn encode_request(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
    body: &impl Encodable,
) -> Result<Bytes, Error> {
    let encode_error = |reason: String| Error::Encode {
        api: api_key,
        version,
        reason,
    };
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(client_id.clone()));
    let mut frame = frame::size_prefix(0);
    header
        .encode(&mut frame, api_key.request_header_version(version))
        .map_err(|error| encode_error(error.to_string()))?;
    body.encode(&mut frame, version)
        .map_err(|error| encode_error(error.to_string()))?;
    frame::finish_frame(frame).map_err(|error| encode_error(error.to_string()))
}

/// An ApiVersions response at `version`, or at v0: a broker that does not support the
/// version asked answers UNSUPPORTED_VERSION in the v0 format (KIP-511).
fn decode_api_versions(body: Bytes, version: i16) -> Result<ApiVersionsResponse, String> {
    ApiVersionsResponse::decode(&mut body.clone(), version)
        .ok()
        .filter(|response| response.error_code != ErrorCode::UNSUPPORTED_VERSION.0)
        .map_or_else(|| ApiVersionsResponse::decode(&mut body.clone(), 0), Ok)
        .map_err(|error| format!("ApiVersions v{version} response does not decode: {error}"))
}

#[cfg(test)]
mod tests {
    //! The client's side of the wire against a scripted peer: each test plays the broker
    //! by hand, byte for byte, to reach cases real brokers rarely produce (an old
    //! ApiVersions, responses out of order, silence, garbage).

    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn config() -> ClientConfig {
        ClientConfig {
            request_timeout_ms: 2_000,
            ..ClientConfig::default()
        }
    }

    /// Reads one request frame; returns its header and body.
    async fn read_request(stream: &mut TcpStream) -> (RequestHeader, Bytes) {
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).await.unwrap();
        let mut frame = BytesMut::zeroed(i32::from_be_bytes(size) as usize);
        stream.read_exact(&mut frame).await.unwrap();
        let mut frame = frame.freeze();
        let api_key = ApiKey::try_from(i16::from_be_bytes([frame[0], frame[1]])).unwrap();
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let header =
            RequestHeader::decode(&mut frame, api_key.request_header_version(version)).unwrap();
        (header, frame)
    }

    /// Writes one response frame: correlation id, header (v0 or v1), body.
    async fn write_response(
        stream: &mut TcpStream,
        request: &RequestHeader,
        version: i16,
        body: &impl Encodable,
    ) {
        let api_key = ApiKey::try_from(request.request_api_key).unwrap();
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(request.correlation_id)
            .encode(&mut out, api_key.response_header_version(version))
            .unwrap();
        body.encode(&mut out, version).unwrap();
        write_frame(stream, &out).await;
    }

    async fn write_frame(stream: &mut TcpStream, body: &[u8]) {
        stream
            .write_all(&(body.len() as i32).to_be_bytes())
            .await
            .unwrap();
        stream.write_all(body).await.unwrap();
    }

    fn api_versions(error_code: i16, apis: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default()
            .with_error_code(error_code)
            .with_api_keys(
                apis.iter()
                    .map(|(key, min, max)| {
                        ApiVersion::default()
                            .with_api_key(*key as i16)
                            .with_min_version(*min)
                            .with_max_version(*max)
                    })
                    .collect(),
            )
    }

    /// A listener, and a client connection to it whose handshake the peer answers with
    /// `apis` at the version asked.
    async fn connected(apis: &'static [(ApiKey, i16, i16)]) -> (Connection, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let peer = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let (header, _) = read_request(&mut stream).await;
            let version = header.request_api_version;
            write_response(&mut stream, &header, version, &api_versions(0, apis)).await;
            stream
        });
        let connection = Connection::connect(&address, &config()).await.unwrap();
        (connection, peer.await.unwrap())
    }

    #[test]
    fn the_highest_shared_version_wins() {
        let cases = [
            ((4, 13), (0, 13), Some(13)),
            ((4, 13), (0, 9), Some(9)),
            ((4, 13), (10, 20), Some(13)),
            ((4, 13), (0, 3), None),
            ((4, 13), (14, 20), None),
            ((2, 7), (7, 7), Some(7)),
        ];
        for (client, broker, expected) in cases {
            assert_eq!(negotiate(client, broker), expected, "{client:?} {broker:?}");
        }
    }

    #[test]
    fn request_headers_follow_the_apis_flexible_versions() {
        let client_id = StrBytes::from_static_str("cli");
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false);
        // Metadata v8 is not flexible: header v1 (key, version, correlation id, client id).
        let frame = encode_request(ApiKey::Metadata, 8, 7, &client_id, &request).unwrap();
        let header_v1 = [0, 3, 0, 8, 0, 0, 0, 7, 0, 3, b'c', b'l', b'i'];
        assert_eq!(&frame[4..4 + header_v1.len()], header_v1);
        assert_eq!(
            i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize,
            frame.len() - 4
        );
        // v9 is flexible: header v2 adds an empty tagged-field section after the client id.
        let frame = encode_request(ApiKey::Metadata, 9, 7, &client_id, &request).unwrap();
        assert_eq!(
            &frame[4..4 + header_v1.len()],
            [&header_v1[..2], &[0, 9], &header_v1[4..]].concat()
        );
        assert_eq!(frame[4 + header_v1.len()], 0, "no tagged fields");
        // A field the version lacks is an encode error, not a malformed request.
        let auto_create = MetadataRequest::default().with_allow_auto_topic_creation(false);
        assert!(matches!(
            encode_request(ApiKey::Metadata, 3, 1, &client_id, &auto_create),
            Err(Error::Encode { .. })
        ));
    }

    #[tokio::test]
    async fn an_older_broker_is_asked_again_at_its_apiversions_version() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let peer = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let (first, _) = read_request(&mut stream).await;
            assert_eq!(first.request_api_version, 4);
            // KIP-511: UNSUPPORTED_VERSION, in v0's format, listing ApiVersions' range.
            let refusal = api_versions(35, &[(ApiKey::ApiVersions, 0, 2)]);
            write_response(&mut stream, &first, 0, &refusal).await;
            let (second, _) = read_request(&mut stream).await;
            assert_eq!(second.request_api_version, 2);
            assert_ne!(second.correlation_id, first.correlation_id);
            let apis = [(ApiKey::ApiVersions, 0, 2), (ApiKey::Metadata, 0, 12)];
            write_response(&mut stream, &second, 2, &api_versions(0, &apis)).await;
            stream
        });
        let connection = Connection::connect(&address, &config()).await.unwrap();
        let _stream = peer.await.unwrap();
        assert_eq!(connection.version(ApiKey::Metadata).unwrap(), 12);
        let error = connection.version(ApiKey::CreateTopics).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the broker at {address} does not support CreateTopics at any version this \
                 client implements (client: v2-7, broker: none)"
            )
        );
    }

    #[tokio::test]
    async fn pipelined_responses_are_matched_by_correlation_id() {
        static APIS: &[(ApiKey, i16, i16)] =
            &[(ApiKey::ApiVersions, 0, 4), (ApiKey::Metadata, 0, 13)];
        let (connection, mut stream) = connected(APIS).await;
        let peer = tokio::spawn(async move {
            let (first, _) = read_request(&mut stream).await;
            let (second, _) = read_request(&mut stream).await;
            // Answer the second first; tell them apart by the throttle time.
            for (request, throttle_time_ms) in [(&second, 2), (&first, 1)] {
                let response = MetadataResponse::default().with_throttle_time_ms(throttle_time_ms);
                write_response(&mut stream, request, 13, &response).await;
            }
            stream
        });
        let request = MetadataRequest::default().with_allow_auto_topic_creation(false);
        let (first, second) = tokio::join!(connection.send(13, &request), async {
            // Let the first request go out first.
            tokio::task::yield_now().await;
            connection.send(13, &request).await
        });
        assert_eq!(first.unwrap().throttle_time_ms, 1);
        assert_eq!(second.unwrap().throttle_time_ms, 2);
        drop(peer);
    }

    #[tokio::test]
    async fn a_silent_broker_times_out_and_the_connection_closes() {
        static APIS: &[(ApiKey, i16, i16)] =
            &[(ApiKey::ApiVersions, 0, 4), (ApiKey::Metadata, 0, 13)];
        let (connection, _stream) = connected(APIS).await;
        let request = MetadataRequest::default().with_allow_auto_topic_creation(false);
        let error = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            connection.send(13, &request),
        )
        .await
        .expect("request.timeout.ms bounds the wait")
        .unwrap_err();
        assert!(
            matches!(
                error,
                Error::Timeout {
                    timeout_ms: 2_000,
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_closed());
        let again = connection.send(13, &request).await.unwrap_err();
        assert!(matches!(again, Error::Disconnected { .. }), "{again}");
    }

    #[tokio::test]
    async fn garbage_from_the_broker_is_an_error_not_a_panic() {
        static APIS: &[(ApiKey, i16, i16)] =
            &[(ApiKey::ApiVersions, 0, 4), (ApiKey::Metadata, 0, 13)];
        let request = MetadataRequest::default().with_allow_auto_topic_creation(false);
        // (what the peer sends after reading the request, the expected error)
        /// Makes the response frame from the request's correlation id.
        type Garbage = fn(i32) -> Vec<u8>;
        let garbage: [(Garbage, &str); 4] = [
            // A body cut short: decoding fails.
            (
                |id| [&id.to_be_bytes()[..], &[0, 0, 0]].concat(),
                "does not decode",
            ),
            // A correlation id nobody asked for.
            (|id| (id + 100).to_be_bytes().to_vec(), "matches no request"),
            // Too short for a correlation id.
            (|_| vec![1, 2], "has no header"),
            // A response array claiming 2^31 brokers in a few bytes.
            (
                |id| {
                    [
                        &id.to_be_bytes()[..],
                        &[0],
                        &[0, 0, 0, 0],
                        &[0x8f, 0xff, 0xff, 0xff, 0x7f],
                    ]
                    .concat()
                },
                "does not decode",
            ),
        ];
        for (response, expected) in garbage {
            let (connection, mut stream) = connected(APIS).await;
            let peer = tokio::spawn(async move {
                let (header, _) = read_request(&mut stream).await;
                write_frame(&mut stream, &response(header.correlation_id)).await;
                stream
            });
            let error = connection.send(13, &request).await.unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
            drop(peer);
        }
        // A size prefix past the limit closes the connection before allocating.
        let (connection, mut stream) = connected(APIS).await;
        let peer = tokio::spawn(async move {
            let _ = read_request(&mut stream).await;
            stream.write_all(&i32::MAX.to_be_bytes()).await.unwrap();
            stream
        });
        let error = connection.send(13, &request).await.unwrap_err();
        assert!(error.to_string().contains("exceeds the limit"), "{error}");
        drop(peer);
    }
}
