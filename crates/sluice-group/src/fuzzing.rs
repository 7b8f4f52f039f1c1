//! The body of the fuzz target on this crate's decoders (`fuzz/`, and the replay test
//! `crates/sluice-broker/tests/fuzz_corpus.rs`). Not an API.

use crate::records::{
    decode_group_value, decode_key, decode_offset_value, encode_group_value, encode_key,
    encode_offset_value,
};

/// Target `offsets_records`: byte 0 picks the decoder (mod 3: a `__consumer_offsets`
/// key, an offset value, a group metadata value), the rest is decoded. Decoding never
/// panics; what decodes re-encodes to bytes that decode and re-encode to the same bytes.
pub fn offsets_records(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => {
            if let Ok(key) = decode_key(input) {
                let encoded = encode_key(&key);
                let again = decode_key(&encoded).expect("an encoded key decodes");
                assert_eq!(encode_key(&again), encoded);
            }
        }
        1 => {
            if let Ok(value) = decode_offset_value(input) {
                let encoded = encode_offset_value(&value);
                let again = decode_offset_value(&encoded).expect("an encoded offset decodes");
                assert_eq!(encode_offset_value(&again), encoded);
            }
        }
        _ => {
            if let Ok(value) = decode_group_value(input) {
                let encoded = encode_group_value(&value);
                let again = decode_group_value(&encoded).expect("an encoded group decodes");
                assert_eq!(encode_group_value(&again), encoded);
            }
        }
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
        for data in [
            seed("offset-key"),
            seed("group-key"),
            seed("offset-value-v3"),
            seed("group-value-v3"),
        ] {
            offsets_records(&data);
        }
    }
}
