//! Kubernetes resource quantities (`k8s.io/apimachinery` `resource.Quantity`) as
//! exact integers, and the integer view Kueue takes of them.
//!
//! A parsed [`Quantity`] is held exactly, as an `i128` count of nano-units:
//! `ParseQuantity` keeps at most nine decimal places (it rounds anything finer
//! up, away from zero, to `1n`), so nano-units lose nothing. Sums of quantities
//! (what Kueue does when it totals a pod's containers) are therefore exact too,
//! and rounding to milli-units or whole units happens once, at the end, as
//! Kubernetes and Kueue do it.
//!
//! Range: `i128` nano-units reach about 1.7e29 units. Larger values (possible with
//! decimal exponents such as `1e40`) saturate at `±i128::MAX`; Kueue clamps every
//! such value to `i64::MAX` anyway.

use std::fmt;

/// Nano-units in one milli-unit.
const NANO_PER_MILLI: i128 = 1_000_000;
/// Nano-units in one unit.
const NANO_PER_UNIT: i128 = 1_000_000_000;
/// apimachinery caps binary-suffixed quantities at 2^63-1 units (`maxAllowed`).
const BINARY_CAP_NANO: i128 = (i64::MAX as i128) * NANO_PER_UNIT;
/// Characters apimachinery's scanner accepts at the start of a suffix.
const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";

/// Why a value is not a Kubernetes quantity. The messages follow apimachinery's
/// (`ErrFormatWrong`, `ErrSuffix`, `ErrNumeric`), which is what `kubectl` users see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("{0:?}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Format(String),
    #[error("{0:?}: unable to parse quantity's suffix")]
    Suffix(String),
    #[error("{0:?}: unable to parse numeric part of quantity")]
    Numeric(String),
    #[error("a quantity must be a string or a number, not {0}")]
    Type(&'static str),
}

/// An exact Kubernetes quantity, in nano-units (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    nano: i128,
}

impl Quantity {
    pub const ZERO: Quantity = Quantity { nano: 0 };

