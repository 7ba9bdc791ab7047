//! The policy config: `Config::parse` on any UTF-8 text must not panic. A
//! config that parses must render its webhook configurations
//! (`manifests::render`, what `eval-admission manifests` writes) as YAML the
//! API server can read (a plain YAML parse), one object per file, whose CEL
//! conditions carry every selector label and Kueue identity as the CEL string
//! literal the renderer meant (nothing lost or folded by YAML). Three fixed reviews are then
//! decided under it with the invariants of `check_review`. The one open
//! finding is let pass unless EVAL_ADMISSION_FUZZ_STRICT=1 (`open_finding`).
#![no_main]

use eval_admission::config::Config;
use eval_admission::manifests;
use eval_admission_fuzz::{WEBHOOKS, check_review, fixed_bodies, state, strict, write_seeds_if_asked};
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
        let Ok(config) = Config::parse(text) else { return };
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
    if open_finding(config) && !strict() {
        return;
    }
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
    if !config.selection.all_workloads {
        for selector in config.selection.selectors.iter().filter(|s| !s.kinds.is_empty()) {
            for (key, value) in &selector.match_labels {
                for literal in [cel_string(key), cel_string(value)] {
                    assert!(conditions.contains(&literal), "the label literal {literal} is not in the CEL:\n{conditions}");
                }
            }
        }
    }
    for name in &config.kueue_controller_usernames {
        let literal = cel_string(name);
        assert!(conditions.contains(&literal), "the username literal {literal} is not in the CEL:\n{conditions}");
    }
}

/// The open finding (fuzz/artifacts-found/config/open/): a config string that
/// reaches the CEL of the rendered webhooks holding a character YAML reads as
/// a line break (U+2028, U+2029) or does not allow at all (U+FFFE, U+FFFF):
/// the renderer's `cel_string` escapes only the Cc controls, so the rendered
/// file is not YAML. Its rendering is not checked unless EVAL_ADMISSION_FUZZ_STRICT=1.
fn open_finding(config: &Config) -> bool {
    let not_yaml = |c: char| {
        !c.is_control()
            && (matches!(c, '\u{2028}' | '\u{2029}')
                || !matches!(c, '\u{20}'..='\u{7E}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..))
    };
    let selectors = config.selection.selectors.iter();
    let labels = selectors.clone().flat_map(|s| s.match_labels.iter()).flat_map(|(k, v)| [k, v]);
    let owners = selectors.flat_map(|s| s.controlled_by.iter()).flat_map(|o| [&o.api_group, &o.kind]);
    labels.chain(owners).chain(&config.kueue_controller_usernames).any(|text| text.chars().any(not_yaml))
}

/// A CEL single-quoted string literal, as src/manifests.rs writes one.
fn cel_string(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
