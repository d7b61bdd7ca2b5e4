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
