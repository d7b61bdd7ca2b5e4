//! The kinds the policy handles, their API group and where each keeps its
//! pod spec: one table, so a new kind is one row.

/// A kind whose objects carry a pod spec the policy places.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `v1` Pod: the pod spec at `spec`.
    Pod,
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `v1` ReplicationController.
    ReplicationController,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob: the pod spec at `spec.jobTemplate.spec.template.spec`.
    CronJob,
}

/// One row of the kinds table.
struct KindRow {
    kind: Kind,
    name: &'static str,
    group: &'static str,
    pod_spec: &'static [&'static str],
}

const TEMPLATE: &[&str] = &["spec", "template", "spec"];

/// Every kind the policy handles (the kinds `metadata.yml` rules select),
/// with its API group (`""` for the core group) and pod-spec path.
const KINDS: &[KindRow] = &[
    KindRow {
        kind: Kind::Pod,
        name: "Pod",
        group: "",
        pod_spec: &["spec"],
    },
    KindRow {
        kind: Kind::Deployment,
        name: "Deployment",
        group: "apps",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::ReplicaSet,
        name: "ReplicaSet",
        group: "apps",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::StatefulSet,
        name: "StatefulSet",
        group: "apps",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::DaemonSet,
        name: "DaemonSet",
        group: "apps",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::ReplicationController,
        name: "ReplicationController",
        group: "",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::Job,
        name: "Job",
        group: "batch",
        pod_spec: TEMPLATE,
    },
    KindRow {
        kind: Kind::CronJob,
        name: "CronJob",
        group: "batch",
        pod_spec: &["spec", "jobTemplate", "spec", "template", "spec"],
    },
];

/// The kinds, as messages list them.
pub const SUPPORTED_KINDS: &str =
    "Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job, CronJob";

impl Kind {
    /// Every kind the policy handles, in the table's order.
    pub fn all() -> impl Iterator<Item = Kind> {
        KINDS.iter().map(|row| row.kind)
    }

    /// The kind of `kind.kind` as the API spells it (case-sensitive).
    pub fn parse(kind: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|row| row.name == kind)
            .map(|row| row.kind)
    }

    /// The kind's row; every variant has one (a test checks).
    fn row(self) -> Option<&'static KindRow> {
        KINDS.iter().find(|row| row.kind == self)
    }

    /// The kind's name, e.g. `Deployment`.
    pub fn name(self) -> &'static str {
        self.row().map_or("", |row| row.name)
    }

    /// The API group the kind belongs to (`""` for the core group), as in
    /// its `apiVersion` (`apps/v1`, `batch/v1`, `v1`).
    pub fn api_group(self) -> &'static str {
        self.row().map_or("", |row| row.group)
    }

    /// Fields leading from the object to its pod spec.
    pub fn pod_spec_fields(self) -> &'static [&'static str] {
        self.row().map_or(&[], |row| row.pod_spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::field_path::FieldPath;

    #[test]
    fn paths_render_for_messages_and_pointers() {
        let spec = Kind::CronJob
            .pod_spec_fields()
            .iter()
            .fold(FieldPath::root(), |p, f| p.field(f));
        assert_eq!(spec.display(), "spec.jobTemplate.spec.template.spec");
        let entry = spec.field("nodeSelector").key("kubernetes.io/os");
        assert_eq!(
            entry.display(),
            "spec.jobTemplate.spec.template.spec.nodeSelector[kubernetes.io/os]"
        );
        assert_eq!(
            entry.pointer(),
            "/spec/jobTemplate/spec/template/spec/nodeSelector/kubernetes.io~1os"
        );
        assert_eq!(
            spec.field("containers").index(2).display(),
            "spec.jobTemplate.spec.template.spec.containers[2]"
        );
    }

    #[test]
    fn every_kind_has_one_row_and_the_message_lists_them_all() {
        let names: Vec<&str> = Kind::all().map(Kind::name).collect();
        assert_eq!(names.join(", "), SUPPORTED_KINDS);
        for kind in Kind::all() {
            assert_eq!(Kind::parse(kind.name()), Some(kind));
        }
        for kind in [
            Kind::Pod,
            Kind::Deployment,
            Kind::ReplicaSet,
            Kind::StatefulSet,
            Kind::DaemonSet,
            Kind::ReplicationController,
            Kind::Job,
            Kind::CronJob,
        ] {
            assert!(kind.row().is_some(), "{kind:?}");
        }
    }

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse("DaemonSet"), Some(Kind::DaemonSet));
        assert_eq!(Kind::parse("daemonset"), None);
        assert_eq!(Kind::parse("ConfigMap"), None);
        assert_eq!(Kind::Pod.pod_spec_fields(), &["spec"]);
    }
}
