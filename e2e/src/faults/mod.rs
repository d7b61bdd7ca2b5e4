//! Fault injection through the real policy-server: registries that hang,
//! slow down, reset, fail or lie, and scripted ones that redirect,
//! challenge or serve oversized answers ([`registry`]), a small Kubernetes API
//! server ([`api`]) for what policy-server's kube client and the facts
//! syncer ask, concurrent admission requests with deadlines ([`load`]),
//! and the report table ([`Row`]). Everything listens on 127.0.0.1.

pub mod api;
pub mod http;
pub mod load;
pub mod registry;

use std::fmt::Write as _;
use std::time::Duration;

use load::{Need, Outcome, Probe, Times};

/// One line of the report: a fault class under one setting.
#[derive(Debug, Clone)]
pub struct Row {
    /// The fault, e.g. `registry hangs`.
    pub class: String,
    /// `registry` (admission-time lookups) or `cluster` (published facts).
    pub mode: &'static str,
    /// What was measured.
    pub probes: Vec<Probe>,
    /// Answer times of requests needing no lookup with no fault, for comparison.
    pub baseline: Option<Times>,
}

/// A plain request counts as delayed past this much over the baseline's p99.
pub const DELAY_MARGIN: Duration = Duration::from_millis(500);

impl Row {
    /// Times of the requests needing `need`.
    pub fn times(&self, need: Need) -> Times {
        Times::of(&self.probes, need)
    }

    /// Whether requests needing no lookup took longer than without a fault.
    pub fn others_delayed(&self) -> bool {
        let plain = self.times(Need::Plain);
        let limit = self
            .baseline
            .and_then(|b| b.p99)
            .map_or(DELAY_MARGIN, |p99| p99 + DELAY_MARGIN);
        plain.unanswered > 0 || plain.max.is_none_or(|max| max > limit)
    }

    /// The verdict and first warning (or message) of the lookup requests,
    /// as most of them answered.
    pub fn lookup_answer(&self) -> String {
        let answered = self
            .probes
            .iter()
            .filter(|p| p.need == Need::Lookup)
            .find_map(|p| match &p.outcome {
                Outcome::Answered {
                    allowed,
                    warnings,
                    message,
                } => {
                    let verdict = if *allowed { "allowed" } else { "rejected" };
                    let said = warnings
                        .first()
                        .or(message.as_ref())
                        .map_or("no warning".to_string(), |w| short(w, 110));
                    Some(format!("{verdict}: {said}"))
                }
                _ => None,
            });
        answered.unwrap_or_else(|| "no answer".to_string())
    }
}

/// `text`, cut to `chars` characters.
fn short(text: &str, chars: usize) -> String {
    let cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// `0.012 s`, or `> deadline` for an unanswered request.
fn seconds(time: Option<Duration>, deadline: Duration) -> String {
    match time {
        Some(t) => format!("{:.3}", t.as_secs_f64()),
        None => format!("> {}", deadline.as_secs()),
    }
}

/// The report as a Markdown table.
pub fn table(rows: &[Row], deadline: Duration) -> String {
    let mut out = String::from(
        "| fault | imageFacts | lookup p50 / p99 / max (s) | lookup answer | no-lookup p50 / p99 / max (s) | others delayed |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let (lookup, plain) = (row.times(Need::Lookup), row.times(Need::Plain));
        let triple = |t: Times| {
            let unanswered = if t.unanswered > 0 {
                format!(" ({} of {} unanswered)", t.unanswered, t.count)
            } else {
                String::new()
            };
            format!(
                "{} / {} / {}{unanswered}",
                seconds(t.p50, deadline),
                seconds(t.p99, deadline),
                seconds(t.max, deadline)
            )
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            row.class,
            row.mode,
            triple(lookup),
            row.lookup_answer().replace('|', "\\|"),
            triple(plain),
            if row.others_delayed() { "yes" } else { "no" }
        );
    }
    out
}
