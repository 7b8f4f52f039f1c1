//! A peer cannot make a connection allocate the size a frame declares: the frame's
//! buffer grows only as its bytes arrive. Measured with a counting allocator (this test
//! binary's own), through the whole client-side path: a [`FrameConnection`] whose peer
//! answers a request with a 256 MiB size prefix and then a trickle of bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sluice_protocol::connection::{ConnectionError, ConnectionSettings, FrameConnection};
use sluice_protocol::frame::{self, FRAME_BUFFER_FIRST_BYTES, FRAME_BUFFER_STEP_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The system allocator, remembering the largest single allocation asked of it.
struct LargestAllocation;

static LARGEST_BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST_BYTES.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as received; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System` through `alloc`/`realloc` above.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST_BYTES.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: forwarded as received; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

#[tokio::test(flavor = "current_thread")]
async fn a_huge_declared_size_followed_by_a_trickle_allocates_what_arrived() {
    const DECLARED_BYTES: usize = 256 << 20;
    // Past the first buffer, so the buffer grows once.
    const SENT_BYTES: usize = FRAME_BUFFER_FIRST_BYTES + 4096;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).await.unwrap();
        let mut request = vec![0; i32::from_be_bytes(size) as usize];
        stream.read_exact(&mut request).await.unwrap();
        stream
            .write_all(&(DECLARED_BYTES as i32).to_be_bytes())
            .await
            .unwrap();
        // The correlation id, then bytes in small pieces; then the peer goes away.
        stream.write_all(&request[4..8]).await.unwrap();
        for _ in 0..SENT_BYTES / 512 {
            stream.write_all(&[7; 512]).await.unwrap();
            tokio::task::yield_now().await;
        }
    });
    let settings = ConnectionSettings {
        response_max_bytes: 2 * DECLARED_BYTES,
        max_in_flight_requests: 1,
    };
    let connection = FrameConnection::connect(&address, Duration::from_secs(5), settings, None)
        .await
        .unwrap();
    let correlation_id = connection.next_correlation_id();
    let mut request = frame::size_prefix(8);
    request.extend_from_slice(&[0, 18, 0, 0]);
    request.extend_from_slice(&correlation_id.to_be_bytes());
    let request = frame::finish_frame(request).unwrap();
    let error = connection
        .request(correlation_id, request, Duration::from_secs(30))
        .await
        .unwrap_err();
    peer.await.unwrap();
    let ConnectionError::Disconnected { reason, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(
        reason,
        &format!(
            "connection closed inside a frame ({} of {DECLARED_BYTES} bytes)",
            SENT_BYTES + 4
        )
    );
    let largest = LARGEST_BYTES.load(Ordering::Relaxed);
    assert!(
        largest <= SENT_BYTES + FRAME_BUFFER_STEP_BYTES,
        "the largest allocation was {largest} bytes for {SENT_BYTES} received"
    );
}
