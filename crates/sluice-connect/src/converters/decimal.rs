//! Java's `BigInteger` and `BigDecimal`, as far as converters need them: a Connect
//! Decimal travels as the big-endian two's-complement bytes of its unscaled value
//! (`BigInteger.toByteArray`), JSON carries decimal numbers as text, and Jackson prints a
//! `BigDecimal` with `BigDecimal.toString`.
//!
//! What it is not: arithmetic. Only what converting between those forms takes is here:
//! bytes ↔ integer ↔ digits, exact rescaling, truncation to Java's `int`/`long`, and the
//! nearest `float`/`double`.
//!
//! Cost: conversions are quadratic in the number of digits (schoolbook multiply and divide
//! by a word), which is nothing for the dozens of digits decimals have. Rescaling multiplies
//! by ten once per digit added, so it is bounded by [`RESCALE_DIGITS_MAX`]: a JSON number
//! like `1e999999999` must not make a converter allocate a billion digits.

use std::cmp::Ordering;

/// The most digits an exact rescale may add or remove.
pub(crate) const RESCALE_DIGITS_MAX: u32 = 4096;

/// An integer of any size: sign and magnitude, the magnitude in little-endian 32-bit limbs
/// without high zero limbs (zero is an empty magnitude and never negative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BigInteger {
    negative: bool,
    magnitude: Vec<u32>,
}

impl BigInteger {
    pub(crate) fn zero() -> BigInteger {
        BigInteger {
            negative: false,
            magnitude: Vec::new(),
        }
    }

    pub(crate) fn from_i64(value: i64) -> BigInteger {
        let mut result = BigInteger::from_u64(value.unsigned_abs());
        result.negative = value < 0;
        result
    }

    fn from_u64(value: u64) -> BigInteger {
        let mut result = BigInteger {
            negative: false,
            magnitude: vec![value as u32, (value >> 32) as u32],
        };
        result.trim();
        result
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.magnitude.is_empty()
    }

    pub(crate) fn is_negative(&self) -> bool {
        self.negative
    }

    fn trim(&mut self) {
        while self.magnitude.last() == Some(&0) {
            self.magnitude.pop();
        }
        if self.magnitude.is_empty() {
            self.negative = false;
        }
    }

    /// `new BigInteger(bytes)`: big-endian two's complement. Empty bytes are refused, as
    /// Java refuses them (`Zero length BigInteger`).
    pub(crate) fn from_twos_complement(bytes: &[u8]) -> Option<BigInteger> {
        let (&first, _) = bytes.split_first()?;
        let negative = first & 0x80 != 0;
        // The magnitude of a negative number is the two's complement of its bytes:
        // invert, then add one.
        let mut carry = negative;
        let mut magnitude = Vec::with_capacity(bytes.len().div_ceil(4));
        let mut limb = 0u32;
        for (position, &byte) in bytes.iter().rev().enumerate() {
            let mut byte = if negative { !byte } else { byte };
            if carry {
                let (sum, overflow) = byte.overflowing_add(1);
                byte = sum;
                carry = overflow;
            }
            limb |= u32::from(byte) << (8 * (position % 4));
            if position % 4 == 3 {
                magnitude.push(limb);
                limb = 0;
            }
        }
        if !bytes.len().is_multiple_of(4) {
            magnitude.push(limb);
        }
        if carry {
            // Only all-zero inverted bytes carry out, which a negative number cannot have:
            // its top bit was set.
            magnitude.push(1);
        }
        let mut result = BigInteger {
            negative,
            magnitude,
        };
        result.trim();
        Some(result)
    }

    /// `BigInteger.toByteArray`: the shortest big-endian two's complement, at least one
    /// byte.
    pub(crate) fn to_twos_complement(&self) -> Vec<u8> {
        let mut bytes: Vec<u8> = self
            .magnitude
            .iter()
            .rev()
            .flat_map(|limb| limb.to_be_bytes())
            .collect();
        if self.negative {
            // Negate: invert every byte and add one.
            let mut carry = true;
            for byte in bytes.iter_mut().rev() {
                *byte = !*byte;
                if carry {
                    let (sum, overflow) = byte.overflowing_add(1);
                    *byte = sum;
                    carry = overflow;
                }
            }
            // Drop redundant sign bytes, keeping the sign bit set.
            let redundant = bytes
                .windows(2)
                .take_while(|pair| pair[0] == 0xff && pair[1] & 0x80 != 0)
                .count();
            bytes.drain(..redundant);
            if bytes.first().is_none_or(|b| b & 0x80 == 0) {
                bytes.insert(0, 0xff);
            }
        } else {
            let leading = bytes.iter().take_while(|&&b| b == 0).count();
            bytes.drain(..leading);
            if bytes.first().is_none_or(|b| b & 0x80 != 0) {
                bytes.insert(0, 0);
            }
        }
        bytes
    }

