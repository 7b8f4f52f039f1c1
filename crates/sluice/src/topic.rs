//! `sluice topic`: create, list, describe, alter and delete topics on a running cluster,
//! Sluice or Apache Kafka, the way Kafka's `kafka-topics.sh` does (and, for a topic's
//! configs, `kafka-configs.sh --entity-type topics --alter`).
//!
//! It is a client like any user's: it talks to the brokers over the wire through
//! `sluice-client` and never reads a node's files. Output follows `kafka-topics.sh` so
//! scripts written for it keep working; errors name the Kafka error code.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, anyhow, bail};
use clap::Subcommand;
use sluice_client::{
    Admin, AlterConfigOp, ApiError, ConfigEntry, ErrorCode, NewTopic, TopicDescription,
};

#[derive(Subcommand)]
pub enum TopicCommand {
    /// Create a topic.
    Create {
        /// The topic's name.
        name: String,
        /// Number of partitions (default: the broker's num.partitions).
        #[arg(long)]
        partitions: Option<i32>,
        /// Replicas of each partition (default: the broker's default.replication.factor).
        #[arg(long)]
        replication_factor: Option<i16>,
        /// A topic config, `key=value` (`cleanup.policy=compact`); repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
        /// Succeed without doing anything if the topic exists.
        #[arg(long)]
        if_not_exists: bool,
    },
    /// Print the name of every topic, one a line.
    List {
        /// Leave out internal topics (`__consumer_offsets`, ...).
        #[arg(long)]
        exclude_internal: bool,
    },
    /// Print topics, their non-default configs and their partitions (every topic when
    /// none is named).
    Describe {
        /// The topics to describe.
        names: Vec<String>,
        /// Leave out internal topics when describing every topic.
        #[arg(long)]
        exclude_internal: bool,
    },
    /// Set or remove configs of a topic, as `kafka-configs.sh --alter --entity-type topics
    /// --add-config k=v --delete-config k` does (IncrementalAlterConfigs). The changes
    /// apply all together or not at all.
    #[command(group(
        clap::ArgGroup::new("changes")
            .args(["sets", "deletes"])
            .required(true)
            .multiple(true)
    ))]
    AlterConfig {
        /// The topic's name.
        #[arg(long)]
        topic: String,
        /// Override a config on the topic, `key=value` (`retention.ms=86400000`);
        /// repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Remove the topic's override of a config, so the broker's setting applies;
        /// repeatable, or comma-separated.
        #[arg(long = "delete", value_name = "KEY", value_delimiter = ',')]
        deletes: Vec<String>,
        /// Only check that the cluster would accept the changes.
        #[arg(long)]
        validate_only: bool,
    },
    /// Grow a topic to a new total number of partitions, as `kafka-topics.sh --alter
    /// --partitions` does (CreatePartitions). Partitions can be added, never removed.
    AddPartitions {
        /// The topic's name.
        #[arg(long)]
        topic: String,
        /// The total number of partitions the topic should have.
        #[arg(long)]
        partitions: i32,
        /// Only check that the cluster would accept the change.
        #[arg(long)]
        validate_only: bool,
    },
    /// Delete a topic and its data.
    Delete {
        /// The topic's name.
        name: String,
        /// Succeed without doing anything if the topic does not exist.
        #[arg(long)]
        if_exists: bool,
    },
}

/// Runs one topic command against the cluster at `bootstrap_servers`.
pub fn run(bootstrap_servers: &[String], command: TopicCommand) -> anyhow::Result<()> {
    crate::remote::with_admin(
        bootstrap_servers,
        "sluice-topic",
        async |admin: &Admin| match command {
            TopicCommand::Create {
                name,
                partitions,
                replication_factor,
                configs,
                if_not_exists,
            } => {
                let topic = NewTopic {
                    configs: configs
                        .iter()
                        .map(|config| parse_config("--config", config))
                        .collect::<anyhow::Result<_>>()?,
                    name,
                    num_partitions: partitions,
                    replication_factor,
                };
                create(admin, topic, if_not_exists).await
            }
            TopicCommand::List { exclude_internal } => {
                for topic in admin.list_topics().await? {
                    if !(exclude_internal && topic.is_internal) {
                        println!("{}", topic.name);
                    }
                }
                Ok(())
            }
            TopicCommand::Describe {
                names,
                exclude_internal,
            } => describe(admin, names, exclude_internal).await,
            TopicCommand::AlterConfig {
                topic,
                sets,
                deletes,
                validate_only,
            } => {
                let operations = config_operations(&sets, &deletes)?;
                alter_config(admin, topic, operations, validate_only).await
            }
            TopicCommand::AddPartitions {
                topic,
                partitions,
                validate_only,
            } => add_partitions(admin, topic, partitions, validate_only).await,
            TopicCommand::Delete { name, if_exists } => delete(admin, name, if_exists).await,
        },
    )
}

