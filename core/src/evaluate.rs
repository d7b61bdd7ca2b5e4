//! Top level: an admission review and the settings in, a decision out.

use serde_json::Value;

use crate::constraint::Placement;
use crate::diagnostics::{render, Code, Diagnostic};
use crate::kinds::{FieldPath, Kind, SUPPORTED_KINDS};
use crate::patch::{apply, AddOp};
use crate::place::{plan, RuntimeClassMerge};
use crate::resolve::{pair_conflict, resolve, Resolution};
use crate::settings::Settings;
use crate::spec::{malformed, ContainerList, PodView};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn parse(s: &str) -> Option<Operation> {
        Some(match s {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            "CONNECT" => Operation::Connect,
            _ => return None,
        })
    }
}

/// The parts of an admission request the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    pub kind: &'a str,
    pub operation: &'a str,
    pub object: &'a Value,
    pub old_object: Option<&'a Value>,
}

impl<'a> Review<'a> {
    /// Reads a Kubernetes AdmissionRequest (`kind.kind`, `operation`, `object`, `oldObject`).
    pub fn from_admission_request(request: &'a Value) -> Review<'a> {
        Review {
            kind: request
                .pointer("/kind/kind")
                .and_then(Value::as_str)
                .unwrap_or(""),
            operation: request
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or(""),
            object: request.get("object").unwrap_or(&Value::Null),
            old_object: request.get("oldObject").filter(|v| !v.is_null()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub accepted: bool,
    pub violations: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// The `add` operations applied to the object; empty when unchanged.
    pub patch: Vec<AddOp>,
    /// The object with the patch applied; `None` when unchanged.
    pub mutated_object: Option<Value>,
}

impl Decision {
    fn accept(warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: true,
            violations: Vec::new(),
            warnings,
            patch: Vec::new(),
            mutated_object: None,
        }
    }

    fn reject(violations: Vec<Diagnostic>, warnings: Vec<Diagnostic>) -> Decision {
        Decision {
            accepted: false,
            violations,
            warnings,
            patch: Vec::new(),
            mutated_object: None,
        }
    }

    /// The rejection message: one line per violation.
    pub fn message(&self) -> Option<String> {
        (!self.violations.is_empty()).then(|| render(&self.violations))
    }

    /// Warnings as the API server shows them.
    pub fn warning_lines(&self) -> Vec<String> {
        self.warnings.iter().map(ToString::to_string).collect()
    }
}

pub fn evaluate(review: &Review<'_>, settings: &Settings) -> Decision {
    let operation = match Operation::parse(review.operation) {
        Some(Operation::Delete | Operation::Connect) => return Decision::accept(Vec::new()),
        Some(op) => op,
        None => {
            return Decision::reject(
                vec![Diagnostic::new(
                    Code::UnsupportedKind,
                    "operation",
                    format!("{:?} is not an admission operation", review.operation),
                    "send CREATE, UPDATE, DELETE or CONNECT",
                )],
                Vec::new(),
            )
        }
    };
    let Some(kind) = Kind::parse(review.kind) else {
        return Decision::reject(
            vec![Diagnostic::new(
                Code::UnsupportedKind,
                "kind",
                format!("{:?} is not a kind this policy evaluates", review.kind),
                format!("limit the policy's rules to {SUPPORTED_KINDS}"),
            )],
            Vec::new(),
        );
    };
    let spec = match locate_pod_spec(review.object, kind) {
        Ok(found) => found,
        Err(d) => return Decision::reject(vec![d], Vec::new()),
    };
    let pod = match PodView::read(spec.0, spec.1) {
        Ok(pod) => pod,
        Err(problems) => return Decision::reject(problems, Vec::new()),
    };
    if kind == Kind::Pod && operation == Operation::Update {
        return check_new_ephemeral_containers(&pod, review.old_object, settings);
    }
    if operation == Operation::Update && pod_template_unchanged(review, kind, spec.0) {
        // Scaling, relabelling or a Job's bookkeeping must not be blocked or
        // turned into a rollout; a changed template is judged like a new one.
        return Decision::accept(Vec::new());
    }
    let resolution = resolve(&pod, settings);
    if !resolution.conflicts.is_empty() {
        return Decision::reject(resolution.conflicts, resolution.warnings);
    }
    let merge = match kind {
        Kind::Pod => RuntimeClassMerge::ByPolicy,
        _ => RuntimeClassMerge::ByPlugin,
    };
    let plan = plan(&pod, &resolution, settings, merge);
    let mut warnings = resolution.warnings;
    warnings.extend(plan.warnings);
    if !plan.violations.is_empty() {
        return Decision::reject(plan.violations, warnings);
    }
    finish(review.object, plan.ops, warnings)
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
    }
}

fn locate_pod_spec(object: &Value, kind: Kind) -> Result<(&Value, FieldPath), Diagnostic> {
    let mut path = FieldPath::root();
    let mut current = object;
    if !current.is_object() {
        return Err(malformed(
            &FieldPath::root().field("object"),
            "an object",
            current,
        ));
    }
    for field in kind.pod_spec_fields() {
        path = path.field(field);
        current = match current.get(field) {
            Some(next @ Value::Object(_)) => next,
            Some(other) => return Err(malformed(&path, "an object", other)),
            None => {
                return Err(Diagnostic::new(
                    Code::MalformedObject,
                    path.display(),
                    "is missing, so there is no pod spec to place",
                    format!("add {path} as the Kubernetes API requires for a {kind:?}"),
                ))
            }
        };
    }
    Ok((current, path))
}

/// Pod UPDATE: only new ephemeral containers are judged, against the rest
/// of the pod; nothing is patched (the API forbids scheduling changes).
fn check_new_ephemeral_containers(
    pod: &PodView<'_>,
    old_object: Option<&Value>,
    settings: &Settings,
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
    let resolution: Resolution = resolve(pod, settings);
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
    let pod_placement = existing
        .iter()
        .fold(Placement::anywhere(), |acc, s| acc.intersect(&s.placement));
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
    if violations.is_empty() {
        Decision::accept(Vec::new())
    } else {
        Decision::reject(violations, Vec::new())
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
