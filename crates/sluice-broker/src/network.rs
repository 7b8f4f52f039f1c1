//! The broker's network layer: Kafka's size-prefixed frames over TCP, one tokio task per
//! connection reading requests and one handling them and writing the responses.
//!
//! - Requests on a connection are pipelined: the reader reads ahead up to
//!   `max_in_flight_requests` frames (default 1; a full queue stops reading, which
//!   backpressures the client), and the handler serves them one at a time in arrival order, so responses
//!   leave in request order and a producer's pipelined batches are appended in the
//!   order it sent them. Connections are served in parallel.
//! - A frame larger than `socket.request.max.bytes`, a negative size, a header that does
//!   not decode, an unknown API or an unsupported version closes the connection with one
//!   log line (ApiVersions answers an unsupported version instead, as Kafka does).
//! - Memory: a frame's buffer starts at [`FRAME_BUFFER_FIRST_BYTES`] and grows only
//!   when the bytes that arrive fill it, at most [`FRAME_BUFFER_STEP_BYTES`] ahead of
//!   them, never to the size the prefix declares before the bytes are there: a client
//!   that sends a 100 MB prefix and then trickles bytes holds 16 KiB, not 100 MB. The
//!   size is bounded by `socket.request.max.bytes`; nothing is read past the frame.
//!
//! - Connection limits: `max.connections` and `max.connections.per.ip`
//!   ([`crate::connection_quotas`]); requests held: `queued.max.requests` and
//!   `queued.max.request.bytes` ([`RequestPool`]).
//! - Idle connections: one with no request read and no response written for
//!   `connections.max.idle.ms` is closed, whether it sends nothing or trickles the
//!   bytes of a request that never completes (slow loris).
//! - Accept errors (EMFILE when the process is out of file descriptors, ENFILE,
//!   ENOBUFS) back off [`ACCEPT_ERROR_BACKOFF`] instead of retrying at once: the
//!   pending connection stays in the backlog, so retrying would spin a core.
//!
//! What it costs: one allocation for frames up to 16 KiB, two for larger ones up to
//! [`FRAME_BUFFER_STEP_BYTES`] (a default 1 MiB `max.request.size`: the first 16 KiB are
//! copied once; larger frames grow by doubling, copying at most their own size again),
//! a few `read`s per request frame, one
//! `write` per response, one task wake-up per request, and the request's metrics (two
//! clock reads and three relaxed atomics, see [`crate::metrics`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::apis::{self, Outcome, Principal};
use crate::broker::Broker;
use crate::connection_quotas::{ConnectionQuotas, ConnectionSlot};
use crate::metrics::RequestMetrics;
use crate::sasl::{Authenticator, Step};
use crate::tls::ListenerTls;

/// How far a frame's buffer is reserved ahead of the bytes received once they fill
/// what it has: the most a connection holds beyond what it has sent.
pub const FRAME_BUFFER_STEP_BYTES: usize = 1 << 20;
/// A frame's first buffer (smaller frames get their size): what a connection that
/// declared a large request and sent little of it holds.
pub const FRAME_BUFFER_FIRST_BYTES: usize = 16 << 10;

/// How long the accept loop waits after a failed accept before the next.
pub const ACCEPT_ERROR_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// Bounds of one connection.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// `socket.request.max.bytes`: the largest request frame accepted.
    pub socket_request_max_bytes: usize,
    /// Requests read ahead of the one being handled, per connection. Each may be as
    /// large as `socket.request.max.bytes`, so this bounds a connection's memory; one
    /// is enough to overlap reading the next request with handling the current (Kafka
    /// reads none ahead: it mutes a connection while a request is in progress).
    pub max_in_flight_requests: usize,
    /// `connections.max.idle.ms`: a connection with no request read and no response
    /// written for this long is closed.
    pub connections_max_idle: std::time::Duration,
    /// `max.connections` and `max.connections.per.ip`, shared by the node's listeners.
    pub quotas: Arc<ConnectionQuotas>,
    /// `queued.max.requests` and `queued.max.request.bytes`, shared by the node's
    /// listeners.
    pub requests: Arc<RequestPool>,
}

