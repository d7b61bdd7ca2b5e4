//! Resolution: which OS and Windows build each signal asks for, and the
//! conflicts between signals. One signal per test, positive and negative.

/// Every CREATE in this file also checks the mutation invariants.
use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::FieldPath;
use os_placement_core::PodView;
use os_placement_core::Settings;
use os_placement_core::WindowsBuild;
use os_placement_core::{resolve, Resolution, Source};
use os_placement_core::{Os, Placement};
use serde_json::{json, Value};

const OS: &str = "/spec/nodeSelector/kubernetes.io~1os";

fn resolved(spec: &Value, settings: &Settings) -> Resolution {
    let pod = PodView::read(spec, FieldPath::root().field("spec"))
        .unwrap_or_else(|e| panic!("malformed {spec}: {e:?}"));
    resolve(&pod, settings)
}

fn placement(spec: Value) -> Placement {
    let r = resolved(&spec, &Settings::default());
    assert!(r.conflicts.is_empty(), "{spec}: {:?}", r.conflicts);
    r.placement
}

fn windows_build(p: &Placement) -> Option<WindowsBuild> {
    p.windows.as_ref().and_then(|b| b.single())
}

fn affinity(terms: Value) -> Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
}

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": op})
    } else {
        json!({"key": key, "operator": op, "values": values})
    }
}

fn affinity_pod(terms: Value, images: &[&str]) -> Value {
    with_spec(
        pod_with_images(images),
        json!({"affinity": affinity(terms)}),
    )
}

fn windows_2022_class() -> Value {
    json!({"name": "windows-2022", "scheduling": {
        "nodeSelector": {"kubernetes.io/os": "windows", "kubernetes.io/arch": "amd64",
                         "node.kubernetes.io/windows-build": "10.0.20348"},
        "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}]}})
}

fn rc_settings() -> Settings {
    settings(json!({"runtimeClasses": [windows_2022_class()]}))
}

/// The one violation with `code`.
fn violation<'d>(
    d: &'d os_placement_core::Decision,
    code: &str,
) -> &'d os_placement_core::Diagnostic {
    d.violations
        .iter()
        .find(|v| v.code.as_str() == code)
        .unwrap_or_else(|| panic!("no {code} in {}", message(d)))
}

// ---- spec.os.name ----

#[test]
fn pod_os_name_linux_resolves_to_linux() {
    let p = placement(
        json!({"os": {"name": "linux"}, "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]}),
    );
    assert_eq!(p.os(), Some(Os::Linux));
}

#[test]
fn pod_os_name_windows_resolves_to_windows_and_gets_the_windows_selector() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"os": {"name": "windows"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
    assert_idempotent(&object, &d, &Settings::default());
}

#[test]
fn pod_os_name_in_upper_case_is_rejected_as_invalid_value() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"os": {"name": "Windows"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "invalid-value");
    let v = violation(&d, "invalid-value");
    assert_eq!(v.path, "spec.os.name");
    assert!(v.message.contains("\"Windows\""), "{v}");
    assert!(v.fix.contains("linux or windows"), "{v}");
}

#[test]
fn missing_pod_os_is_no_signal() {
    let r = resolved(&spec_with_images(&[NEUTRAL_IMAGE]), &Settings::default());
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert_eq!(r.placement, Placement::anywhere());
}

// ---- nodeSelector kubernetes.io/os ----

#[test]
fn node_selector_os_windows_resolves_to_windows() {
    let p = placement(
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}, "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]}),
    );
    assert_eq!(p.os(), Some(Os::Windows));
}

#[test]
fn node_selector_os_linux_pod_is_accepted_unchanged() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    assert_unchanged(&create(&object, &Settings::default()));
    assert_unchanged(&create(&object, &eks()));
}

#[test]
fn node_selector_without_placement_labels_is_no_signal() {
    let spec = json!({"nodeSelector": {"kubernetes.io/arch": "amd64", "disktype": "ssd"},
                      "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &Settings::default());
    assert!(r.signals.is_empty(), "{:?}", r.signals);
}

#[test]
fn node_selector_os_windows_in_upper_case_admits_no_node() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"nodeSelector": {"kubernetes.io/os": "Windows"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "unschedulable");
    assert!(
        message(&d).contains("spec.nodeSelector[kubernetes.io/os]"),
        "{}",
        message(&d)
    );
}

// ---- beta.kubernetes.io/os ----

#[test]
fn beta_os_label_warns_deprecated_and_still_places_the_pod() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"beta.kubernetes.io/os": "windows"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert!(
        warning_codes(&d).contains(&"deprecated-label"),
        "{:?}",
        d.warnings
    );
    let w = d
        .warnings
        .iter()
        .find(|w| w.code.as_str() == "deprecated-label")
        .unwrap();
    assert_eq!(w.path, "spec.nodeSelector[beta.kubernetes.io/os]");
    assert!(w.fix.contains("kubernetes.io/os: windows"), "{w}");
    assert_eq!(op_value(&d, OS), Some(&json!("windows")));
    assert_idempotent(&object, &d, &Settings::default());
}

