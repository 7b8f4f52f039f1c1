//! The fuzz targets' committed inputs, replayed as a regular test: every file in
//! `fuzz/seeds/<target>/` and `fuzz/regressions/<target>/` goes once through the
//! target's function (the same function `fuzz/fuzz_targets/<target>.rs` calls), so a
//! bug the fuzzer found stays fixed without cargo-fuzz or a nightly toolchain. Long
//! runs are by hand: `fuzz/run.sh`, see `docs/fuzzing.md`.
//!
//! The seeds of `request_frame` (a valid request of every API the broker serves, at its
//! lowest and highest version and its first flexible one) and of `builder_roundtrip`
//! are written by this file too:
//!
//!     cargo test -p sluice-broker --test fuzz_corpus -- --ignored write_seeds
//!
//! and a test checks that the committed ones are still what it writes.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use sluice_broker::apis::{SUPPORTED_APIS, check_version};
use sluice_broker::fuzzing::{CountingAllocator, decode_frame, measure_allocations};
use sluice_protocol::fuzzing::{BuilderInput, BuilderRecord};
use sluice_protocol::{Compression, Header, NewRecord, RecordBatchBuilder};
use uuid::Uuid;

// `request_frame` checks its allocation bound only under this allocator.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// A fuzz target's body: `fuzz/fuzz_targets/<target>.rs` calls it on every input.
type Target = fn(&[u8]);

/// Named files of one seed directory.
type Seeds = Vec<(String, Vec<u8>)>;

/// Every fuzz target and the function its `fuzz_target!` calls.
const TARGETS: &[(&str, Target)] = &[
    ("varint", sluice_protocol::fuzzing::varint),
    ("decompress", sluice_protocol::fuzzing::decompress),
    ("record_batch", sluice_protocol::fuzzing::record_batch),
    (
        "builder_roundtrip",
        sluice_protocol::fuzzing::builder_roundtrip,
    ),
    ("checkpoints", sluice_storage::fuzzing::checkpoints),
    ("log_recovery", sluice_storage::fuzzing::log_recovery),
    ("request_frame", sluice_broker::fuzzing::request_frame),
    (
        "consumer_protocol",
        sluice_protocol::fuzzing::consumer_protocol,
    ),
    ("offsets_records", sluice_group::fuzzing::offsets_records),
    ("txn_records", sluice_txn::fuzzing::txn_records),
    ("txn_index", sluice_storage::fuzzing::txn_index),
];

