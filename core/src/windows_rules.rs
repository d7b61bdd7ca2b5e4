//! API rules that hold for Windows pods: forbidden Linux-only fields and
//! HostProcess consistency.

use serde_json::{Map, Value};

use crate::diagnostics::{Code, Diagnostic};
use crate::spec::{host_process, PodView};

const POD_SECURITY_CONTEXT_FIELDS: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "fsGroup",
    "fsGroupChangePolicy",
    "sysctls",
    "runAsUser",
    "runAsGroup",
    "supplementalGroups",
    "supplementalGroupsPolicy",
    "seLinuxChangePolicy",
];
const POD_FIELDS: &[&str] = &["hostUsers", "hostPID", "hostIPC", "shareProcessNamespace"];
const CONTAINER_SECURITY_CONTEXT_FIELDS: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
];

/// Fields the API forbids once `spec.os.name` is windows. With `enforced`
/// they are violations; otherwise warnings, since the API accepts them
/// (and Windows ignores them) while `spec.os` is unset.
pub fn forbidden_fields(pod: &PodView<'_>, enforced: bool) -> Vec<Diagnostic> {
    let mut paths = Vec::new();
    for field in POD_FIELDS {
        if is_set(pod.raw, field) {
            paths.push(pod.field(field).display().to_string());
        }
    }
    if let Some(sc) = pod.security_context {
        let base = pod.field("securityContext");
        paths.extend(
            set_fields(sc, POD_SECURITY_CONTEXT_FIELDS)
                .map(|f| base.field(f).display().to_string()),
        );
    }
    for container in &pod.containers {
        if let Some(sc) = container.security_context {
            let base = container.path.field("securityContext");
            paths.extend(
                set_fields(sc, CONTAINER_SECURITY_CONTEXT_FIELDS)
                    .map(|f| base.field(f).display().to_string()),
            );
        }
    }
    paths
        .into_iter()
        .map(|path| {
            let fix = if path.ends_with(".runAsUser") || path.ends_with(".runAsGroup") {
                "remove it; Windows pods choose their user with securityContext.windowsOptions.runAsUserName"
            } else {
                "remove it: it is a Linux-only field"
            };
            let message = if enforced {
                "is forbidden for Windows pods, and this pod has or is given spec.os.name: windows"
            } else {
                "is a Linux-only field on a Windows pod: Windows ignores it, and the API rejects it once spec.os.name is windows"
            };
            Diagnostic::new(Code::ForbiddenField, path, message, fix)
        })
        .collect()
}

fn is_set(map: &Map<String, Value>, field: &str) -> bool {
    map.get(field).is_some_and(|v| !v.is_null())
}

fn set_fields<'m>(
    map: &'m Map<String, Value>,
    fields: &'static [&'static str],
) -> impl Iterator<Item = &'static str> + 'm {
    fields.iter().copied().filter(|f| is_set(map, f))
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
