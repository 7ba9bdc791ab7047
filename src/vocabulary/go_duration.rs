//! Go's `time.ParseDuration` and `Duration.String`: Kueue's Configuration holds
//! `metav1.Duration`s, and the API server sends `?timeout=` in Go's grammar.

use std::fmt::Write as _;
use std::time::Duration;

use super::text::echo;

/// Go's `time.ParseDuration` (what `metav1.Duration` unmarshals with):
/// `[-+]` then one or more `<decimal><unit>`, units ns, us, µs, μs, ms, s, m,
/// h; "0" alone is allowed. Returns nanoseconds.
pub fn parse_go_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", echo(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (whole, after) = rest.split_at(digits);
        let mut fraction = "";
        rest = after;
        if let Some(after_dot) = rest.strip_prefix('.') {
            let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            (fraction, rest) = after_dot.split_at(digits);
        }
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        let (unit, after) = rest.split_at(unit_len);
        rest = after;
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3600 * 1_000_000_000,
            "" => return Err(format!("time: missing unit in duration {}", echo(text))),
            other => return Err(format!("time: unknown unit {} in duration {}", echo(other), echo(text))),
        };
        let mut value: u128 = 0;
        for digit in whole.bytes() {
            value = value * 10 + u128::from(digit - b'0');
            if value > i64::MAX as u128 + 1 {
                return Err(invalid());
            }
        }
        value *= scale;
        // Fraction digits beyond what can matter are dropped, as Go does.
        let (mut numerator, mut denominator): (u128, u128) = (0, 1);
        for digit in fraction.bytes().take(18) {
            numerator = numerator * 10 + u128::from(digit - b'0');
            denominator *= 10;
        }
        value += numerator * scale / denominator;
        total += value;
        if total > i64::MAX as u128 + 1 {
            return Err(invalid());
        }
    }
    if negative { Ok((-(total as i128)) as i64) } else { i64::try_from(total).map_err(|_| invalid()) }
}

/// Go's `Duration.String` for non-negative durations: "30m0s", "1h0m0s", "1.5s", "300ms".
pub fn go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    let fraction = |value: u128, unit: u128, suffix: &str| {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            format!("{whole}{suffix}")
        } else {
            let width = unit.ilog10() as usize;
            let digits = format!("{rest:0width$}");
            format!("{whole}.{}{suffix}", digits.trim_end_matches('0'))
        }
    };
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return fraction(nanos, 1_000, "\u{b5}s");
    }
    if nanos < 1_000_000_000 {
        return fraction(nanos, 1_000_000, "ms");
    }
    let seconds_total = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let (hours, minutes, seconds) = (seconds_total / 3600, seconds_total / 60 % 60, seconds_total % 60);
    let mut out = String::new();
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    out.push_str(&fraction(seconds * 1_000_000_000 + sub, 1_000_000_000, "s"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let cases: [(&str, i64); 12] = [
            ("0", 0),
            ("5m", 300_000_000_000),
            ("1h30m", 5_400_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("-1m", -60_000_000_000),
            ("+2s", 2_000_000_000),
            ("300ms", 300_000_000),
            ("10us", 10_000),
            ("10\u{b5}s", 10_000),
            ("1ns", 1),
            (".5s", 500_000_000),
            ("9223372036854775807ns", i64::MAX),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse_go_duration(text), Ok(nanos), "{text}");
        }
        assert_eq!(parse_go_duration("-9223372036854775808ns"), Ok(i64::MIN));
        for text in ["", "5", "m", "5 m", "5M", "1.s.", "9223372036854775808ns", "3000000h", "1d"] {
            assert!(parse_go_duration(text).is_err(), "{text}");
        }
        assert_eq!(go_duration(Duration::from_secs(1800)), "30m0s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_secs(5)), "5s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }
}
