//! One shard of the transaction coordinator: the transactional ids of one
//! `__transaction_state` partition this node leads, and Kafka 4.1's
//! `TransactionCoordinator` rules over them (InitProducerId, AddPartitionsToTxn and its
//! verify-only form, EndTxn, timeouts, expiration). No I/O: a state change comes back as
//! a [`TxnWrite`] for the broker to append, and takes effect when the broker reports the
//! append with [`TxnShard::write_completed`].
//!
//! Like Kafka, a transactional id with a write in flight (or with markers being written)
//! has a *pending* transition: every request that would change it answers
//! CONCURRENT_TRANSACTIONS until the write completes.

use std::collections::BTreeMap;

use sluice_protocol::ErrorCode;

use crate::errors::*;
use crate::records::{
    RecordError, decode_key, decode_value, encode_key, encode_stored_value, value_version_for,
};
use crate::state::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState, is_epoch_exhausted};

/// The coordinator settings the state machine needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms`.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`.
    pub transactional_id_expiration_ms: i64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
        }
    }
}

/// A state change to persist: the broker appends `key`/`value` (acks=all) to the
/// shard's `__transaction_state` partition, then calls [`TxnShard::write_completed`]
/// with `transactional_id` and `write_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnWrite {
    pub transactional_id: String,
    pub write_id: u64,
    pub key: Vec<u8>,
    /// `None`: a tombstone (an expired transactional id).
    pub value: Option<Vec<u8>>,
}

/// Markers the broker must write (WriteTxnMarkers) after a Prepare* state is
/// committed; when every partition has its marker the broker calls
/// [`TxnShard::markers_written`] with `producer_id` and `producer_epoch`. `partitions`
/// may be empty (a transactions-V2 abort of an Empty transaction): then the broker calls
/// `markers_written` at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerJob {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
    pub partitions: Vec<(String, i32)>,
    pub transaction_version: i16,
}