    /// Parses a quantity string as `resource.ParseQuantity` does: `[+-]<number><suffix>`
    /// with a decimal SI suffix (`n u m "" k M G T P E`), a binary one (`Ki` … `Ei`) or a
    /// decimal exponent (`e3`, `E-2`). No surrounding whitespace (see [`Quantity::from_json`]).
    ///
    /// The quirks of apimachinery's scanner are kept: `"+"`, `"-"` and `"."` are zero,
    /// `"1."` is one, the exponent of `1e<n>` is parsed as an `int64` and then truncated
    /// to `int32`, and a binary quantity above 2^63-1 units is capped there.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        parse_quantity(text)
    }

    /// Decodes a JSON value as `Quantity.UnmarshalJSON` does: a string (trimmed of
    /// surrounding whitespace) or the text of a number; `null` is zero.
    ///
    /// A JSON number reaches us already decoded by serde_json (without its
    /// `arbitrary_precision` feature), so a non-integer number is re-read from
    /// Rust's shortest round-trip rendering of the `f64`: exact for any number
    /// written with at most 15-17 significant digits, which is every real manifest.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, QuantityError> {
        match value {
            serde_json::Value::Null => Ok(Self::ZERO),
            serde_json::Value::String(text) => Self::parse(text.trim()),
            serde_json::Value::Number(number) => {
                let text = if let Some(int) = number.as_i64() {
                    int.to_string()
                } else if let Some(int) = number.as_u64() {
                    int.to_string()
                } else {
                    number.as_f64().map(|float| float.to_string()).unwrap_or_else(|| number.to_string())
                };
                Self::parse(&text)
            }
            serde_json::Value::Bool(_) => Err(QuantityError::Type("a boolean")),
            serde_json::Value::Array(_) => Err(QuantityError::Type("an array")),
            serde_json::Value::Object(_) => Err(QuantityError::Type("an object")),
        }
    }

    pub fn from_nano(nano: i128) -> Self {
        Self { nano }
    }

    /// The exact value in nano-units.
    pub fn nano(self) -> i128 {
        self.nano
    }

    /// `Quantity.MilliValue`: milli-units, rounded up for positive values (`0.1m` is `1m`).
    /// Negative values round away from zero, as apimachinery's int64 path does.
    pub fn milli_value(self) -> i128 {
        div_away_from_zero(self.nano, NANO_PER_MILLI)
    }

    /// `Quantity.Value`: whole units, rounded up (away from zero).
    pub fn value(self) -> i128 {
        div_away_from_zero(self.nano, NANO_PER_UNIT)
    }

    pub fn is_zero(self) -> bool {
        self.nano == 0
    }

    pub fn is_negative(self) -> bool {
        self.nano < 0
    }

    /// Exact sum (`Quantity.Add`), saturating only beyond the `i128` nano range.
    pub fn saturating_add(self, other: Self) -> Self {
        Self { nano: self.nano.saturating_add(other.nano) }
    }

    /// The exact product (`inf.Dec` in Kueue's `multiplyResourceQuantities`),
    /// rounded up to the nano-unit: Kueue then rounds up to milli-units or
    /// units, which a nano-unit more or less cannot change.
    pub fn saturating_mul(self, other: Self) -> Self {
        let Some(product) = self.nano.checked_mul(other.nano) else {
            let positive = (self.nano < 0) == (other.nano < 0);
            return Self { nano: if positive { i128::MAX } else { i128::MIN } };
        };
        let (quotient, remainder) = (product / NANO_PER_UNIT, product % NANO_PER_UNIT);
        Self { nano: if remainder > 0 { quotient + 1 } else { quotient } }
    }

    /// The integer Kueue keeps for this quantity of `resource`
    /// (Kueue v0.19.2 `pkg/resources/requests.go` `ResourceValue`): milli-units for
    /// `cpu`, whole units rounded up for everything else, clamped to `i64`
    /// (`pkg/util/math` `SafeMilliValue` / `SafeValue`).
    pub fn kueue_value(self, resource: &str) -> i64 {
        let value = if resource == CPU { self.milli_value() } else { self.value() };
        clamp_i64(value)
    }

    /// [`Quantity::kueue_value`] expressed in milli-units: the same number for `cpu`,
    /// times 1000 (saturating at `i64::MAX`) for every other resource. Comparing two
    /// of these compares what Kueue compares.
    pub fn kueue_milli(self, resource: &str) -> i64 {
        units_to_milli(resource, self.kueue_value(resource))
    }
}

impl fmt::Display for Quantity {
    /// Exact, in the smallest decimal SI suffix that needs no fraction (`1500m`, `2`, `1n`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nano = self.nano;
        if nano % NANO_PER_UNIT == 0 {
            write!(f, "{}", nano / NANO_PER_UNIT)
        } else if nano % NANO_PER_MILLI == 0 {
            write!(f, "{}m", nano / NANO_PER_MILLI)
        } else if nano % 1000 == 0 {
            write!(f, "{}u", nano / 1000)
        } else {
            write!(f, "{nano}n")
        }
    }
}

/// `resource.ParseQuantity(text)` then `MilliValue()`: exact milli-units, rounded up.
/// `i128`; see the module docs for the range.
pub fn parse_milli(text: &str) -> Result<i128, QuantityError> {
    Ok(Quantity::parse(text)?.milli_value())
}

const CPU: &str = "cpu";

/// Whether Kueue formats `resource` as bytes with binary suffixes (memory,
/// ephemeral-storage, hugepages-*), as its `ResourceFormatter.ResourceQuantity` does.
pub fn is_byte_resource(resource: &str) -> bool {
    matches!(resource, "memory" | "ephemeral-storage") || resource.starts_with("hugepages-")
}

/// Converts a Kueue integer ([`Quantity::kueue_value`]) to milli-units: identity for
/// `cpu`, times 1000 otherwise, saturating.
pub fn units_to_milli(resource: &str, value: i64) -> i64 {
    if resource == CPU { value } else { value.saturating_mul(1000) }
}

