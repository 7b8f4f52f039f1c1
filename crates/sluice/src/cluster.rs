//! `sluice cluster status`: the metadata quorum, as `kafka-metadata-quorum.sh describe
//! --status --replication` prints it, from DescribeQuorum over the wire (works against
//! Apache Kafka too).

use clap::Subcommand;
use sluice_client::{Admin, QuorumInfo};

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// The quorum's leader, epoch, high watermark, voters and observers, and each
    /// replica's log end offset and lag.
    Status,
}

/// Runs one cluster command against the cluster at `bootstrap_servers`.
pub fn run(bootstrap_servers: &[String], command: ClusterCommand) -> anyhow::Result<()> {
    crate::remote::with_admin(
        bootstrap_servers,
        "sluice-cluster",
        async |admin: &Admin| match command {
            ClusterCommand::Status => {
                let quorum = admin.describe_quorum().await?;
                let cluster_id = admin.client().cluster_id().unwrap_or_default();
                print!("{}", format_status(&cluster_id, &quorum, now_ms()));
                Ok(())
            }
        },
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The status block and the replication table.
fn format_status(cluster_id: &str, quorum: &QuorumInfo, now_ms: i64) -> String {
    let ids = |replicas: &[sluice_client::QuorumReplica]| {
        replicas
            .iter()
            .map(|r| r.id.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let lag = |offset: i64| (quorum.high_watermark - offset).max(0);
    let max_lag = quorum
        .voters
        .iter()
        .map(|r| lag(r.log_end_offset))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    out.push_str(&format!("ClusterId:              {cluster_id}\n"));
    out.push_str(&format!("LeaderId:               {}\n", quorum.leader_id));
    out.push_str(&format!(
        "LeaderEpoch:            {}\n",
        quorum.leader_epoch
    ));
    out.push_str(&format!(
        "HighWatermark:          {}\n",
        quorum.high_watermark
    ));
    out.push_str(&format!("MaxFollowerLag:         {max_lag}\n"));
    out.push_str(&format!(
        "CurrentVoters:          [{}]\n",
        ids(&quorum.voters)
    ));
    out.push_str(&format!(
        "CurrentObservers:       [{}]\n",
        ids(&quorum.observers)
    ));
    out.push_str("\nNodeId\tDirectoryId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\n");
    let ago = |timestamp: i64| {
        if timestamp < 0 {
            "unknown".to_string()
        } else {
            format!("{} ms ago", (now_ms - timestamp).max(0))
        }
    };
    let rows = quorum
        .voters
        .iter()
        .map(|r| {
            (
                r,
                if r.id == quorum.leader_id {
                    "Leader"
                } else {
                    "Follower"
                },
            )
        })
        .chain(quorum.observers.iter().map(|r| (r, "Observer")));
    for (replica, status) in rows {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            replica.id,
            replica.directory_id,
            replica.log_end_offset,
            lag(replica.log_end_offset),
            ago(replica.last_fetch_timestamp),
            ago(replica.last_caught_up_timestamp),
            status
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_client::QuorumReplica;

    #[test]
    fn status_shows_leader_voters_and_lag() {
        let replica = |id, offset| QuorumReplica {
            id,
            directory_id: format!("dir{id}"),
            log_end_offset: offset,
            last_fetch_timestamp: 900,
            last_caught_up_timestamp: -1,
        };
        let quorum = QuorumInfo {
            leader_id: 1,
            leader_epoch: 3,
            high_watermark: 10,
            voters: vec![replica(1, 10), replica(2, 7)],
            observers: vec![replica(4, 10)],
        };
        let text = format_status("c1", &quorum, 1000);
        assert!(text.contains("LeaderId:               1\n"), "{text}");
        assert!(text.contains("MaxFollowerLag:         3\n"), "{text}");
        assert!(text.contains("CurrentVoters:          [1,2]\n"), "{text}");
        assert!(text.contains("CurrentObservers:       [4]\n"), "{text}");
        assert!(
            text.contains("2\tdir2\t7\t3\t100 ms ago\tunknown\tFollower\n"),
            "{text}"
        );
        assert!(
            text.contains("4\tdir4\t10\t0\t100 ms ago\tunknown\tObserver\n"),
            "{text}"
        );
    }
}
