//! Admin calls: topics and their configuration, as Kafka's Java `Admin` offers them.
//!
//! Each call is one request to any broker (in KRaft the broker forwards controller
//! requests) and returns one result per topic: the cluster accepts or refuses each topic
//! on its own, with a Kafka error code ([`ApiError`]). The call itself fails only when
//! the request does (connection, timeout, version negotiation, a top-level error code).
//! Requests are built for the negotiated version: a field a version lacks is left at its
//! default.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    DescribeLogDirsRequest, DescribeQuorumRequest, IncrementalAlterConfigsRequest,
    describe_quorum_request,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{Client, Target, topic_name};
use crate::config::ClientConfig;
use crate::error::{ApiError, Error, ErrorCode};

/// DescribeConfigs' and IncrementalAlterConfigs' resource type for a topic.
const RESOURCE_TYPE_TOPIC: i8 = 2;
/// IncrementalAlterConfigs' operations (Kafka's `AlterConfigOp.OpType`).
const CONFIG_OPERATION_SET: i8 = 0;
const CONFIG_OPERATION_DELETE: i8 = 1;

/// A topic's id, shown as Kafka shows it (URL-safe base64 without padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// The all-zero id, which brokers send when a version carries no id.
    pub const ZERO: TopicId = TopicId([0; 16]);
}

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0))
    }
}

/// A topic as `list_topics` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicListing {
    pub name: String,
    pub topic_id: TopicId,
    /// Whether the topic is internal to the cluster (`__consumer_offsets`, ...).
    pub is_internal: bool,
}

/// A topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    pub name: String,
    pub topic_id: TopicId,
    pub is_internal: bool,
    /// By partition index.
    pub partitions: Vec<PartitionInfo>,
}

/// One partition's replicas as the cluster metadata has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    /// The leader's broker id, `None` when the partition has no leader.
    pub leader: Option<i32>,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline_replicas: Vec<i32>,
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    pub name: String,
    /// `None`: the broker's `num.partitions`.
    pub num_partitions: Option<i32>,
    /// `None`: the broker's `default.replication.factor`.
    pub replication_factor: Option<i16>,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...), in the order given.
    pub configs: Vec<(String, String)>,
}

/// What the cluster reports for a created topic (CreateTopics v5+; older versions leave
/// the counts at -1 and v7- the id at zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    pub topic_id: TopicId,
    pub num_partitions: i32,
    pub replication_factor: i16,
}

/// Where a config value comes from (Kafka's `ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    DynamicTopicConfig,
    DynamicBrokerConfig,
    DynamicDefaultBrokerConfig,
    StaticBrokerConfig,
    DefaultConfig,
    DynamicBrokerLoggerConfig,
    ClientMetricsConfig,
    GroupConfig,
    /// UNKNOWN (0) or a code this client does not know.
    Unknown(i8),
}

impl ConfigSource {
    fn from_code(code: i8) -> ConfigSource {
        match code {
            1 => ConfigSource::DynamicTopicConfig,
            2 => ConfigSource::DynamicBrokerConfig,
            3 => ConfigSource::DynamicDefaultBrokerConfig,
            4 => ConfigSource::StaticBrokerConfig,
            5 => ConfigSource::DefaultConfig,
            6 => ConfigSource::DynamicBrokerLoggerConfig,
            7 => ConfigSource::ClientMetricsConfig,
            8 => ConfigSource::GroupConfig,
            other => ConfigSource::Unknown(other),
        }
    }
}

/// One config of a resource, as DescribeConfigs returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` for a sensitive value or one that is not set.
    pub value: Option<String>,
    pub source: ConfigSource,
    pub is_read_only: bool,
    pub is_sensitive: bool,
}

impl ConfigEntry {
    /// Whether the value is Kafka's default rather than set anywhere in the cluster.
    pub fn is_default(&self) -> bool {
        self.source == ConfigSource::DefaultConfig
    }
}