#[test]
fn beta_os_label_linux_resolves_to_linux() {
    let p =
        placement(json!({"nodeSelector": {"beta.kubernetes.io/os": "linux"}, "containers": []}));
    assert_eq!(p.os(), Some(Os::Linux));
}

#[test]
fn current_os_label_earns_no_deprecation_warning() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    assert!(create(&object, &Settings::default()).warnings.is_empty());
}

// ---- node.kubernetes.io/windows-build ----

#[test]
fn windows_build_selector_resolves_to_windows_of_that_build() {
    let p = placement(
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.17763"}, "containers": []}),
    );
    assert_eq!(p.os(), Some(Os::Windows));
    assert_eq!(windows_build(&p), Some(WindowsBuild::LTSC2019));
}

#[test]
fn windows_build_selector_alone_gets_the_os_selector_added() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.17763"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(patch_paths(&d), vec![OS.to_string()]);
    assert_idempotent(&object, &d, &Settings::default());
}

#[test]
fn windows_build_selector_with_bad_value_is_unschedulable() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "ltsc2019"}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "unschedulable");
}

// ---- AKS os-sku ----

#[test]
fn aks_os_sku_windows2019_with_ltsc2022_image_is_a_build_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "Windows2019"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "build-conflict");
    let text = message(&d);
    assert!(
        text.contains("spec.nodeSelector[kubernetes.azure.com/os-sku]"),
        "{text}"
    );
    assert!(text.contains("spec.containers[0].image"), "{text}");
}

#[test]
fn aks_os_sku_windows2022_with_ltsc2022_image_agrees() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "Windows2022"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn aks_os_sku_ubuntu_resolves_to_linux() {
    let p = placement(
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "Ubuntu"}, "containers": []}),
    );
    assert_eq!(p.os(), Some(Os::Linux));
    let p = placement(
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "AzureLinux"}, "containers": []}),
    );
    assert_eq!(p.os(), Some(Os::Linux));
}

#[test]
fn aks_os_sku_ubuntu_with_windows_image_is_an_os_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "Ubuntu"}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "os-conflict");
}

// ---- GKE windows os version ----

#[test]
fn gke_windows_os_version_resolves_to_windows_of_that_year() {
    let p = placement(
        json!({"nodeSelector": {"cloud.google.com/gke-windows-os-version": "2022"}, "containers": []}),
    );
    assert_eq!(p.os(), Some(Os::Windows));
    assert_eq!(windows_build(&p), Some(WindowsBuild::LTSC2022));
}

#[test]
fn gke_windows_os_version_2019_with_ltsc2022_image_is_a_build_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"cloud.google.com/gke-windows-os-version": "2019"}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "build-conflict");
}

// ---- required node affinity ----

#[test]
fn affinity_in_windows_resolves_to_windows() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}])), "containers": []});
    assert_eq!(placement(spec).os(), Some(Os::Windows));
}

#[test]
fn affinity_in_windows_still_gets_the_node_selector_for_eks() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}]),
        &[NEUTRAL_IMAGE],
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "windows"}))
    );
}

#[test]
fn affinity_not_in_windows_resolves_to_linux() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("kubernetes.io/os", "NotIn", &["windows"])]}])), "containers": []});
    assert_eq!(placement(spec).os(), Some(Os::Linux));
}

#[test]
fn affinity_not_in_windows_counts_as_selecting_linux() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "NotIn", &["windows"])]}]),
        &[LINUX_IMAGE],
    );
    assert_unchanged(&create(&object, &Settings::default()));
}

#[test]
fn affinity_exists_on_windows_build_resolves_to_windows() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("node.kubernetes.io/windows-build", "Exists", &[])]}])), "containers": []});
    assert_eq!(placement(spec).os(), Some(Os::Windows));
}

#[test]
fn affinity_does_not_exist_on_windows_build_resolves_to_linux() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("node.kubernetes.io/windows-build", "DoesNotExist", &[])]}])), "containers": []});
    assert_eq!(placement(spec).os(), Some(Os::Linux));
}

