//! Resolution: every signal about the OS and build a pod needs, with its
//! field path, and the conflicts between them.

use crate::affinity;
use crate::build::WindowsBuild;
use crate::constraint::{Builds, Placement};
use crate::diagnostics::{Code, Diagnostic};
use crate::image::{classify, ImageOs};
use crate::labels::{is_placement_label, nodes_with, BETA_OS_LABEL, OS_LABEL};
use crate::settings::Settings;
use crate::spec::{host_process, PodView};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    PodOs,
    NodeSelector,
    /// `beta.kubernetes.io/os`: read for conflicts, but it does not count
    /// as selecting the OS (nodes may stop carrying it).
    DeprecatedOsSelector,
    Affinity,
    RuntimeClass,
    WindowsOptions,
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
    pub source: Source,
    /// Field path, relative to the object.
    pub path: String,
    /// The value as written, for messages.
    pub value: String,
    /// Why the value means what it does, when not obvious.
    pub reason: Option<String>,
    pub placement: Placement,
    /// The container it comes from, as an index into `PodView::containers`.
    pub container: Option<usize>,
}

impl Signal {
    fn describe(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{} ({reason})", self.value),
            None => self.value.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Resolution {
    pub signals: Vec<Signal>,
    /// Where the pod may land given all signals.
    pub placement: Placement,
    pub host_process: bool,
    /// The build to pin the pod's Windows images to (never for HostProcess pods).
    pub image_build: Option<WindowsBuild>,
    /// Node builds that run all of the pod's Windows images.
    pub image_builds: Builds,
    /// Windows images whose reference names no build: (path, image).
    pub images_without_build: Vec<(String, String)>,
    pub conflicts: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

impl Resolution {
    /// Where the pod's node-selecting fields alone let it land.
    pub fn node_placement(&self) -> Placement {
        self.signals
            .iter()
            .filter(|s| s.source.selects_nodes())
            .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement))
    }
}

/// Reads every signal of the pod.
pub fn resolve(pod: &PodView<'_>, settings: &Settings) -> Resolution {
    let mut signals = Vec::new();
    let mut conflicts = Vec::new();
    let mut warnings = Vec::new();
    let is_host_process = pod.is_host_process();

    if let Some(name) = pod.os_name {
        let path = pod.field("os").field("name");
        match crate::constraint::Os::from_label(name) {
            Some(os) => signals.push(Signal {
                source: Source::PodOs,
                path: path.display().to_string(),
                value: format!("{name:?}"),
                reason: None,
                placement: os.placement(),
                container: None,
            }),
            None => conflicts.push(Diagnostic::new(
                Code::InvalidValue,
                path.display(),
                format!("{name:?} is not an OS name"),
                "set it to linux or windows (lower case)",
            )),
        }
    }

    for (key, value) in &pod.node_selector {
        let Some(placement) = nodes_with(key, value) else {
            continue;
        };
        let path = pod.field("nodeSelector").key(key);
        if key == BETA_OS_LABEL {
            warnings.push(Diagnostic::new(
                Code::DeprecatedLabel,
                path.display(),
                format!("{BETA_OS_LABEL} is deprecated and nodes may stop carrying it"),
                format!("select {OS_LABEL}: {value} instead (with mutate, the policy adds it)"),
            ));
        }
        let reason = placement
            .is_empty()
            .then(|| "no node carries this label value".to_string());
        let source = match key.as_str() {
            BETA_OS_LABEL => Source::DeprecatedOsSelector,
            _ => Source::NodeSelector,
        };
        signals.push(Signal {
            source,
            path: path.display().to_string(),
            value: format!("{value:?}"),
            reason,
            placement,
            container: None,
        });
    }

    if let Some(required) = &pod.required_affinity {
        let placement = affinity::placement(required);
        if placement != Placement::anywhere() {
            signals.push(Signal {
                source: Source::Affinity,
                path: pod
                    .field("affinity")
                    .field("nodeAffinity")
                    .field("requiredDuringSchedulingIgnoredDuringExecution")
                    .display()
                    .to_string(),
                value: affinity::describe(required),
                reason: placement
                    .is_empty()
                    .then(|| "no node satisfies these terms".to_string()),
                placement,
                container: None,
            });
        }
    }

    if let Some(rc) = pod
        .runtime_class_name
        .and_then(|name| settings.runtime_class(name))
    {
        let path = pod.field("runtimeClassName");
        for (key, value) in &rc.scheduling.node_selector {
            if let Some(own) = pod.node_selector.get(key).filter(|own| *own != value) {
                conflicts.push(Diagnostic::new(
                    Code::RuntimeClassConflict,
                    pod.field("nodeSelector").key(key).display(),
                    format!(
                        "{own:?} conflicts with RuntimeClass {}: its scheduling.nodeSelector[{key}] is {value:?}",
                        rc.name
                    ),
                    format!("remove {key} from the nodeSelector or use a RuntimeClass that agrees"),
                ));
            }
        }
        let placement = rc
            .scheduling
            .node_selector
            .iter()
            .filter_map(|(k, v)| nodes_with(k, v))
            .fold(Placement::anywhere(), |acc, p| acc.intersect(&p));
        if placement != Placement::anywhere() {
            let selects: Vec<String> = rc
                .scheduling
                .node_selector
                .iter()
                .filter(|(k, _)| is_placement_label(k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            signals.push(Signal {
                source: Source::RuntimeClass,
                path: path.display().to_string(),
                value: format!("{:?}", rc.name),
                reason: Some(format!("RuntimeClass selects {}", selects.join(", "))),
                placement,
                container: None,
            });
        }
    }

    if pod.windows_options.is_some() {
        signals.push(windows_options_signal(
            pod.field("securityContext")
                .field("windowsOptions")
                .display(),
            host_process(&pod.windows_options) == Some(true),
        ));
    }
    let mut image_builds = Builds::Any;
    let mut images_without_build = Vec::new();
    for (index, container) in pod.containers.iter().enumerate() {
        if container.windows_options.is_some() {
            let mut signal = windows_options_signal(
                container
                    .path
                    .field("securityContext")
                    .field("windowsOptions")
                    .display(),
                host_process(&container.windows_options) == Some(true),
            );
            signal.container = Some(index);
            signals.push(signal);
        }
        let Some(image) = container.image else {
            continue;
        };
        let path = container.path.field("image").display().to_string();
        let (placement, reason) = match classify(image, &settings.windows_images) {
            ImageOs::Unknown => continue,
            ImageOs::Linux { reason } => (Placement::linux(), format!("Linux image: {reason}")),
            ImageOs::Windows { build, reason } => {
                // HostProcess containers run on the host: any build will do.
                let builds = match build {
                    Some(b) if !is_host_process => {
                        image_builds = image_builds.intersect(&Builds::compatible_hosts(b));
                        Builds::compatible_hosts(b)
                    }
                    Some(_) => Builds::Any,
                    None => {
                        images_without_build.push((path.clone(), image.to_string()));
                        Builds::Any
                    }
                };
                let os_reason = format!("Windows image: {reason}");
                (Placement::windows(builds), os_reason)
            }
        };
        signals.push(Signal {
            source: Source::Image,
            path,
            value: format!("{image:?}"),
            reason: Some(reason),
            placement,
            container: Some(index),
        });
    }

    conflicts.extend(find_conflicts(&signals));
    // The pin is the oldest build every image runs on: the images' own build.
    let image_build = match &image_builds {
        Builds::Only(set) => set.iter().next().copied(),
        _ => None,
    };
    let placement = signals
        .iter()
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement));
    Resolution {
        signals,
        placement,
        host_process: is_host_process,
        image_build,
        image_builds,
        images_without_build,
        conflicts,
        warnings,
    }
}

fn windows_options_signal(path: &str, host_process: bool) -> Signal {
    Signal {
        source: Source::WindowsOptions,
        path: path.to_string(),
        value: if host_process {
            "hostProcess: true".to_string()
        } else {
            "set".to_string()
        },
        reason: Some("windowsOptions apply only to Windows pods".to_string()),
        placement: Placement::windows(Builds::Any),
        container: None,
    }
}

/// Diagnostics for signals that no node satisfies, alone or together.
pub fn find_conflicts(signals: &[Signal]) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    for signal in signals.iter().filter(|s| s.placement.is_empty()) {
        found.push(Diagnostic::new(
            Code::Unschedulable,
            &signal.path,
            format!("{} admits no node", signal.describe()),
            "select linux or windows (lower case) with a build that exists, e.g. 10.0.20348",
        ));
    }
    let usable: Vec<&Signal> = signals.iter().filter(|s| !s.placement.is_empty()).collect();
    for (j, later) in usable.iter().enumerate() {
        for earlier in usable.iter().take(j) {
            if let Some(d) = pair_conflict(earlier, later) {
                found.push(d);
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
