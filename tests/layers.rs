//! The layers of `src/`, locked: dependencies flow one way, so a helper cannot
//! drift into a bigger module that imports its caller again.
//!
//! The order, top to bottom (a module may use only what is below it):
//!
//! ```text
//! main -> server | cli -> cache -> admission | telemetry | manifests -> rules
//!      -> config | cluster -> workload -> vocabulary -> error
//! ```
//!
//! The cache sits over `admission`: it is how the server and the commands read
//! the live cluster, and it answers admission's lookups for both.
//!
//! Modules on one floor do not use each other. Inside a module, no two files
//! use each other through any path (a child may call back up into its own
//! `mod.rs`: the rules' order checks a way out through the whole chain).
//!
//! Chosen over a workspace crate for the policy core: one test, no moves of
//! the benches, fuzz targets and fidelity harness that use the core and the
//! server alike, and it also catches a circle inside one module, which a crate
//! boundary would not.

use std::collections::{BTreeMap, BTreeSet};

/// Floors, bottom first.
const FLOORS: &[&[&str]] = &[
    &["error"],
    &["vocabulary"],
    &["workload"],
    &["config", "cluster"],
    &["rules"],
    &["admission", "telemetry", "manifests"],
    &["cache"],
    &["server", "cli"],
    &["main"],
];

fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// A source file as a module path: `src/rules/queue.rs` -> ["rules", "queue"],
/// `src/cluster/objects/mod.rs` -> ["cluster", "objects"].
fn module_path(file: &str) -> Vec<String> {
    let trimmed = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut path: Vec<String> = trimmed.split('/').map(str::to_string).collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// The code of a file without its comments (doc links name modules freely).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path this file names: `crate::a::b`, `eval_admission::a::b` (the
/// binary) and `super::x`, resolved to absolute module paths.
fn references(file: &str, text: &str) -> Vec<Vec<String>> {
    let own = module_path(file);
    let parent = own[..own.len().saturating_sub(1)].to_vec();
    let code = code(text);
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for (prefix, base) in [("crate::", Vec::new()), ("eval_admission::", Vec::new()), ("super::", parent)] {
        let mut from = 0;
        while let Some(at) = code[from..].find(prefix) {
            let start = from + at;
            from = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let rest = &code[from..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            let mut path = base.clone();
            path.extend(rest[..end].split("::").filter(|s| !s.is_empty()).map(str::to_string));
            if rest[end..].starts_with('{') {
                // `crate::a::{b, c::d}`: each item of a braced list.
                let close = rest[end..].find('}').map_or(rest.len(), |c| end + c);
                for item in rest[end + 1..close].split(',') {
                    let item: Vec<String> = item
                        .trim()
                        .split("::")
                        .map(|s| s.trim().split(' ').next().unwrap_or("").to_string())
                        .filter(|s| !s.is_empty() && s != "self")
                        .collect();
                    let mut full = path.clone();
                    full.extend(item);
                    found.push(full);
                }
            }
            found.push(path);
        }
    }
    found
}

/// What is wrong with a tree of files (path -> text): arrows against the
/// floors, arrows along a floor, and circles among files.
fn violations(files: &BTreeMap<String, String>) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.keys().map(|file| module_path(file)).collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (file, text) in files {
        let own = module_path(file);
        let Some(top) = own.first().filter(|top| top.as_str() != "lib") else { continue };
        let Some(own_floor) = floor(top) else {
            problems.push(format!("{file}: module {top} is on no floor; add it to FLOORS"));
            continue;
        };
        for reference in references(file, text) {
            let Some(target_top) = reference.first() else { continue };
            if target_top != top {
                match floor(target_top) {
                    Some(target_floor) if target_floor < own_floor => {}
                    Some(target_floor) if target_floor == own_floor => {
                        problems.push(format!("{file}: {top} uses {target_top}, on the same floor"))
                    }
                    Some(_) => problems.push(format!("{file}: {top} uses {target_top}, which is above it")),
                    None => {}
                }
            }
            // The deepest module the path names.
            let target =
                (1..=reference.len()).rev().map(|n| reference[..n].to_vec()).find(|prefix| modules.contains(prefix));
            if let Some(target) = target.filter(|target| *target != own && !own.starts_with(target)) {
                edges.entry(own.clone()).or_default().insert(target);
            }
        }
    }
    for circle in circles(&edges) {
        problems.push(format!("files use each other in a circle: {}", circle.join(" -> ")));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// The circles of a directed graph, one per strongly connected set of two or more.
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    let reaches = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let mut grouped = BTreeSet::new();
    let mut found = Vec::new();
    for node in edges.keys() {
        if grouped.contains(node) || !reaches(node).contains(node) {
            continue;
        }
        let reach = reaches(node);
        let circle: Vec<Vec<String>> = reach.iter().filter(|other| reaches(other).contains(node)).cloned().collect();
        grouped.extend(circle.iter().cloned());
        found.push(circle.iter().map(|path| path.join("::")).collect());
    }
    found
}

fn source_tree() -> BTreeMap<String, String> {
    let root = testkit::repo("");
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
                files.insert(relative, std::fs::read_to_string(&path).expect("a source file"));
            }
        }
    }
    files
}

