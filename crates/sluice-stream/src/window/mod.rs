//! Time windows and window assigners.
//!
//! Follows Flink's `TimeWindow` and its assigners:
//! - a window `[start, end)` has max timestamp `end − 1`; it fires when the watermark (or
//!   processing time) reaches `end − 1`;
//! - `TumblingEventTimeWindows` / `TumblingProcessingTimeWindows`: one window of `size`
//!   per element, starting at `window_start(ts, offset, size)`;
//! - `SlidingEventTimeWindows` / `SlidingProcessingTimeWindows`: `size / slide` windows
//!   (rounded up) per element, the last one starting at `window_start(ts, offset, slide)`;
//! - `EventTimeSessionWindows`: `[ts, ts + gap)` per element, merged by the window operator
//!   with every window it overlaps or touches (Flink's `TimeWindow.intersects`:
//!   `a.start <= b.end && a.end >= b.start`).
//!
//! `window_start(ts, offset, size) = ts − (ts − offset + size) mod size` with a Euclidean
//! modulo, so timestamps before the epoch (and before the offset) fall into the window
//! that contains them; Flink 1.x used Java's `%` there and misplaced negative timestamps.
//!
//! Processing-time assigners use the operator's current processing time, not the record's
//! timestamp. Assigner parameters are validated when the job is built (`execute` returns
//! `InvalidConfiguration`), as Flink validates at graph construction.

pub(crate) mod operator;

use std::time::Duration;

use crate::time::duration_ms;

/// A window of time `[start, end)` in milliseconds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct TimeWindow {
    pub start: i64,
    pub end: i64,
}

impl TimeWindow {
    pub fn new(start: i64, end: i64) -> Self {
        Self { start, end }
    }

    /// The largest timestamp inside the window: the time at which it fires.
    pub fn max_timestamp(&self) -> i64 {
        self.end - 1
    }

    /// Overlapping or touching (Flink's `TimeWindow.intersects`).
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window containing both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// The start of the window of `size` (shifted by `offset`) containing `timestamp`.
pub fn window_start(timestamp: i64, offset: i64, size: i64) -> i64 {
    debug_assert!(size > 0);
    // In i128 so `ts − offset + size` cannot overflow; the result lies in [ts − size, ts].
    let remainder = (i128::from(timestamp) - i128::from(offset) + i128::from(size))
        .rem_euclid(i128::from(size));
    timestamp - remainder as i64
}

/// Assigns each element to windows (Flink's `WindowAssigner` with its default trigger:
/// `EventTimeTrigger` for event-time assigners, `ProcessingTimeTrigger` otherwise).
pub trait WindowAssigner: 'static {
    /// The windows of an element with `timestamp` (event time) or arriving at `timestamp`
    /// (processing time).
    fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow>;
    fn is_event_time(&self) -> bool;
    /// Session windows merge; the others never do.
    fn is_merging(&self) -> bool {
        false
    }
    /// Checks the parameters (called when the job graph is built).
    fn validate(&self) -> Result<(), String>;
}

fn validate_size_offset(kind: &str, size: i64, offset: i64) -> Result<(), String> {
    if size <= 0 {
        return Err(format!("{kind}: size must be positive, got {size} ms"));
    }
    if offset.unsigned_abs() >= size.unsigned_abs() {
        return Err(format!(
            "{kind}: |offset| must be smaller than the size, got offset {offset} ms for size {size} ms"
        ));
    }
    Ok(())
}

macro_rules! tumbling {
    ($(#[$doc:meta])* $name:ident, $event_time:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name {
            size_ms: i64,
            offset_ms: i64,
        }

        impl $name {
            pub fn of(size: Duration) -> Self {
                Self { size_ms: duration_ms(size), offset_ms: 0 }
            }

            /// Windows shifted by `offset_ms` (may be negative, e.g. for time zones).
            pub fn with_offset(size: Duration, offset_ms: i64) -> Self {
                Self { size_ms: duration_ms(size), offset_ms }
            }
        }

        impl WindowAssigner for $name {
            fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow> {
                let start = window_start(timestamp, self.offset_ms, self.size_ms);
                vec![TimeWindow::new(start, start.saturating_add(self.size_ms))]
            }
            fn is_event_time(&self) -> bool {
                $event_time
            }
            fn validate(&self) -> Result<(), String> {
                validate_size_offset(stringify!($name), self.size_ms, self.offset_ms)
            }
        }
    };
}

