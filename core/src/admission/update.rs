//! UPDATE requests: a Pod may only gain ephemeral containers, which must
//! fit the running pod; a workload whose pod template did not change is
//! not judged again.

use serde_json::Value;

use crate::admission::decision::Decision;
use crate::input::facts::Facts;
use crate::input::pod::{ContainerList, PodView};
use crate::input::review::Review;
use crate::input::settings::{DefaultOs, Settings};
use crate::placement::selection::other_selections;
use crate::scheduling::taints::tolerates;
use crate::signals::resolve::{pair_conflict, resolve_with, Resolution, Signal};
use crate::vocab::constraint::Placement;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::Kind;

/// Pod UPDATE: only new ephemeral containers are judged, against the rest
/// of the pod; nothing is patched (the API forbids scheduling changes).
pub(crate) fn check_new_ephemeral_containers(
    pod: &PodView<'_>,
    old_object: Option<&Value>,
    settings: &Settings,
    facts: &Facts,
    signals: bool,
) -> Decision {
    let old_names = old_ephemeral_names(old_object);
    let ephemeral = |index: usize| {
        pod.containers
            .get(index)
            .filter(|c| c.list == ContainerList::EphemeralContainers)
    };
    let is_new = |index: usize| {
        ephemeral(index).is_some_and(|c| c.name.is_none_or(|n| !old_names.contains(&n)))
    };
    let resolution: Resolution = resolve_with(pod, settings, facts);
    // Earlier ephemeral containers cannot be removed: they must not make
    // the pod impossible to debug, so only the pod's own fields count.
    let existing: Vec<_> = resolution
        .signals
        .iter()
        .filter(|s| s.container.is_none_or(|i| ephemeral(i).is_none()))
        .collect();
    let added = resolution
        .signals
        .iter()
        .filter(|s| s.container.is_some_and(is_new));
    let pod_placement = running_placement(
        pod,
        settings,
        existing
            .iter()
            .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement)),
    );
    if pod_placement.is_empty() {
        // The pod itself is inconsistent; that is not this update's doing.
        return Decision::accept(Vec::new());
    }
    let violations: Vec<Diagnostic> = added
        .filter(|signal| pod_placement.intersect(&signal.placement).is_empty())
        .map(|signal| mismatch(signal, &existing, &pod_placement))
        .collect();
    let decision = if violations.is_empty() {
        Decision::accept(Vec::new())
    } else {
        Decision::reject(violations, Vec::new())
    };
    decision.with_signals(signals, &resolution, pod)
}

/// Why a new ephemeral container cannot run where the pod runs: the clash
/// with one of the pod's own fields, or the placement it needs.
fn mismatch(signal: &Signal, existing: &[&Signal], pod_placement: &Placement) -> Diagnostic {
    let mut d = existing
        .iter()
        .find_map(|e| pair_conflict(e, signal))
        .unwrap_or_else(|| {
            let message = format!(
                "needs {}, but the pod runs on {pod_placement}",
                signal.placement
            );
            Diagnostic::new(Code::EphemeralContainerMismatch, &signal.path, message, "")
        });
    d.code = Code::EphemeralContainerMismatch;
    d.fix =
        format!("the pod's node is fixed: use an ephemeral container image for {pod_placement}");
    d
}

/// Where a running pod with no OS signal of its own can be: off Windows
/// nodes when it does not tolerate their taint, and on Linux when
/// `defaultOS` placed it there (it points at no nodes by other means).
fn running_placement(pod: &PodView<'_>, settings: &Settings, signalled: Placement) -> Placement {
    if signalled.os().is_some() {
        return signalled;
    }
    let kept_off_windows = settings.windows_taint().is_some_and(|taint| {
        taint.keeps_pods_off() && !pod.tolerations.iter().any(|t| tolerates(t, taint))
    });
    let defaulted = settings.default_os == DefaultOs::Linux
        && other_selections(pod, settings)
            .iter()
            .all(|s| s.path == pod.field("nodeName").display());
    if kept_off_windows || defaulted {
        signalled.intersect(&Placement::linux())
    } else {
        signalled
    }
}

pub(crate) fn pod_template_unchanged(review: &Review<'_>, kind: Kind, spec: &Value) -> bool {
    review
        .old_object
        .and_then(|old| {
            kind.pod_spec_fields()
                .iter()
                .try_fold(old, |v, field| v.get(field))
        })
        .is_some_and(|old_spec| old_spec == spec)
}

fn old_ephemeral_names(old_object: Option<&Value>) -> Vec<&str> {
    old_object
        .and_then(|o| o.pointer("/spec/ephemeralContainers"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}
