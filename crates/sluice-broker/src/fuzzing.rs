//! The body of the `request_frame` fuzz target, so `fuzz/` (cargo-fuzz, libFuzzer) and
//! the replay test `tests/fuzz_corpus.rs` run the same checks on the same bytes.
//!
//! Not an API: nothing in Sluice calls this. The input is one request frame as the
//! network layer holds it after reading the 4-byte size prefix: the request header
//! (api key, api version, correlation id, client id, and tagged fields from header v2)
//! and then the body. [`decode_frame`] decodes it exactly as `network::handle_frame` and
//! `apis::dispatch` do before a handler runs; nothing may panic, and with
//! [`CountingAllocator`] installed as the global allocator the decoding may not hold more
//! than [`allocation_bound_bytes`] of memory at once.
//!
//! Why a bound and not "no big allocation": a request names its own element counts, and
//! before `vendor/kafka-protocol/SLUICE-PATCH.md` a 40-byte frame claiming 2^31 elements
//! reserved tens of gigabytes. With the patch an array reserves at most one element per
//! byte left, so what decoding holds grows with the input, by at most the in-memory size
//! of the largest decoded element per input byte (nested arrays add up). The bound is
//! that, with headroom; `docs/fuzzing.md` gives the worst ratio the fuzzer has seen.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::apis::supported_versions;
use crate::decode_request;

/// Target `request_frame`: [`decode_frame`] never panics, and (with
/// [`CountingAllocator`] installed) holds at most [`allocation_bound_bytes`] at once.
pub fn request_frame(data: &[u8]) {
    let (_, peak_bytes) = measure_allocations(|| decode_frame(data));
    if let Some(peak_bytes) = peak_bytes {
        let bound_bytes = allocation_bound_bytes(data.len());
        assert!(
            peak_bytes <= bound_bytes,
            "decoding a {}-byte request held {peak_bytes} bytes at once (bound {bound_bytes})",
            data.len()
        );
    }
}

/// Decodes a request frame (without its size prefix) as the broker does before
/// serving it: the fixed header fields, the request header at the version the API
/// key and version call for, then the body with the `kafka-protocol` type of that API
/// after the version check ([`crate::decode_request`]). `Err` says why the broker
/// would close the connection.
pub fn decode_frame(data: &[u8]) -> Result<(), String> {
    let frame = Bytes::copy_from_slice(data);
    if frame.len() < 8 {
        return Err(format!(
            "request of {} bytes is shorter than a header",
            frame.len()
        ));
    }
    let api_key_id = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    if api_key_id == crate::quorum::RAFT_API_KEY {
        // The metadata quorum's own requests (JSON bodies), as `network::handle_frame`
        // decodes them.
        return crate::quorum::rpc::decode_request(frame).map(|(id, _)| {
            assert_eq!(id, correlation_id, "the quorum request's correlation id");
        });
    }
    let Ok(api_key) = ApiKey::try_from(api_key_id) else {
        return Err(format!("unknown API key {api_key_id}"));
    };
    let mut body = frame.clone();
    let header_version = api_key.request_header_version(version);
    let version = match RequestHeader::decode(&mut body, header_version) {
        Ok(header) => {
            // The network layer routes on the raw api key and answers with the raw
            // correlation id but serves the header's version: they must be one request.
            assert_eq!(
                (
                    header.request_api_key,
                    header.request_api_version,
                    header.correlation_id
                ),
                (api_key_id, version, correlation_id),
                "the request header disagrees with the frame's first 8 bytes"
            );
            header.request_api_version
        }
        // An ApiVersions request whose header does not decode is still answered (with
        // UNSUPPORTED_VERSION when its version is unknown), from an empty body.
        Err(_) if api_key == ApiKey::ApiVersions => {
            body = Bytes::new();
            version
        }
        Err(error) => {
            return Err(format!(
                "malformed {api_key:?} v{version} header (v{header_version}): {error}"
            ));
        }
    };
    if api_key == ApiKey::ApiVersions {
        // `apis::dispatch` answers an ApiVersions request of a version it does not serve
        // with UNSUPPORTED_VERSION and never reads its body (KIP-511).
        let (min, max) = supported_versions(api_key).expect("ApiVersions is served");
        if version < min || version > max {
            return Ok(());
        }
    }
    decode_request(api_key, version, &mut body)
}

/// The most [`request_frame`] lets decoding an `input_bytes` frame hold at once: 128 B
/// per input byte plus 64 KiB. The largest request element structs are a few hundred
/// bytes in memory and take at least one byte on the wire; a reservation of 2^31
/// elements, the bug this guards against, is gigabytes.
pub fn allocation_bound_bytes(input_bytes: usize) -> usize {
    const PER_INPUT_BYTE: usize = 128;
    const FIXED_BYTES: usize = 64 * 1024;
    input_bytes
        .saturating_mul(PER_INPUT_BYTE)
        .saturating_add(FIXED_BYTES)
}

/// The system allocator, counting the bytes each thread holds (allocated minus freed)
/// and the peak since [`measure_allocations`] started. Install it in a fuzz target or a
/// test binary with `#[global_allocator]`; without it, [`measure_allocations`] measures
/// nothing and [`request_frame`] checks no bound.
pub struct CountingAllocator;

static COUNTING_INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    // Signed: a thread may free what another thread (or the time before a measurement)
    // allocated. `const` and without a destructor, so touching them never allocates.
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
    static PEAK_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn count(change_bytes: isize) {
    let _ = LIVE_BYTES.try_with(|live| {
        let now = live.get().wrapping_add(change_bytes);
        live.set(now);
        let _ = PEAK_BYTES.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: every call goes to `System` unchanged; the counting touches only
// thread-locals that need no allocation.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            COUNTING_INSTALLED.store(true, Ordering::Relaxed);
            count(layout.size() as isize);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            COUNTING_INSTALLED.store(true, Ordering::Relaxed);
            count(layout.size() as isize);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(pointer, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let new_pointer = unsafe { System.realloc(pointer, layout, new_size) };
        if !new_pointer.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new_pointer
    }
}

/// Runs `f` and returns its result with the most bytes this thread held at once during
/// it, beyond what it held before; `None` unless [`CountingAllocator`] is the global
/// allocator.
pub fn measure_allocations<T>(f: impl FnOnce() -> T) -> (T, Option<usize>) {
    let base = LIVE_BYTES.with(Cell::get);
    PEAK_BYTES.with(|peak| peak.set(base));
    let result = f();
    let peak = PEAK_BYTES.with(Cell::get);
    let measured = COUNTING_INSTALLED
        .load(Ordering::Relaxed)
        .then(|| usize::try_from(peak - base).unwrap_or(0));
    (result, measured)
}