/// One change to a topic's configs, as IncrementalAlterConfigs carries it (Kafka's
/// `AlterConfigOp` with SET or DELETE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterConfigOp {
    /// Override the config on the topic.
    Set { name: String, value: String },
    /// Remove the topic's override, so the broker's setting or Kafka's default applies.
    Delete { name: String },
}

impl AlterConfigOp {
    fn to_alterable(&self) -> AlterableConfig {
        let (name, operation, value) = match self {
            AlterConfigOp::Set { name, value } => (name, CONFIG_OPERATION_SET, Some(value)),
            AlterConfigOp::Delete { name } => (name, CONFIG_OPERATION_DELETE, None),
        };
        AlterableConfig::default()
            .with_name(StrBytes::from_string(name.clone()))
            .with_config_operation(operation)
            .with_value(value.map(|value| StrBytes::from_string(value.clone())))
    }
}

/// One result per topic name.
pub type TopicResults<T> = BTreeMap<String, Result<T, ApiError>>;

/// What `describe_cluster` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    pub cluster_id: Option<String>,
    pub controller_id: Option<i32>,
    pub brokers: BTreeMap<i32, String>,
}

/// The admin client: topics, configs, the cluster, groups and offsets.
pub struct Admin {
    client: Client,
}

impl Admin {
    /// Connects to the cluster `config.bootstrap_servers` leads to.
    pub async fn connect(config: ClientConfig) -> Result<Admin, Error> {
        Ok(Admin {
            client: Client::connect(config).await?,
        })
    }

