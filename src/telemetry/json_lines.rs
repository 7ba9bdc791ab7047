//! The JSON log line: one object per event, fields at the top level.

use std::fmt::Write;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::registry::LookupSpan;

/// One JSON object per event: `timestamp`, `level`, then the event's fields
/// (`message` among them) at the top level. Written straight into the line
/// buffer; tracing-subscriber's own JSON format collects the fields into a map
/// first and cost most of a review's logging time.
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> std::fmt::Result {
        writer.write_str("{\"timestamp\":\"")?;
        SystemTime.format_time(&mut writer)?;
        write!(writer, "\",\"level\":\"{}\"", event.metadata().level())?;
        let mut fields = JsonFields { writer: &mut writer, result: Ok(()) };
        event.record(&mut fields);
        fields.result?;
        writer.write_str("}\n")
    }
}

/// Appends `,"name":value` for each field; strings and `Display`/`Debug`
/// values escaped as JSON strings.
struct JsonFields<'w, 'b> {
    writer: &'w mut Writer<'b>,
    result: std::fmt::Result,
}

impl JsonFields<'_, '_> {
    fn raw(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        if self.result.is_ok() {
            self.result = write!(self.writer, ",\"{}\":{value}", field.name());
        }
    }

    fn string(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        if self.result.is_ok() {
            self.result = write!(self.writer, ",\"{}\":\"", field.name())
                .and_then(|()| write!(JsonEscaped(&mut *self.writer), "{value}"))
                .and_then(|()| self.writer.write_char('"'));
        }
    }
}

impl Visit for JsonFields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.string(field, format_args!("{value}"));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.string(field, format_args!("{value:?}"));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.string(field, format_args!("{value}"));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.raw(field, format_args!("{value}"));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.raw(field, format_args!("{value}"));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.raw(field, format_args!("{value}"));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        // JSON has no NaN or infinity.
        if value.is_finite() {
            self.raw(field, format_args!("{value}"))
        } else {
            self.string(field, format_args!("{value}"))
        }
    }
}

/// Writes what it is given as the inside of a JSON string.
struct JsonEscaped<'a, W: Write>(&'a mut W);

impl<W: Write> Write for JsonEscaped<'_, W> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let mut plain = 0;
        for (at, byte) in text.bytes().enumerate() {
            let escape = match byte {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0..0x20 => "",
                _ => continue,
            };
            self.0.write_str(&text[plain..at])?;
            if escape.is_empty() {
                write!(self.0, "\\u{byte:04x}")?
            } else {
                self.0.write_str(escape)?
            }
            plain = at + 1;
        }
        self.0.write_str(&text[plain..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Formats the events `emit` makes with [`JsonLines`] and returns the lines.
    fn json_lines(emit: impl FnOnce()) -> Vec<String> {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber =
            tracing_subscriber::fmt().event_format(JsonLines).with_writer(move || SharedBuffer(sink.clone())).finish();
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = buffer.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap().lines().map(str::to_string).collect()
    }

    struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for SharedBuffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_event_is_one_line_of_json_with_its_fields_at_the_top() {
        let awkward = "alice \"the admin\"\\\n\ttab\r\u{1}\u{1f} ünïcode ✓";
        let lines = json_lines(|| {
            tracing::info!(name = %awkward, count = 3u64, delta = -2i64, ok = true, ratio = 0.5, nan = f64::NAN,
                list = ?vec!["a\"b"], "review of {}", "j\"1");
            tracing::warn!("second");
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        let line: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["message"], "review of j\"1");
        assert_eq!(line["name"], awkward);
        assert_eq!(line["count"], 3);
        assert_eq!(line["delta"], -2);
        assert_eq!(line["ok"], true);
        assert_eq!(line["ratio"], 0.5);
        assert_eq!(line["nan"], "NaN");
        assert_eq!(line["list"], r#"["a\"b"]"#);
        let timestamp = line["timestamp"].as_str().unwrap();
        assert!(timestamp.len() > 20 && timestamp.ends_with('Z'), "RFC 3339 in UTC: {timestamp}");
        let second: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!((second["level"].as_str(), second["message"].as_str()), (Some("WARN"), Some("second")));
    }

    #[test]
    fn a_callers_value_is_cut_in_json_too() {
        use crate::vocabulary::caller_text::CallerText;
        let huge = format!("alice\n{}", "u".repeat(1_000_000));
        let lines = json_lines(|| tracing::info!(user = %CallerText::new(&huge), "review"));
        assert_eq!(lines.len(), 1);
        assert!(lines[0].len() < 1024, "{} bytes", lines[0].len());
        let line: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        let user = line["user"].as_str().unwrap();
        assert!(user.starts_with("alice\\nuuu"), "{user}");
        assert!(user.ends_with(&format!("u…(cut, {} bytes)", huge.len())), "{user}");
    }
}
