//! Transaction-coordinator logic that needs no I/O, Kafka 4.1's behaviour:
//!
//! - [`records`]: the keys and values of `__transaction_state` in Kafka's formats, and
//!   `partition_for` (which partition, hence which coordinator, owns a transactional id);
//! - [`state`]: the transaction states and a transactional id's metadata;
//! - [`coordinator`]: [`coordinator::TxnShard`], the state machine of the transactions of
//!   one `__transaction_state` partition;
//! - [`errors`]: Kafka's error codes it answers.
//!
//! It is not the broker: the broker owns the requests, the timers, the producer id
//! allocator, the appends to and reads of `__transaction_state`, and the WriteTxnMarkers
//! requests.
//!
//! # The flow
//!
//! On becoming leader of `__transaction_state` partition *p* at leader epoch *e*, the
//! broker creates `TxnShard::new(e, config)`, feeds it every record of *p* with
//! [`TxnShard::replay`](coordinator::TxnShard::replay), then calls
//! [`finish_load`](coordinator::TxnShard::finish_load) and sends the markers it returns
//! (transactions a previous leader left in PrepareCommit/PrepareAbort).
//!
//! A request (`init_producer_id`, `add_partitions`, `end_txn`) returns a
//! [`Step`]: `Now(answer)`, or `Write(write, answer)`. For a write the
//! broker appends `write.key`/`write.value` to *p* with acks=all and calls
//! [`write_completed`](coordinator::TxnShard::write_completed)`(id, write_id, committed)`;
//! only then does the new state take effect and the answer go out (on a failed append
//! the broker answers the append's error instead). Until then the transactional id has a
//! pending transition and other requests for it answer CONCURRENT_TRANSACTIONS.
//!
//! What is persisted when:
//!
//! 1. InitProducerId: an Empty record with the new producer id/epoch. If a transaction
//!    is Ongoing it is fenced instead: the epoch is bumped and a PrepareAbort record is
//!    written; the client gets CONCURRENT_TRANSACTIONS and retries.
//! 2. AddPartitionsToTxn / AddOffsetsToTxn / a transactions-V2 implicit add: an Ongoing
//!    record with the partition set (nothing when the partitions are already in).
//! 3. EndTxn: a PrepareCommit or PrepareAbort record (under transactions V2 with the
//!    bumped epoch). When it commits, `write_completed` returns a
//!    [`MarkerJob`]; the broker writes the markers to every
//!    partition and calls [`markers_written`](coordinator::TxnShard::markers_written),
//!    which returns the CompleteCommit/CompleteAbort write, completed like any other.
//! 4. Periodically [`expire`](coordinator::TxnShard::expire): timed-out Ongoing
//!    transactions are fenced and aborted (PrepareAbort, then step 3's markers), and ids
//!    idle past `transactional.id.expiration.ms` get a tombstone.
//!
//! Write ids make a late completion of an old write harmless: it is ignored.

pub mod coordinator;
pub mod errors;
#[doc(hidden)]
pub mod fuzzing;
pub mod records;
pub mod state;

pub use coordinator::{EndResult, InitResult, MarkerJob, Step, TxnConfig, TxnShard, TxnWrite};
pub use records::RecordError;
pub use state::{TxnMetadata, TxnState};
