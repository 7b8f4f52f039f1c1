//! Java's `BigDecimal` as far as the transforms need it: parsing a string as
//! `new BigDecimal(String)` does, narrowing as `longValue`/`doubleValue` do, and Connect's
//! `Decimal` encoding (the unscaled value as big-endian two's complement bytes, the scale
//! in the schema).

/// A decimal number: `sign × digits × 10^-scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JavaDecimal {
    negative: bool,
    /// Decimal digits, most significant first, no leading zeros (empty for zero).
    digits: Vec<u8>,
    scale: i64,
}

/// Exponents past this are refused, as `BigDecimal` refuses scales outside an `int`.
const EXPONENT_MAX: i64 = i32::MAX as i64;

impl JavaDecimal {
    /// `new BigDecimal(text)`: an optional sign, digits with an optional point, an
    /// optional exponent; no surrounding whitespace.
    pub fn parse(text: &str) -> Option<JavaDecimal> {
        let bytes = text.as_bytes();
        let mut index = 0;
        let mut negative = false;
        if let Some(&sign @ (b'-' | b'+')) = bytes.first() {
            negative = sign == b'-';
            index = 1;
        }
        let mut digits = Vec::new();
        let mut scale: i64 = 0;
        let mut seen_digit = false;
        let mut seen_point = false;
        while index < bytes.len() {
            match bytes[index] {
                b @ b'0'..=b'9' => {
                    seen_digit = true;
                    if !(digits.is_empty() && b == b'0') {
                        digits.push(b - b'0');
                    }
                    if seen_point {
                        scale += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                b'e' | b'E' => break,
                _ => return None,
            }
            index += 1;
        }
        if !seen_digit {
            return None;
        }
        if index < bytes.len() {
            let exponent: i64 = text[index + 1..].parse().ok()?;
            if !(-EXPONENT_MAX..=EXPONENT_MAX).contains(&exponent) {
                return None;
            }
            scale -= exponent;
        }
        Some(JavaDecimal {
            negative,
            digits,
            scale,
        })
    }

    /// The number an unscaled value and a scale stand for (Connect's `Decimal`).
    pub fn from_unscaled(unscaled: i128, scale: i32) -> JavaDecimal {
        let digits = unscaled
            .unsigned_abs()
            .to_string()
            .bytes()
            .map(|b| b - b'0')
            .collect::<Vec<u8>>();
        let digits = if digits == [0] { Vec::new() } else { digits };
        JavaDecimal {
            negative: unscaled < 0,
            digits,
            scale: i64::from(scale),
        }
    }

    /// `toString()`: plain notation, or scientific when the scale is negative or the
    /// number is below 10^-6.
    pub fn to_java_string(&self) -> String {
        let coefficient: String = if self.digits.is_empty() {
            "0".into()
        } else {
            self.digits.iter().map(|d| char::from(b'0' + d)).collect()
        };
        let sign = if self.negative && !self.digits.is_empty() {
            "-"
        } else {
            ""
        };
        let length = coefficient.len() as i64;
        let adjusted = -self.scale + (length - 1);
        if self.scale == 0 {
            return format!("{sign}{coefficient}");
        }
        if self.scale > 0 && adjusted >= -6 {
            let scale = self.scale as usize;
            return if coefficient.len() > scale {
                let (int, frac) = coefficient.split_at(coefficient.len() - scale);
                format!("{sign}{int}.{frac}")
            } else {
                format!(
                    "{sign}0.{}{coefficient}",
                    "0".repeat(scale - coefficient.len())
                )
            };
        }
        let (first, rest) = coefficient.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let exponent_sign = if adjusted >= 0 { "+" } else { "" };
        format!("{sign}{mantissa}E{exponent_sign}{adjusted}")
    }

    /// `scale()`: digits after the point (negative for a positive exponent).
    pub fn scale(&self) -> i64 {
        self.scale
    }

    /// `longValue()`: the integer part, truncated toward zero, in its low 64 bits.
    pub fn long_value(&self) -> i64 {
        let integer_digits = self.digits.len() as i64 - self.scale;
        if integer_digits <= 0 {
            return 0;
        }
        let mut value: u64 = 0;
        for &d in self.digits.iter().take(integer_digits as usize) {
            value = value.wrapping_mul(10).wrapping_add(u64::from(d));
        }
        // Trailing zeros of a negative scale: ten to the 64th is a multiple of 2^64, so
        // past 64 of them the low bits are all zero.
        let zeros = (integer_digits - self.digits.len() as i64).clamp(0, 64);
        for _ in 0..zeros {
            value = value.wrapping_mul(10);
        }
        let value = value as i64;
        if self.negative {
            value.wrapping_neg()
        } else {
            value
        }
    }

    /// `doubleValue()`, correctly rounded.
    pub fn double_value(&self) -> f64 {
        if self.digits.is_empty() {
            return if self.negative { -0.0 } else { 0.0 };
        }
        let digits: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let text = format!(
            "{}{digits}e{}",
            if self.negative { "-" } else { "" },
            -self.scale
        );
        text.parse().unwrap_or(f64::NAN)
    }

    /// The unscaled value at `scale`, if this number is exact at that scale and fits.
    pub fn unscaled_at(&self, scale: i32) -> Option<i128> {
        let shift = i64::from(scale) - self.scale;
        let mut digits = self.digits.clone();
        if shift >= 0 {
            if !digits.is_empty() {
                digits.extend(std::iter::repeat_n(0, usize::try_from(shift).ok()?));
            }
        } else {
            let drop = usize::try_from(-shift).ok()?;
            if drop > digits.len() {
                if digits.iter().any(|&d| d != 0) {
                    return None;
                }
                digits.clear();
            } else {
                let kept = digits.len() - drop;
                if digits[kept..].iter().any(|&d| d != 0) {
                    return None;
                }
                digits.truncate(kept);
            }
        }
        let mut value: i128 = 0;
        for d in digits {
            value = value.checked_mul(10)?.checked_add(i128::from(d))?;
        }
        Some(if self.negative { -value } else { value })
    }
}

/// Connect's `Decimal` bytes of an unscaled value (`BigInteger.toByteArray`): big-endian
/// two's complement, as few bytes as hold the sign.
pub(crate) fn unscaled_bytes(unscaled: i128) -> Vec<u8> {
    let bytes = unscaled.to_be_bytes();
    let mut start = 0;
    while start < bytes.len() - 1 {
        let (byte, next) = (bytes[start], bytes[start + 1]);
        let redundant = (byte == 0x00 && next & 0x80 == 0) || (byte == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// The unscaled value of Connect's `Decimal` bytes, if it fits in 128 bits.
pub(crate) fn unscaled_value(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0x00 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_parse_and_narrow_as_big_decimal_does() {
        let cases: &[(&str, i64, f64)] = &[
            ("123", 123, 123.0),
            ("-123.9", -123, -123.9),
            ("+0.5", 0, 0.5),
            ("1e3", 1000, 1000.0),
            ("1.5E-2", 0, 0.015),
            (".5", 0, 0.5),
            ("5.", 5, 5.0),
            ("18446744073709551617", 1, 18446744073709551617.0),
            ("1e100", 0, 1e100),
        ];
        for (text, long, double) in cases {
            let decimal = JavaDecimal::parse(text).unwrap();
            assert_eq!(decimal.long_value(), *long, "{text}");
            assert_eq!(decimal.double_value(), *double, "{text}");
        }
        for bad in ["", "foo", " 1", "1 ", "1.2.3", "e5", "-", "1e", "0x10", "."] {
            assert_eq!(JavaDecimal::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn decimals_print_as_big_decimal_to_string_does() {
        let cases: &[(i128, i32, &str)] = &[
            (1982, 0, "1982"),
            (123, 2, "1.23"),
            (-123, 5, "-0.00123"),
            (1, 7, "1E-7"),
            (12, 8, "1.2E-7"),
            (5, -3, "5E+3"),
            (0, 2, "0.00"),
            (0, 0, "0"),
            (-5, 0, "-5"),
        ];
        for (unscaled, scale, expected) in cases {
            assert_eq!(
                JavaDecimal::from_unscaled(*unscaled, *scale).to_java_string(),
                *expected
            );
        }
    }

    #[test]
    fn decimals_rescale_only_when_exact() {
        let at = |text: &str, scale| JavaDecimal::parse(text).unwrap().unscaled_at(scale);
        assert_eq!(at("123.0", 0), Some(123));
        assert_eq!(at("123", 2), Some(12300));
        assert_eq!(at("-1.25", 2), Some(-125));
        assert_eq!(at("1.25", 1), None);
        assert_eq!(at("0", 5), Some(0));
        assert_eq!(at("0.000", 0), Some(0));
    }

    #[test]
    fn unscaled_values_encode_as_big_integer_bytes() {
        let cases: &[(i128, &[u8])] = &[
            (0, &[0]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x00, 0x80]),
            (-1, &[0xff]),
            (-128, &[0x80]),
            (-129, &[0xff, 0x7f]),
            (12300, &[0x30, 0x0c]),
        ];
        for (value, bytes) in cases {
            assert_eq!(unscaled_bytes(*value), *bytes, "{value}");
            assert_eq!(unscaled_value(bytes), Some(*value));
        }
    }
}
