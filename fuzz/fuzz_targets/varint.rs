//! Reads a varint and a varlong from arbitrary bytes. Neither may panic; a value read
//! re-encodes (canonically, in at most the bytes it was read from) to bytes that read
//! back to the same value, and `*_size` agrees with the encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_protocol::varint::{
    read_varint, read_varlong, varint_size, varlong_size, write_varint, write_varlong,
};

fuzz_target!(|data: &[u8]| {
    if let Ok((value, used)) = read_varint(data) {
        assert!((1..=5).contains(&used) && used <= data.len(), "varint used {used}");
        let mut out = Vec::new();
        write_varint(&mut out, value);
        assert_eq!(out.len(), varint_size(value));
        assert!(out.len() <= used, "canonical varint longer than the input's");
        assert_eq!(read_varint(&out), Ok((value, out.len())));
    }
    if let Ok((value, used)) = read_varlong(data) {
        assert!((1..=10).contains(&used) && used <= data.len(), "varlong used {used}");
        let mut out = Vec::new();
        write_varlong(&mut out, value);
        assert_eq!(out.len(), varlong_size(value));
        assert!(out.len() <= used, "canonical varlong longer than the input's");
        assert_eq!(read_varlong(&out), Ok((value, out.len())));
    }
});
