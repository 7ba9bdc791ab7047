//! The shipped monitoring (manifests/monitoring) reads only what the server
//! exports: every metric of the PrometheusRule's alerts and of the Grafana
//! dashboard's panels is one of [`Metrics`]. (`make lint-monitoring` has
//! promtool parse and unit-test the same files.)

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use super::{Metrics, batched_stdout};

const RULES: &str = include_str!("../../manifests/monitoring/prometheusrule.yaml");
const DASHBOARD: &str = include_str!("../../manifests/monitoring/grafana-dashboard.json");

/// The series names a query can read from the server: each family of the
/// exposition (its `# TYPE` line) under the names Prometheus stores its
/// samples as: a counter's with `_total`, a histogram's `_bucket`, `_sum` and
/// `_count`, a gauge's as it is.
fn exported_series() -> BTreeSet<String> {
    let mut metrics = Metrics::new();
    // `serve` registers this collector beside the others.
    let (writer, _flush) = batched_stdout::spawn(std::io::sink(), 1024, 1024, Duration::ZERO).unwrap();
    metrics.count_dropped_log_lines(writer.dropped_lines());
    let text = metrics.encode();
    let mut series = BTreeSet::new();
    for typed in text.lines().filter_map(|line| line.strip_prefix("# TYPE ")) {
        let (family, kind) = typed.split_once(' ').unwrap();
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "gauge" => &[""],
            "histogram" => &["_bucket", "_sum", "_count"],
            other => panic!("{family} is a {other}: which series does Prometheus store it as?"),
        };
        series.extend(suffixes.iter().map(|suffix| format!("{family}{suffix}")));
    }
    assert!(series.len() > 20, "{text}");
    series
}

/// PromQL's aggregation operators and keywords: identifiers that are not metrics.
const KEYWORDS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "atan2",
    "inf",
    "nan",
];
/// Keywords whose parenthesis, when one follows, lists labels.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The metric names a PromQL expression reads: its identifiers that are neither
/// functions, aggregations, keywords nor labels. Skipped: strings, label
/// matchers (`{...}`), ranges and subqueries (`[...]`), numbers and durations
/// (`1e-9`, `offset 5m`), Grafana's variables (`$pod`, `${pod}`) and the label
/// lists of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    assert!(!expr.contains("__name__"), "a metric selected by __name__ is not read here: {expr}");
    let chars: Vec<char> = expr.chars().collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    // The index just past the string, bracket or parenthesis that opens at `at`.
    let past = |at: usize| {
        let (open, close) = (
            chars[at],
            match chars[at] {
                '{' => '}',
                '[' => ']',
                '(' => ')',
                quote => quote,
            },
        );
        let (mut depth, mut i, mut quoted) = (0, at, None::<char>);
        while i < chars.len() {
            let c = chars[i];
            match quoted {
                Some(_) if c == '\\' => i += 1,
                Some(q) if c == q => {
                    quoted = None;
                    if open == q {
                        return i + 1;
                    }
                }
                Some(_) => {}
                None if open != close && c == open => depth += 1,
                None if open != close && c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                None if matches!(c, '"' | '\'' | '`') => quoted = Some(c),
                None => {}
            }
            i += 1;
        }
        panic!("unclosed {open} at {at} in {expr}");
    };
    let next_char = |from: usize| (from..chars.len()).map(|i| (i, chars[i])).find(|(_, c)| !c.is_whitespace());
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i = match c {
            '"' | '\'' | '`' | '{' | '[' => past(i),
            '#' => chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |n| i + n),
            '$' if chars.get(i + 1) == Some(&'{') => past(i + 1),
            '$' => (i + 1..chars.len()).find(|&j| !word(chars[j])).unwrap_or(chars.len()),
            // A number or a duration: 7, 0.99, 1e-9, 0x1f, 5m, 1h30m.
            _ if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) => {
                let mut j = i + 1;
                while j < chars.len()
                    && (word(chars[j])
                        || chars[j] == '.'
                        || (matches!(chars[j], '+' | '-')
                            && matches!(chars[j - 1], 'e' | 'E')
                            && !chars[i..j].contains(&'x')))
                {
                    j += 1;
                }
                j
            }
            _ if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let end = (i..chars.len()).find(|&j| !word(chars[j])).unwrap_or(chars.len());
                let ident: String = chars[i..end].iter().collect();
                let keyword = ident.to_ascii_lowercase();
                match next_char(end) {
                    Some((paren, '(')) if LABEL_LISTS.contains(&keyword.as_str()) => past(paren),
                    // A function, or an aggregation without a label list.
                    Some((_, '(')) => end,
                    _ if KEYWORDS.contains(&keyword.as_str()) => end,
                    _ => {
                        names.insert(ident);
                        end
                    }
                }
            }
            _ => i + 1,
        };
    }
    names
}

