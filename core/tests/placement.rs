//! Placement: what a correctly placed pod has, what the policy adds when it
//! lacks it (and nothing else), and what it reports with `mutate: false`.

/// Every CREATE in this file also checks the mutation invariants.
use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::{Decision, Settings};
use serde_json::{json, Value};

const NS: &str = "/spec/nodeSelector";
const NS_OS: &str = "/spec/nodeSelector/kubernetes.io~1os";
const NS_BUILD: &str = "/spec/nodeSelector/node.kubernetes.io~1windows-build";
const TOL: &str = "/spec/tolerations";
const TOL_APPEND: &str = "/spec/tolerations/-";

/// Evaluates on CREATE (checking confined ops, minimal diff, idempotence).
fn mutate(object: &Value, s: &Settings) -> Decision {
    create(object, s)
}

fn strict(v: Value) -> Settings {
    let mut s = settings(v);
    s.mutate = false;
    s
}

fn pin_off() -> Settings {
    settings(json!({"pinWindowsBuild": false}))
}

/// Accepted and placed by a nodeSelector op, with no op on the tolerations:
/// a rejection or an empty patch would add no toleration either.
fn assert_placed_without_toleration(d: &Decision, what: &str) {
    assert!(d.accepted, "{what}: {}", message(d));
    let paths = patch_paths(d);
    assert!(paths.iter().any(|p| p.starts_with(NS)), "{what}: {paths:?}");
    assert!(
        paths.iter().all(|p| !p.starts_with(TOL)),
        "{what}: {paths:?}"
    );
}

fn rc_2022() -> Value {
    json!({"name": "windows-2022", "scheduling": {
        "nodeSelector": {"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64",
                         "node.kubernetes.io/windows-build": "10.0.20348"},
        "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]}})
}

fn prefer_rc() -> Settings {
    eks_with(json!({
        "preferRuntimeClass": true,
        "runtimeClasses": [rc_2022()]
    }))
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}},
                    "template": {"metadata": {"labels": {"app": "a"}}, "spec": spec}}})
}

// ---- Windows: nodeSelector ----

#[test]
fn windows_pod_without_selector_gets_os_and_build() {
    let object = pod_with_images(&[WIN2022]);
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(d.patch.len(), 1, "{:?}", d.patch);
    assert_eq!(
        op_value(&d, NS),
        Some(
            &json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"})
        )
    );
}

#[test]
fn windows_pod_gets_only_the_missing_selector_entries() {
    let object = with_spec(
        pod_with_images(&[WIN2019]),
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    let d = mutate(&object, &Settings::default());
    let mut paths = patch_paths(&d);
    paths.sort();
    assert_eq!(paths, vec![NS_OS.to_string(), NS_BUILD.to_string()]);
    assert_eq!(op_value(&d, NS_BUILD), Some(&json!("10.0.17763")));
    let out = d.mutated_object.unwrap();
    assert_eq!(out["spec"]["nodeSelector"]["kubernetes.io/arch"], "amd64");
}

#[test]
fn windows_pod_selecting_windows_gets_only_the_build() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert_eq!(patch_paths(&d), vec![NS_BUILD.to_string()]);
}

#[test]
fn correctly_placed_windows_pod_is_unchanged() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"},
               "tolerations": [eks_toleration()]}),
    );
    assert_unchanged(&create(&object, &eks()));
    assert_unchanged(&create(
        &object,
        &strict(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}})),
    ));
}

#[test]
fn null_node_selector_is_replaced_by_the_missing_entries() {
    let object = with_spec(pod_with_images(&[WIN2022]), json!({"nodeSelector": null}));
    let d = mutate(&object, &pin_off());
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
}

// ---- Windows: toleration ----

#[test]
fn windows_pod_gets_the_windows_taint_toleration() {
    let object = pod_with_images(&[WIN2022]);
    let d = mutate(&object, &eks());
    assert_eq!(op_value(&d, TOL), Some(&json!([eks_toleration()])));
}