    /// Parses decimal digits (no sign, at least one digit).
    pub(crate) fn from_digits(digits: &str, negative: bool) -> Option<BigInteger> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut result = BigInteger::zero();
        // Nine digits at a time fit a u32 and keep the loop short.
        let head = digits.len() % 9;
        let mut chunks = Vec::with_capacity(digits.len() / 9 + 1);
        if head > 0 {
            chunks.push(&digits[..head]);
        }
        chunks.extend(
            digits.as_bytes()[head..]
                .chunks(9)
                .map(|c| std::str::from_utf8(c).expect("ASCII digits")),
        );
        for (index, chunk) in chunks.iter().enumerate() {
            let value: u32 = chunk.parse().expect("at most nine ASCII digits");
            let factor = if index == 0 && head > 0 {
                10u32.pow(head as u32)
            } else {
                1_000_000_000
            };
            result.multiply_add(factor, value);
        }
        result.negative = negative;
        result.trim();
        Some(result)
    }

    /// The magnitude's decimal digits (`"0"` for zero).
    pub(crate) fn magnitude_digits(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut rest = BigInteger {
            negative: false,
            magnitude: self.magnitude.clone(),
        };
        let mut groups = Vec::new();
        while !rest.is_zero() {
            groups.push(rest.divide_small(1_000_000_000));
        }
        let mut text = groups
            .pop()
            .expect("a non-zero number has a group")
            .to_string();
        for group in groups.iter().rev() {
            text.push_str(&format!("{group:09}"));
        }
        text
    }

    /// Java's `toString`.
    pub(crate) fn to_java_string(&self) -> String {
        let digits = self.magnitude_digits();
        if self.negative {
            format!("-{digits}")
        } else {
            digits
        }
    }

    /// self = self * factor + addend (on the magnitude).
    fn multiply_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.magnitude {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.magnitude.push(carry as u32);
        }
    }

    /// Divides the magnitude by `divisor` in place; answers the remainder.
    fn divide_small(&mut self, divisor: u32) -> u32 {
        let mut remainder = 0u64;
        for limb in self.magnitude.iter_mut().rev() {
            let current = (remainder << 32) | u64::from(*limb);
            *limb = (current / u64::from(divisor)) as u32;
            remainder = current % u64::from(divisor);
        }
        self.trim();
        remainder as u32
    }

    /// `longValue()`: the low 64 bits of the two's complement.
    pub(crate) fn low_i64(&self) -> i64 {
        let low = u64::from(self.magnitude.first().copied().unwrap_or(0))
            | (u64::from(self.magnitude.get(1).copied().unwrap_or(0)) << 32);
        if self.negative {
            (low as i64).wrapping_neg()
        } else {
            low as i64
        }
    }

    /// Whether the value fits a `long`, and which.
    pub(crate) fn to_i64(&self) -> Option<i64> {
        if self.magnitude.len() > 2 {
            return None;
        }
        let low = self.low_i64();
        let fits = if self.negative {
            low < 0 || self.is_zero()
        } else {
            low >= 0
        };
        fits.then_some(low)
    }
}

/// A decimal number: `unscaled × 10^-scale`, as Java's `BigDecimal` (the scale may be
/// negative; `1.50` and `1.5` are different values with different scales).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BigDecimal {
    pub(crate) unscaled: BigInteger,
    pub(crate) scale: i32,
}

impl BigDecimal {
    pub(crate) fn new(unscaled: BigInteger, scale: i32) -> BigDecimal {
        BigDecimal { unscaled, scale }
    }

    /// Parses a JSON number (optional `-`, digits, optional fraction and exponent) as
    /// `new BigDecimal(text)` does: `1.50` has scale 2, `1e3` has scale -3.
    pub(crate) fn parse(text: &str) -> Option<BigDecimal> {
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let (integer, fraction) = match mantissa.split_once('.') {
            Some((integer, fraction)) => (integer, fraction),
            None => (mantissa, ""),
        };
        let digits = format!("{integer}{fraction}");
        let unscaled = BigInteger::from_digits(&digits, negative)?;
        let mut scale = i64::try_from(fraction.len()).ok()?;
        if let Some(exponent) = exponent {
            let exponent: i64 = exponent
                .strip_prefix('+')
                .unwrap_or(exponent)
                .parse()
                .ok()?;
            scale -= exponent;
        }
        Some(BigDecimal {
            unscaled,
            scale: i32::try_from(scale).ok()?,
        })
    }

