//! Guards for reading YAML written by people: a size bound before reading, a
//! nesting bound before parsing, and documents decoded one at a time. The state
//! file, the policy config and Kueue's Configuration all come through here.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

/// Reads a file of at most `most` bytes, refusing a larger one before reading it.
pub fn read_at_most(what: &'static str, path: &Path, most: u64) -> Result<Vec<u8>, Error> {
    let size = std::fs::metadata(path).map_err(|e| Error::file(what, path, e))?.len();
    if size > most {
        return Err(Error::file(what, path, format!("{size} bytes, more than the {most} read")));
    }
    std::fs::read(path).map_err(|e| Error::file(what, path, e))
}

/// Splits multi-document YAML into JSON values, skipping empty documents.
pub fn documents(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let mut values = Vec::new();
    for_each_document(bytes, |_, value| {
        values.push(value);
        Ok(())
    })?;
    Ok(values)
}

/// The deepest `[`/`{` nesting read. The YAML parser's time grows with the
/// square of flow nesting (a 250 KB file of nested `{` took 24 s), and no
/// Kubernetes object nests anywhere near this deep.
pub const MOST_FLOW_NESTING: usize = 64;

/// Refuses, in one linear pass before any parsing, YAML nested deeper than
/// [`MOST_FLOW_NESTING`] in flow collections. Quoted scalars (opened where a
/// scalar may start) and comments are skipped. The files read here come from
/// whoever runs the command or installs the server, so this guards against a
/// mistake and bounds the parse time, not against a determined author.
pub fn check_flow_nesting(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let (mut quote, mut escaped, mut comment) = (None::<u8>, false, false);
    let mut previous = b'\n';
    for (at, &byte) in text.as_bytes().iter().enumerate() {
        let starts_scalar =
            previous.is_ascii_whitespace() || matches!(previous, b'[' | b'{' | b',') || (previous == b':' && depth > 0);
        match (quote, byte) {
            _ if comment => comment = byte != b'\n',
            (Some(b'"'), b'\\') if !escaped => escaped = true,
            (Some(open), _) if byte == open && !escaped => quote = None,
            (Some(_), _) => escaped = false,
            (None, b'"' | b'\'') if starts_scalar => quote = Some(byte),
            (None, b'#') if previous.is_ascii_whitespace() => comment = true,
            (None, b'[' | b'{') => {
                depth += 1;
                if depth > MOST_FLOW_NESTING {
                    let line = text[..at].matches('\n').count() + 1;
                    return Err(format!(
                        "line {line}: nested deeper than {MOST_FLOW_NESTING} levels of [ and {{, which no Kubernetes \
                         object needs; refused before parsing"
                    ));
                }
            }
            (None, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        previous = byte;
    }
    Ok(())
}

/// Calls `each` with the 1-based position and value of every non-empty document.
pub fn for_each_document(bytes: &[u8], mut each: impl FnMut(usize, Value) -> Result<(), String>) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text (is this a binary file?)".to_string())?;
    check_flow_nesting(text)?;
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|e| format!("document {}: not valid YAML: {e}", index + 1))?;
        if !value.is_null() {
            each(index + 1, value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing_and_quick() {
        let nested = |depth: usize| format!("a: {}1{}\n", "[".repeat(depth), "]".repeat(depth));
        assert!(check_flow_nesting(&nested(MOST_FLOW_NESTING)).is_ok());
        assert!(documents(nested(MOST_FLOW_NESTING).as_bytes()).is_ok());
        let error = documents(nested(MOST_FLOW_NESTING + 1).as_bytes()).unwrap_err();
        assert!(error.starts_with("line 1: nested deeper than 64 levels"), "{error}");
        // The attack that took 24 s: 250 KB of unclosed `{a: ` refused at once.
        let started = std::time::Instant::now();
        assert!(documents("{a: ".repeat(64_000).as_bytes()).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "linear: {:?}", started.elapsed());
        // Brackets in quoted scalars and comments are text; one inside a plain scalar counts.
        let quoted = format!(
            "a: '{}'\nb: \"{}\\\"\" # {}\nc: it's {}\n",
            "[".repeat(100),
            "{".repeat(100),
            "{".repeat(100),
            "x"
        );
        assert!(check_flow_nesting(&quoted).is_ok(), "{quoted}");
        assert!(check_flow_nesting(&format!("a: x{}\n", "[".repeat(65))).is_err(), "stricter, never looser");
        let line = check_flow_nesting(&format!("a: 1\nb: 2\nc: {}\n", "{".repeat(65))).unwrap_err();
        assert!(line.starts_with("line 3:"), "{line}");
    }
}
