//! The metadata image: the cluster state the metadata records describe, built by
//! replaying them in log order with Kafka's rules (`docs/design/kraft-metadata-records.md`
//! §6). The broker's request handlers read only an image; they keep no state of their own.
//!
//! Replay is strict, as Kafka's is: a record about a topic or partition that does not
//! exist is an error, so a log Sluice accepts is one Kafka's metadata shell accepts.

use std::collections::BTreeMap;

use crate::codec::Uuid;
use crate::record::TOPIC_RESOURCE;
use crate::record::{
    MetadataRecord, PartitionChangeRecord, PartitionRecord, UserScramCredentialRecord,
};

/// Why a record could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("topic {name} already exists")]
    TopicExists { name: String },
    #[error("unknown topic id {0:?}")]
    UnknownTopic(Uuid),
    #[error("unable to find partition {topic_id:?}:{partition}")]
    UnknownPartition { topic_id: Uuid, partition: i32 },
    #[error("unknown broker {0}")]
    UnknownBroker(i32),
    #[error("broker {broker_id} has no registration of epoch {epoch}")]
    StaleBrokerEpoch { broker_id: i32, epoch: i64 },
    #[error(
        "partition {topic_id:?}:{partition} is at partition epoch {current}, not the {planned} the change was planned on"
    )]
    StalePartitionEpoch {
        topic_id: Uuid,
        partition: i32,
        planned: i32,
        current: i32,
    },
    #[error("producer id block ends at {next}, before the current end {current}")]
    ProducerIdsBackwards { next: i64, current: i64 },
    #[error("unable to find credential to delete: user {name}, mechanism {mechanism}")]
    UnknownScramCredential { name: String, mechanism: i8 },
    #[error("an ACL with id {0:?} already exists")]
    AclExists(Uuid),
    #[error("an ACL with id {0:?} was not found")]
    UnknownAcl(Uuid),
}

/// One partition's registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionImage {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    pub leader: i32,
    pub leader_recovery_state: i8,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub directories: Vec<Uuid>,
    pub eligible_leader_replicas: Vec<i32>,
    pub last_known_elr: Vec<i32>,
}

impl From<&PartitionRecord> for PartitionImage {
    fn from(record: &PartitionRecord) -> Self {
        PartitionImage {
            replicas: record.replicas.clone(),
            isr: record.isr.clone(),
            removing_replicas: record.removing_replicas.clone(),
            adding_replicas: record.adding_replicas.clone(),
            leader: record.leader,
            leader_recovery_state: record.leader_recovery_state,
            leader_epoch: record.leader_epoch,
            partition_epoch: record.partition_epoch,
            directories: record.directories.clone(),
            eligible_leader_replicas: record.eligible_leader_replicas.clone().unwrap_or_default(),
            last_known_elr: record.last_known_elr.clone().unwrap_or_default(),
        }
    }
}

impl PartitionImage {
    /// Kafka's `PartitionRegistration.merge`: present fields replace, a `Leader` field
    /// (even the same leader) bumps the leader epoch, every change bumps the partition
    /// epoch. New replicas keep their directories by replica id unless directories are
    /// given.
    fn merge(&mut self, change: &PartitionChangeRecord) {
        if let Some(replicas) = &change.replicas {
            if change.directories.is_none() {
                self.directories = replicas
                    .iter()
                    .map(|replica| {
                        self.replicas
                            .iter()
                            .position(|r| r == replica)
                            .and_then(|i| self.directories.get(i).copied())
                            .unwrap_or([0; 16])
                    })
                    .collect();
            }
            self.replicas = replicas.clone();
        }
        if let Some(isr) = &change.isr {
            self.isr = isr.clone();
        }
        if change.leader != -2 {
            self.leader = change.leader;
            self.leader_epoch += 1;
        }
        if let Some(removing) = &change.removing_replicas {
            self.removing_replicas = removing.clone();
        }
        if let Some(adding) = &change.adding_replicas {
            self.adding_replicas = adding.clone();
        }
        if change.leader_recovery_state != -1 {
            self.leader_recovery_state = change.leader_recovery_state;
        }
        if let Some(directories) = &change.directories {
            self.directories = directories.clone();
        }
        if let Some(elr) = &change.eligible_leader_replicas {
            self.eligible_leader_replicas = elr.clone();
        }
        if let Some(last) = &change.last_known_elr {
            self.last_known_elr = last.clone();
        }
        self.partition_epoch += 1;
    }
}

