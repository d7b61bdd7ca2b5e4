//! Background audit: Kubewarden's audit scanner asks about objects that
//! already exist. Its report fails an object only when the answer is a
//! rejection; a patch is ignored (kubewarden-controller,
//! `internal/audit-scanner/report/report.go`, `computePolicyResult`). So an
//! audit answers what admission would add as a violation, as `mutate:
//! false` words it, and a running Pod is judged on the node it runs on.

use serde_json::Value;

use crate::admission::decide::decide;
use crate::admission::decision::Decision;
use crate::admission::needs::ReadPod;
use crate::input::facts::Facts;
use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::review::controller_of;
use crate::input::settings::Settings;
use crate::signals::architecture::Architectures;
use crate::signals::resolve::{resolve_with, Resolution, Signal};
use crate::vocab::constraint::{Builds, Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::Kind;
use crate::vocab::labels::{ARCH_LABEL, OS_LABEL, WINDOWS_BUILD_LABEL};

/// The audit answer for a live object: a Pod bound to a node is judged on
/// that node; any other object fails where admission would patch or
/// refuse it, or where no node (nor NodePool) runs its pods.
pub(crate) fn audit(
    object: &Value,
    kind: Kind,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'_>>,
    signals: bool,
) -> Decision {
    if kind == Kind::Pod {
        if let Some(read) = read.as_ref() {
            if let Some(node) = read.pod.node_name {
                return running_pod(&read.pod, node, object, settings, facts, signals);
            }
        }
    }
    let unpatched = Settings {
        mutate: false,
        ..settings.clone()
    };
    no_node_fails(decide(object, kind, &unpatched, facts, read, signals))
}

/// What admission only warns about, that no node runs the pods, is what
/// is wrong with an object that exists: it fails the audit.
fn no_node_fails(decision: Decision) -> Decision {
    let (no_node, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) = decision
        .warnings
        .iter()
        .cloned()
        .partition(|w| w.code == Code::NoNode);
    if no_node.is_empty() {
        return decision;
    }
    let mut violations = decision.violations.clone();
    violations.extend(no_node);
    Decision {
        signals: decision.signals,
        ..Decision::reject(violations, warnings)
    }
}

/// A Pod bound to `node_name`: it fails when that node cannot run one of
/// its containers (OS, build, architecture), and passes when it can, even
/// without a selector; when the node facts do not hold the node, it passes.
fn running_pod(
    pod: &PodView<'_>,
    node_name: &str,
    object: &Value,
    settings: &Settings,
    facts: &Facts,
    signals: bool,
) -> Decision {
    let resolution = resolve_with(pod, settings, facts);
    if !resolution.conflicts.is_empty() {
        return Decision::reject(resolution.conflicts.clone(), resolution.warnings.clone())
            .with_signals(signals, &resolution, pod);
    }
    let controller = controller_words(object);
    let Some(node) = bound_node(facts, node_name) else {
        let unknown = unknown_node(pod, node_name);
        return Decision::accept(vec![unknown]).with_signals(signals, &resolution, pod);
    };
    let problem = wrong_os(pod, node, &resolution, controller.as_deref())
        .or_else(|| wrong_architecture(pod, node, facts, controller.as_deref()));
    let decision = match problem {
        Some(problem) => Decision::reject(vec![problem], Vec::new()),
        None => Decision::accept(template_note(pod, node, &resolution, controller.as_deref())),
    };
    decision.with_signals(signals, &resolution, pod)
}

/// The node `name` as the facts hold it: a listed node, or a node of a
/// published class looked up by its name.
fn bound_node<'f>(facts: &'f Facts, name: &str) -> Option<&'f Node> {
    facts
        .listed_nodes()?
        .iter()
        .find(|n| n.exists() && n.unnamed.is_none() && n.name == name)
}

/// The Pod's controller in words, e.g. `ReplicaSet web-7d4b9`.
fn controller_words(object: &Value) -> Option<String> {
    controller_of(object).map(|c| format!("{} {}", c.kind, c.name))
}

/// The node in words: its name, OS, build and architecture.
fn node_words(node: &Node) -> String {
    let os = if node.is_windows() {
        "Windows"
    } else {
        "Linux"
    };
    let build = node.build().map(|b| format!(" {b}")).unwrap_or_default();
    let arch = node
        .label(ARCH_LABEL)
        .map(|a| format!(", {a}"))
        .unwrap_or_default();
    format!("node {:?} ({os}{build}{arch})", node.name)
}

