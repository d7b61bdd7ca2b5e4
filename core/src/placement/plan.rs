//! What a correctly placed pod has, and what to add when it lacks it.

use k8s_openapi::api::core::v1::Toleration;
use serde_json::json;

use crate::input::facts::Facts;
use crate::input::pod::PodView;
use crate::input::settings::{DefaultOs, RuntimeClass, Settings};
use crate::placement::architecture::arch_missing;
use crate::placement::builds::{build_placement, legacy_pin, ClusterBuilds};
use crate::placement::missing::{Missing, Plan};
use crate::placement::ops::{in_expression, merge_runtime_class, ops_for};
use crate::placement::selection::{bound_to_node, os_undetermined, other_selections};
use crate::placement::windows_rules::{forbidden_fields, host_process_rules};
use crate::scheduling::runtime_class::PodScheduling;
use crate::scheduling::taints::{
    describe as describe_toleration, eviction_after, for_taint, tolerates,
};
use crate::signals::resolve::{Resolution, Signal, Source};
use crate::vocab::constraint::{Builds, Os};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::labels::{selector_placement, OS_LABEL, WINDOWS_BUILD_LABEL};
use crate::vocab::patch::AddOp;
use crate::vocab::taint::Taint;

/// Where the RuntimeClass merge must be done by the policy itself: on
/// Pods the built-in plugin has already run when the policy sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeClassMerge {
    ByPolicy,
    ByPlugin,
}

/// What the pod lacks to land on nodes of its OS and build, as violations
/// (`mutate: false`) or as the operations that add it.
pub fn plan(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    merge: RuntimeClassMerge,
    facts: &Facts,
) -> Plan {
    let mut plan = Plan::default();
    let Some(os) = target_os(pod, resolution, settings, &mut plan) else {
        return plan;
    };
    let cluster = facts.cluster_builds(settings);
    let mut missing = missing_fields(pod, resolution, settings, os, cluster.as_ref(), &mut plan);
    if settings.pin_architecture && pod.node_name.is_none() {
        missing.extend(arch_missing(pod, os, facts, settings, &mut plan));
    }
    if missing.is_empty() {
        return plan;
    }
    let runtime_class = (settings.prefer_runtime_class && pod.runtime_class_name.is_none())
        .then(|| choose_runtime_class(pod, resolution, settings, os, &missing))
        .flatten();
    if settings.mutate {
        add_missing(pod, settings, os, merge, runtime_class, missing, &mut plan);
    } else {
        plan.violations
            .extend(missing.iter().map(|m| violation(pod, m, runtime_class)));
    }
    plan
}

/// The OS to place the pod on: its own signals', else `defaultOS` unless
/// the pod picks its nodes by other means (then a warning and no OS).
fn target_os(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    plan: &mut Plan,
) -> Option<Os> {
    match (resolution.placement.os(), settings.default_os) {
        (Some(os), _) => Some(os),
        (None, DefaultOs::Linux) if !resolution.os_unsure => {
            let selections = other_selections(pod, settings);
            if selections.is_empty() {
                Some(Os::Linux)
            } else {
                plan.warnings.push(os_undetermined(pod, &selections));
                None
            }
        }
        (None, _) => None,
    }
}

/// The placement fields a pod of `os` lacks; a bound pod gets no selector.
fn missing_fields(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    os: Os,
    cluster: ClusterBuilds<'_>,
    plan: &mut Plan,
) -> Vec<Missing> {
    let own_rc = pod
        .runtime_class_name
        .and_then(|name| settings.runtime_class(name));
    let scheduling = PodScheduling::of(pod, own_rc);
    let mut missing = match os {
        Os::Windows => windows_missing(pod, resolution, settings, &scheduling, cluster, plan),
        Os::Linux => linux_missing(pod, resolution, settings, &scheduling.tolerations, plan),
    };
    if settings.set_pod_os && pod.os_name.is_none() {
        missing.push(Missing::PodOs(os));
    }
    if let Some(node) = pod.node_name {
        let before = missing.len();
        missing.retain(|m| !matches!(m, Missing::Selector { .. } | Missing::Affinity { .. }));
        if missing.len() < before {
            plan.warnings.push(bound_to_node(pod, node, os));
        }
    }
    missing
}

