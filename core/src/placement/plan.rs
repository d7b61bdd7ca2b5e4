//! What a correctly placed pod has, and what to add when it lacks it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use serde_json::{json, Map, Value};

use crate::input::pod::PodView;
use crate::input::settings::{DefaultOs, RuntimeClass, Settings};
use crate::placement::selection::{bound_to_node, os_undetermined, other_selections};
use crate::placement::windows_rules::{forbidden_fields, host_process_rules};
use crate::scheduling::runtime_class::{added_tolerations, PodScheduling};
use crate::scheduling::taints::{
    describe as describe_toleration, eviction_after, for_taint, tolerates,
};
use crate::signals::resolve::{Resolution, Signal, Source};
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{BuildSet, Builds, Os};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::{selector_placement, OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::patch::{pointer_child, AddOp};
use crate::vocab::taint::Taint;

/// The outcome for one pod spec.
#[derive(Debug, Default)]
pub struct Plan {
    pub violations: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    pub ops: Vec<AddOp>,
}

/// One placement field the pod lacks.
#[derive(Debug, Clone, PartialEq)]
enum Missing {
    Selector {
        key: &'static str,
        value: String,
        code: Code,
        why: String,
    },
    Toleration {
        taint: Taint,
        why: String,
    },
    PodOs(Os),
    /// A required node-affinity `In` on the build label, in every term.
    BuildAffinity {
        builds: Vec<WindowsBuild>,
        why: String,
    },
}

/// Where the RuntimeClass merge must be done by the policy itself: on
/// Pods the built-in plugin has already run when the policy sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeClassMerge {
    ByPolicy,
    ByPlugin,
}

/// The cluster's Windows builds, when known (node inventory or settings).
pub type ClusterBuilds<'c> = Option<&'c BuildSet>;

pub fn plan(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    merge: RuntimeClassMerge,
    cluster: ClusterBuilds<'_>,
) -> Plan {
    let mut plan = Plan::default();
    let os = match (resolution.placement.os(), settings.default_os) {
        (Some(os), _) => os,
        (None, DefaultOs::Linux) if !resolution.os_unsure => {
            let selections = other_selections(pod, settings);
            if !selections.is_empty() {
                plan.warnings.push(os_undetermined(pod, &selections));
                return plan;
            }
            Os::Linux
        }
        (None, _) => return plan,
    };
    let own_rc = pod
        .runtime_class_name
        .and_then(|name| settings.runtime_class(name));
    let scheduling = PodScheduling::of(pod, own_rc);
    let selector = &scheduling.node_selector;
    let tolerations = &scheduling.tolerations;
    let mut missing = match os {
        Os::Windows => windows_missing(
            pod,
            resolution,
            settings,
            selector,
            tolerations,
            cluster,
            &mut plan,
        ),
        Os::Linux => linux_missing(resolution, settings, tolerations),
    };
    if settings.set_pod_os && pod.os_name.is_none() {
        missing.push(Missing::PodOs(os));
    }
    if let Some(node) = pod.node_name {
        let before = missing.len();
        missing.retain(|m| !matches!(m, Missing::Selector { .. } | Missing::BuildAffinity { .. }));
        if missing.len() < before {
            plan.warnings.push(bound_to_node(pod, node, os));
        }
    }
    if missing.is_empty() {
        return plan;
    }
    let runtime_class = (settings.prefer_runtime_class && pod.runtime_class_name.is_none())
        .then(|| choose_runtime_class(pod, resolution, settings, os, &missing))
        .flatten();
    if !settings.mutate {
        plan.violations
            .extend(missing.iter().map(|m| violation(pod, m, runtime_class)));
        return plan;
    }
    match runtime_class {
        Some(rc) => {
            plan.ops.push(AddOp::new(
                pod.field("runtimeClassName").pointer().to_string(),
                json!(rc.name),
            ));
            missing.retain(|m| matches!(m, Missing::PodOs(_)));
            if merge == RuntimeClassMerge::ByPolicy {
                merge_runtime_class(pod, rc, &mut plan.ops);
            }
        }
        None if settings.prefer_runtime_class && pod.runtime_class_name.is_none() => {
            plan.warnings
                .push(no_matching_runtime_class(pod, os, &missing));
        }
        None => {}
    }
    plan.ops.extend(ops_for(pod, &missing));
    plan
}

