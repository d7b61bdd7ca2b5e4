//! Capacity that appears on demand: nodes that do not exist yet, but that
//! Karpenter launches for a pending pod, or that a node group scaled to
//! zero adds. Each is an entry of the node inventory with a count of 0,
//! named by what would launch it; the scheduler's filters then treat it as
//! a node. A NodePool that launches nothing now is an entry too, blocked,
//! kept so that messages can say why.
//!
//! A NodePool (`karpenter.sh/v1`) is read as Karpenter reads it
//! (kubernetes-sigs/karpenter, aws/karpenter-provider-aws):
//! - its node class gives the OS: the EC2NodeClass's AMI family, `amiFamily`,
//!   else the family of its `amiSelectorTerms` alias, else `Custom`
//!   (aws `pkg/apis/v1/ec2nodeclass.go`, `AMIFamily`); a Windows family
//!   launches Windows on amd64 only with its build, every other family
//!   Linux (aws `pkg/providers/instancetype/types.go`, `getOS`;
//!   `pkg/providers/amifamily/windows.go`); an EKS Auto Mode NodeClass
//!   (`eks.amazonaws.com/v1`) launches Linux only;
//! - its requirements and template labels narrow the OS, architecture and
//!   build, and give the other labels its nodes carry
//!   (core `pkg/scheduling/requirements.go`; labels and requirements
//!   intersect, `nodeclaimtemplate.go`); a label only Karpenter's instance
//!   types decide (zone, instance type, capacity type, `karpenter.k8s.aws/*`)
//!   may have any value (core `pkg/apis/v1/labels.go`, `WellKnownLabels`);
//!   any other label its nodes do not carry, so a pod that requires one is
//!   one Karpenter does not launch for (`Requirements.Compatible`);
//! - its template's taints count, its `startupTaints` do not;
//! - a NodePool whose `Ready`, `NodeClassReady` or `ValidationSucceeded`
//!   condition is False, or whose EC2NodeClass's `Ready` or `AMIsReady` is,
//!   launches nothing (core `provisioner.go`; aws `cloudprovider.go`).

use serde_json::Value;

use crate::input::node::{object_labels, object_taints, Node};
use crate::input::settings::NodeTemplate;
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::Os;
use crate::vocab::labels::{
    ARCH_LABEL, BETA_ARCH_LABEL, BETA_OS_LABEL, HOSTNAME_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL,
};
use crate::vocab::ordered::{SortedSet, StringMap};
use crate::vocab::taint::Taint;

/// The API version of NodePools.
pub const NODEPOOL_API_VERSION: &str = "karpenter.sh/v1";
/// The API version of EC2NodeClasses.
pub const EC2_NODECLASS_API_VERSION: &str = "karpenter.k8s.aws/v1";
/// The API version of EKS Auto Mode's NodeClasses.
pub const AUTO_MODE_NODECLASS_API_VERSION: &str = "eks.amazonaws.com/v1";

/// The label Karpenter puts on each node with its NodePool's name.
const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// Labels Karpenter's launched nodes carry with values the instance type
/// or offering decides (core `WellKnownLabels`, aws `labels.go`): unknown
/// until launch, so a pod may require any value. `*` ends a prefix.
pub const DECIDED_AT_LAUNCH: &[&str] = &[
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.sh/capacity-type",
    "topology.k8s.aws/zone-id",
    "karpenter.k8s.aws/*",
    "eks.amazonaws.com/*",
    HOSTNAME_LABEL,
];

/// What a node class launches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Platforms {
    /// The OSes; both for a node class of an unknown provider.
    os: Vec<Os>,
    /// The Windows build, for a Windows AMI family.
    build: Option<WindowsBuild>,
    /// The architectures.
    archs: Vec<&'static str>,
    /// What launches them, for messages: `EC2NodeClass windows2022 (Windows2022)`.
    class: String,
}

