//! One TCP connection carrying Kafka frames: requests out, each response matched to its
//! request by correlation id. The one client-side connection of Sluice: the client's
//! `Connection` (ApiVersions, version negotiation), the broker's connections to other
//! brokers (follower fetch, WriteTxnMarkers, AddPartitionsToTxn) and the Raft quorum's
//! RPCs all send through a [`FrameConnection`], so framing, matching and failure rules
//! are written once. What a frame holds past its correlation id (Kafka's headers and
//! bodies, the quorum's JSON) is the caller's.
//!
//! - Requests are pipelined: the caller takes a correlation id
//!   ([`FrameConnection::next_correlation_id`]), encodes its frame with it and hands it to
//!   [`FrameConnection::request`]; one writer task writes frames whole in the order
//!   they are handed over (a caller that gives up mid-request never leaves half a frame
//!   on the socket), one reader task reads responses ([`crate::frame::read_frame`], under
//!   `response_max_bytes`) and hands each to the request whose correlation id its first
//!   four bytes carry (every Kafka response header starts with it). At most
//!   `max_in_flight_requests` requests wait for answers.
//! - Failure rules, as Kafka's `NetworkClient`: a read or write error, a frame over the
//!   limit, a response shorter than a correlation id or with one no request waits for,
//!   and a request not answered within its timeout each close the connection: the socket
//!   is shut and every request in flight fails with [`ConnectionError::Disconnected`]
//!   (the timed-out one with [`ConnectionError::Timeout`]). A caller that finds a
//!   response it cannot decode closes it too ([`FrameConnection::close`]): the stream
//!   can no longer be trusted. A closed connection is not reopened here; callers open a
//!   new one (their reconnect and backoff rules are theirs).
//!
//! What a request costs beyond its bytes: one channel send to the writer, one oneshot
//! from the reader, a map insert and remove under a mutex; the response is the frame
//! itself (no copy), so what is decoded from it can be slices of it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::frame::{SIZE_PREFIX_BYTES, read_frame};

/// The bounds of one connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionSettings {
    /// A response frame larger than this closes the connection.
    pub response_max_bytes: usize,
    /// Requests waiting for their responses at once; more wait for a slot.
    pub max_in_flight_requests: usize,
}

/// Told of every frame a connection writes and reads (the client's byte-rate metrics).
pub trait TrafficObserver: Send + Sync {
    /// A request frame of `bytes` (size prefix included) was written.
    fn frame_sent(&self, bytes: usize);
    /// A response frame of `bytes` (size prefix included) was read.
    fn frame_received(&self, bytes: usize);
}

/// Why a connection could not be opened or a request got no response.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectionError {
    /// The TCP connection could not be made.
    #[error("cannot connect to {address}: {reason}")]
    Connect { address: String, reason: String },
    /// The TCP connection was not made in time.
    #[error("cannot connect to {address}: no connection within {timeout_ms} ms")]
    ConnectTimeout { address: String, timeout_ms: u64 },
    /// No response within the request's timeout; the connection is closed, because its
    /// state is unknown.
    #[error("request {correlation_id} to {address} timed out after {timeout_ms} ms")]
    Timeout {
        address: String,
        correlation_id: i32,
        timeout_ms: u64,
    },
    /// The connection failed or was closed; requests in flight on it fail with this.
    #[error("connection to {address} closed: {reason}")]
    Disconnected { address: String, reason: String },
    /// A request reused a correlation id still waiting for its response (a caller that
    /// did not take it from [`FrameConnection::next_correlation_id`]).
    #[error("correlation id {correlation_id} is already in flight to {address}")]
    CorrelationIdInUse {
        address: String,
        correlation_id: i32,
    },
}

/// An open connection: a writer task, a reader task, and the requests in flight.
pub struct FrameConnection {
    address: String,
    next_correlation_id: AtomicI32,
    in_flight_slots: Semaphore,
    /// Unbounded in type only: a frame is queued while its sender holds one of the
    /// in-flight slots (or, sent without a response, right behind them).
    frames: mpsc::UnboundedSender<Bytes>,
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

/// What the callers' side and the tasks share.
struct Shared {
    address: String,
    state: Mutex<State>,
    /// Becomes true when the connection closes: both tasks stop and the socket shuts.
    closed_signal: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// Requests waiting for their responses, by correlation id.
    in_flight: HashMap<i32, oneshot::Sender<Result<Bytes, ConnectionError>>>,
    /// Why the connection closed, once it has.
    closed: Option<String>,
}

impl FrameConnection {
    /// Opens a TCP connection to `address` (`host:port`, an IPv6 host in brackets)
    /// within `timeout` and starts it.
    pub async fn connect(
        address: &str,
        timeout: Duration,
        settings: ConnectionSettings,
        observer: Option<Arc<dyn TrafficObserver>>,
    ) -> Result<FrameConnection, ConnectionError> {
        let connect_error = |reason: String| ConnectionError::Connect {
            address: address.to_string(),
            reason,
        };
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| ConnectionError::ConnectTimeout {
                address: address.to_string(),
                timeout_ms: timeout.as_millis().try_into().unwrap_or(u64::MAX),
            })?
            .map_err(|error| connect_error(error.to_string()))?;
        // Requests are small and latency-bound; do not wait for Nagle.
        stream
            .set_nodelay(true)
            .map_err(|error| connect_error(error.to_string()))?;
        Ok(FrameConnection::start(address, stream, settings, observer))
    }

