//! Kinds and operations: where each kind keeps its pod spec, what each
//! operation may do, and clear rejections for anything else.

/// Every CREATE in this file also checks the mutation invariants.
use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::{evaluate, evaluate_request, Decision, Operation, Review, Settings};
use serde_json::{json, Value};

/// Every supported kind with its pod spec pointer.
const KINDS: &[(&str, &str)] = &[
    ("Pod", "/spec"),
    ("Deployment", "/spec/template/spec"),
    ("ReplicaSet", "/spec/template/spec"),
    ("StatefulSet", "/spec/template/spec"),
    ("DaemonSet", "/spec/template/spec"),
    ("ReplicationController", "/spec/template/spec"),
    ("Job", "/spec/template/spec"),
    ("CronJob", "/spec/jobTemplate/spec/template/spec"),
];

fn api_version(kind: &str) -> &'static str {
    match kind {
        "Pod" | "ReplicationController" => "v1",
        "Job" | "CronJob" => "batch/v1",
        _ => "apps/v1",
    }
}

/// A manifest of `kind` whose pod spec is `spec`, shaped as the API expects.
fn object(kind: &str, spec: Value) -> Value {
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": spec});
    let body = match kind {
        "Pod" => {
            return json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": template["spec"]})
        }
        "CronJob" => {
            json!({"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}})
        }
        "Job" => json!({"backoffLimit": 1, "template": template}),
        "ReplicationController" => {
            json!({"replicas": 1, "selector": {"app": "a"}, "template": template})
        }
        "DaemonSet" => json!({"selector": {"matchLabels": {"app": "a"}}, "template": template}),
        "StatefulSet" => {
            json!({"serviceName": "s", "replicas": 1, "selector": {"matchLabels": {"app": "a"}}, "template": template})
        }
        _ => {
            json!({"replicas": 2, "selector": {"matchLabels": {"app": "a"}}, "template": template})
        }
    };
    json!({"apiVersion": api_version(kind), "kind": kind, "metadata": {"name": "w", "namespace": "default"}, "spec": body})
}

/// `/spec/template/spec` → `spec.template.spec`.
fn display(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

fn review<'a>(
    kind: &'a str,
    operation: &'a str,
    object: &'a Value,
    old: Option<&'a Value>,
) -> Decision {
    evaluate_request(
        &json!({"kind": {"kind": kind}, "operation": operation, "object": object, "oldObject": old}),
        &eks(),
    )
}

fn windows_spec() -> Value {
    spec_with_images(&[WIN2022])
}

fn linux_tolerate_all_spec() -> Value {
    json!({"tolerations": [{"operator": "Exists"}], "containers": [{"name": "agent", "image": LINUX_IMAGE}]})
}

fn assert_malformed(d: &Decision, path: &str) {
    assert_rejected_with(d, "malformed-object");
    assert!(
        d.violations.iter().any(|v| v.path == path),
        "expected path {path}: {}",
        message(d)
    );
}

// ---- every kind ----

#[test]
fn windows_image_is_placed_at_the_pod_spec_of_every_kind() {
    for (kind, prefix) in KINDS {
        let object = object(kind, windows_spec());
        let s = eks();
        let d = create(&object, &s);
        assert!(d.accepted, "{kind}: {}", message(&d));
        let mut paths = patch_paths(&d);
        paths.sort();
        assert_eq!(
            paths,
            vec![
                format!("{prefix}/nodeSelector"),
                format!("{prefix}/tolerations")
            ],
            "{kind}"
        );
        assert_eq!(
            op_value(&d, &format!("{prefix}/nodeSelector")),
            Some(
                &json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"})
            ),
            "{kind}"
        );
        assert_minimal(&object, &d, prefix);
        assert_idempotent(&object, &d, &s);
    }
}

#[test]
fn linux_tolerating_everything_is_given_the_linux_selector_in_every_kind() {
    for (kind, prefix) in KINDS {
        let object = object(kind, linux_tolerate_all_spec());
        let s = eks();
        let d = create(&object, &s);
        assert!(d.accepted, "{kind}: {}", message(&d));
        assert_eq!(
            patch_paths(&d),
            vec![format!("{prefix}/nodeSelector")],
            "{kind}"
        );
        assert_eq!(
            op_value(&d, &format!("{prefix}/nodeSelector")),
            Some(&json!({"kubernetes.io/os": "linux"}))
        );
        assert_minimal(&object, &d, prefix);
        assert_idempotent(&object, &d, &s);
    }
}

#[test]
fn linux_not_tolerating_the_taint_is_unchanged_in_every_kind() {
    for (kind, _) in KINDS {
        let object = object(kind, spec_with_images(&[LINUX_IMAGE]));
        assert_unchanged(&create(&object, &eks()));
    }
}

#[test]
fn message_paths_are_relative_to_the_object_in_every_kind() {
    let strict = Settings {
        mutate: false,
        ..eks()
    };
    for (kind, prefix) in KINDS {
        let d = create(&object(kind, windows_spec()), &strict);
        assert!(!d.accepted, "{kind}");
        let base = display(prefix);
        let text = message(&d);
        assert!(
            text.contains(&format!("{base}.nodeSelector: ")),
            "{kind}: {text}"
        );
        assert!(
            text.contains(&format!("{base}.tolerations: ")),
            "{kind}: {text}"
        );
        for line in text.lines() {
            assert!(line.starts_with(&format!("{base}.")), "{kind}: {line}");
        }
    }
}

#[test]
fn cron_job_messages_name_the_job_template_path() {
    let strict = Settings {
        mutate: false,
        ..eks()
    };
    let d = create(&object("CronJob", windows_spec()), &strict);
    assert!(
        message(&d).contains("spec.jobTemplate.spec.template.spec.nodeSelector: "),
        "{}",
        message(&d)
    );
    let d = create(
        &object("CronJob", spec_with_images(&[LINUX_IMAGE, WIN2022])),
        &eks(),
    );
    assert!(
        message(&d).contains("spec.jobTemplate.spec.template.spec.containers[1].image"),
        "{}",
        message(&d)
    );
}

#[test]
fn conflicts_name_paths_under_the_template() {
    let d = create(
        &object("Deployment", spec_with_images(&[WIN2019, WIN2022])),
        &eks(),
    );
    assert_rejected_with(&d, "build-conflict");
    let text = message(&d);
    assert!(
        text.starts_with("spec.template.spec.containers[1].image: "),
        "{text}"
    );
    assert!(
        text.contains("spec.template.spec.containers[0].image"),
        "{text}"
    );
}

// ---- operations ----

#[test]
fn pod_update_never_patches_even_when_misplaced() {
    let pod = object("Pod", windows_spec());
    let d = update(&pod, &pod, &eks());
    assert_unchanged(&d);
    let linux = object("Pod", linux_tolerate_all_spec());
    assert_unchanged(&update(&linux, &linux, &eks()));
}

#[test]
fn pod_update_without_old_object_does_not_patch() {
    let pod = object("Pod", windows_spec());
    assert_unchanged(&review("Pod", "UPDATE", &pod, None));
}

fn with_ephemeral(pod: &Value, containers: Value) -> Value {
    let mut pod = pod.clone();
    pod["spec"]["ephemeralContainers"] = containers;
    pod
}

fn windows_pod() -> Value {
    let mut pod = object("Pod", windows_spec());
    pod["spec"]["nodeSelector"] =
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"});
    pod["spec"]["tolerations"] = json!([eks_toleration()]);
    pod
}

#[test]
fn new_linux_ephemeral_container_in_a_windows_pod_is_rejected() {
    let old = windows_pod();
    let new = with_ephemeral(&old, json!([{"name": "debug", "image": "busybox:1.36"}]));
    let d = update(&new, &old, &eks());
    assert_rejected_with(&d, "ephemeral-container-mismatch");
    let text = message(&d);
    assert!(
        text.starts_with("spec.ephemeralContainers[0].image: "),
        "{text}"
    );
}

#[test]
fn new_ephemeral_container_of_the_pods_build_is_accepted() {
    let old = windows_pod();
    let new = with_ephemeral(
        &old,
        json!([{"name": "debug", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]),
    );
    assert_unchanged(&update(&new, &old, &eks()));
}

#[test]
fn new_ephemeral_container_of_another_build_is_rejected() {
    let old = windows_pod();
    let new = with_ephemeral(
        &old,
        json!([{"name": "debug", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2019"}]),
    );
    let d = update(&new, &old, &eks());
    assert_rejected_with(&d, "ephemeral-container-mismatch");
    assert!(message(&d).contains("10.0.20348"), "{}", message(&d));
}

#[test]
fn new_neutral_ephemeral_container_is_accepted() {
    let old = windows_pod();
    let new = with_ephemeral(&old, json!([{"name": "debug", "image": NEUTRAL_IMAGE}]));
    assert_unchanged(&update(&new, &old, &eks()));
}

#[test]
fn existing_ephemeral_container_is_not_judged_again() {
    // A mismatched ephemeral container from before (e.g. admitted before the policy).
    let old = with_ephemeral(
        &windows_pod(),
        json!([{"name": "old-debug", "image": "busybox:1.36"}]),
    );
    assert_unchanged(&update(&old, &old, &eks()));
    // Another update of the pod (a label change) is not rejected for it either.
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    assert_unchanged(&update(&relabelled, &old, &eks()));
}

#[test]
fn existing_ephemeral_container_of_the_same_build_is_not_judged_again() {
    let old = with_ephemeral(&windows_pod(), json!([{"name": "d1", "image": WIN2022}]));
    let new = with_ephemeral(
        &old,
        json!([{"name": "d1", "image": WIN2022}, {"name": "d2", "image": NEUTRAL_IMAGE}]),
    );
    assert_unchanged(&update(&new, &old, &eks()));
}

#[test]

fn old_mismatched_ephemeral_container_does_not_block_new_matching_ones() {
    // Ephemeral containers can never be removed: one bad debug container added
    // before the policy must not forbid debugging the pod for ever.
    let old = with_ephemeral(
        &windows_pod(),
        json!([{"name": "old-debug", "image": "busybox:1.36"}]),
    );
    let new = with_ephemeral(
        &old,
        json!([{"name": "old-debug", "image": "busybox:1.36"}, {"name": "debug", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]),
    );
    let d = update(&new, &old, &eks());
    assert!(!message(&d).contains("for no node"), "{}", message(&d));
    assert_unchanged(&d);
}

#[test]
fn new_ephemeral_container_is_judged_against_the_pods_selector() {
    // No Windows image, but the pod is pinned to 2019 nodes by its selector.
    let mut old = object("Pod", spec_with_images(&[NEUTRAL_IMAGE]));
    old["spec"]["nodeSelector"] =
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"});
    let new = with_ephemeral(&old, json!([{"name": "debug", "image": WIN2022}]));
    assert_rejected_with(&update(&new, &old, &eks()), "ephemeral-container-mismatch");
}

#[test]
fn new_ephemeral_container_in_a_linux_pod_must_not_be_windows() {
    let old = object("Pod", spec_with_images(&[LINUX_IMAGE]));
    let new = with_ephemeral(&old, json!([{"name": "debug", "image": WIN2022}]));
    assert_rejected_with(&update(&new, &old, &eks()), "ephemeral-container-mismatch");
    let new = with_ephemeral(&old, json!([{"name": "debug", "image": "busybox:1.36"}]));
    assert_unchanged(&update(&new, &old, &eks()));
}

#[test]
fn workloads_with_a_changed_template_on_update_are_mutated_like_create() {
    for (kind, prefix) in KINDS.iter().filter(|(k, _)| *k != "Pod") {
        let object = object(kind, windows_spec());
        let old = self::object(kind, spec_with_images(&[NEUTRAL_IMAGE]));
        let on_create = create(&object, &eks());
        let on_update = update(&object, &old, &eks());
        assert!(on_update.accepted, "{kind}");
        assert_eq!(on_update.patch, on_create.patch, "{kind}");
        // Two empty patches would be equal and pass every check below.
        assert!(!patch_paths(&on_update).is_empty(), "{kind}: not mutated");
        assert!(patch_paths(&on_update)
            .iter()
            .all(|p| p.starts_with(prefix)));
        assert_eq!(on_update.mutated_object, on_create.mutated_object);
    }
}

#[test]
fn workload_update_with_unchanged_template_is_not_patched() {
    // Scaling or relabelling an existing workload must not start a rollout,
    // and a started Job's template is immutable.
    for (kind, _) in KINDS.iter().filter(|(k, _)| *k != "Pod") {
        let old = object(kind, windows_spec());
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "a"});
        assert_unchanged(&update(&new, &old, &eks()));
    }
}

#[test]
fn delete_and_connect_are_accepted_untouched_even_for_garbage() {
    for operation in ["DELETE", "CONNECT"] {
        for object in [
            json!(null),
            json!(42),
            json!({"kind": "Pod"}),
            object("Pod", windows_spec()),
        ] {
            for kind in ["Pod", "Deployment", "ConfigMap", ""] {
                let d = review(kind, operation, &object, None);
                assert_unchanged(&d);
                assert!(d.warnings.is_empty());
            }
        }
    }
}

#[test]
fn unknown_kind_is_rejected_as_unsupported() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}});
    let d = create(&cm, &eks());
    assert_rejected_with(&d, "unsupported-kind");
    let text = message(&d);
    assert!(text.starts_with("kind: "), "{text}");
    assert!(
        text.contains("ConfigMap") && text.contains("CronJob"),
        "{text}"
    );
}

#[test]
fn kind_names_are_case_sensitive() {
    let object = object("Pod", windows_spec());
    assert_rejected_with(&review("pod", "CREATE", &object, None), "unsupported-kind");
}

#[test]
fn unknown_operation_is_rejected() {
    let object = object("Pod", windows_spec());
    for operation in ["PATCH", "create", ""] {
        let d = review("Pod", operation, &object, None);
        assert!(!d.accepted, "{operation:?}");
        assert!(d.patch.is_empty());
        assert!(message(&d).starts_with("operation: "), "{}", message(&d));
    }
}

#[test]
fn review_reads_an_admission_request() {
    let request = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "object": object("Pod", windows_spec()), "oldObject": null});
    let r = Review::from_admission_request(&request).unwrap();
    assert_eq!((r.kind, r.operation), ("Pod", Operation::Create));
    assert!(r.old_object.is_none());
    assert!(evaluate(&r, &eks()).accepted);
    let empty = json!({});
    let problem = Review::from_admission_request(&empty).unwrap_err();
    assert_eq!(problem.path, "operation");
    assert!(!evaluate_request(&empty, &eks()).accepted);
}

