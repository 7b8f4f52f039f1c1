//! The broker's log-cleaner tasks (Kafka's `LogCleaner` threads): up to
//! `log.cleaner.threads` passes run at once, each cleaning the filthiest compacted log
//! ([`Broker::clean_filthiest_log`]) on a blocking thread; a pass that finds nothing to
//! clean rests `log.cleaner.backoff.ms` before its slot takes another. Both keys, and
//! `log.cleaner.dedupe.buffer.size`, are read at each pass from the dynamic broker
//! settings ([`crate::config::DynamicConfig`]: the dynamic layers over the static
//! configuration, swapped whole when they change), so `kafka-configs.sh --alter --entity-type brokers`
//! changes them without a restart, as in Kafka. Shutdown waits for running passes, so
//! none swaps files into a log being closed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::broker::Broker;

/// The cleaner's dynamic settings, as swapped in last: (threads, backoff).
fn settings(broker: &Broker) -> (usize, Duration) {
    let cleaner = broker.dynamic.current().cleaner;
    (cleaner.threads, cleaner.backoff)
}

/// One slot's turn: a pass, then the backoff if it found nothing to clean.
async fn pass(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>, backoff: Duration) {
    let cleaner = broker.clone();
    let cleaned = match tokio::task::spawn_blocking(move || cleaner.clean_filthiest_log()).await {
        Ok(Ok(Some((partition, stats)))) => {
            tracing::info!(%partition, next_dirty_offset = stats.next_dirty_offset, bytes_read = stats.bytes_read, bytes_written = stats.bytes_written, segments_before = stats.segments_before, segments_after = stats.segments_after, "log cleaner pass");
            true
        }
        Ok(Ok(None)) => false,
        Ok(Err(error)) => {
            tracing::error!(%error, "log cleaner pass failed");
            false
        }
        // The runtime shutting down cancels a pass that had not started: not a failure.
        Err(error) if error.is_cancelled() => {
            tracing::debug!("log cleaner pass cancelled at shutdown");
            false
        }
        Err(error) => {
            tracing::error!(%error, "log cleaner pass panicked");
            false
        }
    };
    if !cleaned && !*shutdown.borrow() {
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = shutdown.changed() => {}
        }
    }
}

pub async fn run(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let mut running = JoinSet::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        let (threads, backoff) = settings(&broker);
        while running.len() < threads {
            running.spawn(pass(broker.clone(), shutdown.clone(), backoff));
        }
        tokio::select! {
            Some(_) = running.join_next(), if !running.is_empty() => {}
            // No slot (threads = 0): look at the setting again later.
            _ = tokio::time::sleep(backoff), if running.is_empty() => {}
            _ = shutdown.changed() => {}
        }
    }
    while running.join_next().await.is_some() {}
}
