//! Do no harm: pods that choose their nodes by other means, taints as the
//! scheduler and the taint manager apply them, ephemeral containers on a
//! running pod, and messages that fit the API server.

use crate::common::*;
use os_placement_core::{Decision, Settings, MAX_WARNING_CHARS};
use serde_json::{json, Value};

/// A pod of the private image, which the reference rules cannot place.
fn private_pod(extra: Value) -> Value {
    with_spec(pod_with_images(&[PRIVATE]), extra)
}

fn eks_with(effect: &str) -> Settings {
    settings(json!({"windowsTaint": {"key": "os", "value": "windows", "effect": effect}}))
}

fn adds_os_fields(d: &Decision) -> bool {
    d.patch.iter().any(|op| {
        op.path.ends_with("/os")
            || op.path.contains("kubernetes.io~1os")
            || op.value.get("kubernetes.io/os").is_some()
            || op.path.contains("windows-build")
            || op.value.get("node.kubernetes.io/windows-build").is_some()
    })
}

fn warning<'d>(d: &'d Decision, code: &str) -> &'d os_placement_core::Diagnostic {
    d.warnings
        .iter()
        .find(|w| w.code.as_str() == code)
        .unwrap_or_else(|| panic!("no {code} warning in {:?}", d.warnings))
}

// ---- 1. Pods that choose their nodes by other means ----

/// Node pool labels set by EKS managed node groups, Karpenter, AKS agent
/// pools and GKE node pools (each platform's node label documentation).
#[test]
fn node_pool_selector_without_os_signal_gets_no_os_selector() {
    for (key, value) in [
        ("eks.amazonaws.com/nodegroup", "win-ng"),
        ("karpenter.sh/nodepool", "windows"),
        ("kubernetes.azure.com/agentpool", "npwin"),
        ("cloud.google.com/gke-nodepool", "windows-pool"),
        ("example.com/team-pool", "billing"),
    ] {
        let object = private_pod(json!({"nodeSelector": {key: value}}));
        for s in [Settings::default(), eks()] {
            let d = create(&object, &s);
            assert_unchanged(&d);
            let w = warning(&d, "os-undetermined");
            assert!(w.message.contains(&format!("{key}={value}")), "{w}");
            assert!(
                w.path.contains("nodeSelector") && w.path.contains(key),
                "{w}"
            );
        }
    }
}

#[test]
fn os_neutral_selectors_still_get_the_default_os() {
    // Architecture and zone labels are carried by Linux and Windows nodes alike.
    for (key, value) in [
        ("kubernetes.io/arch", "amd64"),
        ("topology.kubernetes.io/zone", "eu-west-1a"),
    ] {
        let object = private_pod(json!({"nodeSelector": {key: value}}));
        let d = create(&object, &Settings::default());
        assert!(d.accepted);
        assert_eq!(
            op_value(&d, "/spec/nodeSelector/kubernetes.io~1os"),
            Some(&json!("linux")),
            "{key}"
        );
    }
}

#[test]
fn node_pool_selector_with_windows_image_is_still_placed() {
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"nodeSelector": {"eks.amazonaws.com/nodegroup": "win-ng"}}),
    );
    let d = create(&object, &eks());
    assert!(d.accepted);
    assert_eq!(
        op_value(&d, "/spec/nodeSelector/kubernetes.io~1os"),
        Some(&json!("windows"))
    );
}

/// Scheduler: required node affinity on kubernetes.io/hostname or
/// matchFields metadata.name picks specific nodes (k8s.io/component-helpers
/// scheduling/corev1/nodeaffinity).
#[test]
fn affinity_to_specific_nodes_gets_no_os_selector() {
    for term in [
        json!({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["ip-10-0-1-5"]}]}),
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["akswin000000"]}]}),
    ] {
        let object = private_pod(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}));
        let d = create(&object, &Settings::default());
        assert_unchanged(&d);
        let w = warning(&d, "os-undetermined");
        assert!(w.path.contains("nodeSelectorTerms[0]"), "{w}");
    }
}

#[test]
fn preferred_affinity_is_not_a_choice_of_nodes() {
    let object = private_pod(json!({"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference":
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}}]}}}));
    let d = create(&object, &Settings::default());
    assert!(
        op_value(&d, "/spec/nodeSelector").is_some(),
        "{:?}",
        d.patch
    );
}