/// The operations that add what is missing: through the chosen
/// RuntimeClass, or field by field.
fn add_missing(
    pod: &PodView<'_>,
    settings: &Settings,
    os: Os,
    merge: RuntimeClassMerge,
    runtime_class: Option<&RuntimeClass>,
    mut missing: Vec<Missing>,
    plan: &mut Plan,
) {
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
    scheduling: &PodScheduling<'_>,
    cluster: ClusterBuilds<'_>,
    plan: &mut Plan,
) -> Vec<Missing> {
    let mut missing = Vec::new();
    let tolerations = &scheduling.tolerations;
    if scheduling.node_selector.get(OS_LABEL).map(String::as_str) != Some("windows") {
        let because = first_reason(resolution, Os::Windows);
        missing.push(Missing::Selector {
            key: OS_LABEL,
            value: "windows".into(),
            code: Code::MissingOsSelector,
            why: format!("the pod runs Windows containers ({because}) but does not select kubernetes.io/os: windows (a nodeSelector, which EKS needs to give Windows pods an IP)"),
        });
    }
    missing.extend(own_toleration(
        pod,
        Os::Windows,
        settings,
        tolerations,
        plan,
    ));
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

/// The toleration of the taint nodes of `os` carry, when the pod lacks it;
/// a `NoExecute` taint it tolerates for a while only is a violation.
fn own_toleration(
    pod: &PodView<'_>,
    os: Os,
    settings: &Settings,
    tolerations: &[&Toleration],
    plan: &mut Plan,
) -> Option<Missing> {
    let taint = settings.taint_of(os)?;
    plan.violations
        .extend(expiring_toleration(pod, os, tolerations, taint));
    if tolerations.iter().any(|t| tolerates(t, taint)) {
        return None;
    }
    let code = match os {
        Os::Windows => Code::MissingWindowsToleration,
        Os::Linux => Code::MissingLinuxToleration,
    };
    Some(Missing::Toleration {
        taint: taint.clone(),
        code,
        why: format!("the {os} pod does not tolerate the {os} node taint {taint}"),
    })
}

/// A `NoExecute` taint evicts a pod whose matching tolerations set
/// `tolerationSeconds`: the shortest one counts, so only removing it helps.
fn expiring_toleration(
    pod: &PodView<'_>,
    os: Os,
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
        format!("the {os} pod tolerates the NoExecute taint {taint} for only {seconds} s, so it is evicted from every {os} node after that (the shortest matching tolerationSeconds counts)"),
        format!("remove tolerationSeconds from the toleration of {}", describe_toleration(toleration)),
    ))
}

/// What a Linux pod lacks: the Linux taint's toleration, and a Linux
/// selector when it can land on a Windows node.
fn linux_missing(
    pod: &PodView<'_>,
    resolution: &Resolution,
    settings: &Settings,
    tolerations: &[&Toleration],
    plan: &mut Plan,
) -> Vec<Missing> {
    let mut missing: Vec<Missing> = own_toleration(pod, Os::Linux, settings, tolerations, plan)
        .into_iter()
        .collect();
    missing.extend(linux_selector(resolution, settings, tolerations));
    missing
}

/// The Linux selector, when the pod can land on a Windows node.
fn linux_selector(
    resolution: &Resolution,
    settings: &Settings,
    tolerations: &[&Toleration],
) -> Option<Missing> {
    if !resolution.node_placement().allows_windows() {
        return None;
    }
    // Built only when the pod lacks something: most pods lack nothing.
    let because = || first_reason(resolution, Os::Linux);
    let why = match settings.windows_taint() {
        None => format!("the pod runs Linux containers ({}) but selects no OS and Windows nodes are not tainted, so it can land on a Windows node", because()),
        Some(taint) if !taint.keeps_pods_off() => format!("the pod runs Linux containers ({}) but selects no OS, and the Windows taint {taint} only prefers to keep pods off, so it can land on a Windows node", because()),
        Some(taint) => match tolerations.iter().find(|t| tolerates(t, taint)) {
            None => return None,
            Some(t) => format!(
                "the pod runs Linux containers ({}) but its toleration of {} also tolerates the Windows taint {taint}, so it can land on a Windows node",
                because(),
                describe_toleration(t)
            ),
        },
    };
    Some(Missing::Selector {
        key: OS_LABEL,
        value: "linux".into(),
        code: Code::LinuxPodUnconfined,
        why,
    })
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
            Missing::Affinity { .. } => false,
        });
        agrees && no_stray_build && provides
    })
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
        Missing::Toleration { taint, code, why } => Diagnostic::new(
            *code,
            pod.field("tolerations").display(),
            why.clone(),
            format!("add the toleration {}{via_rc}", for_taint(taint)),
        ),
        Missing::Affinity {
            key,
            values,
            code,
            why,
        } => Diagnostic::new(
            *code,
            pod.field("affinity").display(),
            why.clone(),
            format!(
                "add to every required nodeSelectorTerm the expression {}",
                in_expression(key, values)
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
