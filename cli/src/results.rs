//! One entry per object (or per input error), and the totals.

use std::collections::BTreeMap;

use os_placement_door::{evaluate_text, Answer, Options, Outcome, Problem, ProblemKind};

use crate::inputs::Input;

/// Which object: `kind/namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl ObjectRef {
    pub fn of(answer: &Answer) -> ObjectRef {
        ObjectRef {
            api_version: answer.api_version.clone(),
            kind: answer.kind.clone(),
            namespace: answer.namespace.clone(),
            name: answer.name.clone(),
        }
    }

    /// `Kind/namespace/name`, or `Kind/name` when the manifest sets no namespace.
    pub fn display(&self) -> String {
        let name = self.name.as_deref().unwrap_or("-");
        match &self.namespace {
            Some(ns) => format!("{}/{ns}/{name}", self.kind),
            None => format!("{}/{name}", self.kind),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Status {
    /// The policy's answer: accepted (maybe with a patch) or rejected.
    Evaluated(Box<Answer>),
    /// Not a request the policy's rules select: why.
    Skipped(String),
    /// Unreadable input, broken YAML, not a Kubernetes object.
    Error(String),
}

/// The verdict names used by every output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Patched,
    Rejected,
    Skipped,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Patched => "patched",
            Verdict::Rejected => "rejected",
            Verdict::Skipped => "skipped",
            Verdict::Error => "error",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// 1-based number of the document in its input.
    pub document: Option<usize>,
    /// Index in a list's items.
    pub item: Option<usize>,
    pub object: Option<ObjectRef>,
    pub status: Status,
}

impl Entry {
    /// The entry of an answer.
    pub fn answered(file: &str, answer: Answer) -> Entry {
        Entry {
            file: file.to_owned(),
            line: Some(answer.at.line),
            column: None,
            document: Some(answer.at.document),
            item: answer.at.item,
            object: Some(ObjectRef::of(&answer)),
            status: match &answer.skip_reason {
                Some(reason) => Status::Skipped(reason.clone()),
                None => Status::Evaluated(Box::new(answer)),
            },
        }
    }

    /// The entry of a part of the input that is not an object.
    pub fn problem(file: &str, problem: Problem) -> Entry {
        let (column, message) = match problem.kind {
            ProblemKind::Syntax => (
                Some(problem.at.column),
                format!("not valid YAML: {}", problem.message),
            ),
            ProblemKind::NotAnObject => (None, problem.message),
        };
        Entry {
            file: file.to_owned(),
            line: Some(problem.at.line),
            column,
            document: Some(problem.document),
            item: problem.item,
            object: None,
            status: Status::Error(message),
        }
    }

    /// The entry of an input that could not be read.
    pub fn unreadable(file: &str, message: String) -> Entry {
        Entry {
            file: file.to_owned(),
            line: None,
            column: None,
            document: None,
            item: None,
            object: None,
            status: Status::Error(message),
        }
    }

    pub fn verdict(&self) -> Verdict {
        match &self.status {
            Status::Evaluated(a) if !a.accepted() => Verdict::Rejected,
            Status::Evaluated(a) if a.patched() => Verdict::Patched,
            Status::Evaluated(_) => Verdict::Accepted,
            Status::Skipped(_) => Verdict::Skipped,
            Status::Error(_) => Verdict::Error,
        }
    }

    /// `file:line` or `file:line:column`, as editors and CI annotations read it.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", self.file),
            (Some(line), None) => format!("{}:{line}", self.file),
            _ => self.file.clone(),
        }
    }

    /// The object reference, with `items[i]` for an item of a list.
    pub fn name(&self) -> String {
        let object = self
            .object
            .as_ref()
            .map_or_else(|| "document".to_owned(), ObjectRef::display);
        match self.item {
            Some(i) => format!("{object} (items[{i}])"),
            None => object,
        }
    }
}

/// Totals over all entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub objects: usize,
    pub accepted: usize,
    pub patched: usize,
    pub rejected: usize,
    pub skipped: usize,
    pub errors: usize,
    pub skipped_kinds: BTreeMap<String, usize>,
}

impl Summary {
    pub fn of(entries: &[Entry], files: usize) -> Summary {
        let mut summary = Summary {
            files,
            ..Summary::default()
        };
        for entry in entries {
            match entry.verdict() {
                Verdict::Accepted => summary.accepted += 1,
                Verdict::Patched => summary.patched += 1,
                Verdict::Rejected => summary.rejected += 1,
                Verdict::Error => summary.errors += 1,
                Verdict::Skipped => {
                    summary.skipped += 1;
                    let kind = entry.object.as_ref().map_or("", |o| o.kind.as_str());
                    *summary.skipped_kinds.entry(kind.to_owned()).or_default() += 1;
                }
            }
        }
        summary.objects = summary.accepted + summary.patched + summary.rejected;
        summary
    }

    /// 0 all accepted, 1 any rejected, 2 any input error (the check is incomplete).
    pub fn exit_code(&self) -> u8 {
        if self.errors > 0 {
            2
        } else if self.rejected > 0 {
            1
        } else {
            0
        }
    }

    /// One line, e.g. `2 files, 3 objects: 1 accepted, 1 patched, 1 rejected; 2 skipped (Service: 2); 0 errors`.
    pub fn line(&self) -> String {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let kinds: Vec<String> = self
            .skipped_kinds
            .iter()
            .map(|(kind, n)| format!("{kind}: {n}"))
            .collect();
        let skipped = if kinds.is_empty() {
            format!("{} skipped", self.skipped)
        } else {
            format!("{} skipped ({})", self.skipped, kinds.join(", "))
        };
        format!(
            "{}, {}: {} accepted, {} patched, {} rejected; {skipped}; {}",
            plural(self.files, "file"),
            plural(self.objects, "object"),
            self.accepted,
            self.patched,
            self.rejected,
            plural(self.errors, "error"),
        )
    }
}

/// Evaluates every object of every input through the door.
pub fn check_inputs(inputs: &[Input], options: &Options<'_>) -> Vec<Entry> {
    let mut entries = Vec::new();
    for input in inputs {
        let file = input.source.name();
        let text = match &input.text {
            Ok(text) => text,
            Err(e) => {
                entries.push(Entry::unreadable(&file, e.to_string()));
                continue;
            }
        };
        entries.extend(
            evaluate_text(text, options)
                .into_iter()
                .map(|outcome| match outcome {
                    Outcome::Answer(answer) => Entry::answered(&file, *answer),
                    Outcome::Problem(problem) => Entry::problem(&file, problem),
                }),
        );
    }
    entries
}