/// A pod with spec.nodeName bypasses the scheduler; the kubelet rejects it
/// if a selector does not match its node (pkg/kubelet/lifecycle predicate).
#[test]
fn bound_pod_gets_no_selector() {
    let object = private_pod(json!({"nodeName": "ip-10-0-1-5"}));
    let d = create(&object, &Settings::default());
    assert_unchanged(&d);
    warning(&d, "os-undetermined");

    let windows = with_spec(
        pod_with_images(&[WIN2019]),
        json!({"nodeName": "akswin000001"}),
    );
    let d = create(&windows, &eks());
    assert!(d.accepted, "{}", message(&d));
    assert!(
        op_value(&d, "/spec/nodeSelector").is_none(),
        "{:?}",
        d.patch
    );
    let w = warning(&d, "bound-to-node");
    assert!(w.message.contains("akswin000001"), "{w}");
    // A toleration cannot make a pod less schedulable: it is still added.
    assert_eq!(
        op_value(&d, "/spec/tolerations"),
        Some(&json!([eks_toleration()]))
    );
}

#[test]
fn toleration_of_the_windows_taint_is_evidence_for_windows_not_linux() {
    for toleration in [
        eks_toleration(),
        json!({"key": "os", "operator": "Exists"}),
        json!({"key": "node.kubernetes.io/os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}),
    ] {
        let object = private_pod(json!({"tolerations": [toleration]}));
        let d = create(&object, &eks());
        assert_unchanged(&d);
        warning(&d, "os-undetermined");
    }
    // Tolerating every taint says nothing about Windows: the Linux default applies.
    let object = private_pod(json!({"tolerations": [{"operator": "Exists"}]}));
    let d = create(&object, &eks());
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
}

#[test]
fn validate_only_mode_does_not_reject_an_undetermined_pod() {
    let object = private_pod(json!({"nodeSelector": {"karpenter.sh/nodepool": "default"}}));
    let s = settings(json!({"mutate": false}));
    let d = create(&object, &s);
    assert!(d.accepted, "{}", message(&d));
    warning(&d, "os-undetermined");
}

// ---- 4. Taints as the scheduler and the taint manager apply them ----

/// Scheduler TaintToleration filter: only NoSchedule and NoExecute taints
/// filter nodes (pkg/scheduler/framework/plugins/tainttoleration).
#[test]
fn prefer_no_schedule_taint_keeps_no_linux_pod_off_windows() {
    let object = pod_with_images(&[LINUX_IMAGE]);
    let d = create(&object, &eks_with("PreferNoSchedule"));
    assert_eq!(
        op_value(&d, "/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
    // Negative: a NoSchedule taint does keep it off, so nothing is added.
    assert_unchanged(&create(&object, &eks_with("NoSchedule")));
}

/// Taint manager: a pod tolerating a NoExecute taint with tolerationSeconds
/// is evicted after the shortest matching time (pkg/controller/tainteviction,
/// getMinTolerationTime).
#[test]
fn windows_pod_with_expiring_toleration_of_a_no_execute_taint_is_rejected() {
    let expiring = json!({"key": "os", "operator": "Equal", "value": "windows",
        "effect": "NoExecute", "tolerationSeconds": 300});
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [expiring]}),
    );
    let d = create(&object, &eks_with("NoExecute"));
    assert_rejected_with(&d, "toleration-expires");
    let v = &d.violations[0];
    assert_eq!(v.path, "spec.tolerations[0].tolerationSeconds");
    assert!(v.message.contains("300 s"), "{v}");
    assert!(v.fix.contains("remove tolerationSeconds"), "{v}");

    // Another matching toleration without seconds does not help: the shortest counts.
    let both = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [{"key": "os", "operator": "Exists"},
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}),
    );
    let d = create(&both, &eks_with("NoExecute"));
    assert_rejected_with(&d, "toleration-expires");
    assert_eq!(
        d.violations[0].path,
        "spec.tolerations[1].tolerationSeconds"
    );
}

#[test]
fn toleration_seconds_that_do_not_bear_on_the_windows_taint_are_accepted() {
    // Not-ready tolerations from DefaultTolerationSeconds do not match os=windows.
    let not_ready = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 300});
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [not_ready]}),
    );
    let d = create(&object, &eks_with("NoExecute"));
    assert!(d.accepted, "{}", message(&d));
    // tolerationSeconds only matters for NoExecute taints.
    let seconds = json!({"key": "os", "operator": "Exists", "tolerationSeconds": 30});
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"tolerations": [seconds]}),
    );
    assert!(create(&object, &eks_with("NoSchedule")).accepted);
}

