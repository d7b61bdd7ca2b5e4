//! API rules that hold for Windows pods: forbidden Linux-only fields and
//! HostProcess consistency.

use serde_json::{Map, Value};

use crate::input::pod::{host_process, PodView};
use crate::vocab::diagnostics::{Code, Diagnostic};

/// When `validateWindows` (kubernetes pkg/apis/core/validation/validation.go)
/// counts a field as set. It checks the internal API's types, into which the
/// v1 pod spec's host namespace fields are converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetWhen {
    /// A pointer, struct or list (`!= nil`): any value but null, even false,
    /// 0 or empty.
    Present,
    /// A plain bool of the internal API (`HostPID`, `HostIPC`): only true.
    True,
    /// Tested with `len(...) > 0`: a non-empty list.
    NonEmpty,
}

use SetWhen::{NonEmpty, Present, True};

/// `spec` fields: `HostPID`/`HostIPC` are bools of the internal
/// PodSecurityContext, `HostUsers`/`ShareProcessNamespace` pointers.
const POD_FIELDS: &[(&str, SetWhen)] = &[
    ("hostUsers", Present),
    ("hostPID", True),
    ("hostIPC", True),
    ("shareProcessNamespace", Present),
];
/// Whether the Windows rules read the pod-spec field `name`.
pub(crate) fn reads_pod_field(name: &str) -> bool {
    POD_FIELDS.iter().any(|(field, _)| *field == name)
}
const POD_SECURITY_CONTEXT_FIELDS: &[(&str, SetWhen)] = &[
    ("appArmorProfile", Present),
    ("seLinuxOptions", Present),
    ("seccompProfile", Present),
    ("fsGroup", Present),
    ("fsGroupChangePolicy", Present),
    ("sysctls", NonEmpty),
    ("runAsUser", Present),
    ("runAsGroup", Present),
    ("supplementalGroups", Present),
    ("supplementalGroupsPolicy", Present),
    ("seLinuxChangePolicy", Present),
];
/// Every container, init and ephemeral ones included (VisitContainersWithPath).
const CONTAINER_SECURITY_CONTEXT_FIELDS: &[(&str, SetWhen)] = &[
    ("appArmorProfile", Present),
    ("seLinuxOptions", Present),
    ("seccompProfile", Present),
    ("capabilities", Present),
    ("readOnlyRootFilesystem", Present),
    ("privileged", Present),
    ("allowPrivilegeEscalation", Present),
    ("procMount", Present),
    ("runAsUser", Present),
    ("runAsGroup", Present),
];

/// One forbidden field the pod sets.
struct Found {
    path: String,
    field: &'static str,
    rule: SetWhen,
    value: &'static str,
}

/// Fields the API forbids once `spec.os.name` is windows. With `enforced`
/// they are violations; otherwise warnings, since the API accepts them
/// (and Windows ignores them) while `spec.os` is unset.
pub fn forbidden_fields(pod: &PodView<'_>, enforced: bool) -> Vec<Diagnostic> {
    let mut found = set_fields(pod.raw, POD_FIELDS, |f| pod.field(f).display().to_string());
    if let Some(sc) = pod.security_context {
        let base = pod.field("securityContext");
        found.extend(set_fields(sc, POD_SECURITY_CONTEXT_FIELDS, |f| {
            base.field(f).display().to_string()
        }));
    }
    for container in &pod.containers {
        if let Some(sc) = container.security_context {
            let base = container.path.field("securityContext");
            found.extend(set_fields(sc, CONTAINER_SECURITY_CONTEXT_FIELDS, |f| {
                base.field(f).display().to_string()
            }));
        }
    }
    found.iter().map(|f| diagnostic(f, enforced)).collect()
}

fn diagnostic(found: &Found, enforced: bool) -> Diagnostic {
    let message = match (enforced, found.value) {
        (true, "") => "is forbidden for Windows pods, and this pod has or is given spec.os.name: windows".to_string(),
        (true, value) => format!("is forbidden for Windows pods even when {value}, and this pod has or is given spec.os.name: windows"),
        (false, _) => "is Linux-only: Windows ignores it; the API rejects it once spec.os.name is windows".to_string(),
    };
    let fix = match (found.field, found.rule) {
        ("runAsUser" | "runAsGroup", _) => {
            "remove it; on Windows use securityContext.windowsOptions.runAsUserName"
        }
        (_, True) => "remove it or set it to false",
        _ => "remove it",
    };
    Diagnostic::new(Code::ForbiddenField, &found.path, message, fix)
}

fn set_fields(
    map: &Map<String, Value>,
    fields: &'static [(&'static str, SetWhen)],
    path: impl Fn(&str) -> String,
) -> Vec<Found> {
    fields
        .iter()
        .filter_map(|&(field, rule)| {
            let value = map.get(field)?;
            let set = match rule {
                Present => !value.is_null(),
                True => value.as_bool() == Some(true),
                NonEmpty => value.as_array().is_some_and(|items| !items.is_empty()),
            };
            set.then(|| Found {
                path: path(field),
                field,
                rule,
                value: unremarkable(value),
            })
        })
        .collect()
}

/// How a value that looks harmless reads in a message ("false", "empty"),
/// so users see that the API forbids it anyway; "" for other values.
fn unremarkable(value: &Value) -> &'static str {
    match value {
        Value::Bool(false) => "false",
        Value::Number(n) if n.as_i64() == Some(0) => "0",
        Value::String(s) if s.is_empty() => "empty",
        Value::Array(items) if items.is_empty() => "empty",
        Value::Object(map) if map.is_empty() => "empty",
        _ => "",
    }
}

/// HostProcess rules: all containers or none, pod and container agree,
/// and the host network.
pub fn host_process_rules(pod: &PodView<'_>) -> Vec<Diagnostic> {
    if !pod.is_host_process() {
        return Vec::new();
    }
    let mut found = Vec::new();
    let pod_value = host_process(&pod.windows_options);
    for container in &pod.containers {
        let own = host_process(&container.windows_options);
        let path = container
            .path
            .field("securityContext")
            .field("windowsOptions")
            .field("hostProcess");
        match (pod_value, own) {
            (Some(p), Some(c)) if p != c => found.push(Diagnostic::new(
                Code::HostProcess,
                path.display(),
                format!("is {c} but the pod's securityContext.windowsOptions.hostProcess is {p}"),
                "make the container and pod values agree",
            )),
            _ if own.or(pod_value) != Some(true) => found.push(Diagnostic::new(
                Code::HostProcess,
                path.display(),
                "is not true while other containers of the pod are HostProcess",
                "set hostProcess: true on every container, or once in the pod's securityContext.windowsOptions",
            )),
            _ => {}
        }
    }
    if pod.host_network != Some(true) {
        found.push(Diagnostic::new(
            Code::HostProcess,
            pod.field("hostNetwork").display(),
            "HostProcess pods must use the host network",
            "set hostNetwork: true",
        ));
    }
    found
}
