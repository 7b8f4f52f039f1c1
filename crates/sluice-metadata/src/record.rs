//! The metadata records Sluice writes, in Kafka 4.1's schemas and framing.
//!
//! A record is the value of a v2-batch record (key null) in the metadata log:
//! `uvarint frame version (1) | uvarint record type (apiKey) | uvarint version | body`,
//! the body in the flexible encoding of that version. Record types Sluice does not model
//! decode as [`MetadataRecord::Unknown`] and re-encode byte for byte, so a log written by
//! a newer peer passes through.

use crate::MetadataError;
use crate::codec::{Reader, Uuid, Writer, encoded};

const FRAME_VERSION: u32 = 1;

/// TopicRecord (apiKey 2, v0): a topic and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    pub name: String,
    pub topic_id: Uuid,
}

/// PartitionRecord (apiKey 3, v0-2): a partition's full state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRecord {
    pub partition_id: i32,
    pub topic_id: Uuid,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    pub leader: i32,
    /// Tagged (tag 0); 0 = RECOVERED, 1 = RECOVERING.
    pub leader_recovery_state: i8,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// v1+: one log directory id per replica.
    pub directories: Vec<Uuid>,
    /// v2+, tagged (tag 1).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// v2+, tagged (tag 2).
    pub last_known_elr: Option<Vec<i32>>,
}

impl PartitionRecord {
    /// A new partition as Kafka's controller creates it: every replica in the ISR, the
    /// first replica leading, both epochs 0, recovered, one directory per replica.
    pub fn new_partition(
        topic_id: Uuid,
        partition_id: i32,
        replicas: Vec<i32>,
        directories: Vec<Uuid>,
    ) -> Self {
        PartitionRecord {
            partition_id,
            topic_id,
            isr: replicas.clone(),
            leader: replicas.first().copied().unwrap_or(-1),
            replicas,
            removing_replicas: Vec::new(),
            adding_replicas: Vec::new(),
            leader_recovery_state: 0,
            leader_epoch: 0,
            partition_epoch: 0,
            directories,
            eligible_leader_replicas: None,
            last_known_elr: None,
        }
    }
}

/// PartitionChangeRecord (apiKey 5, v0-2): a change to one partition; `None` (or the
/// "no change" value) leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChangeRecord {
    pub partition_id: i32,
    pub topic_id: Uuid,
    /// Tag 0.
    pub isr: Option<Vec<i32>>,
    /// Tag 1; -2 = no change, -1 = no leader.
    pub leader: i32,
    /// Tag 2.
    pub replicas: Option<Vec<i32>>,
    /// Tag 3.
    pub removing_replicas: Option<Vec<i32>>,
    /// Tag 4.
    pub adding_replicas: Option<Vec<i32>>,
    /// Tag 5; -1 = no change.
    pub leader_recovery_state: i8,
    /// Tag 6 (v2+).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// Tag 7 (v2+).
    pub last_known_elr: Option<Vec<i32>>,
    /// Tag 8 (v1+).
    pub directories: Option<Vec<Uuid>>,
}

impl PartitionChangeRecord {
    /// A change record for the partition that changes nothing yet.
    pub fn new(topic_id: Uuid, partition_id: i32) -> Self {
        PartitionChangeRecord {
            partition_id,
            topic_id,
            isr: None,
            leader: -2,
            replicas: None,
            removing_replicas: None,
            adding_replicas: None,
            leader_recovery_state: -1,
            eligible_leader_replicas: None,
            last_known_elr: None,
            directories: None,
        }
    }
}

/// `ConfigResource.Type` of a topic ([`ConfigRecord::resource_type`]).
pub const TOPIC_RESOURCE: i8 = 2;
/// `ConfigResource.Type` of a broker ([`ConfigRecord::resource_type`]).
pub const BROKER_RESOURCE: i8 = 4;

/// ConfigRecord (apiKey 4, v0): sets (`value` some) or deletes one config key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRecord {
    /// `ConfigResource.Type`: 2 TOPIC, 4 BROKER, 16 CLIENT_METRICS, 32 GROUP.
    pub resource_type: i8,
    pub resource_name: String,
    pub name: String,
    pub value: Option<String>,
}

/// One endpoint of a registered broker (RegisterBrokerRecord.EndPoints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's `SecurityProtocol` id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL.
    pub security_protocol: i16,
}

/// RegisterBrokerRecord (apiKey 0, v0-3): a broker's registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBrokerRecord {
    pub broker_id: i32,
    /// v2+.
    pub is_migrating_zk_broker: bool,
    pub incarnation_id: Uuid,
    pub broker_epoch: i64,
    pub endpoints: Vec<BrokerEndpoint>,
    /// (name, min supported, max supported).
    pub features: Vec<(String, i16, i16)>,
    pub rack: Option<String>,
    pub fenced: bool,
    /// v1+.
    pub in_controlled_shutdown: bool,
    /// v3+, tagged (tag 0).
    pub log_dirs: Vec<Uuid>,
}