    /// The client underneath, for requests this type does not wrap.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Every topic in the cluster, internal ones included, by name.
    pub async fn list_topics(&self) -> Result<Vec<TopicListing>, Error> {
        let response = self.client.metadata(None).await?;
        let mut topics: Vec<TopicListing> = response
            .topics
            .iter()
            .filter(|topic| topic.error_code == ErrorCode::NONE.0)
            .filter_map(|topic| {
                Some(TopicListing {
                    name: topic.name.as_ref()?.to_string(),
                    topic_id: TopicId(*topic.topic_id.as_bytes()),
                    is_internal: topic.is_internal,
                })
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(topics)
    }

    /// The partitions of each named topic (UNKNOWN_TOPIC_OR_PARTITION for a topic that
    /// does not exist).
    pub async fn describe_topics(
        &self,
        names: &[String],
    ) -> Result<TopicResults<TopicDescription>, Error> {
        let response = self.client.metadata(Some(names)).await?;
        let mut results = unanswered(names);
        for topic in response.topics {
            let Some(name) = topic.name.map(|name| name.to_string()) else {
                continue;
            };
            let result = ErrorCode(topic.error_code).check(None).map(|()| {
                let mut partitions: Vec<PartitionInfo> = topic
                    .partitions
                    .into_iter()
                    .map(|partition| PartitionInfo {
                        partition: partition.partition_index,
                        leader: (partition.leader_id.0 >= 0).then_some(partition.leader_id.0),
                        leader_epoch: partition.leader_epoch,
                        replicas: ids(&partition.replica_nodes),
                        isr: ids(&partition.isr_nodes),
                        offline_replicas: ids(&partition.offline_replicas),
                    })
                    .collect();
                partitions.sort_by_key(|partition| partition.partition);
                TopicDescription {
                    name: name.clone(),
                    topic_id: TopicId(*topic.topic_id.as_bytes()),
                    is_internal: topic.is_internal,
                    partitions,
                }
            });
            results.insert(name, result);
        }
        Ok(results)
    }

    /// Creates topics (or, with `validate_only`, only checks that they could be created).
    pub async fn create_topics(
        &self,
        topics: &[NewTopic],
        validate_only: bool,
    ) -> Result<TopicResults<CreatedTopic>, Error> {
        let creatable: Vec<CreatableTopic> = topics
            .iter()
            .map(|topic| {
                CreatableTopic::default()
                    .with_name(topic_name(&topic.name))
                    .with_num_partitions(topic.num_partitions.unwrap_or(-1))
                    .with_replication_factor(topic.replication_factor.unwrap_or(-1))
                    .with_configs(
                        topic
                            .configs
                            .iter()
                            .map(|(name, value)| {
                                CreatableTopicConfig::default()
                                    .with_name(StrBytes::from_string(name.clone()))
                                    .with_value(Some(StrBytes::from_string(value.clone())))
                            })
                            .collect(),
                    )
            })
            .collect();
        let timeout_ms = self.timeout_ms();
        let response = self
            .client
            .send(Target::Any, |_| {
                CreateTopicsRequest::default()
                    .with_topics(creatable)
                    .with_timeout_ms(timeout_ms)
                    .with_validate_only(validate_only)
            })
            .await?;
        let names: Vec<String> = topics.iter().map(|topic| topic.name.clone()).collect();
        let mut results = unanswered(&names);
        for topic in response.topics {
            let result = ErrorCode(topic.error_code)
                .check(topic.error_message.as_deref())
                .map(|()| CreatedTopic {
                    topic_id: TopicId(*topic.topic_id.as_bytes()),
                    num_partitions: topic.num_partitions,
                    replication_factor: topic.replication_factor,
                });
            results.insert(topic.name.to_string(), result);
        }
        Ok(results)
    }

    /// Deletes topics by name.
    pub async fn delete_topics(&self, names: &[String]) -> Result<TopicResults<()>, Error> {
        let timeout_ms = self.timeout_ms();
        let response = self
            .client
            .send(Target::Any, |version| {
                let request = DeleteTopicsRequest::default().with_timeout_ms(timeout_ms);
                // v6 names topics by name or id; earlier versions by name only.
                if version >= 6 {
                    request.with_topics(
                        names
                            .iter()
                            .map(|name| {
                                DeleteTopicState::default().with_name(Some(topic_name(name)))
                            })
                            .collect(),
                    )
                } else {
                    request.with_topic_names(names.iter().map(|name| topic_name(name)).collect())
                }
            })
            .await?;
        let mut results = unanswered(names);
        for topic in response.responses {
            let Some(name) = topic.name else {
                continue;
            };
            let result = ErrorCode(topic.error_code).check(topic.error_message.as_deref());
            results.insert(name.to_string(), result);
        }
        Ok(results)
    }

    /// The cluster as Kafka's `describeCluster` shows it (from Metadata): its id, the
    /// controller id the brokers report, and every broker (id → `host:port`).
    pub async fn describe_cluster(&self) -> Result<ClusterDescription, Error> {
        self.client.metadata(Some(&[])).await?;
        Ok(ClusterDescription {
            cluster_id: self.client.cluster_id(),
            controller_id: self.client.controller_id(),
            brokers: self.client.brokers(),
        })
    }

    /// Every config of each named topic, in the order the broker lists them.
    pub async fn describe_topic_configs(
        &self,
        names: &[String],
    ) -> Result<TopicResults<Vec<ConfigEntry>>, Error> {
        let response = self
            .client
            .send(Target::Any, |_| {
                DescribeConfigsRequest::default().with_resources(
                    names
                        .iter()
                        .map(|name| {
                            DescribeConfigsResource::default()
                                .with_resource_type(RESOURCE_TYPE_TOPIC)
                                .with_resource_name(StrBytes::from_string(name.clone()))
                                .with_configuration_keys(None)
                        })
                        .collect(),
                )
            })
            .await?;
        let mut results = unanswered(names);
        for resource in response.results {
            if resource.resource_type != RESOURCE_TYPE_TOPIC {
                continue;
            }
            let result = ErrorCode(resource.error_code)
                .check(resource.error_message.as_deref())
                .map(|()| {
                    resource
                        .configs
                        .into_iter()
                        .map(|config| ConfigEntry {
                            name: config.name.to_string(),
                            value: config.value.map(|value| value.to_string()),
                            source: ConfigSource::from_code(config.config_source),
                            is_read_only: config.read_only,
                            is_sensitive: config.is_sensitive,
                        })
                        .collect()
                });
            results.insert(resource.resource_name.to_string(), result);
        }
        Ok(results)
    }

    /// Applies each topic's config changes, in order, with IncrementalAlterConfigs (or,
    /// with `validate_only`, only checks that they would apply). The cluster applies all
    /// of a topic's changes or none of them.
    pub async fn incremental_alter_topic_configs(
        &self,
        changes: &BTreeMap<String, Vec<AlterConfigOp>>,
        validate_only: bool,
    ) -> Result<TopicResults<()>, Error> {
        let resources: Vec<AlterConfigsResource> = changes
            .iter()
            .map(|(name, operations)| {
                AlterConfigsResource::default()
                    .with_resource_type(RESOURCE_TYPE_TOPIC)
                    .with_resource_name(StrBytes::from_string(name.clone()))
                    .with_configs(operations.iter().map(AlterConfigOp::to_alterable).collect())
            })
            .collect();
        let response = self
            .client
            .send(Target::Any, |_| {
                IncrementalAlterConfigsRequest::default()
                    .with_resources(resources)
                    .with_validate_only(validate_only)
            })
            .await?;
        let names: Vec<String> = changes.keys().cloned().collect();
        let mut results = unanswered(&names);
        for resource in response.responses {
            if resource.resource_type != RESOURCE_TYPE_TOPIC {
                continue;
            }
            let result = ErrorCode(resource.error_code).check(resource.error_message.as_deref());
            results.insert(resource.resource_name.to_string(), result);
        }
        Ok(results)
    }

    /// Grows each topic to the given total number of partitions with CreatePartitions (or,
    /// with `validate_only`, only checks that it could), placing the new replicas as the
    /// cluster chooses. A count that is not above the current one is INVALID_PARTITIONS.
    pub async fn create_partitions(
        &self,
        total_counts: &BTreeMap<String, i32>,
        validate_only: bool,
    ) -> Result<TopicResults<()>, Error> {
        let topics: Vec<CreatePartitionsTopic> = total_counts
            .iter()
            .map(|(name, count)| {
                CreatePartitionsTopic::default()
                    .with_name(topic_name(name))
                    .with_count(*count)
                    .with_assignments(None)
            })
            .collect();
        let timeout_ms = self.timeout_ms();
        let response = self
            .client
            .send(Target::Any, |_| {
                CreatePartitionsRequest::default()
                    .with_topics(topics)
                    .with_timeout_ms(timeout_ms)
                    .with_validate_only(validate_only)
            })
            .await?;
        let names: Vec<String> = total_counts.keys().cloned().collect();
        let mut results = unanswered(&names);
        for topic in response.results {
            let result = ErrorCode(topic.error_code).check(topic.error_message.as_deref());
            results.insert(topic.name.to_string(), result);
        }
        Ok(results)
    }

    /// The timeout the broker is given for controller operations: `request.timeout.ms`,
    /// so it answers before the client gives up.
    fn timeout_ms(&self) -> i32 {
        i32::try_from(self.client.config().request_timeout_ms).unwrap_or(i32::MAX)
    }
}

/// A result for every requested name, until the response says otherwise: a broker that
/// leaves a topic out has not handled it.
fn unanswered<T>(names: &[String]) -> TopicResults<T> {
    names
        .iter()
        .map(|name| {
            let error = ApiError {
                code: ErrorCode::UNKNOWN_SERVER_ERROR,
                message: Some(format!("the response has no result for topic '{name}'")),
            };
            (name.clone(), Err(error))
        })
        .collect()
}

fn ids(brokers: &[kafka_protocol::messages::BrokerId]) -> Vec<i32> {
    brokers.iter().map(|broker| broker.0).collect()
}

/// One replica of the metadata quorum (DescribeQuorum's ReplicaState).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumReplica {
    pub id: i32,
    /// Base64 (Kafka's form) of the replica's log directory id; empty before v2.
    pub directory_id: String,
    pub log_end_offset: i64,
    /// -1 when unknown.
    pub last_fetch_timestamp: i64,
    pub last_caught_up_timestamp: i64,
}

/// The metadata quorum's state, as `kafka-metadata-quorum describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumInfo {
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<QuorumReplica>,
    pub observers: Vec<QuorumReplica>,
}

