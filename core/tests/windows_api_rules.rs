//! The fields the API server forbids on a Windows pod, exactly as
//! `validateWindows` in kubernetes pkg/apis/core/validation/validation.go
//! tests them (with `validatePodSpec` calling it once `spec.os.name` is
//! windows). Each check there is on the internal API's types:
//! - pointers, structs and lists are forbidden when set at all (`!= nil`),
//!   so `privileged: false`, `runAsUser: 0` or `seLinuxOptions: {}` count;
//! - `HostPID` and `HostIPC` are plain bools of the internal
//!   PodSecurityContext (pkg/apis/core/types.go; the v1 spec fields are
//!   converted into it by Convert_v1_PodSpec_To_core_PodSpec), so only
//!   `true` is forbidden; `HostUsers` and `ShareProcessNamespace` are
//!   pointers, forbidden even when false;
//! - `sysctls` is checked with `len(...) > 0`, so an empty list passes.
//!
//! JSON null decodes to a nil pointer, so null counts as absent.
//! Every field is tried with true, false, empty (the zero value of its type)
//! and absent, on every kind of container, in both enforcement modes.

use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::{Decision, Settings};
use serde_json::{json, Value};

/// Where a field lives in the pod spec.
#[derive(Debug, Clone, Copy)]
enum At {
    Pod,
    PodSecurityContext,
    ContainerSecurityContext,
}

/// One value tried on one field, and whether validateWindows rejects it.
struct Probe {
    at: At,
    field: &'static str,
    value: Value,
    forbidden: bool,
}

fn probe(at: At, field: &'static str, value: Value, forbidden: bool) -> Probe {
    Probe {
        at,
        field,
        value,
        forbidden,
    }
}

/// Every field validateWindows names, each with true, false and empty
/// values (or the nearest values of its type), written out from the source.
fn probes() -> Vec<Probe> {
    use At::*;
    let mut all = vec![
        // `securityContext.HostPID` / `.HostIPC`: `if securityContext.HostPID {`
        probe(Pod, "hostPID", json!(true), true),
        probe(Pod, "hostPID", json!(false), false),
        probe(Pod, "hostIPC", json!(true), true),
        probe(Pod, "hostIPC", json!(false), false),
        // `securityContext.HostUsers != nil`, `securityContext.ShareProcessNamespace != nil`
        probe(Pod, "hostUsers", json!(true), true),
        probe(Pod, "hostUsers", json!(false), true),
        probe(Pod, "shareProcessNamespace", json!(true), true),
        probe(Pod, "shareProcessNamespace", json!(false), true),
        // `len(securityContext.Sysctls) > 0`
        probe(
            PodSecurityContext,
            "sysctls",
            json!([{"name": "net.core.somaxconn", "value": "1024"}]),
            true,
        ),
        probe(PodSecurityContext, "sysctls", json!([]), false),
        // `securityContext.SupplementalGroups != nil`: a slice, so even [] is set.
        probe(
            PodSecurityContext,
            "supplementalGroups",
            json!([1000]),
            true,
        ),
        probe(PodSecurityContext, "supplementalGroups", json!([]), true),
    ];
    let pointers = [
        (
            "appArmorProfile",
            json!({"type": "RuntimeDefault"}),
            json!({}),
        ),
        ("seLinuxOptions", json!({"level": "s0:c1"}), json!({})),
        (
            "seccompProfile",
            json!({"type": "RuntimeDefault"}),
            json!({}),
        ),
        ("fsGroup", json!(2000), json!(0)),
        ("fsGroupChangePolicy", json!("OnRootMismatch"), json!("")),
        ("runAsUser", json!(1000), json!(0)),
        ("runAsGroup", json!(1000), json!(0)),
        ("supplementalGroupsPolicy", json!("Strict"), json!("")),
        ("seLinuxChangePolicy", json!("MountOption"), json!("")),
    ];
    for (field, set, zero) in pointers {
        all.push(probe(PodSecurityContext, field, set, true));
        all.push(probe(PodSecurityContext, field, zero, true));
    }
    let container_pointers = [
        (
            "appArmorProfile",
            json!({"type": "RuntimeDefault"}),
            json!({}),
        ),
        ("seLinuxOptions", json!({"level": "s0:c1"}), json!({})),
        (
            "seccompProfile",
            json!({"type": "RuntimeDefault"}),
            json!({}),
        ),
        ("capabilities", json!({"drop": ["ALL"]}), json!({})),
        ("readOnlyRootFilesystem", json!(true), json!(false)),
        ("privileged", json!(true), json!(false)),
        ("allowPrivilegeEscalation", json!(true), json!(false)),
        ("procMount", json!("Unmasked"), json!("")),
        ("runAsUser", json!(1000), json!(0)),
        ("runAsGroup", json!(1000), json!(0)),
    ];
    for (field, set, zero) in container_pointers {
        all.push(probe(ContainerSecurityContext, field, set, true));
        all.push(probe(ContainerSecurityContext, field, zero, true));
    }
    all
}