// ---- 6. Ephemeral containers on UPDATE ----

fn running(spec_extra: Value) -> Value {
    let mut p = private_pod(spec_extra);
    p["spec"]["nodeName"] = json!("node-1");
    p
}

fn debug_with(old: &Value, image: &str) -> Value {
    let mut new = old.clone();
    new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": image}]);
    new
}

const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";

#[test]
fn windows_debug_container_on_a_pod_kept_off_windows_by_the_taint_is_rejected() {
    let old = running(json!({}));
    let d = update(&debug_with(&old, NANOSERVER), &old, &eks());
    assert_rejected_with(&d, "ephemeral-container-mismatch");
    assert!(message(&d).contains("Linux"), "{}", message(&d));
    // A Linux debug container fits.
    assert!(update(&debug_with(&old, "busybox:1.36"), &old, &eks()).accepted);
}

#[test]
fn windows_debug_container_on_a_pod_placed_by_default_os_is_rejected() {
    let old = running(json!({}));
    let d = update(&debug_with(&old, NANOSERVER), &old, &Settings::default());
    assert_rejected_with(&d, "ephemeral-container-mismatch");
}

#[test]
fn debug_container_on_a_pod_of_unknown_os_is_accepted() {
    let old = running(json!({}));
    let none = settings(json!({"defaultOS": "none"}));
    assert!(update(&debug_with(&old, NANOSERVER), &old, &none).accepted);
    // Tolerating the Windows taint, with defaultOS none: it may be on Windows.
    let old = running(json!({"tolerations": [eks_toleration()]}));
    let none_eks = settings(json!({"defaultOS": "none",
        "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}}));
    assert!(update(&debug_with(&old, NANOSERVER), &old, &none_eks).accepted);
}

// ---- 8. Messages that say the real problem and fit the API server ----

#[test]
fn tolerate_all_no_schedule_is_described_as_every_no_schedule_taint() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]}),
    );
    let d = create(
        &object,
        &settings(json!({"mutate": false,
        "windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}})),
    );
    let m = message(&d);
    assert!(m.contains("every NoSchedule taint"), "{m}");
    assert!(!m.contains("taint:NoSchedule"), "{m}");
}

#[test]
fn windows_options_are_rendered_by_their_fields() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE]),
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}),
    );
    let d = create(&object, &eks());
    let m = message(&d);
    assert!(m.contains("runAsUserName"), "{m}");
    assert!(!m.contains("= set"), "{m}");
}

#[test]
fn one_linux_sidecar_in_a_windows_pod_is_one_violation() {
    let object = with_spec(
        pod_with_images(&[LINUX_IMAGE, WIN2022]),
        json!({"nodeSelector": {"kubernetes.io/os": "windows"}}),
    );
    let d = create(&object, &eks());
    assert_eq!(codes(&d), vec!["os-conflict"], "{}", message(&d));
    assert!(
        d.violations[0].path.contains("containers[0]"),
        "{}",
        message(&d)
    );
}

#[test]
fn warnings_fit_the_api_server_limit_even_for_long_image_names() {
    let long = format!(
        "mcr.microsoft.com/dotnet/framework/aspnet-{}:4.8",
        "x".repeat(300)
    );
    let d = create(&pod_with_images(&[&long]), &eks());
    assert!(!d.warnings.is_empty());
    for line in d.warning_lines() {
        assert!(line.chars().count() <= MAX_WARNING_CHARS, "{line}");
    }
}

// ---- Property: other means of choosing nodes are never contradicted ----

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const POOL_KEYS: &[&str] = &[
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "cloud.google.com/gke-nodepool",
    "node-role.kubernetes.io/worker",
    "example.com/pool",
];
const UNKNOWN_IMAGES: &[&str] = &[
    PRIVATE,
    "registry.k8s.io/pause:3.9",
    "ghcr.io/acme/tool@sha256:abc",
];
const ANY_IMAGES: &[&str] = &[PRIVATE, LINUX_IMAGE, WIN2019, WIN2022, WIN_NO_BUILD];

