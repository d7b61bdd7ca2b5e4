//! Placements no node can satisfy are rejected as `unschedulable`, with a
//! message saying that no node carries the value (and which values nodes
//! do carry), never that the pod "needs Linux".
//!
//! Sources:
//! - `Gt`/`Lt`: k8s.io/apimachinery pkg/labels/selector.go
//!   (`NewRequirement`: exactly one value that `strconv.ParseInt` accepts;
//!   `Requirement.Matches`: a node label that does not parse as an int64
//!   never matches) and k8s.io/component-helpers
//!   scheduling/corev1/nodeaffinity/nodeaffinity.go (a term whose
//!   requirement fails to parse matches no node; terms are ORed).
//! - `kubernetes.io/os`: `linux` or `windows` (validation.go `validOS`).
//! - `node.kubernetes.io/windows-build`: major.minor.build, set by the kubelet.
//! - `kubernetes.azure.com/os-sku`: the AKS API's OSSKU values, case-sensitive.
//! - `cloud.google.com/gke-windows-os-version`: GKE Windows node pools, 2019,
//!   2022 or 2025.

use crate::common::checked_create as create;
use crate::common::*;
use os_placement_core::resolve;
use os_placement_core::FieldPath;
use os_placement_core::PodView;
use os_placement_core::WindowsBuild;
use os_placement_core::{Decision, Diagnostic, Settings};
use os_placement_core::{Os, Placement};
use serde_json::{json, Value};

const AFFINITY_PATH: &str =
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
const BUILD: &str = "node.kubernetes.io/windows-build";
const OS: &str = "kubernetes.io/os";
const AKS: &str = "kubernetes.azure.com/os-sku";
const GKE: &str = "cloud.google.com/gke-windows-os-version";

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": op, "values": values})
}

fn affinity_pod(terms: Value, images: &[&str]) -> Value {
    with_spec(
        pod_with_images(images),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
    )
}

fn selector_pod(key: &str, value: &str, images: &[&str]) -> Value {
    with_spec(
        pod_with_images(images),
        json!({"nodeSelector": { key: value }}),
    )
}

fn placement_of(object: &Value) -> Placement {
    let pod = PodView::read(&object["spec"], FieldPath::root().field("spec")).unwrap();
    resolve(&pod, &Settings::default()).placement
}

/// Asserts the only finding is `unschedulable` at `path`, and returns it.
fn unschedulable<'d>(d: &'d Decision, path: &str) -> &'d Diagnostic {
    assert_rejected_with(d, "unschedulable");
    assert_eq!(codes(d), vec!["unschedulable"], "{}", message(d));
    let v = &d.violations[0];
    assert_eq!(v.path, path, "{v}");
    assert!(v.message.contains("can never be scheduled"), "{v}");
    assert!(!v.message.contains("needs Linux"), "{v}");
    v
}

// ---- Gt / Lt ----

#[test]
fn gt_on_the_windows_build_label_matches_no_node() {
    for (op, bound) in [("Gt", "17763"), ("Lt", "20348")] {
        let object = affinity_pod(
            json!([{"matchExpressions": [expr(BUILD, op, &[bound])]}]),
            &[WIN2022],
        );
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, AFFINITY_PATH);
        assert!(
            v.message
                .contains(&format!("{BUILD} {op} {bound} matches no node"))
                && v.message.contains("compares integers"),
            "{v}"
        );
    }
}

#[test]
fn gt_lt_on_os_and_aks_labels_match_no_node() {
    for key in [OS, "beta.kubernetes.io/os", AKS] {
        let object = affinity_pod(
            json!([{"matchExpressions": [expr(key, "Gt", &["0"])]}]),
            &[NEUTRAL_IMAGE],
        );
        assert!(placement_of(&object).is_empty(), "{key}");
        unschedulable(&create(&object, &Settings::default()), AFFINITY_PATH);
    }
}

#[test]
fn gt_with_a_value_that_is_not_an_integer_matches_no_node_on_any_label() {
    // NewRequirement rejects the bound, so the scheduler matches no node
    // with this term, whatever the label.
    for (key, bound) in [
        (BUILD, "10.0.17763"),
        ("example.com/tier", "v2"),
        ("example.com/gpus", "1.5"),
    ] {
        let object = affinity_pod(
            json!([{"matchExpressions": [expr(key, "Gt", &[bound])]}]),
            &[NEUTRAL_IMAGE],
        );
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, AFFINITY_PATH);
        assert!(v.message.contains("takes exactly one integer value"), "{v}");
    }
}

