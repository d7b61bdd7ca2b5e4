//! `pinArchitecture`: a pod whose images are built for fewer architectures
//! than the cluster's nodes of its OS offer is pinned to those it runs on —
//! `kubernetes.io/arch` in the nodeSelector for one, a required
//! node-affinity `In` for several — so it never lands where its containers
//! fail with `exec format error`.

use crate::input::facts::Facts;
use crate::input::node::Node;
use crate::input::pod::PodView;
use crate::input::settings::Settings;
use crate::placement::missing::{Missing, Plan};
use crate::signals::architecture::{join, Architectures};
use crate::vocab::arch::{usual_architectures, ArchSet};
use crate::vocab::constraint::Os;
use crate::vocab::diagnostics::Code;
use crate::vocab::labels::ARCH_LABEL;

/// What architecture pinning adds to the plan: a violation when no node
/// can run the pod's images together, else the pin it lacks.
pub(crate) fn arch_missing(
    pod: &PodView<'_>,
    os: Os,
    facts: &Facts,
    settings: &Settings,
    plan: &mut Plan,
) -> Option<Missing> {
    let archs = Architectures::read(pod, Some(os), facts);
    if let Some(conflict) = archs.conflict() {
        plan.violations.push(conflict);
        return None;
    }
    let runnable = archs.runnable()?;
    let inventory = facts.inventory(settings);
    let offered = offered(inventory.as_deref(), os);
    let reachable: ArchSet = offered
        .iter()
        .filter(|a| archs.selected.allows(a))
        .cloned()
        .collect();
    if reachable.is_subset(&runnable) {
        return None;
    }
    let mut fits: ArchSet = reachable.intersection(&runnable);
    if fits.is_empty() {
        // No node runs them: pin anyway, so the pod waits for such a node
        // rather than fails on the wrong one (the inventory check warns).
        fits = runnable
            .iter()
            .filter(|a| archs.selected.allows(a))
            .cloned()
            .collect();
    }
    let why = format!(
        "the pod's images run on {} only, but the pod can land on {} nodes",
        join(&runnable),
        join(&reachable)
    );
    Some(pin(fits, why))
}

fn pin(fits: ArchSet, why: String) -> Missing {
    let mut values: Vec<String> = fits.into_iter().collect();
    if values.len() == 1 {
        Missing::Selector {
            key: ARCH_LABEL,
            value: values.pop().unwrap_or_default(),
            code: Code::MissingArchPin,
            why,
        }
    } else {
        Missing::Affinity {
            key: ARCH_LABEL,
            values,
            code: Code::MissingArchPin,
            why,
        }
    }
}

/// The architectures the cluster's nodes of `os` offer: from the node
/// inventory when it was read and names them, else the usual ones.
pub(crate) fn offered(nodes: Option<&[Node]>, os: Os) -> ArchSet {
    let windows = os == Os::Windows;
    let listed: ArchSet = nodes
        .into_iter()
        .flatten()
        .filter(|n| n.usable() && n.is_windows() == windows)
        .filter_map(|n| n.label(ARCH_LABEL).map(|a| a.into_owned()))
        .collect();
    if listed.is_empty() {
        usual_architectures(windows)
    } else {
        listed
    }
}
