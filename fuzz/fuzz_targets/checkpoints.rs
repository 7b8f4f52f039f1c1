//! Feeds arbitrary bytes, as a file, to the readers of Kafka's small text files:
//! `recovery-point-offset-checkpoint` / `log-start-offset-checkpoint`,
//! `leader-epoch-checkpoint` and `partition.metadata`. None may panic, and whatever a
//! reader accepts must survive a write and a second read unchanged.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_storage::checkpoint::{
    read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata,
    write_leader_epoch_checkpoint, write_offset_checkpoint, write_partition_metadata,
};

/// One scratch directory per process, on tmpfs when there is one (fsync is then free).
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .expect("a scratch directory");
        let path = dir.path().to_path_buf();
        (dir, path)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let input = dir.join("input");
    std::fs::write(&input, data).expect("write the input file");
    let output = dir.join("output");

    if let Ok(entries) = read_offset_checkpoint(&input) {
        write_offset_checkpoint(&output, &entries).expect("write offset checkpoint");
        assert_eq!(read_offset_checkpoint(&output).expect("re-read offset checkpoint"), entries);
    }
    if let Ok(entries) = read_leader_epoch_checkpoint(&input) {
        write_leader_epoch_checkpoint(&output, &entries).expect("write leader epochs");
        assert_eq!(
            read_leader_epoch_checkpoint(&output).expect("re-read leader epochs"),
            entries
        );
    }
    match read_partition_metadata(&input) {
        Ok(Some(topic_id)) => {
            write_partition_metadata(&output, topic_id).expect("write partition metadata");
            assert_eq!(
                read_partition_metadata(&output).expect("re-read partition metadata"),
                Some(topic_id)
            );
        }
        Ok(None) => panic!("partition.metadata read as missing though the file exists"),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
