//! Where a pod can land: for each node pool, whether the scheduler would
//! place the pod there and whether its containers could run there.
//!
//! Scheduling is the scheduling model's (`scheduling`): NodeAffinity and
//! TaintToleration, with the pod's RuntimeClass (declared in the settings
//! or read from the cluster) merged first, as the RuntimeClass admission
//! plugin does. Running is the core's own reading of the containers
//! (images, with their registry platforms when the facts hold them,
//! `windowsOptions`, `spec.os.name`) against the pool's OS and build.

use serde::Serialize;
use serde_json::Value;

use crate::input::facts::Facts;
use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::review::locate_pod_spec;
use crate::input::settings::Settings;
use crate::placement::cluster_settings::complete;
use crate::scheduling::runtime_class::{Blocker, PodScheduling};
use crate::signals::resolve::{resolve_with, Signal, Source};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::FieldPath;
use crate::vocab::kinds::{Kind, SUPPORTED_KINDS};

/// Whether the containers can run on a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// Every container that says which nodes it needs can run there.
    Yes,
    /// Some container cannot run there.
    No,
    /// No container says which OS it needs.
    Unknown,
}

/// The outcome for one pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolLanding {
    /// The pool's name.
    pub pool: String,
    /// The scheduler may put the pod on the pool's nodes.
    pub schedulable: bool,
    /// Whether the containers run on the pool's nodes.
    pub runs: Fit,
    /// Why not, one line per field: the selector, affinity or taint that
    /// keeps the pod off, and the container field that cannot run there.
    pub reasons: Vec<String>,
    /// What the outcome does not take into account.
    pub notes: Vec<String>,
}

/// Where the pod spec of `object` (a Pod or a workload) can land and run,
/// with what the cluster and registries said (`facts`; empty: nothing).
pub fn landing(
    object: &Value,
    pools: &[Node],
    settings: &Settings,
    facts: &Facts,
) -> Result<Vec<PoolLanding>, Vec<Diagnostic>> {
    let (spec, path) = pod_spec(object)?;
    let pod = PodView::read(spec, path)?;
    let settings = complete(settings, facts);
    let class = pod
        .runtime_class_name
        .and_then(|name| settings.runtime_class(name));
    let scheduling = PodScheduling::of(&pod, class);
    let notes = unknown_class_note(&pod, class.is_some());
    let resolution = resolve_with(&pod, &settings, facts);
    let container_signals: Vec<&Signal> = resolution
        .signals
        .iter()
        .filter(|s| {
            matches!(
                s.source,
                Source::Image | Source::WindowsOptions | Source::PodOs
            )
        })
        .collect();
    Ok(pools
        .iter()
        .map(|pool| {
            let mut reasons: Vec<String> = scheduling.blockers(pool).iter().map(reason).collect();
            let schedulable = reasons.is_empty();
            let runs = match &pool.blocked {
                // A NodePool that launches nothing now: no node to run on.
                Some(why) => {
                    reasons.push(format!("launches nothing now: {why}"));
                    Fit::No
                }
                None => container_fit(&container_signals, pool, &mut reasons),
            };
            PoolLanding {
                pool: pool.name.clone(),
                schedulable,
                runs,
                reasons,
                notes: notes.clone(),
            }
        })
        .collect())
}

fn pod_spec(object: &Value) -> Result<(&Value, FieldPath), Vec<Diagnostic>> {
    let kind_name = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(kind) = Kind::parse(kind_name) else {
        return Err(vec![Diagnostic::new(
            Code::UnsupportedKind,
            "kind",
            format!("{kind_name:?} has no pod spec to place"),
            format!("use one of {SUPPORTED_KINDS}"),
        )]);
    };
    locate_pod_spec(object, kind).map_err(|d| vec![d])
}

/// A blocker in words, for the picture.
fn reason(blocker: &Blocker) -> String {
    match blocker {
        Blocker::Selector { key, want, has } => {
            let has = has
                .as_ref()
                .map_or("no such label".to_string(), |a| format!("{key}={a}"));
            format!("nodeSelector {key}={want}: the nodes have {has}")
        }
        Blocker::Affinity => "required node affinity: no nodeSelectorTerm matches".to_string(),
        Blocker::Taint(taint) => format!("taint {taint} is not tolerated"),
    }
}