/// How to move the pod: through its controller's template, or itself.
fn move_fix(selector: &str, controller: Option<&str>) -> String {
    match controller {
        Some(owner) => format!(
            "give the pod template of {owner} (or of what owns it) nodeSelector {selector}, then delete this pod so it is recreated there"
        ),
        None => format!("recreate the pod with nodeSelector {selector}"),
    }
}

/// The selector that lands a pod on `placement`, in words: on Windows,
/// the images' own build when they have one (what `pinWindowsBuild` pins).
fn selector_words(placement: &Placement, resolution: &Resolution) -> String {
    let build = resolution
        .image_build()
        .or_else(|| placement.windows.as_ref().and_then(Builds::single));
    match (placement.os(), build) {
        (Some(Os::Windows), Some(build)) => {
            format!("{OS_LABEL}: windows and {WINDOWS_BUILD_LABEL}: {build}")
        }
        (Some(Os::Windows), None) => format!("{OS_LABEL}: windows"),
        _ => format!("{OS_LABEL}: linux"),
    }
}

/// The first of the pod's own needs (images, `os.name`, Windows options)
/// the node's OS or build does not meet.
fn wrong_os(
    pod: &PodView<'_>,
    node: &Node,
    resolution: &Resolution,
    controller: Option<&str>,
) -> Option<Diagnostic> {
    let needs = |s: &&Signal| !s.source.selects_nodes();
    let signal = resolution
        .signals
        .iter()
        .filter(needs)
        .find(|s| !node.runs(&s.placement))?;
    let all = resolution
        .signals
        .iter()
        .filter(needs)
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement));
    let target = if all.is_empty() {
        &signal.placement
    } else {
        &all
    };
    Some(Diagnostic::new(
        Code::WrongNode,
        pod.field("nodeName").display(),
        format!(
            "the pod runs on {}, which cannot run {} = {}: it needs {}",
            node_words(node),
            signal.path,
            signal.value,
            signal.placement
        ),
        move_fix(&selector_words(target, resolution), controller),
    ))
}

/// A container whose image is built for no architecture the node has.
fn wrong_architecture(
    pod: &PodView<'_>,
    node: &Node,
    facts: &Facts,
    controller: Option<&str>,
) -> Option<Diagnostic> {
    let arch = node.label(ARCH_LABEL)?;
    let os = if node.is_windows() {
        Os::Windows
    } else {
        Os::Linux
    };
    let archs = Architectures::read(pod, Some(os), facts);
    let image = archs
        .images
        .iter()
        .find(|i| !i.archs.is_empty() && !i.archs.contains(arch.as_ref()))?;
    let wanted = archs
        .runnable()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| image.archs.clone());
    let choice = wanted.iter().next().cloned().unwrap_or_default();
    Some(Diagnostic::new(
        Code::WrongNode,
        pod.field("nodeName").display(),
        format!(
            "the pod runs on {}, but {} = {:?} is built for {} only",
            node_words(node),
            image.path,
            image.image,
            crate::signals::architecture::join(&image.archs)
        ),
        move_fix(&format!("{ARCH_LABEL}: {choice}"), controller),
    ))
}

/// A running pod that fits its node but would not be placed so again
/// without a selector: a note for its controller's template.
fn template_note(
    pod: &PodView<'_>,
    node: &Node,
    resolution: &Resolution,
    controller: Option<&str>,
) -> Vec<Diagnostic> {
    let placement = &resolution.placement;
    let Some(os) = placement.os() else {
        return Vec::new();
    };
    if pod.node_selector.get(OS_LABEL).is_some() {
        return Vec::new();
    }
    let whose = controller.map_or_else(|| "its".to_string(), |c| format!("{c}'s"));
    vec![Diagnostic::new(
        Code::BoundToNode,
        pod.field("nodeName").display(),
        format!(
            "node {:?} runs the pod, but no selector keeps its next pods on such nodes",
            node.name
        ),
        format!(
            "add nodeSelector {} to {whose} pod template",
            selector_words(&os_placement(os, placement), resolution)
        ),
    )]
}

fn os_placement(os: Os, placement: &Placement) -> Placement {
    match os {
        Os::Linux => Placement::linux(),
        Os::Windows => Placement::windows(placement.windows.clone().unwrap_or(Builds::Any)),
    }
}

/// A bound pod whose node the facts do not hold: it is left as it is.
fn unknown_node(pod: &PodView<'_>, node: &str) -> Diagnostic {
    Diagnostic::new(
        Code::BoundToNode,
        pod.field("nodeName").display(),
        format!("runs on node {node:?}, which the node facts do not hold, so where it runs was not checked"),
        "publish the node facts (os-placement facts sync) to have running pods checked",
    )
}
