//! Resolution: every signal about the OS and build a pod needs, with its
//! field path, and the conflicts between them.

use crate::input::facts::{Facts, ImageFacts, Platform};
use crate::input::pod::{host_process, PodView};
use crate::input::settings::{ImageFactsSource, LookupFailure, Settings};
use crate::scheduling::runtime_class::selector_conflicts;
use crate::signals::affinity;
use crate::signals::image::{classify, maybe_windows_warning, ImageOs};
use crate::signals::pending::unpublished_warning;
use crate::signals::platforms::{hosts_of, platforms_placement};
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{Builds, Os, Placement};
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::field_path::push_key;
use crate::vocab::labels::{
    is_placement_label, nodes_with, selector_placement, why_no_node_carries, BETA_OS_LABEL,
    OS_LABEL,
};
use crate::vocab::text::quoted;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Which kind of field a signal comes from.
pub enum Source {
    /// `spec.os.name`.
    PodOs,
    /// A `nodeSelector` entry.
    NodeSelector,
    /// `beta.kubernetes.io/os`: read for conflicts, but it does not count
    /// as selecting the OS (nodes may stop carrying it).
    DeprecatedOsSelector,
    /// Required node affinity.
    Affinity,
    /// The scheduling of the pod's RuntimeClass.
    RuntimeClass,
    /// `securityContext.windowsOptions`, of the pod or a container.
    WindowsOptions,
    /// A container image, by its reference or its registry's platforms.
    Image,
}

impl Source {
    /// Signals that restrict nodes, as opposed to facts about the containers.
    pub fn selects_nodes(self) -> bool {
        matches!(
            self,
            Source::NodeSelector | Source::Affinity | Source::RuntimeClass
        )
    }
}

/// One field that tells which nodes the pod needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    /// The kind of field.
    pub source: Source,
    /// Field path, relative to the object.
    pub path: String,
    /// The value as written, for messages.
    pub value: String,
    /// Why the value means what it does, when not obvious.
    pub reason: Option<String>,
    /// The nodes the field admits.
    pub placement: Placement,
    /// The container it comes from, as an index into `PodView::containers`.
    pub container: Option<usize>,
}

impl Signal {
    /// `path` is the field's message form: a signal is never patched.
    fn new(source: Source, path: String, value: String, placement: Placement) -> Signal {
        Signal {
            source,
            path,
            value,
            reason: None,
            placement,
            container: None,
        }
    }

    fn because(mut self, reason: Option<String>) -> Signal {
        self.reason = reason;
        self
    }

    fn of_container(mut self, index: Option<usize>) -> Signal {
        self.container = index;
        self
    }

    fn describe(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{} ({reason})", self.value),
            None => self.value.clone(),
        }
    }
}

#[derive(Debug, Clone)]
/// Every signal of a pod, where they let it land, and what clashes.
pub struct Resolution {
    /// The signals, in the order read.
    pub signals: Vec<Signal>,
    /// Where the pod may land given all signals.
    pub placement: Placement,
    /// Whether the pod runs HostProcess containers.
    pub host_process: bool,
    /// Windows images whose reference names no build: (path, image).
    pub images_without_build: Vec<(String, String)>,
    /// Violations: signals no node satisfies, alone or together.
    pub conflicts: Vec<Diagnostic>,
    /// Findings that do not block admission.
    pub warnings: Vec<Diagnostic>,
    /// An image only may be a Windows image and nothing else tells the OS:
    /// `defaultOS` does not apply, the OS is left open (with a warning).
    pub os_unsure: bool,
    /// Image builds came from facts or Hyper-V isolation: the build
    /// placement follows the set, not the single-build pin.
    pub build_set: bool,
    /// Containers whose image reference leaves the OS or the build open
    /// (indices into `PodView::containers`): what a registry lookup could tell.
    pub undecided_images: Vec<usize>,
    /// Containers whose image the published facts do not hold yet.
    pub unpublished_images: Vec<usize>,
    /// [`Resolution::node_placement`], worked out once.
    node_placement: Placement,
    /// [`Resolution::image_builds`], worked out once.
    image_builds: Builds,
}

