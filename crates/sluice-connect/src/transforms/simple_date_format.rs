//! Java's `SimpleDateFormat` for formatting instants in UTC (as `TimestampRouter` and
//! `TimestampConverter` configure it), in the proleptic Gregorian calendar with English
//! names.
//!
//! Letters: `G y M L d D E u a H k K h m s S z Z X`. Java's week-based letters (`Y w W
//! F`) are refused rather than guessed: they depend on a locale's week rules. Text in
//! single quotes is literal, `''` is a quote; other characters are literal. Java
//! switches to the Julian calendar before 1582-10-15; this does not.
//!
//! Parsing is lenient as Java's is: a number takes as many digits as follow unless the
//! next field is also a number (then exactly the pattern's width), out-of-range fields
//! roll over (month 13 is January of the next year), text after the pattern is
//! ignored; a two-digit `yy` year falls in the 100 years from 80 years ago.

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

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    Field { letter: char, count: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleDateFormat {
    pattern: String,
    tokens: Vec<Token>,
}

/// Fields read by [`SimpleDateFormat::parse`].
#[derive(Default)]
struct Parsed {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    hour_of_day: Option<i64>,
    hour_of_half_day: Option<i64>,
    pm: Option<bool>,
    minute: i64,
    second: i64,
    millisecond: i64,
    offset_minutes: i64,
    before_christ: bool,
}

fn is_numeric(letter: char, count: usize) -> bool {
    match letter {
        'y' | 'd' | 'D' | 'u' | 'H' | 'k' | 'K' | 'h' | 'm' | 's' | 'S' => true,
        'M' | 'L' => count < 3,
        _ => false,
    }
}

/// The first of `names` (full, then three-letter, any case) that `text` starts with.
fn match_name(text: &[char], names: &[&str]) -> Option<(usize, usize)> {
    for (index, name) in names.iter().enumerate() {
        for candidate in [*name, &name[..3]] {
            let length = candidate.chars().count();
            if text.len() >= length
                && text[..length]
                    .iter()
                    .zip(candidate.chars())
                    .all(|(a, b)| a.eq_ignore_ascii_case(&b))
            {
                return Some((index, length));
            }
        }
    }
    None
}

/// A zone: `Z`, `UTC`/`GMT` with an optional offset, or `+hh`, `+hhmm`, `+hh:mm`.
fn parse_zone(text: &[char]) -> Option<(i64, usize)> {
    let starts = |prefix: &str| {
        text.len() >= prefix.len() && text.iter().zip(prefix.chars()).all(|(a, b)| *a == b)
    };
    let mut used = 0;
    if starts("UTC") || starts("GMT") {
        used = 3;
    } else if starts("Z") {
        return Some((0, 1));
    }
    let rest = &text[used..];
    let sign = match rest.first() {
        Some('+') => 1,
        Some('-') => -1,
        _ => return (used > 0).then_some((0, used)),
    };
    let digits = |from: usize, count: usize| -> Option<i64> {
        let slice = rest.get(from..from + count)?;
        slice
            .iter()
            .try_fold(0i64, |acc, c| Some(acc * 10 + i64::from(c.to_digit(10)?)))
    };
    let hours = digits(1, 2)?;
    let (minutes, length) = if rest.get(3) == Some(&':') {
        (digits(4, 2)?, 6)
    } else if let Some(minutes) = digits(3, 2) {
        (minutes, 5)
    } else {
        (0, 3)
    };
    Some((sign * (hours * 60 + minutes), used + length))
}

/// A UTC instant split into calendar fields.
struct Fields {
    year: i64,
    month: u32,
    day: u32,
    day_of_year: u32,
    /// 1 = Monday ... 7 = Sunday.
    weekday: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millisecond: u32,
}

impl SimpleDateFormat {
    /// The pattern, or Java's reason for refusing it.
    pub fn new(pattern: &str) -> Result<SimpleDateFormat, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut index = 0;
        while index < chars.len() {
            let c = chars[index];
            if c == '\'' {
                if chars.get(index + 1) == Some(&'\'') {
                    literal.push('\'');
                    index += 2;
                    continue;
                }
                index += 1;
                loop {
                    match chars.get(index) {
                        None => return Err("Unterminated quote".into()),
                        Some('\'') if chars.get(index + 1) == Some(&'\'') => {
                            literal.push('\'');
                            index += 2;
                        }
                        Some('\'') => {
                            index += 1;
                            break;
                        }
                        Some(&other) => {
                            literal.push(other);
                            index += 1;
                        }
                    }
                }
                continue;
            }
            if !c.is_ascii_alphabetic() {
                literal.push(c);
                index += 1;
                continue;
            }
            if !"GyMLdDEuaHkKhmsSzZX".contains(c) {
                return Err(if "YwWF".contains(c) {
                    format!("Pattern letter '{c}' (week-based) is not supported")
                } else {
                    format!("Illegal pattern character '{c}'")
                });
            }
            let start = index;
            while index < chars.len() && chars[index] == c {
                index += 1;
            }
            if !literal.is_empty() {
                tokens.push(Token::Literal(std::mem::take(&mut literal)));
            }
            tokens.push(Token::Field {
                letter: c,
                count: index - start,
            });
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal));
        }
        Ok(SimpleDateFormat {
            pattern: pattern.to_string(),
            tokens,
        })
    }

    /// The pattern as given (`toPattern`), for error messages.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Epoch milliseconds of `text` read in UTC (unless it names a zone), or None where
    /// it does not match the pattern.
    pub fn parse(&self, text: &str) -> Option<i64> {
        let chars: Vec<char> = text.chars().collect();
        let mut position = 0;
        let mut parsed = Parsed::default();
        for (index, token) in self.tokens.iter().enumerate() {
            let rest = &chars[position..];
            match token {
                Token::Literal(literal) => {
                    let length = literal.chars().count();
                    if rest.len() < length
                        || !rest.iter().zip(literal.chars()).all(|(a, b)| *a == b)
                    {
                        return None;
                    }
                    position += length;
                }
                Token::Field { letter, count } if is_numeric(*letter, *count) => {
                    let abutting = matches!(
                        self.tokens.get(index + 1),
                        Some(Token::Field { letter, count }) if is_numeric(*letter, *count)
                    );
                    let available = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                    let width = if abutting { *count } else { available };
                    if width == 0 || available < width || width > 18 {
                        return None;
                    }
                    let number: i64 = rest[..width].iter().collect::<String>().parse().ok()?;
                    position += width;
                    match letter {
                        'y' if *count <= 2 && width == 2 => {
                            let start = century_start_year();
                            let mut year = start / 100 * 100 + number;
                            if year < start {
                                year += 100;
                            }
                            parsed.year = Some(year);
                        }
                        'y' => parsed.year = Some(number),
                        'M' | 'L' => parsed.month = Some(number),
                        'd' => parsed.day = Some(number),
                        'D' => parsed.day_of_year = Some(number),
                        'H' => parsed.hour_of_day = Some(number),
                        'k' => parsed.hour_of_day = Some(if number == 24 { 0 } else { number }),
                        'K' => parsed.hour_of_half_day = Some(number),
                        'h' => {
                            parsed.hour_of_half_day = Some(if number == 12 { 0 } else { number })
                        }
                        'm' => parsed.minute = number,
                        's' => parsed.second = number,
                        'S' => parsed.millisecond = number,
                        _ => {}
                    }
                }
                Token::Field { letter, .. } => match letter {
                    'M' | 'L' => {
                        let (month, length) = match_name(rest, &MONTHS)?;
                        parsed.month = Some(month as i64 + 1);
                        position += length;
                    }
                    'E' => position += match_name(rest, &DAYS)?.1,
                    'a' => {
                        let two: String = rest.iter().take(2).collect();
                        parsed.pm = Some(match two.to_ascii_uppercase().as_str() {
                            "AM" => false,
                            "PM" => true,
                            _ => return None,
                        });
                        position += 2;
                    }
                    'G' => {
                        let two: String = rest.iter().take(2).collect();
                        match two.to_ascii_uppercase().as_str() {
                            "AD" => {}
                            "BC" => parsed.before_christ = true,
                            _ => return None,
                        }
                        position += 2;
                    }
                    'z' | 'Z' | 'X' => {
                        let (offset, length) = parse_zone(rest)?;
                        parsed.offset_minutes = offset;
                        position += length;
                    }
                    _ => return None,
                },
            }
        }
        Some(parsed.epoch_millis())
    }

    /// Epoch milliseconds as this pattern prints them in UTC.
    pub fn format(&self, epoch_millis: i64) -> String {
        let fields = Fields::of(epoch_millis);
        let mut out = String::new();
        for token in &self.tokens {
            match token {
                Token::Literal(text) => out.push_str(text),
                Token::Field { letter, count } => fields.append(&mut out, *letter, *count),
            }
        }
        out
    }
}

