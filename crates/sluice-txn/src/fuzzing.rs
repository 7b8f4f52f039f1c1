//! The body of the fuzz target on this crate's decoders (`fuzz/`, and the replay test
//! `crates/sluice-broker/tests/fuzz_corpus.rs`). Not an API.

use crate::records::{decode_key, decode_value, encode_key, encode_value_version};
use crate::state::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState};

/// The transactional id values are decoded for (a value does not hold it: its key does).
const TRANSACTIONAL_ID: &str = "fuzz-txn";

/// Target `txn_records`: byte 0 picks the decoder (even: a `__transaction_state` key,
/// odd: a value, of any version), the rest is decoded. Decoding never panics; what
/// decodes re-encodes to bytes that decode to the same thing (the encoding is a fixed
/// point).
pub fn txn_records(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    if selector % 2 == 0 {
        key(input);
    } else {
        value(input);
    }
}

fn key(input: &[u8]) {
    // `None`: a key version that is not a transaction record; nothing to re-encode.
    let Ok(Some(id)) = decode_key(input) else {
        return;
    };
    let encoded = encode_key(&id);
    assert_eq!(
        decode_key(&encoded),
        Ok(Some(id)),
        "an encoded key does not decode to its transactional id"
    );
}

fn value(input: &[u8]) {
    let Ok(meta) = decode_value(TRANSACTIONAL_ID, input) else {
        return;
    };
    assert_eq!(meta.transactional_id, TRANSACTIONAL_ID);
    assert_eq!(meta.last_producer_epoch, NO_PRODUCER_EPOCH, "not persisted");
    assert!(
        meta.state != TxnState::Empty || meta.partitions.is_empty(),
        "an Empty transaction decoded with partitions"
    );

    // Version 1 holds every field (versions above 1 are read as it).
    let v1 = encode_value_version(&meta, 1);
    let again = decode_value(TRANSACTIONAL_ID, &v1)
        .unwrap_or_else(|e| panic!("an encoded version-1 value does not decode: {e}"));
    assert_eq!(again, meta, "version 1 is not a fixed point");
    assert_eq!(encode_value_version(&again, 1), v1);

    // Version 0 has no tagged fields (they read as their defaults) and classic strings
    // (at most i16::MAX bytes, so a longer topic of a flexible value has no version-0
    // form).
    let version = i16::from_be_bytes([input[0], input[1]]);
    let without_tagged_fields = TxnMetadata {
        previous_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        client_transaction_version: 0,
        ..meta.clone()
    };
    if version == 0 {
        assert_eq!(
            without_tagged_fields, meta,
            "a version-0 value has tagged fields"
        );
    }
    if meta
        .partitions
        .iter()
        .all(|(topic, _)| i16::try_from(topic.len()).is_ok())
    {
        let v0 = encode_value_version(&meta, 0);
        let again = decode_value(TRANSACTIONAL_ID, &v0)
            .unwrap_or_else(|e| panic!("an encoded version-0 value does not decode: {e}"));
        assert_eq!(
            again, without_tagged_fields,
            "version 0 is not a fixed point"
        );
        assert_eq!(encode_value_version(&again, 0), v0);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;
    use crate::records::encode_value;

    fn seed_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/txn_records")
    }

    fn meta(state: TxnState, partitions: &[(&str, i32)]) -> TxnMetadata {
        TxnMetadata {
            transactional_id: TRANSACTIONAL_ID.to_string(),
            producer_id: 4000,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: 3,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms: 60_000,
            state,
            partitions: partitions
                .iter()
                .map(|(topic, partition)| (topic.to_string(), *partition))
                .collect::<BTreeSet<_>>(),
            txn_start_ms: 1_700_000_000_000,
            last_update_ms: 1_700_000_000_500,
            client_transaction_version: 0,
        }
    }

    /// The `txn_records` seeds: byte 0 (0 key, 1 value), then what Kafka 4.1 writes in
    /// `__transaction_state`, both value versions, written by this crate's encoders
    /// (plus one value with unknown tagged fields, by hand).
    fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        let with = |selector: u8, bytes: Vec<u8>| [vec![selector], bytes].concat();
        let partitions = [("orders", 0), ("orders", 3), ("payments", 1)];
        let mut prepare_commit = meta(TxnState::PrepareCommit, &partitions);
        prepare_commit.previous_producer_id = 3999;
        prepare_commit.next_producer_id = 4001;
        prepare_commit.client_transaction_version = 2;
        let mut empty = meta(TxnState::Empty, &[]);
        empty.txn_start_ms = -1;
        empty.client_transaction_version = 2;

        // Version 2 (read as 1): a partition entry and the value each carry an unknown
        // tagged field; the value also ClientTransactionVersion.
        let mut unknown_tags = vec![0, 2];
        unknown_tags.extend_from_slice(&4000i64.to_be_bytes()); // ProducerId
        unknown_tags.extend_from_slice(&3i16.to_be_bytes()); // ProducerEpoch
        unknown_tags.extend_from_slice(&60_000i32.to_be_bytes()); // TransactionTimeoutMs
        unknown_tags.push(TxnState::PrepareAbort.id() as u8);
        unknown_tags.push(2); // one topic
        unknown_tags.extend_from_slice(b"\x07orders");
        unknown_tags.push(2); // one partition
        unknown_tags.extend_from_slice(&4i32.to_be_bytes());
        unknown_tags.extend_from_slice(&[1, 5, 2, 0xab, 0xcd]); // tag 5, 2 bytes
        unknown_tags.extend_from_slice(&1_700_000_000_500i64.to_be_bytes());
        unknown_tags.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        unknown_tags.extend_from_slice(&[2, 9, 1, 0xee, 2, 2, 0, 2]); // tag 9, then tag 2

        vec![
            ("key", with(0, encode_key("orders-txn"))),
            (
                "value-v0-ongoing",
                with(
                    1,
                    encode_value_version(&meta(TxnState::Ongoing, &partitions), 0),
                ),
            ),
            (
                "value-v1-prepare-commit",
                with(1, encode_value_version(&prepare_commit, 1)),
            ),
            ("value-v1-empty", with(1, encode_value(&empty))),
            ("value-v2-unknown-tags", with(1, unknown_tags)),
        ]
    }

    /// The committed seeds are what [`seeds`] writes, and inputs the decoders accept (so
    /// fuzzing starts from the formats' valid shapes, not only from their refusals).
    #[test]
    fn seeds_are_generated_and_decode() {
        let mut on_disk: Vec<String> = std::fs::read_dir(seed_dir())
            .expect("fuzz/seeds/txn_records")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut names: Vec<String> = seeds().iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        assert_eq!(
            on_disk, names,
            "regenerate with `cargo test -p sluice-txn -- --ignored write_txn_records_seeds`"
        );
        for (name, bytes) in seeds() {
            let committed = std::fs::read(seed_dir().join(name)).unwrap();
            assert!(committed == bytes, "fuzz/seeds/txn_records/{name} differs");
            txn_records(&bytes);
        }

        let seed = |name: &str| std::fs::read(seed_dir().join(name)).unwrap()[1..].to_vec();
        assert_eq!(decode_key(&seed("key")), Ok(Some("orders-txn".to_string())));
        let ongoing = decode_value(TRANSACTIONAL_ID, &seed("value-v0-ongoing")).unwrap();
        assert_eq!(
            (ongoing.state, ongoing.partitions.len()),
            (TxnState::Ongoing, 3)
        );
        let commit = decode_value(TRANSACTIONAL_ID, &seed("value-v1-prepare-commit")).unwrap();
        assert_eq!(
            (
                commit.partitions.len(),
                commit.previous_producer_id,
                commit.next_producer_id,
                commit.client_transaction_version
            ),
            (3, 3999, 4001, 2)
        );
        let empty = decode_value(TRANSACTIONAL_ID, &seed("value-v1-empty")).unwrap();
        assert_eq!(empty.state, TxnState::Empty);
        let unknown = decode_value(TRANSACTIONAL_ID, &seed("value-v2-unknown-tags")).unwrap();
        assert_eq!(
            (
                unknown.state,
                unknown.partitions.iter().next().cloned(),
                unknown.client_transaction_version
            ),
            (TxnState::PrepareAbort, Some(("orders".to_string(), 4)), 2)
        );
    }

    /// Writes the seeds (replacing those in `fuzz/seeds/txn_records/`).
    #[test]
    #[ignore = "writes fuzz/seeds/txn_records/; run by hand after changing the seeds"]
    fn write_txn_records_seeds() {
        let dir = seed_dir();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
        }
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }

    /// Inputs the target must survive: cut and bent values, a key of another version.
    #[test]
    fn damaged_inputs_pass() {
        txn_records(&[]);
        txn_records(&[0]);
        txn_records(&[0, 0, 1, 0, 0]);
        txn_records(&[1, 0xff, 0xff]);
        for (_, bytes) in seeds() {
            for cut in 0..bytes.len() {
                txn_records(&bytes[..cut]);
            }
            for at in 1..bytes.len() {
                let mut bent = bytes.clone();
                bent[at] ^= 0xff;
                txn_records(&bent);
            }
        }
    }
}
