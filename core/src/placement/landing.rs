//! Where a pod can land: for each node pool, whether the scheduler would
//! place the pod there and whether its containers could run there.
//!
//! Scheduling follows kube-scheduler's filters: NodeAffinity
//! (`spec.nodeSelector` and required node affinity, as in
//! k8s.io/component-helpers/scheduling/corev1/nodeaffinity) and
//! TaintToleration (every `NoSchedule`/`NoExecute` taint tolerated). A
//! RuntimeClass declared in the settings adds its scheduling first, as the
//! RuntimeClass admission plugin does. Running is the core's own reading of
//! the containers (images, `windowsOptions`, `spec.os.name`) against the
//! pool's OS and build.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Toleration};
use serde::Serialize;
use serde_json::Value;

use crate::input::pod::PodView;
use crate::input::review::locate_pod_spec;
use crate::input::settings::{Settings, Taint};
use crate::scheduling::taints::tolerates;
use crate::signals::resolve::{resolve, Signal, Source};
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{Builds, Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::{FieldPath, Kind, SUPPORTED_KINDS};
use crate::vocab::labels::{BETA_OS_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL};

/// A group of identical nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePool {
    pub name: String,
    pub os: Os,
    /// The Windows build of the nodes; `None` on Linux or when unknown.
    pub build: Option<WindowsBuild>,
    /// Node labels, including those the kubelet sets (see [`NodePool::new`]).
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
}

impl NodePool {
    /// A pool whose labels also carry what the kubelet sets on every node:
    /// `kubernetes.io/os`, the deprecated `beta.kubernetes.io/os` (still set
    /// by the kubelet) and, on Windows, `node.kubernetes.io/windows-build`.
    pub fn new(
        name: impl Into<String>,
        os: Os,
        build: Option<WindowsBuild>,
        mut labels: BTreeMap<String, String>,
        taints: Vec<Taint>,
    ) -> NodePool {
        let build = build.filter(|_| os == Os::Windows);
        for key in [OS_LABEL, BETA_OS_LABEL] {
            labels
                .entry(key.to_string())
                .or_insert_with(|| os.label().to_string());
        }
        if let Some(build) = build {
            labels
                .entry(WINDOWS_BUILD_LABEL.to_string())
                .or_insert_with(|| build.to_string());
        }
        NodePool {
            name: name.into(),
            os,
            build,
            labels,
            taints,
        }
    }

    /// The pool's nodes in the placement algebra.
    pub fn placement(&self) -> Placement {
        match (self.os, self.build) {
            (Os::Linux, _) => Placement::linux(),
            (Os::Windows, Some(build)) => Placement::windows(Builds::only(build)),
            (Os::Windows, None) => Placement::windows(Builds::Any),
        }
    }
}

/// Whether the containers can run on a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    Yes,
    No,
    /// No container says which OS it needs.
    Unknown,
}

/// The outcome for one pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolLanding {
    pub pool: String,
    /// The scheduler may put the pod on the pool's nodes.
    pub schedulable: bool,
    pub runs: Fit,
    /// Why not, one line per field: the selector, affinity or taint that
    /// keeps the pod off, and the container field that cannot run there.
    pub reasons: Vec<String>,
    /// What the outcome does not take into account.
    pub notes: Vec<String>,
}