    /// `BigDecimal.toString()`: plain notation unless the scale is negative or the number
    /// is smaller than 10^-6, then scientific (`1E-7`, `1.23E+5`).
    pub(crate) fn to_java_string(&self) -> String {
        let digits = self.unscaled.magnitude_digits();
        let sign = if self.unscaled.is_negative() { "-" } else { "" };
        let length = digits.len() as i64;
        let adjusted = -i64::from(self.scale) + (length - 1);
        if self.scale >= 0 && adjusted >= -6 {
            let scale = self.scale as usize;
            if scale == 0 {
                return format!("{sign}{digits}");
            }
            if digits.len() > scale {
                let (integer, fraction) = digits.split_at(digits.len() - scale);
                return format!("{sign}{integer}.{fraction}");
            }
            let zeros = "0".repeat(scale - digits.len());
            return format!("{sign}0.{zeros}{digits}");
        }
        let (first, rest) = digits.split_at(1);
        let mut text = format!("{sign}{first}");
        if !rest.is_empty() {
            text.push('.');
            text.push_str(rest);
        }
        if adjusted != 0 {
            text.push('E');
            if adjusted > 0 {
                text.push('+');
            }
            text.push_str(&adjusted.to_string());
        }
        text
    }

    /// The same value at `scale`, when that loses nothing (`1.5` at scale 2 is `1.50`;
    /// `1.55` at scale 1 is none).
    pub(crate) fn rescale(&self, scale: i32) -> Option<BigDecimal> {
        let mut unscaled = self.unscaled.clone();
        match scale.cmp(&self.scale) {
            Ordering::Equal => {}
            Ordering::Greater => {
                let added = scale.abs_diff(self.scale);
                if added > RESCALE_DIGITS_MAX && !unscaled.is_zero() {
                    return None;
                }
                for _ in 0..added.min(RESCALE_DIGITS_MAX) {
                    unscaled.multiply_add(10, 0);
                }
            }
            Ordering::Less => {
                let removed = self.scale.abs_diff(scale);
                if removed > RESCALE_DIGITS_MAX && !unscaled.is_zero() {
                    return None;
                }
                for _ in 0..removed.min(RESCALE_DIGITS_MAX) {
                    let negative = unscaled.negative;
                    if unscaled.divide_small(10) != 0 {
                        return None;
                    }
                    unscaled.negative = negative && !unscaled.is_zero();
                }
            }
        }
        Some(BigDecimal { unscaled, scale })
    }

    /// The integer part (toward zero), as `toBigInteger()`; none when it would have more
    /// than 64 digits of which only the low 64 bits matter to the caller.
    fn integer_part_low_i64(&self) -> i64 {
        if self.scale <= 0 {
            // unscaled × 10^k: for k ≥ 64 the product is a multiple of 2^64, so its low
            // 64 bits are zero.
            let shift = self.scale.unsigned_abs();
            if shift >= 64 {
                return 0;
            }
            let mut value = self.unscaled.clone();
            for _ in 0..shift {
                value.multiply_add(10, 0);
            }
            return value.low_i64();
        }
        let digits = self.unscaled.magnitude_digits();
        let scale = self.scale as usize;
        if digits.len() <= scale {
            return 0;
        }
        let integer = &digits[..digits.len() - scale];
        BigInteger::from_digits(integer, self.unscaled.is_negative())
            .expect("digits of a number")
            .low_i64()
    }

    /// `intValue()`: the integer part's low 32 bits.
    pub(crate) fn int_value(&self) -> i32 {
        self.integer_part_low_i64() as i32
    }

    /// `longValue()`: the integer part's low 64 bits.
    pub(crate) fn long_value(&self) -> i64 {
        self.integer_part_low_i64()
    }

    /// `doubleValue()`: the nearest `double`.
    pub(crate) fn to_f64(&self) -> f64 {
        self.scientific().parse().unwrap_or(0.0)
    }

    /// `floatValue()`: the nearest `float` (rounded once, from the exact value).
    pub(crate) fn to_f32(&self) -> f32 {
        self.scientific().parse().unwrap_or(0.0)
    }

