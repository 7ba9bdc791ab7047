//! The cohort trees as an index, derived once per change: each Cohort's
//! children and each Cohort's root, so a walk of a tree visits only the tree
//! (Kueue builds the same links in its cache: `hierarchy.Manager`).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{ClusterQueue, Cohort};

/// A Cohort's children, each list in name order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Children<'a> {
    pub cohorts: &'a [String],
    pub queues: &'a [String],
}

#[derive(Debug, Clone, Default)]
struct Links {
    cohorts: Vec<String>,
    queues: Vec<String>,
}

/// Every cohort named anywhere (a Cohort object, a `parentName` or a
/// ClusterQueue's `cohortName`): its children and its root.
#[derive(Debug, Clone, Default)]
pub struct CohortTree {
    links: HashMap<String, Links>,
    roots: HashMap<String, String>,
    /// Cohorts on a cycle of parents: Kueue refuses such a tree, and what is
    /// counted there depends on where a walk enters it, so nothing of theirs is
    /// derived ahead.
    on_cycle: HashSet<String>,
    /// Per root, the cohorts and ClusterQueues of its tree, each in name order.
    members: HashMap<String, Members>,
}

#[derive(Debug, Clone, Default)]
struct Members {
    cohorts: Vec<String>,
    queues: Vec<String>,
}

impl CohortTree {
    pub fn build(queues: &BTreeMap<String, ClusterQueue>, cohorts: &BTreeMap<String, Cohort>) -> Self {
        let mut tree = Self::default();
        // BTreeMap order: each child list comes out in name order.
        for (name, cohort) in cohorts {
            tree.links.entry(name.clone()).or_default();
            if let Some(parent) = &cohort.parent {
                tree.links.entry(parent.clone()).or_default().cohorts.push(name.clone());
            }
        }
        for (name, queue) in queues {
            if let Some(cohort) = &queue.cohort {
                tree.links.entry(cohort.clone()).or_default().queues.push(name.clone());
            }
        }
        let parent = |name: &str| cohorts.get(name).and_then(|c| c.parent.as_deref());
        for name in tree.links.keys() {
            // Up the parents until one repeats: a cycle's walk stops where it closes.
            let mut path = vec![name.as_str()];
            let mut seen = HashSet::from([name.as_str()]);
            let mut current = name.as_str();
            while let Some(next) = parent(current) {
                if !seen.insert(next) {
                    let closes = path.iter().position(|c| *c == next).unwrap_or(0);
                    tree.on_cycle.extend(path[closes..].iter().map(|c| c.to_string()));
                    current = next;
                    break;
                }
                path.push(next);
                current = next;
            }
            tree.roots.insert(name.clone(), current.to_string());
        }
        // In name order, as the links are walked; a cohort's queues are its own.
        for (cohort, root) in &tree.roots {
            let members = tree.members.entry(root.clone()).or_default();
            members.cohorts.push(cohort.clone());
            members.queues.extend(tree.links[cohort].queues.iter().cloned());
        }
        for members in tree.members.values_mut() {
            members.cohorts.sort_unstable();
            members.queues.sort_unstable();
        }
        tree
    }

    pub fn children(&self, cohort: &str) -> Children<'_> {
        self.links
            .get(cohort)
            .map_or_else(Children::default, |links| Children { cohorts: &links.cohorts, queues: &links.queues })
    }

    /// The top of a cohort's tree (a cycle stops the walk where it closes).
    pub fn root(&self, cohort: &str) -> Option<&str> {
        self.roots.get(cohort).map(String::as_str)
    }

    pub fn on_cycle(&self, cohort: &str) -> bool {
        self.on_cycle.contains(cohort)
    }

    /// Every cohort named, in no order.
    pub fn cohorts(&self) -> impl Iterator<Item = &str> {
        self.links.keys().map(String::as_str)
    }

    /// The cohorts and ClusterQueues of the tree whose root is `root`, each in
    /// name order (with a cycle, a walk down from a root can reach cohorts
    /// whose walk up stops elsewhere: those are not its members).
    pub fn members(&self, root: &str) -> (&[String], &[String]) {
        self.members.get(root).map_or((&[], &[]), |members| (&members.cohorts, &members.queues))
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::{ClusterView, state_file};

    #[test]
    fn children_and_roots_follow_the_parents_and_a_cycle_is_marked() {
        let view = state_file::parse(
            b"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: mid}\nspec: {parentName: top}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\nspec: {cohortName: mid}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\nspec: {cohortName: mid}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c}\nspec: {cohortName: top}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: y}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: y}\nspec: {parentName: x}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: z}\nspec: {parentName: x}\n",
        )
        .unwrap();
        let tree = view.cohort_tree();
        assert_eq!(tree.children("mid").queues, ["a", "b"]);
        assert_eq!(tree.children("top").cohorts, ["mid"]);
        assert_eq!(tree.children("top").queues, ["c"]);
        assert!(tree.children("nowhere").queues.is_empty());
        assert_eq!(tree.root("mid"), Some("top"));
        assert_eq!(tree.root("top"), Some("top"));
        assert_eq!(tree.root("nowhere"), None);
        // The walk up from each cycle member stops where it closes.
        assert_eq!((tree.root("x"), tree.root("y"), tree.root("z")), (Some("x"), Some("y"), Some("x")));
        assert!(tree.on_cycle("x") && tree.on_cycle("y") && !tree.on_cycle("z") && !tree.on_cycle("top"));
        let (cohorts, queues) = tree.members("top");
        assert_eq!(
            (cohorts, queues),
            (&["mid".to_string(), "top".into()][..], &["a".to_string(), "b".into(), "c".into()][..])
        );
        assert_eq!(tree.members("x").0, ["x", "z"], "y's walk up stops at y");
        assert_eq!(tree.members("mid"), (&[][..], &[][..]), "not a root");
    }
}