#[test]
fn windows_pod_toleration_is_appended_to_existing_tolerations() {
    let own =
        json!({"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"});
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [own.clone()]}),
    );
    let d = mutate(&object, &eks());
    assert_eq!(op_value(&d, TOL_APPEND), Some(&eks_toleration()));
    let out = d.mutated_object.unwrap();
    assert_eq!(out["spec"]["tolerations"], json!([own, eks_toleration()]));
}

#[test]
fn windows_pod_gets_no_toleration_when_no_taint_is_configured() {
    let d = mutate(&pod_with_images(&[WIN2022]), &Settings::default());
    assert_placed_without_toleration(&d, "no taint");
}

#[test]
fn windows_pod_already_tolerating_the_taint_gets_no_toleration() {
    for own in [
        eks_toleration(),
        json!({"key": "os", "operator": "Exists"}),
        json!({"key": "os", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "os", "value": "windows"}),
        json!({"operator": "Exists"}),
    ] {
        let object = with_spec(
            pod_with_images(&[WIN2022]),
            json!({"tolerations": [own.clone()]}),
        );
        let d = mutate(&object, &eks());
        assert_placed_without_toleration(&d, &own.to_string());
    }
}

#[test]
fn windows_pod_tolerating_another_effect_or_value_gets_the_toleration() {
    for own in [
        json!({"key": "os", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/os", "operator": "Exists"}),
    ] {
        let object = with_spec(
            pod_with_images(&[WIN2022]),
            json!({"tolerations": [own.clone()]}),
        );
        let d = mutate(&object, &eks());
        assert_eq!(op_value(&d, TOL_APPEND), Some(&eks_toleration()), "{own}");
    }
}

#[test]
fn taint_without_value_is_tolerated_with_operator_exists() {
    let s =
        settings(json!({"windowsTaint": {"key": "node.kubernetes.io/os", "effect": "NoSchedule"}}));
    let d = mutate(&pod_with_images(&[WIN2022]), &s);
    assert_eq!(
        op_value(&d, TOL),
        Some(
            &json!([{"key": "node.kubernetes.io/os", "operator": "Exists", "effect": "NoSchedule"}])
        )
    );
}

// ---- Windows: build pin ----

#[test]
fn build_pin_follows_the_image_build() {
    let d = mutate(
        &pod_with_images(&["mcr.microsoft.com/windows/nanoserver:1809"]),
        &Settings::default(),
    );
    assert_eq!(
        op_value(&d, NS).unwrap()["node.kubernetes.io/windows-build"],
        "10.0.17763"
    );
}

#[test]
fn no_build_pin_when_pin_windows_build_is_false() {
    let d = mutate(&pod_with_images(&[WIN2022]), &pin_off());
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
}

#[test]
fn no_build_pin_for_host_process_pods() {
    let object = host_process_pod(json!({}));
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn unknown_build_gives_a_warning_instead_of_a_pin() {
    let object = pod_with_images(&[WIN_NO_BUILD]);
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted);
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
    assert_eq!(warning_codes(&d), vec!["unknown-build"]);
    assert_eq!(d.warnings[0].path, "spec.containers[0].image");
    // The path names the container; the message names the image briefly.
    assert!(
        d.warnings[0].message.contains("aspnet:4.8"),
        "{}",
        d.warnings[0]
    );
}

#[test]
fn unknown_build_warning_also_when_validating_only() {
    let object = with_spec(
        pod_with_images(&[WIN_NO_BUILD]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    let d = create(&object, &strict(json!({})));
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(warning_codes(&d), vec!["unknown-build"]);
}

#[test]
fn no_unknown_build_warning_when_pinning_is_off() {
    let d = mutate(&pod_with_images(&[WIN_NO_BUILD]), &pin_off());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn no_unknown_build_warning_when_the_user_pinned_a_build() {
    let object = with_spec(
        pod_with_images(&[WIN_NO_BUILD]),
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.17763"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(patch_paths(&d), vec![NS_OS.to_string()]);
}

#[test]
fn build_pinned_by_affinity_is_not_pinned_again() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}]}]}}}}),
    );
    let d = mutate(&object, &Settings::default());
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
}

// ---- setPodOS ----