fn padded(out: &mut String, value: i64, width: usize) {
    out.push_str(&format!("{value:0width$}"));
}

fn text(out: &mut String, name: &str, count: usize) {
    if count >= 4 {
        out.push_str(name);
    } else {
        out.push_str(&name[..3]);
    }
}

impl Fields {
    fn of(epoch_millis: i64) -> Fields {
        let days = epoch_millis.div_euclid(86_400_000);
        let millis_of_day = epoch_millis.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        let day_of_year = (days - days_from_civil(year, 1, 1) + 1) as u32;
        // 1970-01-01 was a Thursday (4).
        let weekday = ((days + 3).rem_euclid(7) + 1) as u32;
        Fields {
            year,
            month,
            day,
            day_of_year,
            weekday,
            hour: (millis_of_day / 3_600_000) as u32,
            minute: (millis_of_day / 60_000 % 60) as u32,
            second: (millis_of_day / 1000 % 60) as u32,
            millisecond: (millis_of_day % 1000) as u32,
        }
    }

    fn append(&self, out: &mut String, letter: char, count: usize) {
        match letter {
            'G' => out.push_str(if self.year > 0 { "AD" } else { "BC" }),
            'y' => {
                // Years of an era count from 1: 1 BC is year 0 of the proleptic calendar.
                let year = if self.year > 0 {
                    self.year
                } else {
                    1 - self.year
                };
                if count == 2 {
                    padded(out, year % 100, 2);
                } else {
                    padded(out, year, count);
                }
            }
            'M' | 'L' => {
                if count >= 3 {
                    text(out, MONTHS[self.month as usize - 1], count);
                } else {
                    padded(out, i64::from(self.month), count);
                }
            }
            'd' => padded(out, i64::from(self.day), count),
            'D' => padded(out, i64::from(self.day_of_year), count),
            'E' => text(out, DAYS[self.weekday as usize - 1], count),
            'u' => padded(out, i64::from(self.weekday), count),
            'a' => out.push_str(if self.hour < 12 { "AM" } else { "PM" }),
            'H' => padded(out, i64::from(self.hour), count),
            'k' => padded(
                out,
                i64::from(if self.hour == 0 { 24 } else { self.hour }),
                count,
            ),
            'K' => padded(out, i64::from(self.hour % 12), count),
            'h' => {
                let hour = self.hour % 12;
                padded(out, i64::from(if hour == 0 { 12 } else { hour }), count);
            }
            'm' => padded(out, i64::from(self.minute), count),
            's' => padded(out, i64::from(self.second), count),
            'S' => padded(out, i64::from(self.millisecond), count),
            'z' => out.push_str(if count >= 4 {
                "Coordinated Universal Time"
            } else {
                "UTC"
            }),
            'Z' => out.push_str("+0000"),
            'X' => out.push('Z'),
            _ => unreachable!("letters are checked when the pattern is parsed"),
        }
    }
}