/// UserScramCredentialRecord (apiKey 11, v0): a user's SCRAM credential for one
/// mechanism (RFC 5802's stored form: the password itself is never kept).
#[derive(Clone, PartialEq, Eq)]
pub struct UserScramCredentialRecord {
    pub name: String,
    /// Kafka's `ScramMechanism` type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
    pub mechanism: i8,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl std::fmt::Debug for UserScramCredentialRecord {
    /// The keys stay out of logs, as Kafka's `ScramCredentialValue` hides them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserScramCredentialRecord")
            .field("name", &self.name)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// The records Sluice models, with the version each is written at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRecord {
    RegisterBroker(RegisterBrokerRecord),
    Topic(TopicRecord),
    Partition(PartitionRecord),
    PartitionChange(PartitionChangeRecord),
    /// RemoveTopicRecord (apiKey 9): the topic, its partitions and its configs go.
    RemoveTopic {
        topic_id: Uuid,
    },
    Config(ConfigRecord),
    /// FeatureLevelRecord (apiKey 12): a finalized feature level (`metadata.version`, ...).
    FeatureLevel {
        name: String,
        level: i16,
    },
    /// ProducerIdsRecord (apiKey 15): a block of producer ids was handed to a broker;
    /// ids below `next_producer_id` are taken.
    ProducerIds {
        broker_id: i32,
        broker_epoch: i64,
        next_producer_id: i64,
    },
    /// UnregisterBrokerRecord (apiKey 1): a broker was removed from the cluster.
    UnregisterBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// BrokerRegistrationChangeRecord (apiKey 17): a registered broker was fenced or
    /// unfenced (`fenced`: 1 fenced, -1 unfenced, 0 no change) or began a controlled
    /// shutdown (`in_controlled_shutdown`: 1, or 0 for no change).
    BrokerRegistrationChange {
        broker_id: i32,
        broker_epoch: i64,
        fenced: i8,
        in_controlled_shutdown: i8,
    },
    /// NoOpRecord (apiKey 20): the controller's heartbeat in the log.
    NoOp,
    /// UserScramCredentialRecord (apiKey 11): a SCRAM credential set or replaced.
    UserScramCredential(UserScramCredentialRecord),
    /// RemoveUserScramCredentialRecord (apiKey 22): a user's credential for one
    /// mechanism removed.
    RemoveUserScramCredential {
        name: String,
        mechanism: i8,
    },
    /// AccessControlEntryRecord (apiKey 18): an ACL was created, under its id.
    AccessControlEntry {
        id: Uuid,
        acl: crate::acl::Acl,
    },
    /// RemoveAccessControlEntryRecord (apiKey 19): the ACL with this id was deleted.
    RemoveAccessControlEntry {
        id: Uuid,
    },
    /// Any other record type, kept as its body.
    Unknown {
        api_key: u32,
        body: Vec<u8>,
    },
}

impl MetadataRecord {
    /// The record type id (Kafka's apiKey for metadata records).
    pub fn api_key(&self) -> u32 {
        match self {
            MetadataRecord::RegisterBroker(_) => 0,
            MetadataRecord::UnregisterBroker { .. } => 1,
            MetadataRecord::Topic(_) => 2,
            MetadataRecord::Partition(_) => 3,
            MetadataRecord::Config(_) => 4,
            MetadataRecord::PartitionChange(_) => 5,
            MetadataRecord::RemoveTopic { .. } => 9,
            MetadataRecord::FeatureLevel { .. } => 12,
            MetadataRecord::ProducerIds { .. } => 15,
            MetadataRecord::BrokerRegistrationChange { .. } => 17,
            MetadataRecord::NoOp => 20,
            MetadataRecord::UserScramCredential(_) => 11,
            MetadataRecord::RemoveUserScramCredential { .. } => 22,
            MetadataRecord::AccessControlEntry { .. } => 18,
            MetadataRecord::RemoveAccessControlEntry { .. } => 19,
            MetadataRecord::Unknown { api_key, .. } => *api_key,
        }
    }

    /// The highest version Sluice writes of this record type (Kafka 4.1's at
    /// metadata.version 4.1).
    pub fn latest_version(&self) -> u32 {
        match self {
            MetadataRecord::Partition(_) | MetadataRecord::PartitionChange(_) => 2,
            MetadataRecord::RegisterBroker(_) => 3,
            MetadataRecord::BrokerRegistrationChange { .. } => 1,
            _ => 0,
        }
    }