    /// Starts the reader and writer tasks on an open stream (inside a tokio runtime).
    pub fn start(
        address: &str,
        stream: TcpStream,
        settings: ConnectionSettings,
        observer: Option<Arc<dyn TrafficObserver>>,
    ) -> FrameConnection {
        let (read_half, write_half) = stream.into_split();
        let (closed_signal, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            address: address.to_string(),
            state: Mutex::new(State::default()),
            closed_signal,
        });
        let (frames, outgoing) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_responses(
            read_half,
            shared.clone(),
            settings.response_max_bytes,
            observer.clone(),
        ));
        let writer = tokio::spawn(write_requests(
            write_half,
            outgoing,
            shared.clone(),
            observer,
        ));
        FrameConnection {
            address: address.to_string(),
            next_correlation_id: AtomicI32::new(0),
            in_flight_slots: Semaphore::new(settings.max_in_flight_requests.max(1)),
            frames,
            shared,
            reader,
            writer,
        }
    }

    /// The `host:port` this connection was opened to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the connection has closed; a closed connection fails every request.
    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed.is_some()
    }

    /// The correlation id for the next request's frame (wrapping, as Kafka's).
    pub fn next_correlation_id(&self) -> i32 {
        self.next_correlation_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Closes the connection (a caller found a response it cannot decode): the socket
    /// shuts and every request in flight fails with `reason`.
    pub fn close(&self, reason: String) {
        self.shared.close(reason);
    }

    /// Sends `frame` (size prefix included, encoded with `correlation_id`) and waits up
    /// to `timeout` for the response frame: the bytes after its size prefix, the
    /// correlation id first. The timeout runs from when the request has an in-flight
    /// slot; when it passes, the connection closes.
    pub async fn request(
        &self,
        correlation_id: i32,
        frame: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, ConnectionError> {
        let _slot = self
            .in_flight_slots
            .acquire()
            .await
            .expect("the in-flight semaphore is never closed");
        let (respond, response) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if let Some(reason) = &state.closed {
                return Err(self.shared.disconnected(reason));
            }
            match state.in_flight.entry(correlation_id) {
                Entry::Occupied(_) => {
                    return Err(ConnectionError::CorrelationIdInUse {
                        address: self.address.clone(),
                        correlation_id,
                    });
                }
                Entry::Vacant(slot) => {
                    slot.insert(respond);
                }
            }
        }
        if self.frames.send(frame).is_err() {
            self.shared.close("the writer stopped".to_string());
        }
        match tokio::time::timeout(timeout, response).await {
            Ok(Ok(result)) => result,
            // The request was dropped without an answer: the connection is closing.
            Ok(Err(_)) => Err(self.shared.disconnected("the reader stopped")),
            Err(_) => {
                let timeout_ms = timeout.as_millis().try_into().unwrap_or(u64::MAX);
                self.shared.close(format!(
                    "request {correlation_id} timed out after {timeout_ms} ms"
                ));
                Err(ConnectionError::Timeout {
                    address: self.address.clone(),
                    correlation_id,
                    timeout_ms,
                })
            }
        }
    }

    /// Sends `frame` when the peer sends no response to it (Kafka's Produce with
    /// `acks=0`): it is queued behind the frames already handed over and nothing is
    /// awaited.
    pub fn send_without_response(&self, frame: Bytes) -> Result<(), ConnectionError> {
        if let Some(reason) = &self.shared.lock().closed {
            return Err(self.shared.disconnected(reason));
        }
        if self.frames.send(frame).is_err() {
            self.shared.close("the writer stopped".to_string());
            return Err(self.shared.disconnected("the writer stopped"));
        }
        Ok(())
    }
}

