//! Workloads with `mutate`: the nodeSelector entries the policy added at an
//! earlier admission are its own; they are judged afresh, moved when they
//! clash (an image upgrade), and recorded on the object.

use serde_json::Value;

use crate::admission::decide::decide;
use crate::admission::decision::{planned, Decision};
use crate::admission::needs::ReadPod;
use crate::input::facts::Facts;
use crate::input::review::Review;
use crate::input::settings::Settings;
use crate::placement::ownership::{
    annotation_op, owned_entries, reconcile, record_after, without, Owned,
};
use crate::vocab::kinds::Kind;

/// A workload with `mutate`: the policy's own nodeSelector entries from an
/// earlier admission (under `selector`) are judged afresh and recorded.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide_owning<'a>(
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
        .collect();
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
        ..planned(ops, decision.warnings)
    }
}