/// How to answer a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<T> {
    /// Answer at once.
    Now(T),
    /// Append the write, await its commit, call `write_completed`, then answer `T`; if the
    /// append fails answer the append's error
    /// ([`crate::errors::coordinator_error_for_append_error`]).
    Write(TxnWrite, T),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitResult {
    pub error: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// EndTxn's answer; under transactions V2 (EndTxn v5+) the producer id and epoch the
/// client must use next, else -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndResult {
    pub error: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl InitResult {
    fn error(error: i16) -> Self {
        InitResult {
            error,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
        }
    }
}

impl EndResult {
    fn error(error: i16) -> Self {
        EndResult {
            error,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
        }
    }
}

/// What a transactional id is waiting for (Kafka's `pendingState`).
#[derive(Debug, Clone)]
enum Pending {
    /// A write is in flight; on commit `target` becomes the state. `fence`: the write is
    /// the PrepareAbort of an epoch fence.
    Write {
        write_id: u64,
        target: Box<TxnMetadata>,
        fence: bool,
    },
    /// The Prepare* state is committed; its markers are being written.
    Markers,
    /// The tombstone of an expired id is in flight.
    Dead { write_id: u64 },
}

#[derive(Debug, Clone)]
struct Entry {
    meta: TxnMetadata,
    pending: Option<Pending>,
    /// A fence's write failed after the in-memory epoch was bumped: the next fence does
    /// not bump again (Kafka's `hasFailedEpochFence`).
    has_failed_epoch_fence: bool,
}

/// The transactions of one `__transaction_state` partition.
#[derive(Debug)]
pub struct TxnShard {
    coordinator_epoch: i32,
    config: TxnConfig,
    transaction_version_level: i16,
    entries: BTreeMap<String, Entry>,
    next_write_id: u64,
}

/// `producer_id` or allocation's error.
type Allocate<'a> = &'a mut dyn FnMut() -> Result<i64, ErrorCode>;

impl TxnShard {
    pub fn new(coordinator_epoch: i32, config: TxnConfig) -> Self {
        TxnShard {
            coordinator_epoch,
            config,
            transaction_version_level: 2,
            entries: BTreeMap::new(),
            next_write_id: 1,
        }
    }

    /// The cluster's finalized `transaction.version` feature level (default 2, a new
    /// Kafka 4.x cluster's). It picks the value version written (0 below level 1) and
    /// the rules of the aborts the coordinator starts itself (fences, timeouts).
    pub fn with_transaction_version_level(mut self, level: i16) -> Self {
        self.transaction_version_level = level;
        self
    }

    /// Follows a change of the cluster's `transaction.version` (UpdateFeatures).
    pub fn set_transaction_version_level(&mut self, level: i16) {
        self.transaction_version_level = level;
    }

    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Loads one record of the partition: last value wins, a tombstone deletes, keys of
    /// other record types are skipped.
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), RecordError> {
        let Some(transactional_id) = decode_key(key)? else {
            return Ok(());
        };
        match value {
            None => {
                self.entries.remove(&transactional_id);
            }
            Some(bytes) => {
                let meta = decode_value(&transactional_id, bytes)?;
                self.entries.insert(
                    transactional_id,
                    Entry {
                        meta,
                        pending: None,
                        has_failed_epoch_fence: false,
                    },
                );
            }
        }
        Ok(())
    }

    /// After the load: the transactions found in PrepareCommit/PrepareAbort need their
    /// markers (re)sent, as Kafka does on load.
    pub fn finish_load(&mut self) -> Vec<MarkerJob> {
        let coordinator_epoch = self.coordinator_epoch;
        let mut jobs = Vec::new();
        for entry in self.entries.values_mut() {
            if entry.meta.state.is_prepare() && entry.pending.is_none() {
                entry.pending = Some(Pending::Markers);
                jobs.push(marker_job(&entry.meta, coordinator_epoch));
            }
        }
        jobs
    }

    /// InitProducerId with a transactional id. `expected_producer_id`/`expected_epoch`
    /// are KIP-360's (both -1 when absent). `transaction_version` is accepted for the
    /// glue's convenience but, as in Kafka 4.1, not used: an abort this call starts uses
    /// the cluster level ([`Self::with_transaction_version_level`]). Mapping
    /// PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for versions below 4 is the broker's
    /// job ([`crate::errors::init_producer_id_error_for_version`]).
    #[allow(clippy::too_many_arguments)]
    pub fn init_producer_id(
        &mut self,
        transactional_id: &str,
        timeout_ms: i32,
        expected_producer_id: i64,
        expected_epoch: i16,
        transaction_version: i16,
        now_ms: i64,
        allocate: Allocate<'_>,
    ) -> Step<InitResult> {
        let _ = transaction_version;
        if transactional_id.is_empty() {
            return Step::Now(InitResult::error(INVALID_REQUEST));
        }
        let expected = match (expected_producer_id, expected_epoch) {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH) => None,
            (NO_PRODUCER_ID, _) | (_, NO_PRODUCER_EPOCH) => {
                return Step::Now(InitResult::error(INVALID_REQUEST));
            }
            (id, epoch) => Some((id, epoch)),
        };
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Step::Now(InitResult::error(INVALID_TRANSACTION_TIMEOUT));
        }
        if !self.entries.contains_key(transactional_id) {
            let producer_id = match allocate() {
                Ok(id) => id,
                Err(code) => return Step::Now(InitResult::error(code.0)),
            };
            let meta = TxnMetadata {
                transactional_id: transactional_id.to_string(),
                producer_id,
                previous_producer_id: NO_PRODUCER_ID,
                next_producer_id: NO_PRODUCER_ID,
                producer_epoch: NO_PRODUCER_EPOCH,
                last_producer_epoch: NO_PRODUCER_EPOCH,
                timeout_ms,
                state: TxnState::Empty,
                partitions: Default::default(),
                txn_start_ms: -1,
                last_update_ms: now_ms,
                client_transaction_version: 0,
            };
            self.entries.insert(
                transactional_id.to_string(),
                Entry {
                    meta,
                    pending: None,
                    has_failed_epoch_fence: false,
                },
            );
        }
        let level = self.transaction_version_level;
        let entry = self
            .entries
            .get_mut(transactional_id)
            .expect("inserted above");
        if entry.pending.is_some() {
            return Step::Now(InitResult::error(CONCURRENT_TRANSACTIONS));
        }
        let meta = &entry.meta;
        if let Some((id, epoch)) = expected {
            // KIP-360: a new metadata, the current producer id, or the previous one with an
            // exhausted epoch (a retry after a rotation whose answer was lost).
            let valid = meta.producer_epoch == NO_PRODUCER_EPOCH
                || id == meta.producer_id
                || (id == meta.previous_producer_id && is_epoch_exhausted(epoch));
            if !valid {
                return Step::Now(InitResult::error(PRODUCER_FENCED));
            }
        }
        let transit = match meta.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                return Step::Now(InitResult::error(CONCURRENT_TRANSACTIONS));
            }
            TxnState::Ongoing => {
                // Fence the current producer and abort its transaction; the client retries
                // (CONCURRENT_TRANSACTIONS) and its retry bumps the epoch again.
                return match fence_and_abort(entry, level, now_ms, allocate) {
                    Ok(target) => {
                        let write = self.start_write(transactional_id, target, true);
                        Step::Write(write, InitResult::error(CONCURRENT_TRANSACTIONS))
                    }
                    Err(code) => Step::Now(InitResult::error(code.0)),
                };
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                // Kafka: IllegalStateException, these states are never current.
                return Step::Now(InitResult::error(UNKNOWN_SERVER_ERROR));
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let expected_epoch = expected.map(|(_, epoch)| epoch);
                if meta.is_producer_epoch_exhausted()
                    && expected_epoch.is_none_or(|e| e == meta.producer_epoch)
                {
                    let new_producer_id = match allocate() {
                        Ok(id) => id,
                        Err(code) => return Step::Now(InitResult::error(code.0)),
                    };
                    let mut t = transit_from(meta);
                    t.state = TxnState::Empty;
                    t.producer_id = new_producer_id;
                    t.producer_epoch = 0;
                    t.last_producer_epoch = if expected.is_some() {
                        meta.producer_epoch
                    } else {
                        NO_PRODUCER_EPOCH
                    };
                    t.timeout_ms = timeout_ms;
                    t.partitions.clear();
                    t.txn_start_ms = -1;
                    t.last_update_ms = now_ms;
                    t
                } else {
                    match increment_epoch(meta, timeout_ms, expected_epoch, now_ms) {
                        Ok(t) => t,
                        Err(code) => return Step::Now(InitResult::error(code.0)),
                    }
                }
            }
        };
        if let Err(code) = check_transit(&entry.meta, &transit) {
            return Step::Now(InitResult::error(code.0));
        }
        let result = InitResult {
            error: NONE,
            producer_id: transit.producer_id,
            producer_epoch: transit.producer_epoch,
        };
        let write = self.start_write(transactional_id, transit, false);
        Step::Write(write, result)
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with the group's `__consumer_offsets`
    /// partition; and the implicit add of transactions V2, AddPartitionsToTxn v5 from a
    /// partition leader). One error code for all the partitions, already mapped for
    /// `api_version` (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below version 2). Kafka
    /// takes the client's transaction version from the request version: 2 above 4, else 0.
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
        api_version: i16,
        now_ms: i64,
    ) -> Step<i16> {
        let map = |code| producer_fenced_for_version(code, api_version, 2);
        if transactional_id.is_empty() {
            return Step::Now(INVALID_REQUEST);
        }
        let Some(entry) = self.entries.get(transactional_id) else {
            return Step::Now(INVALID_PRODUCER_ID_MAPPING);
        };
        let meta = &entry.meta;
        if meta.producer_id != producer_id {
            return Step::Now(INVALID_PRODUCER_ID_MAPPING);
        }
        if meta.producer_epoch != epoch {
            return Step::Now(map(PRODUCER_FENCED));
        }
        if entry.pending.is_some() || meta.state.is_prepare() {
            return Step::Now(CONCURRENT_TRANSACTIONS);
        }
        if meta.state == TxnState::Ongoing && partitions.iter().all(|p| meta.partitions.contains(p))
        {
            return Step::Now(NONE);
        }
        let mut t = transit_from(meta);
        if matches!(
            meta.state,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        ) {
            t.txn_start_ms = now_ms;
        }
        t.state = TxnState::Ongoing;
        t.partitions.extend(partitions.iter().cloned());
        t.last_update_ms = now_ms;
        t.client_transaction_version = if api_version > 4 { 2 } else { 0 };
        if let Err(code) = check_transit(meta, &t) {
            return Step::Now(code.0);
        }
        let write = self.start_write(transactional_id, t, false);
        Step::Write(write, NONE)
    }

    /// AddPartitionsToTxn v4+ with `verifyOnly` (KIP-890 part 1, asked by partition
    /// leaders): NONE for a partition in the transaction, TRANSACTION_ABORTABLE for one
    /// that is not, or one error for all. Pending transitions are not checked, as in Kafka.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<((String, i32), i16)> {
        let all = |code: i16| partitions.iter().map(|p| (p.clone(), code)).collect();
        if transactional_id.is_empty() {
            return all(INVALID_REQUEST);
        }
        let Some(entry) = self.entries.get(transactional_id) else {
            return all(INVALID_PRODUCER_ID_MAPPING);
        };
        let meta = &entry.meta;
        if meta.producer_id != producer_id {
            return all(INVALID_PRODUCER_ID_MAPPING);
        }
        if meta.producer_epoch != epoch {
            return all(PRODUCER_FENCED);
        }
        if meta.state.is_prepare() {
            return all(CONCURRENT_TRANSACTIONS);
        }
        partitions
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    if meta.partitions.contains(p) {
                        NONE
                    } else {
                        TRANSACTION_ABORTABLE
                    },
                )
            })
            .collect()
    }

    /// EndTxn. `transaction_version` is the client's: Kafka derives it from the request
    /// version (2 above version 4, else 0). Under transactions V2 the Prepare* record
    /// bumps the epoch, the markers carry the bumped epoch and the answer returns it;
    /// a retry with the previous epoch is recognised.
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        api_version: i16,
        transaction_version: i16,
        now_ms: i64,
        allocate: Allocate<'_>,
    ) -> Step<EndResult> {
        if transactional_id.is_empty() {
            return Step::Now(EndResult::error(INVALID_REQUEST));
        }
        let Some(entry) = self.entries.get(transactional_id) else {
            return Step::Now(EndResult::error(INVALID_PRODUCER_ID_MAPPING));
        };
        let decision = if transaction_version >= 2 {
            end_decision_v2(entry, producer_id, epoch, commit)
        } else {
            end_decision_v1(entry, producer_id, epoch, commit)
        };
        let (next_state, no_partition_added) = match decision {
            EndDecision::Answer(code) => {
                let code = producer_fenced_for_version(code, api_version, 2);
                if code == NONE && transaction_version >= 2 {
                    return Step::Now(EndResult {
                        error: NONE,
                        producer_id: entry.meta.producer_id,
                        producer_epoch: entry.meta.producer_epoch,
                    });
                }
                return Step::Now(EndResult::error(code));
            }
            EndDecision::Prepare {
                state,
                no_partition_added,
            } => (state, no_partition_added),
        };
        let meta = &entry.meta;
        let next_producer_id = if transaction_version >= 2 && meta.is_producer_epoch_exhausted() {
            match allocate() {
                Ok(id) => id,
                Err(code) => return Step::Now(EndResult::error(code.0)),
            }
        } else {
            NO_PRODUCER_ID
        };
        let transit = match prepare_abort_or_commit(
            meta,
            next_state,
            transaction_version,
            next_producer_id,
            now_ms,
            no_partition_added,
        ) {
            Ok(t) => t,
            Err(code) => return Step::Now(EndResult::error(code.0)),
        };
        let result = if transaction_version >= 2 {
            // The client sees the epoch bump; past an exhausted epoch, the new producer id.
            if transit.next_producer_id != NO_PRODUCER_ID {
                EndResult {
                    error: NONE,
                    producer_id: transit.next_producer_id,
                    producer_epoch: 0,
                }
            } else {
                EndResult {
                    error: NONE,
                    producer_id: transit.producer_id,
                    producer_epoch: transit.producer_epoch,
                }
            }
        } else {
            EndResult::error(NONE)
        };
        let write = self.start_write(transactional_id, transit, false);
        Step::Write(write, result)
    }

    /// A write returned by a [`Step`], [`Self::expire`] or [`Self::markers_written`]
    /// committed (`true`) or failed (`false`). Returns the markers to send when the
    /// committed state is PrepareCommit/PrepareAbort. A completion whose `write_id` is not
    /// the one in flight (a late answer to an older write) is ignored.
    ///
    /// On failure the pending transition is dropped, as Kafka does, with two exceptions
    /// that are Kafka's too: a failed Complete* write keeps the markers pending (call
    /// `markers_written` again to retry it), and a failed epoch fence keeps the bumped
    /// epoch in memory (the old producer stays fenced) and is not bumped again next time.
    pub fn write_completed(
        &mut self,
        transactional_id: &str,
        write_id: u64,
        committed: bool,
    ) -> Option<MarkerJob> {
        let coordinator_epoch = self.coordinator_epoch;
        let entry = self.entries.get_mut(transactional_id)?;
        match entry.pending.take() {
            Some(Pending::Write {
                write_id: in_flight,
                target,
                fence,
            }) if in_flight == write_id => {
                if committed {
                    entry.meta = *target;
                    if entry.meta.state.is_prepare() {
                        entry.pending = Some(Pending::Markers);
                        return Some(marker_job(&entry.meta, coordinator_epoch));
                    }
                } else if matches!(
                    target.state,
                    TxnState::CompleteCommit | TxnState::CompleteAbort
                ) {
                    entry.pending = Some(Pending::Markers);
                } else if fence {
                    entry.has_failed_epoch_fence = true;
                }
                None
            }
            Some(Pending::Dead {
                write_id: in_flight,
            }) if in_flight == write_id => {
                if committed {
                    self.entries.remove(transactional_id);
                }
                None
            }
            other => {
                entry.pending = other;
                None
            }
        }
    }

    /// Every marker of the job for `producer_id`/`producer_epoch` is written: returns the
    /// Complete* state write (`None` if the transaction is not awaiting these markers).
    pub fn markers_written(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Option<TxnWrite> {
        let entry = self.entries.get_mut(transactional_id)?;
        let meta = &entry.meta;
        if !matches!(entry.pending, Some(Pending::Markers))
            || !meta.state.is_prepare()
            || meta.producer_id != producer_id
            || meta.producer_epoch != producer_epoch
        {
            return None;
        }
        entry.has_failed_epoch_fence = false;
        let mut t = transit_from(meta);
        t.state = if meta.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        if meta.client_transaction_version >= 2 && meta.next_producer_id != NO_PRODUCER_ID {
            // Past an exhausted epoch the client moves to the new producer id at epoch 0;
            // last_producer_epoch keeps the last epoch it saw.
            t.producer_id = meta.next_producer_id;
            t.producer_epoch = 0;
        }
        t.next_producer_id = NO_PRODUCER_ID;
        t.partitions.clear();
        // Kafka stamps the time the markers start; the Prepare* write's time is that to
        // within one append.
        t.last_update_ms = meta.last_update_ms;
        entry.pending = None;
        Some(self.start_write(transactional_id, t, false))
    }

    /// Ongoing transactions past their timeout are aborted as Kafka's
    /// `abortTimedOutTransactions` does (epoch fence, then PrepareAbort; the markers come
    /// from `write_completed`); ids idle past `transactional_id_expiration_ms` in Empty or
    /// a Complete state are tombstoned. Ids with a pending transition are left alone.
    /// `allocate` supplies a new producer id when a transactions-V2 fence exhausts the
    /// epoch; an id whose allocation fails is retried at the next call.
    pub fn expire(&mut self, now_ms: i64, allocate: Allocate<'_>) -> Vec<TxnWrite> {
        let level = self.transaction_version_level;
        let expiration_ms = self.config.transactional_id_expiration_ms;
        let mut fenced = Vec::new();
        let mut dead = Vec::new();
        for (id, entry) in self.entries.iter_mut() {
            if entry.pending.is_some() {
                continue;
            }
            let meta = &entry.meta;
            if meta.state == TxnState::Ongoing
                && meta.txn_start_ms.saturating_add(i64::from(meta.timeout_ms)) < now_ms
            {
                if let Ok(target) = fence_and_abort(entry, level, now_ms, allocate) {
                    fenced.push((id.clone(), target));
                }
            } else if meta.state.is_expiration_allowed()
                && meta.last_update_ms <= now_ms.saturating_sub(expiration_ms)
            {
                dead.push(id.clone());
            }
        }
        let mut writes = Vec::with_capacity(fenced.len() + dead.len());
        for (id, target) in fenced {
            writes.push(self.start_write(&id, target, true));
        }
        for id in dead {
            let write_id = self.take_write_id();
            let entry = self.entries.get_mut(&id).expect("collected above");
            entry.pending = Some(Pending::Dead { write_id });
            writes.push(TxnWrite {
                transactional_id: id.clone(),
                write_id,
                key: encode_key(&id),
                value: None,
            });
        }
        writes
    }

    /// The metadata of `transactional_id` as DescribeTransactions shows it (the committed
    /// state, not a pending one). `None`: TRANSACTIONAL_ID_NOT_FOUND.
    pub fn describe(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.entries
            .get(transactional_id)
            .map(|entry| &entry.meta)
            .filter(|meta| meta.state != TxnState::Dead)
    }

    /// Every transactional id of the shard, by id.
    pub fn list(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.entries.values().map(|entry| &entry.meta)
    }

    /// ListTransactions v0-1 filtering, Kafka's `listTransactionStates`: Dead is never
    /// listed; a non-empty `states` keeps the states named (unknown names match nothing:
    /// the broker reports them as UnknownStateFilters); a non-empty `producer_ids` keeps
    /// those ids; `min_duration_ms >= 0` keeps transactions whose
    /// `now_ms - txn_start_ms > min_duration_ms`.
    pub fn list_filtered(
        &self,
        states: &[String],
        producer_ids: &[i64],
        min_duration_ms: i64,
        now_ms: i64,
    ) -> Vec<&TxnMetadata> {
        self.list_filtered_matching(states, producer_ids, min_duration_ms, now_ms, &|_| true)
    }

    /// [`Self::list_filtered`] plus ListTransactions v2's `TransactionalIdPattern`
    /// (KIP-1152): the broker compiles the pattern (Java regex semantics: the whole id must
    /// match) and passes it as `id_matches`.
    pub fn list_filtered_matching(
        &self,
        states: &[String],
        producer_ids: &[i64],
        min_duration_ms: i64,
        now_ms: i64,
        id_matches: &dyn Fn(&str) -> bool,
    ) -> Vec<&TxnMetadata> {
        self.list()
            .filter(|meta| meta.state != TxnState::Dead)
            .filter(|meta| producer_ids.is_empty() || producer_ids.contains(&meta.producer_id))
            .filter(|meta| states.is_empty() || states.iter().any(|name| name == meta.state.name()))
            .filter(|meta| {
                min_duration_ms < 0 || now_ms.saturating_sub(meta.txn_start_ms) > min_duration_ms
            })
            .filter(|meta| id_matches(&meta.transactional_id))
            .collect()
    }

    fn take_write_id(&mut self) -> u64 {
        let id = self.next_write_id;
        self.next_write_id += 1;
        id
    }

    fn start_write(
        &mut self,
        transactional_id: &str,
        target: TxnMetadata,
        fence: bool,
    ) -> TxnWrite {
        let write_id = self.take_write_id();
        let value = encode_stored_value(&target, value_version_for(self.transaction_version_level));
        let entry = self
            .entries
            .get_mut(transactional_id)
            .expect("writes start for known ids");
        debug_assert!(entry.pending.is_none(), "one transition at a time");
        entry.pending = Some(Pending::Write {
            write_id,
            target: Box::new(target),
            fence,
        });
        TxnWrite {
            transactional_id: transactional_id.to_string(),
            write_id,
            key: encode_key(transactional_id),
            value: Some(value),
        }
    }
}

