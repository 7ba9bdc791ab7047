//! Text a caller chose, as a log field: a review's uid, kind, namespace, name
//! and user, an error that quotes its body. Here on the ground floor so the
//! server, the caches and telemetry all reach it.

use std::fmt::{self, Display, Write};

/// The most characters of one caller value a log line repeats: far over any
/// Kubernetes name (253) or uid (36); shown, a value is at most ~2 KiB (every
/// character an 8-byte escape), so a review's five keep its line under 11 KiB.
pub const MOST_LOGGED_CHARS: usize = 256;

/// The most characters of an error's text a log line repeats: a sentence that
/// may quote the caller's input (a decode error names the field and value).
pub const MOST_LOGGED_ERROR_CHARS: usize = 1024;

/// A caller's value as a log field. Its `Display` writes control characters
/// (C0, DEL, C1), the line and paragraph separators, the bidirectional
/// overrides and every space as escapes (`\n`, `\u{1b}`, `\u{20}`), a
/// backslash as `\\` and a quote as `\"`, so a value can neither end the log
/// line, drive a terminal, pass for an escape, start another field of the
/// text format (`alice name=x`), nor close or fake a quoted one (whose own
/// fields read `decision="allowed"`). Past its bound it is cut on a
/// character boundary, saying so with its whole length:
/// `aaaa…(cut, 1153433 bytes)`.
#[derive(Debug, Clone, Copy)]
pub struct CallerText<T> {
    value: T,
    most_chars: usize,
    /// Whether spaces are escaped too: a value's are; an error's sentence
    /// keeps them, logged as a quoted string instead (`.to_string().as_str()`:
    /// the text format quotes and escapes a `&str` field).
    escape_spaces: bool,
}

impl<T: Display> CallerText<T> {
    /// A value: a name, a user, a uid; cut past [`MOST_LOGGED_CHARS`].
    pub fn new(value: T) -> Self {
        Self { value, most_chars: MOST_LOGGED_CHARS, escape_spaces: true }
    }

    /// An error's text; cut past [`MOST_LOGGED_ERROR_CHARS`].
    pub fn error(value: T) -> Self {
        Self { value, most_chars: MOST_LOGGED_ERROR_CHARS, escape_spaces: false }
    }
}

impl<T: Display> Display for CallerText<T> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut escaping =
            Escaping { out, most_chars: self.most_chars, escape_spaces: self.escape_spaces, chars: 0, bytes: 0 };
        write!(escaping, "{}", self.value)?;
        if escaping.chars > self.most_chars {
            write!(escaping.out, "…(cut, {} bytes)", escaping.bytes)?;
        }
        Ok(())
    }
}

/// Writes what it is given escaped, up to `most_chars` characters; counts all.
struct Escaping<'a, 'f> {
    out: &'a mut fmt::Formatter<'f>,
    most_chars: usize,
    escape_spaces: bool,
    /// Characters seen, up to one past `most_chars` (enough to know it was cut).
    chars: usize,
    /// Bytes seen, all of them: the length the cut reports.
    bytes: usize,
}

impl Write for Escaping<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.bytes += text.len();
        for character in text.chars() {
            if self.chars >= self.most_chars {
                // One past the bound says "cut"; the rest is only counted, in bytes above.
                self.chars = self.most_chars + 1;
                break;
            }
            self.chars += 1;
            match character {
                '\n' => self.out.write_str("\\n")?,
                '\r' => self.out.write_str("\\r")?,
                '\t' => self.out.write_str("\\t")?,
                '\\' => self.out.write_str("\\\\")?,
                '"' => self.out.write_str("\\\"")?,
                // The text format separates fields by spaces: `alice name=x` would add one.
                _ if self.escape_spaces && character.is_whitespace() => {
                    write!(self.out, "\\u{{{:x}}}", u32::from(character))?
                }
                _ if needs_escape(character) => write!(self.out, "\\u{{{:x}}}", u32::from(character))?,
                _ => self.out.write_char(character)?,
            }
        }
        Ok(())
    }
}

