//! Completes the settings with facts from the cluster: RuntimeClasses the
//! settings do not declare, and the Windows taint read from the nodes.

use std::borrow::Cow;

use crate::input::facts::{Facts, NodeFacts, RuntimeClassFacts};
use crate::input::pod::PodView;
use crate::input::settings::{RuntimeClass, Scheduling, Settings};
use crate::scheduling::taints::windows_taint;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::text::short;

/// The settings the rules use for this request. The settings' own
/// RuntimeClasses win, as they did before the cluster was read.
pub fn complete<'s>(settings: &'s Settings, facts: &Facts) -> Cow<'s, Settings> {
    let adds_class = facts.runtime_classes.iter().any(|(name, found)| {
        matches!(found, RuntimeClassFacts::Found(_)) && settings.runtime_class(name).is_none()
    });
    if !adds_class && !settings.windows_taint.reads_nodes() {
        // Image platforms and a node list alone change no setting.
        return Cow::Borrowed(settings);
    }
    let mut completed = settings.clone();
    for (name, found) in &facts.runtime_classes {
        if let RuntimeClassFacts::Found(rc) = found {
            if settings.runtime_class(name).is_none() {
                completed.runtime_classes.push(RuntimeClass {
                    name: name.clone(),
                    scheduling: Scheduling {
                        node_selector: rc.scheduling.node_selector.clone(),
                        tolerations: rc.scheduling.tolerations.clone(),
                    },
                    handler: Some(rc.handler.clone()),
                    isolation: rc.isolation,
                });
            }
        }
    }
    if settings.windows_taint.reads_nodes() {
        completed.windows_taint = facts.listed_nodes().and_then(windows_taint).into();
    }
    Cow::Owned(completed)
}

/// Warnings about cluster facts the pod needed but that could not be read.
pub fn lookup_warnings(pod: &PodView<'_>, settings: &Settings, facts: &Facts) -> Vec<Diagnostic> {
    let mut notes = Vec::new();
    let failed_class =
        pod.runtime_class_name
            .and_then(|name| match facts.runtime_classes.get(name) {
                Some(RuntimeClassFacts::LookupFailed(error))
                    if settings.runtime_class(name).is_none() =>
                {
                    Some((name, error))
                }
                _ => None,
            });
    if let Some((name, error)) = failed_class {
        notes.push(Diagnostic::new(
            Code::LookupFailed,
            pod.field("runtimeClassName").display(),
            format!("RuntimeClass {name:?} could not be read from the cluster ({}), so its scheduling is not taken into account", short(error)),
            "declare it in the settings' runtimeClasses, or list RuntimeClass in the policy's contextAwareResources",
        ));
    }
    if let Some(NodeFacts::LookupFailed(error)) = &facts.nodes {
        notes.push(Diagnostic::new(
            Code::LookupFailed,
            pod.path.display(),
            format!("the cluster's Nodes could not be read from the cluster ({}), so no node check was made and windowsTaint fromNodes means no taint", short(error)),
            "list Node in the policy's contextAwareResources",
        ));
    }
    notes
}