#[test]
fn affinity_exists_on_os_label_says_nothing() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("kubernetes.io/os", "Exists", &[])]}])), "containers": []});
    assert_eq!(placement(spec), Placement::anywhere());
}

#[test]
fn affinity_terms_are_ored() {
    let spec = json!({"affinity": affinity(json!([
        {"matchExpressions": [expr("kubernetes.io/os", "In", &["linux"])]},
        {"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}
    ])), "containers": []});
    let p = placement(spec);
    assert!(p.linux && p.allows_windows(), "{p}");
    // Either OS is allowed, so a Windows image does not conflict.
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "In", &["linux"])]},
               {"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}]),
        &[WIN2022],
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn affinity_expressions_are_anded() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [
        expr("kubernetes.io/os", "In", &["windows"]),
        expr("node.kubernetes.io/windows-build", "In", &["10.0.17763"])
    ]}])), "containers": []});
    let p = placement(spec);
    assert_eq!(p.os(), Some(Os::Windows));
    assert_eq!(windows_build(&p), Some(WindowsBuild::LTSC2019));
}

#[test]
fn affinity_build_with_image_of_other_build_is_a_build_conflict() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("node.kubernetes.io/windows-build", "In", &["10.0.17763"])]}]),
        &[WIN2022],
    );
    assert_rejected_with(&create(&object, &Settings::default()), "build-conflict");
}

#[test]
fn preferred_affinity_is_not_a_constraint() {
    let spec = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}}
    ]}}, "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &Settings::default());
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    // No signal: defaultOS linux applies.
    let object = pod(spec);
    let d = create(&object, &Settings::default());
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
}

#[test]
fn preferred_windows_affinity_does_not_conflict_with_linux_image() {
    let object = pod(
        json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [expr("kubernetes.io/os", "In", &["windows"])]}}
    ]}}, "containers": [{"name": "c", "image": LINUX_IMAGE}]}),
    );
    assert!(create(&object, &Settings::default()).accepted);
}

#[test]
fn affinity_on_unrelated_labels_is_no_signal() {
    let spec = json!({"affinity": affinity(json!([{"matchExpressions": [expr("kubernetes.io/arch", "In", &["amd64"])]}])), "containers": []});
    assert!(resolved(&spec, &Settings::default()).signals.is_empty());
}

#[test]
fn unsatisfiable_affinity_is_rejected_as_unschedulable() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "In", &["linux"]), expr("kubernetes.io/os", "In", &["windows"])]}]),
        &[NEUTRAL_IMAGE],
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "unschedulable");
    let v = violation(&d, "unschedulable");
    assert_eq!(
        v.path,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    );
}

#[test]
fn affinity_os_does_not_exist_is_unschedulable() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "DoesNotExist", &[])]}]),
        &[NEUTRAL_IMAGE],
    );
    assert_rejected_with(&create(&object, &Settings::default()), "unschedulable");
}

#[test]
fn affinity_with_linux_and_windows_image_is_an_os_conflict() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("kubernetes.io/os", "In", &["linux"])]}]),
        &[WIN2022],
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "os-conflict");
    let text = message(&d);
    assert!(
        text.contains("requiredDuringSchedulingIgnoredDuringExecution"),
        "{text}"
    );
    assert!(text.contains("spec.containers[0].image"), "{text}");
}

// ---- runtimeClassName ----

#[test]
fn runtime_class_from_settings_resolves_to_its_os_and_build() {
    let spec = json!({"runtimeClassName": "windows-2022", "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &rc_settings());
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(windows_build(&r.placement), Some(WindowsBuild::LTSC2022));
    assert!(r
        .signals
        .iter()
        .any(|s| s.source == Source::RuntimeClass && s.path == "spec.runtimeClassName"));
}

#[test]
fn runtime_class_scheduling_counts_as_the_pods_own() {
    // Selector, taint toleration and build pin all come from the class.
    let s = eks_with(json!({
        "runtimeClasses": [windows_2022_class()]
    }));
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"runtimeClassName": "windows-2022"}),
    );
    assert_unchanged(&create(&object, &s));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"runtimeClassName": "windows-2022", "containers": [{"name": "c", "image": WIN2022}]}}}});
    assert_unchanged(&create(&deployment, &s));
}