impl Drop for FrameConnection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl std::fmt::Debug for FrameConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameConnection")
            .field("address", &self.address)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Each operation under this lock is one insert, remove or drain, so a panic
        // elsewhere cannot leave it half-updated: a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn disconnected(&self, reason: &str) -> ConnectionError {
        ConnectionError::Disconnected {
            address: self.address.clone(),
            reason: reason.to_string(),
        }
    }

    /// Marks the connection closed, stops both tasks and fails every request in flight.
    fn close(&self, reason: String) {
        let waiting: Vec<_> = {
            let mut state = self.lock();
            if state.closed.is_none() {
                tracing::debug!(address = %self.address, %reason, "connection closed");
                state.closed = Some(reason.clone());
            }
            state
                .in_flight
                .drain()
                .map(|(_, respond)| respond)
                .collect()
        };
        self.closed_signal.send_replace(true);
        for respond in waiting {
            let _ = respond.send(Err(self.disconnected(&reason)));
        }
    }

    /// Hands one response frame to the request it answers.
    fn deliver(&self, frame: Bytes) -> Result<(), String> {
        let Some(prefix) = frame.first_chunk::<4>() else {
            return Err(format!("response of {} bytes has no header", frame.len()));
        };
        let correlation_id = i32::from_be_bytes(*prefix);
        let respond = self
            .lock()
            .in_flight
            .remove(&correlation_id)
            .ok_or_else(|| {
                format!("response with correlation id {correlation_id} matches no request")
            })?;
        // The caller may have given up (cancelled): nothing to do.
        let _ = respond.send(Ok(frame));
        Ok(())
    }
}

async fn read_responses(
    mut reader: OwnedReadHalf,
    shared: Arc<Shared>,
    max_bytes: usize,
    observer: Option<Arc<dyn TrafficObserver>>,
) {
    let mut closed = shared.closed_signal.subscribe();
    let reason = loop {
        let read = tokio::select! {
            read = read_frame(&mut reader, max_bytes) => read,
            // Closed from the callers' side: the reason is already recorded.
            _ = closed.wait_for(|closed| *closed) => return,
        };
        let frame = match read {
            Ok(Some(frame)) => frame,
            Ok(None) => break "the peer closed the connection".to_string(),
            Err(error) => break error.to_string(),
        };
        if let Some(observer) = &observer {
            observer.frame_received(frame.len() + SIZE_PREFIX_BYTES);
        }
        if let Err(reason) = shared.deliver(frame) {
            break reason;
        }
    };
    shared.close(reason);
}