// ---- malformed objects ----

#[test]
fn object_that_is_not_an_object_is_malformed() {
    for object in [json!(null), json!("pod"), json!([1]), json!(3)] {
        assert_malformed(&review("Pod", "CREATE", &object, None), "object");
    }
}

#[test]
fn missing_spec_is_malformed() {
    let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    assert_malformed(&create(&object, &eks()), "spec");
    let object = json!({"apiVersion": "v1", "kind": "Pod", "spec": null});
    assert_malformed(&create(&object, &eks()), "spec");
}

#[test]
fn missing_template_is_malformed() {
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1}});
    assert_malformed(&create(&object, &eks()), "spec.template");
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"metadata": {}}}});
    assert_malformed(&create(&object, &eks()), "spec.template.spec");
    let object = json!({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": "x"}}}});
    assert_malformed(&create(&object, &eks()), "spec.jobTemplate.spec.template");
}

#[test]
fn containers_not_a_list_is_malformed() {
    let object = object(
        "Deployment",
        json!({"containers": {"name": "c", "image": WIN2022}}),
    );
    assert_malformed(&create(&object, &eks()), "spec.template.spec.containers");
}

#[test]
fn container_not_an_object_is_malformed() {
    let object = object(
        "Pod",
        json!({"containers": [{"name": "ok", "image": WIN2022}, "nginx"]}),
    );
    assert_malformed(&create(&object, &eks()), "spec.containers[1]");
}

#[test]
fn node_selector_value_number_is_malformed() {
    let object = object(
        "Pod",
        json!({"nodeSelector": {"kubernetes.io/os": 1}, "containers": []}),
    );
    assert_malformed(
        &create(&object, &eks()),
        "spec.nodeSelector[kubernetes.io/os]",
    );
    let object = object_with("Pod", json!({"nodeSelector": ["kubernetes.io/os=linux"]}));
    assert_malformed(&create(&object, &eks()), "spec.nodeSelector");
}

fn object_with(kind: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": NEUTRAL_IMAGE}]);
    object(kind, spec)
}

#[test]
fn toleration_with_wrong_types_is_malformed() {
    let object = object_with(
        "Pod",
        json!({"tolerations": [{"operator": "Exists"}, {"key": 1, "tolerationSeconds": "x"}]}),
    );
    assert_malformed(&create(&object, &eks()), "spec.tolerations[1]");
    let object = object_with("Pod", json!({"tolerations": "all"}));
    assert_malformed(&create(&object, &eks()), "spec.tolerations");
}

#[test]
fn affinity_of_the_wrong_shape_is_malformed() {
    let object = object_with("Pod", json!({"affinity": []}));
    assert_malformed(&create(&object, &eks()), "spec.affinity");
    let object = object_with("Pod", json!({"affinity": {"nodeAffinity": "linux"}}));
    assert_malformed(&create(&object, &eks()), "spec.affinity.nodeAffinity");
    let object = object_with(
        "Pod",
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}}),
    );
    assert_malformed(
        &create(&object, &eks()),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    );
}