/// Fields a Windows pod may carry: validateWindows does not name them.
fn allowed_fields() -> Vec<Probe> {
    use At::*;
    vec![
        probe(Pod, "hostNetwork", json!(false), false),
        probe(PodSecurityContext, "runAsNonRoot", json!(true), false),
        probe(
            PodSecurityContext,
            "windowsOptions",
            json!({"runAsUserName": "ContainerUser"}),
            false,
        ),
        probe(
            ContainerSecurityContext,
            "runAsNonRoot",
            json!(false),
            false,
        ),
        probe(
            ContainerSecurityContext,
            "windowsOptions",
            json!({"runAsUserName": "ContainerAdministrator"}),
            false,
        ),
    ]
}

/// The container lists validateWindows visits (VisitContainersWithPath).
const LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// A Windows pod whose only unusual field is the probe, placed in `list`.
fn windows_pod(p: &Probe, list: &str, os_name: bool) -> (Value, String) {
    let mut spec = json!({
        "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"},
        "containers": [{"name": "app", "image": WIN2022}],
    });
    if os_name {
        spec["os"] = json!({"name": "windows"});
    }
    let path = match p.at {
        At::Pod => {
            spec[p.field] = p.value.clone();
            format!("spec.{}", p.field)
        }
        At::PodSecurityContext => {
            spec["securityContext"] = json!({ p.field: p.value });
            format!("spec.securityContext.{}", p.field)
        }
        At::ContainerSecurityContext => {
            let container =
                json!({"name": "x", "image": WIN2022, "securityContext": { p.field: p.value }});
            if list == "containers" {
                spec["containers"].as_array_mut().unwrap().push(container);
                format!("spec.containers[1].securityContext.{}", p.field)
            } else {
                spec[list] = json!([container]);
                format!("spec.{list}[0].securityContext.{}", p.field)
            }
        }
    };
    (pod(spec), path)
}

fn lists_for(p: &Probe) -> &'static [&'static str] {
    match p.at {
        At::ContainerSecurityContext => &LISTS,
        _ => &LISTS[..1],
    }
}

fn forbidden_paths(d: &Decision, warnings: bool) -> Vec<String> {
    let found = if warnings { &d.warnings } else { &d.violations };
    found
        .iter()
        .filter(|f| f.code.as_str() == "forbidden-field")
        .map(|f| f.path.clone())
        .collect()
}