    fn scientific(&self) -> String {
        let sign = if self.unscaled.is_negative() { "-" } else { "" };
        format!(
            "{sign}{}e{}",
            self.unscaled.magnitude_digits(),
            -i64::from(self.scale)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_as_java_writes_them() {
        // (value, BigInteger.valueOf(value).toByteArray())
        let cases: &[(i64, &[u8])] = &[
            (0, &[0]),
            (1, &[1]),
            (-1, &[0xff]),
            (127, &[0x7f]),
            (128, &[0, 0x80]),
            (-128, &[0x80]),
            (-129, &[0xff, 0x7f]),
            (156, &[0, 0x9c]),
            (-156, &[0xff, 0x64]),
            (255, &[0, 0xff]),
            (256, &[1, 0]),
            (-256, &[0xff, 0]),
            (i64::MAX, &[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            (i64::MIN, &[0x80, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for &(value, bytes) in cases {
            let number = BigInteger::from_i64(value);
            assert_eq!(number.to_twos_complement(), bytes, "{value}");
            assert_eq!(
                BigInteger::from_twos_complement(bytes),
                Some(number.clone())
            );
            assert_eq!(number.to_java_string(), value.to_string());
            assert_eq!(number.to_i64(), Some(value));
        }
        // Redundant sign bytes read as the same number and write back minimal.
        let padded = BigInteger::from_twos_complement(&[0, 0, 0x9c]).unwrap();
        assert_eq!(padded.to_twos_complement(), [0, 0x9c]);
        let padded = BigInteger::from_twos_complement(&[0xff, 0xff, 0x64]).unwrap();
        assert_eq!(padded.to_twos_complement(), [0xff, 0x64]);
        assert_eq!(BigInteger::from_twos_complement(&[]), None);
    }

    #[test]
    fn big_numbers_keep_every_digit() {
        let digits = "123456789012345678901234567890123456789";
        let number = BigInteger::from_digits(digits, true).unwrap();
        assert_eq!(number.to_java_string(), format!("-{digits}"));
        let bytes = number.to_twos_complement();
        assert_eq!(
            BigInteger::from_twos_complement(&bytes),
            Some(number.clone())
        );
        assert_eq!(number.to_i64(), None);
        // BigInteger.longValue: the low 64 bits.
        assert_eq!(
            BigInteger::from_digits("18446744073709551617", false)
                .unwrap()
                .low_i64(),
            1
        );
    }

    #[test]
    fn decimals_print_as_big_decimal_to_string() {
        // (text parsed, BigDecimal.toString of it)
        let cases = [
            ("1.56", "1.56"),
            ("1.5600", "1.5600"),
            ("-0.001", "-0.001"),
            ("0.0000001", "1E-7"),
            ("0.000001", "0.000001"),
            ("1e3", "1E+3"),
            ("1.23e5", "1.23E+5"),
            ("12300", "12300"),
            ("0", "0"),
            ("0.00", "0.00"),
            ("1.23456789123456789", "1.23456789123456789"),
            ("0012.5", "12.5"),
            ("-1E-10", "-1E-10"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                BigDecimal::parse(text).unwrap().to_java_string(),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn rescaling_is_exact_or_refused() {
        let value = BigDecimal::parse("1.5").unwrap();
        assert_eq!(value.rescale(3).unwrap().to_java_string(), "1.500");
        assert_eq!(
            BigDecimal::parse("1.500").unwrap().rescale(1).unwrap(),
            value
        );
        assert_eq!(BigDecimal::parse("1.55").unwrap().rescale(1), None);
        assert_eq!(BigDecimal::parse("1e999999999").unwrap().rescale(2), None);
        assert_eq!(
            BigDecimal::parse("0e999999999")
                .unwrap()
                .rescale(2)
                .unwrap()
                .to_java_string(),
            "0.00"
        );
    }

    #[test]
    fn narrowing_matches_java() {
        let value = BigDecimal::parse("-12.99").unwrap();
        assert_eq!(value.int_value(), -12);
        assert_eq!(value.long_value(), -12);
        assert_eq!(BigDecimal::parse("4294967297.5").unwrap().int_value(), 1);
        assert_eq!(BigDecimal::parse("1e100").unwrap().long_value(), 0);
        assert_eq!(BigDecimal::parse("12.34").unwrap().to_f32(), 12.34f32);
        assert_eq!(BigDecimal::parse("12.34").unwrap().to_f64(), 12.34f64);
    }
}