/// The `preferRuntimeClass` fallback, saying what was added instead.
fn no_matching_runtime_class(pod: &PodView<'_>, os: Os, missing: &[Missing]) -> Diagnostic {
    let selector = missing
        .iter()
        .any(|m| matches!(m, Missing::Selector { .. }));
    let toleration = missing
        .iter()
        .any(|m| matches!(m, Missing::Toleration { .. }));
    let added = match (selector, toleration) {
        (true, true) => "its nodeSelector entries and toleration were",
        (false, true) => "its toleration was",
        _ => "its nodeSelector entries were",
    };
    Diagnostic::new(
        Code::NoMatchingRuntimeClass,
        pod.field("runtimeClassName").display(),
        format!("no declared RuntimeClass fits this {os} pod, so {added} added directly"),
        format!("declare one selecting kubernetes.io/os: {}", os.label()),
    )
}

/// The field that says the pod runs `os` containers: an image first, as
/// users read "runs Windows containers", then any other decisive field.
fn first_reason(resolution: &Resolution, os: Os) -> String {
    let decisive = |s: &&Signal| s.placement.os() == Some(os);
    let image = |s: &&Signal| decisive(s) && s.source == Source::Image;
    let found = resolution.signals.iter().find(image);
    match found.or_else(|| resolution.signals.iter().find(decisive)) {
        Some(s) => format!("{} = {}", s.path, s.value),
        None => "no OS signal; defaultOS is linux".to_string(),
    }
}

fn windows_missing(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    selector: &BTreeMap<String, String>,
    tolerations: &[&Toleration],
    cluster: ClusterBuilds<'_>,
    plan: &mut Plan,
) -> Vec<Missing> {
    let mut missing = Vec::new();
    if selector.get(OS_LABEL).map(String::as_str) != Some("windows") {
        let because = first_reason(resolution, Os::Windows);
        missing.push(Missing::Selector {
            key: OS_LABEL,
            value: "windows".into(),
            code: Code::MissingOsSelector,
            why: format!("the pod runs Windows containers ({because}) but does not select kubernetes.io/os: windows (a nodeSelector, which EKS needs to give Windows pods an IP)"),
        });
    }
    if let Some(taint) = settings.windows_taint() {
        if !tolerations.iter().any(|t| tolerates(t, taint)) {
            missing.push(Missing::Toleration {
                taint: taint.clone(),
                why: format!("the Windows pod does not tolerate the Windows node taint {taint}"),
            });
        }
        plan.violations
            .extend(expiring_toleration(pod, tolerations, taint));
    }
    let pins = settings.pin_windows_build && !resolution.host_process;
    let node_builds = resolution.node_placement().windows.unwrap_or(Builds::Any);
    let known = resolution.image_builds() != Builds::Any;
    if pins && (resolution.build_set || (cluster.is_some() && known)) {
        missing.extend(build_placement(resolution, &node_builds, cluster));
    } else {
        legacy_pin(resolution, pins, &node_builds, &mut missing, plan);
    }
    let enforced = pod.os_name == Some("windows") || settings.set_pod_os;
    let forbidden = forbidden_fields(pod, enforced);
    if enforced {
        plan.violations.extend(forbidden);
    } else {
        plan.warnings.extend(forbidden);
    }
    plan.violations.extend(host_process_rules(pod));
    missing
}

/// The build pin of an image whose reference names one build.
fn legacy_pin(
    resolution: &Resolution,
    pins: bool,
    node_builds: &Builds,
    missing: &mut Vec<Missing>,
    plan: &mut Plan,
) {
    match pin_build(resolution, node_builds) {
        Some(build) if pins && !node_builds.is_within(&resolution.image_builds()) => {
            missing.push(pin(build));
        }
        None if pins && node_builds.single().is_none() => {
            plan.warnings.extend(resolution.images_without_build.iter().map(|(path, image)| {
                Diagnostic::new(
                    Code::UnknownBuild,
                    path,
                    format!("Windows image {} names no build, so the pod is not pinned to one", short_image(image)),
                    "use a release tag (e.g. ltsc2022) or set nodeSelector node.kubernetes.io/windows-build",
                )
            }));
        }
        _ => {}
    }
}

