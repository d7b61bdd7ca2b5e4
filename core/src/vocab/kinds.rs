//! The kinds the policy handles and where each keeps its pod spec.

use crate::vocab::patch::push_escaped;

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
            display: self.field_text(name),
            pointer: self.child_pointer(name),
        }
    }

    pub fn index(&self, i: usize) -> FieldPath {
        let digits = i.to_string();
        let mut display = String::with_capacity(self.display.len() + 2 + digits.len());
        display.push_str(&self.display);
        display.push('[');
        display.push_str(&digits);
        display.push(']');
        FieldPath {
            display,
            pointer: self.child_pointer(&digits),
        }
    }

    /// A map entry: `nodeSelector[kubernetes.io/os]`.
    pub fn key(&self, key: &str) -> FieldPath {
        let mut display = String::with_capacity(self.display.len() + 2 + key.len());
        display.push_str(&self.display);
        push_key(&mut display, key);
        FieldPath {
            display,
            pointer: self.child_pointer(key),
        }
    }

    /// Only the message form of `self.field(name)`, for what is never
    /// patched (signals, diagnostics). `name` may hold dots: `os.name`.
    pub fn field_text(&self, name: &str) -> String {
        let mut display = String::with_capacity(self.display.len() + 1 + name.len());
        display.push_str(&self.display);
        if !display.is_empty() {
            display.push('.');
        }
        display.push_str(name);
        display
    }

    fn child_pointer(&self, token: &str) -> String {
        let mut pointer = String::with_capacity(self.pointer.len() + 1 + token.len());
        pointer.push_str(&self.pointer);
        pointer.push('/');
        push_escaped(&mut pointer, token);
        pointer
    }

    pub fn display(&self) -> &str {
        &self.display
    }

    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

/// Appends a map entry's `[key]` to a message path, quoted when the key
/// holds a control character or `]`, so one violation stays on one line.
pub fn push_key(display: &mut String, key: &str) {
    display.push('[');
    if key.chars().any(|c| c.is_control() || c == ']') {
        display.push_str(&format!("{key:?}"));
    } else {
        display.push_str(key);
    }
    display.push(']');
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
