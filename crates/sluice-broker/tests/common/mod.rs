//! Starts a real Sluice node in-process (`node::run`, the code `sluice server` runs) on
//! free loopback ports with a temporary log directory.

#![allow(dead_code)]

use std::net::SocketAddr;

use sluice_broker::{BrokerConfig, EMBEDDED_SERVER_PROPERTIES};
use tokio::sync::{oneshot, watch};

pub struct TestNode {
    pub address: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl TestNode {
    /// Starts a node with the embedded defaults plus `overrides`.
    pub async fn start(overrides: &[(&str, &str)]) -> TestNode {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, overrides).await
    }

    /// Starts a node on an existing log directory (a restart).
    pub async fn start_in(dir: tempfile::TempDir, overrides: &[(&str, &str)]) -> TestNode {
        let mut all: Vec<(String, String)> = vec![
            (
                "listeners".into(),
                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0".into(),
            ),
            (
                "advertised.listeners".into(),
                "PLAINTEXT://127.0.0.1:0".into(),
            ),
            ("log.dirs".into(), dir.path().display().to_string()),
            // Any free port: tests run in parallel and must not contend for 9404.
            ("metrics.listener".into(), "127.0.0.1:0".into()),
        ];
        all.extend(
            overrides
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let config = BrokerConfig::load(EMBEDDED_SERVER_PROPERTIES, &all)
            .unwrap()
            .config;
        let (stop, stopped) = watch::channel(false);
        let (bound, address) = oneshot::channel();
        let bound = std::sync::Mutex::new(Some(bound));
        let task = tokio::spawn(async move {
            sluice_broker::node::run(config, stopped, move |_, address| {
                if let Some(bound) = bound.lock().unwrap().take() {
                    let _ = bound.send(address);
                }
            })
            .await
            .expect("the node runs and shuts down cleanly");
        });
        let address = address.await.expect("the node binds its listener");
        TestNode {
            address,
            dir,
            stop,
            task,
        }
    }

    /// Clean shutdown; returns the log directory for a restart.
    pub async fn stop(self) -> tempfile::TempDir {
        self.stop.send(true).unwrap();
        self.task.await.unwrap();
        self.dir
    }
}

/// A bare Kafka connection for tests: frames a request with kafka-protocol's types and
/// reads its response (no version negotiation: the test picks the version).
pub struct Wire {
    stream: tokio::net::TcpStream,
    next_correlation_id: i32,
}

impl Wire {
    pub async fn connect(address: SocketAddr) -> Wire {
        Wire {
            stream: tokio::net::TcpStream::connect(address).await.unwrap(),
            next_correlation_id: 1,
        }
    }

    /// Sends `request` at `version` and returns its correlation id.
    pub async fn send<R: kafka_protocol::protocol::Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> i32 {
        self.try_send(request, version)
            .await
            .expect("the request is written")
    }

    /// Sends `request`; `None` when the connection fails.
    pub async fn try_send<R: kafka_protocol::protocol::Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Option<i32> {
        use bytes::BufMut;
        use kafka_protocol::protocol::Encodable;
        use tokio::io::AsyncWriteExt;
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let api_key = kafka_protocol::messages::ApiKey::try_from(R::KEY).unwrap();
        let header = kafka_protocol::messages::RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(kafka_protocol::protocol::StrBytes::from_static_str(
                "sluice-test",
            )));
        let mut body = bytes::BytesMut::new();
        header
            .encode(&mut body, api_key.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        let mut frame = bytes::BytesMut::with_capacity(4 + body.len());
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).await.ok()?;
        Some(correlation_id)
    }

    /// Reads one response frame: (correlation id, body after the response header).
    pub async fn receive<R: kafka_protocol::protocol::Decodable>(
        &mut self,
        api_key: kafka_protocol::messages::ApiKey,
        version: i16,
    ) -> (i32, R) {
        self.try_receive(api_key, version)
            .await
            .expect("a response arrives")
    }

    /// Reads one response frame; `None` when the connection fails.
    pub async fn try_receive<R: kafka_protocol::protocol::Decodable>(
        &mut self,
        api_key: kafka_protocol::messages::ApiKey,
        version: i16,
    ) -> Option<(i32, R)> {
        use kafka_protocol::protocol::Decodable;
        use tokio::io::AsyncReadExt;
        let size = self.stream.read_i32().await.ok()?;
        let mut frame = vec![0u8; size as usize];
        self.stream.read_exact(&mut frame).await.ok()?;
        let mut frame = bytes::Bytes::from(frame);
        let header = kafka_protocol::messages::ResponseHeader::decode(
            &mut frame,
            api_key.response_header_version(version),
        )
        .unwrap();
        Some((
            header.correlation_id,
            R::decode(&mut frame, version).unwrap(),
        ))
    }