#[test]
fn set_pod_os_adds_spec_os_name() {
    let s = settings(json!({"setPodOS": true}));
    let d = mutate(&pod_with_images(&[WIN2022]), &s);
    assert_eq!(op_value(&d, "/spec/os"), Some(&json!({"name": "windows"})));
    let d = mutate(&pod_with_images(&[LINUX_IMAGE]), &s);
    assert_eq!(op_value(&d, "/spec/os"), Some(&json!({"name": "linux"})));
}

#[test]
fn set_pod_os_adds_name_inside_an_existing_os_object() {
    let s = settings(json!({"setPodOS": true}));
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"os": {"futureField": 1}}),
    );
    let d = mutate(&object, &s);
    assert_eq!(op_value(&d, "/spec/os/name"), Some(&json!("windows")));
    assert!(op_value(&d, "/spec/os").is_none());
    assert_eq!(
        d.mutated_object.unwrap()["spec"]["os"],
        json!({"futureField": 1, "name": "windows"})
    );
}

#[test]
fn set_pod_os_leaves_an_existing_name() {
    let s = settings(json!({"setPodOS": true}));
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"os": {"name": "windows"}, "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}}),
    );
    assert_unchanged(&create(&object, &s));
}

#[test]
fn without_set_pod_os_no_os_is_added() {
    let d = mutate(&pod_with_images(&[WIN2022]), &Settings::default());
    // Still placed, so the missing os op is not a missing patch.
    assert!(patch_paths(&d).contains(&NS.to_string()), "{:?}", d.patch);
    assert!(
        patch_paths(&d).iter().all(|p| !p.starts_with("/spec/os")),
        "{:?}",
        d.patch
    );
}

// ---- preferRuntimeClass ----

#[test]
fn prefer_runtime_class_sets_the_class_and_merges_it_into_a_pod() {
    let object = pod_with_images(&[WIN2022]);
    let d = mutate(&object, &prefer_rc());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, "/spec/runtimeClassName"),
        Some(&json!("windows-2022"))
    );
    let out = d.mutated_object.clone().unwrap();
    assert_eq!(
        out["spec"]["nodeSelector"],
        json!({"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64", "node.kubernetes.io/windows-build": "10.0.20348"})
    );
    assert_eq!(out["spec"]["tolerations"], json!([eks_toleration()]));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn prefer_runtime_class_merge_keeps_the_pods_own_entries() {
    let own_tol = json!({"key": "os", "operator": "Exists"});
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"disktype": "ssd"}, "tolerations": [own_tol.clone()]}),
    );
    let d = mutate(&object, &prefer_rc());
    assert_eq!(
        op_value(&d, "/spec/runtimeClassName"),
        Some(&json!("windows-2022"))
    );
    let out = d.mutated_object.unwrap();
    assert_eq!(out["spec"]["nodeSelector"]["disktype"], "ssd");
    assert_eq!(out["spec"]["nodeSelector"]["kubernetes.io/os"], "windows");
    // The pod's own toleration already covers the class's: not added twice.
    assert_eq!(out["spec"]["tolerations"], json!([own_tol]));
}

#[test]
fn prefer_runtime_class_on_a_deployment_sets_only_the_class_name() {
    let object = deployment(spec_with_images(&[WIN2022]));
    let s = prefer_rc();
    let d = create(&object, &s);
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        patch_paths(&d),
        vec!["/spec/template/spec/runtimeClassName".to_string()]
    );
    assert_minimal(&object, &d, "/spec/template/spec");
    assert_idempotent(&object, &d, &s);
}

#[test]
fn prefer_runtime_class_falls_back_to_selectors_with_a_warning_when_no_class_fits() {
    // Only a 2022 class is declared; the image needs 2019.
    let object = pod_with_images(&[WIN2019]);
    let d = mutate(&object, &prefer_rc());
    assert!(d.accepted, "{}", message(&d));
    assert!(op_value(&d, "/spec/runtimeClassName").is_none());
    assert_eq!(
        op_value(&d, NS),
        Some(
            &json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"})
        )
    );
    assert_eq!(op_value(&d, TOL), Some(&json!([eks_toleration()])));
    let w = d
        .warnings
        .iter()
        .find(|w| w.path == "spec.runtimeClassName")
        .expect("fallback warning");
    assert_eq!(w.code.as_str(), "no-matching-runtime-class");
    assert!(w.message.contains("Windows pod"), "{w}");
    assert!(
        w.message.contains("nodeSelector entries and toleration"),
        "{w}"
    );
    assert!(w.fix.contains("kubernetes.io/os: windows"), "{w}");
    assert!(w.to_string().chars().count() <= 256, "{w}");
}

