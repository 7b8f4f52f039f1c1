//! Burrow's `kafka` cluster module: the topics and each partition's log end offset, as
//! storage requests.
//!
//! Every `offset-refresh` seconds it asks each partition's leader for the latest offset
//! (ListOffsets, `read_uncommitted` as Burrow's client asks: the high watermark) and
//! stores it with the time it was read; every `topic-refresh` seconds it lists the topics
//! again, and a topic that is gone is deleted from storage (its groups' partitions go
//! with it). A partition whose leader is unknown is skipped until the next refresh, as
//! Burrow skips it. With `groups-reaper-refresh` set, groups the cluster no longer lists
//! are deleted (Burrow's reaper).
//!
//! An unreachable cluster is logged at each attempt and retried at the next tick; the
//! monitor keeps serving what it last knew.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_client::{Admin, ClientConfig, ListGroupsFilter, OffsetSpec, TopicPartition};
use tokio::sync::watch;

use crate::monitor::{StorageSink, StorageStopped};

use crate::config::ClusterConfig;
use crate::consumer::now_ms;
use crate::types::StorageRequest;

/// Why a round of reading the cluster failed; the module logs it, reconnects and retries.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    /// A call to the cluster failed.
    #[error(transparent)]
    Client(#[from] sluice_client::Error),
    #[error(transparent)]
    Storage(#[from] StorageStopped),
}

/// What one `cluster` section watches.
pub struct ClusterModule {
    name: String,
    config: ClusterConfig,
    client_id: String,
    /// Topic → partition count, from the last topic refresh.
    topics: BTreeMap<String, i32>,
}

impl ClusterModule {
    pub fn new(name: String, config: ClusterConfig, client_id: String) -> ClusterModule {
        ClusterModule {
            name,
            config,
            client_id,
            topics: BTreeMap::new(),
        }
    }

    /// Runs until `stop`. `groups` answers which groups storage holds, for the reaper;
    /// `stored` turns true once a first round of log end offsets has been stored.
    pub async fn run(
        mut self,
        storage: StorageSink,
        groups: impl Fn() -> Vec<String> + Send,
        stored: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut admin: Option<Admin> = None;
        let mut offset_tick =
            tokio::time::interval(Duration::from_secs(self.config.offset_refresh));
        let mut topic_tick = tokio::time::interval(Duration::from_secs(self.config.topic_refresh));
        let reaper_secs = self.config.groups_reaper_refresh;
        let mut reaper_tick = tokio::time::interval(Duration::from_secs(reaper_secs.max(1)));
        offset_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        topic_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reaper_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut refresh_topics = true;
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                _ = topic_tick.tick() => refresh_topics = true,
                _ = reaper_tick.tick(), if reaper_secs > 0 => {
                    if let Some(connected) = self.connected(&mut admin).await
                        && let Err(error) = self.reap_groups(connected, &storage, &groups).await
                    {
                        tracing::warn!(cluster = %self.name, %error, "monitor: listing groups failed");
                        admin = None;
                    }
                }
                _ = offset_tick.tick() => {
                    let Some(connected) = self.connected(&mut admin).await else {
                        continue;
                    };
                    let outcome = async {
                        if refresh_topics {
                            self.refresh_topics(connected, &storage).await?;
                        }
                        self.fetch_offsets(connected, &storage).await
                    }
                    .await;
                    match outcome {
                        Ok(stale) => {
                            refresh_topics = stale;
                            if !self.topics.is_empty() {
                                stored.send_replace(true);
                            }
                        }
                        Err(error) => {
                            tracing::warn!(cluster = %self.name, %error, "monitor: reading log end offsets failed; retrying at the next refresh");
                            admin = None;
                            refresh_topics = true;
                        }
                    }
                }
            }
        }
    }

    async fn connected<'a>(&self, admin: &'a mut Option<Admin>) -> Option<&'a Admin> {
        if admin.is_none() {
            let mut config = ClientConfig::new(self.config.servers.clone());
            config.client_id = self.client_id.clone();
            match Admin::connect(config).await {
                Ok(connected) => *admin = Some(connected),
                Err(error) => {
                    tracing::warn!(cluster = %self.name, servers = ?self.config.servers, %error, "monitor: cannot reach the cluster; retrying");
                    return None;
                }
            }
        }
        admin.as_ref()
    }

    async fn refresh_topics(
        &mut self,
        admin: &Admin,
        storage: &StorageSink,
    ) -> Result<(), RoundError> {
        let names: Vec<String> = admin
            .list_topics()
            .await?
            .into_iter()
            .map(|listing| listing.name)
            .collect();
        let mut topics = BTreeMap::new();
        for (name, description) in admin.describe_topics(&names).await? {
            // A topic deleted between the two calls is simply not listed.
            if let Ok(description) = description {
                topics.insert(
                    name,
                    i32::try_from(description.partitions.len()).unwrap_or(i32::MAX),
                );
            }
        }
        let gone: Vec<String> = self
            .topics
            .keys()
            .filter(|topic| !topics.contains_key(*topic))
            .cloned()
            .collect();
        for topic in gone {
            tracing::info!(cluster = %self.name, %topic, "monitor: topic deleted");
            storage
                .send(StorageRequest::DeleteTopic {
                    cluster: self.name.clone(),
                    topic,
                })
                .await?;
        }
        self.topics = topics;
        Ok(())
    }

    /// Stores every partition's latest offset; returns whether some partition failed (so
    /// the topics are listed again first next time, as Burrow re-reads metadata).
    async fn fetch_offsets(
        &self,
        admin: &Admin,
        storage: &StorageSink,
    ) -> Result<bool, RoundError> {
        let specs: BTreeMap<TopicPartition, OffsetSpec> = self
            .topics
            .iter()
            .flat_map(|(topic, count)| {
                (0..*count).map(|partition| {
                    (
                        TopicPartition::new(topic.clone(), partition),
                        OffsetSpec::Latest,
                    )
                })
            })
            .collect();
        if specs.is_empty() {
            return Ok(true);
        }
        let results = admin.list_offsets(&specs).await?;
        let timestamp_ms = now_ms();
        let mut stale = false;
        for (partition, result) in results {
            match result {
                Ok(info) => {
                    let count = self.topics.get(&partition.topic).copied().unwrap_or(0);
                    storage
                        .send(StorageRequest::SetBrokerOffset {
                            cluster: self.name.clone(),
                            topic: partition.topic,
                            partition: partition.partition,
                            topic_partition_count: count,
                            offset: info.offset,
                            timestamp_ms,
                        })
                        .await?;
                }
                Err(error) => {
                    tracing::debug!(cluster = %self.name, topic = %partition.topic, partition = partition.partition, error = ?error.code, "monitor: no log end offset for a partition this time");
                    stale = true;
                }
            }
        }
        Ok(stale)
    }

    async fn reap_groups(
        &self,
        admin: &Admin,
        storage: &StorageSink,
        groups: &(impl Fn() -> Vec<String> + Send),
    ) -> Result<(), RoundError> {
        let listed: BTreeSet<String> = admin
            .list_groups(&ListGroupsFilter::default())
            .await?
            .into_iter()
            .map(|listing| listing.group_id)
            .collect();
        for group in groups() {
            if !listed.contains(&group) {
                tracing::info!(cluster = %self.name, %group, "monitor: group no longer exists; removed");
                storage
                    .send(StorageRequest::DeleteGroup {
                        cluster: self.name.clone(),
                        group,
                    })
                    .await?;
            }
        }
        Ok(())
    }
}