#[test]
fn image_number_is_malformed() {
    let object = object("Job", json!({"containers": [{"name": "c", "image": 42}]}));
    assert_malformed(
        &create(&object, &eks()),
        "spec.template.spec.containers[0].image",
    );
}

#[test]
fn os_string_is_malformed() {
    let object = object_with("Pod", json!({"os": "windows"}));
    assert_malformed(&create(&object, &eks()), "spec.os");
    let object = object_with("Pod", json!({"os": {"name": 1}}));
    assert_malformed(&create(&object, &eks()), "spec.os.name");
}

#[test]
fn other_malformed_fields_name_their_path() {
    let cases = [
        (json!({"runtimeClassName": 5}), "spec.runtimeClassName"),
        (json!({"hostNetwork": "yes"}), "spec.hostNetwork"),
        (json!({"securityContext": []}), "spec.securityContext"),
        (
            json!({"securityContext": {"windowsOptions": {"hostProcess": "yes"}}}),
            "spec.securityContext.windowsOptions",
        ),
        (
            json!({"initContainers": [{"name": 1}]}),
            "spec.initContainers[0].name",
        ),
        (
            json!({"ephemeralContainers": 3}),
            "spec.ephemeralContainers",
        ),
    ];
    for (spec, path) in cases {
        let object = object_with("Pod", spec);
        assert_malformed(&create(&object, &eks()), path);
    }
}