fn marker_job(meta: &TxnMetadata, coordinator_epoch: i32) -> MarkerJob {
    MarkerJob {
        transactional_id: meta.transactional_id.clone(),
        producer_id: meta.producer_id,
        producer_epoch: meta.producer_epoch,
        coordinator_epoch,
        commit: meta.state == TxnState::PrepareCommit,
        partitions: meta.partitions.iter().cloned().collect(),
        transaction_version: meta.client_transaction_version,
    }
}

/// The start of every transition: a copy whose previous producer id is the current one
/// (Kafka's `prepareTransitionTo` sets it so on every transition).
fn transit_from(meta: &TxnMetadata) -> TxnMetadata {
    let mut t = meta.clone();
    t.previous_producer_id = meta.producer_id;
    t
}

/// Kafka's `prepareTransitionTo` checks; its exceptions answer UNKNOWN_SERVER_ERROR.
fn check_transit(current: &TxnMetadata, transit: &TxnMetadata) -> Result<(), ErrorCode> {
    if transit.producer_id < 0
        || (transit.state != TxnState::Dead && transit.producer_epoch < 0)
        || !transit.state.may_follow(current.state)
    {
        return Err(ErrorCode::UNKNOWN_SERVER_ERROR);
    }
    Ok(())
}

/// Kafka's `prepareIncrementProducerEpoch`.
fn increment_epoch(
    meta: &TxnMetadata,
    timeout_ms: i32,
    expected_epoch: Option<i16>,
    now_ms: i64,
) -> Result<TxnMetadata, ErrorCode> {
    let mut t = transit_from(meta);
    match expected_epoch {
        None => {
            t.producer_epoch = bump(meta.producer_epoch)?;
            t.last_producer_epoch = NO_PRODUCER_EPOCH;
        }
        Some(expected)
            if meta.producer_epoch == NO_PRODUCER_EPOCH || expected == meta.producer_epoch =>
        {
            t.producer_epoch = bump(meta.producer_epoch)?;
            t.last_producer_epoch = meta.producer_epoch;
        }
        // A retry of a successful call: answer the current epoch without bumping.
        Some(expected) if expected == meta.last_producer_epoch => {}
        Some(_) => return Err(ErrorCode::PRODUCER_FENCED),
    }
    t.state = TxnState::Empty;
    t.timeout_ms = timeout_ms;
    t.partitions.clear();
    t.txn_start_ms = -1;
    t.last_update_ms = now_ms;
    Ok(t)
}