#[test]
fn metric_names_are_told_from_functions_keywords_labels_and_variables() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"histogram_quantile(0.99, sum by (le, webhook) (rate(m_bucket{webhook="validate", le!="+Inf"}[5m]))) > 0.1"#,
            &["m_bucket"],
        ),
        (
            "sum(rate(a_total[$__rate_interval])) by (pod) / on (pod) group_left () b offset 5m > bool 1e-9 or vector(0)",
            &["a_total", "b"],
        ),
        (r#"label_replace(c{x=~"a|b", pod=~"${pod}"}, "namespace", "$1", "exported_namespace", "(.+)")"#, &["c"]),
        ("max_over_time(d[1h:5m]) unless e * on (pod) group_left f", &["d", "e", "f"]),
        ("min(g) - time() < 7 * 86400", &["g"]),
        ("SUM WITHOUT (pod) (h) AND count(i) BY (x) > 0x1F", &["h", "i"]),
        (r#"topk(5, j{a="}", b="{\"x"}) + k:recorded:rate5m"#, &["j", "k:recorded:rate5m"]),
    ];
    for (expr, expected) in cases {
        let expected: BTreeSet<String> = expected.iter().map(ToString::to_string).collect();
        assert_eq!(metric_names(expr), expected, "{expr}");
    }
}

/// Every metric the shipped alerts read is one the server exports.
#[test]
fn the_alerts_read_exported_metrics() {
    let exported = exported_series();
    let rule: serde_yaml::Value = serde_yaml::from_str(RULES).unwrap();
    let mut read = BTreeSet::new();
    for group in rule["spec"]["groups"].as_sequence().unwrap() {
        for rule in group["rules"].as_sequence().unwrap() {
            let (name, expr) = (rule["alert"].as_str().unwrap(), rule["expr"].as_str().unwrap());
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{name} reads no metric: {expr}");
            for metric in names {
                assert!(exported.contains(&metric), "{name} reads {metric}, which is not exported: {exported:?}");
                read.insert(metric);
            }
        }
    }
    assert!(read.len() >= 8, "the rules read {read:?}");
}

/// The dashboard's panels, those inside rows included; not the rows.
fn panels(items: &Value) -> Vec<&Value> {
    let mut found = Vec::new();
    for panel in items.as_array().unwrap() {
        if panel["type"] != "row" {
            found.push(panel);
        }
        if let Some(inner) = panel.get("panels") {
            found.extend(panels(inner));
        }
    }
    found
}

/// Every panel of the shipped Grafana dashboard has a title and a query, and
/// every metric its queries (and its variables') read is one the server exports.
#[test]
fn the_dashboard_reads_exported_metrics() {
    let exported = exported_series();
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        variables.iter().any(|v| v["name"] == "datasource" && v["type"] == "datasource" && v["query"] == "prometheus"),
        "no datasource variable of type prometheus: {variables:?}"
    );
    let mut read = BTreeSet::new();
    let mut check = |place: &str, expr: &str| {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{place} reads no metric: {expr}");
        for metric in names {
            assert!(exported.contains(&metric), "{place} reads {metric}, which is not exported: {exported:?}");
            read.insert(metric);
        }
    };
    for variable in variables.iter().filter(|v| v["type"] == "query") {
        let query = variable["query"]["query"].as_str().unwrap();
        // label_values(SELECTOR, LABEL): Grafana's, not PromQL.
        let selector = query.strip_prefix("label_values(").and_then(|q| q.rsplit_once(',')).map(|(s, _)| s);
        check(&format!("variable {}", variable["name"]), selector.unwrap_or(query));
    }
    let panels = panels(&dashboard["panels"]);
    assert!(panels.len() >= 20, "{} panels", panels.len());
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or_default();
        assert!(!title.trim().is_empty(), "a panel has no title: {panel}");
        let targets = panel["targets"].as_array().map(Vec::as_slice).unwrap_or_default();
        assert!(!targets.is_empty(), "panel {title:?} has no target");
        for target in targets {
            assert_eq!(target["datasource"]["uid"], "${datasource}", "panel {title:?}");
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(!expr.trim().is_empty(), "panel {title:?} has a target without expr");
            check(&format!("panel {title:?}"), expr);
        }
    }
    assert!(read.len() >= 25, "the dashboard reads {read:?}");
}
