//! The priorities a user can name, sorted once per change: WorkloadPriorityClasses
//! and PriorityClasses (system ones too: Kueue ranks a Workload before its pods
//! exist), highest first.

use std::fmt;

use super::ClusterView;
use crate::vocabulary::kueue::PRIORITY_CLASS_LABEL;

/// A priority class a user can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityClassRef {
    pub kind: ClassKind,
    pub name: String,
    pub value: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    WorkloadPriorityClass,
    PriorityClass,
}

impl fmt::Display for PriorityClassRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ClassKind::WorkloadPriorityClass => "WorkloadPriorityClass",
            ClassKind::PriorityClass => "PriorityClass",
        };
        write!(f, "{kind} '{}' ({})", self.name, self.value)
    }
}

impl PriorityClassRef {
    /// How a user puts this class on a workload.
    pub fn how_to_use(&self) -> String {
        match self.kind {
            ClassKind::WorkloadPriorityClass => {
                format!("label {PRIORITY_CLASS_LABEL}: {}", self.name)
            }
            ClassKind::PriorityClass => {
                format!("priorityClassName: {} in the pod template", self.name)
            }
        }
    }
}

/// Every priority the view's classes give, highest first (by name among equals).
pub fn sorted(view: &(impl ClusterView + ?Sized)) -> Vec<PriorityClassRef> {
    let mut all: Vec<PriorityClassRef> = view
        .workload_priority_classes()
        .map(|(name, value)| PriorityClassRef { kind: ClassKind::WorkloadPriorityClass, name: name.to_string(), value })
        .chain(view.priority_classes().map(|(name, class)| PriorityClassRef {
            kind: ClassKind::PriorityClass,
            name: name.to_string(),
            value: class.value,
        }))
        .collect();
    all.sort_by(|a, b| b.value.cmp(&a.value).then(a.name.cmp(&b.name)));
    all
}

/// In a list [`sorted`] made, the lowest priority above `priority` (the last
/// by name among equals), if any: the likeliest preemptor.
pub fn lowest_above(sorted: &[PriorityClassRef], priority: i32) -> Option<&PriorityClassRef> {
    let above = sorted.partition_point(|class| class.value > priority);
    above.checked_sub(1).map(|last| &sorted[last])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_class_above_is_found_by_halving() {
        let class = |name: &str, value| PriorityClassRef { kind: ClassKind::PriorityClass, name: name.into(), value };
        let sorted = [class("a", 30), class("b", 20), class("c", 20), class("d", 10)];
        let name = |priority| lowest_above(&sorted, priority).map(|c| c.name.as_str());
        // What a walk up from the lowest finds first: among equals, the last by name.
        let walked = |priority| sorted.iter().rev().find(|c| c.value > priority).map(|c| c.name.as_str());
        for priority in [i32::MIN, 0, 9, 10, 11, 19, 20, 25, 29, 30, 31, i32::MAX] {
            assert_eq!(name(priority), walked(priority), "{priority}");
        }
        assert_eq!(name(10), Some("c"));
        assert_eq!(name(30), None);
        assert_eq!(lowest_above(&[], 0), None);
    }
}
