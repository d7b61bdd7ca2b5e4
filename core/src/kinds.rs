//! The kinds the policy handles and where each keeps its pod spec.

use crate::patch::escape_token;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    ReplicationController,
    Job,
    CronJob,
}

pub const SUPPORTED_KINDS: &str =
    "Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job, CronJob";

impl Kind {
    pub fn parse(kind: &str) -> Option<Kind> {
        Some(match kind {
            "Pod" => Kind::Pod,
            "Deployment" => Kind::Deployment,
            "ReplicaSet" => Kind::ReplicaSet,
            "StatefulSet" => Kind::StatefulSet,
            "DaemonSet" => Kind::DaemonSet,
            "ReplicationController" => Kind::ReplicationController,
            "Job" => Kind::Job,
            "CronJob" => Kind::CronJob,
            _ => return None,
        })
    }

    /// The API group the kind belongs to (`""` for the core group), as in
    /// its `apiVersion` (`apps/v1`, `batch/v1`, `v1`).
    pub fn api_group(self) -> &'static str {
        match self {
            Kind::Pod | Kind::ReplicationController => "",
            Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet | Kind::DaemonSet => "apps",
            Kind::Job | Kind::CronJob => "batch",
        }
    }

    /// Fields leading from the object to its pod spec.
    pub fn pod_spec_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Pod => &["spec"],
            Kind::CronJob => &["spec", "jobTemplate", "spec", "template", "spec"],
            _ => &["spec", "template", "spec"],
        }
    }
}

/// A field path in both forms: for messages and as a JSON Pointer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath {
    display: String,
    pointer: String,
}

impl FieldPath {
    pub fn root() -> FieldPath {
        FieldPath::default()
    }

    pub fn field(&self, name: &str) -> FieldPath {
        FieldPath {
            display: if self.display.is_empty() {
                name.to_string()
            } else {
                format!("{}.{name}", self.display)
            },
            pointer: format!("{}/{}", self.pointer, escape_token(name)),
        }
    }

    pub fn index(&self, i: usize) -> FieldPath {
        FieldPath {
            display: format!("{}[{i}]", self.display),
            pointer: format!("{}/{i}", self.pointer),
        }
    }

    /// A map entry: `nodeSelector[kubernetes.io/os]`.
    pub fn key(&self, key: &str) -> FieldPath {
        // Keep one violation on one line whatever the key holds.
        let shown = if key.chars().any(|c| c.is_control() || c == ']') {
            format!("{key:?}")
        } else {
            key.to_string()
        };
        FieldPath {
            display: format!("{}[{shown}]", self.display),
            pointer: format!("{}/{}", self.pointer, escape_token(key)),
        }
    }

    pub fn display(&self) -> &str {
        &self.display
    }

    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn kinds_parse() {
        assert_eq!(Kind::parse("DaemonSet"), Some(Kind::DaemonSet));
        assert_eq!(Kind::parse("daemonset"), None);
        assert_eq!(Kind::parse("ConfigMap"), None);
        assert_eq!(Kind::Pod.pod_spec_fields(), &["spec"]);
    }
}