fn pin(build: WindowsBuild) -> Missing {
    Missing::Selector {
        key: WINDOWS_BUILD_LABEL,
        value: build.to_string(),
        code: Code::MissingBuildPin,
        why: format!("the pod's Windows image needs build {build} but the pod is not pinned to it, so it can land on a node of another build and fail to start"),
    }
}

/// Build placement from a set of builds (an image index, Hyper-V, or the
/// cluster's builds): nothing when every build the pod can reach runs it,
/// a pin when one build fits, else a required affinity `In` on the fitting
/// builds (the scheduler ORs terms and ANDs expressions: NodeAffinity).
fn build_placement(
    resolution: &Resolution,
    node_builds: &Builds,
    cluster: ClusterBuilds<'_>,
) -> Option<Missing> {
    let allowed = resolution.image_builds();
    let fits: BuildSet = match (cluster, &allowed.intersect(node_builds)) {
        (Some(cluster), _) => {
            let reachable: Vec<&WindowsBuild> =
                cluster.iter().filter(|b| node_builds.allows(**b)).collect();
            if reachable.iter().all(|b| allowed.allows(**b)) {
                return None;
            }
            reachable
                .into_iter()
                .filter(|b| allowed.allows(**b))
                .copied()
                .collect()
        }
        (None, Builds::Only(set)) if !node_builds.is_within(&allowed) => {
            // One image build (and the hosts that also run it): its own pin.
            if let Some(own) = resolution.image_build() {
                if allowed == Builds::compatible_hosts(own) {
                    return pin_build(resolution, node_builds).map(pin);
                }
            }
            set.clone()
        }
        _ => return None,
    };
    match fits.len() {
        // No node runs it (the inventory check says so): keep the image's
        // own pin, so that the pod waits rather than fails on a wrong build.
        0 => resolution.image_build().map(pin),
        1 => fits.iter().next().map(|b| pin(*b)),
        _ => Some(Missing::BuildAffinity {
            why: format!(
                "the pod's Windows images run on builds {} only, but the pod does not select them",
                join_builds(&fits)
            ),
            builds: fits.into_iter().collect(),
        }),
    }
}