fn generated_selection(rng: &mut Rng) -> Value {
    let mut spec = json!({});
    if rng.chance(50) {
        spec["nodeSelector"] = json!({*rng.pick(POOL_KEYS): "p"});
    }
    if rng.chance(30) {
        let term = if rng.chance(50) {
            json!({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n"]}]})
        } else {
            json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n"]}]})
        };
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}});
    }
    if rng.chance(30) || spec.as_object().is_some_and(|m| m.is_empty()) {
        spec["tolerations"] = json!([{"key": "os", "operator": "Equal", "value": "windows"}]);
    }
    spec
}

fn generated_settings(rng: &mut Rng) -> Settings {
    let mut v = json!({});
    if rng.chance(60) {
        v["windowsTaint"] = json!({"key": "os", "value": "windows",
            "effect": *rng.pick(&["NoSchedule", "PreferNoSchedule", "NoExecute"])});
    }
    for key in ["mutate", "setPodOS", "pinWindowsBuild"] {
        if rng.chance(30) {
            v[key] = json!(rng.chance(50));
        }
    }
    settings(v)
}

#[test]
fn property_pods_choosing_nodes_by_other_means_get_no_os_selector() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for case in 0..2000 {
        let s = generated_settings(&mut rng);
        let images: Vec<&str> = (0..1 + rng.next() % 3)
            .map(|_| *rng.pick(UNKNOWN_IMAGES))
            .collect();
        let object = with_spec(pod_with_images(&images), generated_selection(&mut rng));
        let d = create(&object, &s);
        assert!(
            d.accepted,
            "case {case}: {object} rejected: {}",
            message(&d)
        );
        assert!(
            !adds_os_fields(&d),
            "case {case}: {object} patched {:?}",
            d.patch
        );
        assert!(
            d.warnings
                .iter()
                .any(|w| w.code.as_str() == "os-undetermined"),
            "case {case}"
        );
    }
}

#[test]
fn property_bound_pods_never_get_a_selector() {
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    let (mut accepted, mut patched) = (0, 0);
    for case in 0..2000 {
        let s = generated_settings(&mut rng);
        let images: Vec<&str> = (0..1 + rng.next() % 2)
            .map(|_| *rng.pick(ANY_IMAGES))
            .collect();
        let object = with_spec(pod_with_images(&images), json!({"nodeName": "node-7"}));
        let d = create(&object, &s);
        assert!(
            !d.patch.iter().any(|op| op.path.contains("/nodeSelector")),
            "case {case}: {object} patched {:?}",
            d.patch
        );
        accepted += usize::from(d.accepted);
        patched += usize::from(!d.patch.is_empty());
    }
    // A rejection has no patch: enough admitted (and mutated) bound pods
    // must be among the cases for the check above to mean anything.
    assert!(
        accepted >= 1000 && patched >= 100,
        "{accepted} accepted, {patched} patched"
    );
}

/// Every warning of every bundled example, under every example settings
/// file, fits the API server's limit before any truncation.
#[test]
fn example_warnings_fit_the_api_server_limit_untruncated() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut manifests: Vec<_> = std::fs::read_dir(root.join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    manifests.sort();
    let settings_files: Vec<_> = std::fs::read_dir(root.join("settings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(manifests.len() > 20 && settings_files.len() > 5);
    let mut checked = 0;
    for s in &settings_files {
        let s = settings(yaml(&std::fs::read_to_string(s).unwrap()));
        for m in &manifests {
            let object = yaml(&std::fs::read_to_string(m).unwrap());
            for w in create(&object, &s).warnings {
                checked += 1;
                let n = w.to_string().chars().count();
                assert!(n <= MAX_WARNING_CHARS, "{}: {n} chars: {w}", m.display());
            }
        }
    }
    assert!(checked > 10, "only {checked} warnings seen");
}

#[test]
fn missing_selector_message_cites_the_image_before_other_fields() {
    // Regression: the CronJob example's message cited windowsOptions while its
    // comment (and the user) looked at the Windows image.
    let object = with_spec(
        pod_with_images(&[WIN2022]),
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}),
    );
    let d = create(&object, &settings(json!({"mutate": false})));
    let m = message(&d);
    assert!(
        m.contains(&format!("spec.containers[0].image = \"{WIN2022}\"")),
        "{m}"
    );
    // With no Windows image, the other decisive field is cited.
    let object = with_spec(
        pod_with_images(&[PRIVATE]),
        json!({"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}),
    );
    let m = message(&create(&object, &settings(json!({"mutate": false}))));
    assert!(m.contains("windowsOptions = {runAsUserName"), "{m}");
}