/// How the pool of request bytes is counted: in units this large, taken as a
/// request's bytes arrive.
pub const REQUEST_POOL_UNIT_BYTES: usize = 64 << 10;

/// The requests a node holds between reading and answering them, shared by its client
/// listeners (the cluster's own listeners are not held back, as under
/// `max.connections`):
///
/// - `queued.max.requests` (Kafka's, default 500): requests read and not yet taken up
///   by their connection's handler. At the limit connections stop reading, so clients
///   see TCP backpressure instead of the broker queueing without bound.
/// - `queued.max.request.bytes` (Kafka's, default -1: no bound): bytes of requests
///   being read, queued or in progress, counted in [`REQUEST_POOL_UNIT_BYTES`] as they
///   arrive. A connection whose next bytes do not fit waits (stops reading) until
///   another request is answered or its connection closes.
#[derive(Debug)]
pub struct RequestPool {
    queued: Arc<tokio::sync::Semaphore>,
    bytes: Option<Arc<tokio::sync::Semaphore>>,
}

impl RequestPool {
    /// `max_bytes` `None`: request bytes are not bounded.
    pub fn new(max_queued: usize, max_bytes: Option<usize>) -> RequestPool {
        RequestPool {
            queued: Arc::new(tokio::sync::Semaphore::new(max_queued.max(1))),
            bytes: max_bytes.map(|bytes| {
                Arc::new(tokio::sync::Semaphore::new(
                    bytes.div_ceil(REQUEST_POOL_UNIT_BYTES).max(1),
                ))
            }),
        }
    }
}

impl Default for RequestPool {
    fn default() -> Self {
        RequestPool::new(500, None)
    }
}

/// What a request holds in the [`RequestPool`] (nothing on a listener it does not
/// bound): its bytes until it is answered, its queue place until its handler takes it.
#[derive(Default)]
struct PoolShare {
    bytes: Option<tokio::sync::OwnedSemaphorePermit>,
    queued: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl PoolShare {
    fn byte_capacity(&self) -> usize {
        self.bytes
            .as_ref()
            .map_or(0, |p| p.num_permits() * REQUEST_POOL_UNIT_BYTES)
    }
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            socket_request_max_bytes: 104_857_600,
            max_in_flight_requests: 1,
            connections_max_idle: std::time::Duration::from_millis(600_000),
            quotas: Arc::default(),
            requests: Arc::default(),
        }
    }
}

/// A listening socket serving Kafka requests for one listener of a broker.
pub struct Server {
    listener: TcpListener,
    config: Arc<NetworkConfig>,
    broker: Arc<Broker>,
    name: Arc<str>,
    metrics: Arc<RequestMetrics>,
    held_back_at_max_connections: bool,
    bounded_by_request_pool: bool,
    /// On an `SSL` or `SASL_SSL` listener: the TLS every connection starts with (the
    /// settings in force when it is accepted: a dynamic change reloads them).
    tls: Option<watch::Receiver<Arc<ListenerTls>>>,
}

impl Server {
    /// Binds `address` for the listener called `name` (whose advertised endpoint
    /// Metadata answers with).
    pub async fn bind(
        address: SocketAddr,
        config: NetworkConfig,
        broker: Arc<Broker>,
        name: &str,
    ) -> std::io::Result<Server> {
        Ok(Server {
            listener: TcpListener::bind(address).await?,
            config: Arc::new(config),
            tls: broker.tls.subscribe(name),
            broker,
            name: Arc::from(name),
            metrics: Arc::default(),
            held_back_at_max_connections: true,
            bounded_by_request_pool: true,
        })
    }

    /// Whether this listener's requests count against `queued.max.requests` and
    /// `queued.max.request.bytes` (true by default; false for the cluster's own
    /// listeners, whose replication and quorum traffic must not wait behind clients).
    pub fn bounded_by_request_pool(mut self, bounded: bool) -> Server {
        self.bounded_by_request_pool = bounded;
        self
    }

