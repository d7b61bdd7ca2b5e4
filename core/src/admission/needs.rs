//! What an admission request needs from the host: the images, the
//! RuntimeClasses and the node list the rules would read.

use serde_json::Value;

use crate::input::facts::{Facts, ImageSource, Needs};
use crate::input::pod::PodView;
use crate::input::review::{controller_of, locate_pod_spec, Operation, Origin, Review};
use crate::input::settings::{ImageFactsSource, ImageLookup, Settings};
use crate::scheduling::requirement::NODE_NAME_FIELD;
use crate::signals::architecture::Architectures;
use crate::signals::resolve::{resolve_with, Resolution};
use crate::vocab::kinds::Kind;
use crate::vocab::labels::HOSTNAME_LABEL;

/// The pod spec of a review's object as read while working out the lookups,
/// kept so the decision does not read and resolve it again.
pub(crate) struct ReadPod<'a> {
    pub pod: PodView<'a>,
    /// The resolution without facts, when the lookups needed it.
    pub resolution: Option<Resolution>,
}

/// What to look up for a raw AdmissionRequest.
pub fn needs_request(request: &Value, settings: &Settings) -> Needs {
    match Review::from_admission_request(request) {
        Ok(review) => needs(&review, settings),
        Err(_) => Needs::default(),
    }
}

/// What to look up for a review under the settings: nothing for requests
/// the rules do not judge. `imageLookup: undecided` asks only for images
/// whose reference decides nothing, and only while the OS or the build is
/// open; `always` asks for every image.
pub fn needs(review: &Review<'_>, settings: &Settings) -> Needs {
    needs_reading(review, settings).0
}

/// As [`needs`], keeping the pod as read (and its resolution without facts,
/// when working out the lookups took one) so the decision need not read it again.
pub(crate) fn needs_reading<'a>(
    review: &Review<'a>,
    settings: &Settings,
) -> (Needs, Option<ReadPod<'a>>) {
    let mut needs = Needs::default();
    if matches!(review.operation, Operation::Delete | Operation::Connect) {
        return (needs, None);
    }
    let Some(kind) = Kind::parse(review.kind) else {
        return (needs, None);
    };
    let Ok((spec, path)) = locate_pod_spec(review.object, kind) else {
        return (needs, None);
    };
    let Ok(pod) = PodView::read(spec, path) else {
        return (needs, None);
    };
    if let Some(name) = pod.runtime_class_name {
        if settings.runtime_class(name).is_none() {
            needs.runtime_classes.push(name.to_string());
        }
    }
    let (images, resolution) = images_to_look_up(&pod, settings);
    needs.node_labels = settings.node_inventory.explicit() || settings.taints_from_nodes();
    needs.nodes = (settings.node_inventory.reads_nodes()
        && auto_check_matters(review, kind, settings, resolution.as_ref()))
        || needs.node_labels;
    if needs.node_labels && settings.node_inventory.explicit() {
        needs.node_names = selected_names(&pod);
    }
    // An audited Pod bound to a node is judged on that node.
    if let (Origin::Audit, Some(node)) = (review.origin, pod.node_name) {
        needs.nodes = true;
        needs.node_names = vec![node.to_string()];
    }
    needs.images = images;
    needs.image_source = image_source(settings);
    needs.facts_namespace = settings.image_facts_namespace.clone();
    (needs, Some(ReadPod { pod, resolution }))
}

/// Whether the node check can tell anyone anything. The full check and
/// `pinArchitecture` (whose pin depends on the nodes' architectures) always
/// read the nodes; `nodeInventory: auto` only warns, and reads none for a
/// Pod
/// - that a controller creates: the warning would go back to the
///   controller, where nobody reads it, and the workload's template was
///   checked against the same nodes;
/// - whose own selection (nodeSelector, affinity, RuntimeClass) fixes its
///   OS and, for Windows, its build: it can only land on the nodes its
///   author chose, and the scheduler's events say why it waits.
fn auto_check_matters(
    review: &Review<'_>,
    kind: Kind,
    settings: &Settings,
    resolution: Option<&Resolution>,
) -> bool {
    if settings.node_inventory.explicit()
        || settings.pin_architecture
        || kind != Kind::Pod
        || review.origin == Origin::Audit
    {
        return true;
    }
    controller_of(review.object).is_none() && !resolution.is_some_and(selection_fixed)
}