fn placement_of(signals: &[Signal], keep: impl Fn(&Signal) -> bool) -> Placement {
    signals
        .iter()
        .filter(|s| keep(s))
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement))
}

impl Resolution {
    /// Where the pod's node-selecting fields alone let it land.
    pub fn node_placement(&self) -> Placement {
        self.node_placement.clone()
    }

    /// Node builds that run all of the pod's Windows images.
    pub fn image_builds(&self) -> Builds {
        self.image_builds.clone()
    }

    /// The build to pin to: the oldest build every image runs on, which is
    /// the images' own build. None for HostProcess pods and unknown builds.
    pub fn image_build(&self) -> Option<WindowsBuild> {
        match self.image_builds() {
            Builds::Only(set) => set.iter().next().copied(),
            _ => None,
        }
    }
}

/// Reads every signal of the pod.
pub fn resolve(pod: &PodView<'_>, settings: &Settings) -> Resolution {
    resolve_with(pod, settings, &Facts::default())
}

/// Reads every signal of the pod, with image platforms from `facts`.
pub fn resolve_with(pod: &PodView<'_>, settings: &Settings, facts: &Facts) -> Resolution {
    let mut found = Found::default();
    found.pod_os(pod);
    found.node_selector(pod);
    found.affinity(pod);
    found.runtime_class(pod, settings);
    found.windows_options(pod);
    found.images(pod, settings, facts);
    let mut conflicts = found.conflicts;
    conflicts.extend(find_conflicts(&found.signals));
    let placement = found
        .signals
        .iter()
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement));
    let os_unsure = placement.os().is_none() && !found.maybe_windows.is_empty();
    let mut warnings = found.warnings;
    warnings.extend(unpublished_warning(
        &found.unpublished,
        facts.syncer,
        settings,
    ));
    if os_unsure {
        warnings.extend(found.maybe_windows);
    }
    if placement.allows_windows() {
        warnings.extend(found.windows_without_version);
    }
    let node_placement = placement_of(&found.signals, |s| s.source.selects_nodes());
    let image_builds = placement_of(&found.signals, |s| {
        s.source == Source::Image && s.placement.allows_windows()
    })
    .windows
    .unwrap_or(Builds::Any);
    Resolution {
        node_placement,
        image_builds,
        undecided_images: found.undecided_images,
        unpublished_images: found.unpublished_images,
        signals: found.signals,
        placement,
        host_process: pod.is_host_process(),
        images_without_build: found.images_without_build,
        conflicts,
        warnings,
        os_unsure,
        build_set: found.build_set,
    }
}

/// What the readers below collect, field by field.
#[derive(Default)]
struct Found {
    signals: Vec<Signal>,
    conflicts: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    /// Images whose index has a Windows entry without `os.version`: said
    /// when the pod may run Windows.
    windows_without_version: Vec<Diagnostic>,
    images_without_build: Vec<(String, String)>,
    /// Warnings for images that only may be Windows images.
    maybe_windows: Vec<Diagnostic>,
    build_set: bool,
    undecided_images: Vec<usize>,
    /// Images the published facts do not hold yet: (path, image), once each.
    unpublished: Vec<(String, String)>,
    /// The containers whose image the published facts do not hold yet.
    unpublished_images: Vec<usize>,
}

impl Found {
    fn push(&mut self, signal: Signal) {
        self.signals.push(signal);
    }

    fn pod_os(&mut self, pod: &PodView<'_>) {
        let Some(name) = pod.os_name else {
            return;
        };
        let path = pod.path.field_text("os.name");
        match Os::from_label(name) {
            Some(os) => {
                self.push(Signal::new(
                    Source::PodOs,
                    path,
                    quoted(name),
                    os.placement(),
                ));
            }
            None => self.conflicts.push(Diagnostic::new(
                Code::InvalidValue,
                path,
                format!("{name:?} is not an OS name"),
                "set it to linux or windows (lower case)",
            )),
        }
    }

