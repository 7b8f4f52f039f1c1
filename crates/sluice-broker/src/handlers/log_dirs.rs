//! DescribeLogDirs: each log directory, the partitions it holds and their sizes.

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::*;

use super::common::{str_bytes, topic_name};
use crate::request::RequestContext;

/// (total, usable) bytes of the file system holding `dir`, or (-1, -1) when unknown.
fn disk_space(dir: &std::path::Path) -> (i64, i64) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return (-1, -1);
    };
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a valid NUL-terminated string and `stats` is writable memory of
    // the right type; statvfs only writes to it.
    let status = unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) };
    if status != 0 {
        return (-1, -1);
    }
    // SAFETY: statvfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    let block = stats.f_frsize as i64;
    (
        (stats.f_blocks as i64).saturating_mul(block),
        (stats.f_bavail as i64).saturating_mul(block),
    )
}

pub async fn describe_log_dirs(
    context: &RequestContext,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let broker = &context.broker;
    let wanted = |topic: &str, partition: i32| {
        request.topics.as_ref().is_none_or(|topics| {
            topics
                .iter()
                .any(|t| t.topic.0.as_str() == topic && t.partitions.contains(&partition))
        })
    };
    let replicas = broker.replicas();
    let results = broker
        .log_dirs()
        .into_iter()
        .enumerate()
        .map(|(index, dir)| {
            let mut topics: Vec<DescribeLogDirsTopic> = Vec::new();
            for (tp, replica) in replicas.iter().filter(|(_, r)| r.dir_index == index) {
                if !wanted(&tp.topic, tp.partition) {
                    continue;
                }
                let size = sluice_storage::lock(&replica.log).size_bytes() as i64;
                let partition = DescribeLogDirsPartition::default()
                    .with_partition_index(tp.partition)
                    .with_partition_size(size)
                    .with_offset_lag(0);
                match topics.last_mut() {
                    Some(last) if last.name.0.as_str() == tp.topic => {
                        last.partitions.push(partition)
                    }
                    _ => topics.push(
                        DescribeLogDirsTopic::default()
                            .with_name(topic_name(tp.topic.clone()))
                            .with_partitions(vec![partition]),
                    ),
                }
            }
            let mut result = DescribeLogDirsResult::default()
                .with_log_dir(str_bytes(dir.display().to_string()))
                .with_topics(topics);
            if context.version >= 4 {
                let (total, usable) = disk_space(&dir);
                result = result.with_total_bytes(total).with_usable_bytes(usable);
            }
            result
        })
        .collect();
    DescribeLogDirsResponse::default().with_results(results)
}
