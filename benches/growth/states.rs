//! The states of the growth benchmark, generated: a platform of `cluster_queues`
//! ClusterQueues, half of them in one deep cohort tree (root, middle and leaf
//! Cohorts) and the rest in trees of five, `namespaces` Namespaces each with a
//! LocalQueue, and `classes` WorkloadPriorityClasses and as many PriorityClasses.
//!
//! The review is an EvalHub Job in `team-0`, whose LocalQueue points at `cq-0`
//! in the deep tree: it can borrow there, and ClusterQueues across that tree
//! reclaim from lower priorities, so it is `preemptible` at every size and the
//! ways out (a priority nothing outranks) are searched.

#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub cluster_queues: usize,
    pub namespaces: usize,
    pub classes: usize,
}

impl Size {
    pub fn label(&self) -> String {
        let (queues, namespaces, classes) =
            (thousands(self.cluster_queues), thousands(self.namespaces), thousands(self.classes));
        format!("{queues} ClusterQueues, {namespaces} namespaces, {classes} + {classes} classes")
    }
}

/// 10000 as "10,000".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// How many Cohorts the deep tree of `members` ClusterQueues has: a leaf per
/// one and a half queues, a middle per 16 leaves, and the root.
fn deep_tree(members: usize) -> (usize, usize) {
    let leaves = (members * 2 / 3).max(1);
    (leaves, leaves.div_ceil(16))
}

pub fn cohorts(size: Size) -> usize {
    let deep = size.cluster_queues.div_ceil(2);
    let (leaves, middles) = deep_tree(deep);
    leaves + middles + 1 + (size.cluster_queues - deep).div_ceil(5)
}

/// The state file.
pub fn state_file(size: Size) -> String {
    let mut yaml = String::with_capacity(size.namespaces * 500 + size.cluster_queues * 900);
    let document = |yaml: &mut String, text: String| {
        yaml.push_str("---\n");
        yaml.push_str(&text);
        yaml.push('\n');
    };
    document(
        &mut yaml,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default-flavor}".into(),
    );
    let deep = size.cluster_queues.div_ceil(2);
    let (leaves, middles) = deep_tree(deep);
    document(&mut yaml, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: deep}".into());
    for middle in 0..middles {
        document(
            &mut yaml,
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: middle-{middle}}}\nspec: {{parentName: deep}}"
            ),
        );
    }
    for leaf in 0..leaves {
        document(
            &mut yaml,
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: leaf-{leaf}}}\nspec: {{parentName: middle-{}}}",
                leaf % middles
            ),
        );
    }
    for queue in 0..size.cluster_queues {
        let cohort =
            if queue < deep { format!("leaf-{}", queue % leaves) } else { format!("small-{}", (queue - deep) / 5) };
        // cq-0 preempts nothing itself; across the tree every third queue
        // reclaims from lower priorities; none reclaims from any priority, so
        // only a priority nothing outranks is safe.
        let (within, reclaim) = match queue {
            0 => ("Never", "Never"),
            _ if queue % 3 == 0 => ("LowerPriority", "LowerPriority"),
            _ => ("Never", "Never"),
        };
        let limits = match queue % 4 {
            1 => ", borrowingLimit: 2",
            2 => ", lendingLimit: 1",
            _ => "",
        };
        document(
            &mut yaml,
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cq-{queue}}}\nspec:\n  cohortName: {cohort}\n  \
                 namespaceSelector: {{matchLabels: {{tier: tier-{}}}}}\n  \
                 preemption: {{withinClusterQueue: {within}, reclaimWithinCohort: {reclaim}}}\n  resourceGroups:\n  \
                 - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n    - name: default-flavor\n      resources:\n      \
                 - {{name: cpu, nominalQuota: 8{limits}}}\n      - {{name: memory, nominalQuota: 64Gi}}\n      \
                 - {{name: nvidia.com/gpu, nominalQuota: 2}}",
                queue % 4
            ),
        );
    }
    for class in 0..size.classes {
        document(
            &mut yaml,
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {{name: wpc-{class}}}\nvalue: {}",
                class * 10
            ),
        );
        document(
            &mut yaml,
            format!(
                "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: pc-{class}}}\nvalue: {}",
                class * 10 + 5
            ),
        );
    }
    for ns in 0..size.namespaces {
        let queue = if ns == 0 { 0 } else { ns % size.cluster_queues };
        document(
            &mut yaml,
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-{ns}\n  labels: {{tier: tier-{}, kubernetes.io/metadata.name: team-{ns}}}\n---\n\
                 apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: eval-queue, namespace: team-{ns}}}\nspec: {{clusterQueue: cq-{queue}}}",
                queue % 4
            ),
        );
    }
    yaml
}

/// The same state with ClusterQueue `cq-1` changed: its cpu quota set to `cpu`.
pub fn changed_queue(size: Size, cpu: u32) -> String {
    let deep = size.cluster_queues.div_ceil(2);
    let (leaves, _) = deep_tree(deep);
    format!(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cq-1}}\nspec:\n  cohortName: leaf-{}\n  \
         namespaceSelector: {{matchLabels: {{tier: tier-1}}}}\n  resourceGroups:\n  \
         - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n    - name: default-flavor\n      resources:\n      \
         - {{name: cpu, nominalQuota: {cpu}}}\n      - {{name: memory, nominalQuota: 64Gi}}\n      \
         - {{name: nvidia.com/gpu, nominalQuota: 2}}",
        1 % leaves
    )
}