#[test]
fn gt_with_an_integer_on_an_unrelated_label_is_no_signal() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr("example.com/gpus", "Gt", &["1"]), expr("example.com/ram-gb", "Lt", &["-1"])]}]),
        &[LINUX_IMAGE],
    );
    assert_eq!(placement_of(&object), Placement::linux());
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn gt_lt_on_the_gke_version_compare_its_integer_years() {
    let gt_2019 = affinity_pod(
        json!([{"matchExpressions": [expr(GKE, "Gt", &["2019"])]}]),
        &[WIN2022],
    );
    let p = placement_of(&gt_2019);
    assert_eq!(p.os(), Some(Os::Windows));
    let builds = p.windows.unwrap();
    assert!(builds.allows(WindowsBuild::LTSC2022) && builds.allows(WindowsBuild::LTSC2025));
    assert!(!builds.allows(WindowsBuild::LTSC2019));
    assert!(create(&gt_2019, &Settings::default()).accepted);

    let lt_2022 = affinity_pod(
        json!([{"matchExpressions": [expr(GKE, "Lt", &["2022"])]}]),
        &[WIN2022],
    );
    assert_rejected_with(&create(&lt_2022, &Settings::default()), "build-conflict");

    let gt_2025 = affinity_pod(
        json!([{"matchExpressions": [expr(GKE, "Gt", &["2025"])]}]),
        &[WIN2022],
    );
    let d = create(&gt_2025, &Settings::default());
    let v = unschedulable(&d, AFFINITY_PATH);
    assert!(v.message.contains("2019, 2022, 2025"), "{v}");
}

#[test]
fn an_impossible_term_does_not_sink_the_other_terms() {
    // Terms are ORed: the second one still admits Windows nodes.
    let object = affinity_pod(
        json!([
            {"matchExpressions": [expr(BUILD, "Gt", &["17763"])]},
            {"matchExpressions": [expr(OS, "In", &["windows"])]}
        ]),
        &[WIN2022],
    );
    assert_eq!(placement_of(&object).os(), Some(Os::Windows));
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn every_impossible_term_is_named() {
    let object = affinity_pod(
        json!([
            {"matchExpressions": [expr(BUILD, "Gt", &["17763"])]},
            {"matchExpressions": [expr(AKS, "In", &["windows2022"])]}
        ]),
        &[WIN2022],
    );
    let d = create(&object, &Settings::default());
    let v = unschedulable(&d, AFFINITY_PATH);
    assert!(v.message.contains(&format!("{BUILD} Gt 17763")), "{v}");
    assert!(
        v.message
            .contains(&format!("no node carries {AKS}=windows2022")),
        "{v}"
    );
}

// ---- values the platform labels never take ----

#[test]
fn aks_os_sku_in_the_wrong_case_is_unschedulable_not_linux() {
    for (value, right) in [
        ("windows2022", "Windows2022"),
        ("ubuntu", "Ubuntu"),
        ("AZURELINUX", "AzureLinux"),
    ] {
        let object = selector_pod(AKS, value, &[WIN2022]);
        assert!(placement_of(&object).is_empty(), "{value}");
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, &format!("spec.nodeSelector[{AKS}]"));
        assert!(
            v.message
                .contains(&format!("no node carries {AKS}={value}")),
            "{v}"
        );
        assert!(v.message.contains(&format!("did you mean {right}?")), "{v}");
        assert!(v.fix.contains("use a value nodes carry"), "{v}");
    }
}

#[test]
fn aks_os_sku_values_outside_the_aks_api_are_unschedulable() {
    for value in ["Windows2016", "Debian", "Windows", ""] {
        let object = selector_pod(AKS, value, &[NEUTRAL_IMAGE]);
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, &format!("spec.nodeSelector[{AKS}]"));
        assert!(
            v.message.contains("AKS values are case-sensitive")
                && v.message.contains("Windows2025")
                && v.message.contains("AzureLinux"),
            "{v}"
        );
    }
}

