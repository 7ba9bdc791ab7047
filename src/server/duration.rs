//! Durations as Go writes them (`10s`, `1.5s`, `500ms`, `1m30s`): the API
//! server's `?timeout=` and every duration flag. One parser reads them all,
//! Go's own grammar and bounds ([`parse_go_duration`], which also reads Kueue's
//! Configuration); here they are kept non-negative and, for flags, within a
//! range a person would mean, so no value can overflow a timer or a deadline.

use std::time::Duration;

use crate::vocabulary::go_duration::parse_go_duration;

/// Why a flag's duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Go's own message (`time: missing unit in duration "30"`).
    #[error("{0} (write it like 5s, 500ms or 1m30s)")]
    Malformed(String),
    #[error("'{text}' is outside the range allowed, {least:?} to {most:?}")]
    OutOfRange { text: String, least: Duration, most: Duration },
}

/// A non-negative Go duration; `None` for anything else, including values over
/// Go's own limit (about 292 years).
pub fn parse(text: &str) -> Option<Duration> {
    let nanos = parse_go_duration(text).ok()?;
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// A flag's parser: a duration from `least` to `most`.
pub fn within(
    least: Duration,
    most: Duration,
) -> impl Fn(&str) -> Result<Duration, DurationError> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let out_of_range = || DurationError::OutOfRange { text: text.to_string(), least, most };
        let nanos = parse_go_duration(text).map_err(|message| {
            // Go calls a number too large for its int64 "invalid": here it is just too long.
            let overflowed = text.trim_start_matches(['+', '-']).starts_with(|c: char| c.is_ascii_digit());
            if overflowed && message.contains("invalid duration") {
                out_of_range()
            } else {
                DurationError::Malformed(message)
            }
        })?;
        let duration = u64::try_from(nanos).map(Duration::from_nanos).map_err(|_| out_of_range())?;
        if (least..=most).contains(&duration) { Ok(duration) } else { Err(out_of_range()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_go_writes_and_nothing_negative() {
        assert_eq!(parse("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("0"), Some(Duration::ZERO));
        assert_eq!(parse("-1s"), None);
        assert_eq!(parse("10"), None);
        assert_eq!(parse("100000000000000000000s"), None, "over Go's limit: refused, no panic");
    }

    #[test]
    fn flags_have_a_range_and_say_what_is_wrong() {
        let flag = within(Duration::from_millis(10), Duration::from_secs(60));
        assert_eq!(flag("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(flag("10ms"), Ok(Duration::from_millis(10)));
        assert!(matches!(flag("1m0.001s"), Err(DurationError::OutOfRange { .. })));
        assert!(matches!(flag("9ms"), Err(DurationError::OutOfRange { .. })));
        assert!(matches!(flag("-1s"), Err(DurationError::OutOfRange { .. })));
        assert_eq!(
            flag("100000000000000000000s").unwrap_err().to_string(),
            "'100000000000000000000s' is outside the range allowed, 10ms to 60s"
        );
        assert_eq!(
            flag("30").unwrap_err().to_string(),
            "time: missing unit in duration \"30\" (write it like 5s, 500ms or 1m30s)"
        );
        assert!(matches!(flag("5 s"), Err(DurationError::Malformed(_))));
        assert!(matches!(flag("abc"), Err(DurationError::Malformed(_))));
    }
}