/// `epoch + 1`, refusing an exhausted epoch (Kafka throws IllegalStateException there,
/// which answers UNKNOWN_SERVER_ERROR; reachable only by a client that skipped a rotation).
fn bump(epoch: i16) -> Result<i16, ErrorCode> {
    if is_epoch_exhausted(epoch) {
        Err(ErrorCode::PRODUCER_FENCED)
    } else {
        Ok(epoch + 1)
    }
}

/// Kafka's `prepareAbortOrCommit`.
fn prepare_abort_or_commit(
    meta: &TxnMetadata,
    state: TxnState,
    transaction_version: i16,
    next_producer_id: i64,
    now_ms: i64,
    no_partition_added: bool,
) -> Result<TxnMetadata, ErrorCode> {
    let mut t = transit_from(meta);
    if transaction_version >= 2 {
        if meta.producer_epoch == i16::MAX {
            if state != TxnState::PrepareAbort {
                return Err(ErrorCode::UNKNOWN_SERVER_ERROR);
            }
            // Already at the last epoch: let the abort through without bumping.
        } else {
            t.producer_epoch = meta.producer_epoch + 1;
        }
        t.last_producer_epoch = meta.producer_epoch;
    }
    t.state = state;
    t.txn_start_ms = if no_partition_added {
        now_ms
    } else {
        meta.txn_start_ms
    };
    t.next_producer_id = next_producer_id;
    t.last_update_ms = now_ms;
    t.client_transaction_version = transaction_version;
    check_transit(meta, &t)?;
    Ok(t)
}

/// Kafka's `prepareFenceProducerEpoch` followed by its internal abort
/// (`endTransaction(ABORT, isFromClient = false)` at the cluster's transaction version).
/// Like Kafka, the fenced epoch is set in memory before the write.
fn fence_and_abort(
    entry: &mut Entry,
    level: i16,
    now_ms: i64,
    allocate: Allocate<'_>,
) -> Result<TxnMetadata, ErrorCode> {
    let meta = &entry.meta;
    let fenced_epoch = if entry.has_failed_epoch_fence || meta.producer_epoch == i16::MAX {
        meta.producer_epoch
    } else {
        meta.producer_epoch + 1
    };
    // Under transactions V2 the abort bumps again; an exhausted epoch moves the producer
    // to a new id when the abort completes (what Kafka does since the fix of fences at
    // the epoch boundary).
    let next_producer_id = if level >= 2 && is_epoch_exhausted(fenced_epoch) {
        allocate()?
    } else {
        NO_PRODUCER_ID
    };
    entry.meta.producer_epoch = fenced_epoch;
    entry.meta.last_producer_epoch = NO_PRODUCER_EPOCH;
    prepare_abort_or_commit(
        &entry.meta,
        TxnState::PrepareAbort,
        level,
        next_producer_id,
        now_ms,
        false,
    )
}

enum EndDecision {
    Answer(i16),
    Prepare {
        state: TxnState,
        no_partition_added: bool,
    },
}

fn prepare(state: TxnState, no_partition_added: bool) -> EndDecision {
    EndDecision::Prepare {
        state,
        no_partition_added,
    }
}

fn target_state(commit: bool) -> TxnState {
    if commit {
        TxnState::PrepareCommit
    } else {
        TxnState::PrepareAbort
    }
}

