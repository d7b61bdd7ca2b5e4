//! Top level: an admission review and the settings in, a decision out.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::admission::needs::{needs_reading, ReadPod};
use crate::input::facts::{Facts, Needs, RuntimeClassFacts};
use crate::input::pod::{ContainerList, PodView};
use crate::input::review::{locate_pod_spec, Operation, Review};
use crate::input::settings::{DefaultOs, NodeInventory, Settings};
use crate::placement::inventory::no_node_after;
use crate::placement::ownership::{
    annotation_op, owned_entries, reconcile, record_after, without, Owned,
};
use crate::placement::plan::{plan, RuntimeClassMerge};
use crate::placement::selection::other_selections;
use crate::scheduling::taints::tolerates;
use crate::signals::report::SignalReport;
use crate::signals::resolve::{pair_conflict, resolve_with, Resolution};
use crate::vocab::constraint::Placement;
use crate::vocab::diagnostics::{render, Code, Diagnostic};
use crate::vocab::kinds::{Kind, SUPPORTED_KINDS};
use crate::vocab::ordered::CollectOrdered;
use crate::vocab::patch::{apply, AddOp};

/// An admission request read once: first what to look up outside it, then
/// the decision with what was found. The same answers as
/// [`needs_request`](crate::needs_request) then
/// [`evaluate_request_with_facts`], without reading the pod twice.
pub struct Admission<'a> {
    review: Result<Review<'a>, Diagnostic>,
    settings: &'a Settings,
    needs: Needs,
    read: Option<ReadPod<'a>>,
    signals: bool,
}

impl<'a> Admission<'a> {
    /// Reads the request and works out what to look up.
    pub fn new(request: &'a Value, settings: &'a Settings) -> Admission<'a> {
        let review = Review::from_admission_request(request);
        let (needs, read) = match &review {
            Ok(review) => needs_reading(review, settings),
            Err(_) => (Needs::default(), None),
        };
        Admission {
            review,
            settings,
            needs,
            read,
            signals: true,
        }
    }

    /// Leaves [`Decision::signals`] empty: an admission webhook answers
    /// with the verdict and the patch only, so it skips building them.
    pub fn without_signals(mut self) -> Admission<'a> {
        self.signals = false;
        self
    }

    /// What the adapter should look up before [`Admission::decide`].
    pub fn needs(&self) -> &Needs {
        &self.needs
    }

    /// The decision, with the facts gathered for [`Admission::needs`].
    pub fn decide(self, facts: &Facts) -> Decision {
        match self.review {
            Ok(review) => evaluate_read(&review, self.settings, facts, self.read, self.signals),
            Err(problem) => Decision::reject(vec![problem], Vec::new()),
        }
    }
}

/// What the policy says about one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Whether the object is admitted (possibly with the patch).
    pub accepted: bool,
    /// Why it is rejected; empty when accepted.
    pub violations: Vec<Diagnostic>,
    /// Findings that do not block admission.
    pub warnings: Vec<Diagnostic>,
    /// The RFC 6902 `add` operations applied to the object; empty when unchanged.
    pub patch: Vec<AddOp>,
    /// The object with the patch applied; `None` when unchanged.
    pub mutated_object: Option<Value>,
    /// The fields that said which OS and build the pod needs, as read.
    pub signals: Vec<SignalReport>,
}

impl Decision {
    fn accept(warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: true,
            violations: Vec::new(),
            warnings,
            patch: Vec::new(),
            mutated_object: None,
            signals: Vec::new(),
        }
    }

    /// A rejection with these violations and warnings.
    pub fn reject(violations: Vec<Diagnostic>, warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: false,
            violations,
            warnings,
            patch: Vec::new(),
            mutated_object: None,
            signals: Vec::new(),
        }
    }

    fn with_signals(
        mut self,
        report: bool,
        resolution: &Resolution,
        pod: &PodView<'_>,
    ) -> Decision {
        if !report {
            return self;
        }
        self.signals = resolution
            .signals
            .iter()
            .map(|s| SignalReport::new(s, pod))
            .collect();
        self
    }

    /// The rejection message: one line per violation.
    pub fn message(&self) -> Option<String> {
        (!self.violations.is_empty()).then(|| render(&self.violations))
    }

    /// Warnings as the API server shows them, each within its
    /// [`MAX_WARNING_CHARS`] limit (it truncates longer ones).
    pub fn warning_lines(&self) -> Vec<String> {
        self.warnings.iter().map(warning_line).collect()
    }
}

/// The API server truncates admission warnings longer than this.
pub const MAX_WARNING_CHARS: usize = 256;

fn warning_line(warning: &Diagnostic) -> String {
    let line = warning.to_string();
    match line.char_indices().nth(MAX_WARNING_CHARS - 1) {
        Some((end, _)) => format!("{}…", line.get(..end).unwrap_or_default()),
        None => line,
    }
}