const REGENERATE: &str = "cargo test -p sluice-broker --test fuzz_corpus -- --ignored write_seeds";

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files directly in `dir`, sorted; none when it does not exist. Notes (`*.md`)
/// are not inputs.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file() && path.extension().is_none_or(|ext| ext != "md"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_passes_its_fuzz_target() {
    let fuzz = fuzz_dir();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = TARGETS
            .iter()
            .map(|&(target, run)| {
                let fuzz = &fuzz;
                scope.spawn(move || {
                    let seeds = files_in(&fuzz.join("seeds").join(target));
                    assert!(
                        !seeds.is_empty(),
                        "no seeds for fuzz target {target} in {}",
                        fuzz.join("seeds").join(target).display()
                    );
                    let regressions = files_in(&fuzz.join("regressions").join(target));
                    let mut failures = Vec::new();
                    for input in seeds.iter().chain(&regressions) {
                        let data = std::fs::read(input).expect("read a fuzz input");
                        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                            failures.push(format!("{target}: {}", input.display()));
                        }
                    }
                    failures
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a replay thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "fuzz inputs that fail their target (panic messages above):\n{}",
        failures.join("\n")
    );
}

#[test]
fn request_frame_measures_allocations_in_this_binary() {
    // Else its allocation bound would pass unchecked.
    let (_, peak_bytes) = measure_allocations(|| Vec::<u8>::with_capacity(4096));
    assert!(
        peak_bytes.is_some_and(|bytes| bytes >= 4096),
        "{peak_bytes:?}"
    );
}

#[test]
fn committed_seeds_are_what_the_generator_writes() {
    for (target, seeds) in generated_seeds() {
        let dir = fuzz_dir().join("seeds").join(target);
        let mut on_disk: Vec<String> = files_in(&dir)
            .iter()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut names: Vec<String> = seeds.iter().map(|(name, _)| name.clone()).collect();
        names.sort();
        assert_eq!(
            on_disk, names,
            "fuzz/seeds/{target}/ is not what the generator writes; run `{REGENERATE}`"
        );
        for (name, bytes) in &seeds {
            let committed = std::fs::read(dir.join(name)).expect("read a seed");
            assert!(
                committed == *bytes,
                "fuzz/seeds/{target}/{name} differs from what the generator writes; run `{REGENERATE}`"
            );
        }
    }
}

#[test]
fn request_seeds_are_requests_the_broker_decodes() {
    for (name, frame) in request_frame_seeds() {
        if let Err(error) = decode_frame(&frame) {
            panic!("seed {name} does not decode: {error}");
        }
    }
}

/// Writes the generated seeds (replacing what is in their directories).
#[test]
#[ignore = "writes fuzz/seeds/; run by hand after changing the served APIs"]
fn write_seeds() {
    for (target, seeds) in generated_seeds() {
        let dir = fuzz_dir().join("seeds").join(target);
        for stale in files_in(&dir) {
            std::fs::remove_file(stale).expect("remove an old seed");
        }
        std::fs::create_dir_all(&dir).expect("create the seed directory");
        for (name, bytes) in seeds {
            std::fs::write(dir.join(name), bytes).expect("write a seed");
        }
    }
}

fn generated_seeds() -> [(&'static str, Seeds); 2] {
    [
        ("request_frame", request_frame_seeds()),
        ("builder_roundtrip", builder_roundtrip_seeds()),
    ]
}

// ---------------------------------------------------------------------------------------
// request_frame seeds

/// A valid request frame (without its size prefix) for every served API at the lowest
/// version the broker accepts, the first flexible version and the highest, plus an
/// ApiVersions request of a version no broker knows (answered, not refused).
fn request_frame_seeds() -> Seeds {
    let mut seeds = Vec::new();
    for &(api_key, min, max) in SUPPORTED_APIS {
        let accepted: Vec<i16> = (min..=max)
            .filter(|&version| check_version(api_key, version).is_ok())
            .collect();
        let first_flexible = accepted
            .iter()
            .copied()
            .find(|&version| api_key.request_header_version(version) >= 2);
        let mut versions: Vec<i16> = [
            accepted.first().copied(),
            first_flexible,
            accepted.last().copied(),
        ]
        .into_iter()
        .flatten()
        .collect();
        versions.dedup();
        for version in versions {
            let name = format!("{api_key:?}-v{version}");
            let frame = request_frame(api_key, version, 1000 + version as i32)
                .unwrap_or_else(|error| panic!("{name} does not encode: {error}"));
            seeds.push((name, frame));
        }
    }
    // A v2 header with a v4 body: the broker answers UNSUPPORTED_VERSION at v0.
    let mut frame = header_bytes(ApiKey::ApiVersions, 127, 7);
    api_versions(4)
        .encode(&mut frame, 4)
        .expect("ApiVersions v4 encodes");
    seeds.push(("ApiVersions-v127-unknown".to_string(), frame.to_vec()));
    // The metadata quorum's own requests (a private API key, JSON bodies).
    use sluice_broker::quorum::rpc::Forwarded;
    use sluice_broker::quorum::{PlannedOn, Proposal, RpcRequest, rpc};
    for (name, request) in [
        ("Quorum-Status", RpcRequest::Status),
        (
            "Quorum-Propose",
            RpcRequest::Propose(Proposal {
                records: vec![vec![1, 20, 0, 0]],
                write_id: 7,
                planned_on: vec![PlannedOn {
                    topic_id: [3; 16],
                    partition: 0,
                    partition_epoch: 4,
                }],
            }),
        ),
        (
            "Quorum-Forward",
            RpcRequest::Forward(Forwarded {
                api_key: ApiKey::ElectLeaders as i16,
                version: 2,
                client_id: Some("admin".into()),
                client_host: "/127.0.0.1".into(),
                principal: Default::default(),
                body: vec![0, 0, 0, 0, 0, 0, 0, 0],
            }),
        ),
        (
            "Quorum-Join",
            RpcRequest::Join {
                node_id: 4,
                address: "127.0.0.1:9092".into(),
            },
        ),
    ] {
        // The frame without its size prefix, as the network layer holds it.
        let frame = rpc::encode_request(77, &request).unwrap();
        seeds.push((name.to_string(), frame[4..].to_vec()));
    }
    seeds
}

fn header_bytes(api_key: ApiKey, version: i16, correlation_id: i32) -> BytesMut {
    let header_version = api_key.request_header_version(version);
    let mut header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(text("sluice-fuzz-seed")));
    if header_version >= 2 {
        // Unknown tagged fields are skipped, as Kafka does; seeds carry one so the
        // fuzzer starts from that path.
        header = header.with_unknown_tagged_field(9999, Bytes::from_static(b"tag"));
    }
    let mut out = BytesMut::new();
    header
        .encode(&mut out, header_version)
        .expect("a request header encodes");
    out
}

fn request_frame(api_key: ApiKey, version: i16, correlation_id: i32) -> Result<Vec<u8>, String> {
    let mut out = header_bytes(api_key, version, correlation_id);
    let v = version;
    let encoded = match api_key {
        ApiKey::Produce => produce(v).encode(&mut out, v),
        ApiKey::Fetch => fetch(v).encode(&mut out, v),
        ApiKey::ListOffsets => list_offsets(v).encode(&mut out, v),
        ApiKey::Metadata => metadata(v).encode(&mut out, v),
        ApiKey::ApiVersions => api_versions(v).encode(&mut out, v),
        ApiKey::SaslHandshake => SaslHandshakeRequest::default()
            .with_mechanism(text("PLAIN"))
            .encode(&mut out, v),
        ApiKey::SaslAuthenticate => SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret"))
            .encode(&mut out, v),
        ApiKey::CreateTopics => create_topics().encode(&mut out, v),
        ApiKey::DeleteTopics => delete_topics(v).encode(&mut out, v),
        ApiKey::DeleteRecords => delete_records().encode(&mut out, v),
        ApiKey::InitProducerId => init_producer_id(v).encode(&mut out, v),
        ApiKey::OffsetForLeaderEpoch => offset_for_leader_epoch(v).encode(&mut out, v),
        ApiKey::DescribeConfigs => describe_configs(v).encode(&mut out, v),
        ApiKey::AlterConfigs => alter_configs().encode(&mut out, v),
        ApiKey::DescribeLogDirs => describe_log_dirs().encode(&mut out, v),
        ApiKey::CreatePartitions => create_partitions().encode(&mut out, v),
        ApiKey::IncrementalAlterConfigs => incremental_alter_configs().encode(&mut out, v),
        ApiKey::DescribeCluster => describe_cluster(v).encode(&mut out, v),
        ApiKey::DescribeQuorum => describe_quorum().encode(&mut out, v),
        ApiKey::DescribeTopicPartitions => describe_topic_partitions().encode(&mut out, v),
        ApiKey::AlterPartitionReassignments => reassign().encode(&mut out, v),
        ApiKey::ListPartitionReassignments => ListPartitionReassignmentsRequest::default()
            .with_timeout_ms(1000)
            .with_topics(Some(vec![
                list_partition_reassignments_request::ListPartitionReassignmentsTopics::default()
                    .with_name(TopicName(text("orders")))
                    .with_partition_indexes(vec![0, 1]),
            ]))
            .encode(&mut out, v),
        ApiKey::ElectLeaders => ElectLeadersRequest::default()
            .with_election_type(0)
            .with_topic_partitions(Some(vec![
                elect_leaders_request::TopicPartitions::default()
                    .with_topic(TopicName(text("orders")))
                    .with_partitions(vec![0]),
            ]))
            .with_timeout_ms(1000)
            .encode(&mut out, v),
        ApiKey::UnregisterBroker => UnregisterBrokerRequest::default()
            .with_broker_id(BrokerId(3))
            .encode(&mut out, v),
        ApiKey::FindCoordinator => {
            let request = FindCoordinatorRequest::default().with_key_type(0);
            if v >= 4 {
                request.with_coordinator_keys(vec![text("orders-group")])
            } else {
                request.with_key(text("orders-group"))
            }
            .encode(&mut out, v)
        }
        ApiKey::JoinGroup => JoinGroupRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(text("member-1"))
            .with_group_instance_id((v >= 5).then(|| text("instance-1")))
            .with_protocol_type(text("consumer"))
            .with_protocols(vec![
                join_group_request::JoinGroupRequestProtocol::default()
                    .with_name(text("range"))
                    .with_metadata(Bytes::from_static(b"\0\x03\0\0\0\x01\0\x06orders")),
            ])
            .encode(&mut out, v),
        ApiKey::SyncGroup => SyncGroupRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_generation_id(3)
            .with_member_id(text("member-1"))
            .with_protocol_type((v >= 5).then(|| text("consumer")))
            .with_protocol_name((v >= 5).then(|| text("range")))
            .with_assignments(vec![
                sync_group_request::SyncGroupRequestAssignment::default()
                    .with_member_id(text("member-1"))
                    .with_assignment(Bytes::from_static(b"\0\x03\0\0\0\x01")),
            ])
            .encode(&mut out, v),
        ApiKey::Heartbeat => HeartbeatRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_generation_id(3)
            .with_member_id(text("member-1"))
            .encode(&mut out, v),
        ApiKey::LeaveGroup => {
            let request = LeaveGroupRequest::default().with_group_id(GroupId(text("orders-group")));
            if v >= 3 {
                request.with_members(vec![
                    leave_group_request::MemberIdentity::default().with_member_id(text("member-1")),
                ])
            } else {
                request.with_member_id(text("member-1"))
            }
            .encode(&mut out, v)
        }
        ApiKey::OffsetCommit => OffsetCommitRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_generation_id_or_member_epoch(3)
            .with_member_id(text("member-1"))
            .with_topics(vec![
                offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(TopicName(text("orders")))
                    .with_partitions(vec![
                        offset_commit_request::OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(42)
                            .with_committed_metadata(Some(text("meta"))),
                    ]),
            ])
            .encode(&mut out, v),
        ApiKey::OffsetFetch => if v >= 8 {
            OffsetFetchRequest::default().with_groups(vec![
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(text("orders-group")))
                    .with_topics(Some(vec![
                        offset_fetch_request::OffsetFetchRequestTopics::default()
                            .with_name(TopicName(text("orders")))
                            .with_partition_indexes(vec![0, 1]),
                    ])),
            ])
        } else {
            OffsetFetchRequest::default()
                .with_group_id(GroupId(text("orders-group")))
                .with_topics(Some(vec![
                    offset_fetch_request::OffsetFetchRequestTopic::default()
                        .with_name(TopicName(text("orders")))
                        .with_partition_indexes(vec![0, 1]),
                ]))
        }
        .encode(&mut out, v),
        ApiKey::OffsetDelete => OffsetDeleteRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_topics(vec![
                offset_delete_request::OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(text("orders")))
                    .with_partitions(vec![
                        offset_delete_request::OffsetDeleteRequestPartition::default()
                            .with_partition_index(0),
                    ]),
            ])
            .encode(&mut out, v),
        ApiKey::DescribeClientQuotas => DescribeClientQuotasRequest::default()
            .with_components(vec![
                describe_client_quotas_request::ComponentData::default()
                    .with_entity_type(text("user"))
                    .with_match_type(0)
                    .with_match(Some(text("alice"))),
            ])
            .encode(&mut out, v),
        ApiKey::DescribeUserScramCredentials => DescribeUserScramCredentialsRequest::default()
            .with_users(Some(vec![
                describe_user_scram_credentials_request::UserName::default()
                    .with_name(text("alice")),
            ]))
            .encode(&mut out, v),
        ApiKey::AlterUserScramCredentials => AlterUserScramCredentialsRequest::default()
            .with_deletions(vec![
                alter_user_scram_credentials_request::ScramCredentialDeletion::default()
                    .with_name(text("bob"))
                    .with_mechanism(2),
            ])
            .with_upsertions(vec![
                alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
                    .with_name(text("alice"))
                    .with_mechanism(1)
                    .with_iterations(8192)
                    .with_salt(Bytes::from_static(b"0123456789abcdef"))
                    .with_salted_password(Bytes::from_static(&[7; 32])),
            ])
            .encode(&mut out, v),
        ApiKey::ListGroups => ListGroupsRequest::default()
            .with_states_filter(if v >= 4 { vec![text("Stable")] } else { vec![] })
            .with_types_filter(if v >= 5 {
                vec![text("classic")]
            } else {
                vec![]
            })
            .encode(&mut out, v),
        ApiKey::DescribeGroups => DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(text("orders-group"))])
            .encode(&mut out, v),
        ApiKey::DeleteGroups => DeleteGroupsRequest::default()
            .with_groups_names(vec![GroupId(text("orders-group"))])
            .encode(&mut out, v),
        ApiKey::ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(text("orders-group")))
            .with_member_id(text("4f3b1c2d-member"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![TopicName(text("orders"))]))
            .with_topic_partitions(Some(vec![]))
            .encode(&mut out, v),
        ApiKey::DescribeProducers => DescribeProducersRequest::default()
            .with_topics(vec![
                describe_producers_request::TopicRequest::default()
                    .with_name(TopicName(text("orders")))
                    .with_partition_indexes(vec![0, 1]),
            ])
            .encode(&mut out, v),
        ApiKey::ConsumerGroupDescribe => ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(text("orders-group"))])
            .encode(&mut out, v),
        ApiKey::UpdateFeatures => UpdateFeaturesRequest::default()
            .with_timeout_ms(10_000)
            .with_feature_updates(vec![
                update_features_request::FeatureUpdateKey::default()
                    .with_feature(text("transaction.version"))
                    .with_max_version_level(2),
            ])
            .with_validate_only(v >= 1)
            .encode(&mut out, v),
        ApiKey::AddPartitionsToTxn => if v >= 4 {
            AddPartitionsToTxnRequest::default().with_transactions(vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
                    .with_transactional_id(TransactionalId(text("order-processor-1")))
                    .with_producer_id(ProducerId(1000))
                    .with_producer_epoch(0)
                    .with_verify_only(true)
                    .with_topics(vec![
                        add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                            .with_name(topic("orders"))
                            .with_partitions(vec![0, 1]),
                    ]),
            ])
        } else {
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(text("order-processor-1")))
                .with_v3_and_below_producer_id(ProducerId(1000))
                .with_v3_and_below_producer_epoch(0)
                .with_v3_and_below_topics(vec![
                    add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                        .with_name(topic("orders"))
                        .with_partitions(vec![0, 1]),
                ])
        }
        .encode(&mut out, v),
        ApiKey::AddOffsetsToTxn => AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(text("order-processor-1")))
            .with_producer_id(ProducerId(1000))
            .with_producer_epoch(0)
            .with_group_id(GroupId(text("orders-group")))
            .encode(&mut out, v),
        ApiKey::EndTxn => EndTxnRequest::default()
            .with_transactional_id(TransactionalId(text("order-processor-1")))
            .with_producer_id(ProducerId(1000))
            .with_producer_epoch(0)
            .with_committed(true)
            .encode(&mut out, v),
        ApiKey::WriteTxnMarkers => WriteTxnMarkersRequest::default()
            .with_markers(vec![
                write_txn_markers_request::WritableTxnMarker::default()
                    .with_producer_id(ProducerId(1000))
                    .with_producer_epoch(0)
                    .with_transaction_result(true)
                    .with_coordinator_epoch(0)
                    .with_topics(vec![
                        write_txn_markers_request::WritableTxnMarkerTopic::default()
                            .with_name(topic("orders"))
                            .with_partition_indexes(vec![0]),
                    ]),
            ])
            .encode(&mut out, v),
        ApiKey::TxnOffsetCommit => TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(text("order-processor-1")))
            .with_group_id(GroupId(text("orders-group")))
            .with_producer_id(ProducerId(1000))
            .with_producer_epoch(0)
            .with_generation_id(-1)
            .with_topics(vec![
                txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                    .with_name(topic("orders"))
                    .with_partitions(vec![
                        txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(42),
                    ]),
            ])
            .encode(&mut out, v),
        ApiKey::ListTransactions => ListTransactionsRequest::default()
            .with_state_filters(vec![text("Ongoing")])
            .encode(&mut out, v),
        ApiKey::DescribeTransactions => DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![TransactionalId(text("order-processor-1"))])
            .encode(&mut out, v),
        other => {
            return Err(format!(
                "no seed request for {other:?}: add one to crates/sluice-broker/tests/fuzz_corpus.rs"
            ));
        }
    };
    encoded.map_err(|error| error.to_string())?;
    Ok(out.to_vec())
}