tumbling!(
    /// Fixed-size, non-overlapping event-time windows.
    TumblingEventTimeWindows,
    true
);
tumbling!(
    /// Fixed-size, non-overlapping processing-time windows.
    TumblingProcessingTimeWindows,
    false
);

macro_rules! sliding {
    ($(#[$doc:meta])* $name:ident, $event_time:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name {
            size_ms: i64,
            slide_ms: i64,
            offset_ms: i64,
        }

        impl $name {
            pub fn of(size: Duration, slide: Duration) -> Self {
                Self { size_ms: duration_ms(size), slide_ms: duration_ms(slide), offset_ms: 0 }
            }

            pub fn with_offset(size: Duration, slide: Duration, offset_ms: i64) -> Self {
                Self { size_ms: duration_ms(size), slide_ms: duration_ms(slide), offset_ms }
            }
        }

        impl WindowAssigner for $name {
            fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow> {
                let last_start = window_start(timestamp, self.offset_ms, self.slide_ms);
                let mut windows = Vec::with_capacity((self.size_ms / self.slide_ms + 1) as usize);
                let mut start = last_start;
                // Flink's loop: every window [start, start + size) that contains timestamp.
                while start > timestamp.saturating_sub(self.size_ms) {
                    windows.push(TimeWindow::new(start, start.saturating_add(self.size_ms)));
                    start -= self.slide_ms;
                }
                windows
            }
            fn is_event_time(&self) -> bool {
                $event_time
            }
            fn validate(&self) -> Result<(), String> {
                validate_size_offset(stringify!($name), self.slide_ms, self.offset_ms)?;
                if self.size_ms <= 0 {
                    return Err(format!("{}: size must be positive", stringify!($name)));
                }
                Ok(())
            }
        }
    };
}

sliding!(
    /// Fixed-size event-time windows starting every `slide`; overlapping when
    /// `slide < size`.
    SlidingEventTimeWindows,
    true
);
sliding!(
    /// Fixed-size processing-time windows starting every `slide`.
    SlidingProcessingTimeWindows,
    false
);

/// Event-time session windows: activity separated by gaps of at least `gap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTimeSessionWindows {
    gap_ms: i64,
}

impl EventTimeSessionWindows {
    pub fn with_gap(gap: Duration) -> Self {
        Self {
            gap_ms: duration_ms(gap),
        }
    }
}