/// Formats milli-units of `resource` compactly for messages: cpu as `2` or `500m`;
/// byte resources as the largest exact binary unit (`8Gi`, `1536Mi`) else bytes;
/// everything else as a plain number. A value that is not a whole unit (never the
/// case for Kueue's non-cpu values) keeps its milli-units: `1500m`.
pub fn format_milli(resource: &str, milli: i64) -> String {
    let milli = milli as i128;
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let units = milli / 1000;
    if is_byte_resource(resource) && units != 0 {
        const BINARY: [(&str, u32); 6] = [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)];
        for (suffix, shift) in BINARY {
            let unit = 1i128 << shift;
            if units % unit == 0 {
                return format!("{}{suffix}", units / unit);
            }
        }
    }
    units.to_string()
}

fn clamp_i64(value: i128) -> i64 {
    value.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn div_away_from_zero(value: i128, divisor: i128) -> i128 {
    let quotient = value / divisor;
    match value % divisor {
        0 => quotient,
        _ if value > 0 => quotient + 1,
        _ => quotient - 1,
    }
}

/// How the suffix scales the number.
#[derive(Debug, Clone, Copy)]
enum Scale {
    /// times 10^exponent (decimal SI suffixes and `e<n>` exponents)
    Decimal(i64),
    /// times 2^exponent (`Ki` … `Ei`)
    Binary(u32),
}

fn interpret_suffix(suffix: &str) -> Option<Scale> {
    let scale = match suffix {
        "" => Scale::Decimal(0),
        "n" => Scale::Decimal(-9),
        "u" => Scale::Decimal(-6),
        "m" => Scale::Decimal(-3),
        "k" => Scale::Decimal(3),
        "M" => Scale::Decimal(6),
        "G" => Scale::Decimal(9),
        "T" => Scale::Decimal(12),
        "P" => Scale::Decimal(15),
        "E" => Scale::Decimal(18),
        "Ki" => Scale::Binary(10),
        "Mi" => Scale::Binary(20),
        "Gi" => Scale::Binary(30),
        "Ti" => Scale::Binary(40),
        "Pi" => Scale::Binary(50),
        "Ei" => Scale::Binary(60),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E']).filter(|rest| !rest.is_empty())?;
            // strconv.ParseInt(.., 10, 64) accepts one leading sign; apimachinery then
            // truncates the result with int32(..).
            let parsed: i64 = exponent.parse().ok()?;
            Scale::Decimal(i64::from(parsed as i32))
        }
    };
    Some(scale)
}

/// The pieces of a quantity string, split the way apimachinery's
/// `parseQuantityString` splits them.
struct Scanned<'a> {
    negative: bool,
    /// Digits of the integer part, leading zeros stripped.
    integer: &'a [u8],
    /// Digits after the decimal point.
    fraction: &'a [u8],
    /// Whether the number part had any digit at all (`"."` has none).
    has_digit: bool,
    suffix: &'a str,
}

fn scan(text: &str) -> Result<Scanned<'_>, QuantityError> {
    let bytes = text.as_bytes();
    let format_error = || QuantityError::Format(text.to_owned());
    let mut pos = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            pos += 1;
            true
        }
        Some(b'+') => {
            pos += 1;
            false
        }
        _ => false,
    };
    let zeros_start = pos;
    while pos < bytes.len() && bytes[pos] == b'0' {
        pos += 1;
    }
    let had_zeros = pos > zeros_start;
    if pos == bytes.len() {
        // Only a sign and zeros (or nothing after the sign): zero.
        return Ok(Scanned { negative, integer: b"", fraction: b"", has_digit: true, suffix: "" });
    }
    let integer_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let integer = &bytes[integer_start..pos];
    let mut fraction: &[u8] = b"";
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let fraction_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        fraction = &bytes[fraction_start..pos];
    }
    let has_digit = had_zeros || !integer.is_empty() || !fraction.is_empty();
    let suffix_start = pos;
    while pos < bytes.len() && SUFFIX_CHARS.contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && matches!(bytes[pos], b'+' | b'-') {
        pos += 1;
    }
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < bytes.len() {
        return Err(format_error());
    }
    // Everything from suffix_start on is ASCII, so this slice is on char boundaries.
    Ok(Scanned { negative, integer, fraction, has_digit, suffix: &text[suffix_start..] })
}

