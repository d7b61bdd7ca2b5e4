//! Which CPU architectures a pod can run on: what its own fields select
//! (`kubernetes.io/arch` in the nodeSelector or the required node
//! affinity, as the scheduler's NodeAffinity plugin reads them) and what
//! each container's image is built for (the OCI image index's
//! `platform.architecture`, or a Docker Hub architecture namespace).

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorTerm};

use crate::input::facts::{Facts, ImageFacts};
use crate::input::pod::PodView;
use crate::scheduling::requirement::{Operator, Requirement};
use crate::vocab::arch::{hub_namespace_arch, ArchFilter, ArchSet};
use crate::vocab::constraint::Os;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::push_key;
use crate::vocab::labels::{ARCH_LABEL, BETA_ARCH_LABEL};

/// What one container's image is built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageArchs {
    /// The image field's path, e.g. `spec.containers[0].image`.
    pub path: String,
    /// The reference as written.
    pub image: String,
    /// The architectures it runs on.
    pub archs: ArchSet,
}

/// A pod's architectures: what it selects and what its images need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Architectures {
    /// The architectures the pod's own fields let it land on.
    pub selected: ArchFilter,
    /// The field that selects them, for messages; `None` when any will do.
    pub selected_at: Option<String>,
    /// The containers whose image's architectures are known.
    pub images: Vec<ImageArchs>,
}

impl Architectures {
    /// Reads the pod's architecture fields and its images' architectures,
    /// for a pod of `os` (`None`: entries of either OS count).
    pub fn read(pod: &PodView<'_>, os: Option<Os>, facts: &Facts) -> Architectures {
        let (selected, selected_at) = selected(pod);
        let images = pod
            .containers
            .iter()
            .filter_map(|c| {
                let image = c.image?;
                let archs = image_archs(image, os, facts)?;
                Some(ImageArchs {
                    path: c.path.field_text("image"),
                    image: image.to_string(),
                    archs,
                })
            })
            .collect();
        Architectures {
            selected,
            selected_at,
            images,
        }
    }

    /// The architectures every container whose image is known runs on;
    /// `None` when no image's are known.
    pub fn runnable(&self) -> Option<ArchSet> {
        let mut images = self.images.iter();
        let first = images.next()?.archs.clone();
        Some(images.fold(first, |acc, i| acc.intersection(&i.archs)))
    }

    /// Whether the architecture is still open: the pod selects more than one.
    pub fn open(&self) -> bool {
        !matches!(&self.selected, ArchFilter::Only(set) if set.len() <= 1)
    }

    /// Why no node can run the pod: two images built for different
    /// architectures, or a selected architecture no image is built for.
    pub fn conflict(&self) -> Option<Diagnostic> {
        let mut common: Option<ArchSet> = None;
        for image in &self.images {
            let narrowed: ArchSet = match &common {
                None => image.archs.clone(),
                Some(c) => c.intersection(&image.archs),
            };
            if narrowed.is_empty() {
                return Some(containers_disagree(image, common.as_ref()));
            }
            common = Some(narrowed);
        }
        let runnable = common?;
        let allowed = runnable.iter().any(|a| self.selected.allows(a));
        let at = self.selected_at.as_ref().filter(|_| !allowed)?;
        let image = self.images.first()?;
        Some(Diagnostic::new(
            Code::ArchConflict,
            at,
            format!(
                "selects {}, but {} = {:?} runs on {} only, so the pod can never run",
                describe(&self.selected),
                image.path,
                image.image,
                join(&runnable)
            ),
            "select an architecture the images are built for, or use images built for it",
        ))
    }
}

fn containers_disagree(image: &ImageArchs, earlier: Option<&ArchSet>) -> Diagnostic {
    let earlier = earlier.map(join).unwrap_or_default();
    Diagnostic::new(
        Code::ArchConflict,
        &image.path,
        format!(
            "{:?} runs on {} only, but the pod's other images run on {earlier}: no node runs them all",
            image.image,
            join(&image.archs)
        ),
        "use images built for one common architecture",
    )
}

/// The architectures of an image: from its registry's platforms for the
/// pod's OS, else from a Docker Hub architecture namespace.
fn image_archs(image: &str, os: Option<Os>, facts: &Facts) -> Option<ArchSet> {
    if let Some(ImageFacts::Platforms(platforms)) = facts.images.get(image) {
        let archs: ArchSet = platforms
            .iter()
            .filter(|p| match os {
                Some(os) => p.os == os.label(),
                None => p.os == "linux" || p.os == "windows",
            })
            .filter_map(|p| p.architecture.clone())
            .collect();
        if !archs.is_empty() {
            return Some(archs);
        }
    }
    hub_namespace_arch(image).map(|arch| [arch.to_string()].into_iter().collect())
}

/// The pod's own architecture filter and the first field that sets it.
fn selected(pod: &PodView<'_>) -> (ArchFilter, Option<String>) {
    let mut filter = ArchFilter::Any;
    let mut at = None;
    for key in [ARCH_LABEL, BETA_ARCH_LABEL] {
        if let Some(value) = pod.node_selector.get(key) {
            filter = filter.intersect(&ArchFilter::Only([value.clone()].into_iter().collect()));
            let mut path = pod.path.field_text("nodeSelector");
            push_key(&mut path, key);
            at.get_or_insert(path);
        }
    }
    if let Some(required) = &pod.required_affinity {
        let by_terms = affinity_filter(required);
        if by_terms != ArchFilter::Any {
            filter = filter.intersect(&by_terms);
            at.get_or_insert(pod.path.field_text(
                "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            ));
        }
    }
    (filter, at)
}

/// Terms ORed, expressions ANDed; a term without an architecture
/// expression allows any, one the scheduler cannot parse none.
fn affinity_filter(required: &NodeSelector) -> ArchFilter {
    required
        .node_selector_terms
        .iter()
        .map(term_filter)
        .reduce(|a, b| a.union(&b))
        .unwrap_or_else(|| ArchFilter::Only(ArchSet::new()))
}

fn term_filter(term: &NodeSelectorTerm) -> ArchFilter {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    if expressions.is_empty() && term.match_fields.as_deref().unwrap_or_default().is_empty() {
        return ArchFilter::Only(ArchSet::new());
    }
    expressions
        .iter()
        .map(Requirement::parse)
        .filter(|r| {
            r.key == ARCH_LABEL || r.key == BETA_ARCH_LABEL || r.operator == Operator::Invalid
        })
        .map(|r| match r.operator {
            Operator::In(values) => ArchFilter::Only(values.iter().cloned().collect()),
            Operator::NotIn(values) => ArchFilter::Except(values.iter().cloned().collect()),
            Operator::Exists => ArchFilter::Any,
            // Every node carries an architecture, and it is never an integer.
            _ => ArchFilter::Only(ArchSet::new()),
        })
        .fold(ArchFilter::Any, |acc, f| acc.intersect(&f))
}

/// `amd64, arm64`.
pub fn join(archs: &ArchSet) -> String {
    archs
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(filter: &ArchFilter) -> String {
    match filter {
        ArchFilter::Any => "any architecture".to_string(),
        ArchFilter::Only(set) if set.is_empty() => "no architecture".to_string(),
        ArchFilter::Only(set) => format!("kubernetes.io/arch {}", join(set)),
        ArchFilter::Except(set) => format!("any architecture but {}", join(set)),
    }
}