/// Evaluates a raw Kubernetes AdmissionRequest.
pub fn evaluate_request(request: &Value, settings: &Settings) -> Decision {
    evaluate_request_with_facts(request, settings, &Facts::default())
}

/// Evaluates a raw Kubernetes AdmissionRequest with facts from outside it.
pub fn evaluate_request_with_facts(
    request: &Value,
    settings: &Settings,
    facts: &Facts,
) -> Decision {
    match Review::from_admission_request(request) {
        Ok(review) => evaluate_with_facts(&review, settings, facts),
        Err(problem) => Decision::reject(vec![problem], Vec::new()),
    }
}

/// Evaluates one review: the verdict, the findings and the patch.
pub fn evaluate(review: &Review<'_>, settings: &Settings) -> Decision {
    evaluate_with_facts(review, settings, &Facts::default())
}

/// Evaluates one review with facts from the registry and the cluster:
/// cluster RuntimeClasses and the Windows taint of the nodes complete the
/// settings (the settings' own entries win); image platforms and the node
/// inventory refine the placement. Empty facts change nothing.
pub fn evaluate_with_facts(review: &Review<'_>, settings: &Settings, facts: &Facts) -> Decision {
    evaluate_read(review, settings, facts, None, true)
}

fn evaluate_read<'a>(
    review: &Review<'a>,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'a>>,
    signals: bool,
) -> Decision {
    if matches!(review.operation, Operation::Delete | Operation::Connect) {
        return Decision::accept(Vec::new());
    }
    let completed = crate::admission::context::complete(settings, facts);
    // A resolution without facts holds only while there are none.
    let facts_change_nothing = matches!(completed, Cow::Borrowed(_)) && facts.is_empty();
    let read = match read {
        Some(r) if !facts_change_nothing => Some(ReadPod {
            resolution: None,
            ..r
        }),
        read => read,
    };
    evaluate_in(review, &completed, facts, read, signals)
}

fn evaluate_in<'a>(
    review: &Review<'a>,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'a>>,
    signals: bool,
) -> Decision {
    let operation = review.operation;
    if matches!(operation, Operation::Delete | Operation::Connect) {
        return Decision::accept(Vec::new());
    }
    let Some(kind) = Kind::parse(review.kind) else {
        return unsupported_kind(review.kind);
    };
    let spec = match locate_pod_spec(review.object, kind) {
        Ok(found) => found,
        Err(d) => return Decision::reject(vec![d], Vec::new()),
    };
    if kind == Kind::Pod && operation == Operation::Update {
        let pod = match read {
            Some(read) => read.pod,
            None => match PodView::read(spec.0, spec.1) {
                Ok(pod) => pod,
                Err(problems) => return Decision::reject(problems, Vec::new()),
            },
        };
        return check_new_ephemeral_containers(&pod, review.old_object, settings, facts, signals);
    }
    if operation == Operation::Update && pod_template_unchanged(review, kind, spec.0) {
        // Scaling, relabelling or a Job's bookkeeping must not be blocked or
        // turned into a rollout; a changed template is judged like a new one.
        return Decision::accept(Vec::new());
    }
    if !settings.mutate || kind == Kind::Pod {
        // A Pod is never patched again after CREATE: nothing to own.
        return materialize(
            review.object,
            decide(review.object, kind, settings, facts, read, signals),
        );
    }
    let selector = spec.1.field("nodeSelector").pointer().to_string();
    decide_owning(review, kind, &selector, settings, facts, read, signals)
}

fn unsupported_kind(kind: &str) -> Decision {
    Decision::reject(
        vec![Diagnostic::new(
            Code::UnsupportedKind,
            "kind",
            format!("{kind:?} is not a kind this policy evaluates"),
            format!("limit the policy's rules to {SUPPORTED_KINDS}"),
        )],
        Vec::new(),
    )
}

/// A workload with `mutate`: the policy's own nodeSelector entries from an
/// earlier admission (under `selector`) are judged afresh and recorded.
#[allow(clippy::too_many_arguments)]
fn decide_owning<'a>(
    review: &Review<'a>,
    kind: Kind,
    selector: &str,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'a>>,
    signals: bool,
) -> Decision {
    let owned: Owned = owned_entries(review.object, review.old_object)
        .into_iter()
        .filter(|(pointer, _)| pointer.starts_with(&format!("{selector}/")))
        .collect_map();
    let decision = decide(review.object, kind, settings, facts, read, signals);
    if decision.accepted || owned.is_empty() {
        return adopt(review.object, &owned, decision, selector, false);
    }
    // Rejected: the policy's own entries may be what clashes (a build pin
    // after an image upgrade). Judge the object without them, and move them.
    let without_owned = without(review.object, &owned);
    let decision = decide(&without_owned, kind, settings, facts, None, signals);
    adopt(review.object, &owned, decision, selector, true)
}