fn container_fit(signals: &[&Signal], pool: &Node, reasons: &mut Vec<String>) -> Fit {
    if signals.is_empty() {
        return Fit::Unknown;
    }
    let mut fit = Fit::Yes;
    for signal in signals {
        if !pool.runs(&signal.placement) {
            fit = Fit::No;
            reasons.push(format!(
                "{} = {} needs {}",
                signal.path, signal.value, signal.placement
            ));
        }
    }
    fit
}

/// What the picture cannot know: the scheduling of a RuntimeClass that
/// neither the settings declare nor the cluster facts hold.
fn unknown_class_note(pod: &PodView<'_>, declared: bool) -> Vec<String> {
    pod.runtime_class_name
        .filter(|_| !declared)
        .map(|name| {
            format!("RuntimeClass {name:?} is neither declared in the settings nor in the cluster facts: any scheduling it adds is not shown")
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::node::pools_from_value;
    use crate::vocab::labels::{OS_LABEL, WINDOWS_BUILD_LABEL};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn pools() -> Vec<Node> {
        pools_from_value(&json!([
            {"name": "linux", "os": "linux", "labels": {"kubernetes.io/arch": "amd64"}},
            {"name": "win2019", "os": "windows", "build": "10.0.17763",
             "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]},
            {"name": "win2022", "os": "windows", "build": "10.0.20348",
             "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]}
        ]))
        .unwrap()
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    fn by_pool(result: &[PoolLanding]) -> BTreeMap<&str, (bool, Fit)> {
        result
            .iter()
            .map(|l| (l.pool.as_str(), (l.schedulable, l.runs)))
            .collect()
    }

    #[test]
    fn kubelet_labels_are_added() {
        let pool = &pools()[1];
        assert_eq!(
            pool.labels.get(OS_LABEL).map(String::as_str),
            Some("windows")
        );
        assert_eq!(
            pool.labels.get(WINDOWS_BUILD_LABEL).map(String::as_str),
            Some("10.0.17763")
        );
        assert_eq!(pools()[0].labels.get(WINDOWS_BUILD_LABEL), None);
    }

    #[test]
    fn untolerated_taint_keeps_a_windows_image_off_every_pool_but_linux() {
        // A Windows image with no selector and no toleration: the scheduler
        // sends it to Linux, where it cannot run (the bug the policy fixes).
        let object = pod(json!({"containers": [
            {"name": "iis", "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}]}));
        let result = landing(&object, &pools(), &Settings::default(), &Facts::default()).unwrap();
        let map = by_pool(&result);
        assert_eq!(map["linux"], (true, Fit::No));
        assert_eq!(map["win2019"], (false, Fit::Yes));
        assert_eq!(map["win2022"], (false, Fit::No));
        assert!(result[1]
            .reasons
            .iter()
            .any(|r| r.contains("os=windows:NoSchedule")));
        assert!(result[0]
            .reasons
            .iter()
            .any(|r| r.contains("spec.containers[0].image")));
    }

    #[test]
    fn selector_toleration_and_build_pin_land_on_one_pool() {
        let object = pod(json!({
            "nodeSelector": {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.17763"},
            "tolerations": [{"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2019"}]}));
        let map_result =
            landing(&object, &pools(), &Settings::default(), &Facts::default()).unwrap();
        let map = by_pool(&map_result);
        assert_eq!(map["linux"], (false, Fit::No));
        assert_eq!(map["win2019"], (true, Fit::Yes));
        assert_eq!(map["win2022"], (false, Fit::No));
    }

    #[test]
    fn tolerate_all_with_unknown_image() {
        let object = json!({"kind": "DaemonSet", "spec": {"template": {"spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "agent", "image": "example.com/agent:1.0"}]}}}});
        let result = landing(&object, &pools(), &Settings::default(), &Facts::default()).unwrap();
        assert!(result
            .iter()
            .all(|l| l.schedulable && l.runs == Fit::Unknown));
    }

    #[test]
    fn prefer_no_schedule_does_not_block_and_runtime_class_merges() {
        let mut soft = pools();
        soft[1].taints[0].effect = "PreferNoSchedule".into();
        let object = pod(json!({"containers": [{"name": "c", "image": "alpine"}]}));
        let result = landing(&object, &soft, &Settings::default(), &Facts::default()).unwrap();
        assert!(result[1].schedulable);
        assert_eq!(result[1].runs, Fit::No);
        let settings = Settings::from_value(&json!({"runtimeClasses": [{"name": "win-2022",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows",
                "node.kubernetes.io/windows-build": "10.0.20348"},
                "tolerations": [{"key": "os", "operator": "Exists"}]}}]}))
        .unwrap();
        let object = pod(json!({"runtimeClassName": "win-2022",
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]}));
        let map_result = landing(&object, &pools(), &settings, &Facts::default()).unwrap();
        let map = by_pool(&map_result);
        assert_eq!(map["win2022"], (true, Fit::Yes));
        assert!(!map["linux"].0);
        let unknown = pod(json!({"runtimeClassName": "gvisor", "containers": []}));
        let result = landing(&unknown, &pools(), &settings, &Facts::default()).unwrap();
        assert!(result[0].schedulable && !result[1].schedulable);
        assert!(result[0].notes[0].contains("gvisor"));
    }

    fn facts(value: Value) -> Facts {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn registry_platforms_decide_where_an_unnamed_image_runs() {
        // The image's name says nothing; its index says Windows Server 2022
        // (OCI image-index `platform.os.version`), so it runs on win2022 only.
        let object = json!({"kind": "DaemonSet", "spec": {"template": {"spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "agent", "image": "example.com/agent:1.0"}]}}}});
        let found = facts(json!({"images": {"example.com/agent:1.0": {"platforms": [
            {"os": "windows", "osVersion": "10.0.20348.2700", "architecture": "amd64"}]}}}));
        let with = landing(&object, &pools(), &Settings::default(), &found).unwrap();
        let map = by_pool(&with);
        assert_eq!(map["linux"], (true, Fit::No));
        assert_eq!(map["win2019"], (true, Fit::No));
        assert_eq!(map["win2022"], (true, Fit::Yes));
        assert!(with[0]
            .reasons
            .iter()
            .any(|r| r.contains("example.com/agent:1.0")));
        let without = landing(&object, &pools(), &Settings::default(), &Facts::default()).unwrap();
        assert!(without.iter().all(|l| l.runs == Fit::Unknown));
    }

    #[test]
    fn a_runtime_class_read_from_the_cluster_is_merged() {
        // RuntimeClass admission plugin: the class's scheduling.nodeSelector
        // and tolerations join the pod's before the scheduler sees it.
        let object = pod(json!({"runtimeClassName": "win-2022",
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]}));
        let cluster = facts(json!({"runtimeClasses": {"win-2022": {"found": {
            "handler": "runhcs-wcow-process",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows",
                "node.kubernetes.io/windows-build": "10.0.20348"},
                "tolerations": [{"key": "os", "operator": "Exists"}]}}}}}));
        let with = landing(&object, &pools(), &Settings::default(), &cluster).unwrap();
        let map = by_pool(&with);
        assert_eq!(map["win2022"], (true, Fit::Yes));
        assert_eq!(map["win2019"], (false, Fit::No));
        assert!(!map["linux"].0);
        assert!(with.iter().all(|l| l.notes.is_empty()));
        let missing = facts(json!({"runtimeClasses": {"win-2022": "missing"}}));
        let without = landing(&object, &pools(), &Settings::default(), &missing).unwrap();
        assert!(
            !by_pool(&without)["win2022"].0,
            "the taint is not tolerated without the class"
        );
        assert!(without[0].notes[0].contains("win-2022"));
    }

    #[test]
    fn bad_pools_and_objects_are_reported_with_paths() {
        let problems = pools_from_value(&json!([{"name": "", "os": "mac", "build": "17763",
            "taints": [{"key": "k", "effect": "Never"}]}]))
        .unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["[0].name", "[0].os", "[0].build", "[0].taints[0]"]);
        assert!(pools_from_value(&json!({})).is_err());
        let no_spec = json!({"kind": "Deployment", "spec": {}});
        assert_eq!(
            landing(&no_spec, &pools(), &Settings::default(), &Facts::default()).unwrap_err()[0]
                .path,
            "spec.template"
        );
        assert!(landing(
            &json!({"kind": "Service"}),
            &pools(),
            &Settings::default(),
            &Facts::default()
        )
        .is_err());
    }
}