fn text(value: &'static str) -> StrBytes {
    StrBytes::from_static_str(value)
}

fn topic(value: &'static str) -> TopicName {
    TopicName(text(value))
}

const TOPIC_ID: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);

/// A Java-client-like batch of two records, one with a header.
fn record_batch() -> Bytes {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for (index, value) in [&b"first"[..], b"second"].into_iter().enumerate() {
        let record = NewRecord {
            timestamp: 1_700_000_000_000 + index as i64,
            key: Some(Bytes::from(format!("key-{index}"))),
            value: Some(Bytes::from_static(value)),
            headers: if index == 0 {
                vec![Header {
                    key: Bytes::from_static(b"trace"),
                    value: Some(Bytes::from_static(b"abc")),
                }]
            } else {
                Vec::new()
            },
        };
        builder.append(&record).expect("a plain record is accepted");
    }
    builder.build()
}

fn produce(version: i16) -> ProduceRequest {
    let mut topic_data = TopicProduceData::default().with_partition_data(vec![
        PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(record_batch())),
        PartitionProduceData::default()
            .with_index(1)
            .with_records(None),
    ]);
    topic_data = if version >= 13 {
        topic_data.with_topic_id(TOPIC_ID)
    } else {
        topic_data.with_name(topic("orders"))
    };
    ProduceRequest::default()
        .with_transactional_id(None)
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![topic_data])
}