    /// Encodes the record value: frame header, then the body at `version`.
    pub fn encode(&self, version: u32) -> Result<Vec<u8>, MetadataError> {
        let max = match self {
            MetadataRecord::Unknown { .. } => u32::MAX,
            other => other.latest_version(),
        };
        if version > max {
            return Err(MetadataError::Version {
                api_key: self.api_key(),
                version,
            });
        }
        let mut w = Writer::new();
        w.uvarint(FRAME_VERSION);
        w.uvarint(self.api_key());
        w.uvarint(version);
        match self {
            MetadataRecord::RegisterBroker(b) => {
                w.i32(b.broker_id);
                if version >= 2 {
                    w.bool(b.is_migrating_zk_broker);
                }
                w.uuid(&b.incarnation_id);
                w.i64(b.broker_epoch);
                w.uvarint(b.endpoints.len() as u32 + 1);
                for endpoint in &b.endpoints {
                    w.string(&endpoint.name);
                    w.string(&endpoint.host);
                    w.u16(endpoint.port);
                    w.i16(endpoint.security_protocol);
                    w.tagged_fields(&[]);
                }
                w.uvarint(b.features.len() as u32 + 1);
                for (name, min, max) in &b.features {
                    w.string(name);
                    w.i16(*min);
                    w.i16(*max);
                    w.tagged_fields(&[]);
                }
                w.nullable_string(b.rack.as_deref());
                w.bool(b.fenced);
                if version >= 1 {
                    w.bool(b.in_controlled_shutdown);
                }
                let mut tags = Vec::new();
                if version >= 3 && !b.log_dirs.is_empty() {
                    tags.push((0, encoded(|w| w.uuid_array(&b.log_dirs))));
                }
                w.tagged_fields(&tags);
            }
            MetadataRecord::Topic(topic) => {
                w.string(&topic.name);
                w.uuid(&topic.topic_id);
                w.tagged_fields(&[]);
            }
            MetadataRecord::Partition(p) => {
                w.i32(p.partition_id);
                w.uuid(&p.topic_id);
                w.i32_array(&p.replicas);
                w.i32_array(&p.isr);
                w.i32_array(&p.removing_replicas);
                w.i32_array(&p.adding_replicas);
                w.i32(p.leader);
                w.i32(p.leader_epoch);
                w.i32(p.partition_epoch);
                if version >= 1 {
                    w.uuid_array(&p.directories);
                }
                let mut tags = Vec::new();
                if p.leader_recovery_state != 0 {
                    tags.push((0, vec![p.leader_recovery_state as u8]));
                }
                if version >= 2 {
                    if let Some(elr) = &p.eligible_leader_replicas {
                        tags.push((1, encoded(|w| w.i32_array(elr))));
                    }
                    if let Some(last) = &p.last_known_elr {
                        tags.push((2, encoded(|w| w.i32_array(last))));
                    }
                }
                w.tagged_fields(&tags);
            }
            MetadataRecord::PartitionChange(c) => {
                w.i32(c.partition_id);
                w.uuid(&c.topic_id);
                let array = |values: &Option<Vec<i32>>| {
                    values.as_ref().map(|v| encoded(|w| w.i32_array(v)))
                };
                let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
                let mut push = |tag: u32, value: Option<Vec<u8>>| {
                    if let Some(value) = value {
                        tags.push((tag, value));
                    }
                };
                push(0, array(&c.isr));
                push(1, (c.leader != -2).then(|| c.leader.to_be_bytes().to_vec()));
                push(2, array(&c.replicas));
                push(3, array(&c.removing_replicas));
                push(4, array(&c.adding_replicas));
                push(
                    5,
                    (c.leader_recovery_state != -1).then(|| vec![c.leader_recovery_state as u8]),
                );
                if version >= 2 {
                    push(6, array(&c.eligible_leader_replicas));
                    push(7, array(&c.last_known_elr));
                }
                if version >= 1 {
                    push(
                        8,
                        c.directories.as_ref().map(|d| encoded(|w| w.uuid_array(d))),
                    );
                }
                w.tagged_fields(&tags);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                w.uuid(topic_id);
                w.tagged_fields(&[]);
            }
            MetadataRecord::Config(config) => {
                w.i8(config.resource_type);
                w.string(&config.resource_name);
                w.string(&config.name);
                w.nullable_string(config.value.as_deref());
                w.tagged_fields(&[]);
            }
            MetadataRecord::FeatureLevel { name, level } => {
                w.string(name);
                w.i16(*level);
                w.tagged_fields(&[]);
            }
            MetadataRecord::ProducerIds {
                broker_id,
                broker_epoch,
                next_producer_id,
            } => {
                w.i32(*broker_id);
                w.i64(*broker_epoch);
                w.i64(*next_producer_id);
                w.tagged_fields(&[]);
            }
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => {
                w.i32(*broker_id);
                w.i64(*broker_epoch);
                let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
                if *fenced != 0 {
                    tags.push((0, vec![*fenced as u8]));
                }
                if version >= 1 && *in_controlled_shutdown != 0 {
                    tags.push((1, vec![*in_controlled_shutdown as u8]));
                }
                w.tagged_fields(&tags);
            }
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                w.i32(*broker_id);
                w.i64(*broker_epoch);
                w.tagged_fields(&[]);
            }
            MetadataRecord::NoOp => w.tagged_fields(&[]),
            MetadataRecord::UserScramCredential(c) => {
                w.string(&c.name);
                w.i8(c.mechanism);
                w.bytes(&c.salt);
                w.bytes(&c.stored_key);
                w.bytes(&c.server_key);
                w.i32(c.iterations);
                w.tagged_fields(&[]);
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                w.string(name);
                w.i8(*mechanism);
                w.tagged_fields(&[]);
            }
            MetadataRecord::AccessControlEntry { id, acl } => {
                w.uuid(id);
                w.i8(acl.resource_type.code());
                w.string(&acl.resource_name);
                w.i8(acl.pattern_type.code());
                w.string(&acl.principal);
                w.string(&acl.host);
                w.i8(acl.operation.code());
                w.i8(acl.permission.code());
                w.tagged_fields(&[]);
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                w.uuid(id);
                w.tagged_fields(&[]);
            }
            MetadataRecord::Unknown { body, .. } => w.out.extend_from_slice(body),
        }
        Ok(w.out)
    }