/// A topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub topic_id: Uuid,
    pub partitions: BTreeMap<i32, PartitionImage>,
}

/// The whole image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    topics: BTreeMap<Uuid, TopicImage>,
    topic_ids: BTreeMap<String, Uuid>,
    /// (resource type, resource name) → key → value.
    configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
    features: BTreeMap<String, i16>,
    /// The first producer id not yet handed out (ProducerIdsRecord).
    next_producer_id: i64,
    /// Broker id → its latest registration.
    brokers: BTreeMap<i32, crate::RegisterBrokerRecord>,
    /// (user name, SCRAM mechanism type) → the credential (Kafka's `ScramImage`).
    scram: BTreeMap<(String, i8), UserScramCredentialRecord>,
    /// The cluster's ACLs (AccessControlEntryRecord).
    acls: crate::acl::AclSet,
}

impl MetadataImage {
    /// Applies one record. On error the image is unchanged.
    pub fn apply(&mut self, record: &MetadataRecord) -> Result<(), ApplyError> {
        match record {
            MetadataRecord::RegisterBroker(registration) => {
                self.brokers
                    .insert(registration.broker_id, registration.clone());
            }
            MetadataRecord::Topic(topic) => {
                if self.topic_ids.contains_key(&topic.name)
                    || self.topics.contains_key(&topic.topic_id)
                {
                    return Err(ApplyError::TopicExists {
                        name: topic.name.clone(),
                    });
                }
                self.topic_ids.insert(topic.name.clone(), topic.topic_id);
                self.topics.insert(
                    topic.topic_id,
                    TopicImage {
                        name: topic.name.clone(),
                        topic_id: topic.topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition(partition) => {
                let topic = self
                    .topics
                    .get_mut(&partition.topic_id)
                    .ok_or(ApplyError::UnknownTopic(partition.topic_id))?;
                topic
                    .partitions
                    .insert(partition.partition_id, PartitionImage::from(partition));
            }
            MetadataRecord::PartitionChange(change) => {
                let unknown = ApplyError::UnknownPartition {
                    topic_id: change.topic_id,
                    partition: change.partition_id,
                };
                let partition = self
                    .topics
                    .get_mut(&change.topic_id)
                    .and_then(|t| t.partitions.get_mut(&change.partition_id))
                    .ok_or(unknown)?;
                partition.merge(change);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                let topic = self
                    .topics
                    .remove(topic_id)
                    .ok_or(ApplyError::UnknownTopic(*topic_id))?;
                self.topic_ids.remove(&topic.name);
                self.configs.remove(&(TOPIC_RESOURCE, topic.name));
            }
            MetadataRecord::Config(config) => {
                let resource = (config.resource_type, config.resource_name.clone());
                match &config.value {
                    Some(value) => {
                        self.configs
                            .entry(resource)
                            .or_default()
                            .insert(config.name.clone(), value.clone());
                    }
                    None => {
                        if let Some(keys) = self.configs.get_mut(&resource) {
                            keys.remove(&config.name);
                            if keys.is_empty() {
                                self.configs.remove(&resource);
                            }
                        }
                    }
                }
            }
            MetadataRecord::FeatureLevel { name, level } => {
                if *level == 0 && name != "metadata.version" {
                    self.features.remove(name);
                } else {
                    self.features.insert(name.clone(), *level);
                }
            }
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                if *next_producer_id <= self.next_producer_id {
                    return Err(ApplyError::ProducerIdsBackwards {
                        next: *next_producer_id,
                        current: self.next_producer_id,
                    });
                }
                self.next_producer_id = *next_producer_id;
            }
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                self.check_registration(*broker_id, *broker_epoch)?;
                self.brokers.remove(broker_id);
            }
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => {
                self.check_registration(*broker_id, *broker_epoch)?;
                let broker = self.brokers.get_mut(broker_id).expect("checked above");
                match fenced {
                    1 => broker.fenced = true,
                    -1 => {
                        broker.fenced = false;
                        broker.in_controlled_shutdown = false;
                    }
                    _ => {}
                }
                if *in_controlled_shutdown == 1 {
                    broker.in_controlled_shutdown = true;
                }
            }
            MetadataRecord::UserScramCredential(credential) => {
                self.scram.insert(
                    (credential.name.clone(), credential.mechanism),
                    credential.clone(),
                );
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                // Strict, as Kafka's `ScramControlManager.replay` is.
                if self.scram.remove(&(name.clone(), *mechanism)).is_none() {
                    return Err(ApplyError::UnknownScramCredential {
                        name: name.clone(),
                        mechanism: *mechanism,
                    });
                }
            }
            // As Kafka's AclControlManager replays them: an id is created once and
            // removed once.
            MetadataRecord::AccessControlEntry { id, acl } => {
                if self.acls.contains(id) {
                    return Err(ApplyError::AclExists(*id));
                }
                self.acls.add(*id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                if self.acls.remove(id).is_none() {
                    return Err(ApplyError::UnknownAcl(*id));
                }
            }
            MetadataRecord::NoOp | MetadataRecord::Unknown { .. } => {}
        }
        Ok(())
    }

    /// A user's SCRAM credential for one mechanism type (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
    pub fn scram_credential(
        &self,
        name: &str,
        mechanism: i8,
    ) -> Option<&UserScramCredentialRecord> {
        self.scram.get(&(name.to_string(), mechanism))
    }

    /// Every SCRAM credential, by user name then mechanism type.
    pub fn scram_credentials(&self) -> impl Iterator<Item = &UserScramCredentialRecord> {
        self.scram.values()
    }

    /// A change planned on partition epoch `planned` applies only while the partition
    /// is still at that epoch (Kafka's controller plans every partition change against
    /// the registration it read; a change planned on a stale image is refused, not
    /// merged over the changes made since).
    pub fn check_partition_epoch(
        &self,
        topic_id: Uuid,
        partition: i32,
        planned: i32,
    ) -> Result<(), ApplyError> {
        let current = self
            .topics
            .get(&topic_id)
            .and_then(|t| t.partitions.get(&partition))
            .ok_or(ApplyError::UnknownPartition {
                topic_id,
                partition,
            })?
            .partition_epoch;
        if current != planned {
            return Err(ApplyError::StalePartitionEpoch {
                topic_id,
                partition,
                planned,
                current,
            });
        }
        Ok(())
    }

    /// A record about broker `broker_id`'s registration of `epoch` applies only while
    /// that registration is the current one.
    fn check_registration(&self, broker_id: i32, epoch: i64) -> Result<(), ApplyError> {
        let broker = self
            .brokers
            .get(&broker_id)
            .ok_or(ApplyError::UnknownBroker(broker_id))?;
        if broker.broker_epoch != epoch {
            return Err(ApplyError::StaleBrokerEpoch { broker_id, epoch });
        }
        Ok(())
    }

    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.topic_ids.get(name).and_then(|id| self.topics.get(id))
    }

    pub fn topic_by_id(&self, topic_id: &Uuid) -> Option<&TopicImage> {
        self.topics.get(topic_id)
    }

    /// Topics in name order.
    pub fn topics(&self) -> impl Iterator<Item = &TopicImage> {
        self.topic_ids.values().filter_map(|id| self.topics.get(id))
    }

    /// The explicitly set configs of a resource.
    pub fn configs(
        &self,
        resource_type: i8,
        resource_name: &str,
    ) -> Option<&BTreeMap<String, String>> {
        self.configs
            .get(&(resource_type, resource_name.to_string()))
    }

    /// Registered brokers in id order (fenced ones included).
    /// The cluster's ACLs.
    pub fn acls(&self) -> &crate::acl::AclSet {
        &self.acls
    }

    pub fn brokers(&self) -> impl Iterator<Item = &crate::RegisterBrokerRecord> {
        self.brokers.values()
    }

    pub fn broker(&self, id: i32) -> Option<&crate::RegisterBrokerRecord> {
        self.brokers.get(&id)
    }

    /// The first producer id no broker has been given yet.
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }

    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.features.get(name).copied()
    }

    /// Every finalized feature and its level, by name.
    pub fn features(&self) -> impl Iterator<Item = (&str, i16)> {
        self.features
            .iter()
            .map(|(name, level)| (name.as_str(), *level))
    }

    /// Records that replay into this image from an empty one, in an order replay
    /// accepts (features, brokers, topics with their partitions, configs, producer
    /// ids): the content of a metadata snapshot.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut records = Vec::new();
        for (name, level) in &self.features {
            records.push(MetadataRecord::FeatureLevel {
                name: name.clone(),
                level: *level,
            });
        }
        for broker in self.brokers.values() {
            records.push(MetadataRecord::RegisterBroker(broker.clone()));
        }
        for topic in self.topics() {
            records.push(MetadataRecord::Topic(crate::record::TopicRecord {
                name: topic.name.clone(),
                topic_id: topic.topic_id,
            }));
            for (index, p) in &topic.partitions {
                records.push(MetadataRecord::Partition(PartitionRecord {
                    partition_id: *index,
                    topic_id: topic.topic_id,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                    adding_replicas: p.adding_replicas.clone(),
                    leader: p.leader,
                    leader_recovery_state: p.leader_recovery_state,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    directories: p.directories.clone(),
                    eligible_leader_replicas: Some(p.eligible_leader_replicas.clone()),
                    last_known_elr: Some(p.last_known_elr.clone()),
                }));
            }
        }
        for ((resource_type, resource_name), keys) in &self.configs {
            for (name, value) in keys {
                records.push(MetadataRecord::Config(crate::record::ConfigRecord {
                    resource_type: *resource_type,
                    resource_name: resource_name.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                }));
            }
        }
        records.extend(
            self.scram
                .values()
                .cloned()
                .map(MetadataRecord::UserScramCredential),
        );
        if self.next_producer_id > 0 {
            records.push(MetadataRecord::ProducerIds {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: self.next_producer_id,
            });
        }
        for (id, acl) in self.acls.iter() {
            records.push(MetadataRecord::AccessControlEntry {
                id: *id,
                acl: acl.clone(),
            });
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ConfigRecord, TopicRecord};

    const ORDERS: Uuid = [1; 16];
    const SCRATCH: Uuid = [2; 16];

    fn partition(topic_id: Uuid, partition_id: i32) -> MetadataRecord {
        MetadataRecord::Partition(PartitionRecord::new_partition(
            topic_id,
            partition_id,
            vec![1, 2],
            vec![[7; 16], [8; 16]],
        ))
    }

    fn config(name: &str, value: Option<&str>) -> MetadataRecord {
        MetadataRecord::Config(ConfigRecord {
            resource_type: 2,
            resource_name: "orders".into(),
            name: name.into(),
            value: value.map(str::to_string),
        })
    }

    fn scram(name: &str, mechanism: i8, iterations: i32) -> MetadataRecord {
        MetadataRecord::UserScramCredential(UserScramCredentialRecord {
            name: name.into(),
            mechanism,
            salt: vec![1, 2, 3],
            stored_key: vec![4; 32],
            server_key: vec![5; 32],
            iterations,
        })
    }

    #[test]
    fn scram_credentials_replay_as_kafkas_scram_image() {
        let mut image = MetadataImage::default();
        image.apply(&scram("alice", 1, 4096)).unwrap();
        image.apply(&scram("alice", 2, 8192)).unwrap();
        image.apply(&scram("bob", 1, 4096)).unwrap();
        // An upsert replaces the credential of that mechanism only.
        image.apply(&scram("alice", 1, 10000)).unwrap();
        assert_eq!(
            image.scram_credential("alice", 1).unwrap().iterations,
            10000
        );
        assert_eq!(image.scram_credential("alice", 2).unwrap().iterations, 8192);
        assert!(image.scram_credential("carol", 1).is_none());
        let remove = |name: &str, mechanism| MetadataRecord::RemoveUserScramCredential {
            name: name.into(),
            mechanism,
        };
        image.apply(&remove("alice", 1)).unwrap();
        assert!(image.scram_credential("alice", 1).is_none());
        assert!(image.scram_credential("alice", 2).is_some());
        // Removing what is not there is refused, and changes nothing.
        let before = image.clone();
        assert_eq!(
            image.apply(&remove("alice", 1)).unwrap_err(),
            ApplyError::UnknownScramCredential {
                name: "alice".into(),
                mechanism: 1
            }
        );
        assert_eq!(image, before);
        // A snapshot carries the credentials.
        let mut replayed = MetadataImage::default();
        for record in image.to_records() {
            replayed.apply(&record).unwrap();
        }
        assert_eq!(replayed, image);
        let users: Vec<_> = replayed
            .scram_credentials()
            .map(|c| (c.name.as_str(), c.mechanism))
            .collect();
        assert_eq!(users, [("alice", 2), ("bob", 1)]);
        // The keys never reach a log line.
        let shown = format!("{:?}", scram("alice", 1, 4096));
        assert!(
            !shown.contains("[4, 4") && !shown.contains("salt"),
            "{shown}"
        );
    }

    /// The sequence of Kafka 4.1.1's captured log (§9), replayed.
    #[test]
    fn replays_kafkas_example_log() {
        let mut image = MetadataImage::default();
        let mut shutdown = PartitionChangeRecord::new(ORDERS, 0);
        shutdown.isr = Some(vec![]);
        shutdown.leader = -1;
        shutdown.eligible_leader_replicas = Some(vec![1]);
        let records = vec![
            MetadataRecord::FeatureLevel {
                name: "metadata.version".into(),
                level: 27,
            },
            MetadataRecord::Topic(TopicRecord {
                name: "orders".into(),
                topic_id: ORDERS,
            }),
            config("cleanup.policy", Some("compact")),
            config("retention.ms", Some("86400000")),
            partition(ORDERS, 0),
            partition(ORDERS, 1),
            MetadataRecord::Topic(TopicRecord {
                name: "scratch".into(),
                topic_id: SCRATCH,
            }),
            partition(SCRATCH, 0),
            MetadataRecord::NoOp,
            MetadataRecord::RemoveTopic { topic_id: SCRATCH },
            config("retention.ms", None),
            MetadataRecord::PartitionChange(shutdown),
        ];
        for record in &records {
            image.apply(record).unwrap();
        }
        assert_eq!(image.feature_level("metadata.version"), Some(27));
        assert!(image.topic("scratch").is_none());
        assert!(image.topic_by_id(&SCRATCH).is_none());
        let orders = image.topic("orders").unwrap();
        assert_eq!(orders.partitions.len(), 2);
        let p0 = &orders.partitions[&0];
        assert_eq!((p0.leader, p0.leader_epoch, p0.partition_epoch), (-1, 1, 1));
        assert!(p0.isr.is_empty());
        assert_eq!(p0.eligible_leader_replicas, vec![1]);
        assert_eq!(orders.partitions[&1].leader_epoch, 0);
        let configs = image.configs(2, "orders").unwrap();
        assert_eq!(
            configs.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
        assert!(!configs.contains_key("retention.ms"));
    }

    /// (change, expected leader epoch, expected partition epoch) from a fresh partition.
    /// Topic "t" (id ORDERS) with partition 0 on replicas 1 and 2.
    fn one_partition_image() -> MetadataImage {
        let mut image = MetadataImage::default();
        image
            .apply(&MetadataRecord::Topic(TopicRecord {
                name: "t".into(),
                topic_id: ORDERS,
            }))
            .unwrap();
        image.apply(&partition(ORDERS, 0)).unwrap();
        image
    }

    #[test]
    fn leader_and_partition_epochs_follow_kafkas_merge() {
        type Change = fn(&mut PartitionChangeRecord);
        let cases: [(Change, i32, i32); 4] = [
            (|c| c.isr = Some(vec![1]), 0, 1),
            (|c| c.leader = 1, 1, 1), // the same leader still bumps the epoch
            (|c| c.leader = 2, 1, 1),
            (|c| c.leader_recovery_state = 1, 0, 1),
        ];
        for (change, leader_epoch, partition_epoch) in cases {
            let mut image = one_partition_image();
            let mut record = PartitionChangeRecord::new(ORDERS, 0);
            change(&mut record);
            image
                .apply(&MetadataRecord::PartitionChange(record))
                .unwrap();
            let p = &image.topic("t").unwrap().partitions[&0];
            assert_eq!(
                (p.leader_epoch, p.partition_epoch),
                (leader_epoch, partition_epoch)
            );
        }
        // New replicas keep their directories by replica id.
        let mut image = one_partition_image();
        let mut record = PartitionChangeRecord::new(ORDERS, 0);
        record.replicas = Some(vec![2, 3]);
        image
            .apply(&MetadataRecord::PartitionChange(record))
            .unwrap();
        assert_eq!(
            image.topic("t").unwrap().partitions[&0].directories,
            vec![[8; 16], [0; 16]]
        );
    }

    #[test]
    fn a_change_planned_on_a_stale_partition_epoch_is_refused() {
        let mut image = one_partition_image();
        assert_eq!(image.check_partition_epoch(ORDERS, 0, 0), Ok(()));
        let mut shrink = PartitionChangeRecord::new(ORDERS, 0);
        shrink.isr = Some(vec![1]);
        image
            .apply(&MetadataRecord::PartitionChange(shrink))
            .unwrap();
        // A change planned before the shrink (epoch 0) no longer applies.
        assert_eq!(
            image.check_partition_epoch(ORDERS, 0, 0),
            Err(ApplyError::StalePartitionEpoch {
                topic_id: ORDERS,
                partition: 0,
                planned: 0,
                current: 1
            })
        );
        assert_eq!(image.check_partition_epoch(ORDERS, 0, 1), Ok(()));
        assert!(matches!(
            image.check_partition_epoch(ORDERS, 7, 0),
            Err(ApplyError::UnknownPartition { .. })
        ));
    }

    #[test]
    fn replay_is_strict() {
        let mut image = MetadataImage::default();
        assert_eq!(
            image.apply(&partition(ORDERS, 0)),
            Err(ApplyError::UnknownTopic(ORDERS))
        );
        assert_eq!(
            image.apply(&MetadataRecord::PartitionChange(
                PartitionChangeRecord::new(ORDERS, 0)
            )),
            Err(ApplyError::UnknownPartition {
                topic_id: ORDERS,
                partition: 0
            })
        );
        assert_eq!(
            image.apply(&MetadataRecord::RemoveTopic { topic_id: ORDERS }),
            Err(ApplyError::UnknownTopic(ORDERS))
        );
        image
            .apply(&MetadataRecord::Topic(TopicRecord {
                name: "t".into(),
                topic_id: ORDERS,
            }))
            .unwrap();
        assert!(matches!(
            image.apply(&MetadataRecord::Topic(TopicRecord {
                name: "t".into(),
                topic_id: SCRATCH
            })),
            Err(ApplyError::TopicExists { .. })
        ));
        assert_eq!(image.topics().count(), 1);
    }
    fn acl(topic: &str) -> crate::acl::Acl {
        use crate::acl::*;
        Acl {
            resource_type: ResourceType::Topic,
            resource_name: topic.into(),
            pattern_type: PatternType::Literal,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermission::Allow,
        }
    }

    #[test]
    fn an_acl_id_is_created_once_and_removed_once() {
        let mut image = MetadataImage::default();
        let add = MetadataRecord::AccessControlEntry {
            id: [5; 16],
            acl: acl("orders"),
        };
        image.apply(&add).unwrap();
        assert_eq!(image.apply(&add), Err(ApplyError::AclExists([5; 16])));
        let remove = MetadataRecord::RemoveAccessControlEntry { id: [5; 16] };
        image.apply(&remove).unwrap();
        assert_eq!(image.apply(&remove), Err(ApplyError::UnknownAcl([5; 16])));
        assert!(image.acls().is_empty());
    }

    #[test]
    fn snapshot_records_replay_into_the_same_image() {
        let mut image = MetadataImage::default();
        let mut change = PartitionChangeRecord::new(ORDERS, 0);
        change.isr = Some(vec![1]);
        change.leader = 1;
        for record in [
            MetadataRecord::FeatureLevel {
                name: "metadata.version".into(),
                level: 27,
            },
            MetadataRecord::Topic(TopicRecord {
                name: "orders".into(),
                topic_id: ORDERS,
            }),
            partition(ORDERS, 0),
            partition(ORDERS, 1),
            config("retention.ms", Some("1000")),
            MetadataRecord::PartitionChange(change),
            MetadataRecord::ProducerIds {
                broker_id: 1,
                broker_epoch: 0,
                next_producer_id: 2000,
            },
            MetadataRecord::AccessControlEntry {
                id: [5; 16],
                acl: acl("orders"),
            },
            MetadataRecord::AccessControlEntry {
                id: [6; 16],
                acl: acl("payments"),
            },
            MetadataRecord::RemoveAccessControlEntry { id: [6; 16] },
        ] {
            image.apply(&record).unwrap();
        }
        assert_eq!(image.acls().len(), 1);
        let mut replayed = MetadataImage::default();
        for record in image.to_records() {
            let bytes = record.encode(record.latest_version()).unwrap();
            let (decoded, _) = MetadataRecord::decode(&bytes).unwrap();
            replayed.apply(&decoded).unwrap();
        }
        assert_eq!(replayed, image);
        let p0 = &replayed.topic("orders").unwrap().partitions[&0];
        assert_eq!(
            (p0.leader_epoch, p0.partition_epoch, p0.isr.clone()),
            (1, 1, vec![1])
        );
    }
}