fn fetch(version: i16) -> FetchRequest {
    let partition = FetchPartition::default()
        .with_partition(0)
        .with_current_leader_epoch(if version >= 9 { 5 } else { -1 })
        .with_fetch_offset(42)
        .with_last_fetched_epoch(if version >= 12 { 4 } else { -1 })
        .with_log_start_offset(if version >= 5 { 0 } else { -1 })
        .with_partition_max_bytes(1 << 20);
    let mut fetch_topic = FetchTopic::default().with_partitions(vec![partition]);
    let mut forgotten = ForgottenTopic::default().with_partitions(vec![1, 2]);
    if version >= 13 {
        fetch_topic = fetch_topic.with_topic_id(TOPIC_ID);
        forgotten = forgotten.with_topic_id(TOPIC_ID);
    } else {
        fetch_topic = fetch_topic.with_topic(topic("orders"));
        forgotten = forgotten.with_topic(topic("orders"));
    }
    let mut request = FetchRequest::default()
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_isolation_level(1)
        .with_topics(vec![fetch_topic]);
    if version <= 14 {
        request = request.with_replica_id(BrokerId(-1));
    }
    if version >= 7 {
        request = request
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_forgotten_topics_data(vec![forgotten]);
    }
    if version >= 11 {
        request = request.with_rack_id(text("rack-a"));
    }
    request
}