#[test]
fn prefer_runtime_class_fallback_for_a_linux_pod_mentions_no_toleration() {
    // Regression: the fallback warning used to say "and toleration" for Linux pods.
    let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
    let settings = settings(json!({"preferRuntimeClass": true, "runtimeClasses": [
        {"name": "windows-2022", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}}}]}));
    let d = mutate(&object, &settings);
    let w = d
        .warnings
        .iter()
        .find(|w| w.code.as_str() == "no-matching-runtime-class")
        .expect("fallback warning");
    assert!(w.message.contains("Linux pod"), "{w}");
    assert!(!w.message.contains("toleration"), "{w}");
    assert!(w.message.contains("nodeSelector entries were added"), "{w}");
    assert!(w.fix.contains("kubernetes.io/os: linux"), "{w}");
}

#[test]
fn prefer_runtime_class_does_not_pick_a_class_pinning_a_build_the_pod_does_not_need() {
    let object = pod_with_images(&[WIN_NO_BUILD]);
    let d = mutate(&object, &prefer_rc());
    // Placed by selector instead: a rejection would pick no class either.
    assert!(d.accepted, "{}", message(&d));
    assert!(op_value(&d, NS).is_some(), "{:?}", d.patch);
    assert!(
        op_value(&d, "/spec/runtimeClassName").is_none(),
        "{:?}",
        d.patch
    );
}

#[test]
fn prefer_runtime_class_never_replaces_the_users_class() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"runtimeClassName": "runhcs-custom"}),
    );
    let d = mutate(&object, &prefer_rc());
    assert!(
        op_value(&d, "/spec/runtimeClassName").is_none(),
        "{:?}",
        d.patch
    );
    assert_eq!(
        d.mutated_object.unwrap()["spec"]["runtimeClassName"],
        "runhcs-custom"
    );
}

#[test]
fn prefer_runtime_class_picks_a_linux_class_for_linux_pods() {
    let s = settings(json!({
        "preferRuntimeClass": true,
        "runtimeClasses": [rc_2022(), {"name": "linux", "scheduling": {"nodeSelector": {"kubernetes.io/os": "linux"}}}]
    }));
    let d = mutate(&pod_with_images(&[LINUX_IMAGE]), &s);
    assert_eq!(
        op_value(&d, "/spec/runtimeClassName"),
        Some(&json!("linux"))
    );
}

// ---- never overwrite ----

#[test]
fn user_selector_entries_are_kept() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64", "agentpool": "win"}}),
    );
    let d = mutate(&object, &eks());
    let out = d.mutated_object.unwrap();
    assert_eq!(out["spec"]["nodeSelector"]["kubernetes.io/arch"], "amd64");
    assert_eq!(out["spec"]["nodeSelector"]["agentpool"], "win");
}

#[test]
fn conflicting_user_selector_is_rejected_not_rewritten() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"}}),
    );
    let d = create(&object, &eks());
    assert_rejected_with(&d, "build-conflict");
}

#[test]
fn ops_are_only_adds_of_absent_keys() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/arch": "amd64"}, "tolerations": [{"key": "x", "operator": "Exists"}]}),
    );
    let d = mutate(
        &object,
        &settings(
            json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}, "setPodOS": true}),
        ),
    );
    // The appended toleration is the one op on an existing field: without it,
    // or with no patch at all, the loop below would check nothing.
    assert_eq!(
        op_value(&d, TOL_APPEND),
        Some(&eks_toleration()),
        "{:?}",
        d.patch
    );
    assert!(d.patch.len() > 1, "{:?}", d.patch);
    for op in &d.patch {
        assert_eq!(op.op, "add");
        if op.path != TOL_APPEND {
            assert!(
                object.pointer(&op.path).is_none(),
                "{} exists already",
                op.path
            );
        }
    }
}