    fn node_selector(&mut self, pod: &PodView<'_>) {
        for (key, value) in &pod.node_selector {
            let Some(placement) = nodes_with(key, value) else {
                continue;
            };
            let mut path = pod.path.field_text("nodeSelector");
            push_key(&mut path, key);
            let source = if key == BETA_OS_LABEL {
                self.warnings.push(Diagnostic::new(
                    Code::DeprecatedLabel,
                    &path,
                    format!("{BETA_OS_LABEL} is deprecated and nodes may stop carrying it"),
                    format!("select {OS_LABEL}: {value} instead (with mutate, the policy adds it)"),
                ));
                Source::DeprecatedOsSelector
            } else {
                Source::NodeSelector
            };
            let reason = why_no_node_carries(key, value);
            self.push(Signal::new(source, path, quoted(value), placement).because(reason));
        }
    }

    fn affinity(&mut self, pod: &PodView<'_>) {
        let Some(required) = &pod.required_affinity else {
            return;
        };
        let placement = affinity::placement(required);
        if placement == Placement::anywhere() {
            return;
        }
        let path = pod
            .path
            .field_text("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
        let reason = placement.is_empty().then(|| {
            affinity::why_no_node(required).unwrap_or_else(|| {
                format!("no node satisfies all of {}", affinity::describe(required))
            })
        });
        let value = affinity::describe(required);
        self.push(Signal::new(Source::Affinity, path, value, placement).because(reason));
    }

    /// A RuntimeClass from the settings, merged as the admission plugin would.
    fn runtime_class(&mut self, pod: &PodView<'_>, settings: &Settings) {
        let Some(rc) = pod
            .runtime_class_name
            .and_then(|name| settings.runtime_class(name))
        else {
            return;
        };
        for (key, own, value) in selector_conflicts(&pod.node_selector, rc) {
            self.conflicts.push(Diagnostic::new(
                Code::RuntimeClassConflict,
                pod.field("nodeSelector").key(key).display(),
                format!(
                    "{own:?} conflicts with RuntimeClass {}: its scheduling.nodeSelector[{key}] is {value:?}",
                    rc.name
                ),
                format!("remove {key} from the nodeSelector or use a RuntimeClass that agrees"),
            ));
        }
        let placement = selector_placement(&rc.scheduling.node_selector);
        if placement == Placement::anywhere() {
            return;
        }
        let selects: Vec<String> = rc
            .scheduling
            .node_selector
            .iter()
            .filter(|(k, _)| is_placement_label(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let path = pod.path.field_text("runtimeClassName");
        let reason = format!("RuntimeClass selects {}", selects.join(", "));
        self.push(
            Signal::new(Source::RuntimeClass, path, quoted(&rc.name), placement)
                .because(Some(reason)),
        );
    }

    fn windows_options(&mut self, pod: &PodView<'_>) {
        let pod_level = (None, pod.path.clone(), &pod.windows_options);
        let containers = pod
            .containers
            .iter()
            .enumerate()
            .map(|(i, c)| (Some(i), c.path.clone(), &c.windows_options));
        for (container, base, options) in std::iter::once(pod_level).chain(containers) {
            if options.is_none() {
                continue;
            }
            let path = base.field_text("securityContext.windowsOptions");
            let value = match host_process(options) {
                Some(true) => "hostProcess: true".to_string(),
                _ => windows_options_summary(options.as_ref()),
            };
            let windows = Placement::windows(Builds::Any);
            self.push(
                Signal::new(Source::WindowsOptions, path, value, windows)
                    .because(Some(
                        "windowsOptions apply only to Windows pods".to_string(),
                    ))
                    .of_container(container),
            );
        }
    }

    fn images(&mut self, pod: &PodView<'_>, settings: &Settings, facts: &Facts) {
        let host_process = pod.is_host_process();
        // Hyper-V isolation runs an image on hosts of its build or newer.
        let hyperv = !host_process
            && pod
                .runtime_class_name
                .and_then(|name| settings.runtime_class(name))
                .is_some_and(|rc| rc.is_hyperv());
        // Containers often share an image (init containers, many replicas of
        // a sidecar): classify each reference once.
        let mut classified: Vec<(&str, ImageOs)> = Vec::new();
        for (index, container) in pod.containers.iter().enumerate() {
            let Some(image) = container.image else {
                continue;
            };
            let path = container.path.field_text("image");
            match facts.images.get(image) {
                Some(ImageFacts::Platforms(platforms)) => {
                    let read = Registry {
                        image,
                        platforms,
                        path: &path,
                        index,
                    };
                    if self.image_by_registry(read, host_process, hyperv) {
                        continue;
                    }
                }
                Some(ImageFacts::LookupFailed(error)) => {
                    self.lookup_failed(&path, image, error, settings)
                }
                Some(ImageFacts::Unpublished) => self.unpublished(&path, image, index),
                None => {}
            }
            let os = match classified.iter().find(|(i, _)| *i == image) {
                Some((_, os)) => os.clone(),
                None => {
                    let os = classify(image, &settings.windows_images);
                    classified.push((image, os.clone()));
                    os
                }
            };
            if matches!(
                os,
                ImageOs::Unknown
                    | ImageOs::MaybeWindows { .. }
                    | ImageOs::Windows { build: None, .. }
            ) {
                self.undecided_images.push(index);
            }
            self.image_by_reference(image, os, &path, index, host_process, hyperv);
        }
    }

    /// The image's placement from its registry's platforms; `false` when
    /// they name neither Linux nor Windows (the reference decides then).
    fn image_by_registry(&mut self, read: Registry<'_>, host_process: bool, hyperv: bool) -> bool {
        let Registry {
            image,
            platforms,
            path,
            index,
        } = read;
        let Some(placement) = platforms_placement(platforms, hyperv) else {
            self.warnings
                .push(registry_gap(path, image, "linux or windows entry"));
            return false;
        };
        if platforms
            .iter()
            .any(|p| p.os == "windows" && p.os_version.is_none())
        {
            self.windows_without_version.push(registry_gap(
                path,
                image,
                "os.version on its Windows entry",
            ));
        }
        let placement = if host_process {
            any_build(placement)
        } else {
            placement
        };
        self.build_set |= placement.allows_windows();
        let reason = format!("registry: {}", describe_platforms(platforms));
        self.image_signal(path, image, index, placement, reason);
        true
    }

    fn lookup_failed(&mut self, path: &str, image: &str, error: &str, settings: &Settings) {
        let short = crate::vocab::text::short(error);
        // Who read the registry, and so what to check, depends on imageFacts.
        let (message, fix) = match settings.image_facts {
            ImageFactsSource::Registry => (
                format!("the registry lookup of {image} failed ({short}), so its OS is read from the reference"),
                "check the registry and the policy server's credentials".to_string(),
            ),
            // A failure the syncer published; published facts the host could
            // not give are said once for the request (`admission::context`).
            // A fix the syncer published is the fix; the cause is then left
            // to the facts and the syncer's log, so the line keeps the fix whole.
            ImageFactsSource::Cluster => {
                let fix = syncer_fix(error);
                let shown = match fix {
                    Some(_) => String::new(),
                    None => format!(" ({short})"),
                };
                let fix = fix.unwrap_or("check that the syncer may reach the registry");
                (
                    format!("the syncer's lookup of {image} failed{shown}, so its OS is read from the reference"),
                    fix.to_string(),
                )
            }
        };
        let d = Diagnostic::new(Code::LookupFailed, path, message, fix);
        match settings.lookup_failure {
            LookupFailure::Warn => self.warnings.push(d),
            LookupFailure::Reject => self.conflicts.push(Diagnostic {
                fix: format!("{}, or set lookupFailure: warn", d.fix),
                ..d
            }),
        }
    }

    /// An image the published facts do not hold yet: always a warning, never
    /// a rejection, since the syncer only learns images from workloads the
    /// API server admitted.
    /// An image the published facts do not hold yet: said once for the
    /// request, if at all ([`pending`](crate::signals::pending)); never a
    /// rejection here.
    fn unpublished(&mut self, path: &str, image: &str, index: usize) {
        if !self.unpublished.iter().any(|(_, i)| i == image) {
            self.unpublished.push((path.to_string(), image.to_string()));
        }
        self.unpublished_images.push(index);
    }

    fn image_by_reference(
        &mut self,
        image: &str,
        os: ImageOs,
        path: &str,
        index: usize,
        host_process: bool,
        hyperv: bool,
    ) {
        let (placement, reason) = match os {
            ImageOs::Unknown => return,
            ImageOs::MaybeWindows { .. } => {
                self.maybe_windows.push(maybe_windows_warning(path, image));
                return;
            }
            ImageOs::Linux { reason } => (Placement::linux(), format!("Linux image: {reason}")),
            ImageOs::Windows { build, reason } => {
                // HostProcess containers run on the host: any build will do.
                let builds = match build {
                    Some(b) if !host_process => {
                        self.build_set |= hyperv;
                        hosts_of(b, hyperv)
                    }
                    Some(_) => Builds::Any,
                    None => {
                        self.images_without_build
                            .push((path.to_string(), image.to_string()));
                        Builds::Any
                    }
                };
                (
                    Placement::windows(builds),
                    format!("Windows image: {reason}"),
                )
            }
        };
        self.image_signal(path, image, index, placement, reason);
    }

    /// The signal of container `index`'s image, with why it means `placement`.
    fn image_signal(
        &mut self,
        path: &str,
        image: &str,
        index: usize,
        placement: Placement,
        reason: String,
    ) {
        self.push(
            Signal::new(Source::Image, path.to_string(), quoted(image), placement)
                .because(Some(reason))
                .of_container(Some(index)),
        );
    }
}

/// An image and what its registry said, as read for one container.
struct Registry<'a> {
    image: &'a str,
    platforms: &'a [Platform],
    path: &'a str,
    index: usize,
}

/// A registry answer that lacks what placement needs (dapr/dapr#9699: an
/// index whose Windows entry had no `os.version`, so AKS nodes pulled the
/// wrong build).
fn registry_gap(path: &str, image: &str, missing: &str) -> Diagnostic {
    Diagnostic::new(
        Code::RegistryIncomplete,
        path,
        format!(
            "the registry gives {image} no {missing}, so it does not tell where the image runs"
        ),
        "ask its publisher to complete the index, or select the OS and build yourself",
    )
}

/// The placement with any Windows build allowed.
fn any_build(placement: Placement) -> Placement {
    Placement {
        windows: placement.windows.map(|_| Builds::Any),
        ..placement
    }
}

/// `linux/amd64, windows/amd64 10.0.20348.2700`, at most four entries.
fn describe_platforms(platforms: &[Platform]) -> String {
    let known: Vec<String> = platforms
        .iter()
        .filter(|p| p.os == "linux" || p.os == "windows")
        .map(|p| {
            let arch = p.architecture.as_deref().unwrap_or("?");
            match &p.os_version {
                Some(v) => format!("{}/{arch} {v}", p.os),
                None => format!("{}/{arch}", p.os),
            }
        })
        .collect();
    let more = known.len().saturating_sub(4);
    let mut text = known.into_iter().take(4).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// The windowsOptions fields that are set, e.g. `runAsUserName: "ContainerUser"`.
fn windows_options_summary(
    options: Option<&k8s_openapi::api::core::v1::WindowsSecurityContextOptions>,
) -> String {
    let Some(o) = options else {
        return "{}".to_string();
    };
    let mut parts = Vec::new();
    if let Some(v) = &o.run_as_user_name {
        parts.push(format!("runAsUserName: {v:?}"));
    }
    if let Some(v) = &o.gmsa_credential_spec_name {
        parts.push(format!("gmsaCredentialSpecName: {v:?}"));
    }
    if o.gmsa_credential_spec.is_some() {
        parts.push("gmsaCredentialSpec".to_string());
    }
    if let Some(v) = o.host_process {
        parts.push(format!("hostProcess: {v}"));
    }
    if parts.is_empty() {
        "{}".to_string()
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}

/// Diagnostics for signals that no node satisfies, alone or together.
pub fn find_conflicts(signals: &[Signal]) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    for signal in signals.iter().filter(|s| s.placement.is_empty()) {
        let fix = match signal.source {
            Source::Affinity => "fix or remove what no node matches, so that at least one nodeSelectorTerm admits nodes",
            _ => "use a value nodes carry, or remove the entry",
        };
        let message = match &signal.reason {
            Some(reason) => format!("{reason}, so the pod can never be scheduled"),
            None => format!("{} admits no node", signal.value),
        };
        found.push(Diagnostic::new(
            Code::Unschedulable,
            &signal.path,
            message,
            fix,
        ));
    }
    let usable: Vec<&Signal> = signals.iter().filter(|s| !s.placement.is_empty()).collect();
    // One violation per odd one out: a signal that clashes with those kept
    // so far is reported once, against the first it clashes with.
    let mut kept: Vec<&Signal> = Vec::new();
    // What all kept signals allow: a signal within it clashes with none of
    // them, so the pairwise scan (quadratic in containers) is skipped.
    let mut kept_all = Placement::anywhere();
    for later in &usable {
        let conflict = if kept_all.intersect(&later.placement).is_empty() {
            kept.iter()
                .find_map(|earlier| pair_conflict(earlier, later))
        } else {
            None
        };
        match conflict {
            Some(d) => found.push(d),
            None => {
                kept_all = kept_all.intersect(&later.placement);
                kept.push(later);
            }
        }
    }
    let all = usable
        .iter()
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement));
    if found.is_empty() && all.is_empty() {
        let listed: Vec<String> = usable
            .iter()
            .map(|s| format!("{} = {}", s.path, s.describe()))
            .collect();
        found.push(Diagnostic::new(
            Code::Unschedulable,
            usable.first().map(|s| s.path.as_str()).unwrap_or("spec"),
            format!("no node satisfies all of: {}", listed.join("; ")),
            "make these fields agree on one OS and Windows build",
        ));
    }
    found
}

pub fn pair_conflict(earlier: &Signal, later: &Signal) -> Option<Diagnostic> {
    if !earlier.placement.intersect(&later.placement).is_empty() {
        return None;
    }
    let os_clash = !earlier.placement.os_overlaps(&later.placement);
    let (code, fix) = if os_clash {
        (
            Code::OsConflict,
            format!(
                "change {} or {} so both ask for the same OS",
                later.path, earlier.path
            ),
        )
    } else {
        (
            Code::BuildConflict,
            format!(
                "a pod runs on one Windows build: change {} or {} so both ask for the same build (process isolation needs the image build to match the node)",
                later.path, earlier.path
            ),
        )
    };
    Some(Diagnostic::new(
        code,
        &later.path,
        format!(
            "{} needs {}, but {} = {} needs {}",
            later.describe(),
            later.placement,
            earlier.path,
            earlier.describe(),
            earlier.placement
        ),
        fix,
    ))
}

/// Without the feature, the general fix.
#[cfg(not(feature = "syncer-fixes"))]
fn syncer_fix(_error: &str) -> Option<&str> {
    None
}

/// The verbs a fix the syncer publishes starts with (the registry client
/// ends a failure with `; <fix>`: "grant ecr:BatchGetImage …", "assign the
/// AcrPull role …", "add --allow-registry …").
#[cfg(feature = "syncer-fixes")]
const FIX_VERBS: &[&str] = &[
    "grant ",
    "annotate ",
    "label ",
    "assign ",
    "let ",
    "check ",
    "enable ",
    "register ",
    "create ",
    "run ",
    "add ",
    "set ",
    "install ",
];

/// The syncer's fix a published failure ends with, if any. (Split
/// forwards: the playground's module already holds that searcher.)
#[cfg(feature = "syncer-fixes")]
fn syncer_fix(error: &str) -> Option<&str> {
    let fix = error
        .split("; ")
        .last()
        .filter(|fix| fix.len() < error.len())?;
    FIX_VERBS
        .iter()
        .any(|verb| fix.starts_with(verb))
        .then_some(fix)
}