async fn write_requests(
    mut writer: OwnedWriteHalf,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
    observer: Option<Arc<dyn TrafficObserver>>,
) {
    let mut closed = shared.closed_signal.subscribe();
    loop {
        let frame = tokio::select! {
            frame = frames.recv() => frame,
            _ = closed.wait_for(|closed| *closed) => None,
        };
        let Some(frame) = frame else {
            break;
        };
        let written = tokio::select! {
            written = writer.write_all(&frame) => written,
            // Half a frame may be on the socket: it shuts below, nothing follows.
            _ = closed.wait_for(|closed| *closed) => break,
        };
        if let Err(error) = written {
            shared.close(format!("write failed: {error}"));
            break;
        }
        if let Some(observer) = &observer {
            observer.frame_sent(frame.len());
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    //! The connection against a peer scripted byte for byte, to reach what real peers
    //! rarely send: answers out of order, silence, correlation ids nobody asked for,
    //! frames over the limit.

    use super::*;
    use bytes::BufMut;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use crate::frame::{finish_frame, size_prefix};

    const SETTINGS: ConnectionSettings = ConnectionSettings {
        response_max_bytes: 1024,
        max_in_flight_requests: 4,
    };
    const TIMEOUT: Duration = Duration::from_secs(5);

    /// A connection to a peer that runs `script` on its side of the socket.
    async fn connected<F>(script: impl FnOnce(TcpStream) -> F) -> (FrameConnection, JoinHandle<()>)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let connection = FrameConnection::connect(&address, TIMEOUT, SETTINGS, None)
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        (connection, tokio::spawn(script(stream)))
    }

    /// A request frame in Kafka's layout (API key, version, correlation id), with `tag`
    /// as its body.
    fn request_frame(correlation_id: i32, tag: u8) -> Bytes {
        let mut frame = size_prefix(9);
        frame.put_i16(18);
        frame.put_i16(0);
        frame.put_i32(correlation_id);
        frame.put_u8(tag);
        finish_frame(frame).unwrap()
    }

    /// Reads one request frame: its correlation id and body.
    async fn read_request(stream: &mut TcpStream) -> (i32, u8) {
        let frame = crate::frame::read_frame(stream, 1024)
            .await
            .unwrap()
            .unwrap();
        (
            i32::from_be_bytes(frame[4..8].try_into().unwrap()),
            frame[8],
        )
    }

    /// A response frame: the correlation id, then `body`.
    fn response_frame(correlation_id: i32, body: &[u8]) -> Bytes {
        let mut frame = size_prefix(4 + body.len());
        frame.put_i32(correlation_id);
        frame.put_slice(body);
        finish_frame(frame).unwrap()
    }

    /// Whether the peer sees the connection end (the socket shut) within a few seconds.
    async fn sees_the_end(stream: &mut TcpStream) -> bool {
        let mut rest = Vec::new();
        tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut rest))
            .await
            .is_ok_and(|read| read.is_ok())
    }

    #[tokio::test]
    async fn pipelined_responses_are_matched_by_correlation_id() {
        let (connection, peer) = connected(|mut stream| async move {
            let first = read_request(&mut stream).await;
            let second = read_request(&mut stream).await;
            // Answer the second first; each answer echoes its request's body.
            for (correlation_id, tag) in [second, first] {
                let response = response_frame(correlation_id, &[tag]);
                stream.write_all(&response).await.unwrap();
            }
        })
        .await;
        let ask = |tag| {
            let correlation_id = connection.next_correlation_id();
            connection.request(correlation_id, request_frame(correlation_id, tag), TIMEOUT)
        };
        let (first, second) = tokio::join!(ask(1), async {
            tokio::task::yield_now().await;
            ask(2).await
        });
        assert_eq!(first.unwrap()[4..], [1]);
        assert_eq!(second.unwrap()[4..], [2]);
        peer.await.unwrap();
    }

    #[tokio::test]
    async fn garbage_from_the_peer_closes_the_connection_with_an_error() {
        /// What the peer answers, from the request's correlation id.
        type Garbage = fn(i32) -> Vec<u8>;
        // (the peer's answer, the error every request in flight fails with)
        let cases: [(Garbage, &str); 4] = [
            (
                |id| response_frame(id + 100, b"x").to_vec(),
                "response with correlation id 100 matches no request",
            ),
            (
                |_| vec![0, 0, 0, 2, 1, 2],
                "response of 2 bytes has no header",
            ),
            (
                |_| 1025_i32.to_be_bytes().to_vec(),
                "frame of 1025 bytes exceeds the limit of 1024 bytes",
            ),
            (
                |_| (-7_i32).to_be_bytes().to_vec(),
                "negative frame size -7",
            ),
        ];
        for (answer, expected) in cases {
            let (connection, peer) = connected(move |mut stream| async move {
                let (correlation_id, _) = read_request(&mut stream).await;
                stream.write_all(&answer(correlation_id)).await.unwrap();
                assert!(sees_the_end(&mut stream).await, "{expected}");
            })
            .await;
            let correlation_id = connection.next_correlation_id();
            let error = connection
                .request(correlation_id, request_frame(correlation_id, 0), TIMEOUT)
                .await
                .unwrap_err();
            assert!(
                matches!(&error, ConnectionError::Disconnected { reason, .. } if reason == expected),
                "{error}"
            );
            assert!(connection.is_closed());
            peer.await.unwrap();
            // Nothing more goes out on a closed connection.
            let again = connection
                .request(1, request_frame(1, 0), TIMEOUT)
                .await
                .unwrap_err();
            assert!(
                matches!(&again, ConnectionError::Disconnected { reason, .. } if reason == expected),
                "{again}"
            );
        }
    }

    #[tokio::test]
    async fn a_silent_peer_times_out_and_the_connection_closes() {
        let (connection, peer) = connected(|mut stream| async move {
            let _ = read_request(&mut stream).await;
            assert!(sees_the_end(&mut stream).await);
        })
        .await;
        let correlation_id = connection.next_correlation_id();
        let timeout = Duration::from_millis(200);
        let error = connection
            .request(correlation_id, request_frame(correlation_id, 0), timeout)
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConnectionError::Timeout {
                    timeout_ms: 200,
                    ..
                }
            ),
            "{error}"
        );
        assert!(connection.is_closed());
        peer.await.unwrap();
    }

    #[tokio::test]
    async fn a_correlation_id_in_flight_is_not_taken_twice() {
        let (connection, _peer) = connected(|mut stream| async move {
            let _ = read_request(&mut stream).await;
            let _ = sees_the_end(&mut stream).await;
        })
        .await;
        let waiting = connection.request(7, request_frame(7, 0), TIMEOUT);
        let twice = async {
            tokio::task::yield_now().await;
            connection.request(7, request_frame(7, 1), TIMEOUT).await
        };
        tokio::select! {
            _ = waiting => panic!("the peer never answers"),
            twice = twice => assert!(
                matches!(twice, Err(ConnectionError::CorrelationIdInUse { correlation_id: 7, .. })),
                "{twice:?}"
            ),
        }
    }
}