impl Admin {
    /// The state of the metadata quorum (`__cluster_metadata-0`), with DescribeQuorum.
    pub async fn describe_quorum(&self) -> Result<QuorumInfo, Error> {
        let response = self
            .client
            .send(Target::Any, |_| {
                DescribeQuorumRequest::default().with_topics(vec![
                    describe_quorum_request::TopicData::default()
                        .with_topic_name(topic_name("__cluster_metadata"))
                        .with_partitions(vec![
                            describe_quorum_request::PartitionData::default()
                                .with_partition_index(0),
                        ]),
                ])
            })
            .await?;
        ErrorCode(response.error_code).check(response.error_message.as_deref())?;
        let partition = response
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .next()
            .ok_or_else(|| Error::Protocol {
                address: String::new(),
                reason: "DescribeQuorum answered no partition".into(),
            })?;
        ErrorCode(partition.error_code).check(partition.error_message.as_deref())?;
        let replica =
            |r: kafka_protocol::messages::describe_quorum_response::ReplicaState| QuorumReplica {
                id: r.replica_id.0,
                directory_id: if r.replica_directory_id.is_nil() {
                    String::new()
                } else {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .encode(r.replica_directory_id.as_bytes())
                },
                log_end_offset: r.log_end_offset,
                last_fetch_timestamp: r.last_fetch_timestamp,
                last_caught_up_timestamp: r.last_caught_up_timestamp,
            };
        Ok(QuorumInfo {
            leader_id: partition.leader_id.0,
            leader_epoch: partition.leader_epoch,
            high_watermark: partition.high_watermark,
            voters: partition.current_voters.into_iter().map(replica).collect(),
            observers: partition.observers.into_iter().map(replica).collect(),
        })
    }
}