impl Parsed {
    fn epoch_millis(&self) -> i64 {
        let mut year = self.year.unwrap_or(1970);
        if self.before_christ {
            year = 1 - year;
        }
        let days = match (self.month, self.day, self.day_of_year) {
            (None, None, Some(day_of_year)) => days_from_civil(year, 1, 1) + day_of_year - 1,
            (month, day, _) => {
                // Lenient: months and days past their range roll over.
                let month_index = month.unwrap_or(1) - 1;
                let year = year + month_index.div_euclid(12);
                let month = (month_index.rem_euclid(12) + 1) as u32;
                days_from_civil(year, month, 1) + day.unwrap_or(1) - 1
            }
        };
        let hour = match (self.hour_of_day, self.hour_of_half_day) {
            (Some(hour), _) => hour,
            (None, Some(hour)) => hour + if self.pm == Some(true) { 12 } else { 0 },
            (None, None) => {
                if self.pm == Some(true) {
                    12
                } else {
                    0
                }
            }
        };
        days * 86_400_000
            + hour * 3_600_000
            + self.minute * 60_000
            + self.second * 1000
            + self.millisecond
            - self.offset_minutes * 60_000
    }
}

/// The first year of the 100 in which a two-digit year is read: 80 years ago.
fn century_start_year() -> i64 {
    let now_millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    civil_from_days(now_millis.div_euclid(86_400_000)).0 - 80
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01, proleptic Gregorian.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_print_as_simple_date_format_prints_them_in_utc() {
        // 2017-01-03T06:30:01.864Z, a Tuesday (Kafka's `TimestampRouterTest` instant).
        let instant = 1_483_425_001_864;
        let cases = [
            ("yyyyMMdd", "20170103"),
            ("yyyy-MM-dd HH:mm:ss.SSS", "2017-01-03 06:30:01.864"),
            ("yy/M/d H:m:s.S", "17/1/3 6:30:1.864"),
            ("MMM MMMM EEE EEEE", "Jan January Tue Tuesday"),
            ("D u", "3 2"),
            ("hh:mm a, K k", "06:30 AM, 6 6"),
            ("yyyy-MM-dd'T'HH:mm:ss.SSSX", "2017-01-03T06:30:01.864Z"),
            ("'week''s' z Z G", "week's UTC +0000 AD"),
            ("''yyyy''", "'2017'"),
            ("SSSS", "0864"),
        ];
        for (pattern, expected) in cases {
            assert_eq!(
                SimpleDateFormat::new(pattern).unwrap().format(instant),
                expected,
                "{pattern}"
            );
        }
        let epoch = SimpleDateFormat::new("yyyy-MM-dd HH:mm:ss.SSS").unwrap();
        assert_eq!(epoch.format(0), "1970-01-01 00:00:00.000");
        assert_eq!(epoch.format(-1), "1969-12-31 23:59:59.999");
        assert_eq!(epoch.format(951_782_400_000), "2000-02-29 00:00:00.000");
        let noon = SimpleDateFormat::new("h a k").unwrap();
        assert_eq!(noon.format(12 * 3_600_000), "12 PM 12");
        assert_eq!(noon.format(0), "12 AM 24");
    }

    #[test]
    fn text_parses_leniently_as_simple_date_format_parses_it() {
        let cases = [
            (
                "yyyy-MM-dd HH:mm:ss.SSS",
                "2017-01-03 06:30:01.864",
                Some(1_483_425_001_864),
            ),
            ("yyyyMMdd", "20170103", Some(1_483_401_600_000)),
            ("yyyy-MM-dd", "2017-1-3", Some(1_483_401_600_000)),
            ("yyyy-MM-dd", "2016-13-03", Some(1_483_401_600_000)),
            ("yyyy-MM-dd", "2017-01-03 and more", Some(1_483_401_600_000)),
            ("dd MMM yyyy", "03 jan 2017", Some(1_483_401_600_000)),
            (
                "EEE, d MMMM yyyy",
                "Tue, 3 January 2017",
                Some(1_483_401_600_000),
            ),
            (
                "yyyy-MM-dd'T'HH:mm:ssX",
                "2017-01-03T07:30:01+01:00",
                Some(1_483_425_001_000),
            ),
            (
                "yyyy-MM-dd HH:mm Z",
                "2017-01-03 06:30 -0100",
                Some(1_483_428_600_000),
            ),
            ("h:mm a", "12:30 AM", Some(1_800_000)),
            ("h:mm a", "1:30 pm", Some(48_600_000)),
            ("yyyy-MM-dd", "2017/01/03", None),
            ("yyyy-MM-dd", "", None),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                SimpleDateFormat::new(pattern).unwrap().parse(text),
                expected,
                "{pattern} {text}"
            );
        }
        let format = SimpleDateFormat::new("yyyy-MM-dd'T'HH 'o''clock'").unwrap();
        assert_eq!(format.pattern(), "yyyy-MM-dd'T'HH 'o''clock'");
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert_eq!(
            SimpleDateFormat::new("yyyy-q").unwrap_err(),
            "Illegal pattern character 'q'"
        );
        assert_eq!(
            SimpleDateFormat::new("'open").unwrap_err(),
            "Unterminated quote"
        );
        assert!(SimpleDateFormat::new("YYYY").is_err());
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-719_468, -1, 0, 1, 10_957, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
