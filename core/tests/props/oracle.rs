//! A model of the kube-scheduler filters that decide where a pod can go,
//! written from the Kubernetes sources and independent of the core:
//! - NodeSelector and required NodeAffinity:
//!   pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go and
//!   k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go
//!   (terms ORed, expressions ANDed, an empty term or one with an invalid
//!   requirement matches nothing, Gt/Lt compare integers);
//! - TaintToleration: pkg/scheduler/framework/plugins/tainttoleration and
//!   k8s.io/api/core/v1/toleration.go `ToleratesTaint` (only NoSchedule
//!   and NoExecute filter);
//! - the RuntimeClass admission plugin's merge
//!   (plugin/pkg/admission/runtimeclass/admission.go: a selector key with
//!   another value is a conflict, tolerations are appended);
//! - the kubelet refuses a pod whose `spec.os.name` is not the node's OS.
//!
//! Which nodes can run an image is the generator's ground truth
//! (`gen::truth`), with the compatibility rule of ../shared/domain-facts.md:
//! the same build, and a Windows Server 2025 host also runs ltsc2022.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::props::gen::{truth, Need, Source, BUILDS};

#[derive(Debug, Clone)]
pub struct Pool {
    pub name: String,
    pub windows: bool,
    pub build: Option<u32>,
    pub labels: BTreeMap<String, String>,
    /// (key, value, effect)
    pub taints: Vec<(String, String, String)>,
}

/// Node pools as the settings describe the cluster: Windows nodes carry
/// the declared `windowsTaint`, Linux nodes the `linuxTaint`, every node
/// the kubelet's labels.
pub fn pools<S: Source>(src: &mut S, settings: &Value) -> Vec<Pool> {
    let complete = src.chance(50);
    let declared = |key: &str| {
        settings.get(key).map(|t| {
            let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (text("key"), text("value"), text("effect"))
        })
    };
    let taint = declared("windowsTaint");
    let mut pools = Vec::new();
    if complete || src.chance(70) {
        let taints = declared("linuxTaint").into_iter().collect();
        pools.push(pool("linux", false, None, taints));
    }
    if src.chance(40) {
        let taints = declared("linuxTaint").into_iter().collect();
        let mut arm = pool("linux-arm64", false, None, taints);
        arm.labels
            .insert("kubernetes.io/arch".to_string(), "arm64".to_string());
        pools.push(arm);
    }
    for build in BUILDS {
        if complete || src.chance(50) {
            let taints = taint.clone().into_iter().collect();
            pools.push(pool(
                &format!("windows-{build}"),
                true,
                Some(*build),
                taints,
            ));
        }
    }
    pools
}

fn pool(
    name: &str,
    windows: bool,
    build: Option<u32>,
    taints: Vec<(String, String, String)>,
) -> Pool {
    let os = if windows { "windows" } else { "linux" };
    let mut labels = BTreeMap::new();
    labels.insert("kubernetes.io/os".to_string(), os.to_string());
    labels.insert("beta.kubernetes.io/os".to_string(), os.to_string());
    labels.insert("kubernetes.io/arch".to_string(), "amd64".to_string());
    if let Some(b) = build {
        labels.insert(
            "node.kubernetes.io/windows-build".to_string(),
            format!("10.0.{b}"),
        );
    }
    Pool {
        name: name.to_string(),
        windows,
        build,
        labels,
        taints,
    }
}

/// Whether the pools hold a Linux node and Windows nodes of every build.
pub fn complete(pools: &[Pool]) -> bool {
    pools.iter().any(|p| !p.windows)
        && BUILDS
            .iter()
            .all(|b| pools.iter().any(|p| p.build == Some(*b)))
}

/// The pod spec after the RuntimeClass admission plugin; `None` when it
/// rejects the pod (a selector key of the class with another value).
pub fn merge_runtime_class(spec: &Value, settings: &Value) -> Option<Value> {
    let Some(name) = spec.get("runtimeClassName").and_then(Value::as_str) else {
        return Some(spec.clone());
    };
    let classes = settings.get("runtimeClasses").and_then(Value::as_array);
    let Some(rc) = classes.into_iter().flatten().find(|rc| rc["name"] == name) else {
        return Some(spec.clone());
    };
    let mut out = spec.clone();
    // JSON null is an unset field (the API server never sends it).
    for field in ["nodeSelector", "tolerations"] {
        if out.get(field).is_some_and(Value::is_null) {
            out.as_object_mut()?.remove(field);
        }
    }
    let scheduling = &rc["scheduling"];
    for (key, value) in scheduling["nodeSelector"].as_object().into_iter().flatten() {
        let selector = out
            .as_object_mut()?
            .entry("nodeSelector")
            .or_insert_with(|| json!({}));
        match selector.get(key) {
            Some(own) if own != value => return None,
            Some(_) => {}
            None => {
                selector.as_object_mut()?.insert(key.clone(), value.clone());
            }
        }
    }
    for t in scheduling["tolerations"].as_array().into_iter().flatten() {
        let list = out
            .as_object_mut()?
            .entry("tolerations")
            .or_insert_with(|| json!([]));
        list.as_array_mut()?.push(t.clone());
    }
    Some(out)
}

/// Whether the scheduler may place the pod on the pool's nodes; `None`
/// when the spec is not what the API server would admit.
pub fn schedulable(spec: &Value, pool: &Pool) -> Option<bool> {
    Some(
        selector_matches(spec, pool)?
            && affinity_matches(spec, pool)?
            && taints_tolerated(spec, pool)?,
    )
}

fn selector_matches(spec: &Value, pool: &Pool) -> Option<bool> {
    let Some(selector) = spec.get("nodeSelector") else {
        return Some(true);
    };
    let mut all = true;
    for (key, value) in selector.as_object()? {
        all &= pool.labels.get(key).map(String::as_str) == Some(value.as_str()?);
    }
    Some(all)
}