#[test]
fn runtime_class_merged_with_the_pods_own_matching_selector_is_fine() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"runtimeClassName": "windows-2022", "nodeSelector": {"kubernetes.io/arch": "amd64"}}),
    );
    assert!(create(&object, &rc_settings()).accepted);
}

#[test]
fn runtime_class_with_conflicting_node_selector_key_is_rejected() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"runtimeClassName": "windows-2022", "nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    let d = create(&object, &rc_settings());
    assert_rejected_with(&d, "runtime-class-conflict");
    let v = violation(&d, "runtime-class-conflict");
    assert_eq!(v.path, "spec.nodeSelector[kubernetes.io/arch]");
    assert!(
        v.message.contains("\"arm64\"") && v.message.contains("\"amd64\""),
        "{v}"
    );
    assert!(v.message.contains("windows-2022"), "{v}");
}

#[test]
fn unknown_runtime_class_name_is_no_signal() {
    let spec = json!({"runtimeClassName": "runhcs-wcow-process", "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &rc_settings());
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert_eq!(r.placement, Placement::anywhere());
}

#[test]
fn unknown_runtime_class_name_does_not_conflict_with_a_linux_selector() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"runtimeClassName": "gvisor", "nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    assert_unchanged(&create(&object, &rc_settings()));
}

// ---- windowsOptions and HostProcess ----

#[test]
fn pod_windows_options_resolve_to_windows() {
    let spec = json!({"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}},
                      "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    assert_eq!(placement(spec).os(), Some(Os::Windows));
}

#[test]
fn container_windows_options_resolve_to_windows() {
    let spec = json!({"containers": [{"name": "c", "image": NEUTRAL_IMAGE,
        "securityContext": {"windowsOptions": {"gmsaCredentialSpecName": "webapp"}}}]});
    assert_eq!(placement(spec).os(), Some(Os::Windows));
}

#[test]
fn security_context_without_windows_options_is_no_signal() {
    let spec = json!({"securityContext": {"runAsNonRoot": true},
                      "containers": [{"name": "c", "image": NEUTRAL_IMAGE, "securityContext": {"privileged": false}}]});
    assert!(resolved(&spec, &Settings::default()).signals.is_empty());
}

#[test]
fn windows_options_with_linux_selector_is_an_os_conflict() {
    let object = pod(json!({"nodeSelector": {"kubernetes.io/os": "linux"},
        "containers": [{"name": "c", "image": NEUTRAL_IMAGE,
            "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}]}));
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "os-conflict");
    assert!(
        message(&d).contains("spec.containers[0].securityContext.windowsOptions"),
        "{}",
        message(&d)
    );
}

#[test]
fn host_process_resolves_to_windows_without_build() {
    let spec = json!({"hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "containers": [{"name": "c", "image": WIN2022}]});
    let r = resolved(&spec, &Settings::default());
    assert!(r.host_process);
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), None);
    assert_eq!(windows_build(&r.placement), None);
}

#[test]
fn host_process_pod_with_images_of_two_builds_is_no_conflict() {
    let object = pod(json!({"hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "a", "image": WIN2019}, {"name": "b", "image": WIN2022}]}));
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
    // The pin would sit inside an `add` of the whole nodeSelector, not at
    // BUILD: check the object, which is placed on Windows without a build.
    let selector = &result_object(&object, &d)["spec"]["nodeSelector"];
    assert_eq!(selector["kubernetes.io/os"], "windows", "{selector}");
    assert!(
        selector.get("node.kubernetes.io/windows-build").is_none(),
        "{selector}"
    );
}

// ---- images ----

#[test]
fn container_image_resolves_to_windows_and_its_build() {
    let r = resolved(&spec_with_images(&[WIN2019]), &Settings::default());
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), Some(WindowsBuild::LTSC2019));
    let s = &r.signals[0];
    assert_eq!(s.source, Source::Image);
    assert_eq!(s.path, "spec.containers[0].image");
}

#[test]
fn init_container_image_resolves_to_windows() {
    let spec = json!({"initContainers": [{"name": "init", "image": WIN2022}],
                      "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &Settings::default());
    assert_eq!(r.image_build(), Some(WindowsBuild::LTSC2022));
    assert_eq!(r.signals[0].path, "spec.initContainers[0].image");
}

#[test]
fn ephemeral_container_image_resolves_to_windows() {
    let spec = json!({"ephemeralContainers": [{"name": "debug", "image": WIN2019}],
                      "containers": [{"name": "c", "image": NEUTRAL_IMAGE}]});
    let r = resolved(&spec, &Settings::default());
    assert_eq!(r.image_build(), Some(WindowsBuild::LTSC2019));
    assert_eq!(r.signals[0].path, "spec.ephemeralContainers[0].image");
}

#[test]
fn linux_image_resolves_to_linux() {
    assert_eq!(
        placement(spec_with_images(&[LINUX_IMAGE])).os(),
        Some(Os::Linux)
    );
}

#[test]
fn multi_arch_image_is_no_signal() {
    assert!(
        resolved(&spec_with_images(&[NEUTRAL_IMAGE]), &Settings::default())
            .signals
            .is_empty()
    );
}

#[test]
fn release_number_outside_windows_repositories_is_no_signal() {
    assert!(
        resolved(&spec_with_images(&["myapp:1809"]), &Settings::default())
            .signals
            .is_empty()
    );
}

#[test]
fn windows_image_without_build_resolves_to_windows_of_any_build() {
    let r = resolved(&spec_with_images(&[WIN_NO_BUILD]), &Settings::default());
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), None);
    assert_eq!(r.images_without_build.len(), 1);
}

#[test]
fn digest_only_windows_image_gives_windows_without_build() {
    let image = "mcr.microsoft.com/windows/servercore@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let r = resolved(&spec_with_images(&[image]), &Settings::default());
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), None);
}

#[test]
fn settings_windows_images_rule_marks_private_images_windows_with_its_build() {
    let s = settings(
        json!({"windowsImages": [{"pattern": "registry.example.com/win/*", "windowsBuild": "10.0.17763"}]}),
    );
    let r = resolved(&spec_with_images(&["registry.example.com/win/app:1.0"]), &s);
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), Some(WindowsBuild::LTSC2019));
    let object = pod_with_images(&["registry.example.com/win/app:1.0"]);
    let d = create(&object, &s);
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(
            &json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"})
        )
    );
    assert_idempotent(&object, &d, &s);
}

#[test]
fn settings_windows_images_rule_does_not_match_other_images() {
    let s = settings(json!({"windowsImages": [{"pattern": "registry.example.com/win/*"}]}));
    let r = resolved(
        &spec_with_images(&["registry.example.com/linux/app:1.0"]),
        &s,
    );
    assert!(r.signals.is_empty(), "{:?}", r.signals);
}

#[test]
fn settings_windows_images_rule_is_checked_before_built_in_conventions() {
    // alpine would be Linux by the built-in table.
    let s =
        settings(json!({"windowsImages": [{"pattern": "alpine*", "windowsBuild": "10.0.20348"}]}));
    let r = resolved(&spec_with_images(&[LINUX_IMAGE]), &s);
    assert_eq!(r.placement.os(), Some(Os::Windows));
    assert_eq!(r.image_build(), Some(WindowsBuild::LTSC2022));
}

// ---- conflicts ----

#[test]
fn windows_image_with_linux_selector_is_an_os_conflict_naming_both_paths_and_values() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "os-conflict");
    let v = violation(&d, "os-conflict");
    let line = v.to_string();
    for needle in [
        "spec.nodeSelector[kubernetes.io/os]",
        "spec.containers[0].image",
        "\"linux\"",
        WIN2022,
    ] {
        assert!(line.contains(needle), "{needle} missing in {line}");
    }
    assert!(!v.fix.is_empty());
}

#[test]
fn ltsc2019_image_pinned_to_20348_is_a_build_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2019]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "build-conflict");
    let line = violation(&d, "build-conflict").to_string();
    for needle in [
        "spec.nodeSelector[node.kubernetes.io/windows-build]",
        "spec.containers[0].image",
        "10.0.20348",
        "10.0.17763",
    ] {
        assert!(line.contains(needle), "{needle} missing in {line}");
    }
}

