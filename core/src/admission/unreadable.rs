//! The one warning (or, with `lookupFailure: reject`, the violation) for
//! published facts the host refused or failed to give (`Facts::unreadable`):
//! what it cost the pod, why, and the fix. Only the policy reads facts
//! through a host; the playground leaves this out (feature `unreadable`).

use crate::admission::context::{node_check_asked, LookupNotes};
use crate::admission::decision::MAX_WARNING_CHARS;
use crate::admission::needs::images_to_look_up;
use crate::input::facts::{Facts, NodeFacts, Unreadable};
use crate::input::pod::PodView;
use crate::input::settings::{ImageFactsSource, LookupFailure, Settings};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::text::cut;

/// Adds to `notes` the one note for published facts the host could not give.
pub fn add(notes: &mut LookupNotes, pod: &PodView<'_>, settings: &Settings, facts: &Facts) {
    if let Some((note, rejects)) = note(pod, settings, facts) {
        if rejects {
            notes.violation = Some(note);
        } else {
            notes.warnings.push(note);
        }
    }
}

/// The one note for published facts the host could not give: what it
/// cost the pod (its images' platforms, the node check), why, and the fix;
/// with whether it rejects (`lookupFailure: reject` and images lost).
/// `None` when they were read, or the pod lost nothing it needed.
fn note(pod: &PodView<'_>, settings: &Settings, facts: &Facts) -> Option<(Diagnostic, bool)> {
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
