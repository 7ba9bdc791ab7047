//! The first check of every evaluation: that it is within what a review reads
//! ([`crate::workload::size`]). Over a cap, the workload is refused with 400
//! and the cap named, before any rule walks its lists; no enforcement mode
//! applies, since letting it through unreviewed would skip every rule.

use super::verdict::{Denial, Subject};
use crate::vocabulary::reason::Reason;
use crate::workload::Workload;

pub fn check_size(subject: Subject<'_>, old: Option<&Workload>) -> Result<(), Denial> {
    let oversize = subject.workload.oversize(subject.kind).map(|over| (over, ""));
    let oversize = oversize.or_else(|| old?.oversize(subject.kind).map(|over| (over, "the object it replaces: ")));
    let Some((over, which)) = oversize else { return Ok(()) };
    Err(Denial::new(
        Reason::TooLargeToReview,
        format!(
            "{subject} was not reviewed: {which}{over}. To fix: split the work into more pods or workloads, each \
             within that cap."
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadKind;
    use serde_json::json;

    #[test]
    fn an_oversized_workload_or_the_one_it_replaces_is_named() {
        let pods = |count: usize| {
            let containers = vec![json!({}); count];
            serde_json::from_value::<Workload>(json!({
                "metadata": {"name": "big"},
                "spec": {"template": {"spec": {"containers": containers}}}
            }))
            .unwrap()
        };
        let (small, big) = (pods(1), pods(crate::workload::size::MOST_CONTAINERS + 1));
        let subject = |workload| Subject { kind: WorkloadKind::Job, namespace: "team-a", workload };
        assert!(check_size(subject(&small), Some(&small)).is_ok());
        let denial = check_size(subject(&big), None).unwrap_err();
        assert_eq!(denial.reason, Reason::TooLargeToReview);
        let most = crate::workload::size::MOST_CONTAINERS;
        let named = format!("has {} containers and init containers, more than the {most}", most + 1);
        assert!(denial.message.contains(&named), "{}", denial.message);
        let replaced = check_size(subject(&small), Some(&big)).unwrap_err();
        assert!(
            replaced.message.contains(&format!("the object it replaces: spec.template.spec has {}", most + 1)),
            "{}",
            replaced.message
        );
    }
}