fn list_offsets(version: i16) -> ListOffsetsRequest {
    let partitions = vec![
        ListOffsetsPartition::default()
            .with_partition_index(0)
            .with_current_leader_epoch(if version >= 4 { 3 } else { -1 })
            .with_timestamp(-1),
        ListOffsetsPartition::default()
            .with_partition_index(1)
            .with_timestamp(-2),
    ];
    let mut request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic("orders"))
                .with_partitions(partitions),
        ]);
    if version >= 2 {
        request = request.with_isolation_level(1);
    }
    if version >= 10 {
        request = request.with_timeout_ms(30_000);
    }
    request
}

fn metadata(version: i16) -> MetadataRequest {
    let mut topics = vec![MetadataRequestTopic::default().with_name(Some(topic("orders")))];
    if version >= 10 {
        topics.push(
            MetadataRequestTopic::default()
                .with_topic_id(TOPIC_ID)
                .with_name(None),
        );
    }
    let mut request = MetadataRequest::default().with_topics(Some(topics));
    if version >= 8 {
        request = request.with_include_topic_authorized_operations(true);
    }
    request
}

fn api_versions(version: i16) -> ApiVersionsRequest {
    let mut request = ApiVersionsRequest::default();
    if version >= 3 {
        request = request
            .with_client_software_name(text("sluice-fuzz"))
            .with_client_software_version(text("1.0"));
    }
    request
}