#[test]
fn src_flows_one_way_and_has_no_circle() {
    let files = source_tree();
    assert!(files.len() > 40, "found only {} files under src/", files.len());
    let problems = violations(&files);
    assert!(problems.is_empty(), "the layers of src/ are broken:\n{}", problems.join("\n"));
}

#[test]
fn every_top_module_is_on_a_floor_and_every_floor_is_in_src() {
    let files = source_tree();
    let tops: BTreeSet<String> = files.keys().filter_map(|file| module_path(file).first().cloned()).collect();
    for floor in FLOORS.iter().flat_map(|floor| floor.iter()) {
        assert!(tops.contains(*floor), "FLOORS names {floor}, which src/ does not have");
    }
}

#[test]
fn the_checker_sees_what_it_must() {
    let tree = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files.iter().map(|(path, text)| (path.to_string(), text.to_string())).collect()
    };
    // The arrows issue #30 found: config using rules, a vocabulary helper in cluster.
    let against = tree(&[
        ("src/config.rs", "use crate::rules::{Enforcement, Reason};"),
        ("src/rules/mod.rs", "use crate::config::Config;"),
        ("src/vocabulary/mod.rs", "pub fn f() { crate::cluster::state_file::read_at_most(); }"),
        ("src/cluster/mod.rs", "pub mod state_file;"),
        ("src/cluster/state_file.rs", ""),
    ]);
    let problems = violations(&against);
    assert!(
        problems.iter().any(|p| p.starts_with("src/config.rs: config uses rules, which is above it")),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p.contains("vocabulary uses cluster, which is above it")), "{problems:?}");
    // Along a floor, and in a comment (not an arrow).
    let along = tree(&[("src/cluster/mod.rs", "// crate::rules::x\nfn f() { crate::config::Config::default(); }")]);
    assert_eq!(violations(&along), ["src/cluster/mod.rs: cluster uses config, on the same floor"]);
    // Two predicates using each other, through super and through crate:: with braces.
    let circle = tree(&[
        ("src/rules/mod.rs", "mod a; mod b;"),
        ("src/rules/a.rs", "use super::b::Usage;"),
        ("src/rules/b.rs", "use crate::rules::{a::accepts, mod_item};"),
    ]);
    assert_eq!(violations(&circle), ["files use each other in a circle: rules::a -> rules::b"]);
    // A child calling back into its own mod.rs is the rules' recursion, not a circle.
    let callback = tree(&[("src/rules/mod.rs", "use a::check;"), ("src/rules/a.rs", "use super::passes;")]);
    assert!(violations(&callback).is_empty());
    // A module on no floor is named.
    let unknown = tree(&[("src/extra.rs", "")]);
    assert_eq!(violations(&unknown), ["src/extra.rs: module extra is on no floor; add it to FLOORS"]);
}
