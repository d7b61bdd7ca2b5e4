//! Cases for mutants cargo-mutants found uncaught in the rule modules
//! (see README, Development), each named after the mutated code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::*;
use serde_json::json;

/// affinity.rs `expression_placement`: `NotIn` reads as "every node but
/// those" only for labels whose values map exactly to nodes (OS, build).
/// `kubernetes.azure.com/os-sku NotIn [Windows2019]` does not exclude the
/// 2019 nodes the policy knows of (a node may lack the label, or carry
/// another SKU name), so a 2019 image beside it is no conflict; with
/// `kubernetes.io/os NotIn [windows]` it is.
/// Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity
/// (NotIn matches nodes without the label).
#[test]
fn affinity_not_in_is_exact_only_for_os_and_build_labels() {
    let spec = |key: &str, value: &str| {
        pod(json!({
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2019"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "NotIn", "values": [value]}]}]}}},
        }))
    };
    let sku = create(&spec("kubernetes.azure.com/os-sku", "Windows2019"), &eks());
    assert!(sku.accepted, "{:?}", sku.message());
    let os = create(&spec("kubernetes.io/os", "windows"), &eks());
    assert!(!os.accepted);
    assert_eq!(codes(&os), vec!["os-conflict"], "{:?}", os.message());
}

/// affinity.rs `describe`: a conflict with required node affinity quotes
/// the expressions that bear on placement (OS and build labels), so the
/// user sees which one to change; others are left out.
#[test]
fn affinity_conflict_message_quotes_the_placement_expression() {
    let object = pod(json!({
        "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/servercore:ltsc2019"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}},
    }));
    let d = create(&object, &eks());
    assert!(!d.accepted);
    let m = message(&d);
    assert!(m.contains("kubernetes.io/os In [linux]"), "{m}");
    assert!(!m.contains("disktype"), "{m}");
}

/// build.rs `WindowsBuild::parse_version`: a revision must be digits and
/// not empty ("10.0.17763." and "10.0.17763.x" are not versions).
#[test]
fn windows_version_revision_must_be_digits() {
    use os_placement_core::build::WindowsBuild;
    assert_eq!(
        WindowsBuild::parse_version("10.0.17763.4131"),
        Some(WindowsBuild::LTSC2019)
    );
    assert_eq!(
        WindowsBuild::parse_version("10.0.17763"),
        Some(WindowsBuild::LTSC2019)
    );
    assert_eq!(WindowsBuild::parse_version("10.0.17763."), None);
    assert_eq!(WindowsBuild::parse_version("10.0.17763.x1"), None);
    assert_eq!(WindowsBuild::parse_version("10.0..1"), None);
}
