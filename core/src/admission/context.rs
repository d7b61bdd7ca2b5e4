//! Warnings about cluster facts a request needed but that could not be
//! read (the completion itself is `placement::cluster_settings`).

use crate::admission::decision::MAX_WARNING_CHARS;
use crate::admission::needs::images_to_look_up;
use crate::input::facts::{Facts, NodeFacts, RuntimeClassFacts, Unreadable};
use crate::input::pod::PodView;
use crate::input::settings::{ImageFactsSource, LookupFailure, Settings};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::text::{cut, short};

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
    // The host's failure is said once, below, for the images and nodes alike.
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
    if let Some((note, rejects)) = unreadable_note(pod, settings, facts) {
        if rejects {
            notes.violation = Some(note);
        } else {
            notes.warnings.push(note);
        }
    }
    notes
}

/// Whether the settings ask for the node facts so that their absence is
/// worth a warning (not under `nodeInventory: auto`).
fn node_check_asked(settings: &Settings) -> bool {
    settings.node_inventory.explicit() || settings.taints_from_nodes()
}

/// The one note for published facts the host could not give: what it
/// cost the pod (its images' platforms, the node check), why, and the fix;
/// with whether it rejects (`lookupFailure: reject` and images lost).
/// `None` when they were read, or the pod lost nothing it needed.
fn unreadable_note(
    pod: &PodView<'_>,
    settings: &Settings,
    facts: &Facts,
) -> Option<(Diagnostic, bool)> {
    let why = facts.unreadable.as_ref()?;
    let images = lost_images(pod, settings, facts);
    let nodes =
        node_check_asked(settings) && matches!(facts.nodes, Some(NodeFacts::LookupFailed(_)));
    let (path, subject) = match (images.first(), nodes) {
        (Some((path, _)), true) => (path.clone(), "the image and node facts"),
        (Some((path, _)), false) => (path.clone(), "the image facts"),
        (None, true) => (pod.path.display().to_string(), "the node facts"),
        (None, false) => return None,
    };
    let namespace = &settings.image_facts_namespace;
    // The host's own words, when they say why; cut to fit like the image.
    let mut error = None;
    let (cause, mut fix) = match why {
        Unreadable::ConfigMapsNotGranted => (
            "policy-server denies v1/ConfigMap",
            "add v1/ConfigMap to the policy's contextAwareResources".to_string(),
        ),
        Unreadable::CapabilityNotGranted => (
            "policy-server denies kubernetes/list_resources_by_namespace",
            "add it to the policy's hostCapabilities".to_string(),
        ),
        Unreadable::Failed(words) => {
            // One line: a warning is an HTTP header.
            error = Some(words.split_whitespace().collect::<Vec<_>>().join(" "));
            (
                "",
                format!("check policy-server's access to ConfigMaps in {namespace}"),
            )
        }
    };
    let rejects = !images.is_empty() && settings.lookup_failure == LookupFailure::Reject;
    if rejects {
        fix.push_str(", or set lookupFailure: warn");
    }
    let mut image = images.first().map(|(_, image)| image.clone());
    let more = images.len().saturating_sub(1);
    let note = |error: Option<&str>, image: Option<&str>| {
        let lost = match image {
            Some(image) if more > 0 => {
                format!("the OS of {image} (and {more} more) is read from the reference")
            }
            Some(image) => format!("the OS of {image} is read from the reference"),
            None => "no node check was made and no fromNodes taint read".to_string(),
        };
        let message = format!(
            "{subject} cannot be read ({}), so {lost}",
            error.unwrap_or(cause)
        );
        Diagnostic::new(Code::LookupFailed, &path, message, &fix)
    };
    // A warning must keep its fix within the API server's limit (a line of
    // the limit's length is already cut, `Decision::warning_lines`): the
    // host's words give way first, then the image. A rejection's message
    // has no limit.
    let over = |d: &Diagnostic| {
        d.to_string()
            .chars()
            .count()
            .saturating_sub(MAX_WARNING_CHARS - 1)
    };
    for floor in SHRINK_FLOORS.iter().filter(|_| !rejects) {
        let left = over(&note(error.as_deref(), image.as_deref()));
        let left = shrink(&mut error, left, *floor);
        shrink(&mut image, left, *floor);
    }
    Some((note(error.as_deref(), image.as_deref()), rejects))
}

/// The fewest characters a shortened text keeps: enough to recognise it,
/// then, when the line is still too long, enough to tell which it was.
const SHRINK_FLOORS: [usize; 2] = [24, 8];

/// Shortens `text` by up to `over` characters, keeping at least `floor`;
/// how many characters remain to be saved.
fn shrink(text: &mut Option<String>, over: usize, floor: usize) -> usize {
    let Some(whole) = text.as_deref() else {
        return over;
    };
    let chars = whole.chars().count();
    if over == 0 || chars <= floor + 1 {
        return over;
    }
    // The cut text ends with `…`: one character more than kept.
    let keep = chars.saturating_sub(over + 1).max(floor);
    let saved = chars.saturating_sub(keep + 1);
    *text = Some(cut(whole, keep));
    over.saturating_sub(saved)
}

/// The images the pod wanted from the published facts that the facts do
/// not hold, as (field path, reference as written), once each, in pod order.
fn lost_images(pod: &PodView<'_>, settings: &Settings, facts: &Facts) -> Vec<(String, String)> {
    if settings.image_facts != ImageFactsSource::Cluster {
        return Vec::new();
    }
    let (wanted, _) = images_to_look_up(pod, settings);
    wanted
        .into_iter()
        .filter(|image| !facts.images.contains_key(image))
        .filter_map(|image| {
            let container = pod.containers.iter().find(|c| c.image == Some(&image))?;
            Some((container.path.field_text("image"), image))
        })
        .collect()
}
