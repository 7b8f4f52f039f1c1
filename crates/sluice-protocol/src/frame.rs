//! Kafka's framing: every request and response on the wire is a 4-byte big-endian size
//! and then that many bytes.
//!
//! [`read_frame`] reads one frame under a maximum size. It never trusts the size prefix
//! with memory: the buffer starts at [`FRAME_BUFFER_FIRST_BYTES`] (or the frame's size,
//! if smaller) and grows only when the bytes that arrive fill it, at most
//! [`FRAME_BUFFER_STEP_BYTES`] ahead of them, so a peer that declares 100 MB and then
//! trickles bytes holds a few KiB, not 100 MB. A frame is one contiguous [`Bytes`], so
//! what is decoded from it (a Fetch response's records) can be slices of it.
//!
//! [`size_prefix`] and [`finish_frame`] build frames for sending.
//!
//! What reading costs: one allocation for frames up to 16 KiB; for larger ones the first
//! 16 KiB are copied once into a buffer a step (1 MiB) larger, and frames past that grow
//! by doubling, copying at most their own size again (realloc of large blocks often moves
//! pages rather than bytes). A few `read`s per frame; nothing is read past the frame.

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// A frame's first buffer (smaller frames get their size): what a peer that declared a
/// large frame and sent little of it makes the reader hold.
pub const FRAME_BUFFER_FIRST_BYTES: usize = 16 << 10;
/// How far a frame's buffer is reserved ahead of the bytes received once they fill what
/// it has: the most a reader holds beyond what the peer has sent.
pub const FRAME_BUFFER_STEP_BYTES: usize = 1 << 20;
/// The size prefix's own length.
pub const SIZE_PREFIX_BYTES: usize = 4;

/// Why a frame could not be read or built.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The socket failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The size prefix is negative.
    #[error("negative frame size {0}")]
    NegativeSize(i32),
    /// The size prefix is over the reader's limit.
    #[error("frame of {size} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge { size: usize, max_bytes: usize },
    /// The stream ended inside a frame.
    #[error("connection closed inside a frame ({received} of {size} bytes)")]
    Truncated { received: usize, size: usize },
    /// A frame to send is larger than a size prefix can say.
    #[error("a frame of {0} bytes is larger than the protocol allows")]
    TooLargeToSend(usize),
}

/// Reads one frame (the bytes after the size prefix), at most `max_bytes` long.
/// `Ok(None)` at a clean end of stream (before a size prefix).
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
) -> Result<Option<Bytes>, FrameError> {
    let mut prefix = [0u8; SIZE_PREFIX_BYTES];
    match reader.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(FrameError::Io(error)),
    }
    let size = i32::from_be_bytes(prefix);
    let size = usize::try_from(size).map_err(|_| FrameError::NegativeSize(size))?;
    if size > max_bytes {
        return Err(FrameError::TooLarge { size, max_bytes });
    }
    // A first buffer of at most FRAME_BUFFER_FIRST_BYTES; once bytes fill it the frame is
    // arriving and the buffer grows a step ahead of them.
    let mut frame = BytesMut::with_capacity(size.min(FRAME_BUFFER_FIRST_BYTES));
    while frame.len() < size {
        let remaining = size - frame.len();
        if frame.len() == frame.capacity() {
            frame.reserve(remaining.min(FRAME_BUFFER_STEP_BYTES));
        }
        // `take` keeps the read inside this frame: the buffer's spare capacity may be
        // larger than what is left of it, and the bytes after it are the next frame's.
        let read = (&mut *reader)
            .take(remaining as u64)
            .read_buf(&mut frame)
            .await?;
        if read == 0 {
            return Err(FrameError::Truncated {
                received: frame.len(),
                size,
            });
        }
    }
    debug_assert_eq!(frame.len(), size);
    Ok(Some(frame.freeze()))
}

