//! Top level: an admission review and the settings in, a decision out.

use std::borrow::Cow;

use serde_json::Value;

use crate::admission::decide::decide;
use crate::admission::decision::Decision;
use crate::admission::needs::{needs_reading, ReadPod};
use crate::admission::owning::decide_owning;
use crate::admission::pending::wait_for_facts;
use crate::admission::update::{check_new_ephemeral_containers, pod_template_unchanged};
use crate::input::facts::{Facts, Needs};
use crate::input::pod::PodView;
use crate::input::review::{locate_pod_spec, Operation, Review};
use crate::input::settings::Settings;
use crate::vocab::diagnostics::{Code, Diagnostic};
use crate::vocab::kinds::{Kind, SUPPORTED_KINDS};

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

    /// The decision, with the facts gathered for [`Admission::needs`]; the
    /// patched object is a copy of the request's.
    pub fn decide(self, facts: &Facts) -> Decision {
        let object = self.review.as_ref().ok().map(|r| r.object);
        let decision = self.decide_unapplied(facts);
        match object {
            Some(object) => applied_to_copy(decision, object),
            None => decision,
        }
    }

    /// As [`Admission::decide`], the patch not applied: the caller that owns
    /// the request applies it to the object with [`Decision::apply_to`],
    /// so the object is not copied.
    pub fn decide_unapplied(self, facts: &Facts) -> Decision {
        match self.review {
            Ok(review) => evaluate_read(&review, self.settings, facts, self.read, self.signals),
            Err(problem) => Decision::reject(vec![problem], Vec::new()),
        }
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
    applied_to_copy(
        evaluate_read(review, settings, facts, None, true),
        review.object,
    )
}

/// The decision with its patch applied to a copy of `object`, copied only
/// when there is a patch.
fn applied_to_copy(decision: Decision, object: &Value) -> Decision {
    if decision.patch_pending() {
        decision.apply_to(object.clone())
    } else {
        decision
    }
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
    let completed = crate::placement::cluster_settings::complete(settings, facts);
    // The resolution read without facts holds while the settings stay as
    // they are and no image was looked up (nodes change the plan, not it).
    let resolution_holds = matches!(completed, Cow::Borrowed(_)) && facts.images.is_empty();
    let read = match read {
        Some(r) if !resolution_holds => Some(ReadPod {
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
    #[cfg(feature = "audit")]
    if review.origin == crate::input::review::Origin::Audit {
        use crate::admission::audit::audit;
        let read = match read {
            Some(read) => Some(read),
            None => PodView::read(spec.0, spec.1.clone())
                .ok()
                .map(|pod| ReadPod {
                    pod,
                    resolution: None,
                }),
        };
        return audit(review.object, kind, settings, facts, read, signals);
    }
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
    if kind == Kind::Pod && operation == Operation::Create {
        let waits = match &read {
            Some(read) => wait_for_facts(review.object, &read.pod, settings, facts),
            None => PodView::read(spec.0, spec.1.clone())
                .ok()
                .and_then(|pod| wait_for_facts(review.object, &pod, settings, facts)),
        };
        if let Some(pending) = waits {
            return Decision::reject(vec![pending], Vec::new());
        }
    }
    if !settings.mutate || kind == Kind::Pod {
        // A Pod is never patched again after CREATE: nothing to own.
        return decide(review.object, kind, settings, facts, read, signals);
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