/// Where the pod spec of `object` (a Pod or a workload) can land and run.
pub fn landing(
    object: &Value,
    pools: &[NodePool],
    settings: &Settings,
) -> Result<Vec<PoolLanding>, Vec<Diagnostic>> {
    let (spec, path) = pod_spec(object)?;
    let pod = PodView::read(spec, path)?;
    let scheduling = Scheduling::of(&pod, settings);
    let resolution = resolve(&pod, settings);
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
            let mut reasons = scheduling.blockers(pool);
            let schedulable = reasons.is_empty();
            let runs = container_fit(&container_signals, pool, &mut reasons);
            PoolLanding {
                pool: pool.name.clone(),
                schedulable,
                runs,
                reasons,
                notes: scheduling.notes(),
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

fn container_fit(signals: &[&Signal], pool: &NodePool, reasons: &mut Vec<String>) -> Fit {
    if signals.is_empty() {
        return Fit::Unknown;
    }
    let nodes = pool.placement();
    let mut fit = Fit::Yes;
    for signal in signals {
        if signal.placement.intersect(&nodes).is_empty() {
            fit = Fit::No;
            reasons.push(format!(
                "{} = {} needs {}",
                signal.path, signal.value, signal.placement
            ));
        }
    }
    fit
}

/// The scheduling fields of the pod, with its RuntimeClass merged in.
struct Scheduling<'p> {
    node_selector: BTreeMap<String, String>,
    affinity: Option<&'p [NodeSelectorTerm]>,
    tolerations: Vec<&'p Toleration>,
    unknown_runtime_class: Option<&'p str>,
}

impl<'p> Scheduling<'p> {
    fn of(pod: &'p PodView<'_>, settings: &'p Settings) -> Scheduling<'p> {
        let mut node_selector = pod.node_selector.clone();
        let mut tolerations: Vec<&Toleration> = pod.tolerations.iter().collect();
        let class = pod
            .runtime_class_name
            .map(|n| (n, settings.runtime_class(n)));
        if let Some((_, Some(rc))) = class {
            for (key, value) in &rc.scheduling.node_selector {
                node_selector
                    .entry(key.clone())
                    .or_insert_with(|| value.clone());
            }
            tolerations.extend(rc.scheduling.tolerations.iter());
        }
        Scheduling {
            node_selector,
            affinity: pod
                .required_affinity
                .as_ref()
                .map(|a| a.node_selector_terms.as_slice()),
            tolerations,
            unknown_runtime_class: class.and_then(|(n, rc)| rc.is_none().then_some(n)),
        }
    }

    /// Why the scheduler keeps the pod off the pool; empty when it does not.
    fn blockers(&self, pool: &NodePool) -> Vec<String> {
        let mut reasons = Vec::new();
        for (key, value) in &self.node_selector {
            let actual = pool.labels.get(key);
            if actual != Some(value) {
                let has = actual.map_or("no such label".to_string(), |a| format!("{key}={a}"));
                reasons.push(format!("nodeSelector {key}={value}: the nodes have {has}"));
            }
        }
        if let Some(terms) = self.affinity {
            if !terms.iter().any(|t| term_matches(t, &pool.labels)) {
                reasons.push("required node affinity: no nodeSelectorTerm matches".to_string());
            }
        }
        for taint in pool
            .taints
            .iter()
            .filter(|t| t.effect != "PreferNoSchedule")
        {
            if !self.tolerations.iter().any(|t| tolerates(t, taint)) {
                reasons.push(format!("taint {taint} is not tolerated"));
            }
        }
        reasons
    }

    /// What the picture cannot know.
    fn notes(&self) -> Vec<String> {
        self.unknown_runtime_class
            .map(|name| {
                format!("RuntimeClass {name:?} is not declared in the settings: any scheduling it adds is not shown")
            })
            .into_iter()
            .collect()
    }
}

/// A term matches when all its expressions do; an empty term matches no
/// node. Node names (`matchFields`) are not modelled: they do not block.
fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions.iter().all(|e| expression_matches(e, labels))
}

fn expression_matches(req: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    let label = labels.get(&req.key);
    let number = |v: &str| v.parse::<i64>().ok();
    let compare = |ordering: std::cmp::Ordering| match (label, values) {
        (Some(l), [v]) => match (number(l), number(v)) {
            (Some(l), Some(v)) => l.cmp(&v) == ordering,
            _ => false,
        },
        _ => false,
    };
    match req.operator.as_str() {
        "In" => label.is_some_and(|l| values.contains(l)),
        "NotIn" => label.is_none_or(|l| !values.contains(l)),
        "Exists" => label.is_some(),
        "DoesNotExist" => label.is_none(),
        "Gt" => compare(std::cmp::Ordering::Greater),
        "Lt" => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

/// Reads pools from JSON: a list of `{name, os, build, labels, taints}`.
/// Every problem is reported with its path, e.g. `[1].build`.
pub fn pools_from_value(value: &Value) -> Result<Vec<NodePool>, Vec<Diagnostic>> {
    let Some(items) = value.as_array() else {
        return Err(vec![invalid("", "expected a list of node pools")]);
    };
    let mut pools = Vec::new();
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match pool_from_value(item, &format!("[{i}]")) {
            Ok(pool) => pools.push(pool),
            Err(mut found) => problems.append(&mut found),
        }
    }
    if problems.is_empty() {
        Ok(pools)
    } else {
        Err(problems)
    }
}

fn pool_from_value(item: &Value, at: &str) -> Result<NodePool, Vec<Diagnostic>> {
    let mut problems = Vec::new();
    let text = |key: &str| item.get(key).and_then(Value::as_str);
    let name = text("name").unwrap_or_default();
    if name.is_empty() {
        problems.push(invalid(&format!("{at}.name"), "a pool needs a name"));
    }
    let os = text("os").and_then(Os::from_label);
    if os.is_none() {
        problems.push(invalid(&format!("{at}.os"), "set it to linux or windows"));
    }
    let build = match text("build") {
        None => None,
        Some(b) => match WindowsBuild::parse_label(b) {
            Ok(build) => Some(build),
            Err(e) => {
                problems.push(invalid(&format!("{at}.build"), e.to_string()));
                None
            }
        },
    };
    let labels = string_map(item.get("labels"), &format!("{at}.labels"), &mut problems);
    let taints = taints(item.get("taints"), &format!("{at}.taints"), &mut problems);
    match os {
        Some(os) if problems.is_empty() => Ok(NodePool::new(name, os, build, labels, taints)),
        _ => Err(problems),
    }
}

fn string_map(
    value: Option<&Value>,
    at: &str,
    problems: &mut Vec<Diagnostic>,
) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (k, v) in entries {
                match v.as_str() {
                    Some(v) => {
                        map.insert(k.clone(), v.to_string());
                    }
                    None => {
                        problems.push(invalid(&format!("{at}[{k}]"), "label values are strings"))
                    }
                }
            }
        }
        Some(_) => problems.push(invalid(at, "expected a map of labels")),
    }
    map
}