// ---- Linux ----

#[test]
fn linux_pod_selecting_linux_is_unchanged() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}]}),
    );
    assert_unchanged(&create(&object, &Settings::default()));
    assert_unchanged(&create(&object, &eks()));
}

#[test]
fn linux_pod_selecting_linux_by_affinity_is_unchanged() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"operator": "Exists"}],
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                   {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}}),
    );
    assert_unchanged(&create(&object, &Settings::default()));
    assert_unchanged(&create(&object, &eks()));
}

#[test]
fn linux_pod_not_tolerating_the_windows_taint_is_unchanged() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}, {"key": "os", "operator": "Exists", "effect": "NoExecute"}]}),
    );
    assert_unchanged(&create(&object, &eks()));
    assert_unchanged(&create(&pod_with_images(&[LINUX_IMAGE]), &eks()));
}

#[test]
fn linux_pod_tolerating_everything_gets_the_linux_selector() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"operator": "Exists"}]}),
    );
    for s in [eks(), Settings::default()] {
        let d = mutate(&object, &s);
        assert_eq!(
            op_value(&d, NS),
            Some(&json!({"kubernetes.io/os": "linux"}))
        );
        assert_eq!(d.patch.len(), 1);
    }
}

#[test]
fn linux_pod_tolerating_the_taint_key_gets_the_linux_selector() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"key": "os", "operator": "Exists"}]}),
    );
    let d = mutate(&object, &eks());
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
    assert!(d.violations.is_empty());
}

#[test]
fn linux_pod_gets_the_linux_selector_when_no_taint_is_configured() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"nodeSelector": {"disktype": "ssd"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert_eq!(patch_paths(&d), vec![NS_OS.to_string()]);
    assert_eq!(op_value(&d, NS_OS), Some(&json!("linux")));
}

#[test]
fn linux_pod_gets_no_windows_toleration() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"operator": "Exists"}]}),
    );
    let d = mutate(&object, &eks());
    assert_placed_without_toleration(&d, "Linux pod");
}

#[test]
fn linux_image_with_windows_options_is_an_os_conflict() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "os-conflict");
}

// ---- mutate: false ----

#[test]
fn validate_only_lists_every_missing_item_with_its_fix() {
    let s =
        strict(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}}));
    let d = create(&pod_with_images(&[WIN2022]), &s);
    assert!(!d.accepted);
    assert!(d.patch.is_empty() && d.mutated_object.is_none());
    let mut got = codes(&d);
    got.sort();
    assert_eq!(
        got,
        vec![
            "missing-build-pin",
            "missing-os-selector",
            "missing-windows-toleration"
        ]
    );
    let text = message(&d);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for line in &lines {
        let (path, rest) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("no path: {line}"));
        assert!(path.starts_with("spec."), "{line}");
        let (what, fix) = rest
            .rsplit_once("; ")
            .unwrap_or_else(|| panic!("no fix: {line}"));
        assert!(!what.is_empty() && !fix.is_empty(), "{line}");
    }
    assert!(text.contains(r#"spec.nodeSelector: "#), "{text}");
    assert!(
        text.contains(r#"add nodeSelector kubernetes.io/os: "windows""#),
        "{text}"
    );
    assert!(
        text.contains(r#"add nodeSelector node.kubernetes.io/windows-build: "10.0.20348""#),
        "{text}"
    );
    assert!(text.contains("spec.tolerations: "), "{text}");
    assert!(
        text.contains(r#"add the toleration {"#) && text.contains(r#""key":"os""#),
        "{text}"
    );
}

#[test]
fn validate_only_asks_for_pod_os_when_set_pod_os() {
    let s = strict(json!({"setPodOS": true}));
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}}),
    );
    let d = create(&object, &s);
    assert_eq!(codes(&d), vec!["missing-pod-os"]);
    assert!(message(&d).starts_with("spec.os.name: "), "{}", message(&d));
    assert!(
        message(&d).contains("set os.name: windows"),
        "{}",
        message(&d)
    );
}

