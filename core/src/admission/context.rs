//! Warnings about cluster facts a request needed but that could not be
//! read (the completion itself is `placement::cluster_settings`).

use crate::input::facts::{Facts, NodeFacts, RuntimeClassFacts};
use crate::input::pod::PodView;
use crate::input::settings::Settings;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::text::short;

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
    let asked = settings.node_inventory.explicit() || settings.taints_from_nodes();
    if let Some(NodeFacts::LookupFailed(error)) = facts.nodes.as_ref().filter(|_| asked) {
        notes.push(Diagnostic::new(
            Code::LookupFailed,
            pod.path.display(),
            format!("no node check was made and no fromNodes taint read: the node facts could not be read ({})", short(error)),
            "run the facts syncer (deploy/facts-sync.yaml), or apply the output of os-placement facts render",
        ));
    }
    notes
}
