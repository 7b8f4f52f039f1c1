//! The cluster as a client sees it: bootstrap, cluster metadata, and one connection per
//! broker, opened when first needed.
//!
//! `Client::connect` tries each `bootstrap.servers` address in order until one answers,
//! then asks it for the cluster's brokers (Metadata). Later requests go to the broker
//! they must reach ([`Target::Node`]) or to any broker ([`Target::Any`]: an open
//! connection if there is one, else the known brokers and then the bootstrap servers, in
//! order). In KRaft every broker forwards controller requests (CreateTopics, DeleteTopics,
//! CreatePartitions, configs) to the active controller, so those go to any broker.
//! A closed connection is dropped and reopened on next use; requests are not retried here.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::{Request, StrBytes};

use crate::config::ClientConfig;
use crate::connection::{Connection, api_key};
use crate::error::{Error, ErrorCode};
use crate::metrics::network::NetworkSensors;

/// Where a request must go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Any broker of the cluster.
    Any,
    /// The broker with this `node.id`.
    Node(i32),
}

/// A connection to a Kafka cluster (Sluice or Apache Kafka).
pub struct Client {
    config: ClientConfig,
    state: Mutex<ClusterState>,
    /// Where the connections record their bytes (a producer's or consumer's metrics).
    network: Option<Arc<NetworkSensors>>,
}

#[derive(Default)]
struct ClusterState {
    /// Broker id → `host:port`, from the last Metadata response.
    brokers: BTreeMap<i32, String>,
    cluster_id: Option<String>,
    controller_id: Option<i32>,
    /// Open connections by address.
    connections: HashMap<String, Arc<Connection>>,
}

impl Client {
    /// Finds the cluster through `config.bootstrap_servers` and learns its brokers.
    pub async fn connect(config: ClientConfig) -> Result<Client, Error> {
        Client::connect_observed(config, None).await
    }

    /// [`Client::connect`] whose connections record their traffic in `network`.
    pub(crate) async fn connect_observed(
        config: ClientConfig,
        network: Option<Arc<NetworkSensors>>,
    ) -> Result<Client, Error> {
        if config.bootstrap_servers.is_empty() {
            return Err(Error::Config("bootstrap.servers is empty".to_string()));
        }
        let client = Client {
            config,
            state: Mutex::new(ClusterState::default()),
            network,
        };
        client.metadata(Some(&[])).await?;
        Ok(client)
    }

    /// The configuration this client was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The cluster's brokers (id → `host:port`) from the last Metadata response.
    pub fn brokers(&self) -> BTreeMap<i32, String> {
        self.lock().brokers.clone()
    }

    /// The cluster id from the last Metadata response.
    pub fn cluster_id(&self) -> Option<String> {
        self.lock().cluster_id.clone()
    }

    /// The controller id from the last Metadata response (in KRaft, a broker that
    /// forwards to the active controller).
    pub fn controller_id(&self) -> Option<i32> {
        self.lock().controller_id
    }

    /// Metadata for `topics` (`None`: every topic; empty: brokers only), without creating
    /// topics that do not exist. Refreshes the broker list.
    pub async fn metadata(&self, topics: Option<&[String]>) -> Result<MetadataResponse, Error> {
        let topics: Option<Vec<MetadataRequestTopic>> = topics.map(|names| {
            names
                .iter()
                .map(|name| MetadataRequestTopic::default().with_name(Some(topic_name(name))))
                .collect()
        });
        let response = self
            .send(Target::Any, |_| {
                MetadataRequest::default()
                    .with_topics(topics.clone())
                    .with_allow_auto_topic_creation(false)
            })
            .await?;
        ErrorCode(response.error_code).check(None)?;
        let mut state = self.lock();
        state.brokers = response
            .brokers
            .iter()
            .map(|broker| (broker.node_id.0, address(&broker.host, broker.port)))
            .collect();
        state.cluster_id = response.cluster_id.as_ref().map(|id| id.to_string());
        state.controller_id = (response.controller_id.0 >= 0).then_some(response.controller_id.0);
        Ok(response)
    }

    /// Sends the request `build` makes for the negotiated version to `target`, and
    /// returns the response.
    pub async fn send<R: Request>(
        &self,
        target: Target,
        build: impl FnOnce(i16) -> R,
    ) -> Result<R::Response, Error> {
        let connection = self.connection(target).await?;
        let version = connection.version(api_key::<R>())?;
        connection.send(version, &build(version)).await
    }

    /// [`Client::send`] for a request the broker does not answer (Produce with
    /// `acks=0`).
    pub async fn send_without_response<R: Request>(
        &self,
        target: Target,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(), Error> {
        let connection = self.connection(target).await?;
        let version = connection.version(api_key::<R>())?;
        connection
            .send_without_response(version, &build(version))
            .await
    }

    /// An open connection to `target`, opening one if needed.
    async fn connection(&self, target: Target) -> Result<Arc<Connection>, Error> {
        let candidates = {
            let mut state = self.lock();
            state
                .connections
                .retain(|_, connection| !connection.is_closed());
            match target {
                Target::Any => {
                    if let Some(connection) = state.connections.values().next() {
                        return Ok(connection.clone());
                    }
                    let mut candidates: Vec<String> = state.brokers.values().cloned().collect();
                    for server in &self.config.bootstrap_servers {
                        if !candidates.contains(server) {
                            candidates.push(server.clone());
                        }
                    }
                    candidates
                }
                Target::Node(node_id) => {
                    let Some(address) = state.brokers.get(&node_id) else {
                        return Err(Error::UnknownNode { node_id });
                    };
                    if let Some(connection) = state.connections.get(address) {
                        return Ok(connection.clone());
                    }
                    vec![address.clone()]
                }
            }
        };
        let mut last_error = None;
        for address in &candidates {
            match Connection::connect_observed(address, &self.config, self.network.clone()).await {
                Ok(connection) => {
                    let connection = Arc::new(connection);
                    self.lock()
                        .connections
                        .insert(address.clone(), connection.clone());
                    return Ok(connection);
                }
                Err(error) => {
                    tracing::debug!(address, %error, "cannot use broker");
                    last_error = Some(error);
                }
            }
        }
        Err(Error::NoBrokerAvailable {
            tried: candidates.join(", "),
            last: Box::new(
                last_error.unwrap_or(Error::Config("no broker address known".to_string())),
            ),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClusterState> {
        // Each update replaces whole fields, so a poisoned lock still holds a valid state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A topic name as kafka-protocol carries it.
pub(crate) fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

/// `host:port`, with an IPv6 host in brackets.
fn address(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