impl WindowAssigner for EventTimeSessionWindows {
    fn assign_windows(&self, timestamp: i64) -> Vec<TimeWindow> {
        vec![TimeWindow::new(
            timestamp,
            timestamp.saturating_add(self.gap_ms),
        )]
    }
    fn is_event_time(&self) -> bool {
        true
    }
    fn is_merging(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<(), String> {
        if self.gap_ms <= 0 {
            return Err(format!(
                "EventTimeSessionWindows: gap must be positive, got {} ms",
                self.gap_ms
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn assigners_place_elements_as_flink_does() {
        let tumbling = TumblingEventTimeWindows::of(Duration::from_millis(10));
        let shifted = TumblingEventTimeWindows::with_offset(Duration::from_millis(10), 3);
        let sliding =
            SlidingEventTimeWindows::of(Duration::from_millis(10), Duration::from_millis(5));
        let sliding_uneven =
            SlidingEventTimeWindows::of(Duration::from_millis(10), Duration::from_millis(3));
        let session = EventTimeSessionWindows::with_gap(Duration::from_millis(4));
        let w = TimeWindow::new;
        let cases: Vec<(&str, &dyn WindowAssigner, i64, Vec<TimeWindow>)> = vec![
            ("tumbling 0", &tumbling, 0, vec![w(0, 10)]),
            ("tumbling 9", &tumbling, 9, vec![w(0, 10)]),
            ("tumbling 10", &tumbling, 10, vec![w(10, 20)]),
            ("tumbling -1", &tumbling, -1, vec![w(-10, 0)]),
            ("tumbling -10", &tumbling, -10, vec![w(-10, 0)]),
            ("tumbling -11", &tumbling, -11, vec![w(-20, -10)]),
            ("offset 2", &shifted, 2, vec![w(-7, 3)]),
            ("offset 3", &shifted, 3, vec![w(3, 13)]),
            ("offset -8", &shifted, -8, vec![w(-17, -7)]),
            ("sliding 7", &sliding, 7, vec![w(5, 15), w(0, 10)]),
            ("sliding 5", &sliding, 5, vec![w(5, 15), w(0, 10)]),
            ("sliding -1", &sliding, -1, vec![w(-5, 5), w(-10, 0)]),
            (
                "sliding uneven 10",
                &sliding_uneven,
                10,
                vec![w(9, 19), w(6, 16), w(3, 13)],
            ),
            ("session", &session, -2, vec![w(-2, 2)]),
        ];
        for (name, assigner, timestamp, expected) in cases {
            assert_eq!(assigner.assign_windows(timestamp), expected, "{name}");
        }
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        assert!(
            TumblingEventTimeWindows::of(Duration::ZERO)
                .validate()
                .is_err()
        );
        assert!(
            TumblingEventTimeWindows::with_offset(Duration::from_millis(10), 10)
                .validate()
                .is_err()
        );
        assert!(
            TumblingEventTimeWindows::with_offset(Duration::from_millis(10), -9)
                .validate()
                .is_ok()
        );
        assert!(
            SlidingEventTimeWindows::of(Duration::from_millis(10), Duration::ZERO)
                .validate()
                .is_err()
        );
        assert!(
            EventTimeSessionWindows::with_gap(Duration::ZERO)
                .validate()
                .is_err()
        );
    }

    #[test]
    fn sessions_intersect_when_they_touch() {
        let a = TimeWindow::new(0, 10);
        assert!(a.intersects(&TimeWindow::new(10, 20)));
        assert!(a.intersects(&TimeWindow::new(-5, 0)));
        assert!(!a.intersects(&TimeWindow::new(11, 20)));
        assert_eq!(a.cover(&TimeWindow::new(5, 30)), TimeWindow::new(0, 30));
    }

    proptest! {
        /// The window a tumbling assigner picks is the one a naive search finds: the unique
        /// `[offset + k·size, offset + (k+1)·size)` containing the timestamp.
        #[test]
        fn tumbling_assignment_matches_naive(
            timestamp in -1_000_000_000_000_i64..1_000_000_000_000,
            size in 1_i64..10_000_000,
            offset_fraction in -0.999_f64..0.999,
        ) {
            let offset = (size as f64 * offset_fraction) as i64;
            let assigner = TumblingEventTimeWindows::with_offset(Duration::from_millis(size as u64), offset);
            prop_assert!(assigner.validate().is_ok());
            let windows = assigner.assign_windows(timestamp);
            // Naive: floor division in i128 with explicit correction for negatives.
            let shifted = i128::from(timestamp) - i128::from(offset);
            let mut k = shifted / i128::from(size);
            if k * i128::from(size) > shifted {
                k -= 1;
            }
            let start = (k * i128::from(size) + i128::from(offset)) as i64;
            prop_assert_eq!(windows, vec![TimeWindow::new(start, start + size)]);
            prop_assert!(start <= timestamp && timestamp < start + size);
        }

        #[test]
        fn sliding_windows_all_contain_the_element(
            timestamp in -1_000_000_i64..1_000_000,
            slide in 1_i64..100,
            slides_per_window in 1_i64..6,
        ) {
            let size = slide * slides_per_window;
            let assigner = SlidingEventTimeWindows::of(Duration::from_millis(size as u64), Duration::from_millis(slide as u64));
            let windows = assigner.assign_windows(timestamp);
            prop_assert_eq!(windows.len() as i64, slides_per_window);
            for window in windows {
                prop_assert!(window.start <= timestamp && timestamp < window.end);
                prop_assert_eq!(window.start.rem_euclid(slide), 0);
            }
        }
    }
}
