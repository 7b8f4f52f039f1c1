//! Eligible leader replicas (KIP-966 part 1), on the controller.
//!
//! Where the cluster has finalized `eligible.leader.replicas.version` >= 1 (Kafka 4.1
//! does for a new cluster, and so does Sluice), the controller tracks, per partition,
//! the replicas that left the ISR while it was below `min.insync.replicas`: its
//! *eligible leader replicas*. The leader's high watermark cannot move while the ISR is
//! below min ISR (the strict min-ISR rule, `replica.rs`), so such a replica holds every
//! record below the high watermark, every write acknowledged to `acks=all`, and may be
//! elected when no member of the ISR can lead. Kafka's rules (its documentation on
//! eligible leader replicas and `PartitionChangeBuilder`), followed here:
//!
//! - the ISR at or above the effective min ISR: no ELR, no last known ELR;
//! - below it: ELR = (current ELR ∪ current ISR) − target ISR − replicas that restarted
//!   after an unclean shutdown (their logs may have lost what they had acknowledged);
//!   last known ELR = (that union ∪ current last known ELR) − target ISR − ELR;
//! - an election takes an ISR member if one can lead, else an ELR member that can
//!   (replica order), which becomes the ISR alone; else the last ISR member once it is
//!   back (as before KIP-966: Sluice keeps the last member in the ISR of an offline
//!   partition rather than emptying it).
//!
//! ELR members are kept to the partition's replicas. A broker that restarts after an
//! unclean shutdown leaves every ELR ([`crate::controller::leave_isrs`]).

use sluice_metadata::{MetadataImage, MetadataRecord, PartitionImage};

/// The feature that turns ELR tracking on (KIP-966), at level 1.
pub const FEATURE: &str = "eligible.leader.replicas.version";

/// Whether the cluster tracks eligible leader replicas.
pub fn enabled(image: &MetadataImage) -> bool {
    image.feature_level(FEATURE).unwrap_or(0) >= 1
}

/// `min.insync.replicas` capped at the replica count (Kafka's effective min ISR).
pub fn effective_min_isr(partition: &PartitionImage, min_isr: i32) -> usize {
    (min_isr.max(1) as usize).min(partition.replicas.len().max(1))
}

/// The (ELR, last known ELR) a partition must have once its ISR is `target_isr`.
pub fn target(
    partition: &PartitionImage,
    target_isr: &[i32],
    min_isr: i32,
    unclean: &[i32],
) -> (Vec<i32>, Vec<i32>) {
    if target_isr.len() >= effective_min_isr(partition, min_isr) {
        return (Vec::new(), Vec::new());
    }
    let member = |set: &[i32], r: &i32| set.contains(r);
    // In replica order, so that equal sets are equal lists.
    let candidates: Vec<i32> = partition
        .replicas
        .iter()
        .copied()
        .filter(|r| member(&partition.eligible_leader_replicas, r) || member(&partition.isr, r))
        .collect();
    let elr: Vec<i32> = candidates
        .iter()
        .copied()
        .filter(|r| !target_isr.contains(r) && !unclean.contains(r))
        .collect();
    let last_known: Vec<i32> = partition
        .replicas
        .iter()
        .copied()
        .filter(|r| candidates.contains(r) || partition.last_known_elr.contains(r))
        .filter(|r| !target_isr.contains(r) && !elr.contains(r))
        .collect();
    (elr, last_known)
}

/// Sets the ELR fields of every partition change in `records` that does not set them
/// already, from the partition in `image` and its ISR after the change, when the
/// cluster tracks ELR. `min_isr` gives a topic's `min.insync.replicas`.
pub fn fill(image: &MetadataImage, records: &mut [MetadataRecord], min_isr: &dyn Fn(&str) -> i32) {
    if !enabled(image) {
        return;
    }
    for record in records {
        let MetadataRecord::PartitionChange(change) = record else {
            continue;
        };
        if change.eligible_leader_replicas.is_some() {
            continue;
        }
        let Some(topic) = image.topic_by_id(&change.topic_id) else {
            continue;
        };
        let Some(partition) = topic.partitions.get(&change.partition_id) else {
            continue;
        };
        let target_isr = change.isr.as_deref().unwrap_or(&partition.isr);
        let (elr, last_known) = target(partition, target_isr, min_isr(&topic.name), &[]);
        if elr != partition.eligible_leader_replicas {
            change.eligible_leader_replicas = Some(elr);
        }
        if last_known != partition.last_known_elr {
            change.last_known_elr = Some(last_known);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(replicas: &[i32], isr: &[i32], elr: &[i32], last: &[i32]) -> PartitionImage {
        PartitionImage {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            removing_replicas: vec![],
            adding_replicas: vec![],
            leader: isr.first().copied().unwrap_or(-1),
            leader_recovery_state: 0,
            leader_epoch: 0,
            partition_epoch: 0,
            directories: vec![],
            eligible_leader_replicas: elr.to_vec(),
            last_known_elr: last.to_vec(),
        }
    }

    #[test]
    fn at_or_above_min_isr_there_is_no_elr() {
        let p = partition(&[1, 2, 3], &[1, 2, 3], &[], &[]);
        assert_eq!(target(&p, &[1, 2], 2, &[]), (vec![], vec![]));
        // Back to min ISR: both lists are cleared.
        let p = partition(&[1, 2, 3], &[1], &[2], &[3]);
        assert_eq!(target(&p, &[1, 2], 2, &[]), (vec![], vec![]));
    }

    #[test]
    fn replicas_leaving_an_isr_below_min_isr_become_eligible() {
        let p = partition(&[1, 2, 3], &[1, 2], &[], &[]);
        assert_eq!(target(&p, &[1], 2, &[]), (vec![2], vec![]));
        // The next one out joins them; the ELR never holds an ISR member.
        let p = partition(&[1, 2, 3], &[1, 3], &[2], &[]);
        assert_eq!(target(&p, &[3], 2, &[]), (vec![1, 2], vec![]));
    }

    #[test]
    fn an_unclean_shutdown_leaves_the_elr_for_the_last_known_elr() {
        let p = partition(&[1, 2, 3], &[1], &[2, 3], &[]);
        assert_eq!(target(&p, &[1], 2, &[3]), (vec![2], vec![3]));
    }

    #[test]
    fn min_isr_is_capped_at_the_replica_count() {
        // min.insync.replicas=3 on two replicas: the effective min ISR is 2.
        let p = partition(&[1, 2], &[1, 2], &[], &[]);
        assert_eq!(target(&p, &[1, 2], 3, &[]), (vec![], vec![]));
        assert_eq!(target(&p, &[1], 3, &[]), (vec![2], vec![]));
    }
}