#[test]
fn aks_os_sku_values_of_the_aks_api_place_the_pod() {
    for value in [
        "Ubuntu",
        "Ubuntu2204",
        "Ubuntu2404",
        "AzureLinux",
        "AzureLinux3",
        "AzureContainerLinux",
        "CBLMariner",
        "Mariner",
        "Flatcar",
    ] {
        let p = placement_of(&selector_pod(AKS, value, &[NEUTRAL_IMAGE]));
        assert_eq!(p, Placement::linux(), "{value}");
    }
    for (value, build) in [
        ("Windows2019", WindowsBuild::LTSC2019),
        ("Windows2022", WindowsBuild::LTSC2022),
        ("Windows2025", WindowsBuild::LTSC2025),
    ] {
        let p = placement_of(&selector_pod(AKS, value, &[NEUTRAL_IMAGE]));
        assert_eq!(p.windows.and_then(|b| b.single()), Some(build), "{value}");
        assert!(!p.linux, "{value}");
    }
    let annual = placement_of(&selector_pod(AKS, "WindowsAnnual", &[NEUTRAL_IMAGE]));
    assert_eq!(annual.os(), Some(Os::Windows));
}

#[test]
fn gke_windows_version_outside_2019_2022_2025_is_unschedulable() {
    for value in ["ltsc2022", "2016", "22", "Windows2022", "2028"] {
        let object = selector_pod(GKE, value, &[WIN2022]);
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, &format!("spec.nodeSelector[{GKE}]"));
        assert!(
            v.message
                .contains(&format!("no node carries {GKE}={value}"))
                && v.message.contains("2019, 2022, 2025"),
            "{v}"
        );
    }
    let p = placement_of(&selector_pod(GKE, "2025", &[NEUTRAL_IMAGE]));
    assert_eq!(
        p.windows.and_then(|b| b.single()),
        Some(WindowsBuild::LTSC2025)
    );
}

#[test]
fn os_label_values_other_than_linux_and_windows_are_unschedulable() {
    for value in ["Linux", "Windows", "win", "windows-2022"] {
        let object = selector_pod(OS, value, &[NEUTRAL_IMAGE]);
        let d = create(&object, &Settings::default());
        let v = unschedulable(&d, &format!("spec.nodeSelector[{OS}]"));
        assert!(
            v.message.contains(&format!("no node carries {OS}={value}"))
                && v.message.contains("linux or windows"),
            "{v}"
        );
    }
}

#[test]
fn windows_build_label_values_name_the_form_and_the_build() {
    let d = create(
        &selector_pod(BUILD, "ltsc2019", &[NEUTRAL_IMAGE]),
        &Settings::default(),
    );
    let v = unschedulable(&d, &format!("spec.nodeSelector[{BUILD}]"));
    assert!(v.message.contains("10.0.N"), "{v}");
    assert!(v.message.contains("ltsc2019 is build 10.0.17763"), "{v}");
    let d = create(
        &selector_pod(BUILD, "10.0.17763.4131", &[NEUTRAL_IMAGE]),
        &Settings::default(),
    );
    let v = unschedulable(&d, &format!("spec.nodeSelector[{BUILD}]"));
    assert!(v.message.contains("more than three parts"), "{v}");
}

#[test]
fn affinity_in_with_only_unknown_values_is_unschedulable() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr(AKS, "In", &["windows2022", "Windows2022 "])]}]),
        &[WIN2022],
    );
    let d = create(&object, &Settings::default());
    let v = unschedulable(&d, AFFINITY_PATH);
    assert!(v.message.contains("did you mean Windows2022?"), "{v}");
}

#[test]
fn affinity_in_with_one_value_nodes_carry_is_satisfiable() {
    let object = affinity_pod(
        json!([{"matchExpressions": [expr(AKS, "In", &["windows2022", "Windows2022"])]}]),
        &[WIN2022],
    );
    let d = create(&object, &Settings::default());
    assert!(d.accepted, "{}", message(&d));
}

#[test]
fn affinity_os_does_not_exist_says_every_node_carries_it() {
    let object = affinity_pod(
        json!([{"matchExpressions": [{"key": OS, "operator": "DoesNotExist"}]}]),
        &[NEUTRAL_IMAGE],
    );
    let d = create(&object, &Settings::default());
    let v = unschedulable(&d, AFFINITY_PATH);
    assert!(
        v.message.contains("every node carries kubernetes.io/os"),
        "{v}"
    );
}

#[test]
fn validate_only_rejects_the_same_way() {
    let s = Settings {
        mutate: false,
        ..Settings::default()
    };
    let d = create(&selector_pod(AKS, "windows2022", &[WIN2022]), &s);
    unschedulable(&d, &format!("spec.nodeSelector[{AKS}]"));
}

#[test]
fn workload_templates_name_the_full_path() {
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"nodeSelector": {AKS: "windows2022"},
            "containers": [{"name": "c", "image": WIN2022}]}}}});
    let d = create(&object, &Settings::default());
    unschedulable(&d, &format!("spec.template.spec.nodeSelector[{AKS}]"));
}
