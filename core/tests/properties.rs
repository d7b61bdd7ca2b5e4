//! Properties over generated pods and workloads of every kind, generated
//! settings and node pools (core/tests/props): no panic, rejections that
//! name their field, confinement, no overwrite, idempotence, modes and
//! kinds that agree, and the scheduler oracle. PROPTEST_CASES sets the
//! count (CI-sized by default).

use crate::props::gen::Source;
use proptest::prelude::*;

/// Choices read from proptest's bytes: shrinking the bytes shrinks the case.
struct Bytes<'a>(&'a [u8], usize);

impl Source for Bytes<'_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let b = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        b as usize % n
    }
}

fn case_of(bytes: &[u8]) -> crate::props::gen::Case {
    crate::props::gen::case(&mut Bytes(bytes, 0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn every_property_holds(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        crate::props::check::all(&case_of(&bytes));
    }
}

/// Found by the structure-aware fuzz target: the oracle's RuntimeClass
/// merge refused a spec whose nodeSelector is JSON null, which the plugin
/// reads as unset (plugin/pkg/admission/runtimeclass/admission.go).
#[test]
fn oracle_runtime_class_merge_over_null_node_selector() {
    use serde_json::json;
    let settings = json!({"runtimeClasses": [{"name": "w", "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows"}}}]});
    let spec = json!({"containers": [], "nodeSelector": null, "tolerations": null, "runtimeClassName": "w"});
    let merged = crate::props::oracle::merge_runtime_class(&spec, &settings).expect("merged");
    assert_eq!(
        merged["nodeSelector"],
        json!({"kubernetes.io/os": "windows"})
    );
    let conflicting =
        json!({"nodeSelector": {"kubernetes.io/os": "linux"}, "runtimeClassName": "w"});
    assert!(crate::props::oracle::merge_runtime_class(&conflicting, &settings).is_none());
}

/// Each property only checks cases that reach it (a mutation, a workload
/// without RuntimeClasses, an admitted pod on complete pools): a generator
/// drifting into one outcome would leave `every_property_holds` vacuous.
#[test]
fn generated_cases_reach_every_property() {
    use os_placement_core::Kind;
    const CASES: usize = 1000;
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut byte = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 56) as u8
    };
    let (mut rejected, mut mutated, mut workloads, mut oracle) = (0, 0, 0, 0);
    for _ in 0..CASES {
        let bytes: Vec<u8> = (0..400).map(|_| byte()).collect();
        let case = case_of(&bytes);
        let d = crate::props::check::create(case.kind_name, &case.object, &case.settings);
        rejected += usize::from(!d.accepted);
        mutated += usize::from(d.mutated_object.is_some());
        workloads +=
            usize::from(case.kind != Kind::Pod && case.settings.runtime_classes.is_empty());
        oracle += usize::from(
            d.accepted && case.known_labels_only && crate::props::oracle::complete(&case.pools),
        );
    }
    let counts = [
        ("rejected", rejected),
        ("mutated", mutated),
        ("workloads without RuntimeClasses", workloads),
        ("admitted on complete pools", oracle),
    ];
    for (what, n) in counts {
        assert!(
            n * 20 >= CASES,
            "only {n} of {CASES} cases {what}: {counts:?}"
        );
    }
}

/// Found by the structure-aware fuzz target: a Windows pod (`spec.os.name`)
/// whose own required affinity excludes every Windows build of the pools
/// and every node labelled `beta.kubernetes.io/os: windows`. The policy adds
/// the OS selector and toleration; without the cluster's builds in the
/// settings it cannot know that no other Windows build exists. As written
/// the pod would land on Linux and fail there, so the patch makes nothing
/// worse: the oracle now only asks an admitted pod to land where the pod's
/// own selectors and affinity allow a node that can run it.
#[test]
fn oracle_pod_whose_own_affinity_excludes_every_windows_pool() {
    use serde_json::json;
    let spec = json!({
        "os": {"name": "windows"},
        "containers": [{"name": "c0", "image": "myapp:1809"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "node.kubernetes.io/windows-build", "operator": "NotIn", "values": ["10.0.20348", "10.0.17763"]},
                {"key": "node.kubernetes.io/windows-build", "operator": "NotIn", "values": ["10.0.26100", "10.0.20348"]}]},
            {"matchExpressions": [
                {"key": "beta.kubernetes.io/os", "operator": "NotIn", "values": ["windows"]}]}]}}},
    });
    let settings_value =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let kind = os_placement_core::Kind::Deployment;
    let case = crate::props::gen::Case {
        kind,
        kind_name: "Deployment",
        object: crate::props::gen::wrap(kind, "Deployment", spec, json!({"name": "x"})),
        settings: os_placement_core::Settings::from_value(&settings_value).unwrap(),
        pools: crate::props::oracle::pools(&mut Complete, &settings_value),
        settings_value,
        known_labels_only: true,
    };
    assert!(crate::props::oracle::complete(&case.pools));
    let d = crate::props::check::create(case.kind_name, &case.object, &case.settings);
    assert!(
        d.accepted && d.mutated_object.is_some(),
        "{:?}",
        d.message()
    );
    crate::props::check::scheduler_oracle(&case, &d, "regression");
}

/// Found by the structure-aware fuzz target after the fix above: a
/// HostProcess pod whose image says nothing. The oracle let it "run" on a
/// Linux node, where windowsOptions is ignored, so the policy's Windows
/// selector looked like harm. HostProcess is a Windows feature
/// (WindowsSecurityContextOptions; kubernetes.io, "Create a Windows
/// HostProcess Pod"): such a pod runs on Windows nodes only.
#[test]
fn oracle_host_process_pod_runs_on_windows_only() {
    use serde_json::json;
    let settings =
        json!({"windowsTaint": {"key": "os", "value": "windows", "effect": "NoSchedule"}});
    let pools = crate::props::oracle::pools(&mut Complete, &settings);
    // "Only" needs Linux pools among them.
    assert!(crate::props::oracle::complete(&pools));
    let host_process = json!({
        "hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "c0", "image": "myapp:1809"}],
    });
    let plain = json!({"containers": [{"name": "c0", "image": "myapp:1809"}]});
    for pool in &pools {
        let runs = |spec| crate::props::oracle::runs(spec, pool, &settings, true);
        assert_eq!(runs(&host_process), Some(pool.windows), "{}", pool.name);
        assert_eq!(runs(&plain), Some(true), "{}", pool.name);
    }
}

/// A source that always picks the first choice: the oracle's pools then
/// include every kind of node.
struct Complete;

impl Source for Complete {
    fn below(&mut self, _: usize) -> usize {
        0
    }
}
