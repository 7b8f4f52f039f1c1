//! The body of the fuzz target on this crate's decoders (`fuzz/`, and the replay test
//! `crates/sluice-broker/tests/fuzz_corpus.rs`). Not an API.

use crate::records::*;

/// Checks that what `decode` accepts re-encodes to bytes that decode and re-encode to
/// the same bytes (the encoding is a fixed point).
fn fixed_point<T, E>(
    input: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, E>,
    encode: impl Fn(&T) -> Vec<u8>,
) {
    if let Ok(value) = decode(input) {
        let encoded = encode(&value);
        let Ok(again) = decode(&encoded) else {
            panic!("an encoded record does not decode");
        };
        assert_eq!(encode(&again), encoded);
    }
}

/// Target `offsets_records`: byte 0 picks the decoder (mod 9: a `__consumer_offsets`
/// key, an offset value, a classic group metadata value, then the six KIP-848 values:
/// group metadata, partition metadata, member metadata, target assignment metadata,
/// target assignment member, current member assignment), the rest is decoded.
/// Decoding never panics; the encoding of what decodes is a fixed point.
pub fn offsets_records(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match selector % 9 {
        0 => fixed_point(input, decode_key, encode_key),
        1 => fixed_point(input, decode_offset_value, encode_offset_value),
        2 => fixed_point(input, decode_group_value, encode_group_value),
        3 => fixed_point(
            input,
            decode_consumer_group_metadata_value,
            encode_consumer_group_metadata_value,
        ),
        4 => fixed_point(
            input,
            decode_consumer_group_partition_metadata_value,
            encode_consumer_group_partition_metadata_value,
        ),
        5 => fixed_point(
            input,
            decode_consumer_group_member_metadata_value,
            encode_consumer_group_member_metadata_value,
        ),
        6 => fixed_point(
            input,
            decode_consumer_group_target_assignment_metadata_value,
            encode_consumer_group_target_assignment_metadata_value,
        ),
        7 => fixed_point(
            input,
            decode_consumer_group_target_assignment_member_value,
            encode_consumer_group_target_assignment_member_value,
        ),
        _ => fixed_point(
            input,
            decode_consumer_group_current_member_assignment_value,
            encode_consumer_group_current_member_assignment_value,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed seeds are inputs the decoders accept (so fuzzing starts from the
    /// formats' valid shapes, not only from their refusals).
    #[test]
    fn seeds_decode() {
        let seed = |name: &str| {
            let path = format!(
                "{}/../../fuzz/seeds/offsets_records/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        assert!(decode_key(&seed("offset-key")[1..]).is_ok());
        assert!(decode_key(&seed("group-key")[1..]).is_ok());
        let offset = decode_offset_value(&seed("offset-value-v3")[1..]).unwrap();
        assert_eq!((offset.offset, offset.leader_epoch), (42, 5));
        let group = decode_group_value(&seed("group-value-v3")[1..]).unwrap();
        assert_eq!(group.members.len(), 1);
        let subscription =
            sluice_protocol::consumer_protocol::decode_subscription(&group.members[0].subscription)
                .unwrap();
        assert_eq!(subscription.topics, vec!["orders".to_string()]);
        let metadata =
            decode_consumer_group_metadata_value(&seed("consumer-group-metadata-v0")[1..]).unwrap();
        assert_eq!(metadata.epoch, 5);
        let target = decode_consumer_group_target_assignment_metadata_value(
            &seed("target-assignment-metadata-v0")[1..],
        )
        .unwrap();
        assert_eq!(target.assignment_epoch, 7);
        for data in [
            seed("consumer-group-metadata-v0"),
            seed("target-assignment-metadata-v0"),
            seed("offset-key"),
            seed("group-key"),
            seed("offset-value-v3"),
            seed("group-value-v3"),
        ] {
            offsets_records(&data);
        }
    }
}
