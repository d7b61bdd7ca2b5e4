//! Objects to answers, in the style of Cedar's `is_authorized(call) ->
//! answer`: a [`Call`] names the object and everything the decision
//! depends on; [`evaluate`] gives the [`Answer`]. The request is the one
//! the API server would send; one the policy's rules do not select is never
//! evaluated, only answered as skipped with the reason.

use os_placement_core::{
    evaluate_request_with_facts, needs_request, Facts, Kind, Needs, Operation, Origin, Settings,
};
use serde::Serialize;
use serde_json::Value;

use crate::answer::Answer;
use crate::facts::HostFacts;
use crate::node::Position;
use crate::objects::{objects, Found, NotAnObject, Subject};
use crate::request::{audit_request, group_version, Submission};
use crate::rules::{select, EPHEMERAL_CONTAINERS};
use crate::stream::{read_stream, BrokenDocument};

/// Everything one answer depends on: the object, and what it is evaluated
/// with (an AdmissionReview brings its own operation and old object).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The object, as found in the input.
    pub subject: &'a Subject,
    /// The settings, operation, old object and facts.
    pub options: Options<'a>,
}

/// The request the API server sends for the call's object: the request of
/// its AdmissionReview as it is, else one built for the operation. A Pod
/// UPDATE is the one the rules select: through `ephemeralcontainers`, as
/// `kubectl debug` sends it. For an audit, the audit scanner's request.
pub fn request_for(call: &Call<'_>) -> Value {
    if let Some(request) = &call.subject.review_request {
        return request.clone();
    }
    let object = &call.subject.object;
    if call.options.origin == Origin::Audit {
        return audit_request(object);
    }
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
    let is_pod = Kind::parse(text("kind")) == Some(Kind::Pod)
        && group_version(text("apiVersion")).0.is_empty();
    let options = &call.options;
    let sub_resource =
        (is_pod && options.operation == Operation::Update).then_some(EPHEMERAL_CONTAINERS);
    Submission {
        object,
        operation: options.operation,
        old_object: options.old_object,
        sub_resource,
    }
    .request()
}

/// An answer, with what the policy looked up to give it.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// The answer about the object.
    pub answer: Answer,
    /// What the policy would look up and what the call's host answered
    /// (nothing without a host); `None` for a skipped object, which the
    /// policy is never asked about.
    pub lookups: Option<(Needs, Facts)>,
}

/// The answer about one object, with its lookups.
pub fn evaluate_with_lookups(call: &Call<'_>) -> Evaluated {
    let request = request_for(call);
    if let Err(reason) = select(&request) {
        return Evaluated {
            answer: Answer::skipped(call.subject, &request, reason.to_string()),
            lookups: None,
        };
    }
    let settings = call.options.settings;
    let needs = needs_request(&request, settings);
    let facts = call
        .options
        .facts
        .map(|host| host.answer(&needs))
        .unwrap_or_default();
    let decision = evaluate_request_with_facts(&request, settings, &facts);
    Evaluated {
        answer: Answer::decided(call.subject, &request, decision),
        lookups: Some((needs, facts)),
    }
}

/// The answer about one object.
pub fn evaluate(call: &Call<'_>) -> Answer {
    evaluate_with_lookups(call).answer
}

/// What is evaluated for every object of a text.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// The policy settings.
    pub settings: &'a Settings,
    /// The operation for objects given bare.
    pub operation: Operation,
    /// The object before an UPDATE, for objects given bare.
    pub old_object: Option<&'a Value>,
    /// What the host would answer; `None`: no host, nothing is looked up.
    pub facts: Option<&'a HostFacts>,
    /// Admission (a change being made), or the background audit of objects
    /// as they exist (`operation` and `old_object` then do not apply).
    pub origin: Origin,
}

impl<'a> Options<'a> {
    /// The call for one object.
    pub fn call<'s>(&self, subject: &'s Subject) -> Call<'s>
    where
        'a: 's,
    {
        Call {
            subject,
            options: *self,
        }
    }
}

/// Why part of an input could not be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// Not valid YAML or JSON (or anchors that expand too far).
    Syntax,
    /// Valid, but not a Kubernetes object.
    NotAnObject,
}

/// A part of the input that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// 1-based number of the document.
    pub document: usize,
    /// The index in a list's `items`, when it is an item.
    pub item: Option<usize>,
    /// Where.
    #[serde(flatten)]
    pub at: Position,
    /// What is wrong, and what is expected.
    pub message: String,
}

impl From<BrokenDocument> for Problem {
    fn from(broken: BrokenDocument) -> Problem {
        Problem {
            kind: ProblemKind::Syntax,
            document: broken.number,
            item: None,
            at: broken.error.at,
            message: broken.error.message,
        }
    }
}

impl From<NotAnObject> for Problem {
    fn from(problem: NotAnObject) -> Problem {
        Problem {
            kind: ProblemKind::NotAnObject,
            document: problem.at.document,
            item: problem.at.item,
            at: Position {
                line: problem.at.line,
                column: problem.at.column,
            },
            message: problem.message,
        }
    }
}

/// One entry per object (its answer) or per problem, in input order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    /// An object and its answer.
    Answer(Box<Answer>),
    /// A part of the input that is not an object.
    Problem(Problem),
}

/// Every object of `text` evaluated, every problem named, in order.
pub fn evaluate_text(text: &str, options: &Options<'_>) -> Vec<Outcome> {
    let mut out = Vec::new();
    for document in read_stream(text) {
        let document = match document {
            Ok(document) => document,
            Err(broken) => {
                out.push(Outcome::Problem(broken.into()));
                continue;
            }
        };
        for found in objects(&document) {
            out.push(match found {
                Found::Object(subject) => {
                    Outcome::Answer(Box::new(evaluate(&options.call(&subject))))
                }
                Found::NotAnObject(problem) => Outcome::Problem(problem.into()),
            });
        }
    }
    out
}