/// The platforms of an AMI family, named as `amiFamily` or an alias
/// names it (case does not matter, as `amiFamilyFromAlias` compares).
fn ami_family(family: &str) -> (Vec<Os>, Option<WindowsBuild>, Vec<&'static str>) {
    let build = match family.to_ascii_lowercase().as_str() {
        "windows2019" => Some(WindowsBuild::LTSC2019),
        "windows2022" => Some(WindowsBuild::LTSC2022),
        "windows2025" => Some(WindowsBuild::LTSC2025),
        _ => None,
    };
    match build {
        Some(build) => (vec![Os::Windows], Some(build), vec!["amd64"]),
        // AL2, AL2023, Bottlerocket, Custom: Linux (types.go, getOS).
        None => (vec![Os::Linux], None, vec!["amd64", "arm64"]),
    }
}

/// An EC2NodeClass's AMI family: `amiFamily`, else its alias's, else Custom.
fn ec2_family(class: &Value) -> String {
    if let Some(family) = class.pointer("/spec/amiFamily").and_then(Value::as_str) {
        return family.to_string();
    }
    let aliases = class
        .pointer("/spec/amiSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|term| term.get("alias").and_then(Value::as_str));
    aliases
        .filter_map(|alias| alias.split('@').next())
        .next()
        .map_or_else(|| "Custom".to_string(), str::to_string)
}

/// `<type> is False (<reason>)` for the first of `types` whose condition is False.
fn condition_false(object: &Value, types: &[&str]) -> Option<String> {
    let conditions = object.pointer("/status/conditions")?.as_array()?;
    conditions.iter().find_map(|condition| {
        let kind = condition.get("type").and_then(Value::as_str)?;
        let status = condition.get("status").and_then(Value::as_str)?;
        (types.contains(&kind) && status == "False").then(|| {
            match condition.get("reason").and_then(Value::as_str) {
                Some(reason) if !reason.is_empty() => format!("{kind} is False ({reason})"),
                _ => format!("{kind} is False"),
            }
        })
    })
}

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is(object: &Value, api_version: &str, kind: &str) -> bool {
    text(object, "/apiVersion") == api_version && text(object, "/kind") == kind
}

/// The node class a NodePool names, and what it launches; `Err` says why it
/// launches nothing.
fn node_class(pool: &Value, objects: &[Value]) -> Result<Platforms, String> {
    let group = text(pool, "/spec/template/spec/nodeClassRef/group");
    let kind = text(pool, "/spec/template/spec/nodeClassRef/kind");
    let name = text(pool, "/spec/template/spec/nodeClassRef/name");
    let api_version = match (group, kind) {
        ("karpenter.k8s.aws", "EC2NodeClass") => EC2_NODECLASS_API_VERSION,
        ("eks.amazonaws.com", "NodeClass") => AUTO_MODE_NODECLASS_API_VERSION,
        // Another provider's class: the requirements alone say what it launches.
        _ => {
            return Ok(Platforms {
                os: vec![Os::Linux, Os::Windows],
                build: None,
                archs: vec!["amd64", "arm64"],
                class: format!("{kind} {name}"),
            })
        }
    };
    let class = objects
        .iter()
        .find(|o| is(o, api_version, kind) && text(o, "/metadata/name") == name)
        .ok_or_else(|| format!("its {kind} {name} does not exist"))?;
    if let Some(why) = condition_false(class, &["Ready", "AMIsReady"]) {
        return Err(format!("its {kind} {name} reports {why}"));
    }
    if api_version == AUTO_MODE_NODECLASS_API_VERSION {
        // EKS Auto Mode launches Linux (Bottlerocket) only.
        return Ok(Platforms {
            os: vec![Os::Linux],
            build: None,
            archs: vec!["amd64", "arm64"],
            class: format!("Auto Mode {kind} {name}"),
        });
    }
    let family = ec2_family(class);
    let (os, build, archs) = ami_family(&family);
    Ok(Platforms {
        os,
        build,
        archs,
        class: format!("{kind} {name} ({family})"),
    })
}

/// One requirement of a NodePool, as its keys and values read.
struct Requirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

/// Requirements and template labels, with the beta keys read as their
/// stable ones (core `labels.go`, `NormalizedLabels`).
fn requirements(pool: &Value) -> (Vec<Requirement>, StringMap) {
    let normal = |key: &str| match key {
        BETA_OS_LABEL => OS_LABEL.to_string(),
        BETA_ARCH_LABEL => ARCH_LABEL.to_string(),
        other => other.to_string(),
    };
    let required = pool
        .pointer("/spec/template/spec/requirements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| Requirement {
            key: normal(text(r, "/key")),
            operator: text(r, "/operator").to_string(),
            values: r
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        })
        .collect();
    let mut labels = StringMap::new();
    for (key, value) in object_labels(pool.pointer("/spec/template/metadata/labels")) {
        labels.insert(normal(&key), value);
    }
    (required, labels)
}