#[test]
fn validate_only_rejects_an_unconfined_linux_pod() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"operator": "Exists"}]}),
    );
    let d = create(
        &object,
        &strict(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}})),
    );
    assert_eq!(codes(&d), vec!["linux-pod-unconfined"]);
    let text = message(&d);
    assert!(
        text.contains(r#"add nodeSelector kubernetes.io/os: "linux""#),
        "{text}"
    );
    assert!(text.contains("every taint"), "{text}");
}

#[test]
fn validate_only_mentions_a_fitting_runtime_class() {
    let mut s = prefer_rc();
    s.mutate = false;
    let d = create(&pod_with_images(&[WIN2022]), &s);
    assert!(!d.accepted);
    assert!(
        message(&d).contains("or set runtimeClassName: windows-2022"),
        "{}",
        message(&d)
    );
}

#[test]
fn validate_only_accepts_a_correct_linux_pod() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    assert_unchanged(&create(&object, &strict(json!({}))));
}

// ---- forbidden Windows fields ----

#[test]
fn forbidden_fields_are_warnings_without_pod_os() {
    let object = with_spec(
        pod(
            json!({"containers": [{"name": "c", "image": WIN2022, "securityContext": {"privileged": false, "runAsUser": 1000}}]}),
        ),
        json!({"securityContext": {"runAsUser": 1000, "fsGroup": 2000}, "hostPID": false}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    let paths: Vec<&str> = d
        .warnings
        .iter()
        .filter(|w| w.code.as_str() == "forbidden-field")
        .map(|w| w.path.as_str())
        .collect();
    for p in [
        "spec.securityContext.runAsUser",
        "spec.securityContext.fsGroup",
        "spec.containers[0].securityContext.privileged",
        "spec.containers[0].securityContext.runAsUser",
    ] {
        assert!(paths.contains(&p), "{p} not in {paths:?}");
    }
    // hostPID is a plain bool in the internal API: validateWindows forbids
    // it only when true, so `hostPID: false` is no finding.
    assert!(!paths.contains(&"spec.hostPID"), "{paths:?}");
    assert_eq!(paths.len(), 4, "{paths:?}");
}

#[test]
fn forbidden_fields_are_violations_with_pod_os_windows() {
    let object = pod(json!({"os": {"name": "windows"},
        "initContainers": [{"name": "i", "image": WIN2022, "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}],
        "containers": [{"name": "c", "image": WIN2022}]}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "forbidden-field");
    assert!(
        message(&d).contains("spec.initContainers[0].securityContext.capabilities"),
        "{}",
        message(&d)
    );
}

#[test]
fn forbidden_fields_are_violations_when_set_pod_os_would_set_it() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"shareProcessNamespace": true}),
    );
    let d = create(&object, &settings(json!({"setPodOS": true})));
    assert_rejected_with(&d, "forbidden-field");
    assert!(
        message(&d).starts_with("spec.shareProcessNamespace: "),
        "{}",
        message(&d)
    );
}

#[test]
fn run_as_user_fix_points_to_run_as_user_name() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"os": {"name": "windows"}, "securityContext": {"runAsUser": 0}}),
    );
    let d = create(&object, &Settings::default());
    assert!(message(&d).contains("runAsUserName"), "{}", message(&d));
}

