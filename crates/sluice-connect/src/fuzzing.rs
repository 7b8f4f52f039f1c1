//! Entry point for `fuzz/` (cargo-fuzz target `connect_records`): everything a Connect
//! worker reads that another process wrote — its group's metadata and assignments (from
//! any worker, Apache's included), the three internal topics' records, and record bytes
//! through the JSON converter (with and without the schema envelope) — must give a value
//! or an error, never a panic or an unbounded allocation.

use crate::Props;
use crate::converters;
use crate::group;
use crate::records::{self, ConfigRecord, ConfigState, Status, StatusKey, TopicStatus};

/// The first byte picks the decoder; for the key/value ones the second splits the rest
/// into a key and a value.
pub fn records(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 6 {
        0 => {
            if let Ok(state) = group::decode_metadata(rest) {
                // What decodes encodes back and decodes to the same.
                let again = group::encode_metadata(
                    &state.url,
                    state.config_offset,
                    Some(&state.allocation),
                );
                assert_eq!(group::decode_metadata(&again).ok(), Some(state));
            }
        }
        1 => {
            if let Ok(assignment) = group::decode_assignment(rest) {
                let again = group::encode_assignment(&assignment, 1);
                assert_eq!(group::decode_assignment(&again).ok(), Some(assignment));
            }
        }
        2 => {
            let (key, value) = split(rest);
            let key = String::from_utf8_lossy(key);
            let mut state = ConfigState::default();
            for value in [Some(value), None] {
                if let Ok(record) = ConfigRecord::decode(&key, value) {
                    state.apply(record, 0);
                }
            }
            let _ = state.target_state(&key);
        }
        3 => {
            let (key, value) = split(rest);
            let _ = StatusKey::decode(&String::from_utf8_lossy(key));
            let _ = Status::decode(value);
            let _ = TopicStatus::decode(value);
            let _ = records::decode_offset_key(key);
        }
        4 | 5 => {
            let mut props = Props::new();
            props.insert("schemas.enable".into(), (selector % 6 == 4).to_string());
            if let Ok(json) =
                converters::converter(converters::JSON_CONVERTER, &props, false, "value.converter")
                && let Ok((schema, value)) = json.to_connect("t", Some(rest))
            {
                // What it read it can write back.
                let _ = json.from_connect("t", schema.as_ref(), &value);
            }
        }
        _ => unreachable!("selector % 6"),
    }
}

fn split(rest: &[u8]) -> (&[u8], &[u8]) {
    match rest.split_first() {
        Some((&at, rest)) => rest.split_at((at as usize).min(rest.len())),
        None => (&[], &[]),
    }
}