#[test]
fn two_containers_with_different_builds_are_a_build_conflict() {
    let d = create(&pod_with_images(&[WIN2019, WIN2022]), &Settings::default());
    assert_rejected_with(&d, "build-conflict");
    let line = violation(&d, "build-conflict").to_string();
    assert!(
        line.contains("spec.containers[0].image") && line.contains("spec.containers[1].image"),
        "{line}"
    );
}

#[test]
fn init_and_main_container_with_different_builds_are_a_build_conflict() {
    let object = pod(json!({"initContainers": [{"name": "i", "image": WIN2019}],
                            "containers": [{"name": "c", "image": WIN2022}]}));
    assert_rejected_with(&create(&object, &Settings::default()), "build-conflict");
}

#[test]
fn two_containers_with_the_same_build_agree() {
    let d = create(
        &pod_with_images(&[WIN2022, "mcr.microsoft.com/windows/nanoserver:ltsc2022"]),
        &Settings::default(),
    );
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn linux_and_windows_images_in_one_pod_are_an_os_conflict() {
    let d = create(
        &pod_with_images(&[LINUX_IMAGE, WIN2022]),
        &Settings::default(),
    );
    assert_rejected_with(&d, "os-conflict");
    let line = violation(&d, "os-conflict").to_string();
    assert!(
        line.contains(LINUX_IMAGE) && line.contains(WIN2022),
        "{line}"
    );
}

#[test]
fn pod_os_name_against_selector_is_an_os_conflict() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"os": {"name": "linux"}, "nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    let d = create(&object, &Settings::default());
    assert_rejected_with(&d, "os-conflict");
    let line = violation(&d, "os-conflict").to_string();
    assert!(
        line.contains("spec.os.name") && line.contains("spec.nodeSelector[kubernetes.io/os]"),
        "{line}"
    );
}