/// Resolves and places the pod spec of `object`. Kept out of line: it is
/// called from three places and carries the whole rule pipeline.
/// `read` is `object`'s pod spec when already read.
#[inline(never)]
fn decide<'o>(
    object: &'o Value,
    kind: Kind,
    settings: &Settings,
    facts: &Facts,
    read: Option<ReadPod<'o>>,
    signals: bool,
) -> Decision {
    let (pod, resolved) = match read {
        Some(read) => (read.pod, read.resolution),
        None => match read_pod(object, kind) {
            Ok(pod) => (pod, None),
            Err(problems) => return Decision::reject(problems, Vec::new()),
        },
    };
    let mut resolution = resolved.unwrap_or_else(|| resolve_with(&pod, settings, facts));
    resolution
        .warnings
        .extend(crate::admission::context::lookup_warnings(
            &pod, settings, facts,
        ));
    let mut conflicts = resolution.conflicts.clone();
    conflicts.extend(missing_runtime_class(&pod, settings, facts));
    if !conflicts.is_empty() {
        return Decision::reject(conflicts, resolution.warnings.clone()).with_signals(
            signals,
            &resolution,
            &pod,
        );
    }
    let merge = match kind {
        Kind::Pod => RuntimeClassMerge::ByPolicy,
        _ => RuntimeClassMerge::ByPlugin,
    };
    let cluster = facts.cluster_builds(settings);
    let plan = plan(&pod, &resolution, settings, merge, cluster.as_ref());
    let mut warnings = resolution.warnings.clone();
    warnings.extend(plan.warnings);
    let decision = if plan.violations.is_empty() {
        planned(plan.ops, warnings)
    } else {
        Decision::reject(plan.violations, warnings)
    };
    check_nodes(decision, object, kind, &resolution, settings, facts).with_signals(
        signals,
        &resolution,
        &pod,
    )
}

fn read_pod(object: &Value, kind: Kind) -> Result<PodView<'_>, Vec<Diagnostic>> {
    let (spec, path) = locate_pod_spec(object, kind).map_err(|d| vec![d])?;
    PodView::read(spec, path)
}

/// A RuntimeClass the pod names that neither the settings nor the cluster
/// has: the API server would refuse the pods (RuntimeClass admission).
fn missing_runtime_class(
    pod: &PodView<'_>,
    settings: &Settings,
    facts: &Facts,
) -> Option<Diagnostic> {
    let name = pod.runtime_class_name?;
    if settings.runtime_class(name).is_some() {
        return None;
    }
    matches!(facts.runtime_classes.get(name), Some(RuntimeClassFacts::Missing)).then(|| {
        Diagnostic::new(
            Code::RuntimeClassMissing,
            pod.field("runtimeClassName").display(),
            format!("RuntimeClass {name:?} does not exist in the cluster, so the API server refuses every pod of this object"),
            "create the RuntimeClass, or correct or remove runtimeClassName",
        )
    })
}

/// With `nodeInventory`, an accepted pod no listed node can run is
/// rejected or warned about, naming what the nodes lack.
fn check_nodes(
    decision: Decision,
    object: &Value,
    kind: Kind,
    resolution: &Resolution,
    settings: &Settings,
    facts: &Facts,
) -> Decision {
    let Some(nodes) = facts.listed_nodes() else {
        return decision;
    };
    if !decision.accepted || !settings.node_inventory.reads_nodes() {
        return decision;
    }
    let Some(problem) = no_node_after(object, kind, &decision.patch, resolution, settings, nodes)
    else {
        return decision;
    };
    match settings.node_inventory {
        NodeInventory::Reject => Decision::reject(vec![problem], decision.warnings),
        _ => {
            let mut decision = decision;
            decision.warnings.push(problem);
            decision
        }
    }
}

/// Rebases the decision's ops on the real object: owned entries are
/// replaced or removed rather than added, and the record is updated.
fn adopt(
    object: &Value,
    owned: &Owned,
    mut decision: Decision,
    selector: &str,
    judged_without_owned: bool,
) -> Decision {
    if !decision.accepted {
        return decision;
    }
    let mut ops = std::mem::take(&mut decision.patch);
    if judged_without_owned {
        ops = reconcile(owned, ops);
    }
    let record = record_after(owned, &ops, selector);
    ops.extend(annotation_op(object, &record));
    let signals = std::mem::take(&mut decision.signals);
    Decision {
        signals,
        ..finish(object, ops, decision.warnings)
    }
}

/// Accepted with these operations, the object not yet patched: the caller
/// either rebases them ([`adopt`]) or applies them ([`materialize`]).
fn planned(ops: Vec<AddOp>, warnings: Vec<Diagnostic>) -> Decision {
    Decision {
        patch: ops,
        ..Decision::accept(warnings)
    }
}