/// Whether `value` of `key` passes every requirement and label on it.
fn allowed(key: &str, value: &str, required: &[Requirement], labels: &StringMap) -> bool {
    let listed = |r: &Requirement| r.values.iter().any(|v| v == value);
    labels.get(key).is_none_or(|v| v == value)
        && required
            .iter()
            .filter(|r| r.key == key)
            .all(|r| match r.operator.as_str() {
                "In" => listed(r),
                "NotIn" => !listed(r),
                "DoesNotExist" => false,
                _ => true,
            })
}

/// Whether `object` is one [`from_objects`] reads: a NodePool, an
/// EC2NodeClass or an EKS Auto Mode NodeClass, of the versions above.
pub fn is_capacity_object(object: &Value) -> bool {
    CAPACITY_KINDS
        .iter()
        .any(|k| is(object, k.api_version, k.kind))
}

/// A kind [`from_objects`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityKind {
    /// `NodePool`.
    pub kind: &'static str,
    /// `karpenter.sh/v1`.
    pub api_version: &'static str,
    /// `nodepools`: the resource's name in the API.
    pub plural: &'static str,
}

/// The kinds [`from_objects`] reads.
pub const CAPACITY_KINDS: &[CapacityKind] = &[
    CapacityKind {
        kind: "NodePool",
        api_version: NODEPOOL_API_VERSION,
        plural: "nodepools",
    },
    CapacityKind {
        kind: "EC2NodeClass",
        api_version: EC2_NODECLASS_API_VERSION,
        plural: "ec2nodeclasses",
    },
    CapacityKind {
        kind: "NodeClass",
        api_version: AUTO_MODE_NODECLASS_API_VERSION,
        plural: "nodeclasses",
    },
];

/// The nodes each NodePool among `objects` can launch, read with the node
/// classes among them; NodePools that launch nothing now are blocked entries.
pub fn from_objects(objects: &[Value]) -> Vec<Node> {
    objects
        .iter()
        .filter(|o| is(o, NODEPOOL_API_VERSION, "NodePool"))
        .flat_map(|pool| nodepool(pool, objects))
        .collect()
}

fn nodepool(pool: &Value, objects: &[Value]) -> Vec<Node> {
    let name = text(pool, "/metadata/name");
    let source = format!("NodePool {name}");
    // The class's own condition says more than the pool's NodeClassReady.
    let platforms = match node_class(pool, objects) {
        Ok(platforms) => platforms,
        Err(why) => return vec![blocked(&source, why)],
    };
    let ready = ["Ready", "NodeClassReady", "ValidationSucceeded"];
    if let Some(why) = condition_false(pool, &ready) {
        return vec![blocked(&source, format!("it reports {why}"))];
    }
    let (required, labels) = requirements(pool);
    let build_ok = |build: &Option<WindowsBuild>| match build {
        Some(b) => allowed(WINDOWS_BUILD_LABEL, &b.to_string(), &required, &labels),
        // Linux nodes carry no build: a requirement on one excludes them.
        None => !required
            .iter()
            .any(|r| r.key == WINDOWS_BUILD_LABEL && r.operator == "In"),
    };
    let mut nodes = Vec::new();
    for os in &platforms.os {
        let build = platforms.build.filter(|_| *os == Os::Windows);
        if !allowed(OS_LABEL, os.label(), &required, &labels) || !build_ok(&build) {
            continue;
        }
        for arch in &platforms.archs {
            if allowed(ARCH_LABEL, arch, &required, &labels) {
                let platform = (*os, build, *arch);
                nodes.push(launched(&source, pool, platform, &required, &labels));
            }
        }
    }
    if nodes.is_empty() {
        let why = format!(
            "its requirements and labels leave nothing its {} launches",
            platforms.class
        );
        return vec![blocked(&source, why)];
    }
    nodes
}

