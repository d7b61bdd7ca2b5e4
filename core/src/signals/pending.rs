//! Images the published facts do not hold yet. What to say depends on the
//! facts syncer: while it reports, nothing, since it publishes them within
//! seconds; otherwise one warning for the request that names the syncer,
//! not one per image.

use crate::input::facts::SyncerState;
use crate::input::settings::Settings;
use crate::vocab::diagnostics::{Code, Diagnostic};

/// The warning for `images` ((path, image) pairs, in pod order) the
/// published facts lack, read from their references; `None` when there
/// are none or the syncer reports.
pub(crate) fn unpublished_warning(
    images: &[(String, String)],
    syncer: Option<SyncerState>,
    settings: &Settings,
) -> Option<Diagnostic> {
    let (path, image) = images.first()?;
    let which = match images.len() {
        1 => image.clone(),
        n => format!("{image} (and {} more)", n - 1),
    };
    let namespace = &settings.image_facts_namespace;
    let (message, fix) = match syncer {
        Some(SyncerState::Alive { .. }) => return None,
        Some(SyncerState::Stale { age }) => (
            format!("the facts syncer last reported {} ago, so {which} is not in the image facts; its OS is read from the reference", ago(age)),
            format!("check the os-placement-facts-sync Deployment in namespace {namespace}"),
        ),
        Some(SyncerState::Rendered) => (
            format!("{which} is not in the image facts, which no syncer keeps; its OS is read from the reference"),
            "render them again (os-placement facts render), or run os-placement facts sync".to_string(),
        ),
        Some(SyncerState::Unpublished) | None => (
            format!("no facts syncer publishes image facts in namespace {namespace}, so the OS of {which} is read from the reference"),
            "run os-placement facts sync (deploy/facts-sync.yaml), or set imageFacts: registry".to_string(),
        ),
    };
    Some(Diagnostic::new(Code::LookupFailed, path, message, fix))
}

/// Seconds in words: `95 s`, `12 min`, `3 h`.
pub(crate) fn ago(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7199 => format!("{} min", seconds / 60),
        _ => format!("{} h", seconds / 3600),
    }
}