/// Kafka's `endTransactionWithTV1` checks (client requests only).
fn end_decision_v1(entry: &Entry, producer_id: i64, epoch: i16, commit: bool) -> EndDecision {
    let meta = &entry.meta;
    if meta.producer_id != producer_id {
        return EndDecision::Answer(INVALID_PRODUCER_ID_MAPPING);
    }
    if epoch != meta.producer_epoch {
        return EndDecision::Answer(PRODUCER_FENCED);
    }
    if entry.pending.is_some() {
        return EndDecision::Answer(CONCURRENT_TRANSACTIONS);
    }
    use TxnState::*;
    EndDecision::Answer(match (meta.state, commit) {
        (Ongoing, _) => return prepare(target_state(commit), false),
        (CompleteCommit, true) | (CompleteAbort, false) => NONE,
        (PrepareCommit, true) | (PrepareAbort, false) => CONCURRENT_TRANSACTIONS,
        (Dead | PrepareEpochFence, _) => UNKNOWN_SERVER_ERROR,
        _ => INVALID_TXN_STATE,
    })
}

/// Kafka's `endTransaction` under transactions V2 (client requests only):
///
/// | state          | abort, retry | abort, current | commit, retry | commit, current |
/// |----------------|--------------|----------------|---------------|-----------------|
/// | Empty          | FENCED       | bump           | FENCED        | INVALID_TXN     |
/// | CompleteAbort  | NONE         | bump           | INVALID_TXN   | INVALID_TXN     |
/// | CompleteCommit | INVALID_TXN  | bump           | NONE          | INVALID_TXN     |
///
/// where "retry" is the epoch before the last bump (or the last epoch of the previous
/// producer id after a rotation).
fn end_decision_v2(entry: &Entry, producer_id: i64, epoch: i16, commit: bool) -> EndDecision {
    use TxnState::*;
    let meta = &entry.meta;
    let retry_on_overflow = meta.previous_producer_id == producer_id
        && epoch == i16::MAX - 1
        && meta.producer_epoch == 0;
    let retry_on_epoch_bump = i32::from(meta.producer_epoch) == i32::from(epoch) + 1;
    let valid_epoch = match meta.state {
        Ongoing | Empty | Dead | PrepareEpochFence => epoch == meta.producer_epoch,
        PrepareCommit | PrepareAbort => retry_on_epoch_bump,
        CompleteCommit | CompleteAbort => {
            retry_on_epoch_bump || retry_on_overflow || epoch == meta.producer_epoch
        }
    };
    let is_retry = retry_on_epoch_bump || retry_on_overflow;
    if meta.producer_id != producer_id && !retry_on_overflow {
        return EndDecision::Answer(INVALID_PRODUCER_ID_MAPPING);
    }
    if !valid_epoch {
        return EndDecision::Answer(PRODUCER_FENCED);
    }
    if entry.pending.is_some() {
        return EndDecision::Answer(CONCURRENT_TRANSACTIONS);
    }
    EndDecision::Answer(match (meta.state, commit) {
        (Ongoing, _) => return prepare(target_state(commit), false),
        (CompleteCommit, true) => {
            if is_retry {
                NONE
            } else {
                INVALID_TXN_STATE
            }
        }
        (CompleteCommit, false) => {
            if is_retry {
                INVALID_TXN_STATE
            } else {
                return prepare(PrepareAbort, true);
            }
        }
        (CompleteAbort, false) => {
            if is_retry {
                NONE
            } else {
                return prepare(PrepareAbort, true);
            }
        }
        (CompleteAbort, true) => INVALID_TXN_STATE,
        (PrepareCommit, true) | (PrepareAbort, false) => CONCURRENT_TRANSACTIONS,
        (PrepareCommit, false) | (PrepareAbort, true) => INVALID_TXN_STATE,
        (Empty, false) => return prepare(PrepareAbort, true),
        (Empty, true) => INVALID_TXN_STATE,
        (Dead | PrepareEpochFence, _) => UNKNOWN_SERVER_ERROR,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::decode_value;

    const ID: &str = "tx";

    /// Runs `step` against the fixture, then commits its write.
    macro_rules! commit {
        ($f:ident, $step:expr) => {{
            let step = $step;
            $f.commit(step)
        }};
    }
    const T0: i64 = 1_000_000;

    fn tp(topic: &str, partition: i32) -> (String, i32) {
        (topic.to_string(), partition)
    }

    struct Fixture {
        shard: TxnShard,
        next_pid: i64,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                shard: TxnShard::new(7, TxnConfig::default()),
                next_pid: 1000,
            }
        }

        fn init(&mut self, expected: (i64, i16), now: i64) -> Step<InitResult> {
            let mut pid = self.next_pid;
            let step = self.shard.init_producer_id(
                ID,
                60_000,
                expected.0,
                expected.1,
                2,
                now,
                &mut || {
                    pid += 1;
                    Ok(pid - 1)
                },
            );
            self.next_pid = pid;
            step
        }

        fn end(
            &mut self,
            pid: i64,
            epoch: i16,
            commit: bool,
            tv: i16,
            now: i64,
        ) -> Step<EndResult> {
            let mut next = self.next_pid;
            let api_version = if tv >= 2 { 5 } else { 4 };
            let step =
                self.shard
                    .end_txn(ID, pid, epoch, commit, api_version, tv, now, &mut || {
                        next += 1;
                        Ok(next - 1)
                    });
            self.next_pid = next;
            step
        }

        fn expire(&mut self, now: i64) -> Vec<TxnWrite> {
            let mut next = self.next_pid;
            let writes = self.shard.expire(now, &mut || {
                next += 1;
                Ok(next - 1)
            });
            self.next_pid = next;
            writes
        }

        /// Commits a step's write and returns its answer and any marker job.
        fn commit<T>(&mut self, step: Step<T>) -> (T, Option<MarkerJob>) {
            match step {
                Step::Now(_) => panic!("expected a write"),
                Step::Write(write, answer) => {
                    let job =
                        self.shard
                            .write_completed(&write.transactional_id, write.write_id, true);
                    (answer, job)
                }
            }
        }

        fn now<T: std::fmt::Debug>(step: Step<T>) -> T {
            match step {
                Step::Now(answer) => answer,
                Step::Write(write, answer) => {
                    panic!("expected an answer, got {write:?} then {answer:?}")
                }
            }
        }

        /// Writes the job's markers and commits the Complete write.
        fn complete(&mut self, job: &MarkerJob) {
            let write = self
                .shard
                .markers_written(ID, job.producer_id, job.producer_epoch)
                .expect("complete write");
            assert_eq!(self.shard.write_completed(ID, write.write_id, true), None);
        }

        fn meta(&self) -> &TxnMetadata {
            self.shard.describe(ID).expect("known id")
        }

        fn add(
            &mut self,
            pid: i64,
            epoch: i16,
            partitions: &[(String, i32)],
            api_version: i16,
            now: i64,
        ) -> Step<i16> {
            self.shard
                .add_partitions(ID, pid, epoch, partitions, api_version, now)
        }
    }

    #[test]
    fn init_add_commit_markers_complete_tv1() {
        let mut f = Fixture::new();
        let (init, job) = commit!(f, f_init(&mut f));
        assert_eq!(
            init,
            InitResult {
                error: NONE,
                producer_id: 1000,
                producer_epoch: 0
            }
        );
        assert_eq!(job, None);
        let (added, _) = commit!(f, f.add(1000, 0, &[tp("a", 0), tp("b", 1)], 3, T0 + 1));
        assert_eq!(added, NONE);
        assert_eq!(f.meta().state, TxnState::Ongoing);
        assert_eq!(f.meta().txn_start_ms, T0 + 1);
        // Already added: answered at once.
        assert_eq!(Fixture::now(f.add(1000, 0, &[tp("a", 0)], 3, T0 + 2)), NONE);
        let (end, job) = commit!(f, f.end(1000, 0, true, 0, T0 + 3));
        assert_eq!(
            end,
            EndResult {
                error: NONE,
                producer_id: -1,
                producer_epoch: -1
            }
        );
        let job = job.expect("markers");
        assert_eq!(
            job,
            MarkerJob {
                transactional_id: ID.to_string(),
                producer_id: 1000,
                producer_epoch: 0,
                coordinator_epoch: 7,
                commit: true,
                partitions: vec![tp("a", 0), tp("b", 1)],
                transaction_version: 0,
            }
        );
        assert_eq!(f.meta().state, TxnState::PrepareCommit);
        // While markers are written, requests wait.
        assert_eq!(
            Fixture::now(f.add(1000, 0, &[tp("c", 0)], 3, T0 + 4)),
            CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 0, T0 + 4)).error,
            CONCURRENT_TRANSACTIONS
        );
        // Kafka checks the pending transition (to CompleteCommit) before the state.
        assert_eq!(
            Fixture::now(f.end(1000, 0, false, 0, T0 + 4)).error,
            CONCURRENT_TRANSACTIONS
        );
        f.complete(&job);
        let meta = f.meta();
        assert_eq!(meta.state, TxnState::CompleteCommit);
        assert!(meta.partitions.is_empty());
        assert_eq!(meta.producer_epoch, 0);
        // A retried commit succeeds; an abort now is invalid.
        assert_eq!(Fixture::now(f.end(1000, 0, true, 0, T0 + 5)).error, NONE);
        assert_eq!(
            Fixture::now(f.end(1000, 0, false, 0, T0 + 5)).error,
            INVALID_TXN_STATE
        );
    }

    fn f_init(f: &mut Fixture) -> Step<InitResult> {
        f.init((-1, -1), T0)
    }

    #[test]
    fn written_values_decode_to_the_committed_state() {
        let mut f = Fixture::new();
        let Step::Write(write, _) = f_init(&mut f) else {
            panic!()
        };
        f.shard.write_completed(ID, write.write_id, true);
        assert_eq!(write.key, crate::records::encode_key(ID));
        let decoded = decode_value(ID, write.value.as_deref().unwrap()).unwrap();
        // Kafka 4.1.1 does not store the previous and next producer ids.
        let stored = TxnMetadata {
            previous_producer_id: crate::state::NO_PRODUCER_ID,
            next_producer_id: crate::state::NO_PRODUCER_ID,
            ..f.meta().clone()
        };
        assert_eq!(decoded, stored);
        assert_eq!(write.value.as_ref().unwrap()[..2], [0, 1]);
        let mut old = TxnShard::new(1, TxnConfig::default()).with_transaction_version_level(0);
        let Step::Write(write, _) = old.init_producer_id(ID, 1000, -1, -1, 0, T0, &mut || Ok(5))
        else {
            panic!()
        };
        assert_eq!(write.value.as_ref().unwrap()[..2], [0, 0]);
    }

    #[test]
    fn abort_and_old_versions_get_invalid_producer_epoch() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 1, T0));
        assert_eq!(
            Fixture::now(f.add(1000, 3, &[tp("a", 0)], 1, T0)),
            INVALID_PRODUCER_EPOCH
        );
        assert_eq!(
            Fixture::now(f.add(1000, 3, &[tp("a", 0)], 2, T0)),
            PRODUCER_FENCED
        );
        assert_eq!(
            Fixture::now(f.add(99, 0, &[tp("a", 0)], 2, T0)),
            INVALID_PRODUCER_ID_MAPPING
        );
        let mut next = 0;
        let old = f.shard.end_txn(ID, 1000, 3, false, 1, 0, T0, &mut || {
            next += 1;
            Ok(next)
        });
        assert_eq!(Fixture::now(old).error, INVALID_PRODUCER_EPOCH);
        let (_, job) = commit!(f, f.end(1000, 0, false, 0, T0));
        let job = job.unwrap();
        assert!(!job.commit);
        f.complete(&job);
        assert_eq!(f.meta().state, TxnState::CompleteAbort);
        // TV1: EndTxn on Empty is invalid.
        let mut g = Fixture::new();
        commit!(g, f_init(&mut g));
        assert_eq!(
            Fixture::now(g.end(1000, 0, false, 0, T0)).error,
            INVALID_TXN_STATE
        );
    }

    #[test]
    fn unknown_id_and_bad_requests() {
        let mut f = Fixture::new();
        assert_eq!(
            Fixture::now(f.add(1, 0, &[tp("a", 0)], 3, T0)),
            INVALID_PRODUCER_ID_MAPPING
        );
        assert_eq!(
            Fixture::now(f.end(1, 0, true, 0, T0)).error,
            INVALID_PRODUCER_ID_MAPPING
        );
        assert_eq!(
            f.shard.verify_partitions(ID, 1, 0, &[tp("a", 0)]),
            vec![(tp("a", 0), INVALID_PRODUCER_ID_MAPPING)]
        );
        let mut alloc = || Ok(1);
        let too_long = f
            .shard
            .init_producer_id(ID, 900_001, -1, -1, 0, T0, &mut alloc);
        assert_eq!(Fixture::now(too_long).error, INVALID_TRANSACTION_TIMEOUT);
        let zero = f.shard.init_producer_id(ID, 0, -1, -1, 0, T0, &mut alloc);
        assert_eq!(Fixture::now(zero).error, INVALID_TRANSACTION_TIMEOUT);
        let half = f.shard.init_producer_id(ID, 1000, 5, -1, 0, T0, &mut alloc);
        assert_eq!(Fixture::now(half).error, INVALID_REQUEST);
        let empty = f
            .shard
            .init_producer_id("", 1000, -1, -1, 0, T0, &mut alloc);
        assert_eq!(Fixture::now(empty).error, INVALID_REQUEST);
        let failed = f.shard.init_producer_id(ID, 1000, -1, -1, 0, T0, &mut || {
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        });
        assert_eq!(Fixture::now(failed).error, COORDINATOR_LOAD_IN_PROGRESS);
    }

    #[test]
    fn pending_transition_answers_concurrent_transactions_and_failure_drops_it() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        let Step::Write(write, _) = f.add(1000, 0, &[tp("a", 0)], 3, T0) else {
            panic!()
        };
        assert_eq!(
            Fixture::now(f.add(1000, 0, &[tp("b", 0)], 3, T0)),
            CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            Fixture::now(f.init((-1, -1), T0)).error,
            CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 0, T0)).error,
            CONCURRENT_TRANSACTIONS
        );
        // A stale completion is ignored.
        assert_eq!(
            f.shard.write_completed(ID, write.write_id + 100, true),
            None
        );
        assert_eq!(
            Fixture::now(f.add(1000, 0, &[tp("b", 0)], 3, T0)),
            CONCURRENT_TRANSACTIONS
        );
        // The write fails: the state is as before it.
        f.shard.write_completed(ID, write.write_id, false);
        assert_eq!(f.meta().state, TxnState::Empty);
        assert!(f.meta().partitions.is_empty());
        // ... and a late success of the failed write changes nothing.
        f.shard.write_completed(ID, write.write_id, true);
        assert_eq!(f.meta().state, TxnState::Empty);
        let (code, _) = commit!(f, f.add(1000, 0, &[tp("b", 0)], 3, T0));
        assert_eq!(code, NONE);
    }

    #[test]
    fn init_producer_id_bumps_the_epoch_and_honours_kip_360() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        let (second, _) = commit!(f, f.init((-1, -1), T0));
        assert_eq!((second.producer_id, second.producer_epoch), (1000, 1));
        // KIP-360: the current epoch bumps; a retry with the previous epoch gets the current.
        let (third, _) = commit!(f, f.init((1000, 1), T0));
        assert_eq!((third.error, third.producer_epoch), (NONE, 2));
        let (retry, _) = commit!(f, f.init((1000, 1), T0));
        assert_eq!((retry.error, retry.producer_epoch), (NONE, 2));
        assert_eq!(Fixture::now(f.init((1000, 0), T0)).error, PRODUCER_FENCED);
        assert_eq!(Fixture::now(f.init((555, 2), T0)).error, PRODUCER_FENCED);
    }

    #[test]
    fn second_init_fences_an_ongoing_transaction() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 3, T0));
        let (answer, job) = commit!(f, f.init((-1, -1), T0 + 10));
        assert_eq!(answer.error, CONCURRENT_TRANSACTIONS);
        let job = job.expect("abort markers");
        assert!(!job.commit);
        // Cluster at TV2: fence bump then the abort's bump.
        assert_eq!((job.producer_id, job.producer_epoch), (1000, 2));
        assert_eq!(job.partitions, vec![tp("a", 0)]);
        // The zombie is fenced.
        assert_eq!(
            Fixture::now(f.add(1000, 0, &[tp("b", 0)], 3, T0)),
            PRODUCER_FENCED
        );
        // The retry waits until the markers are written, then bumps again.
        assert_eq!(
            Fixture::now(f.init((-1, -1), T0 + 11)).error,
            CONCURRENT_TRANSACTIONS
        );
        f.complete(&job);
        assert_eq!(f.meta().state, TxnState::CompleteAbort);
        let (answer, _) = commit!(f, f.init((-1, -1), T0 + 12));
        assert_eq!((answer.error, answer.producer_epoch), (NONE, 3));

        // Cluster at TV0: the abort does not bump; markers carry the fenced epoch.
        let mut g = Fixture::new();
        g.shard = TxnShard::new(1, TxnConfig::default()).with_transaction_version_level(0);
        commit!(g, f_init(&mut g));
        commit!(g, g.add(1000, 0, &[tp("a", 0)], 3, T0));
        let (_, job) = commit!(g, g.init((-1, -1), T0));
        assert_eq!(job.unwrap().producer_epoch, 1);
    }

    #[test]
    fn failed_fence_keeps_the_bumped_epoch_and_does_not_bump_twice() {
        let mut f = Fixture::new();
        f.shard = TxnShard::new(1, TxnConfig::default()).with_transaction_version_level(0);
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 3, T0));
        let Step::Write(write, _) = f.init((-1, -1), T0) else {
            panic!()
        };
        f.shard.write_completed(ID, write.write_id, false);
        assert_eq!(f.meta().state, TxnState::Ongoing);
        assert_eq!(f.meta().producer_epoch, 1);
        assert_eq!(
            Fixture::now(f.add(1000, 0, &[tp("a", 0)], 3, T0)),
            PRODUCER_FENCED
        );
        let (_, job) = commit!(f, f.init((-1, -1), T0));
        assert_eq!(job.unwrap().producer_epoch, 1);
    }

    #[test]
    fn timed_out_transactions_are_aborted() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 3, T0));
        assert!(f.expire(T0 + 60_000).is_empty());
        let writes = f.expire(T0 + 60_001);
        assert_eq!(writes.len(), 1);
        let prepared = decode_value(ID, writes[0].value.as_deref().unwrap()).unwrap();
        assert_eq!(prepared.state, TxnState::PrepareAbort);
        // A pending abort is not aborted twice.
        assert!(f.expire(T0 + 70_000).is_empty());
        let job = f
            .shard
            .write_completed(ID, writes[0].write_id, true)
            .unwrap();
        assert!(!job.commit);
        assert_eq!(job.producer_epoch, 2);
        // The timed-out producer learns it was fenced.
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 0, T0)).error,
            PRODUCER_FENCED
        );
        f.complete(&job);
        assert_eq!(f.meta().state, TxnState::CompleteAbort);
    }

    #[test]
    fn tv2_bumps_the_epoch_per_transaction_and_recognises_retries() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 5, T0));
        assert_eq!(f.meta().client_transaction_version, 2);
        let (end, job) = commit!(f, f.end(1000, 0, true, 2, T0 + 1));
        assert_eq!(
            end,
            EndResult {
                error: NONE,
                producer_id: 1000,
                producer_epoch: 1
            }
        );
        let job = job.unwrap();
        assert_eq!((job.producer_epoch, job.transaction_version), (1, 2));
        // Retry while the markers are written.
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 2, T0 + 2)).error,
            CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            Fixture::now(f.end(1000, 0, false, 2, T0 + 2)).error,
            CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            Fixture::now(f.end(1000, 1, true, 2, T0 + 2)).error,
            PRODUCER_FENCED
        );
        f.complete(&job);
        // Retry after completion: success with the current epoch.
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 2, T0 + 3)),
            EndResult {
                error: NONE,
                producer_id: 1000,
                producer_epoch: 1
            }
        );
        // A commit at the current epoch with nothing open is invalid; an abort bumps.
        assert_eq!(
            Fixture::now(f.end(1000, 1, true, 2, T0 + 3)).error,
            INVALID_TXN_STATE
        );
        let (end, job) = commit!(f, f.end(1000, 1, false, 2, T0 + 4));
        assert_eq!(end.producer_epoch, 2);
        let job = job.unwrap();
        assert!(job.partitions.is_empty());
        f.complete(&job);
        // Old epochs are fenced.
        assert_eq!(
            Fixture::now(f.end(1000, 0, false, 2, T0 + 5)).error,
            PRODUCER_FENCED
        );
        // Next transaction at the new epoch.
        commit!(f, f.add(1000, 2, &[tp("b", 0)], 5, T0 + 6));
        let (end, _) = commit!(f, f.end(1000, 2, false, 2, T0 + 7));
        assert_eq!(end.producer_epoch, 3);
    }

    #[test]
    fn tv2_abort_of_an_empty_transaction_is_allowed() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        assert_eq!(
            Fixture::now(f.end(1000, 0, true, 2, T0)).error,
            INVALID_TXN_STATE
        );
        let (end, job) = commit!(f, f.end(1000, 0, false, 2, T0 + 5));
        assert_eq!((end.error, end.producer_epoch), (NONE, 1));
        assert_eq!(f.meta().txn_start_ms, T0 + 5);
        f.complete(&job.unwrap());
        assert_eq!(f.meta().state, TxnState::CompleteAbort);
    }

    #[test]
    fn tv2_epoch_exhaustion_rotates_the_producer_id() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        // Bring the epoch to the boundary through a load.
        let mut meta = f.meta().clone();
        meta.producer_epoch = i16::MAX - 1;
        let mut shard = TxnShard::new(7, TxnConfig::default());
        shard
            .replay(
                &crate::records::encode_key(ID),
                Some(&crate::records::encode_value(&meta)),
            )
            .unwrap();
        assert!(shard.finish_load().is_empty());
        f.shard = shard;
        f.next_pid = 2000;
        commit!(f, f.add(1000, i16::MAX - 1, &[tp("a", 0)], 5, T0));
        let (end, job) = commit!(f, f.end(1000, i16::MAX - 1, true, 2, T0 + 1));
        assert_eq!(
            end,
            EndResult {
                error: NONE,
                producer_id: 2000,
                producer_epoch: 0
            }
        );
        let job = job.unwrap();
        assert_eq!((job.producer_id, job.producer_epoch), (1000, i16::MAX));
        f.complete(&job);
        let meta = f.meta();
        assert_eq!(
            (
                meta.producer_id,
                meta.producer_epoch,
                meta.previous_producer_id
            ),
            (2000, 0, 1000)
        );
        // A retry with the old id and epoch is recognised.
        assert_eq!(
            Fixture::now(f.end(1000, i16::MAX - 1, true, 2, T0 + 2)),
            EndResult {
                error: NONE,
                producer_id: 2000,
                producer_epoch: 0
            }
        );
        commit!(f, f.add(2000, 0, &[tp("a", 0)], 5, T0 + 3));
    }

    #[test]
    fn init_producer_id_rotates_an_exhausted_epoch() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        let mut meta = f.meta().clone();
        meta.producer_epoch = i16::MAX - 1;
        meta.state = TxnState::CompleteCommit;
        meta.txn_start_ms = T0;
        let mut shard = TxnShard::new(7, TxnConfig::default());
        shard
            .replay(
                &crate::records::encode_key(ID),
                Some(&crate::records::encode_value(&meta)),
            )
            .unwrap();
        f.shard = shard;
        f.next_pid = 3000;
        let (answer, _) = commit!(f, f.init((1000, i16::MAX - 1), T0));
        assert_eq!(
            answer,
            InitResult {
                error: NONE,
                producer_id: 3000,
                producer_epoch: 0
            }
        );
        // The producer that lost that answer retries with its old id: it is let through.
        let (retry, _) = commit!(f, f.init((1000, i16::MAX - 1), T0));
        assert_eq!(
            (retry.error, retry.producer_id, retry.producer_epoch),
            (NONE, 3000, 0)
        );
    }

    #[test]
    fn verify_only_checks_membership() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        commit!(f, f.add(1000, 0, &[tp("a", 0)], 3, T0));
        assert_eq!(
            f.shard
                .verify_partitions(ID, 1000, 0, &[tp("a", 0), tp("a", 1)]),
            vec![(tp("a", 0), NONE), (tp("a", 1), TRANSACTION_ABORTABLE)]
        );
        assert_eq!(
            f.shard.verify_partitions(ID, 1000, 1, &[tp("a", 0)]),
            vec![(tp("a", 0), PRODUCER_FENCED)]
        );
        assert_eq!(
            f.shard.verify_partitions("", 1000, 0, &[tp("a", 0)]),
            vec![(tp("a", 0), INVALID_REQUEST)]
        );
        commit!(f, f.end(1000, 0, true, 0, T0));
        assert_eq!(
            f.shard.verify_partitions(ID, 1000, 0, &[tp("a", 0)]),
            vec![(tp("a", 0), CONCURRENT_TRANSACTIONS)]
        );
    }

    #[test]
    fn replay_and_finish_load_resend_markers() {
        let mut f = Fixture::new();
        let mut log: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let Step::Write(w, _) = f_init(&mut f) else {
            panic!()
        };
        f.shard.write_completed(ID, w.write_id, true);
        log.push((w.key, w.value));
        let Step::Write(w, _) = f.add(1000, 0, &[tp("a", 0), tp("b", 2)], 3, T0) else {
            panic!()
        };
        f.shard.write_completed(ID, w.write_id, true);
        log.push((w.key, w.value));
        let Step::Write(w, _) = f.end(1000, 0, true, 0, T0) else {
            panic!()
        };
        let job = f.shard.write_completed(ID, w.write_id, true).unwrap();
        log.push((w.key, w.value));
        // Another id, expired (tombstoned) in the log; and a foreign key version.
        log.push((crate::records::encode_key("gone"), log[0].1.clone()));
        log.push((crate::records::encode_key("gone"), None));
        log.push((vec![0, 9, 0, 0], Some(vec![1, 2, 3])));

        let mut loaded = TxnShard::new(8, TxnConfig::default());
        for (key, value) in &log {
            loaded.replay(key, value.as_deref()).unwrap();
        }
        let jobs = loaded.finish_load();
        assert_eq!(
            jobs,
            vec![MarkerJob {
                coordinator_epoch: 8,
                ..job
            }]
        );
        assert!(loaded.describe("gone").is_none());
        assert_eq!(loaded.list().count(), 1);
        // Markers pending: requests wait; then completion works as usual.
        let mut alloc = || Ok(1);
        assert_eq!(
            loaded.end_txn(ID, 1000, 0, true, 3, 0, T0, &mut alloc),
            Step::Now(EndResult::error(CONCURRENT_TRANSACTIONS))
        );
        let write = loaded.markers_written(ID, 1000, 0).unwrap();
        // A failed Complete write can be retried.
        loaded.write_completed(ID, write.write_id, false);
        let write = loaded.markers_written(ID, 1000, 0).unwrap();
        loaded.write_completed(ID, write.write_id, true);
        assert_eq!(loaded.describe(ID).unwrap().state, TxnState::CompleteCommit);
        assert!(loaded.markers_written(ID, 1000, 0).is_none());
        assert!(
            loaded
                .replay(&crate::records::encode_key(ID), Some(&[0, 0, 1]))
                .is_err()
        );
    }

    #[test]
    fn idle_ids_expire_with_a_tombstone() {
        let mut f = Fixture::new();
        commit!(f, f_init(&mut f));
        let expiration = TxnConfig::default().transactional_id_expiration_ms;
        assert!(f.expire(T0 + expiration - 1).is_empty());
        let writes = f.expire(T0 + expiration);
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].value, None);
        assert_eq!(writes[0].key, crate::records::encode_key(ID));
        assert_eq!(
            Fixture::now(f.init((-1, -1), T0)).error,
            CONCURRENT_TRANSACTIONS
        );
        // A failed tombstone keeps the id.
        f.shard.write_completed(ID, writes[0].write_id, false);
        assert!(f.shard.describe(ID).is_some());
        let writes = f.expire(T0 + expiration);
        f.shard.write_completed(ID, writes[0].write_id, true);
        assert!(f.shard.describe(ID).is_none());
        // Ongoing ids never expire this way (they time out instead).
        let mut g = Fixture::new();
        commit!(g, f_init(&mut g));
        commit!(g, g.add(1000, 0, &[tp("a", 0)], 3, T0));
        let writes = g.expire(T0 + expiration);
        assert!(writes.iter().all(|w| w.value.is_some()));
    }

    #[test]
    fn list_filters_like_list_transactions() {
        let mut shard = TxnShard::new(1, TxnConfig::default());
        let mut pid = 0;
        let mut alloc = || {
            pid += 1;
            Ok(pid)
        };
        for (id, start) in [("a", 0), ("b", 0), ("c", 0)] {
            let Step::Write(w, _) = shard.init_producer_id(id, 1000, -1, -1, 0, start, &mut alloc)
            else {
                panic!()
            };
            shard.write_completed(id, w.write_id, true);
        }
        let Step::Write(w, _) = shard.add_partitions("b", 2, 0, &[tp("t", 0)], 3, 100) else {
            panic!()
        };
        shard.write_completed("b", w.write_id, true);
        let ids = |v: Vec<&TxnMetadata>| {
            v.into_iter()
                .map(|m| m.transactional_id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(shard.list_filtered(&[], &[], -1, 1000)),
            ["a", "b", "c"]
        );
        assert_eq!(
            ids(shard.list_filtered(&["Ongoing".to_string()], &[], -1, 1000)),
            ["b"]
        );
        assert!(
            shard
                .list_filtered(&["Nope".to_string()], &[], -1, 1000)
                .is_empty()
        );
        assert_eq!(ids(shard.list_filtered(&[], &[1, 3], -1, 1000)), ["a", "c"]);
        // Duration: running longer than 899 ms at t=1000 (started at 100).
        assert_eq!(
            ids(shard.list_filtered(&["Ongoing".to_string()], &[], 899, 1000)),
            ["b"]
        );
        assert!(
            shard
                .list_filtered(&["Ongoing".to_string()], &[], 900, 1000)
                .is_empty()
        );
        assert_eq!(
            ids(shard.list_filtered_matching(&[], &[], -1, 1000, &|id| id != "a")),
            ["b", "c"]
        );
    }
}