async fn create(admin: &Admin, topic: NewTopic, if_not_exists: bool) -> anyhow::Result<()> {
    let name = topic.name.clone();
    let mut results = admin.create_topics(&[topic], false).await?;
    match take(&mut results, &name) {
        Ok(_) => println!("Created topic {name}."),
        Err(error) if if_not_exists && error.code == ErrorCode::TOPIC_ALREADY_EXISTS => {}
        Err(error) => return Err(topic_error(&name, "create", &error)),
    }
    Ok(())
}

async fn delete(admin: &Admin, name: String, if_exists: bool) -> anyhow::Result<()> {
    let mut results = admin.delete_topics(std::slice::from_ref(&name)).await?;
    match take(&mut results, &name) {
        Ok(()) => println!("Deleted topic {name}."),
        Err(error) if if_exists && error.code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => {}
        Err(error) => return Err(topic_error(&name, "delete", &error)),
    }
    Ok(())
}

async fn alter_config(
    admin: &Admin,
    name: String,
    operations: Vec<AlterConfigOp>,
    validate_only: bool,
) -> anyhow::Result<()> {
    let changes = BTreeMap::from([(name.clone(), operations)]);
    let mut results = admin
        .incremental_alter_topic_configs(&changes, validate_only)
        .await?;
    take(&mut results, &name).map_err(|error| topic_error(&name, "alter the config of", &error))?;
    if validate_only {
        println!("Validated the config changes for topic {name}; nothing was changed.");
    } else {
        // kafka-configs.sh's words.
        println!("Completed updating config for topic {name}.");
    }
    Ok(())
}

async fn add_partitions(
    admin: &Admin,
    name: String,
    total_count: i32,
    validate_only: bool,
) -> anyhow::Result<()> {
    let counts = BTreeMap::from([(name.clone(), total_count)]);
    let mut results = admin.create_partitions(&counts, validate_only).await?;
    take(&mut results, &name).map_err(|error| topic_error(&name, "add partitions to", &error))?;
    if validate_only {
        println!("Topic {name} can grow to {total_count} partitions; nothing was changed.");
    } else {
        println!("Topic {name} now has {total_count} partitions.");
    }
    Ok(())
}

/// The `--set` and `--delete` arguments as IncrementalAlterConfigs operations, sets first.
/// A key named twice is refused here: Kafka's brokers refuse the whole request for it
/// (INVALID_REQUEST), and which of the two the user meant is not ours to guess.
fn config_operations(sets: &[String], deletes: &[String]) -> anyhow::Result<Vec<AlterConfigOp>> {
    let mut operations = Vec::with_capacity(sets.len() + deletes.len());
    for set in sets {
        let (name, value) = parse_config("--set", set)?;
        operations.push(AlterConfigOp::Set { name, value });
    }
    for name in deletes {
        let name = name.trim();
        if name.is_empty() {
            bail!("--delete expects a config name");
        }
        operations.push(AlterConfigOp::Delete {
            name: name.to_string(),
        });
    }
    let mut named = BTreeSet::new();
    for operation in &operations {
        let (AlterConfigOp::Set { name, .. } | AlterConfigOp::Delete { name }) = operation;
        if !named.insert(name.as_str()) {
            bail!("config '{name}' is named more than once in --set and --delete");
        }
    }
    Ok(operations)
}

