//! Go's `time.Time` as templates see it: `.Start.Format "Jan 02, 2006 15:04:05 UTC"`,
//! `{{.Start}}` (Go's `Time.String`), `formattimestamp` and the RFC 3339 form
//! `jsonencoder` writes.
//!
//! Always UTC. Burrow formats in the process's local zone, which in the containers it
//! usually runs in is UTC too; a monitor whose alerts change with the host's zone would
//! be a surprise, so Sluice does not copy that. Go's monotonic-clock suffix (`m=+1.5`)
//! that `Time.String` prints for a `time.Now()` value is not reproduced either.

use std::time::{SystemTime, UNIX_EPOCH};

/// An instant: seconds since the Unix epoch (negative before it) and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GoTime {
    seconds: i64,
    nanos: u32,
}

/// A date and time of day, in UTC.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    /// 0 is Sunday.
    weekday: u32,
    /// 1 is January 1st.
    year_day: u32,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl GoTime {
    /// Go's zero `time.Time`, January 1 of year 1: what `.Start` is outside an incident.
    pub(crate) const ZERO: GoTime = GoTime {
        seconds: -62_135_596_800,
        nanos: 0,
    };

    pub(crate) fn from_system_time(time: SystemTime) -> GoTime {
        match time.duration_since(UNIX_EPOCH) {
            Ok(since) => GoTime {
                seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
                nanos: since.subsec_nanos(),
            },
            Err(before) => {
                let before = before.duration();
                let seconds = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                if before.subsec_nanos() == 0 {
                    GoTime {
                        seconds: -seconds,
                        nanos: 0,
                    }
                } else {
                    GoTime {
                        seconds: -seconds - 1,
                        nanos: 1_000_000_000 - before.subsec_nanos(),
                    }
                }
            }
        }
    }

    /// Burrow's offset timestamps: milliseconds since the epoch.
    pub(crate) fn from_unix_millis(millis: i64) -> GoTime {
        GoTime {
            seconds: millis.div_euclid(1000),
            nanos: (millis.rem_euclid(1000) * 1_000_000) as u32,
        }
    }

    pub(crate) fn is_zero(self) -> bool {
        self == GoTime::ZERO
    }

    pub(crate) fn unix_seconds(self) -> i64 {
        self.seconds
    }

    pub(crate) fn unix_millis(self) -> i64 {
        self.seconds
            .saturating_mul(1000)
            .saturating_add(i64::from(self.nanos / 1_000_000))
    }

    pub(crate) fn unix_nanos(self) -> i64 {
        self.seconds
            .saturating_mul(1_000_000_000)
            .saturating_add(i64::from(self.nanos))
    }

    pub(crate) fn year(self) -> i64 {
        self.civil().year
    }

    pub(crate) fn year_day(self) -> i64 {
        i64::from(self.civil().year_day)
    }

    pub(crate) fn day(self) -> i64 {
        i64::from(self.civil().day)
    }

    pub(crate) fn hour(self) -> i64 {
        i64::from(self.civil().hour)
    }

    pub(crate) fn minute(self) -> i64 {
        i64::from(self.civil().minute)
    }

    pub(crate) fn second(self) -> i64 {
        i64::from(self.civil().second)
    }

    pub(crate) fn nanosecond(self) -> i64 {
        i64::from(self.nanos)
    }

    fn civil(self) -> Civil {
        let days = self.seconds.div_euclid(86_400);
        let second_of_day = self.seconds.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: second_of_day / 3600,
            minute: second_of_day / 60 % 60,
            second: second_of_day % 60,
            nanos: self.nanos,
            weekday: (days + 4).rem_euclid(7) as u32,
            year_day: (days - days_from_civil(year, 1, 1) + 1) as u32,
        }
    }

    /// Go's `Time.String`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    pub(crate) fn go_string(self) -> String {
        self.format("2006-01-02 15:04:05.999999999 -0700 MST")
    }

    /// RFC 3339 with nanoseconds, trailing zeros trimmed: how Go's `encoding/json` writes
    /// a time. Go refuses years outside 0..=9999 there, and so does this.
    pub(crate) fn rfc3339_nanos(self) -> Option<String> {
        let year = self.civil().year;
        if !(0..=9999).contains(&year) {
            return None;
        }
        Some(self.format("2006-01-02T15:04:05.999999999Z07:00"))
    }

    /// Go's `Time.Format` with a reference-time layout (`Mon Jan 2 15:04:05 MST 2006`).
    pub(crate) fn format(self, layout: &str) -> String {
        let civil = self.civil();
        let mut out = String::with_capacity(layout.len() + 10);
        let mut rest = layout;
        while !rest.is_empty() {
            let (literal, chunk, after) = next_chunk(rest);
            out.push_str(literal);
            match chunk {
                Some(chunk) => write_chunk(&mut out, chunk, &civil),
                None => break,
            }
            rest = after;
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Chunk {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm {
        upper: bool,
    },
    Zone,
    /// `-0700`-style offsets: seconds shown, colons, and whether UTC prints as `Z`.
    Offset {
        colons: bool,
        hours_only: bool,
        seconds: bool,
        z: bool,
    },
    Fraction {
        digits: usize,
        trim: bool,
        separator: char,
    },
}

fn starts_with_lower(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|character| character.is_ascii_lowercase())
}

/// Splits `layout` at its first layout element: the literal text before it, the element,
/// and the text after it (Go's `nextStdChunk`).
fn next_chunk(layout: &str) -> (&str, Option<Chunk>, &str) {
    let bytes = layout.as_bytes();
    for index in 0..bytes.len() {
        let rest = &layout[index..];
        let found: Option<(Chunk, usize)> = match bytes[index] {
            b'J' if rest.starts_with("January") => Some((Chunk::LongMonth, 7)),
            b'J' if rest.starts_with("Jan") && !starts_with_lower(&rest[3..]) => {
                Some((Chunk::Month, 3))
            }
            b'M' if rest.starts_with("Monday") => Some((Chunk::LongWeekDay, 6)),
            b'M' if rest.starts_with("Mon") && !starts_with_lower(&rest[3..]) => {
                Some((Chunk::WeekDay, 3))
            }
            b'M' if rest.starts_with("MST") => Some((Chunk::Zone, 3)),
            b'0' if rest.starts_with("002") => Some((Chunk::ZeroYearDay, 3)),
            b'0' => match bytes.get(index + 1) {
                Some(b'1') => Some((Chunk::ZeroMonth, 2)),
                Some(b'2') => Some((Chunk::ZeroDay, 2)),
                Some(b'3') => Some((Chunk::ZeroHour12, 2)),
                Some(b'4') => Some((Chunk::ZeroMinute, 2)),
                Some(b'5') => Some((Chunk::ZeroSecond, 2)),
                Some(b'6') => Some((Chunk::Year, 2)),
                _ => None,
            },
            b'1' if rest.starts_with("15") => Some((Chunk::Hour, 2)),
            b'1' => Some((Chunk::NumMonth, 1)),
            b'2' if rest.starts_with("2006") => Some((Chunk::LongYear, 4)),
            b'2' => Some((Chunk::Day, 1)),
            b'_' if rest.starts_with("_2006") => {
                // Go: a literal underscore, then the year.
                return (
                    &layout[..index + 1],
                    Some(Chunk::LongYear),
                    &layout[index + 5..],
                );
            }
            b'_' if rest.starts_with("__2") => Some((Chunk::UnderYearDay, 3)),
            b'_' if rest.starts_with("_2") => Some((Chunk::UnderDay, 2)),
            b'3' => Some((Chunk::Hour12, 1)),
            b'4' => Some((Chunk::Minute, 1)),
            b'5' => Some((Chunk::Second, 1)),
            b'P' if rest.starts_with("PM") => Some((Chunk::Pm { upper: true }, 2)),
            b'p' if rest.starts_with("pm") => Some((Chunk::Pm { upper: false }, 2)),
            b'-' | b'Z' => {
                let z = bytes[index] == b'Z';
                let body = &rest[1..];
                let offset = |colons, hours_only, seconds| Chunk::Offset {
                    colons,
                    hours_only,
                    seconds,
                    z,
                };
                if body.starts_with("070000") {
                    Some((offset(false, false, true), 7))
                } else if body.starts_with("07:00:00") {
                    Some((offset(true, false, true), 9))
                } else if body.starts_with("0700") {
                    Some((offset(false, false, false), 5))
                } else if body.starts_with("07:00") {
                    Some((offset(true, false, false), 6))
                } else if body.starts_with("07") {
                    Some((offset(false, true, false), 3))
                } else {
                    None
                }
            }
            separator @ (b'.' | b',') => match bytes.get(index + 1) {
                Some(&digit @ (b'0' | b'9')) => {
                    let run = rest[1..].bytes().take_while(|&byte| byte == digit).count();
                    let followed_by_digit = rest
                        .as_bytes()
                        .get(1 + run)
                        .is_some_and(|byte| byte.is_ascii_digit());
                    (!followed_by_digit).then_some((
                        Chunk::Fraction {
                            digits: run,
                            trim: digit == b'9',
                            separator: separator as char,
                        },
                        1 + run,
                    ))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some((chunk, length)) = found {
            return (&layout[..index], Some(chunk), &layout[index + length..]);
        }
    }
    (layout, None, "")
}

fn write_chunk(out: &mut String, chunk: Chunk, civil: &Civil) {
    use std::fmt::Write;
    let month_name = MONTHS[(civil.month - 1) as usize];
    let weekday_name = WEEKDAYS[civil.weekday as usize];
    let hour12 = match civil.hour % 12 {
        0 => 12,
        hour => hour,
    };
    // Writing to a String cannot fail.
    let _ = match chunk {
        Chunk::LongMonth => write!(out, "{month_name}"),
        Chunk::Month => write!(out, "{}", &month_name[..3]),
        Chunk::NumMonth => write!(out, "{}", civil.month),
        Chunk::ZeroMonth => write!(out, "{:02}", civil.month),
        Chunk::LongWeekDay => write!(out, "{weekday_name}"),
        Chunk::WeekDay => write!(out, "{}", &weekday_name[..3]),
        Chunk::Day => write!(out, "{}", civil.day),
        Chunk::UnderDay => write!(out, "{:>2}", civil.day),
        Chunk::ZeroDay => write!(out, "{:02}", civil.day),
        Chunk::UnderYearDay => write!(out, "{:>3}", civil.year_day),
        Chunk::ZeroYearDay => write!(out, "{:03}", civil.year_day),
        Chunk::Hour => write!(out, "{:02}", civil.hour),
        Chunk::Hour12 => write!(out, "{hour12}"),
        Chunk::ZeroHour12 => write!(out, "{hour12:02}"),
        Chunk::Minute => write!(out, "{}", civil.minute),
        Chunk::ZeroMinute => write!(out, "{:02}", civil.minute),
        Chunk::Second => write!(out, "{}", civil.second),
        Chunk::ZeroSecond => write!(out, "{:02}", civil.second),
        Chunk::LongYear => {
            if civil.year < 0 {
                write!(out, "-{:04}", -civil.year)
            } else {
                write!(out, "{:04}", civil.year)
            }
        }
        Chunk::Year => write!(out, "{:02}", civil.year.rem_euclid(100)),
        Chunk::Pm { upper } => {
            let text = match (civil.hour >= 12, upper) {
                (true, true) => "PM",
                (false, true) => "AM",
                (true, false) => "pm",
                (false, false) => "am",
            };
            write!(out, "{text}")
        }
        Chunk::Zone => write!(out, "UTC"),
        Chunk::Offset {
            colons,
            hours_only,
            seconds,
            z,
        } => {
            if z {
                write!(out, "Z")
            } else if hours_only {
                write!(out, "+00")
            } else {
                let separator = if colons { ":" } else { "" };
                let tail = if seconds {
                    format!("{separator}00")
                } else {
                    String::new()
                };
                write!(out, "+00{separator}00{tail}")
            }
        }
        Chunk::Fraction {
            digits,
            trim,
            separator,
        } => {
            let all = format!("{:09}", civil.nanos);
            let mut shown = &all[..digits.min(9)];
            if trim {
                shown = shown.trim_end_matches('0');
            }
            if shown.is_empty() {
                Ok(())
            } else {
                write!(out, "{separator}{shown}")
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Burrow's coordinator tests' start time: 2012-11-01T22:08:41+00:00.
    fn burrows_start() -> GoTime {
        GoTime::from_system_time(UNIX_EPOCH + Duration::from_secs(1_351_807_721))
    }

    #[test]
    fn layouts_format_as_go_formats_them() {
        let start = burrows_start();
        let with_nanos = GoTime::from_system_time(
            UNIX_EPOCH + Duration::from_secs(1_351_807_721) + Duration::from_nanos(123_400_000),
        );
        let cases: &[(GoTime, &str, &str)] = &[
            (
                start,
                "Jan 02, 2006 15:04:05 UTC",
                "Nov 01, 2012 22:08:41 UTC",
            ),
            (start, "2006-01-02T15:04:05Z07:00", "2012-11-01T22:08:41Z"),
            (
                start,
                "Monday January _2 3:4:5 PM -0700 MST",
                "Thursday November  1 10:8:41 PM +0000 UTC",
            ),
            (
                start,
                "Mon Jan 2 03:04:05pm 06 002 __2 -07:00 -07",
                "Thu Nov 1 10:08:41pm 12 306 306 +00:00 +00",
            ),
            (start, "2006-01-02 15:04:05.000", "2012-11-01 22:08:41.000"),
            (start, "15:04:05.999", "22:08:41"),
            (with_nanos, "15:04:05.999999999", "22:08:41.1234"),
            (with_nanos, "15:04:05,000000", "22:08:41,123400"),
            (with_nanos, "Janet Monet", "Janet Monet"),
            (start, "_2006", "_2012"),
        ];
        for (time, layout, expected) in cases {
            assert_eq!(&time.format(layout), expected, "{layout}");
        }
    }

    #[test]
    fn strings_and_json_forms_match_go() {
        assert_eq!(burrows_start().go_string(), "2012-11-01 22:08:41 +0000 UTC");
        assert_eq!(GoTime::ZERO.go_string(), "0001-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            GoTime::from_unix_millis(1_351_807_721_250)
                .rfc3339_nanos()
                .as_deref(),
            Some("2012-11-01T22:08:41.25Z")
        );
        assert_eq!(
            GoTime::from_unix_millis(-1).go_string(),
            "1969-12-31 23:59:59.999 +0000 UTC"
        );
        let before_epoch = GoTime::from_system_time(UNIX_EPOCH - Duration::from_millis(1));
        assert_eq!(before_epoch, GoTime::from_unix_millis(-1));
        assert!(GoTime::ZERO.is_zero());
        assert_eq!(burrows_start().unix_millis(), 1_351_807_721_000);
    }

    #[test]
    fn the_calendar_round_trips_over_four_centuries() {
        let mut days = days_from_civil(1600, 1, 1);
        let end = days_from_civil(2400, 12, 31);
        while days <= end {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, day), days);
            days += 1;
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
    }
}