    /// Decodes a record value; returns the record and the version it was written at.
    pub fn decode(value: &[u8]) -> Result<(MetadataRecord, u32), MetadataError> {
        let mut r = Reader::new(value);
        let frame_version = r.uvarint("frame version")?;
        if frame_version != FRAME_VERSION {
            return Err(MetadataError::FrameVersion(frame_version));
        }
        let api_key = r.uvarint("record type")?;
        let version = r.uvarint("version")?;
        let too_new = |max: u32| -> Result<(), MetadataError> {
            if version > max {
                Err(MetadataError::Version { api_key, version })
            } else {
                Ok(())
            }
        };
        let record = match api_key {
            0 => {
                too_new(3)?;
                let broker_id = r.i32("RegisterBrokerRecord.BrokerId")?;
                let is_migrating_zk_broker =
                    version >= 2 && r.bool("RegisterBrokerRecord.IsMigratingZkBroker")?;
                let incarnation_id = r.uuid("RegisterBrokerRecord.IncarnationId")?;
                let broker_epoch = r.i64("RegisterBrokerRecord.BrokerEpoch")?;
                let count = r.uvarint("RegisterBrokerRecord.EndPoints")?;
                let mut endpoints = Vec::new();
                for _ in 1..count {
                    endpoints.push(BrokerEndpoint {
                        name: r.string("BrokerEndpoint.Name")?,
                        host: r.string("BrokerEndpoint.Host")?,
                        port: r.u16("BrokerEndpoint.Port")?,
                        security_protocol: r.i16("BrokerEndpoint.SecurityProtocol")?,
                    });
                    r.tagged_fields()?;
                }
                let count = r.uvarint("RegisterBrokerRecord.Features")?;
                let mut features = Vec::new();
                for _ in 1..count {
                    let name = r.string("BrokerFeature.Name")?;
                    let min = r.i16("BrokerFeature.MinSupportedVersion")?;
                    let max = r.i16("BrokerFeature.MaxSupportedVersion")?;
                    r.tagged_fields()?;
                    features.push((name, min, max));
                }
                let rack = r.nullable_string("RegisterBrokerRecord.Rack")?;
                let fenced = r.bool("RegisterBrokerRecord.Fenced")?;
                let in_controlled_shutdown =
                    version >= 1 && r.bool("RegisterBrokerRecord.InControlledShutdown")?;
                let mut log_dirs = Vec::new();
                for (tag, bytes) in r.tagged_fields()? {
                    if tag == 0 && version >= 3 {
                        log_dirs = Reader::new(bytes)
                            .nullable_uuid_array("RegisterBrokerRecord.LogDirs")?
                            .unwrap_or_default();
                    }
                }
                MetadataRecord::RegisterBroker(RegisterBrokerRecord {
                    broker_id,
                    is_migrating_zk_broker,
                    incarnation_id,
                    broker_epoch,
                    endpoints,
                    features,
                    rack,
                    fenced,
                    in_controlled_shutdown,
                    log_dirs,
                })
            }
            2 => {
                too_new(0)?;
                let name = r.string("TopicRecord.Name")?;
                let topic_id = r.uuid("TopicRecord.TopicId")?;
                r.tagged_fields()?;
                MetadataRecord::Topic(TopicRecord { name, topic_id })
            }
            3 => {
                too_new(2)?;
                let partition_id = r.i32("PartitionRecord.PartitionId")?;
                let topic_id = r.uuid("PartitionRecord.TopicId")?;
                let replicas = r.i32_array("PartitionRecord.Replicas")?;
                let isr = r.i32_array("PartitionRecord.Isr")?;
                let removing_replicas = r.i32_array("PartitionRecord.RemovingReplicas")?;
                let adding_replicas = r.i32_array("PartitionRecord.AddingReplicas")?;
                let leader = r.i32("PartitionRecord.Leader")?;
                let leader_epoch = r.i32("PartitionRecord.LeaderEpoch")?;
                let partition_epoch = r.i32("PartitionRecord.PartitionEpoch")?;
                let directories = if version >= 1 {
                    r.nullable_uuid_array("PartitionRecord.Directories")?
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let mut record = PartitionRecord {
                    partition_id,
                    topic_id,
                    replicas,
                    isr,
                    removing_replicas,
                    adding_replicas,
                    leader,
                    leader_recovery_state: 0,
                    leader_epoch,
                    partition_epoch,
                    directories,
                    eligible_leader_replicas: None,
                    last_known_elr: None,
                };
                for (tag, bytes) in r.tagged_fields()? {
                    let mut field = Reader::new(bytes);
                    match tag {
                        0 => record.leader_recovery_state = field.i8("LeaderRecoveryState")?,
                        1 if version >= 2 => {
                            record.eligible_leader_replicas =
                                field.nullable_i32_array("EligibleLeaderReplicas")?
                        }
                        2 if version >= 2 => {
                            record.last_known_elr = field.nullable_i32_array("LastKnownElr")?
                        }
                        _ => {}
                    }
                }
                MetadataRecord::Partition(record)
            }
            4 => {
                too_new(0)?;
                let resource_type = r.i8("ConfigRecord.ResourceType")?;
                let resource_name = r.string("ConfigRecord.ResourceName")?;
                let name = r.string("ConfigRecord.Name")?;
                let value = r.nullable_string("ConfigRecord.Value")?;
                r.tagged_fields()?;
                MetadataRecord::Config(ConfigRecord {
                    resource_type,
                    resource_name,
                    name,
                    value,
                })
            }
            5 => {
                too_new(2)?;
                let partition_id = r.i32("PartitionChangeRecord.PartitionId")?;
                let topic_id = r.uuid("PartitionChangeRecord.TopicId")?;
                let mut change = PartitionChangeRecord::new(topic_id, partition_id);
                for (tag, bytes) in r.tagged_fields()? {
                    let mut field = Reader::new(bytes);
                    match tag {
                        0 => change.isr = field.nullable_i32_array("Isr")?,
                        1 => change.leader = field.i32("Leader")?,
                        2 => change.replicas = field.nullable_i32_array("Replicas")?,
                        3 => {
                            change.removing_replicas =
                                field.nullable_i32_array("RemovingReplicas")?
                        }
                        4 => change.adding_replicas = field.nullable_i32_array("AddingReplicas")?,
                        5 => change.leader_recovery_state = field.i8("LeaderRecoveryState")?,
                        6 if version >= 2 => {
                            change.eligible_leader_replicas =
                                field.nullable_i32_array("EligibleLeaderReplicas")?
                        }
                        7 if version >= 2 => {
                            change.last_known_elr = field.nullable_i32_array("LastKnownElr")?
                        }
                        8 if version >= 1 => {
                            change.directories = field.nullable_uuid_array("Directories")?
                        }
                        _ => {}
                    }
                }
                MetadataRecord::PartitionChange(change)
            }
            9 => {
                too_new(0)?;
                let topic_id = r.uuid("RemoveTopicRecord.TopicId")?;
                r.tagged_fields()?;
                MetadataRecord::RemoveTopic { topic_id }
            }
            12 => {
                too_new(0)?;
                let name = r.string("FeatureLevelRecord.Name")?;
                let level = r.i16("FeatureLevelRecord.FeatureLevel")?;
                r.tagged_fields()?;
                MetadataRecord::FeatureLevel { name, level }
            }
            15 => {
                too_new(0)?;
                let broker_id = r.i32("ProducerIdsRecord.BrokerId")?;
                let broker_epoch = r.i64("ProducerIdsRecord.BrokerEpoch")?;
                let next_producer_id = r.i64("ProducerIdsRecord.NextProducerId")?;
                r.tagged_fields()?;
                MetadataRecord::ProducerIds {
                    broker_id,
                    broker_epoch,
                    next_producer_id,
                }
            }
            1 => {
                too_new(0)?;
                let broker_id = r.i32("UnregisterBrokerRecord.BrokerId")?;
                let broker_epoch = r.i64("UnregisterBrokerRecord.BrokerEpoch")?;
                r.tagged_fields()?;
                MetadataRecord::UnregisterBroker {
                    broker_id,
                    broker_epoch,
                }
            }
            17 => {
                too_new(2)?;
                let broker_id = r.i32("BrokerRegistrationChangeRecord.BrokerId")?;
                let broker_epoch = r.i64("BrokerRegistrationChangeRecord.BrokerEpoch")?;
                let mut fenced = 0;
                let mut in_controlled_shutdown = 0;
                for (tag, bytes) in r.tagged_fields()? {
                    let mut field = Reader::new(bytes);
                    match tag {
                        0 => fenced = field.i8("Fenced")?,
                        1 if version >= 1 => {
                            in_controlled_shutdown = field.i8("InControlledShutdown")?
                        }
                        _ => {}
                    }
                }
                MetadataRecord::BrokerRegistrationChange {
                    broker_id,
                    broker_epoch,
                    fenced,
                    in_controlled_shutdown,
                }
            }
            20 => {
                too_new(0)?;
                r.tagged_fields()?;
                MetadataRecord::NoOp
            }
            11 => {
                too_new(0)?;
                let name = r.string("UserScramCredentialRecord.Name")?;
                let mechanism = r.i8("UserScramCredentialRecord.Mechanism")?;
                let salt = r.bytes("UserScramCredentialRecord.Salt")?;
                let stored_key = r.bytes("UserScramCredentialRecord.StoredKey")?;
                let server_key = r.bytes("UserScramCredentialRecord.ServerKey")?;
                let iterations = r.i32("UserScramCredentialRecord.Iterations")?;
                r.tagged_fields()?;
                MetadataRecord::UserScramCredential(UserScramCredentialRecord {
                    name,
                    mechanism,
                    salt,
                    stored_key,
                    server_key,
                    iterations,
                })
            }
            22 => {
                too_new(0)?;
                let name = r.string("RemoveUserScramCredentialRecord.Name")?;
                let mechanism = r.i8("RemoveUserScramCredentialRecord.Mechanism")?;
                r.tagged_fields()?;
                MetadataRecord::RemoveUserScramCredential { name, mechanism }
            }
            18 => {
                use crate::acl::{Acl, AclOperation, AclPermission, PatternType, ResourceType};
                too_new(0)?;
                fn code<T>(
                    value: i8,
                    from: fn(i8) -> Option<T>,
                    what: &str,
                ) -> Result<T, MetadataError> {
                    from(value).ok_or_else(|| {
                        MetadataError::Malformed(format!(
                            "AccessControlEntryRecord.{what}: unknown code {value}"
                        ))
                    })
                }
                let id = r.uuid("AccessControlEntryRecord.Id")?;
                let resource_type = code(
                    r.i8("AccessControlEntryRecord.ResourceType")?,
                    ResourceType::from_code,
                    "ResourceType",
                )?;
                let resource_name = r.string("AccessControlEntryRecord.ResourceName")?;
                let pattern_type = code(
                    r.i8("AccessControlEntryRecord.PatternType")?,
                    PatternType::from_code,
                    "PatternType",
                )?;
                let principal = r.string("AccessControlEntryRecord.Principal")?;
                let host = r.string("AccessControlEntryRecord.Host")?;
                let operation = code(
                    r.i8("AccessControlEntryRecord.Operation")?,
                    AclOperation::from_code,
                    "Operation",
                )?;
                let permission = code(
                    r.i8("AccessControlEntryRecord.PermissionType")?,
                    AclPermission::from_code,
                    "PermissionType",
                )?;
                r.tagged_fields()?;
                MetadataRecord::AccessControlEntry {
                    id,
                    acl: Acl {
                        resource_type,
                        resource_name,
                        pattern_type,
                        principal,
                        host,
                        operation,
                        permission,
                    },
                }
            }
            19 => {
                too_new(0)?;
                let id = r.uuid("RemoveAccessControlEntryRecord.Id")?;
                r.tagged_fields()?;
                MetadataRecord::RemoveAccessControlEntry { id }
            }
            _ => MetadataRecord::Unknown {
                api_key,
                body: r.rest().to_vec(),
            },
        };
        if !r.is_empty() {
            return Err(MetadataError::Malformed(format!(
                "bytes left after record type {api_key} v{version}"
            )));
        }
        Ok((record, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ORDERS: Uuid = [
        5, 132, 5, 152, 60, 80, 75, 197, 150, 193, 114, 70, 229, 203, 229, 200,
    ];

    /// Bytes from Kafka 4.1.1's own log (docs/design/kraft-metadata-records.md).
    #[test]
    fn known_values_match_kafkas_bytes() {
        // Written by Kafka 4.1.1's MetadataRecordSerde (kafka-metadata jar) for the same
        // values.
        let scram = MetadataRecord::UserScramCredential(UserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 2,
            salt: vec![9, 9],
            stored_key: vec![8],
            server_key: vec![7, 7, 7],
            iterations: 8192,
        });
        let kafkas = [
            1u8, 11, 0, 6, 97, 108, 105, 99, 101, 2, 3, 9, 9, 2, 8, 4, 7, 7, 7, 0, 0, 32, 0, 0,
        ];
        assert_eq!(scram.encode(0).unwrap(), kafkas);
        assert_eq!(MetadataRecord::decode(&kafkas).unwrap(), (scram, 0));
        let remove = MetadataRecord::RemoveUserScramCredential {
            name: "alice".into(),
            mechanism: 1,
        };
        let kafkas = [1u8, 22, 0, 6, 97, 108, 105, 99, 101, 1, 0];
        assert_eq!(remove.encode(0).unwrap(), kafkas);
        assert_eq!(MetadataRecord::decode(&kafkas).unwrap(), (remove, 0));
        assert_eq!(
            MetadataRecord::NoOp.encode(0).unwrap(),
            vec![0x01, 0x14, 0x00, 0x00]
        );
        let topic = MetadataRecord::Topic(TopicRecord {
            name: "orders".into(),
            topic_id: ORDERS,
        });
        let mut expected = vec![0x01, 0x02, 0x00, 0x07];
        expected.extend_from_slice(b"orders");
        expected.extend_from_slice(&ORDERS);
        expected.push(0x00);
        assert_eq!(topic.encode(0).unwrap(), expected);
        assert_eq!(
            expected.len(),
            27,
            "Kafka's TopicRecord for \"orders\" is 27 bytes"
        );
        let remove = MetadataRecord::RemoveTopic { topic_id: ORDERS }
            .encode(0)
            .unwrap();
        assert_eq!(remove.len(), 20);
        // Value sizes of Kafka's records in the captured log.
        let partition = MetadataRecord::Partition(PartitionRecord::new_partition(
            ORDERS,
            0,
            vec![1],
            vec![[7; 16]],
        ));
        assert_eq!(partition.encode(2).unwrap().len(), 65);
        let mut change = PartitionChangeRecord::new(ORDERS, 0);
        change.isr = Some(vec![]);
        change.leader = -1;
        change.eligible_leader_replicas = Some(vec![1]);
        change.last_known_elr = Some(vec![1]);
        assert_eq!(
            MetadataRecord::PartitionChange(change)
                .encode(2)
                .unwrap()
                .len(),
            47
        );
        let config = MetadataRecord::Config(ConfigRecord {
            resource_type: 2,
            resource_name: "orders".into(),
            name: "retention.ms".into(),
            value: Some("86400000".into()),
        });
        assert_eq!(config.encode(0).unwrap().len(), 34);
        let feature = MetadataRecord::FeatureLevel {
            name: "metadata.version".into(),
            level: 27,
        };
        assert_eq!(feature.encode(0).unwrap().len(), 23);
    }

    fn ids() -> impl Strategy<Value = Vec<i32>> {
        prop::collection::vec(-1i32..10, 0..4)
    }

    fn record() -> impl Strategy<Value = (MetadataRecord, u32)> {
        let uuid = any::<[u8; 16]>();
        let endpoint = ("[A-Z_]{1,10}", "[a-z0-9.]{1,20}", any::<u16>(), 0i16..4).prop_map(
            |(name, host, port, security_protocol)| BrokerEndpoint {
                name,
                host,
                port,
                security_protocol,
            },
        );
        let registration = (
            (any::<i32>(), any::<bool>(), uuid, any::<i64>()),
            proptest::collection::vec(endpoint, 0..3),
            proptest::collection::vec(("[a-z.]{1,20}", any::<i16>(), any::<i16>()), 0..3),
            proptest::option::of("[a-z0-9]{0,8}"),
            (any::<bool>(), any::<bool>()),
            proptest::collection::vec(uuid, 0..3),
        )
            .prop_map(
                |(
                    (broker_id, is_migrating_zk_broker, incarnation_id, broker_epoch),
                    endpoints,
                    features,
                    rack,
                    (fenced, in_controlled_shutdown),
                    log_dirs,
                )| {
                    (
                        MetadataRecord::RegisterBroker(RegisterBrokerRecord {
                            broker_id,
                            is_migrating_zk_broker,
                            incarnation_id,
                            broker_epoch,
                            endpoints,
                            features,
                            rack,
                            fenced,
                            in_controlled_shutdown,
                            log_dirs,
                        }),
                        3,
                    )
                },
            );
        prop_oneof![
            registration,
            ("[a-z._-]{1,20}", uuid).prop_map(|(name, topic_id)| (
                MetadataRecord::Topic(TopicRecord { name, topic_id }),
                0
            )),
            (
                any::<i32>(),
                uuid,
                ids(),
                ids(),
                any::<i32>(),
                0i8..2,
                any::<i32>(),
                prop::option::of(ids()),
                0u32..3
            )
                .prop_map(
                    |(
                        partition_id,
                        topic_id,
                        replicas,
                        isr,
                        leader,
                        recovery,
                        epoch,
                        elr,
                        version,
                    )| {
                        let directories = if version >= 1 {
                            vec![[3; 16]; replicas.len()]
                        } else {
                            vec![]
                        };
                        let (elr, last) = if version >= 2 {
                            (elr.clone(), elr)
                        } else {
                            (None, None)
                        };
                        (
                            MetadataRecord::Partition(PartitionRecord {
                                partition_id,
                                topic_id,
                                replicas,
                                isr,
                                removing_replicas: vec![],
                                adding_replicas: vec![2],
                                leader,
                                leader_recovery_state: recovery,
                                leader_epoch: epoch,
                                partition_epoch: epoch,
                                directories,
                                eligible_leader_replicas: elr,
                                last_known_elr: last,
                            }),
                            version,
                        )
                    }
                ),
            (
                any::<i32>(),
                uuid,
                prop::option::of(ids()),
                -2i32..5,
                prop::option::of(ids()),
                -1i8..2,
                0u32..3
            )
                .prop_map(
                    |(partition, topic_id, isr, leader, replicas, recovery, version)| {
                        let mut change = PartitionChangeRecord::new(topic_id, partition);
                        change.isr = isr.clone();
                        change.leader = leader;
                        change.replicas = replicas;
                        change.leader_recovery_state = recovery;
                        if version >= 1 {
                            change.directories = Some(vec![[9; 16]]);
                        }
                        if version >= 2 {
                            change.eligible_leader_replicas = isr;
                        }
                        (MetadataRecord::PartitionChange(change), version)
                    }
                ),
            uuid.prop_map(|topic_id| (MetadataRecord::RemoveTopic { topic_id }, 0)),
            (
                prop::sample::select(vec![2i8, 4]),
                "[a-z]{0,8}",
                "[a-z.]{1,20}",
                prop::option::of("[0-9a-z]{0,10}")
            )
                .prop_map(|(resource_type, resource_name, name, value)| (
                    MetadataRecord::Config(ConfigRecord {
                        resource_type,
                        resource_name,
                        name,
                        value
                    }),
                    0
                )),
            ("[a-z.]{1,20}", any::<i16>())
                .prop_map(|(name, level)| (MetadataRecord::FeatureLevel { name, level }, 0)),
            (any::<i32>(), any::<i64>(), any::<i64>()).prop_map(
                |(broker_id, broker_epoch, next_producer_id)| (
                    MetadataRecord::ProducerIds {
                        broker_id,
                        broker_epoch,
                        next_producer_id
                    },
                    0
                )
            ),
            Just((MetadataRecord::NoOp, 0)),
            (
                "[a-z=,]{1,12}",
                1i8..3,
                prop::collection::vec(any::<u8>(), 0..40),
                prop::collection::vec(any::<u8>(), 0..70),
                any::<i32>()
            )
                .prop_map(|(name, mechanism, salt, key, iterations)| (
                    MetadataRecord::UserScramCredential(UserScramCredentialRecord {
                        name,
                        mechanism,
                        stored_key: key.clone(),
                        server_key: key.into_iter().rev().collect(),
                        salt,
                        iterations,
                    }),
                    0
                )),
            ("[a-z]{1,12}", any::<i8>()).prop_map(|(name, mechanism)| (
                MetadataRecord::RemoveUserScramCredential { name, mechanism },
                0
            )),
            (
                uuid,
                1i8..8,
                "[a-z*]{1,8}",
                3i8..5,
                "User:[a-z*]{1,8}",
                "[0-9.*]{1,15}",
                2i8..16,
                2i8..4
            )
                .prop_map(
                    |(id, resource_type, resource_name, pattern, principal, host, op, perm)| {
                        use crate::acl::*;
                        (
                            MetadataRecord::AccessControlEntry {
                                id,
                                acl: Acl {
                                    resource_type: ResourceType::from_code(resource_type).unwrap(),
                                    resource_name,
                                    pattern_type: PatternType::from_code(pattern).unwrap(),
                                    principal,
                                    host,
                                    operation: AclOperation::from_code(op).unwrap(),
                                    permission: AclPermission::from_code(perm).unwrap(),
                                },
                            },
                            0,
                        )
                    }
                ),
            uuid.prop_map(|id| (MetadataRecord::RemoveAccessControlEntry { id }, 0)),
        ]
    }

    proptest! {
        #[test]
        fn records_round_trip((record, version) in record()) {
            let bytes = record.encode(version).unwrap();
            prop_assert_eq!(MetadataRecord::decode(&bytes).unwrap(), (record, version));
        }

        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = MetadataRecord::decode(&bytes);
            let mut framed = vec![1u8, 3, 2];
            framed.extend_from_slice(&bytes);
            let _ = MetadataRecord::decode(&framed);
        }
    }

    #[test]
    fn an_access_control_entry_is_laid_out_as_kafkas_json_defines_it() {
        use crate::acl::*;
        let record = MetadataRecord::AccessControlEntry {
            id: [7; 16],
            acl: Acl {
                resource_type: ResourceType::Topic,
                resource_name: "t".into(),
                pattern_type: PatternType::Prefixed,
                principal: "User:a".into(),
                host: "*".into(),
                operation: AclOperation::Write,
                permission: AclPermission::Deny,
            },
        };
        // AccessControlEntryRecord.json v0 (flexible): frame version 1, apiKey 18,
        // version 0, Id, ResourceType, ResourceName, PatternType, Principal, Host,
        // Operation, PermissionType, no tagged fields.
        let mut expected = vec![1, 18, 0];
        expected.extend([7; 16]);
        expected.extend([2, 2, b't', 4, 7]);
        expected.extend(b"User:a");
        expected.extend([2, b'*', 4, 2, 0]);
        assert_eq!(record.encode(0).unwrap(), expected);
        // A code Kafka does not define is refused, not guessed.
        let mut unknown = expected.clone();
        unknown[3 + 16] = 99;
        assert!(matches!(
            MetadataRecord::decode(&unknown).unwrap_err(),
            MetadataError::Malformed(m) if m.contains("ResourceType: unknown code 99")
        ));
    }

    #[test]
    fn bad_frames_are_typed_errors() {
        assert_eq!(
            MetadataRecord::decode(&[0, 2, 0]).unwrap_err(),
            MetadataError::FrameVersion(0)
        );
        assert!(matches!(
            MetadataRecord::decode(&[1, 2, 1]).unwrap_err(),
            MetadataError::Version {
                api_key: 2,
                version: 1
            }
        ));
        assert!(matches!(
            MetadataRecord::decode(&[1, 2]).unwrap_err(),
            MetadataError::Truncated(_)
        ));
        // An array claiming a billion replicas in a short record allocates nothing.
        let mut huge = vec![1, 3, 0, 0, 0, 0, 0];
        huge.extend_from_slice(&[0; 16]);
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x03]);
        assert!(matches!(
            MetadataRecord::decode(&huge).unwrap_err(),
            MetadataError::Truncated(_)
        ));
        // Unknown record types pass through unchanged.
        let unknown = [1u8, 26, 0, 7, 7, 0];
        let (record, version) = MetadataRecord::decode(&unknown).unwrap();
        assert_eq!(record.encode(version).unwrap(), unknown);
    }
}