/// With `spec.os.name: windows` the policy rejects exactly what the API
/// server rejects, and accepts the rest.
#[test]
fn with_os_name_windows_exactly_the_forbidden_values_are_rejected() {
    let mut failures = Vec::new();
    for p in probes().iter().chain(allowed_fields().iter()) {
        for list in lists_for(p) {
            let (object, path) = windows_pod(p, list, true);
            let d = create(&object, &Settings::default());
            let flagged = forbidden_paths(&d, false);
            let expected: Vec<String> = if p.forbidden {
                vec![path.clone()]
            } else {
                vec![]
            };
            if flagged != expected || d.accepted == p.forbidden {
                failures.push(format!(
                    "{path} = {}: expected forbidden={}, got {flagged:?}, accepted={}",
                    p.value, p.forbidden, d.accepted
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `setPodOS` would add `os.name: windows`, so the same values are
/// violations; the values the API accepts let the pod through and get
/// `spec.os.name` added.
#[test]
fn with_set_pod_os_the_same_values_are_rejected_and_the_rest_patched() {
    let s = settings(json!({"setPodOS": true}));
    let mut failures = Vec::new();
    for p in probes().iter().chain(allowed_fields().iter()) {
        for list in lists_for(p) {
            let (object, path) = windows_pod(p, list, false);
            let d = create(&object, &s);
            let flagged = forbidden_paths(&d, false);
            let ok = if p.forbidden {
                !d.accepted && flagged == vec![path.clone()]
            } else {
                d.accepted && op_value(&d, "/spec/os") == Some(&json!({"name": "windows"}))
            };
            if !ok {
                failures.push(format!(
                    "{path} = {}: forbidden={}, got accepted={} {flagged:?} patch {:?}",
                    p.value, p.forbidden, d.accepted, d.patch
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Without `spec.os` the API accepts the fields (Windows ignores them): the
/// policy warns about exactly the values it would reject, and accepts.
#[test]
fn without_pod_os_the_same_values_are_warnings_only() {
    let mut failures = Vec::new();
    for p in probes().iter().chain(allowed_fields().iter()) {
        for list in lists_for(p) {
            let (object, path) = windows_pod(p, list, false);
            let d = create(&object, &Settings::default());
            let warned = forbidden_paths(&d, true);
            let expected: Vec<String> = if p.forbidden {
                vec![path.clone()]
            } else {
                vec![]
            };
            if !d.accepted || warned != expected {
                failures.push(format!(
                    "{path} = {}: expected warnings {expected:?}, got {warned:?}, accepted={}",
                    p.value, d.accepted
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Absent and null fields are never findings: null decodes to a nil pointer.
#[test]
fn absent_and_null_fields_are_not_set() {
    let s = settings(json!({"setPodOS": true}));
    for p in probes() {
        for list in lists_for(&p) {
            let null = probe(p.at, p.field, Value::Null, false);
            let (object, path) = windows_pod(&null, list, true);
            let d = create(&object, &s);
            assert!(d.accepted, "{path}: null rejected: {}", message(&d));
        }
    }
    let (absent, _) = windows_pod(
        &probe(At::Pod, "hostNetwork", json!(false), false),
        "containers",
        false,
    );
    let d = create(&absent, &s);
    assert!(d.accepted, "{}", message(&d));
    assert!(forbidden_paths(&d, false).is_empty() && forbidden_paths(&d, true).is_empty());
}

/// A chart that renders the host namespace defaults explicitly (as many
/// Helm charts do) must pass: hostPID/hostIPC false are what the API
/// defaults to anyway.
#[test]
fn chart_rendering_host_namespaces_false_passes_with_set_pod_os() {
    let object = yaml(include_str!(
        "../../examples/manifests/windows-chart-host-namespaces-false-deployment.yaml"
    ));
    let s = settings(json!({"setPodOS": true}));
    let d = create(&object, &s);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, "/spec/template/spec/os"),
        Some(&json!({"name": "windows"})),
        "{:?}",
        d.patch
    );
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_idempotent(&object, &d, &s);
}

/// The negative of the chart case: a chart that renders `hostUsers: false`
/// (a pointer) is rejected with the path and the fix.
#[test]
fn chart_rendering_host_users_false_is_rejected_with_set_pod_os() {
    let object = yaml(include_str!(
        "../../examples/manifests/windows-chart-host-users-false-deployment.yaml"
    ));
    let d = create(&object, &settings(json!({"setPodOS": true})));
    assert_rejected_with(&d, "forbidden-field");
    let text = message(&d);
    assert!(
        text.contains(
            "spec.template.spec.hostUsers: is forbidden for Windows pods even when false"
        ),
        "{text}"
    );
    assert!(text.contains("; remove it"), "{text}");
}

#[test]
fn messages_name_the_path_what_and_how() {
    let s = settings(json!({"setPodOS": true}));
    let cases = [
        (
            At::Pod,
            "hostPID",
            json!(true),
            "remove it or set it to false",
        ),
        (
            At::PodSecurityContext,
            "runAsUser",
            json!(0),
            "securityContext.windowsOptions.runAsUserName",
        ),
        (
            At::ContainerSecurityContext,
            "privileged",
            json!(false),
            "remove it",
        ),
    ];
    for (at, field, value, fix) in cases {
        let (object, path) = windows_pod(&probe(at, field, value, true), "containers", false);
        let d = create(&object, &s);
        let v = d
            .violations
            .iter()
            .find(|v| v.path == path)
            .unwrap_or_else(|| panic!("{path}: {}", message(&d)));
        assert!(v.message.contains("forbidden for Windows pods"), "{v}");
        assert!(v.fix.contains(fix), "{v}");
    }
}

/// Warnings fit the API server's 256-character limit even on the longest
/// paths (a CronJob's init containers).
#[test]
fn forbidden_field_warnings_stay_under_256_characters() {
    let sc: serde_json::Map<String, Value> = probes()
        .iter()
        .filter(|p| matches!(p.at, At::ContainerSecurityContext))
        .map(|p| (p.field.to_string(), p.value.clone()))
        .collect();
    let init: Vec<Value> = (0..12)
        .map(|i| json!({"name": format!("i{i}"), "image": WIN2022, "securityContext": sc}))
        .collect();
    let object = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "hostUsers": false,
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "initContainers": init, "containers": [{"name": "c", "image": WIN2022}]}}}}}});
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert!(d.warnings.len() > 100, "{}", d.warnings.len());
    for w in d.warning_lines() {
        assert!(w.len() < 256, "{} chars: {w}", w.len());
    }
}

/// validateLinux forbids only windowsOptions: a Linux pod keeps its
/// Linux-only fields, whatever their values.
#[test]
fn linux_pods_keep_their_linux_only_fields() {
    let mut spec = json!({"os": {"name": "linux"}, "hostPID": true, "hostUsers": false,
        "securityContext": {"runAsUser": 0, "sysctls": []},
        "containers": [{"name": "c", "image": LINUX_IMAGE, "securityContext": {"privileged": false}}]});
    spec["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let d = create(&pod(spec), &settings(json!({"setPodOS": true})));
    assert_unchanged(&d);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}