fn create_topics() -> CreateTopicsRequest {
    CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(topic("orders"))
                .with_num_partitions(3)
                .with_replication_factor(1)
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(text("cleanup.policy"))
                        .with_value(Some(text("compact"))),
                    CreatableTopicConfig::default()
                        .with_name(text("retention.ms"))
                        .with_value(None),
                ]),
            CreatableTopic::default()
                .with_name(topic("placed"))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![
                    CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![BrokerId(1)]),
                ]),
        ])
        .with_timeout_ms(30_000)
        .with_validate_only(false)
}

fn delete_topics(version: i16) -> DeleteTopicsRequest {
    let request = DeleteTopicsRequest::default().with_timeout_ms(30_000);
    if version >= 6 {
        request.with_topics(vec![
            DeleteTopicState::default().with_name(Some(topic("orders"))),
            DeleteTopicState::default()
                .with_name(None)
                .with_topic_id(TOPIC_ID),
        ])
    } else {
        request.with_topic_names(vec![topic("orders"), topic("placed")])
    }
}

fn delete_records() -> DeleteRecordsRequest {
    DeleteRecordsRequest::default()
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(topic("orders"))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(10),
                    DeleteRecordsPartition::default()
                        .with_partition_index(1)
                        .with_offset(-1),
                ]),
        ])
        .with_timeout_ms(30_000)
}

