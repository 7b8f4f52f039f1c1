//! The broker's wall clock, with a test hook that makes it jump.
//!
//! Every wall-clock reading of the broker (record timestamps, retention, ISR lag,
//! transaction and group timeouts) goes through [`now_ms`]. Timers that must not move
//! with the wall clock (broker session liveness, Raft) use the monotonic clock instead,
//! as Kafka's do (`Time.nanoseconds`).
//!
//! The fault checker (`compat/cluster`) makes one node's wall clock jump without touching
//! the host's, as NTP stepping that node's clock would: with `SLUICE_TEST_CLOCK_SKEW_FILE`
//! set, a thread reads a signed millisecond offset from that file every 100 ms and adds
//! it to every reading. Unset (always, outside tests), the offset stays 0.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// A task's period on the monotonic clock, so that a wall-clock jump neither stalls it
/// (a jump back, or the return from a jump forward, would otherwise leave "now - last"
/// negative for as long as the jump) nor runs it in a burst. Kafka schedules its periodic
/// tasks the same way (`KafkaScheduler`, on `System.nanoTime`).
#[derive(Debug, Default)]
pub struct Period {
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Period {
    /// True once every `interval`; the first call starts the period (as a task
    /// scheduled with an initial delay of one period) and returns false.
    pub fn due(&self, interval: Duration) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match *last {
            None => {
                *last = Some(now);
                false
            }
            Some(at) if now.duration_since(at) >= interval => {
                *last = Some(now);
                true
            }
            Some(_) => false,
        }
    }
}

/// The environment variable naming the skew file of the test hook.
pub const TEST_CLOCK_SKEW_FILE: &str = "SLUICE_TEST_CLOCK_SKEW_FILE";

static SKEW_MS: AtomicI64 = AtomicI64::new(0);

/// The wall clock in milliseconds since the Unix epoch (plus the test skew, if any).
pub fn now_ms() -> i64 {
    let system = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    system.saturating_add(SKEW_MS.load(Ordering::Relaxed))
}

/// Sets the offset added to every [`now_ms`] reading (the test hook's effect).
pub fn set_skew_ms(skew: i64) {
    SKEW_MS.store(skew, Ordering::Relaxed);
}

/// The offset currently added to [`now_ms`].
pub fn skew_ms() -> i64 {
    SKEW_MS.load(Ordering::Relaxed)
}

/// Parses the skew file's text: one signed integer of milliseconds; empty means 0.
pub fn parse_skew(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<i64>()
        .map_err(|e| format!("clock skew {text:?} is not a whole number of milliseconds: {e}"))
}

/// Starts the test hook when [`TEST_CLOCK_SKEW_FILE`] is set: returns the file it
/// watches, or None (the normal case). A file that is missing or unreadable leaves the
/// skew as it was; bad text is reported once per change and ignored.
pub fn watch_skew_file_from_env() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(std::env::var_os(TEST_CLOCK_SKEW_FILE)?);
    let watched = path.clone();
    std::thread::Builder::new()
        .name("clock-skew-hook".into())
        .spawn(move || {
            let mut last_text: Option<String> = None;
            loop {
                if let Ok(text) = std::fs::read_to_string(&watched)
                    && last_text.as_deref() != Some(text.as_str())
                {
                    match parse_skew(&text) {
                        Ok(skew) => {
                            tracing::warn!(
                                "test hook: the wall clock now reads {skew:+} ms from the host's"
                            );
                            set_skew_ms(skew);
                        }
                        Err(error) => tracing::warn!("test hook: {error}; skew unchanged"),
                    }
                    last_text = Some(text);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
        .ok()?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_is_due_once_per_interval_after_the_first() {
        let period = Period::default();
        assert!(
            !period.due(Duration::ZERO),
            "the first call starts the period"
        );
        assert!(period.due(Duration::ZERO));
        assert!(!period.due(Duration::from_secs(3600)));
    }

    #[test]
    fn parses_signed_milliseconds_and_refuses_the_rest() {
        assert_eq!(parse_skew(" 120000\n"), Ok(120_000));
        assert_eq!(parse_skew("-3600000"), Ok(-3_600_000));
        assert_eq!(parse_skew(""), Ok(0));
        assert!(parse_skew("2m").is_err());
        assert!(parse_skew("1.5").is_err());
    }
}