#[test]
fn linux_only_fields_on_linux_pods_are_fine() {
    let object = with_spec(
        pod(
            json!({"containers": [{"name": "c", "image": LINUX_IMAGE, "securityContext": {"privileged": true, "runAsUser": 0}}]}),
        ),
        json!({"hostPID": true, "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "os": {"name": "linux"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(
        d.accepted && d.warnings.is_empty(),
        "{} {:?}",
        message(&d),
        d.warnings
    );
}

#[test]
fn null_forbidden_fields_count_as_unset() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"os": {"name": "windows"}, "hostPID": null, "securityContext": {"runAsUser": null}}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

// ---- HostProcess ----

#[test]
fn valid_host_process_pod_is_placed_on_windows() {
    let d = mutate(&host_process_pod(json!({})), &eks());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
    assert_eq!(op_value(&d, TOL), Some(&json!([eks_toleration()])));
}

#[test]
fn host_process_pod_without_host_network_is_rejected() {
    let object = with_spec(host_process_pod(json!({})), json!({"hostNetwork": false}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "host-process");
    assert!(
        message(&d).starts_with("spec.hostNetwork: "),
        "{}",
        message(&d)
    );
    let object = host_process_pod(json!({"hostNetwork": null}));
    assert_rejected_with(&create(&object, &Settings::default()), "host-process");
}

#[test]
fn host_process_mixed_with_normal_containers_is_rejected() {
    let object = pod(json!({"hostNetwork": true, "containers": [
        {"name": "a", "image": WIN2022, "securityContext": {"windowsOptions": {"hostProcess": true}}},
        {"name": "b", "image": WIN2022}
    ]}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "host-process");
    assert!(
        message(&d).contains("spec.containers[1].securityContext.windowsOptions.hostProcess"),
        "{}",
        message(&d)
    );
}

#[test]
fn host_process_pod_and_container_disagreeing_is_rejected() {
    let object = host_process_pod(json!({"containers": [
        {"name": "a", "image": WIN2022, "securityContext": {"windowsOptions": {"hostProcess": false}}}
    ]}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "host-process");
    assert!(
        message(&d).contains("spec.containers[0].securityContext.windowsOptions.hostProcess"),
        "{}",
        message(&d)
    );
}

#[test]
fn host_process_set_on_every_container_is_fine() {
    let object = pod(json!({"hostNetwork": true, "containers": [
        {"name": "a", "image": WIN2022, "securityContext": {"windowsOptions": {"hostProcess": true}}},
        {"name": "b", "image": WIN2019, "securityContext": {"windowsOptions": {"hostProcess": true}}}
    ]}));
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, NS),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
}

#[test]
fn host_process_init_container_must_also_be_host_process() {
    let object = pod(json!({"hostNetwork": true,
        "initContainers": [{"name": "i", "image": WIN2022}],
        "containers": [{"name": "a", "image": WIN2022, "securityContext": {"windowsOptions": {"hostProcess": true}}}]}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "host-process");
    assert!(
        message(&d).contains("spec.initContainers[0]"),
        "{}",
        message(&d)
    );
}

// ---- minimal mutations ----

#[test]
fn unknown_fields_are_preserved_exactly() {
    let object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"a/b~c": "x", "big": "1e400", "n": 1.50}, "labels": {"app": "w"}},
        "spec": {
            "someFutureField": {"x": 1, "nested": [1, 2.5, null, {"deep": true}]},
            "containers": [{"name": "c", "image": WIN2022, "unusualField": {"y": [null]}, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                            "resources": {"limits": {"cpu": "500m", "memory": 1073741824}}}],
            "tolerations": [{"key": "x", "operator": "Exists", "futureTolerationField": 7}],
            "nodeSelector": {"disktype": "ssd"},
            "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]}
        },
        "status": {"phase": "Pending"}
    });
    let s = settings(
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}, "setPodOS": true}),
    );
    let d = mutate(&object, &s);
    assert!(d.accepted, "{}", message(&d));
    let out = d.mutated_object.clone().unwrap();
    let mut changed = diff_paths(&object, &out);
    changed.sort();
    assert_eq!(
        changed,
        vec![
            NS_OS.to_string(),
            NS_BUILD.to_string(),
            "/spec/os".to_string(),
            TOL.to_string()
        ]
    );
    assert_eq!(
        out["spec"]["someFutureField"],
        object["spec"]["someFutureField"]
    );
    assert_eq!(out["metadata"], object["metadata"]);
    assert_eq!(out["spec"]["containers"], object["spec"]["containers"]);
    assert_eq!(
        out["spec"]["tolerations"][0],
        object["spec"]["tolerations"][0]
    );
    assert_eq!(out["status"], object["status"]);
}