    /// Whether this listener stops accepting while the node is at `max.connections`
    /// (true by default; false for the cluster's own listeners).
    pub fn held_back_at_max_connections(mut self, held_back: bool) -> Server {
        self.held_back_at_max_connections = held_back;
        self
    }

    /// Records request counts and latencies into `metrics` (shared by a node's
    /// listeners) instead of a set of its own.
    pub fn with_request_metrics(mut self, metrics: Arc<RequestMetrics>) -> Server {
        self.metrics = metrics;
        self
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` turns true, which also closes the open
    /// connections.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        loop {
            if self.held_back_at_max_connections {
                // At max.connections new connections wait in the kernel's backlog.
                tokio::select! {
                    _ = self.config.quotas.wait_for_slot() => {}
                    _ = shutdown.changed() => {
                        if *shutdown.borrow() {
                            break;
                        }
                        continue;
                    }
                }
            }
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let slot = match self.config.quotas.admit(peer.ip()) {
                            Ok(slot) => slot,
                            Err(refused) => {
                                tracing::info!(%peer, listener = %self.name, "{refused}; closing the connection");
                                drop(stream);
                                continue;
                            }
                        };
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(serve_accepted(
                            Accepted { stream, peer, _slot: slot },
                            self.tls.as_ref().map(|tls| tls.borrow().clone()),
                            self.bounded_by_request_pool.then(|| self.config.requests.clone()),
                            self.config.clone(),
                            self.broker.clone(),
                            self.name.clone(),
                            self.metrics.clone(),
                            shutdown.clone(),
                        ));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept failed; retrying after a pause");
                        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    }
                },
                _ = shutdown.changed() => {
                    if *shutdown.borrow() {
                        break;
                    }
                }
            }
        }
    }
}

/// What the writer does with a request's turn.
enum Reply {
    Frame(Bytes),
    /// Send this frame, then close (a failed authentication's answer).
    FrameThenClose(Bytes),
    /// Nothing to send (Produce with acks=0); the next response may go.
    Nothing,
    Close,
}

/// An accepted connection and its place under the connection limits, held for the
/// connection's life.
struct Accepted {
    stream: TcpStream,
    peer: SocketAddr,
    _slot: ConnectionSlot,
}

/// Serves an accepted connection: over TCP as it is, or after a TLS handshake on a TLS
/// listener (bounded by `connections.max.idle.ms`), whose client certificate gives an
/// `SSL` connection its principal ([`crate::tls`]). Generic over the stream halves, so
/// the PLAINTEXT path runs the same code it ran before TLS existed.
#[allow(clippy::too_many_arguments)]
async fn serve_accepted(
    accepted: Accepted,
    tls: Option<Arc<ListenerTls>>,
    pool: Option<Arc<RequestPool>>,
    config: Arc<NetworkConfig>,
    broker: Arc<Broker>,
    listener: Arc<str>,
    metrics: Arc<RequestMetrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    let Accepted {
        stream,
        peer,
        _slot: _held_until_the_connection_ends,
    } = accepted;
    let Some(tls) = tls else {
        let (reader, writer) = stream.into_split();
        let principal = Principal::anonymous();
        return serve_connection(
            reader, writer, peer, principal, pool, config, broker, listener, metrics, shutdown,
        )
        .await;
    };
    let handshake = tokio::select! {
        handshake = tokio::time::timeout(config.connections_max_idle, tls.accept(stream)) => handshake,
        _ = shutdown.wait_for(|stopping| *stopping) => return,
    };
    let handshake = match handshake {
        Ok(Ok(handshake)) => handshake,
        Ok(Err(reason)) => {
            // As Kafka logs a failed SSL handshake: the client gets the TLS alert.
            tracing::info!(%peer, %listener, %reason, "failed authentication");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, %listener, "TLS handshake not finished within connections.max.idle.ms");
            return;
        }
    };
    if handshake.principal != Principal::anonymous() {
        tracing::debug!(%peer, %listener, principal = %handshake.principal, "authenticated");
    }
    let (reader, writer) = tokio::io::split(handshake.stream);
    serve_connection(
        reader,
        writer,
        peer,
        handshake.principal,
        pool,
        config,
        broker,
        listener,
        metrics,
        shutdown,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn serve_connection<R, W>(
    mut reader: R,
    writer: W,
    peer: SocketAddr,
    principal: Principal,
    pool: Option<Arc<RequestPool>>,
    config: Arc<NetworkConfig>,
    broker: Arc<Broker>,
    listener: Arc<str>,
    metrics: Arc<RequestMetrics>,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (queue, frames) = mpsc::channel::<(Bytes, PoolShare)>(config.max_in_flight_requests.max(1));
    // Until a SASL listener's connection has authenticated, its frames are bounded by
    // `sasl.server.max.receive.size`, as Kafka's `SaslServerAuthenticator` bounds them.
    let sasl = broker
        .config
        .settings()
        .listeners
        .sasl
        .contains_key(&*listener);
    let activity = Arc::new(Activity::new(!sasl));
    let unauthenticated_max = broker.config.settings().listeners.sasl_max_receive_size;
    let handler = tokio::spawn(handle_in_order(
        writer,
        frames,
        peer,
        principal,
        broker,
        listener,
        metrics,
        activity.clone(),
    ));
    'connection: loop {
        // One read future per frame, kept across the other events: dropping it would
        // lose the part of a frame already read.
        let max_bytes = if activity.authenticated.load(Ordering::Acquire) {
            config.socket_request_max_bytes
        } else {
            unauthenticated_max.min(config.socket_request_max_bytes)
        };
        let read = read_frame(
            &mut reader,
            max_bytes,
            pool.as_ref().and_then(|p| p.bytes.as_ref()),
        );
        tokio::pin!(read);
        let frame = loop {
            let idle_deadline = activity.idle_deadline(config.connections_max_idle);
            tokio::select! {
                frame = &mut read => break frame,
                // The handler closed the connection (a request asked for it).
                _ = queue.closed() => break 'connection,
                // The node is stopping: its connections close with it (the request in
                // progress still gets its answer).
                _ = shutdown.changed() => {
                    if *shutdown.borrow() {
                        break 'connection;
                    }
                }
                _ = tokio::time::sleep_until(idle_deadline) => {
                    // A response written meanwhile moved the deadline on.
                    if activity.idle_for(config.connections_max_idle) {
                        tracing::debug!(
                            %peer,
                            idle_ms = config.connections_max_idle.as_millis() as u64,
                            "closing an idle connection (connections.max.idle.ms)"
                        );
                        break 'connection;
                    }
                }
            }
        };
        let (frame, mut share) = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(ReadError::Io(error)) => {
                tracing::debug!(%peer, %error, "connection ended");
                break;
            }
            Err(ReadError::Bad(reason)) => {
                tracing::warn!(%peer, %reason, "closing connection");
                break;
            }
        };
        activity.request_read();
        if let Some(pool) = &pool {
            // At queued.max.requests this connection reads no further until a queued
            // request elsewhere is taken up.
            tokio::select! {
                permit = pool.queued.clone().acquire_owned() => match permit {
                    Ok(permit) => share.queued = Some(permit),
                    Err(_) => break,
                },
                _ = shutdown.changed() => {
                    if *shutdown.borrow() {
                        break;
                    }
                }
            }
        }
        if queue.send((frame, share)).await.is_err() {
            break;
        }
    }
    drop(queue);
    let _ = handler.await;
}

/// Handles a connection's requests one at a time, in the order they arrived, writing
/// each response before the next request starts — as Kafka does (it mutes a channel
/// while a request is in progress), so two Produce requests of one producer are
/// appended in the order sent and a long-polling Fetch holds back the requests behind
/// it on its connection.
#[allow(clippy::too_many_arguments)]
async fn handle_in_order<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: mpsc::Receiver<(Bytes, PoolShare)>,
    peer: SocketAddr,
    mut principal: Principal,
    broker: Arc<Broker>,
    listener: Arc<str>,
    metrics: Arc<RequestMetrics>,
    activity: Arc<Activity>,
) {
    // A SASL listener's connections authenticate before anything else is served.
    let mut authenticator = broker
        .config
        .settings()
        .listeners
        .sasl
        .get(&*listener)
        .map(|sasl| Authenticator::new(sasl.clone(), broker.image_view()));
    while let Some((frame, mut share)) = frames.recv().await {
        // Taken up: its place in queued.max.requests frees; its bytes stay counted
        // until it is answered (the end of this turn).
        share.queued = None;
        let reply = match authenticator.as_mut() {
            Some(auth) if auth.principal().is_none() => {
                let reply = authenticate(auth, frame, peer, &broker, &listener, &metrics).await;
                if let Some(authenticated) = auth.principal() {
                    tracing::debug!(%peer, %listener, principal = %authenticated, "authenticated");
                    principal = authenticated.clone();
                }
                if auth.principal().is_some() {
                    activity.authenticated.store(true, Ordering::Release);
                }
                reply
            }
            _ => {
                handle_frame(
                    frame,
                    peer,
                    broker.clone(),
                    listener.clone(),
                    &principal,
                    &metrics,
                )
                .await
            }
        };
        let (frame, close_after) = match reply {
            Reply::Frame(frame) => (frame, false),
            Reply::FrameThenClose(frame) => (frame, true),
            Reply::Nothing => {
                activity.request_answered();
                continue;
            }
            Reply::Close => break,
        };
        // A TLS stream holds the bytes until flushed; a TCP flush does nothing.
        if let Err(error) = async {
            writer.write_all(&frame).await?;
            writer.flush().await
        }
        .await
        {
            tracing::debug!(%peer, %error, "write failed; closing connection");
            break;
        }
        activity.request_answered();
        if close_after {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

/// When a connection last completed a request or a response, for
/// `connections.max.idle.ms`; shared by its reader and its writer.
struct Activity {
    start: tokio::time::Instant,
    /// Milliseconds after `start`.
    last_ms: std::sync::atomic::AtomicU64,
    /// Requests read and not answered yet: a connection waiting on its own long poll
    /// is not idle.
    in_progress: std::sync::atomic::AtomicUsize,
    /// Whether the connection may send frames up to `socket.request.max.bytes`: from
    /// the start on a listener without SASL, else once authenticated.
    authenticated: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn new(authenticated: bool) -> Activity {
        Activity {
            start: tokio::time::Instant::now(),
            last_ms: std::sync::atomic::AtomicU64::new(0),
            in_progress: std::sync::atomic::AtomicUsize::new(0),
            authenticated: std::sync::atomic::AtomicBool::new(authenticated),
        }
    }

    fn request_read(&self) {
        self.touch();
        self.in_progress
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn request_answered(&self) {
        self.touch();
        self.in_progress
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// When the connection will have been idle for `limit`, if nothing happens: a
    /// full `limit` from now while a request is in progress (no busy loop on a long
    /// poll).
    fn idle_deadline(&self, limit: std::time::Duration) -> tokio::time::Instant {
        if self.in_progress.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            tokio::time::Instant::now() + limit
        } else {
            self.last() + limit
        }
    }

    /// Whether the connection has been idle for `limit`.
    fn idle_for(&self, limit: std::time::Duration) -> bool {
        self.in_progress.load(std::sync::atomic::Ordering::Relaxed) == 0
            && self.last() + limit <= tokio::time::Instant::now()
    }

    fn touch(&self) {
        let elapsed = self.start.elapsed().as_millis() as u64;
        self.last_ms
            .fetch_max(elapsed, std::sync::atomic::Ordering::Relaxed);
    }

    fn last(&self) -> tokio::time::Instant {
        self.start
            + std::time::Duration::from_millis(
                self.last_ms.load(std::sync::atomic::Ordering::Relaxed),
            )
    }
}

/// Why a frame could not be read.
enum ReadError {
    /// The socket failed (a reset, usually: the client went away).
    Io(std::io::Error),
    /// The client sent something the broker refuses.
    Bad(String),
}

/// Reads one frame: `Ok(None)` at a clean end of stream. With a byte pool, the
/// frame's bytes are taken from it as they arrive (a read waits for room) and held by
/// the returned share.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
    pool: Option<&Arc<tokio::sync::Semaphore>>,
) -> Result<Option<(Bytes, PoolShare)>, ReadError> {
    let mut share = PoolShare::default();
    let mut prefix = [0u8; 4];
    match reader.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(ReadError::Io(error)),
    }
    let size = i32::from_be_bytes(prefix);
    let size =
        usize::try_from(size).map_err(|_| ReadError::Bad(format!("negative frame size {size}")))?;
    if size > max_bytes {
        return Err(ReadError::Bad(format!(
            "frame of {size} bytes exceeds socket.request.max.bytes={max_bytes}"
        )));
    }
    // A first buffer of at most FRAME_BUFFER_FIRST_BYTES; once bytes fill it the frame
    // is arriving and the buffer grows a step ahead of them, so a fast client's 1 MiB
    // request costs one small copy and a trickling one holds a few KiB.
    let mut frame = BytesMut::with_capacity(size.min(FRAME_BUFFER_FIRST_BYTES));
    while frame.len() < size {
        let remaining = size - frame.len();
        if frame.len() == frame.capacity() {
            frame.reserve(remaining.min(FRAME_BUFFER_STEP_BYTES));
        }
        // Room in the pool for at least the next byte.
        let mut allowed = remaining;
        if let Some(pool) = pool {
            if share.byte_capacity() <= frame.len() {
                let unit = pool
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| ReadError::Bad("the request pool is closed".into()))?;
                match &mut share.bytes {
                    Some(held) => held.merge(unit),
                    None => share.bytes = Some(unit),
                }
            }
            allowed = allowed.min(share.byte_capacity() - frame.len());
        }
        // `take` keeps the read inside this frame (the buffer's spare capacity may be
        // larger than what is left of it) and inside the bytes the pool allows.
        let read = (&mut *reader)
            .take(allowed as u64)
            .read_buf(&mut frame)
            .await
            .map_err(ReadError::Io)?;
        if read == 0 {
            return Err(ReadError::Bad(format!(
                "connection closed inside a frame ({} of {size} bytes)",
                frame.len()
            )));
        }
    }
    Ok(Some((frame.freeze(), share)))
}

/// Decodes the request header, dispatches, and frames the response.
/// One frame of a connection still authenticating ([`crate::sasl`]): ApiVersions,
/// SaslHandshake, the mechanism's tokens; anything else closes the connection.
async fn authenticate(
    auth: &mut Authenticator,
    frame: Bytes,
    peer: SocketAddr,
    broker: &Arc<Broker>,
    listener: &Arc<str>,
    metrics: &RequestMetrics,
) -> Reply {
    use kafka_protocol::messages::{
        SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
        SaslHandshakeResponse,
    };
    use kafka_protocol::protocol::StrBytes;
    let delay = broker
        .config
        .settings()
        .listeners
        .failed_authentication_delay;
    let failed = |mechanism_failure: &str| {
        tracing::info!(%peer, %listener, reason = %mechanism_failure, "failed authentication");
    };
    if auth.expects_bare_token() {
        // After a v0 SaslHandshake the tokens are bare frames (no Kafka header).
        return match auth.on_token(&frame) {
            Step::Token(Ok(reply)) => {
                let mut out = BytesMut::with_capacity(4 + reply.len());
                out.put_i32(reply.len() as i32);
                out.extend_from_slice(&reply);
                Reply::Frame(out.freeze())
            }
            Step::Token(Err(failure)) => {
                failed(&failure.message);
                tokio::time::sleep(delay).await;
                Reply::Close
            }
            _ => Reply::Close,
        };
    }
    let close = |reason: String| {
        tracing::warn!(%peer, %listener, %reason, "closing connection");
        Reply::Close
    };
    if frame.len() < 8 {
        return close(format!(
            "request of {} bytes is shorter than a header",
            frame.len()
        ));
    }
    let api_key_id = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let sasl_api = match ApiKey::try_from(api_key_id) {
        Ok(api @ (ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)) => Some(api),
        _ => None,
    };
    let Some(api_key) = sasl_api else {
        return match auth.on_request(api_key_id, version, None) {
            Step::Serve => {
                handle_frame(
                    frame,
                    peer,
                    broker.clone(),
                    listener.clone(),
                    &Principal::anonymous(),
                    metrics,
                )
                .await
            }
            Step::Close(reason) => close(reason),
            other => close(format!("unexpected authentication step {other:?}")),
        };
    };
    let Some((min, max)) = apis::supported_versions(api_key) else {
        return close(format!("{api_key:?} is not served"));
    };
    if !(min..=max).contains(&version) {
        return close(format!("{api_key:?} v{version} is not supported"));
    }
    let mut body = frame;
    let header = match RequestHeader::decode(&mut body, api_key.request_header_version(version)) {
        Ok(header) => header,
        Err(error) => return close(format!("malformed {api_key:?} v{version} header: {error}")),
    };
    let respond = |body: Outcome| match body {
        Outcome::Respond {
            body,
            response_version,
        } => Some(response_frame(
            api_key,
            header.correlation_id,
            response_version,
            &body,
        )),
        _ => None,
    };
    if api_key == ApiKey::SaslHandshake {
        let request = match SaslHandshakeRequest::decode(&mut body, version) {
            Ok(request) => request,
            Err(error) => return close(format!("malformed SaslHandshake: {error}")),
        };
        let step = auth.on_request(api_key_id, version, Some(request.mechanism.as_str()));
        let Step::Handshake { error } = step else {
            return close(format!("unexpected authentication step {step:?}"));
        };
        let response = SaslHandshakeResponse::default()
            .with_error_code(error.code())
            .with_mechanisms(
                auth.enabled_mechanisms()
                    .iter()
                    .map(|m| StrBytes::from_string(m.clone()))
                    .collect(),
            );
        return match respond(apis::respond(&response, version)) {
            Some(frame) => Reply::Frame(frame),
            None => close("SaslHandshake response did not encode".into()),
        };
    }
    match auth.on_request(api_key_id, version, None) {
        Step::Authenticate => {}
        Step::Close(reason) => return close(reason),
        other => return close(format!("unexpected authentication step {other:?}")),
    }
    let request = match SaslAuthenticateRequest::decode(&mut body, version) {
        Ok(request) => request,
        Err(error) => return close(format!("malformed SaslAuthenticate: {error}")),
    };
    match auth.on_token(&request.auth_bytes) {
        Step::Token(Ok(reply)) => {
            // The error message is "" on success, as Kafka sends it (not null).
            let response = SaslAuthenticateResponse::default().with_auth_bytes(reply.into());
            match respond(apis::respond(&response, version)) {
                Some(frame) => Reply::Frame(frame),
                None => close("SaslAuthenticate response did not encode".into()),
            }
        }
        Step::Token(Err(failure)) => {
            failed(&failure.message);
            // Kafka delays a failed authentication's answer and close
            // (`connection.failed.authentication.delay.ms`), slowing a password guesser.
            tokio::time::sleep(delay).await;
            let response = SaslAuthenticateResponse::default()
                .with_error_code(failure.error.code())
                .with_error_message(Some(StrBytes::from_string(failure.message)));
            match respond(apis::respond(&response, version)) {
                Some(frame) => Reply::FrameThenClose(frame),
                None => Reply::Close,
            }
        }
        other => close(format!("unexpected authentication step {other:?}")),
    }
}

/// A response frame: size, the response header at `api_key`'s header version, body.
fn response_frame(api_key: ApiKey, correlation_id: i32, version: i16, body: &[u8]) -> Bytes {
    let mut response_header = ResponseHeader::default();
    response_header.correlation_id = correlation_id;
    let mut out = BytesMut::with_capacity(4 + 8 + body.len());
    out.put_i32(0); // size, written below
    response_header
        .encode(&mut out, api_key.response_header_version(version))
        .expect("a response header encodes");
    out.extend_from_slice(body);
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out.freeze()
}

async fn handle_frame(
    frame: Bytes,
    peer: SocketAddr,
    broker: Arc<Broker>,
    listener: Arc<str>,
    principal: &Principal,
    metrics: &RequestMetrics,
) -> Reply {
    let started = std::time::Instant::now();
    let close = |reason: String| {
        tracing::warn!(%peer, %reason, "closing connection");
        Reply::Close
    };
    if frame.len() < 8 {
        return close(format!(
            "request of {} bytes is shorter than a header",
            frame.len()
        ));
    }
    let api_key_id = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    if api_key_id == crate::quorum::RAFT_API_KEY {
        // The metadata quorum's own requests (see `quorum::rpc`): on a controller
        // listener, or on a broker-only node the leader's pushes of the log (a learner
        // receives the log where its brokers' traffic goes), checked against the
        // leader (`Quorum::admit_pushed`). A client on a voter's broker listener cannot
        // send them.
        let on_controller_listener = broker
            .config
            .settings()
            .listeners
            .is_controller_listener(&listener);
        let is_voter = broker.quorum().is_ok_and(|q| q.is_voter());
        if is_voter && !on_controller_listener {
            return close(format!(
                "quorum request on listener {listener}, which is not a controller listener"
            ));
        }
        return match crate::quorum::rpc::decode_request(frame) {
            Ok((correlation_id, request)) => {
                if !on_controller_listener
                    && let Ok(quorum) = broker.quorum()
                    && let Err(reason) = quorum.admit_pushed(&request).await
                {
                    tracing::warn!(%listener, %reason, "quorum request refused");
                    return close(reason);
                }
                let response = crate::apis::serve_rpc(&broker, request).await;
                match crate::quorum::rpc::encode_response(correlation_id, &response) {
                    Ok(frame) => Reply::Frame(frame),
                    Err(error) => close(format!("quorum response: {error}")),
                }
            }
            Err(reason) => close(reason),
        };
    }
    let Ok(api_key) = ApiKey::try_from(api_key_id) else {
        return close(format!("unknown API key {api_key_id}"));
    };
    // The body takes the frame itself (no second reference to it).
    let mut body = frame;
    let header = match RequestHeader::decode(&mut body, api_key.request_header_version(version)) {
        Ok(header) => header,
        // An ApiVersions request of a version newer than any known still gets its
        // UNSUPPORTED_VERSION answer: its correlation id is at a fixed place.
        Err(_) if api_key == ApiKey::ApiVersions => {
            let mut header = RequestHeader::default();
            header.request_api_key = api_key_id;
            header.request_api_version = version;
            header.correlation_id = correlation_id;
            body = Bytes::new();
            header
        }
        Err(error) => return close(format!("malformed {api_key:?} v{version} header: {error}")),
    };
    let client_host: Arc<str> = format!("/{}", peer.ip()).into();
    let outcome = apis::dispatch(
        broker,
        listener,
        client_host,
        principal.clone(),
        api_key,
        header,
        body,
    )
    .await;
    if !matches!(outcome, Outcome::Close { .. }) {
        metrics.record(api_key, version, started.elapsed());
    }
    match outcome {
        Outcome::Respond {
            body,
            response_version,
        } => Reply::Frame(response_frame(
            api_key,
            correlation_id,
            response_version,
            &body,
        )),
        Outcome::NoResponse => Reply::Nothing,
        Outcome::Close { reason } => close(reason),
    }
}