fn join_builds(builds: &BuildSet) -> String {
    builds
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The build to pin: the images' own, unless the pod's node-selecting
/// fields rule it out and leave another build that runs the images (a
/// 2025 node for an ltsc2022 image under `windows-build NotIn [20348]`).
fn pin_build(resolution: &Resolution, node_builds: &Builds) -> Option<WindowsBuild> {
    let own = resolution.image_build()?;
    match resolution.image_builds().intersect(node_builds) {
        Builds::Only(set) if !set.contains(&own) => set.first().copied().or(Some(own)),
        _ => Some(own),
    }
}

/// A `NoExecute` Windows taint evicts a pod whose matching tolerations set
/// `tolerationSeconds`: the shortest one counts, so only removing it helps.
fn expiring_toleration(
    pod: &PodView<'_>,
    tolerations: &[&Toleration],
    taint: &Taint,
) -> Option<Diagnostic> {
    let (toleration, seconds) = eviction_after(tolerations, taint)?;
    let path = match pod.tolerations.iter().position(|t| t == toleration) {
        Some(i) => pod.field("tolerations").index(i).field("tolerationSeconds"),
        None => pod.field("runtimeClassName"),
    };
    Some(Diagnostic::new(
        Code::TolerationExpires,
        path.display(),
        format!("the Windows pod tolerates the NoExecute taint {taint} for only {seconds} s, so it is evicted from every Windows node after that (the shortest matching tolerationSeconds counts)"),
        format!("remove tolerationSeconds from the toleration of {}", describe_toleration(toleration)),
    ))
}

/// The last path segment and tag of an image, for short messages.
fn short_image(image: &str) -> &str {
    image.rsplit('/').next().unwrap_or(image)
}

fn linux_missing(
    resolution: &Resolution,
    settings: &Settings,
    tolerations: &[&Toleration],
) -> Vec<Missing> {
    if !resolution.node_placement().allows_windows() {
        return Vec::new();
    }
    // Built only when the pod lacks something: most pods lack nothing.
    let because = || first_reason(resolution, Os::Linux);
    let why = match settings.windows_taint() {
        None => format!("the pod runs Linux containers ({}) but selects no OS and Windows nodes are not tainted, so it can land on a Windows node", because()),
        Some(taint) if !taint.keeps_pods_off() => format!("the pod runs Linux containers ({}) but selects no OS, and the Windows taint {taint} only prefers to keep pods off, so it can land on a Windows node", because()),
        Some(taint) => match tolerations.iter().find(|t| tolerates(t, taint)) {
            None => return Vec::new(),
            Some(t) => format!(
                "the pod runs Linux containers ({}) but its toleration of {} also tolerates the Windows taint {taint}, so it can land on a Windows node",
                because(),
                describe_toleration(t)
            ),
        },
    };
    vec![Missing::Selector {
        key: OS_LABEL,
        value: "linux".into(),
        code: Code::LinuxPodUnconfined,
        why,
    }]
}

/// A declared RuntimeClass that provides everything missing and agrees with the pod.
fn choose_runtime_class<'s>(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &'s Settings,
    os: Os,
    missing: &[Missing],
) -> Option<&'s RuntimeClass> {
    settings.runtime_classes.iter().find(|rc| {
        let sel = &rc.scheduling.node_selector;
        let placement = resolution.placement.intersect(&selector_placement(sel));
        let agrees = placement.os() == Some(os)
            && sel
                .iter()
                .all(|(k, v)| pod.node_selector.get(k).is_none_or(|own| own == v));
        // A build the pod does not need would pin it arbitrarily.
        let no_stray_build = !sel.contains_key(WINDOWS_BUILD_LABEL)
            || missing
                .iter()
                .any(|m| matches!(m, Missing::Selector { key, .. } if *key == WINDOWS_BUILD_LABEL))
            || pod.node_selector.contains_key(WINDOWS_BUILD_LABEL);
        let provides = missing.iter().all(|m| match m {
            Missing::Selector { key, value, .. } => sel.get(*key) == Some(value),
            Missing::Toleration { taint, .. } => rc
                .scheduling
                .tolerations
                .iter()
                .any(|t| tolerates(t, taint)),
            Missing::PodOs(_) => true,
            Missing::BuildAffinity { .. } => false,
        });
        agrees && no_stray_build && provides
    })
}

