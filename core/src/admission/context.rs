//! Warnings about cluster facts a request needed but that could not be
//! read (the completion itself is `placement::cluster_settings`).

use crate::input::facts::{Facts, NodeFacts, RuntimeClassFacts};
use crate::input::pod::PodView;
use crate::input::settings::Settings;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::text::short;

/// What the pod lost of the cluster facts it needed.
#[derive(Debug, Default)]
pub struct LookupNotes {
    /// Findings that do not block admission.
    pub warnings: Vec<Diagnostic>,
    /// Under `lookupFailure: reject`: images whose published facts the
    /// host could not give.
    pub violation: Option<Diagnostic>,
}

/// Warnings (and, with `lookupFailure: reject`, the violation) about cluster
/// facts the pod needed but that could not be read.
pub fn lookup_notes(pod: &PodView<'_>, settings: &Settings, facts: &Facts) -> LookupNotes {
    let mut notes = LookupNotes::default();
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
        notes.warnings.push(Diagnostic::new(
            Code::LookupFailed,
            pod.field("runtimeClassName").display(),
            format!("RuntimeClass {name:?} could not be read from the cluster ({}), so its scheduling is not taken into account", short(error)),
            "declare it in the settings' runtimeClasses, or list RuntimeClass in the policy's contextAwareResources",
        ));
    }
    // The host's failure is said once for the images and nodes alike
    // (`admission::unreadable`).
    let node_failure = facts
        .nodes
        .as_ref()
        .filter(|_| node_check_asked(settings) && facts.unreadable.is_none());
    if let Some(NodeFacts::LookupFailed(error)) = node_failure {
        notes.warnings.push(Diagnostic::new(
            Code::LookupFailed,
            pod.path.display(),
            format!("no node check was made and no fromNodes taint read: the node facts could not be read ({})", short(error)),
            "run the facts syncer (deploy/facts-sync.yaml), or apply the output of os-placement facts render",
        ));
    }
    notes
}

/// Whether the settings ask for the node facts so that their absence is
/// worth a warning (not under `nodeInventory: auto`).
pub(crate) fn node_check_asked(settings: &Settings) -> bool {
    settings.node_inventory.explicit() || settings.taints_from_nodes()
}