/// What could end a line, move a terminal's cursor or reorder what is shown.
fn needs_escape(character: char) -> bool {
    character.is_control() // C0, DEL and C1 (NEL, CSI among them)
        || matches!(character, '\u{2028}' | '\u{2029}') // line and paragraph separators
        || matches!(character, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') // bidi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(value: &str) -> String {
        CallerText::new(value).to_string()
    }

    #[test]
    fn line_breaks_and_terminal_escapes_are_written_as_escapes() {
        assert_eq!(shown("alice"), "alice");
        assert_eq!(shown("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(shown("\x1b[2J"), "\\u{1b}[2J");
        assert_eq!(shown("a\u{2028}b\u{2029}c\u{85}d\u{9b}e\u{7f}"), "a\\u{2028}b\\u{2029}c\\u{85}d\\u{9b}e\\u{7f}");
        assert_eq!(shown("\u{202e}gpj.exe\0"), "\\u{202e}gpj.exe\\u{0}");
        assert_eq!(shown("a\\nb"), "a\\\\nb", "a literal backslash-n is not taken for a newline");
        assert_eq!(shown("x decision=\"allowed\""), "x\\u{20}decision=\\\"allowed\\\"", "nor a quote for a field's");
        assert_eq!(shown("alice name=evil"), "alice\\u{20}name=evil", "nor a space for the next field");
        assert_eq!(shown("a\u{a0}b\u{3000}c"), "a\\u{a0}b\\u{3000}c", "nor any other space");
        assert_eq!(shown("ünïcode✓"), "ünïcode✓", "printable text stays as it is");
        let forged = "x\n2026-01-01T00:00:00Z  INFO review uid=forged decision=allowed";
        assert!(!shown(forged).contains('\n'));
    }

    #[test]
    fn long_values_are_cut_on_a_character_boundary_saying_their_length() {
        let at_bound = "é".repeat(MOST_LOGGED_CHARS);
        assert_eq!(shown(&at_bound), at_bound, "at the bound: whole");
        let long = "é".repeat(MOST_LOGGED_CHARS + 1);
        let cut = shown(&long);
        let kept = format!("{}…(cut, {} bytes)", "é".repeat(MOST_LOGGED_CHARS), long.len());
        assert_eq!(cut, kept);
        let huge = "a".repeat(1_153_433);
        assert!(shown(&huge).ends_with("aaaa…(cut, 1153433 bytes)"));
        assert_eq!(shown(&huge).len(), MOST_LOGGED_CHARS + "…(cut, 1153433 bytes)".len());
        // The longest a value can be shown: every character the longest escape.
        let worst = shown(&"\u{2028}".repeat(8 * 1024 * 1024 / 3));
        assert!(worst.len() <= MOST_LOGGED_CHARS * 8 + 30, "{} bytes", worst.len());
        // Escapes count as the one character they stand for.
        let controls = shown(&"\n".repeat(MOST_LOGGED_CHARS + 5));
        assert_eq!(controls, format!("{}…(cut, {} bytes)", "\\n".repeat(MOST_LOGGED_CHARS), MOST_LOGGED_CHARS + 5));
    }

    #[test]
    fn an_error_is_cut_at_its_own_bound_and_any_display_is_taken() {
        let error = format!("malformed AdmissionReview: {}", "x".repeat(4000));
        let shown = CallerText::error(&error).to_string();
        assert!(shown.starts_with("malformed AdmissionReview: xxx"));
        assert!(shown.ends_with(&format!("x…(cut, {} bytes)", error.len())), "{shown}");
        assert_eq!(shown.chars().count(), MOST_LOGGED_ERROR_CHARS + format!("…(cut, {} bytes)", error.len()).len() - 2);
        // Pieces written one by one are counted together.
        assert_eq!(CallerText::new(format_args!("{}\n{}", "a", 7)).to_string(), "a\\n7");
    }
}