fn init_producer_id(version: i16) -> InitProducerIdRequest {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(text("txn-1"))))
        .with_transaction_timeout_ms(60_000);
    if version >= 3 {
        request
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    } else {
        request
    }
}

fn offset_for_leader_epoch(version: i16) -> OffsetForLeaderEpochRequest {
    let request = OffsetForLeaderEpochRequest::default().with_topics(vec![
        OffsetForLeaderTopic::default()
            .with_topic(topic("orders"))
            .with_partitions(vec![
                OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(5)
                    .with_leader_epoch(4),
            ]),
    ]);
    if version >= 3 {
        request.with_replica_id(BrokerId(-1))
    } else {
        request
    }
}

fn describe_configs(version: i16) -> DescribeConfigsRequest {
    let request = DescribeConfigsRequest::default()
        .with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("orders"))
                .with_configuration_keys(Some(vec![text("retention.ms")])),
            DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(text("1"))
                .with_configuration_keys(None),
        ])
        .with_include_synonyms(true);
    if version >= 3 {
        request.with_include_documentation(true)
    } else {
        request
    }
}

fn alter_configs() -> AlterConfigsRequest {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    AlterConfigsRequest::default()
        .with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("orders"))
                .with_configs(vec![
                    AlterableConfig::default()
                        .with_name(text("retention.ms"))
                        .with_value(Some(text("1000"))),
                    AlterableConfig::default()
                        .with_name(text("cleanup.policy"))
                        .with_value(None),
                ]),
        ])
        .with_validate_only(true)
}

fn describe_log_dirs() -> DescribeLogDirsRequest {
    DescribeLogDirsRequest::default().with_topics(Some(vec![
        DescribableLogDirTopic::default()
            .with_topic(topic("orders"))
            .with_partitions(vec![0, 1]),
    ]))
}

