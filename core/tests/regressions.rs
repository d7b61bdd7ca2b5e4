//! Regression tests for what the fuzz targets, the property tests and the
//! hostile-input tests found, each named after the bug.

use crate::common::*;
use serde_json::{json, Value};

const WINDOWS: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";

fn containers(n: usize, image: &str) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("c{i}"), "image": image}))
        .collect()
}

/// Found by the hostile-input tests: every container was compared with
/// every earlier one, so 10,000 containers took over the 2 s policy
/// timeout through the module (a blocked pod creation under
/// failurePolicy: Fail). The scan is now skipped when a container agrees
/// with all kept so far. The cost per container is measured by `make
/// bench` (1 to 1,000 containers); here, the answer.
#[test]
fn quadratic_conflict_scan_over_10000_containers() {
    let object = pod(json!({"containers": containers(10_000, WINDOWS)}));
    let d = create(&object, &eks());
    assert!(d.accepted && !d.patch.is_empty(), "{:?}", d.message());
}

/// The skipped scan must still find the odd one out, once, at its path.
#[test]
fn quadratic_conflict_scan_still_names_the_odd_container() {
    let mut list = containers(3_000, "alpine:3.19");
    list[2_999]["image"] = json!(WINDOWS);
    let d = create(&pod(json!({"containers": list})), &eks());
    assert!(!d.accepted);
    assert_eq!(codes(&d), vec!["os-conflict"], "{:?}", d.message());
    assert_eq!(d.violations[0].path, "spec.containers[2999].image");
}

/// From the hostile-input tests: 100,000 tolerations (5.7 MB, beyond the
/// API server's request limit) take over 2 s through the module, JSON
/// parsing alone 1.5 s (measured in `make test`'s hostile inputs); here,
/// the answer: placed, none of them taken for the Windows toleration.
#[test]
fn tolerations_up_to_100000() {
    let tolerations: Vec<Value> = (0..100_000)
        .map(|i| json!({"key": format!("k{i}"), "operator": "Exists", "effect": "NoSchedule"}))
        .collect();
    let object = pod(json!({"containers": containers(1, WINDOWS), "tolerations": tolerations}));
    let d = create(&object, &eks());
    assert!(d.accepted, "{:?}", d.message());
    assert!(
        d.patch.iter().any(|op| op.path == "/spec/tolerations/-"),
        "{:?}",
        d.patch
    );
}

/// Found by the structure-aware fuzz target's scheduler oracle: an
/// ltsc2022 image under required affinity `windows-build NotIn
/// [10.0.20348]` was pinned to 10.0.20348, which the affinity excludes, so
/// the pod landed nowhere. A 2025 node runs ltsc2022 images (hcsshim
/// CheckHostAndContainerCompat, ../shared/domain-facts.md): pin 10.0.26100.
#[test]
fn build_pin_contradicted_affinity_that_excludes_the_image_build() {
    let affinity = |values: Value| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node.kubernetes.io/windows-build", "operator": "NotIn", "values": values}]}]}}})
    };
    let deployment = |values: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": WINDOWS}], "affinity": affinity(values)}}}})
    };
    let d = create(&deployment(json!(["10.0.20348"])), &eks());
    assert!(d.accepted, "{:?}", d.message());
    let out = result_object(&deployment(json!(["10.0.20348"])), &d);
    let selector = &out["spec"]["template"]["spec"]["nodeSelector"];
    assert_eq!(
        selector["node.kubernetes.io/windows-build"], "10.0.26100",
        "{selector}"
    );
    // Unchanged when the affinity leaves the image's own build.
    let d = create(&deployment(json!(["10.0.17763"])), &eks());
    let out = result_object(&deployment(json!(["10.0.17763"])), &d);
    let selector = &out["spec"]["template"]["spec"]["nodeSelector"];
    assert_eq!(
        selector["node.kubernetes.io/windows-build"], "10.0.20348",
        "{selector}"
    );
}