fn taints(value: Option<&Value>, at: &str, problems: &mut Vec<Diagnostic>) -> Vec<Taint> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            problems.push(invalid(at, "expected a list of taints"));
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for (i, t) in items.iter().enumerate() {
        let text = |key: &str| t.get(key).and_then(Value::as_str).unwrap_or_default();
        let effect = text("effect");
        if text("key").is_empty()
            || !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
        {
            problems.push(invalid(
                &format!("{at}[{i}]"),
                "a taint needs a key and an effect NoSchedule, PreferNoSchedule or NoExecute",
            ));
            continue;
        }
        found.push(Taint {
            key: text("key").to_string(),
            value: text("value").to_string(),
            effect: effect.to_string(),
        });
    }
    found
}

fn invalid(path: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(
        Code::InvalidValue,
        path,
        message,
        "see the node pool format",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pools() -> Vec<NodePool> {
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
        assert_eq!(pool.labels[OS_LABEL], "windows");
        assert_eq!(pool.labels[WINDOWS_BUILD_LABEL], "10.0.17763");
        assert_eq!(pools()[0].labels.get(WINDOWS_BUILD_LABEL), None);
    }

    #[test]
    fn untolerated_taint_keeps_a_windows_image_off_every_pool_but_linux() {
        // A Windows image with no selector and no toleration: the scheduler
        // sends it to Linux, where it cannot run (the bug the policy fixes).
        let object = pod(json!({"containers": [
            {"name": "iis", "image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"}]}));
        let result = landing(&object, &pools(), &Settings::default()).unwrap();
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
        let map_result = landing(&object, &pools(), &Settings::default()).unwrap();
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
        let result = landing(&object, &pools(), &Settings::default()).unwrap();
        assert!(result
            .iter()
            .all(|l| l.schedulable && l.runs == Fit::Unknown));
    }

    #[test]
    fn required_affinity_follows_scheduler_operators() {
        let labels = pools()[2].labels.clone();
        let req = |key: &str, op: &str, values: &[&str]| NodeSelectorRequirement {
            key: key.to_string(),
            operator: op.to_string(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        };
        assert!(expression_matches(
            &req(OS_LABEL, "In", &["windows"]),
            &labels
        ));
        assert!(!expression_matches(
            &req(OS_LABEL, "NotIn", &["windows"]),
            &labels
        ));
        assert!(expression_matches(
            &req("missing", "NotIn", &["x"]),
            &labels
        ));
        assert!(expression_matches(
            &req("missing", "DoesNotExist", &[]),
            &labels
        ));
        assert!(!expression_matches(
            &req(OS_LABEL, "Bogus", &["windows"]),
            &labels
        ));
        let mut numeric = labels.clone();
        numeric.insert("gpus".into(), "4".into());
        assert!(expression_matches(&req("gpus", "Gt", &["3"]), &numeric));
        assert!(!expression_matches(&req("gpus", "Lt", &["3"]), &numeric));
        assert!(!term_matches(&NodeSelectorTerm::default(), &labels));
    }

    #[test]
    fn prefer_no_schedule_does_not_block_and_runtime_class_merges() {
        let mut soft = pools();
        soft[1].taints[0].effect = "PreferNoSchedule".into();
        let object = pod(json!({"containers": [{"name": "c", "image": "alpine"}]}));
        let result = landing(&object, &soft, &Settings::default()).unwrap();
        assert!(result[1].schedulable);
        assert_eq!(result[1].runs, Fit::No);
        let settings = Settings::from_value(&json!({"runtimeClasses": [{"name": "win-2022",
            "scheduling": {"nodeSelector": {"kubernetes.io/os": "windows",
                "node.kubernetes.io/windows-build": "10.0.20348"},
                "tolerations": [{"key": "os", "operator": "Exists"}]}}]}))
        .unwrap();
        let object = pod(json!({"runtimeClassName": "win-2022",
            "containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}]}));
        let map_result = landing(&object, &pools(), &settings).unwrap();
        let map = by_pool(&map_result);
        assert_eq!(map["win2022"], (true, Fit::Yes));
        assert!(!map["linux"].0);
        let unknown = pod(json!({"runtimeClassName": "gvisor", "containers": []}));
        let result = landing(&unknown, &pools(), &settings).unwrap();
        assert!(result[0].schedulable && !result[1].schedulable);
        assert!(result[0].notes[0].contains("gvisor"));
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
            landing(&no_spec, &pools(), &Settings::default()).unwrap_err()[0].path,
            "spec.template"
        );
        assert!(landing(&json!({"kind": "Service"}), &pools(), &Settings::default()).is_err());
    }
}