fn create_partitions() -> CreatePartitionsRequest {
    CreatePartitionsRequest::default()
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(topic("orders"))
                .with_count(4)
                .with_assignments(Some(vec![
                    CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(1)]),
                ])),
            CreatePartitionsTopic::default()
                .with_name(topic("placed"))
                .with_count(2)
                .with_assignments(None),
        ])
        .with_timeout_ms(30_000)
        .with_validate_only(false)
}

fn incremental_alter_configs() -> IncrementalAlterConfigsRequest {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    IncrementalAlterConfigsRequest::default()
        .with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("orders"))
                .with_configs(vec![
                    AlterableConfig::default()
                        .with_name(text("retention.ms"))
                        .with_config_operation(0)
                        .with_value(Some(text("1000"))),
                    AlterableConfig::default()
                        .with_name(text("cleanup.policy"))
                        .with_config_operation(1)
                        .with_value(None),
                ]),
        ])
        .with_validate_only(false)
}

fn reassign() -> AlterPartitionReassignmentsRequest {
    AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            alter_partition_reassignments_request::ReassignableTopic::default()
                .with_name(TopicName(text("orders")))
                .with_partitions(vec![
                    alter_partition_reassignments_request::ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(Some(vec![BrokerId(1), BrokerId(2)])),
                ]),
        ])
}

fn describe_quorum() -> DescribeQuorumRequest {
    DescribeQuorumRequest::default().with_topics(vec![
        describe_quorum_request::TopicData::default()
            .with_topic_name(TopicName(text("__cluster_metadata")))
            .with_partitions(vec![
                describe_quorum_request::PartitionData::default().with_partition_index(0),
            ]),
    ])
}

fn describe_cluster(version: i16) -> DescribeClusterRequest {
    let mut request =
        DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    if version >= 1 {
        request = request.with_endpoint_type(1);
    }
    if version >= 2 {
        request = request.with_include_fenced_brokers(true);
    }
    request
}

fn describe_topic_partitions() -> DescribeTopicPartitionsRequest {
    use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
    DescribeTopicPartitionsRequest::default()
        .with_topics(vec![
            TopicRequest::default().with_name(topic("orders")),
            TopicRequest::default().with_name(topic("placed")),
        ])
        .with_response_partition_limit(2000)
        .with_cursor(Some(
            Cursor::default()
                .with_topic_name(topic("orders"))
                .with_partition_index(1),
        ))
}

// ---------------------------------------------------------------------------------------
// builder_roundtrip seeds

/// Batches of three records (keys, values, headers, null fields) with each codec, plus
/// a transactional one with producer fields and LogAppendTime.
fn builder_roundtrip_seeds() -> Seeds {
    let records = vec![
        BuilderRecord {
            timestamp: 1_700_000_000_000,
            key: Some(b"key-0".to_vec()),
            value: Some(b"value-0 value-0 value-0".to_vec()),
            headers: vec![(b"trace".to_vec(), Some(b"abc".to_vec()))],
        },
        BuilderRecord {
            timestamp: 1_700_000_000_005,
            key: None,
            value: Some(Vec::new()),
            headers: vec![(b"empty".to_vec(), None), (b"x".to_vec(), Some(vec![0]))],
        },
        BuilderRecord {
            timestamp: 1_699_999_999_990,
            key: Some(Vec::new()),
            value: None,
            headers: Vec::new(),
        },
    ];
    let mut seeds: Seeds = Compression::ALL
        .iter()
        .enumerate()
        .map(|(index, codec)| {
            let input = BuilderInput {
                codec: index as u8,
                base_offset: 0,
                records: records.clone(),
                ..BuilderInput::default()
            };
            (format!("codec-{}", codec.name()), input.to_bytes())
        })
        .collect();
    let transactional = BuilderInput {
        codec: 4,
        log_append_time: true,
        producer: Some((4_000, 2, 17)),
        transactional: true,
        base_offset: 1_000,
        partition_leader_epoch: 7,
        records,
    };
    seeds.push((
        "transactional-log-append-time".to_string(),
        transactional.to_bytes(),
    ));
    seeds.push(("empty".to_string(), BuilderInput::default().to_bytes()));
    seeds
}