/// Starts a frame: a buffer holding a placeholder size prefix, for [`finish_frame`].
pub fn size_prefix(capacity: usize) -> BytesMut {
    let mut frame = BytesMut::with_capacity(SIZE_PREFIX_BYTES + capacity);
    frame.put_i32(0);
    frame
}

/// Writes the size of what follows the prefix into a frame begun with [`size_prefix`].
pub fn finish_frame(mut frame: BytesMut) -> Result<Bytes, FrameError> {
    assert!(
        frame.len() >= SIZE_PREFIX_BYTES,
        "a frame is begun with size_prefix"
    );
    let body = frame.len() - SIZE_PREFIX_BYTES;
    let size = i32::try_from(body).map_err(|_| FrameError::TooLargeToSend(body))?;
    frame[..SIZE_PREFIX_BYTES].copy_from_slice(&size.to_be_bytes());
    Ok(frame.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Reads the frames `bytes` holds, as one stream, with a limit of 64 bytes.
    async fn read_all(bytes: &[u8]) -> (Vec<Bytes>, Result<(), String>) {
        let mut reader = bytes;
        let mut frames = Vec::new();
        loop {
            match read_frame(&mut reader, 64).await {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => return (frames, Ok(())),
                Err(error) => return (frames, Err(error.to_string())),
            }
        }
    }

    #[tokio::test]
    async fn frames_are_read_whole_and_bad_prefixes_are_errors() {
        /// The stream, the frames read from it, the error that ends it.
        type Case = (
            &'static [u8],
            &'static [&'static [u8]],
            Option<&'static str>,
        );
        let cases: &[Case] = &[
            (&[], &[], None),
            (&[0, 0, 0, 0], &[b""], None),
            (&[0, 0, 0, 2, 1, 2, 0, 0, 0, 1, 3], &[&[1, 2], &[3]], None),
            // A stream that ends inside a size prefix ends as cleanly as one before it.
            (&[0, 0], &[], None),
            (
                &[0, 0, 0, 3, 1],
                &[],
                Some("connection closed inside a frame (1 of 3 bytes)"),
            ),
            (
                &[0xff, 0xff, 0xff, 0xff],
                &[],
                Some("negative frame size -1"),
            ),
            (
                &[0, 0, 0, 65],
                &[],
                Some("frame of 65 bytes exceeds the limit of 64 bytes"),
            ),
            (
                &[0x7f, 0xff, 0xff, 0xff],
                &[],
                Some("frame of 2147483647 bytes exceeds the limit of 64 bytes"),
            ),
        ];
        for (stream, expected_frames, expected_error) in cases {
            let (frames, ended) = read_all(stream).await;
            let frames: Vec<&[u8]> = frames.iter().map(|frame| &frame[..]).collect();
            assert_eq!(frames, *expected_frames, "{stream:?}");
            assert_eq!(ended.err().as_deref(), *expected_error, "{stream:?}");
        }
    }

    #[tokio::test]
    async fn a_frame_larger_than_its_first_buffer_arrives_whole() {
        let size = FRAME_BUFFER_FIRST_BYTES * 3 + 5;
        let body: Vec<u8> = (0..size).map(|i| i as u8).collect();
        let (mut writer, mut reader) = tokio::io::duplex(4096);
        let sent = body.clone();
        let peer = tokio::spawn(async move {
            writer.write_all(&(size as i32).to_be_bytes()).await?;
            writer.write_all(&sent).await?;
            // The next frame's first bytes: not part of this one.
            writer.write_all(&[0, 0]).await
        });
        let frame = read_frame(&mut reader, size).await.unwrap().unwrap();
        assert_eq!(frame, body);
        peer.await.unwrap().unwrap();
    }

    #[test]
    fn a_finished_frame_carries_its_size() {
        let mut frame = size_prefix(3);
        frame.extend_from_slice(b"abc");
        assert_eq!(&finish_frame(frame).unwrap()[..], b"\0\0\0\x03abc");
        assert_eq!(&finish_frame(size_prefix(0)).unwrap()[..], b"\0\0\0\0");
    }
}
