//! The policy config: `Config::parse` on any UTF-8 text must not panic. A
//! config that parses must render its webhook configurations
//! (`manifests::render`, what `eval-admission manifests` writes) as YAML the
//! API server can read (a plain YAML parse), one object per file, whose CEL
//! conditions hold every selector label key and value, owner kind and group,
//! and Kueue identity of the config as a string literal that CEL decodes to
//! exactly that string (nothing lost, folded or mangled by YAML or escaping).
//! Three fixed reviews are then decided under it with the invariants of
//! `check_review`.
#![no_main]

use eval_admission::config::{Config, Loaded};
use eval_admission::manifests;
use eval_admission_fuzz::{WEBHOOKS, check_review, fixed_bodies, state, write_seeds_if_asked};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize as _;
use serde_json::Value;

fuzz_target!(
    init: {
        write_seeds_if_asked("config");
        let _ = (state(), fixed_bodies());
    },
    |data: &[u8]| {
        let Ok(text) = std::str::from_utf8(data) else { return };
        let Ok(Loaded { config, .. }) = Config::parse(text) else { return };
        check_rendered(&config);
        for (body, request) in fixed_bodies() {
            for webhook in WEBHOOKS {
                check_review(webhook, body, Some(request), &config, state());
            }
        }
    }
);

fn check_rendered(config: &Config) {
    let rendered = manifests::render(config, "fuzz");
    let mut conditions = String::new();
    for (file, text) in rendered.files() {
        // A plain YAML parse, as kubectl's: state_file::documents adds the
        // product's own nesting pre-check, which counts the brackets inside
        // the CEL block scalars (fuzz/README.md, findings).
        let documents: Vec<Value> = serde_yaml::Deserializer::from_str(text)
            .map(|document| Value::deserialize(document))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("rendered {file} is not YAML: {e}\n{text}"));
        assert_eq!(documents.len(), 1, "rendered {file} holds one object");
        let webhooks = documents[0]["webhooks"].as_array().unwrap_or_else(|| panic!("{file} has no webhooks"));
        for webhook in webhooks {
            for condition in webhook["matchConditions"].as_array().into_iter().flatten() {
                conditions.push_str(condition["expression"].as_str().expect("an expression is a string"));
                conditions.push('\n');
            }
        }
    }
    let literals = cel_literals(&conditions);
    let mut wanted: Vec<String> = config.kueue.controller_usernames();
    if !config.selection.all_workloads {
        for selector in config.selection.selectors.iter().filter(|s| !s.kinds.is_empty()) {
            for (key, value) in &selector.match_labels {
                wanted.extend([key.clone(), value.clone()]);
            }
            for owner in &selector.controlled_by {
                wanted.push(owner.kind.clone());
                if !owner.api_group.is_empty() {
                    wanted.push(format!("{}/", owner.api_group));
                }
            }
        }
    }
    for text in wanted {
        assert!(literals.contains(&text), "no CEL string literal in the rendered conditions is {text:?}:\n{conditions}");
    }
}

/// The string literals of CEL expressions, decoded: `'…'` and `"…"` with
/// CEL's escapes (cel-spec, "String and Bytes Values"). A literal that does
/// not end on its line, or an escape CEL does not have, is a condition the
/// API server cannot compile: a panic.
fn cel_literals(expressions: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut chars = expressions.chars();
    let fail = |what: &str| -> ! { panic!("{what} in the rendered CEL:\n{expressions}") };
    while let Some(c) = chars.next() {
        if c != '\'' && c != '"' {
            continue;
        }
        let quote = c;
        let mut literal = String::new();
        loop {
            match chars.next() {
                None | Some('\n' | '\r') => fail("a string literal that does not end on its line"),
                Some(c) if c == quote => break,
                Some('\\') => {
                    let decoded = match chars.next() {
                        Some(c @ ('\\' | '\'' | '"' | '`' | '?')) => Some(c),
                        Some('a') => Some('\u{7}'),
                        Some('b') => Some('\u{8}'),
                        Some('f') => Some('\u{c}'),
                        Some('n') => Some('\n'),
                        Some('r') => Some('\r'),
                        Some('t') => Some('\t'),
                        Some('v') => Some('\u{b}'),
                        Some('x' | 'X') => digits(&mut chars, "", 2, 16),
                        Some('u') => digits(&mut chars, "", 4, 16),
                        Some('U') => digits(&mut chars, "", 8, 16),
                        Some(first @ '0'..='3') => digits(&mut chars, &first.to_string(), 2, 8),
                        _ => None,
                    };
                    literal.push(decoded.unwrap_or_else(|| fail("an escape CEL does not have")));
                }
                Some(c) => literal.push(c),
            }
        }
        literals.push(literal);
    }
    literals
}

/// The code point of an escape: `count` more digits in `radix` after `first`.
fn digits(chars: &mut std::str::Chars, first: &str, count: usize, radix: u32) -> Option<char> {
    let text: String = chars.by_ref().take(count).collect();
    if text.chars().count() != count || !text.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(&format!("{first}{text}"), radix).ok().and_then(char::from_u32)
}