/// Adds the class's scheduling to a Pod the way the RuntimeClass plugin would.
fn merge_runtime_class(pod: &PodView<'_>, rc: &RuntimeClass, ops: &mut Vec<AddOp>) {
    let entries: Vec<(String, String)> = rc
        .scheduling
        .node_selector
        .iter()
        .filter(|(k, _)| !pod.node_selector.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    ops.extend(selector_ops(pod, &entries));
    let new: Vec<Value> = added_tolerations(&pod.tolerations, rc)
        .into_iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    ops.extend(toleration_ops(pod, new));
}

fn ops_for(pod: &PodView<'_>, missing: &[Missing]) -> Vec<AddOp> {
    let mut ops = Vec::new();
    let entries: Vec<(String, String)> = missing
        .iter()
        .filter_map(|m| match m {
            Missing::Selector { key, value, .. } => Some((key.to_string(), value.clone())),
            _ => None,
        })
        .collect();
    ops.extend(selector_ops(pod, &entries));
    let tolerations: Vec<Value> = missing
        .iter()
        .filter_map(|m| match m {
            Missing::Toleration { taint, .. } => Some(for_taint(taint)),
            _ => None,
        })
        .collect();
    ops.extend(toleration_ops(pod, tolerations));
    for m in missing {
        if let Missing::BuildAffinity { builds, .. } = m {
            ops.extend(build_affinity_ops(pod, builds));
        }
    }
    for m in missing {
        if let Missing::PodOs(os) = m {
            ops.push(match pod.raw.get("os") {
                Some(Value::Object(_)) => AddOp::new(
                    pod.field("os").field("name").pointer().to_string(),
                    json!(os.label()),
                ),
                _ => AddOp::new(
                    pod.field("os").pointer().to_string(),
                    json!({"name": os.label()}),
                ),
            });
        }
    }
    ops
}

fn build_expression(builds: &[WindowsBuild]) -> Value {
    let values: Vec<String> = builds.iter().map(ToString::to_string).collect();
    json!({"key": WINDOWS_BUILD_LABEL, "operator": "In", "values": values})
}

/// Adds the build expression to every required term, after the user's
/// expressions (which stay as written), or creates the one term.
fn build_affinity_ops(pod: &PodView<'_>, builds: &[WindowsBuild]) -> Vec<AddOp> {
    let expression = build_expression(builds);
    let fields = [
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ];
    let mut path = pod.path.clone();
    let mut current = Some(pod.raw);
    for (depth, field) in fields.iter().enumerate() {
        path = path.field(field);
        let next = current.and_then(|map| map.get(*field));
        match next {
            Some(Value::Object(map)) => current = Some(map),
            Some(Value::Array(terms)) if depth == fields.len() - 1 && !terms.is_empty() => {
                return terms
                    .iter()
                    .enumerate()
                    .map(|(i, term)| term_op(&path.index(i), term, &expression))
                    .collect();
            }
            _ => {
                // Build the rest of the path as one value.
                let mut value = json!([{"matchExpressions": [expression]}]);
                for outer in fields.iter().skip(depth + 1).rev() {
                    value = json!({ *outer: value });
                }
                return vec![AddOp::new(path.pointer().to_string(), value)];
            }
        }
    }
    Vec::new()
}

fn term_op(
    term_path: &crate::vocab::field_path::FieldPath,
    term: &Value,
    expression: &Value,
) -> AddOp {
    match term.get("matchExpressions") {
        Some(Value::Array(_)) => AddOp::new(
            format!("{}/-", term_path.field("matchExpressions").pointer()),
            expression.clone(),
        ),
        _ => AddOp::new(
            term_path.field("matchExpressions").pointer().to_string(),
            json!([expression]),
        ),
    }
}

fn selector_ops(pod: &PodView<'_>, entries: &[(String, String)]) -> Vec<AddOp> {
    if entries.is_empty() {
        return Vec::new();
    }
    let path = pod.field("nodeSelector");
    match pod.raw.get("nodeSelector") {
        Some(Value::Object(_)) => entries
            .iter()
            .map(|(k, v)| AddOp::new(pointer_child(path.pointer(), k), json!(v)))
            .collect(),
        _ => {
            let mut map = Map::new();
            map.extend(entries.iter().map(|(k, v)| (k.clone(), json!(v))));
            vec![AddOp::new(path.pointer().to_string(), Value::Object(map))]
        }
    }
}

fn toleration_ops(pod: &PodView<'_>, tolerations: Vec<Value>) -> Vec<AddOp> {
    if tolerations.is_empty() {
        return Vec::new();
    }
    let path = pod.field("tolerations");
    match pod.raw.get("tolerations") {
        Some(Value::Array(_)) => tolerations
            .into_iter()
            .map(|t| AddOp::new(format!("{}/-", path.pointer()), t))
            .collect(),
        _ => vec![AddOp::new(
            path.pointer().to_string(),
            Value::Array(tolerations),
        )],
    }
}

fn violation(pod: &PodView<'_>, missing: &Missing, rc: Option<&RuntimeClass>) -> Diagnostic {
    let via_rc = rc
        .map(|rc| format!(", or set runtimeClassName: {}", rc.name))
        .unwrap_or_default();
    match missing {
        Missing::Selector {
            key,
            value,
            code,
            why,
        } => Diagnostic::new(
            *code,
            pod.field("nodeSelector").display(),
            why.clone(),
            format!("add nodeSelector {key}: \"{value}\"{via_rc}"),
        ),
        Missing::Toleration { taint, why } => Diagnostic::new(
            Code::MissingWindowsToleration,
            pod.field("tolerations").display(),
            why.clone(),
            format!("add the toleration {}{via_rc}", for_taint(taint)),
        ),
        Missing::BuildAffinity { builds, why } => Diagnostic::new(
            Code::MissingBuildPin,
            pod.field("affinity").display(),
            why.clone(),
            format!(
                "add to every required nodeSelectorTerm the expression {}",
                build_expression(builds)
            ),
        ),
        Missing::PodOs(os) => Diagnostic::new(
            Code::MissingPodOs,
            pod.field("os").field("name").display(),
            "is not set while the policy requires spec.os on every pod",
            format!("set os.name: {}", os.label()),
        ),
    }
}
