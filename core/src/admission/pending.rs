//! A controller's new Pod whose placement depends on an image the facts
//! syncer has not published yet. The syncer learns the image from the
//! controller (it watches ReplicaSets, Jobs, DaemonSets, StatefulSets and
//! ReplicationControllers) and publishes it within seconds; admission never
//! waits on a registry. So such a Pod is refused with a message its
//! controller retries on (the ReplicaSet, Job, DaemonSet and StatefulSet
//! controllers requeue a failed create with exponential backoff), and is
//! placed by the image's platforms once they are published. Bounds: only
//! while the syncer reports (a stopped syncer never blocks a Pod), only for
//! the owner kinds the syncer watches, only for images whose platforms
//! decide the OS, build or architecture.

use serde_json::Value;

use crate::admission::needs::images_to_look_up;
use crate::input::facts::{Facts, ImageFacts, SyncerState};
use crate::input::pod::PodView;
use crate::input::review::controller_of;
use crate::input::settings::{ImageLookup, Settings};
use crate::signals::pending::ago;
use crate::vocab::diagnostics::{Code, Diagnostic};

/// The controllers whose pod templates the syncer reads: (apiVersion, kind).
const WATCHED_OWNERS: &[(&str, &str)] = &[
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("v1", "ReplicationController"),
];

/// Why `pod` (of a Pod CREATE) is refused until its images are published;
/// `None` when it is placed now.
pub(crate) fn wait_for_facts(
    object: &Value,
    pod: &PodView<'_>,
    settings: &Settings,
    facts: &Facts,
) -> Option<Diagnostic> {
    let Some(SyncerState::Alive { age }) = facts.syncer else {
        return None;
    };
    if !settings.wait_for_image_facts {
        return None;
    }
    let unpublished =
        |image: &&str| matches!(facts.images.get(*image), Some(ImageFacts::Unpublished));
    if !pod
        .containers
        .iter()
        .filter_map(|c| c.image)
        .any(|i| unpublished(&i))
    {
        return None;
    }
    let owner = watched_owner(object)?;
    // The images whose platforms decide the placement, as imageLookup:
    // undecided would ask for them.
    let deciding = Settings {
        image_lookup: ImageLookup::Undecided,
        ..settings.clone()
    };
    let wanted = images_to_look_up(pod, &deciding).0;
    let container = pod.containers.iter().find(|c| {
        c.image
            .is_some_and(|i| unpublished(&i) && wanted.iter().any(|w| w == i))
    })?;
    let image = container.image.unwrap_or_default();
    Some(Diagnostic::new(
        Code::FactsPending,
        container.path.field_text("image"),
        format!(
            "{image} decides where the pod runs and is not in the image facts yet; the facts syncer (last report {} ago) publishes it within seconds, and {owner} creates the pod again",
            ago(age)
        ),
        "nothing to do; if it persists, check os-placement facts sync, or set waitForImageFacts: false",
    ))
}

/// The Pod's controller, when it is one whose template the syncer reads.
fn watched_owner(object: &Value) -> Option<String> {
    let c = controller_of(object)?;
    WATCHED_OWNERS
        .iter()
        .any(|(api, kind)| *api == c.api_version && *kind == c.kind)
        .then(|| format!("{} {}", c.kind, c.name))
}