/// Whether the pod's own node selection fixes its OS and, for Windows, its
/// build (or the pod is rejected whatever the nodes are).
fn selection_fixed(resolution: &Resolution) -> bool {
    if !resolution.conflicts.is_empty() {
        return true;
    }
    let node = resolution.node_placement();
    match node.os() {
        Some(crate::vocab::constraint::Os::Linux) => true,
        Some(crate::vocab::constraint::Os::Windows) => {
            node.windows.as_ref().is_some_and(|b| b.single().is_some())
        }
        None => false,
    }
}

pub(crate) fn images_to_look_up(
    pod: &PodView<'_>,
    settings: &Settings,
) -> (Vec<String>, Option<Resolution>) {
    let all = pod.containers.iter().filter_map(|c| c.image);
    let mut resolution = None;
    let wanted: Vec<&str> = match settings.image_lookup {
        ImageLookup::Off => Vec::new(),
        ImageLookup::Always => all.collect(),
        // Architecture pinning needs every image while the architecture is open.
        ImageLookup::Undecided if settings.pin_architecture && arch_open(pod) => all.collect(),
        ImageLookup::Undecided => {
            let resolved = resolve_with(pod, settings, &Facts::default());
            let wanted = if placement_fixed(&resolved, settings) {
                Vec::new()
            } else {
                // The resolution classified every image already.
                resolved
                    .undecided_images
                    .iter()
                    .filter_map(|&i| pod.containers.get(i).and_then(|c| c.image))
                    .collect()
            };
            resolution = Some(resolved);
            wanted
        }
    };
    let mut images: Vec<String> = Vec::new();
    for image in wanted {
        if !images.iter().any(|i| i == image) {
            images.push(image.to_string());
        }
    }
    (images, resolution)
}

/// The most node names one request looks up: a pod naming more leaves the
/// others unknown, so they can only keep the check from finding a gap.
const MAX_NAMES: usize = 16;

/// The node names and hostnames the pod's nodeSelector and required node
/// affinity name (`kubernetes.io/hostname`, `matchFields` on
/// `metadata.name`), in order, once each.
fn selected_names(pod: &PodView<'_>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |value: &String| {
        if names.len() < MAX_NAMES && !names.contains(value) {
            names.push(value.clone());
        }
    };
    if let Some(hostname) = pod.node_selector.get(HOSTNAME_LABEL) {
        add(hostname);
    }
    let terms = pod
        .required_affinity
        .iter()
        .flat_map(|affinity| &affinity.node_selector_terms);
    for term in terms {
        let expressions = term.match_expressions.iter().flatten();
        let fields = term.match_fields.iter().flatten();
        for requirement in expressions
            .filter(|e| e.key == HOSTNAME_LABEL)
            .chain(fields.filter(|f| f.key == NODE_NAME_FIELD))
        {
            requirement.values.iter().flatten().for_each(&mut add);
        }
    }
    names
}

/// Where the images' platforms are read, as `imageFacts` says.
fn image_source(settings: &Settings) -> ImageSource {
    match settings.image_facts {
        ImageFactsSource::Registry => ImageSource::Registry,
        ImageFactsSource::Cluster => ImageSource::Cluster {
            namespace: settings.image_facts_namespace.clone(),
        },
    }
}

/// Whether the pod's own fields leave more than one architecture open.
fn arch_open(pod: &PodView<'_>) -> bool {
    Architectures::read(pod, None, &Facts::default()).open()
}

/// Whether the pod's own fields already fix the OS and, for Windows, the
/// build (or need none): then no image answer can change the placement.
fn placement_fixed(resolution: &Resolution, settings: &Settings) -> bool {
    selection_fixed(resolution)
        || (resolution.node_placement().os() == Some(crate::vocab::constraint::Os::Windows)
            && (resolution.host_process || !settings.pin_windows_build))
}