/// Applies a [`planned`] decision's operations to a copy of the object.
fn materialize(object: &Value, mut decision: Decision) -> Decision {
    if !decision.accepted || decision.patch.is_empty() {
        return decision;
    }
    let signals = std::mem::take(&mut decision.signals);
    Decision {
        signals,
        ..finish(object, decision.patch, decision.warnings)
    }
}

fn finish(object: &Value, ops: Vec<AddOp>, warnings: Vec<Diagnostic>) -> Decision {
    if ops.is_empty() {
        return Decision::accept(warnings);
    }
    let mut mutated = object.clone();
    if let Err(e) = apply(&mut mutated, &ops) {
        return Decision::reject(
            vec![Diagnostic::new(
                Code::MalformedObject,
                e.path,
                "cannot be added to the object",
                "report this object to the policy maintainers",
            )],
            warnings,
        );
    }
    Decision {
        accepted: true,
        violations: Vec::new(),
        warnings,
        patch: ops,
        mutated_object: Some(mutated),
        signals: Vec::new(),
    }
}

/// Pod UPDATE: only new ephemeral containers are judged, against the rest
/// of the pod; nothing is patched (the API forbids scheduling changes).
fn check_new_ephemeral_containers(
    pod: &PodView<'_>,
    old_object: Option<&Value>,
    settings: &Settings,
    facts: &Facts,
    signals: bool,
) -> Decision {
    let old_names = old_ephemeral_names(old_object);
    let ephemeral = |index: usize| {
        pod.containers
            .get(index)
            .filter(|c| c.list == ContainerList::EphemeralContainers)
    };
    let is_new = |index: usize| {
        ephemeral(index).is_some_and(|c| c.name.is_none_or(|n| !old_names.contains(&n)))
    };
    let resolution: Resolution = resolve_with(pod, settings, facts);
    // Earlier ephemeral containers cannot be removed: they must not make
    // the pod impossible to debug, so only the pod's own fields count.
    let existing: Vec<_> = resolution
        .signals
        .iter()
        .filter(|s| s.container.is_none_or(|i| ephemeral(i).is_none()))
        .collect();
    let added = resolution
        .signals
        .iter()
        .filter(|s| s.container.is_some_and(is_new));
    let pod_placement = running_placement(
        pod,
        settings,
        existing
            .iter()
            .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement)),
    );
    if pod_placement.is_empty() {
        // The pod itself is inconsistent; that is not this update's doing.
        return Decision::accept(Vec::new());
    }
    let mut violations = Vec::new();
    for signal in added {
        if !pod_placement.intersect(&signal.placement).is_empty() {
            continue;
        }
        let mut d = existing
            .iter()
            .find_map(|e| pair_conflict(e, signal))
            .unwrap_or_else(|| {
                let message = format!(
                    "needs {}, but the pod runs on {pod_placement}",
                    signal.placement
                );
                Diagnostic::new(Code::EphemeralContainerMismatch, &signal.path, message, "")
            });
        d.code = Code::EphemeralContainerMismatch;
        d.fix = format!(
            "the pod's node is fixed: use an ephemeral container image for {pod_placement}"
        );
        violations.push(d);
    }
    let decision = if violations.is_empty() {
        Decision::accept(Vec::new())
    } else {
        Decision::reject(violations, Vec::new())
    };
    decision.with_signals(signals, &resolution, pod)
}

/// Where a running pod with no OS signal of its own can be: off Windows
/// nodes when it does not tolerate their taint, and on Linux when
/// `defaultOS` placed it there (it points at no nodes by other means).
fn running_placement(pod: &PodView<'_>, settings: &Settings, signalled: Placement) -> Placement {
    if signalled.os().is_some() {
        return signalled;
    }
    let kept_off_windows = settings.windows_taint().is_some_and(|taint| {
        taint.keeps_pods_off() && !pod.tolerations.iter().any(|t| tolerates(t, taint))
    });
    let defaulted = settings.default_os == DefaultOs::Linux
        && other_selections(pod, settings)
            .iter()
            .all(|s| s.path == pod.field("nodeName").display());
    if kept_off_windows || defaulted {
        signalled.intersect(&Placement::linux())
    } else {
        signalled
    }
}

fn pod_template_unchanged(review: &Review<'_>, kind: Kind, spec: &Value) -> bool {
    review
        .old_object
        .and_then(|old| {
            kind.pod_spec_fields()
                .iter()
                .try_fold(old, |v, field| v.get(field))
        })
        .is_some_and(|old_spec| old_spec == spec)
}

fn old_ephemeral_names(old_object: Option<&Value>) -> Vec<&str> {
    old_object
        .and_then(|o| o.pointer("/spec/ephemeralContainers"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}