#[test]
fn unknown_fields_of_a_workload_template_are_preserved() {
    let object = deployment(
        json!({"someFutureField": {"x": 1}, "containers": [{"name": "c", "image": WIN2022, "futureContainerField": "z"}]}),
    );
    let mut object = object;
    object["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}"});
    object["spec"]["futureDeploymentField"] = json!([1, {"b": 2}]);
    let s = eks();
    let d = create(&object, &s);
    assert!(d.accepted, "{}", message(&d));
    assert_minimal(&object, &d, "/spec/template/spec");
    assert_idempotent(&object, &d, &s);
    let out = d.mutated_object.unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["someFutureField"],
        json!({"x": 1})
    );
    assert_eq!(
        out["spec"]["futureDeploymentField"],
        object["spec"]["futureDeploymentField"]
    );
    // Metadata is kept, with only the record of what the policy added.
    let mut annotations = out["metadata"]["annotations"].as_object().unwrap().clone();
    assert!(annotations
        .remove(os_placement_core::ADDED_ANNOTATION)
        .is_some());
    assert_eq!(
        Value::Object(annotations),
        object["metadata"]["annotations"]
    );
}

#[test]
fn patch_applied_to_the_object_gives_the_mutated_object() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [{"key": "a", "operator": "Exists"}]}),
    );
    let d = mutate(&object, &eks());
    let mut applied = object.clone();
    os_placement_core::apply_patch(&mut applied, &d.patch).unwrap();
    assert_eq!(Some(applied), d.mutated_object);
}

#[test]
fn selector_keys_with_slashes_and_tildes_are_escaped_in_the_patch() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"a~b/c": "d"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(
        patch_paths(&d).contains(&NS_OS.to_string()),
        "{:?}",
        d.patch
    );
    assert_eq!(
        d.mutated_object.unwrap()["spec"]["nodeSelector"]["a~b/c"],
        "d"
    );
}

#[test]
fn warnings_render_as_path_what_fix_lines() {
    let object = with_spec(
        pod_with_images(&[WIN_NO_BUILD]),
        json!({"nodeSelector": {"beta.kubernetes.io/os": "windows"}}),
    );
    let d = mutate(&object, &Settings::default());
    assert!(d.accepted);
    let lines = d.warning_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines
        .iter()
        .any(|l| l.starts_with("spec.nodeSelector[beta.kubernetes.io/os]: ")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("spec.containers[0].image: ")));
    assert!(lines.iter().all(|l| l.contains("; ")));
    assert_eq!(d.message(), None);
}

#[test]
fn ltsc2022_image_with_ltsc2025_sidecar_is_pinned_to_the_2025_build() {
    // A 2025 host runs ltsc2022 images too: the only build both run on is 2025.
    let object = pod_with_images(&[WIN2022, "mcr.microsoft.com/windows/nanoserver:ltsc2025"]);
    let d = checked_create(&object, &eks());
    assert!(d.accepted, "{:?}", d.message());
    let out = result_object(&object, &d);
    assert_eq!(
        out["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
        "10.0.26100"
    );
}

#[test]
fn ltsc2022_image_alone_is_pinned_to_its_own_build() {
    let object = pod_with_images(&[WIN2022]);
    let d = checked_create(&object, &eks());
    let out = result_object(&object, &d);
    assert_eq!(
        out["spec"]["nodeSelector"]["node.kubernetes.io/windows-build"],
        "10.0.20348"
    );
}

#[test]
fn linux_pod_selecting_only_the_beta_label_also_gets_the_ga_label() {
    // corpus 41 (kube-dns): nodes may stop carrying beta.kubernetes.io/os.
    let object = pod(json!({
        "containers": [{"name": "c", "image": LINUX_IMAGE}],
        "nodeSelector": {"beta.kubernetes.io/os": "linux"}
    }));
    let d = checked_create(&object, &Settings::default());
    assert!(d.accepted);
    assert_eq!(warning_codes(&d), vec!["deprecated-label"]);
    let out = result_object(&object, &d);
    assert_eq!(out["spec"]["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(
        out["spec"]["nodeSelector"]["beta.kubernetes.io/os"],
        "linux"
    );
}