    /// Sends a request and reads its response.
    pub async fn call<Q: kafka_protocol::protocol::Request>(
        &mut self,
        request: &Q,
        version: i16,
    ) -> Q::Response {
        let correlation_id = self.send(request, version).await;
        let api_key = kafka_protocol::messages::ApiKey::try_from(Q::KEY).unwrap();
        let (received, response) = self.receive(api_key, version).await;
        assert_eq!(received, correlation_id, "responses come back in order");
        response
    }

    /// Like [`Wire::call`], but `None` when the connection fails (the broker died).
    pub async fn try_call<Q: kafka_protocol::protocol::Request>(
        &mut self,
        request: &Q,
        version: i16,
    ) -> Option<Q::Response> {
        let correlation_id = self.try_send(request, version).await?;
        let api_key = kafka_protocol::messages::ApiKey::try_from(Q::KEY).unwrap();
        let (received, response) = self.try_receive(api_key, version).await?;
        assert_eq!(received, correlation_id);
        Some(response)
    }

    /// Whether the broker closed the connection (read returns end of stream).
    pub async fn is_closed(&mut self) -> bool {
        use tokio::io::AsyncReadExt;
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                self.stream.read(&mut byte)
            )
            .await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

/// A free port on 127.0.0.1 (bound, then released: the caller binds it again soon, and
/// again when it restarts a node). Taken below Linux's ephemeral range (32768-60999),
/// so that no outgoing connection (of another node, while this one is down) takes it
/// as its local port in between.
/// A port is never handed out twice in one test process: a stopped node keeps its
/// ports for its restart, and another test's node must not take them meanwhile.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        // std's hasher keys are random per instance: a random number without a crate.
        let random = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0u8);
        let port = 20_000 + (random % 12_000) as u16;
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return port;
        }
    }
}

/// One node of a [`TestCluster`].
pub struct ClusterNode {
    pub id: i32,
    pub broker_port: u16,
    pub controller_port: u16,
    pub dir: std::path::PathBuf,
    running: Option<(watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
}

impl ClusterNode {
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.broker_port))
    }

    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }
}

/// N in-process Sluice nodes with both roles on 127.0.0.1, sharing one Raft metadata
/// quorum (every node a voter), each with its own log directory. Timeouts are short:
/// heartbeats every 100 ms, fencing after 1.5 s, elections after 1-2 s.
pub struct TestCluster {
    pub nodes: Vec<ClusterNode>,
    voters: String,
    overrides: Vec<(String, String)>,
    _dir: tempfile::TempDir,
}