/// One log directory of a broker, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirDescription {
    pub path: String,
    /// NONE, or KAFKA_STORAGE_ERROR for a directory that failed.
    pub error: Option<ApiError>,
    /// The directory's volume size and free space (v4+; -1 when unknown).
    pub total_bytes: i64,
    pub usable_bytes: i64,
    /// Each partition's size on disk in bytes, by topic and partition.
    pub partition_sizes: BTreeMap<(String, i32), i64>,
}

impl Admin {
    /// Every log directory of broker `node_id` and the size of each partition in it
    /// (DescribeLogDirs for all topics, sent to that broker).
    pub async fn describe_log_dirs(&self, node_id: i32) -> Result<Vec<LogDirDescription>, Error> {
        let response = self
            .client
            .send(crate::client::Target::Node(node_id), |_| {
                DescribeLogDirsRequest::default().with_topics(None)
            })
            .await?;
        ErrorCode(response.error_code).check(None)?;
        Ok(response
            .results
            .into_iter()
            .map(|dir| {
                let mut partition_sizes = BTreeMap::new();
                for topic in dir.topics {
                    for partition in topic.partitions {
                        if !partition.is_future_key {
                            partition_sizes.insert(
                                (topic.name.to_string(), partition.partition_index),
                                partition.partition_size,
                            );
                        }
                    }
                }
                LogDirDescription {
                    path: dir.log_dir.to_string(),
                    error: ErrorCode(dir.error_code).check(None).err(),
                    total_bytes: dir.total_bytes,
                    usable_bytes: dir.usable_bytes,
                    partition_sizes,
                }
            })
            .collect())
    }
}