fn parse_quantity(text: &str) -> Result<Quantity, QuantityError> {
    if text.is_empty() {
        return Err(QuantityError::Format(String::new()));
    }
    let scanned = scan(text)?;
    let scale = interpret_suffix(scanned.suffix).ok_or_else(|| QuantityError::Suffix(text.to_owned()))?;
    let nano = match whole_number_nano(&scanned, scale) {
        Some(nano) => nano,
        None => exact_nano(text, &scanned, scale)?,
    };
    Ok(Quantity { nano: if scanned.negative { -nano } else { nano } })
}

/// The common case without allocating: a whole number of at most 18 digits
/// whose scale keeps it a whole number of nano-units (`2`, `500m`, `8Gi`).
/// `None` sends everything else, and anything that would overflow, to
/// [`exact_nano`], which gives the same answer for what this accepts.
fn whole_number_nano(scanned: &Scanned<'_>, scale: Scale) -> Option<i128> {
    if !scanned.fraction.is_empty() || scanned.integer.len() > 18 {
        return None;
    }
    let number = scanned.integer.iter().fold(0u128, |number, digit| number * 10 + u128::from(digit - b'0'));
    let nano = match scale {
        Scale::Decimal(exponent @ -9..=20) => number.checked_mul(10u128.pow((exponent + 9) as u32))?,
        Scale::Decimal(_) => return None,
        Scale::Binary(shift) => (number << shift).checked_mul(NANO_PER_UNIT as u128)?.min(BINARY_CAP_NANO as u128),
    };
    i128::try_from(nano).ok()
}

/// Any quantity, in exact decimal digits: `ParseQuantity`'s arithmetic, rounded
/// up to a whole nano-unit.
fn exact_nano(text: &str, scanned: &Scanned<'_>, scale: Scale) -> Result<i128, QuantityError> {
    // The number as decimal digits (most significant first) times 10^exponent.
    let mut digits: Vec<u8> = scanned.integer.iter().chain(scanned.fraction).map(|d| d - b'0').collect();
    let first_nonzero = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    digits.drain(..first_nonzero);
    let fraction_len = scanned.fraction.len() as i64;
    let (exponent, binary) = match scale {
        Scale::Decimal(exponent) => {
            // apimachinery takes its big-decimal path when the scale is below nano; that
            // path needs a digit ("." alone parses as zero only on the int64 path).
            if !scanned.has_digit && exponent - fraction_len < -9 {
                return Err(QuantityError::Numeric(text.to_owned()));
            }
            (exponent - fraction_len, false)
        }
        Scale::Binary(shift) => {
            multiply_by_power_of_two(&mut digits, shift);
            (-fraction_len, true)
        }
    };
    let nano = digits_to_nano(&digits, exponent);
    Ok(if binary { nano.min(BINARY_CAP_NANO) } else { nano })
}

/// `digits` (decimal, most significant first) *= 2^shift, in place.
fn multiply_by_power_of_two(digits: &mut Vec<u8>, shift: u32) {
    if digits.is_empty() {
        return;
    }
    let factor = 1u128 << shift;
    let mut carry = 0u128;
    for digit in digits.iter_mut().rev() {
        let product = u128::from(*digit) * factor + carry;
        *digit = (product % 10) as u8;
        carry = product / 10;
    }
    let mut head = Vec::new();
    while carry > 0 {
        head.push((carry % 10) as u8);
        carry /= 10;
    }
    head.reverse();
    digits.splice(0..0, head);
}

