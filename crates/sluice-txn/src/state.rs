//! A transactional id's state as Kafka's `TransactionState` and `TransactionMetadata`
//! define it: the state ids written in `__transaction_state`, the names that
//! ListTransactions and DescribeTransactions answer, and which state may follow which.

use std::collections::BTreeSet;

/// No producer id (Kafka's `RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (Kafka's `RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// The state of a transactional id; the discriminant is the `TransactionStatus` byte of
/// the `__transaction_state` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i8)]
pub enum TxnState {
    /// No transaction in progress (after InitProducerId).
    Empty = 0,
    /// Partitions have been added; the transaction is open.
    Ongoing = 1,
    /// EndTxn(commit) is persisted; markers are being written.
    PrepareCommit = 2,
    /// EndTxn(abort), a timeout or a fence is persisted; markers are being written.
    PrepareAbort = 3,
    /// Every commit marker is written.
    CompleteCommit = 4,
    /// Every abort marker is written.
    CompleteAbort = 5,
    /// The transactional id is being expired (never persisted: Kafka writes a tombstone).
    Dead = 6,
    /// The epoch is being bumped to fence a producer (never persisted: Kafka turns it into
    /// PrepareAbort before the write).
    PrepareEpochFence = 7,
}

const ALL_STATES: [TxnState; 8] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
    TxnState::Dead,
    TxnState::PrepareEpochFence,
];

impl TxnState {
    /// Kafka's name, as ListTransactions and DescribeTransactions answer it.
    pub fn name(&self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state Kafka names `name` (case-sensitive, as Kafka's `fromName`).
    pub fn from_name(name: &str) -> Option<Self> {
        ALL_STATES.into_iter().find(|state| state.name() == name)
    }

    /// The `TransactionStatus` byte.
    pub fn id(&self) -> i8 {
        *self as i8
    }

    pub fn from_id(id: i8) -> Option<Self> {
        ALL_STATES.into_iter().find(|state| state.id() == id)
    }

    /// Whether an idle transactional id in this state may expire (Kafka's
    /// `isExpirationAllowed`).
    pub fn is_expiration_allowed(&self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    /// Whether a transition from `previous` to `self` is legal (Kafka's
    /// `validPreviousStates`). Under transactions V2 an abort may start from Empty and
    /// the Complete states.
    pub fn may_follow(&self, previous: TxnState) -> bool {
        use TxnState::*;
        match self {
            Empty => matches!(previous, Empty | CompleteCommit | CompleteAbort),
            Ongoing => matches!(previous, Ongoing | Empty | CompleteCommit | CompleteAbort),
            PrepareCommit => previous == Ongoing,
            PrepareAbort => matches!(
                previous,
                Ongoing | PrepareEpochFence | Empty | CompleteCommit | CompleteAbort
            ),
            CompleteCommit => previous == PrepareCommit,
            CompleteAbort => previous == PrepareAbort,
            Dead => matches!(previous, Empty | CompleteAbort | CompleteCommit),
            PrepareEpochFence => previous == Ongoing,
        }
    }

    pub fn is_prepare(&self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// What the coordinator knows of one transactional id (Kafka's `TransactionMetadata`
/// without its lock and pending state, which live in the shard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last transition (Kafka sets it on every transition);
    /// -1 when none.
    pub previous_producer_id: i64,
    /// The producer id the next Complete state moves to when transactions V2 exhausted
    /// the epoch; -1 when none.
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump, to recognise retries; not persisted (-1 after a
    /// load, as in Kafka).
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    /// When the first partition was added; -1 when none.
    pub txn_start_ms: i64,
    pub last_update_ms: i64,
    /// The transaction version the client used: 0 (or 1) before KIP-890 part 2, 2 after.
    pub client_transaction_version: i16,
}

/// Epochs at or above `i16::MAX - 1` are exhausted: the coordinator keeps `i16::MAX` to
/// be able to fence one last time (Kafka's `isEpochExhausted`).
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

impl TxnMetadata {
    pub fn is_producer_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_are_kafkas() {
        let table = [
            (TxnState::Empty, 0, "Empty"),
            (TxnState::Ongoing, 1, "Ongoing"),
            (TxnState::PrepareCommit, 2, "PrepareCommit"),
            (TxnState::PrepareAbort, 3, "PrepareAbort"),
            (TxnState::CompleteCommit, 4, "CompleteCommit"),
            (TxnState::CompleteAbort, 5, "CompleteAbort"),
            (TxnState::Dead, 6, "Dead"),
            (TxnState::PrepareEpochFence, 7, "PrepareEpochFence"),
        ];
        for (state, id, name) in table {
            assert_eq!(state.id(), id);
            assert_eq!(state.name(), name);
            assert_eq!(TxnState::from_id(id), Some(state));
            assert_eq!(TxnState::from_name(name), Some(state));
        }
        assert_eq!(TxnState::from_id(8), None);
        assert_eq!(TxnState::from_id(-1), None);
        assert_eq!(TxnState::from_name("ongoing"), None);
    }

    #[test]
    fn transitions_follow_kafkas_valid_previous_states() {
        use TxnState::*;
        assert!(PrepareAbort.may_follow(Empty));
        assert!(!PrepareCommit.may_follow(Empty));
        assert!(Ongoing.may_follow(CompleteAbort));
        assert!(!Ongoing.may_follow(PrepareCommit));
        assert!(CompleteCommit.may_follow(PrepareCommit));
        assert!(!CompleteCommit.may_follow(PrepareAbort));
        assert!(Dead.may_follow(Empty));
        assert!(!Dead.may_follow(Ongoing));
        assert!(is_epoch_exhausted(i16::MAX - 1));
        assert!(!is_epoch_exhausted(i16::MAX - 2));
    }
}