/// Describes the named topics (every topic when none is named); a topic that cannot be
/// described is reported after the others and fails the command.
async fn describe(
    admin: &Admin,
    mut names: Vec<String>,
    exclude_internal: bool,
) -> anyhow::Result<()> {
    if names.is_empty() {
        names = admin
            .list_topics()
            .await?
            .into_iter()
            .filter(|topic| !(exclude_internal && topic.is_internal))
            .map(|topic| topic.name)
            .collect();
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    let mut topics = admin.describe_topics(&names).await?;
    let mut configs = admin.describe_topic_configs(&names).await?;
    let mut failures = Vec::new();
    for name in &names {
        let described = take(&mut topics, name).and_then(|topic| {
            let configs = take(&mut configs, name)?;
            Ok((topic, configs))
        });
        match described {
            Ok((topic, configs)) => print!("{}", format_description(&topic, &configs)),
            Err(error) => failures.push(topic_error(name, "describe", &error).to_string()),
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

/// A topic as `kafka-topics.sh --describe` prints it: a line for the topic (with the
/// configs that are not Kafka defaults, in the broker's order), then one per partition.
fn format_description(topic: &TopicDescription, configs: &[ConfigEntry]) -> String {
    let join = |ids: &[i32]| ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    let configs = configs
        .iter()
        .filter(|config| !config.is_default())
        .map(|config| {
            format!(
                "{}={}",
                config.name,
                config.value.as_deref().unwrap_or("null")
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let replication_factor = topic
        .partitions
        .first()
        .map_or(0, |partition| partition.replicas.len());
    let mut out = format!(
        "Topic: {}\tTopicId: {}\tPartitionCount: {}\tReplicationFactor: {}\tConfigs: {}\n",
        topic.name,
        topic.topic_id,
        topic.partitions.len(),
        replication_factor,
        configs
    );
    for partition in &topic.partitions {
        let leader = partition
            .leader
            .map_or("none".to_string(), |leader| leader.to_string());
        out += &format!(
            "\tTopic: {}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}\n",
            topic.name,
            partition.partition,
            leader,
            join(&partition.replicas),
            join(&partition.isr)
        );
    }
    out
}

/// `key=value` from the command line, given with `flag`.
fn parse_config(flag: &str, text: &str) -> anyhow::Result<(String, String)> {
    let (key, value) = text
        .split_once('=')
        .with_context(|| format!("{flag} expects key=value, got '{text}'"))?;
    Ok((key.trim().to_string(), value.trim().to_string()))
}

/// The result for `name`, which the client always fills in.
fn take<T>(results: &mut BTreeMap<String, Result<T, ApiError>>, name: &str) -> Result<T, ApiError> {
    results.remove(name).unwrap_or_else(|| {
        Err(ApiError {
            code: ErrorCode::UNKNOWN_SERVER_ERROR,
            message: Some(format!("no result for topic '{name}'")),
        })
    })
}

/// A per-topic error as the user reads it: "topic 'x' already exists (TOPIC_ALREADY_EXISTS)".
fn topic_error(name: &str, action: &str, error: &ApiError) -> anyhow::Error {
    match error.code {
        ErrorCode::TOPIC_ALREADY_EXISTS => {
            anyhow!("topic '{name}' already exists ({})", error.code)
        }
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => {
            anyhow!("topic '{name}' does not exist ({})", error.code)
        }
        _ => anyhow!("cannot {action} topic '{name}': {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_client::{ConfigSource, PartitionInfo, TopicId};

    #[test]
    fn describe_prints_like_kafka_topics() {
        let partition = |index, leader| PartitionInfo {
            partition: index,
            leader,
            leader_epoch: 0,
            replicas: vec![1, 2],
            isr: vec![2],
            offline_replicas: vec![],
        };
        let topic = TopicDescription {
            name: "orders".to_string(),
            topic_id: TopicId([
                0xc9, 0xf9, 0x15, 0x24, 0xad, 0xd9, 0x47, 0x4a, 0x90, 0x71, 0x2e, 0x32, 0x1d, 0xf7,
                0x81, 0x75,
            ]),
            is_internal: false,
            partitions: vec![partition(0, Some(1)), partition(1, None)],
        };
        let config = |name: &str, value: &str, source| ConfigEntry {
            name: name.to_string(),
            value: Some(value.to_string()),
            source,
            is_read_only: false,
            is_sensitive: false,
        };
        let configs = [
            config(
                "cleanup.policy",
                "compact",
                ConfigSource::DynamicTopicConfig,
            ),
            config(
                "segment.bytes",
                "1073741824",
                ConfigSource::StaticBrokerConfig,
            ),
            config("retention.ms", "604800000", ConfigSource::DefaultConfig),
        ];
        assert_eq!(
            format_description(&topic, &configs),
            "Topic: orders\tTopicId: yfkVJK3ZR0qQcS4yHfeBdQ\tPartitionCount: 2\t\
             ReplicationFactor: 2\tConfigs: cleanup.policy=compact,segment.bytes=1073741824\n\
             \tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 2\n\
             \tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: 2\n"
        );
    }

    #[test]
    fn config_changes_are_sets_then_deletes_naming_each_key_once() {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let set = |name: &str, value: &str| AlterConfigOp::Set {
            name: name.to_string(),
            value: value.to_string(),
        };
        assert_eq!(
            config_operations(
                &strings(&["retention.ms=1000", "cleanup.policy=compact,delete"]),
                &strings(&["segment.ms"]),
            )
            .unwrap(),
            [
                set("retention.ms", "1000"),
                set("cleanup.policy", "compact,delete"),
                AlterConfigOp::Delete {
                    name: "segment.ms".to_string()
                },
            ]
        );
        let refused: [(&[&str], &[&str], &str); 4] = [
            (&["retention.ms"], &[], "--set expects key=value"),
            (&[], &[" "], "--delete expects a config name"),
            (
                &["retention.ms=1", "retention.ms=2"],
                &[],
                "config 'retention.ms' is named more than once",
            ),
            (
                &["retention.ms=1"],
                &["retention.ms"],
                "config 'retention.ms' is named more than once",
            ),
        ];
        for (sets, deletes, expected) in refused {
            let error = config_operations(&strings(sets), &strings(deletes)).unwrap_err();
            assert!(
                error.to_string().contains(expected),
                "{sets:?} {deletes:?}: {error}"
            );
        }
    }

    #[test]
    fn configs_must_be_key_value() {
        assert_eq!(
            parse_config("--config", "retention.ms=1000").unwrap(),
            ("retention.ms".to_string(), "1000".to_string())
        );
        assert_eq!(parse_config("--config", "a=b=c").unwrap().1, "b=c");
        let error = parse_config("--set", "retention.ms").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--set expects key=value, got 'retention.ms'"
        );
    }
}