/// The nodes a NodePool launches on one OS, build and architecture.
fn launched(
    source: &str,
    pool: &Value,
    (os, build, arch): (Os, Option<WindowsBuild>, &str),
    required: &[Requirement],
    labels: &StringMap,
) -> Node {
    let mut node_labels = labels.clone();
    let mut varying: SortedSet<String> = DECIDED_AT_LAUNCH.iter().map(|k| k.to_string()).collect();
    for requirement in required {
        if node_labels.contains_key(&requirement.key) || is_platform(&requirement.key) {
            continue;
        }
        match (requirement.operator.as_str(), requirement.values.as_slice()) {
            ("In", [only]) => {
                node_labels.insert(requirement.key.clone(), only.clone());
            }
            ("DoesNotExist", _) => {}
            _ => {
                varying.insert(requirement.key.clone());
            }
        }
    }
    node_labels.insert(
        NODEPOOL_LABEL.to_string(),
        text(pool, "/metadata/name").to_string(),
    );
    let taints = object_taints(pool.pointer("/spec/template/spec/taints"));
    template_node(source, os, build, Some(arch), node_labels, taints, varying)
}

fn is_platform(key: &str) -> bool {
    matches!(key, OS_LABEL | ARCH_LABEL | WINDOWS_BUILD_LABEL)
}

/// A launchable entry: the platform labels the kubelet sets, `labels`, and
/// `varying` keys unknown; its name and hostname unknown too.
fn template_node(
    source: &str,
    os: Os,
    build: Option<WindowsBuild>,
    arch: Option<&str>,
    mut labels: StringMap,
    taints: Vec<Taint>,
    mut varying: SortedSet<String>,
) -> Node {
    labels.insert(OS_LABEL.to_string(), os.label().to_string());
    labels.insert(BETA_OS_LABEL.to_string(), os.label().to_string());
    match arch {
        Some(arch) => {
            labels.insert(ARCH_LABEL.to_string(), arch.to_string());
            labels.insert(BETA_ARCH_LABEL.to_string(), arch.to_string());
        }
        None => {
            varying.insert(ARCH_LABEL.to_string());
            varying.insert(BETA_ARCH_LABEL.to_string());
        }
    }
    if let Some(build) = build {
        labels.insert(WINDOWS_BUILD_LABEL.to_string(), build.to_string());
    }
    varying.insert(HOSTNAME_LABEL.to_string());
    // What the labels fix is known.
    let varying = varying
        .into_iter()
        .filter(|key| !labels.contains_key(key))
        .collect();
    Node {
        name: source.to_string(),
        os: Some(os.label().to_string()),
        windows_build: build.map(|b| b.to_string()),
        architecture: arch.map(str::to_string),
        labels,
        taints,
        count: 0,
        varying,
        unnamed: Some(Vec::new()),
        launchable: Some(source.to_string()),
        blocked: None,
    }
}

fn blocked(source: &str, why: String) -> Node {
    Node {
        name: source.to_string(),
        count: 0,
        unnamed: Some(Vec::new()),
        launchable: Some(source.to_string()),
        blocked: Some(why),
        ..Node::default()
    }
}

/// The nodes the settings' node templates launch (node groups scaled to
/// zero, which no object shows).
pub fn from_templates(templates: &[NodeTemplate]) -> Vec<Node> {
    templates
        .iter()
        .map(|t| {
            let taints = t
                .taints
                .iter()
                .map(|taint| Taint {
                    key: taint.key.clone(),
                    value: taint.value.clone(),
                    effect: taint.effect.clone(),
                })
                .collect();
            let build = t.windows_build.filter(|_| t.os == Os::Windows);
            template_node(
                &format!("node template {}", t.name),
                t.os,
                build,
                t.architecture.as_deref(),
                t.labels.clone(),
                taints,
                SortedSet::new(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
