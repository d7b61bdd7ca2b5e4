//! The rule pipeline for one pod spec: resolve its signals, reject what
//! contradicts itself, plan what it lacks, and check the plan against the
//! cluster's nodes.

use serde_json::Value;

use crate::admission::context::lookup_notes;
use crate::admission::decision::{planned, Decision};
use crate::admission::needs::ReadPod;
use crate::input::facts::{Facts, RuntimeClassFacts};
use crate::input::pod::PodView;
use crate::input::review::locate_pod_spec;
use crate::input::settings::{NodeInventory, Settings};
use crate::placement::inventory::{no_node_after, Check};
use crate::placement::plan::{plan, RuntimeClassMerge};
use crate::signals::resolve::{resolve_with, Resolution};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::Kind;

/// Resolves and places the pod spec of `object`. Kept out of line: it is
/// called from three places and carries the whole rule pipeline.
/// `read` is `object`'s pod spec when already read.
#[inline(never)]
pub(crate) fn decide<'o>(
    object: &'o Value,
    kind: Kind,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'o>>,
    signals: bool,
) -> Decision {
    let (pod, resolved) = match read {
        Some(read) => (read.pod, read.resolution),
        None => match read_pod(object, kind) {
            Ok(pod) => (pod, None),
            Err(problems) => return Decision::reject(problems, Vec::new()),
        },
    };
    let mut resolution = resolved.unwrap_or_else(|| resolve_with(&pod, settings, facts));
    #[allow(unused_mut)] // Added to only with the `unreadable` feature.
    let mut notes = lookup_notes(&pod, settings, facts);
    #[cfg(feature = "unreadable")]
    crate::admission::unreadable::add(&mut notes, &pod, settings, facts);
    resolution.warnings.extend(notes.warnings);
    let mut conflicts = resolution.conflicts.clone();
    conflicts.extend(missing_runtime_class(&pod, settings, facts));
    conflicts.extend(notes.violation);
    if !conflicts.is_empty() {
        return Decision::reject(conflicts, resolution.warnings.clone()).with_signals(
            signals,
            &resolution,
            &pod,
        );
    }
    let merge = match kind {
        Kind::Pod => RuntimeClassMerge::ByPolicy,
        _ => RuntimeClassMerge::ByPlugin,
    };
    let plan = plan(&pod, &resolution, settings, merge, facts);
    let mut warnings = resolution.warnings.clone();
    warnings.extend(plan.warnings);
    let decision = if plan.violations.is_empty() {
        planned(plan.ops, warnings)
    } else {
        Decision::reject(plan.violations, warnings)
    };
    check_nodes(decision, object, kind, &resolution, settings, facts).with_signals(
        signals,
        &resolution,
        &pod,
    )
}

fn read_pod(object: &Value, kind: Kind) -> Result<PodView<'_>, Vec<Diagnostic>> {
    let (spec, path) = locate_pod_spec(object, kind).map_err(|d| vec![d])?;
    PodView::read(spec, path)
}

/// A RuntimeClass the pod names that neither the settings nor the cluster
/// has: the API server would refuse the pods (RuntimeClass admission).
fn missing_runtime_class(
    pod: &PodView<'_>,
    settings: &Settings,
    facts: &Facts,
) -> Option<Diagnostic> {
    let name = pod.runtime_class_name?;
    if settings.runtime_class(name).is_some() {
        return None;
    }
    matches!(facts.runtime_classes.get(name), Some(RuntimeClassFacts::Missing)).then(|| {
        Diagnostic::new(
            Code::RuntimeClassMissing,
            pod.field("runtimeClassName").display(),
            format!("RuntimeClass {name:?} does not exist in the cluster, so the API server refuses every pod of this object"),
            "create the RuntimeClass, or correct or remove runtimeClassName",
        )
    })
}

/// With `nodeInventory`, an accepted pod no listed node can run is
/// rejected or warned about, naming what the nodes lack.
fn check_nodes(
    decision: Decision,
    object: &Value,
    kind: Kind,
    resolution: &Resolution,
    settings: &Settings,
    facts: &Facts,
) -> Decision {
    if facts.inventory(settings).is_none() {
        return decision;
    }
    if !decision.accepted || !settings.node_inventory.reads_nodes() {
        return decision;
    }
    let scope = if settings.node_inventory.explicit() {
        Check::Scheduling
    } else {
        Check::Platform
    };
    let Some(problem) = no_node_after(
        object,
        kind,
        &decision.patch,
        resolution,
        settings,
        facts,
        scope,
    ) else {
        return decision;
    };
    match settings.node_inventory {
        NodeInventory::Reject => Decision::reject(vec![problem], decision.warnings),
        _ => {
            let mut decision = decision;
            decision.warnings.push(problem);
            decision
        }
    }
}