#[test]
fn several_malformed_fields_are_reported_together() {
    let object = object(
        "Pod",
        json!({"os": "x", "nodeSelector": {"a": 1}, "containers": [{"image": 2}]}),
    );
    let d = create(&object, &eks());
    assert_eq!(codes(&d), vec!["malformed-object"; 3], "{}", message(&d));
    assert_eq!(message(&d).lines().count(), 3);
}

#[test]
fn malformed_pod_on_update_is_rejected_not_panicking() {
    let bad = object("Pod", json!({"containers": "x"}));
    assert_malformed(&update(&bad, &json!("garbage"), &eks()), "spec.containers");
    let good = windows_pod();
    let d = update(
        &with_ephemeral(&good, json!([{"name": "d", "image": WIN2022}])),
        &json!({"spec": {"ephemeralContainers": "x"}}),
        &eks(),
    );
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn malformed_messages_follow_the_line_format() {
    let d = create(&object("Pod", json!({"containers": [1]})), &eks());
    // An accepted pod has no message: the loop below would check nothing.
    assert_rejected_with(&d, "malformed-object");
    for line in message(&d).lines() {
        let (path, rest) = line.split_once(": ").unwrap();
        assert!(!path.is_empty());
        assert!(rest.contains("; "), "{line}");
    }
}

#[test]

fn field_path_with_a_newline_key_stays_on_one_line() {
    let object = object_with("Pod", json!({"nodeSelector": {"evil\nkey": 1}}));
    let d = create(&object, &eks());
    assert_rejected_with(&d, "malformed-object");
    assert_eq!(
        message(&d).lines().count(),
        d.violations.len(),
        "{}",
        message(&d)
    );
}
