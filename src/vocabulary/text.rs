//! Small helpers for the text of messages.

/// Joins names for a message: `a, b, c`.
pub fn join<I: IntoIterator<Item = S>, S: AsRef<str>>(items: I) -> String {
    let mut joined = String::new();
    for item in items {
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(item.as_ref());
    }
    joined
}

/// The most characters of user text a message repeats back.
pub const MOST_ECHOED_CHARS: usize = 80;

/// Quotes user text, cut to [`MOST_ECHOED_CHARS`].
pub fn echo(text: &str) -> String {
    let mut cut: String = text.chars().take(MOST_ECHOED_CHARS).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    format!("{cut:?}")
}
