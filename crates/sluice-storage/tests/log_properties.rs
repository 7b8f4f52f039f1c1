//! Property tests: random sequences of appends (batch sizes, codecs, timestamps, segment
//! and index sizes), with clean and unclean reopens in between, read back byte-identical
//! with contiguous offsets, and every timestamp lookup agrees with a brute-force scan.

use bytes::Bytes;
use proptest::prelude::*;
use sluice_protocol::record_batch::{set_base_offset, set_partition_leader_epoch};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

#[derive(Debug, Clone)]
enum Step {
    Append {
        codec: Compression,
        /// (timestamp offset from T0, value bytes, has key) per record.
        records: Vec<(i64, usize, bool)>,
        leader_epoch: i32,
    },
    Reopen {
        clean: bool,
    },
}

const T0: i64 = 1_600_000_000_000;

fn step() -> impl Strategy<Value = Step> {
    let codec = prop::sample::select(Compression::ALL.to_vec());
    let record = (0i64..5_000, 0usize..400, any::<bool>());
    prop_oneof![
        8 => (codec, prop::collection::vec(record, 1..25), 0i32..3).prop_map(|(codec, records, leader_epoch)| Step::Append { codec, records, leader_epoch }),
        1 => any::<bool>().prop_map(|clean| Step::Reopen { clean }),
    ]
}

fn build(codec: Compression, records: &[(i64, usize, bool)]) -> (Vec<u8>, Vec<i64>) {
    let mut builder = RecordBatchBuilder::new(codec);
    for (i, (timestamp, value_bytes, has_key)) in records.iter().enumerate() {
        builder
            .append(&NewRecord {
                timestamp: T0 + timestamp,
                key: has_key.then(|| Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(vec![(i % 251) as u8; *value_bytes])),
                headers: vec![],
            })
            .unwrap();
    }
    (
        builder.build().to_vec(),
        records.iter().map(|r| T0 + r.0).collect(),
    )
}

fn open(dir: &std::path::Path, config: &LogConfig, clean: bool) -> Log {
    let options = LogOpenOptions {
        clean_shutdown: clean,
        ..LogOpenOptions::default()
    };
    Log::open(dir, config.clone(), options).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn appends_read_back_identical_and_lookups_match_a_scan(
        steps in prop::collection::vec(step(), 1..40),
        segment_bytes in 300u32..20_000,
        index_interval_bytes in 1u32..3_000,
        max_read_bytes in 1u64..30_000,
    ) {
        let temp = tempfile::tempdir().unwrap();
        let config = LogConfig { segment_bytes, index_interval_bytes, ..LogConfig::default() };
        let mut log = open(temp.path(), &config, false);
        // The model: every batch as it must be stored, and every record's timestamp.
        let mut stored: Vec<Vec<u8>> = Vec::new();
        let mut timestamps: Vec<i64> = Vec::new();
        let mut epoch = 0;
        for step in &steps {
            match step {
                Step::Append { codec, records, leader_epoch } => {
                    let (mut bytes, record_timestamps) = build(*codec, records);
                    epoch = epoch.max(*leader_epoch);
                    let info = log.append_as_leader(&mut bytes, epoch, T0).unwrap();
                    prop_assert_eq!(info.first_offset, timestamps.len() as i64);
                    prop_assert_eq!(info.last_offset, (timestamps.len() + records.len() - 1) as i64);
                    let mut expected = bytes.clone();
                    set_base_offset(&mut expected, info.first_offset);
                    set_partition_leader_epoch(&mut expected, epoch);
                    prop_assert_eq!(&bytes, &expected);
                    stored.push(expected);
                    timestamps.extend(record_timestamps);
                }
                Step::Reopen { clean } => {
                    if *clean { log.close().unwrap(); }
                    drop(log);
                    log = open(temp.path(), &config, *clean);
                }
            }
        }
        prop_assert_eq!(log.log_end_offset(), timestamps.len() as i64);

        // Byte-identical, in reads of any size.
        let mut read: Vec<Vec<u8>> = Vec::new();
        let mut offset = 0;
        while offset < log.log_end_offset() {
            let data = log.read(offset, max_read_bytes, None, true).unwrap();
            prop_assert!(!data.records.is_empty());
            prop_assert!(data.records.len() as u64 <= max_read_bytes || batches(data.records.clone()).count() == 1);
            for batch in batches(data.records) {
                let batch = batch.unwrap();
                prop_assert_eq!(batch.base_offset(), offset, "offsets are contiguous");
                batch.validate().unwrap();
                offset = batch.next_offset();
                read.push(batch.bytes().to_vec());
            }
        }
        prop_assert_eq!(&read, &stored);

        // Lookups agree with brute force.
        for target in (-10..5_100).step_by(97).map(|d| T0 + d) {
            let brute = timestamps.iter().position(|t| *t >= target).map(|i| (i as i64, timestamps[i]));
            prop_assert_eq!(log.offset_for_timestamp(target).unwrap(), brute, "target {}", target);
        }
        let max = timestamps.iter().max().copied();
        let brute_max = max.map(|m| (timestamps.iter().position(|t| *t == m).unwrap() as i64, m));
        prop_assert_eq!(log.max_timestamp_offset().unwrap(), brute_max);

        // Any offset reads from the batch that contains it.
        for probe in (0..timestamps.len() as i64).step_by(13) {
            let data = log.read(probe, 1, None, true).unwrap();
            let first = batches(data.records).next().unwrap().unwrap();
            prop_assert!(first.base_offset() <= probe && probe <= first.last_offset());
        }
    }
}