#[test]
fn pod_os_name_against_runtime_class_is_an_os_conflict() {
    let object = with_spec(
        pod_with_images(&[NEUTRAL_IMAGE]),
        json!({"os": {"name": "linux"}, "runtimeClassName": "windows-2022"}),
    );
    let d = create(&object, &rc_settings());
    assert_rejected_with(&d, "os-conflict");
    let line = violation(&d, "os-conflict").to_string();
    assert!(
        line.contains("spec.os.name") && line.contains("spec.runtimeClassName"),
        "{line}"
    );
    assert!(line.contains("windows-2022"), "{line}");
}

#[test]
fn runtime_class_against_windows_image_of_other_build_is_a_build_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2019]),
        json!({"runtimeClassName": "windows-2022"}),
    );
    assert_rejected_with(&create(&object, &rc_settings()), "build-conflict");
}

#[test]
fn conflicts_leave_the_object_unpatched() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}}),
    );
    let d = create(&object, &eks());
    assert!(d.patch.is_empty() && d.mutated_object.is_none());
}

// ---- defaultOS ----

#[test]
fn no_signal_with_default_os_linux_is_given_the_linux_selector() {
    let object = pod_with_images(&[NEUTRAL_IMAGE]);
    let d = create(&object, &Settings::default());
    assert!(d.accepted);
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
    assert_idempotent(&object, &d, &Settings::default());
}

#[test]
fn no_signal_with_default_os_none_is_left_alone() {
    let s = settings(json!({"defaultOS": "none", "mutate": false}));
    assert_unchanged(&create(&pod_with_images(&[NEUTRAL_IMAGE]), &s));
    let s = settings(json!({"defaultOS": "none"}));
    assert_unchanged(&create(&pod_with_images(&[NEUTRAL_IMAGE]), &s));
}

#[test]
fn default_os_none_still_places_pods_with_a_signal() {
    let s = settings(json!({"defaultOS": "none"}));
    let d = create(&pod_with_images(&[WIN2022]), &s);
    assert!(d.accepted);
    assert_eq!(
        op_value(&d, "/spec/nodeSelector/kubernetes.io~1os")
            .or(op_value(&d, "/spec/nodeSelector").and_then(|v| v.get("kubernetes.io/os"))),
        Some(&json!("windows"))
    );
}

// ---- Windows Server 2025 hosts run the previous LTSC ----

#[test]

fn ltsc2022_image_pinned_to_a_2025_node_is_no_conflict() {
    // domain-facts.md: "a 2025 host runs ltsc2022 images".
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.26100"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]

fn aks_windows2025_with_ltsc2022_image_is_no_conflict() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"kubernetes.azure.com/os-sku": "Windows2025"}}),
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn ltsc2025_image_pinned_to_a_2022_node_is_a_build_conflict() {
    // The compatibility goes one way only: a 2022 host cannot run ltsc2025 images.
    let object = with_spec(
        pod_with_images(&["mcr.microsoft.com/windows/servercore:ltsc2025"]),
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.20348"}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "build-conflict");
}

#[test]
fn ltsc2019_image_pinned_to_a_2025_node_is_a_build_conflict() {
    // Only the previous LTSC runs on 2025: 2019 does not.
    let object = with_spec(
        pod_with_images(&[WIN2019]),
        json!({"nodeSelector": {"node.kubernetes.io/windows-build": "10.0.26100"}}),
    );
    assert_rejected_with(&create(&object, &Settings::default()), "build-conflict");
}
