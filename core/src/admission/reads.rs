//! What of a request's object the rules read, field by field: an adapter
//! may leave every other field unread (opaque, passed through as written)
//! and get the same decision. One object shape covers every kind: a Pod's
//! `spec` and a workload's `spec` (with its `template` or `jobTemplate`)
//! never share a field the rules read.

use crate::input::pod::ContainerList;
use crate::placement::ownership::ADDED_ANNOTATION;
use crate::placement::windows_rules::reads_pod_field;

/// A place in an object whose fields the rules read one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadNode {
    /// The object itself.
    Object,
    /// `metadata`, of the object or of a template.
    Metadata,
    /// `metadata.annotations`: only the policy's record of what it added
    /// is read (`kubectl.kubernetes.io/last-applied-configuration`, often
    /// the largest field of an object, is not).
    Annotations,
    /// The object's `spec`: a Pod's pod spec, or a workload's spec.
    Spec,
    /// A CronJob's `spec.jobTemplate`.
    JobTemplate,
    /// A CronJob's `spec.jobTemplate.spec`.
    JobSpec,
    /// A workload's pod `template`.
    Template,
    /// A pod spec.
    PodSpec,
    /// An entry of `containers`, `initContainers` or `ephemeralContainers`.
    Container,
}

/// How the rules read one field. An array at an [`Read::Fields`] place
/// has each of its entries read by that place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// The whole value, as written.
    Whole,
    /// Some of the value's fields, as the place says.
    Fields(ReadNode),
    /// Nothing: the field never changes a decision and is never patched.
    Unread,
}

/// The pod-spec fields the rules read whole besides those the Windows API
/// rules check (`windows_rules::reads_pod_field`): the scheduling fields
/// and the pod's security context.
const POD_SPEC_WHOLE: &[&str] = &[
    "os",
    "nodeSelector",
    "affinity",
    "tolerations",
    "runtimeClassName",
    "nodeName",
    "hostNetwork",
    "securityContext",
];

/// The container fields the rules read whole.
const CONTAINER_WHOLE: &[&str] = &["name", "image", "securityContext"];

impl ReadNode {
    /// How the rules read the field `key` of a value at this place.
    pub fn field(self, key: &str) -> Read {
        use ReadNode::*;
        let whole_if = |read: bool| if read { Read::Whole } else { Read::Unread };
        match (self, key) {
            (Object, "apiVersion" | "kind") => Read::Whole,
            (Object | Template | JobTemplate, "metadata") => Read::Fields(Metadata),
            (Object, "spec") => Read::Fields(Spec),
            // Server-side apply's bookkeeping: the largest field, never read.
            (Metadata, "managedFields") => Read::Unread,
            (Metadata, "annotations") => Read::Fields(Annotations),
            (Metadata, _) => Read::Whole,
            (Annotations, key) => whole_if(key == ADDED_ANNOTATION),
            (Spec, "jobTemplate") => Read::Fields(JobTemplate),
            (Spec | JobSpec, "template") => Read::Fields(Template),
            (JobTemplate, "spec") => Read::Fields(JobSpec),
            (Template, "spec") => Read::Fields(PodSpec),
            (Spec | PodSpec, key) if ContainerList::ALL.iter().any(|l| l.field() == key) => {
                Read::Fields(Container)
            }
            (Spec | PodSpec, key) => {
                whole_if(POD_SPEC_WHOLE.contains(&key) || reads_pod_field(key))
            }
            (Container, key) => whole_if(CONTAINER_WHOLE.contains(&key)),
            _ => Read::Unread,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::kinds::Kind;

    /// The place the fields `path` lead to, from the object.
    fn place(path: &[&str]) -> Read {
        path.iter()
            .fold(Read::Fields(ReadNode::Object), |read, key| match read {
                Read::Fields(node) => node.field(key),
                other => other,
            })
    }

    #[test]
    fn every_kind_s_pod_spec_and_containers_are_read_field_by_field() {
        for kind in Kind::all() {
            let spec = kind.pod_spec_fields();
            let expected = if kind == Kind::Pod {
                ReadNode::Spec
            } else {
                ReadNode::PodSpec
            };
            assert_eq!(place(spec), Read::Fields(expected), "{kind:?}");
            for list in ContainerList::ALL {
                let path = [spec, &[list.field()]].concat();
                assert_eq!(place(&path), Read::Fields(ReadNode::Container), "{path:?}");
                for field in CONTAINER_WHOLE {
                    assert_eq!(place(&[&path[..], &[field]].concat()), Read::Whole);
                }
                let env = [&path[..], &["env"]].concat();
                assert_eq!(place(&env), Read::Unread, "{env:?}");
            }
            // The fields validateWindows checks (kubernetes pkg/apis/core/validation/validation.go).
            let windows = ["hostUsers", "hostPID", "hostIPC", "shareProcessNamespace"];
            for field in POD_SPEC_WHOLE.iter().chain(&windows) {
                let path = [spec, &[*field]].concat();
                assert_eq!(place(&path), Read::Whole, "{path:?}");
            }
            for unread in ["volumes", "dnsPolicy", "serviceAccountName"] {
                assert_eq!(place(&[spec, &[unread]].concat()), Read::Unread);
            }
        }
    }

    #[test]
    fn metadata_is_read_but_its_managed_fields_other_annotations_and_the_status_are_not() {
        for field in ["labels", "ownerReferences", "name", "generateName"] {
            assert_eq!(place(&["metadata", field]), Read::Whole);
            assert_eq!(place(&["spec", "template", "metadata", field]), Read::Whole);
        }
        assert_eq!(place(&["metadata", "managedFields"]), Read::Unread);
        for metadata in [&["metadata"][..], &["spec", "template", "metadata"]] {
            let annotation = |key| place(&[metadata, &["annotations", key]].concat());
            assert_eq!(annotation(ADDED_ANNOTATION), Read::Whole);
            assert_eq!(
                annotation("kubectl.kubernetes.io/last-applied-configuration"),
                Read::Unread
            );
        }
        assert_eq!(place(&["status"]), Read::Unread);
        assert_eq!(place(&["kind"]), Read::Whole);
        // A workload's own fields beside its template are not read.
        assert_eq!(place(&["spec", "replicas"]), Read::Unread);
        assert_eq!(
            place(&["spec", "jobTemplate", "spec", "parallelism"]),
            Read::Unread
        );
    }
}
