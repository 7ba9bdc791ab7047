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

/// User text cut to eight times [`MOST_ECHOED_CHARS`], unquoted: a parser's
/// own long message.
pub fn echo_long(text: &str) -> String {
    let mut cut: String = text.chars().take(8 * MOST_ECHOED_CHARS).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    cut
}

/// The most items [`listed`] names.
pub const MOST_LISTED: usize = 20;

/// Names user-given items for a message, `a, b, and 3 more`: each cut as
/// [`echo`] does, at most [`MOST_LISTED`] of them.
pub fn listed(items: &[String]) -> String {
    let mut out: Vec<String> =
        items.iter().take(MOST_LISTED).map(|item| echo(item).trim_matches('"').to_string()).collect();
    if items.len() > MOST_LISTED {
        out.push(format!("and {} more", items.len() - MOST_LISTED));
    }
    out.join(", ")
}
