//! A request frame (after its size prefix) decoded as the broker's network layer does:
//! see `sluice_broker::fuzzing::request_frame`. The counting allocator lets it check
//! that decoding holds memory in proportion to the frame, not to the counts it claims.
#![no_main]

#[global_allocator]
static ALLOCATOR: sluice_broker::fuzzing::CountingAllocator =
    sluice_broker::fuzzing::CountingAllocator;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_broker::fuzzing::request_frame(data));