impl TestCluster {
    pub async fn start(size: usize, overrides: &[(&str, &str)]) -> TestCluster {
        // SLUICE_TEST_LOG=debug (an env-filter) shows the nodes' logs.
        if let Ok(filter) = std::env::var("SLUICE_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        let dir = tempfile::tempdir().unwrap();
        let nodes: Vec<ClusterNode> = (1..=size as i32)
            .map(|id| ClusterNode {
                id,
                broker_port: free_port(),
                controller_port: free_port(),
                dir: dir.path().join(format!("node-{id}")),
                running: None,
            })
            .collect();
        let voters = nodes
            .iter()
            .map(|n| format!("{}@127.0.0.1:{}", n.id, n.controller_port))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = TestCluster {
            nodes,
            voters,
            overrides: overrides
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            _dir: dir,
        };
        let starts: Vec<_> = (0..size).map(|i| cluster.spawn(i)).collect();
        for (i, started) in starts.into_iter().enumerate() {
            let running = tokio::time::timeout(std::time::Duration::from_secs(60), started)
                .await
                .unwrap_or_else(|_| panic!("node {} did not start", i + 1));
            cluster.nodes[i].running = Some(running);
        }
        // Every node has applied every registration.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        for address in cluster.addresses() {
            loop {
                let mut wire = Wire::connect(address).await;
                let response = wire
                    .call(
                        &kafka_protocol::messages::MetadataRequest::default().with_topics(None),
                        12,
                    )
                    .await;
                if response.brokers.len() == size {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "brokers registered everywhere"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        cluster
    }

    fn config(&self, index: usize) -> BrokerConfig {
        let node = &self.nodes[index];
        let mut all: Vec<(String, String)> = vec![
            ("node.id".into(), node.id.to_string()),
            (
                "listeners".into(),
                format!(
                    "PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
                    node.broker_port, node.controller_port
                ),
            ),
            (
                "advertised.listeners".into(),
                format!("PLAINTEXT://127.0.0.1:{}", node.broker_port),
            ),
            ("controller.quorum.voters".into(), self.voters.clone()),
            ("log.dirs".into(), node.dir.display().to_string()),
            ("metrics.listener".into(), "127.0.0.1:0".into()),
            ("broker.heartbeat.interval.ms".into(), "100".into()),
            ("broker.session.timeout.ms".into(), "1500".into()),
            (
                "controller.quorum.election.timeout.ms".into(),
                "1000".into(),
            ),
            ("replica.lag.time.max.ms".into(), "2000".into()),
            ("default.replication.factor".into(), "3".into()),
            ("offsets.topic.replication.factor".into(), "3".into()),
        ];
        all.extend(self.overrides.iter().cloned());
        BrokerConfig::load(EMBEDDED_SERVER_PROPERTIES, &all)
            .unwrap()
            .config
    }

    /// Starts node `index`; resolves once it serves (registered in the quorum).
    fn spawn(
        &self,
        index: usize,
    ) -> impl std::future::Future<Output = (watch::Sender<bool>, tokio::task::JoinHandle<()>)> + use<>
    {
        let config = self.config(index);
        let (stop, stopped) = watch::channel(false);
        let (bound, ready) = oneshot::channel();
        let bound = std::sync::Mutex::new(Some(bound));
        let id = self.nodes[index].id;
        let task = tokio::spawn(async move {
            sluice_broker::node::run(config, stopped, move |_, _| {
                if let Some(bound) = bound.lock().unwrap().take() {
                    let _ = bound.send(());
                }
            })
            .await
            .unwrap_or_else(|e| panic!("node {id} failed: {e}"));
        });
        async move {
            ready.await.expect("the node starts");
            (stop, task)
        }
    }

    /// Stops node `index` cleanly (controlled shutdown first).
    pub async fn stop(&mut self, index: usize) {
        if let Some((stop, task)) = self.nodes[index].running.take() {
            stop.send(true).unwrap();
            tokio::time::timeout(std::time::Duration::from_secs(30), task)
                .await
                .expect("the node stops")
                .unwrap();
        }
    }

    /// Starts node `index` again on its log directory and ports.
    pub async fn restart(&mut self, index: usize) {
        let running = tokio::time::timeout(std::time::Duration::from_secs(60), self.spawn(index))
            .await
            .expect("the node restarts");
        self.nodes[index].running = Some(running);
    }

    /// Every running node's broker address.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.nodes
            .iter()
            .filter(|n| n.is_running())
            .map(ClusterNode::address)
            .collect()
    }

    pub async fn shutdown(mut self) {
        for index in 0..self.nodes.len() {
            self.stop(index).await;
        }
    }
}

/// Creates topic `name` with one partition on exactly `replicas` (an explicit
/// assignment, first replica preferred) and topic `configs`; returns the error code.
pub async fn create_assigned(
    address: SocketAddr,
    name: &str,
    replicas: &[i32],
    configs: &[(&str, &str)],
) -> i16 {
    use kafka_protocol::messages::create_topics_request::{
        CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
    };
    use kafka_protocol::messages::{BrokerId, CreateTopicsRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let text = |t: &str| StrBytes::from_string(t.to_string());
    let mut wire = Wire::connect(address).await;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(text(name)))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![
                    CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(replicas.iter().copied().map(BrokerId).collect()),
                ])
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(text(k))
                                .with_value(Some(text(v)))
                        })
                        .collect(),
                ),
        ])
        .with_timeout_ms(10_000);
    wire.call(&request, 7).await.topics[0].error_code
}

/// The values of every record in `records` (whole batches), as UTF-8 text.
pub fn values(records: &bytes::Bytes) -> Vec<String> {
    sluice_protocol::batches(records.clone())
        .flat_map(|b| {
            let b = b.unwrap();
            b.records()
                .unwrap()
                .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `GET path` over a bare HTTP/1.1 connection: (status code, body).
pub async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut response)
        .await
        .unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// The value of the sample `series` (name and labels as exposed), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}