fn affinity_matches(spec: &Value, pool: &Pool) -> Option<bool> {
    let Some(required) =
        spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
    else {
        return Some(true);
    };
    let terms = required.get("nodeSelectorTerms")?.as_array()?;
    let mut any = false;
    for term in terms {
        any |= term_matches(term, pool)?;
    }
    Some(any)
}

fn term_matches(term: &Value, pool: &Pool) -> Option<bool> {
    let exprs = match term.get("matchExpressions") {
        Some(e) => e.as_array()?.clone(),
        None => Vec::new(),
    };
    // An empty term matches no node (nodeSelectorTerm.isEmpty).
    if exprs.is_empty() {
        return Some(false);
    }
    let mut all = true;
    for e in &exprs {
        all &= requirement_matches(e, pool)?.unwrap_or(false);
    }
    Some(all)
}

/// `Some(None)`: a requirement the API server admits but the selector
/// parser refuses, which makes its term match nothing.
fn requirement_matches(e: &Value, pool: &Pool) -> Option<Option<bool>> {
    let key = e.get("key")?.as_str()?;
    let operator = e.get("operator")?.as_str()?;
    let values: Vec<&str> = match e.get("values") {
        Some(v) => v
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?,
        None => Vec::new(),
    };
    let label = pool.labels.get(key).map(String::as_str);
    Some(match operator {
        "In" | "NotIn" if values.is_empty() => None,
        "In" => Some(label.is_some_and(|l| values.contains(&l))),
        "NotIn" => Some(label.is_none_or(|l| !values.contains(&l))),
        "Exists" | "DoesNotExist" if !values.is_empty() => None,
        "Exists" => Some(label.is_some()),
        "DoesNotExist" => Some(label.is_none()),
        "Gt" | "Lt" => {
            let [bound] = values.as_slice() else {
                return Some(None);
            };
            let Ok(bound) = bound.parse::<i64>() else {
                return Some(None);
            };
            let node = label.and_then(|l| l.parse::<i64>().ok());
            Some(node.is_some_and(|n| {
                if operator == "Gt" {
                    n > bound
                } else {
                    n < bound
                }
            }))
        }
        _ => None,
    })
}

fn taints_tolerated(spec: &Value, pool: &Pool) -> Option<bool> {
    let tolerations = match spec.get("tolerations") {
        Some(t) => t.as_array()?.clone(),
        None => Vec::new(),
    };
    let mut all = true;
    for (key, value, effect) in &pool.taints {
        if effect != "NoSchedule" && effect != "NoExecute" {
            continue;
        }
        let mut any = false;
        for t in &tolerations {
            any |= tolerates(t, key, value, effect)?;
        }
        all &= any;
    }
    Some(all)
}

/// k8s.io/api/core/v1/toleration.go `ToleratesTaint`.
fn tolerates(t: &Value, key: &str, value: &str, effect: &str) -> Option<bool> {
    let text = |k: &str| match t.get(k) {
        None => Some(""),
        Some(v) => v.as_str(),
    };
    let (t_key, t_op, t_value, t_effect) = (
        text("key")?,
        text("operator")?,
        text("value")?,
        text("effect")?,
    );
    if !t_effect.is_empty() && t_effect != effect {
        return Some(false);
    }
    if !t_key.is_empty() && t_key != key {
        return Some(false);
    }
    Some(match t_op {
        "" | "Equal" => t_value == value,
        "Exists" => true,
        _ => false,
    })
}

/// Whether every container of the spec can run on the pool (`None`: the
/// spec is not well-typed).
/// With `pinArchitecture`, an image of a Hub architecture namespace runs on
/// nodes of that architecture only (without it, architecture is not the
/// policy's concern and the oracle leaves it out too).
fn arch_runs(image: &str, pool: &Pool, settings: &Value) -> bool {
    if settings.get("pinArchitecture") != Some(&json!(true)) {
        return true;
    }
    let arch = pool.labels.get("kubernetes.io/arch").map(String::as_str);
    !image.starts_with("arm64v8/") || arch == Some("arm64")
}

pub fn runs(spec: &Value, pool: &Pool, settings: &Value, check_build: bool) -> Option<bool> {
    if let Some(os) = spec.pointer("/os/name") {
        if os.as_str()? != if pool.windows { "windows" } else { "linux" } {
            return Some(false);
        }
    }
    // HostProcess is a Windows feature (WindowsSecurityContextOptions;
    // kubernetes.io "Create a Windows HostProcess Pod"): a Linux node ignores
    // windowsOptions and would run the container without it.
    let pod_host_process = spec.pointer("/securityContext/windowsOptions/hostProcess");
    let mut all = true;
    for list in ["containers", "initContainers"] {
        for c in spec
            .get(list)
            .map(Value::as_array)
            .unwrap_or(Some(&Vec::new()))?
        {
            let image = c.get("image")?.as_str()?;
            let host_process = c
                .pointer("/securityContext/windowsOptions/hostProcess")
                .or(pod_host_process)
                == Some(&json!(true));
            let need = match truth(image, settings) {
                Need::Windows(_) | Need::Any if host_process => Need::Windows(None),
                need => need,
            };
            all &= arch_runs(image, pool, settings);
            all &= match need {
                Need::Any => true,
                Need::Linux => !pool.windows,
                Need::Windows(None) => pool.windows,
                Need::Windows(Some(b)) => {
                    pool.windows
                        && (!check_build
                            || pool.build == Some(b)
                            || (b == 20348 && pool.build == Some(26100)))
                }
            };
        }
    }
    Some(all)
}