/// The magnitude `digits * 10^exponent` in nano-units, rounded up to a whole
/// nano-unit as `ParseQuantity` does, saturating at `i128::MAX`. `digits` has no
/// leading zeros (empty means zero).
fn digits_to_nano(digits: &[u8], exponent: i64) -> i128 {
    if digits.is_empty() {
        return 0;
    }
    let shift = exponent.saturating_add(9);
    let len = digits.len() as i64;
    let (kept, dropped): (&[u8], &[u8]) = if shift >= 0 {
        (digits, &[])
    } else if -shift >= len {
        (&[], digits)
    } else {
        digits.split_at((len + shift) as usize)
    };
    let mut nano: i128 = 0;
    for &digit in kept {
        match nano.checked_mul(10).and_then(|n| n.checked_add(i128::from(digit))) {
            Some(n) => nano = n,
            None => return i128::MAX,
        }
    }
    if shift > 0 {
        for _ in 0..shift.min(40) {
            match nano.checked_mul(10) {
                Some(n) => nano = n,
                None => return i128::MAX,
            }
        }
        if shift > 40 {
            return i128::MAX;
        }
    }
    if dropped.iter().any(|&d| d != 0) {
        nano = nano.saturating_add(1);
    }
    nano
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_whole_number_shortcut_agrees_with_the_exact_arithmetic() {
        const SUFFIXES: [&str; 24] = [
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-9", "e-10",
            "e20", "e21", "E-3", "e0", "e29",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let (mut shortcut, mut exact_only) = (0, 0);
        for _ in 0..50_000 {
            let sign = ["", "-", "+"][next(3) as usize];
            let zeros = "0".repeat(next(3) as usize);
            let digits: String = (0..next(21)).map(|_| char::from(b'0' + next(10) as u8)).collect();
            let text = format!("{sign}{zeros}{digits}{}", SUFFIXES[next(SUFFIXES.len() as u64) as usize]);
            let scanned = scan(&text).unwrap();
            let scale = interpret_suffix(scanned.suffix).unwrap();
            match whole_number_nano(&scanned, scale) {
                Some(nano) => {
                    assert_eq!(Ok(nano), exact_nano(&text, &scanned, scale), "{text}");
                    shortcut += 1;
                }
                None => exact_only += 1,
            }
        }
        assert!(shortcut > 30_000 && exact_only > 3_000, "both paths exercised: {shortcut} / {exact_only}");
    }

    use super::*;
    use serde_json::json;

    fn milli(text: &str) -> i128 {
        parse_milli(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn nano(text: &str) -> i128 {
        Quantity::parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).nano()
    }

    #[test]
    fn plain_and_decimal_numbers() {
        assert_eq!(milli("0"), 0);
        assert_eq!(milli("1"), 1000);
        assert_eq!(milli("2"), 2000);
        assert_eq!(milli("0.5"), 500);
        assert_eq!(milli(".5"), 500);
        assert_eq!(milli("1."), 1000);
        assert_eq!(milli("1.5"), 1500);
        assert_eq!(milli("007"), 7000);
        assert_eq!(milli("+3"), 3000);
        assert_eq!(milli("-3"), -3000);
        assert_eq!(milli("123456789012345678901"), 123_456_789_012_345_678_901_000);
    }

    #[test]
    fn decimal_si_suffixes() {
        assert_eq!(milli("500m"), 500);
        assert_eq!(milli("1500m"), 1500);
        assert_eq!(milli("1k"), 1_000_000);
        assert_eq!(milli("1M"), 1_000_000_000);
        assert_eq!(milli("1G"), 1_000_000_000_000);
        assert_eq!(milli("1T"), 10i128.pow(15));
        assert_eq!(milli("1P"), 10i128.pow(18));
        assert_eq!(milli("1E"), 10i128.pow(21));
        assert_eq!(milli("1.5G"), 1_500_000_000_000);
        assert_eq!(nano("1n"), 1);
        assert_eq!(nano("1u"), 1000);
        assert_eq!(nano("250u"), 250_000);
    }

    #[test]
    fn binary_suffixes() {
        assert_eq!(milli("1Ki"), 1024 * 1000);
        assert_eq!(milli("1Mi"), (1 << 20) * 1000);
        assert_eq!(milli("8Gi"), (8i128 << 30) * 1000);
        assert_eq!(milli("1Ti"), (1i128 << 40) * 1000);
        assert_eq!(milli("1Pi"), (1i128 << 50) * 1000);
        assert_eq!(milli("1Ei"), (1i128 << 60) * 1000);
        assert_eq!(milli("1.5Gi"), (1536i128 << 20) * 1000);
        assert_eq!(milli("0.5Ki"), 512_000);
        // 0.1Ki = 102.4 exactly.
        assert_eq!(milli("0.1Ki"), 102_400);
        // Capped at 2^63-1 units, as apimachinery's maxAllowed.
        assert_eq!(nano("16Ei"), (i64::MAX as i128) * NANO_PER_UNIT);
        assert_eq!(nano("-16Ei"), -(i64::MAX as i128) * NANO_PER_UNIT);
    }

    #[test]
    fn exponents() {
        assert_eq!(milli("1e3"), 1_000_000);
        assert_eq!(milli("1E3"), 1_000_000);
        assert_eq!(milli("1e+3"), 1_000_000);
        assert_eq!(milli("1.5e3"), 1_500_000);
        assert_eq!(milli("1e-3"), 1);
        assert_eq!(milli("15e-1"), 1500);
        assert_eq!(milli("1e0"), 1000);
        // int64 parse, then int32 truncation: 2^32 becomes 0.
        assert_eq!(milli("1e4294967296"), 1000);
        // Huge exponents saturate instead of overflowing.
        assert_eq!(nano("1e100"), i128::MAX);
        assert_eq!(nano("1e2147483647"), i128::MAX);
    }

    #[test]
    fn sub_milli_values_round_up_like_milli_value() {
        // Quantity.MilliValue rounds up: 0.1m is 1m, 1n is 1m.
        assert_eq!(milli("0.1m"), 1);
        assert_eq!(milli("1n"), 1);
        assert_eq!(milli("1u"), 1);
        assert_eq!(milli("1001u"), 2);
        assert_eq!(milli("0.0001"), 1);
        assert_eq!(milli("1.0001"), 1001);
        assert_eq!(milli("1e-12"), 1);
        // ParseQuantity keeps nano precision, rounding finer digits up.
        assert_eq!(nano("1e-12"), 1);
        assert_eq!(nano("0.0000000001"), 1);
        assert_eq!(nano("1.0000000001"), 1_000_000_001);
        assert_eq!(nano("1e-2000000000"), 1);
        // And Value rounds up to whole units.
        assert_eq!(Quantity::parse("1.5").unwrap().value(), 2);
        assert_eq!(Quantity::parse("1n").unwrap().value(), 1);
        assert_eq!(Quantity::parse("-1.5").unwrap().value(), -2);
    }

    #[test]
    fn apimachinery_quirks() {
        assert_eq!(milli("+"), 0);
        assert_eq!(milli("-"), 0);
        assert_eq!(milli("."), 0);
        assert_eq!(milli("000"), 0);
        assert_eq!(milli("0Gi"), 0);
        assert_eq!(milli("1.G"), 1_000_000_000_000);
        assert!(matches!(Quantity::parse(".e-10"), Err(QuantityError::Numeric(_))));
    }

    #[test]
    fn invalid_strings_are_errors() {
        for text in ["", " 1", "1 ", "1 Gi", "abc", "1x", "1.2.3", "1e3.5", "1e3e", "0x10", "½", "1é", "1GB"] {
            assert!(matches!(Quantity::parse(text), Err(QuantityError::Format(_))), "{text:?}");
        }
        // apimachinery's scanner accepts these shapes and then rejects the suffix.
        for text in
            ["1K", "1Ki1", "1Gi3", "1e", "1e+", "1ee3", "1ke3", "1mi", "1i", "--1", "1-", "1e99999999999999999999"]
        {
            assert!(matches!(Quantity::parse(text), Err(QuantityError::Suffix(_))), "{text:?}");
        }
        let error = Quantity::parse("2 cores").unwrap_err().to_string();
        assert!(error.starts_with("\"2 cores\": quantities must match"), "{error}");
    }

    #[test]
    fn json_values() {
        let q = |value| Quantity::from_json(&value).map(Quantity::milli_value);
        assert_eq!(q(json!("500m")), Ok(500));
        assert_eq!(q(json!(" 2Gi ")), Ok((2i128 << 30) * 1000));
        assert_eq!(q(json!(2)), Ok(2000));
        assert_eq!(q(json!(0.5)), Ok(500));
        assert_eq!(q(json!(1e3)), Ok(1_000_000));
        assert_eq!(q(json!(1.5e-4)), Ok(1));
        assert_eq!(q(json!(-1)), Ok(-1000));
        assert_eq!(q(json!(u64::MAX)), Ok(u64::MAX as i128 * 1000));
        assert_eq!(q(json!(null)), Ok(0));
        assert_eq!(q(json!(true)), Err(QuantityError::Type("a boolean")));
        assert_eq!(q(json!({"a": 1})), Err(QuantityError::Type("an object")));
        assert_eq!(q(json!([])), Err(QuantityError::Type("an array")));
        assert!(q(json!("1 Gi")).is_err());
    }

    #[test]
    fn kueue_values() {
        let q = |text| Quantity::parse(text).unwrap();
        assert_eq!(q("1500m").kueue_value("cpu"), 1500);
        assert_eq!(q("0.1m").kueue_value("cpu"), 1);
        assert_eq!(q("1.5").kueue_value("nvidia.com/gpu"), 2);
        assert_eq!(q("1.5").kueue_milli("nvidia.com/gpu"), 2000);
        assert_eq!(q("1Gi").kueue_value("memory"), 1 << 30);
        assert_eq!(q("1Gi").kueue_milli("memory"), (1i64 << 30) * 1000);
        assert_eq!(q("1e30").kueue_value("cpu"), i64::MAX);
        assert_eq!(q("1e30").kueue_value("memory"), i64::MAX);
        assert_eq!(q("1e30").kueue_milli("memory"), i64::MAX);
        assert_eq!(q("-1e30").kueue_value("memory"), i64::MIN);
    }

    #[test]
    fn sums_are_exact_before_rounding() {
        let half_milli = Quantity::parse("0.5m").unwrap();
        assert_eq!(half_milli.milli_value(), 1);
        assert_eq!(half_milli.saturating_add(half_milli).milli_value(), 1);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_milli("cpu", 2000), "2");
        assert_eq!(format_milli("cpu", 500), "500m");
        assert_eq!(format_milli("cpu", 0), "0");
        assert_eq!(format_milli("cpu", -250), "-250m");
        assert_eq!(format_milli("memory", (8i64 << 30) * 1000), "8Gi");
        assert_eq!(format_milli("memory", (1536i64 << 20) * 1000), "1536Mi");
        assert_eq!(format_milli("memory", 1_000_000), "1000");
        assert_eq!(format_milli("memory", 1_024_000), "1Ki");
        assert_eq!(format_milli("memory", 0), "0");
        assert_eq!(format_milli("memory", 1500), "1500m");
        assert_eq!(format_milli("ephemeral-storage", (10i64 << 30) * 1000), "10Gi");
        assert_eq!(format_milli("hugepages-2Mi", (4i64 << 20) * 1000), "4Mi");
        assert_eq!(format_milli("nvidia.com/gpu", 8000), "8");
        assert_eq!(format_milli("nvidia.com/gpu", 1_073_741_824_000), "1073741824");
        assert_eq!(format_milli("example.com/foo", 1500), "1500m");
        assert_eq!(format_milli("cpu", i64::MIN), format!("{}m", i64::MIN));
        assert_eq!(Quantity::parse("1.5").unwrap().to_string(), "1500m");
        assert_eq!(Quantity::parse("1n").unwrap().to_string(), "1n");
    }
}
