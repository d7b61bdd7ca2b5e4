//! The settings completed with facts from the cluster: RuntimeClasses the
//! settings do not declare, and the OS taints read from the nodes. The
//! decision and the landing picture both start from them.

use std::borrow::Cow;

use crate::input::facts::{Facts, RuntimeClassFacts};
use crate::input::settings::{RuntimeClass, Scheduling, Settings};
use crate::scheduling::taints::os_taint;
use crate::vocab::constraint::Os;

/// The settings the rules use for this request. The settings' own
/// RuntimeClasses win, as they did before the cluster was read.
pub fn complete<'s>(settings: &'s Settings, facts: &Facts) -> Cow<'s, Settings> {
    let adds_class = facts.runtime_classes.iter().any(|(name, found)| {
        matches!(found, RuntimeClassFacts::Found(_)) && settings.runtime_class(name).is_none()
    });
    if !adds_class && !settings.taints_from_nodes() {
        // Image platforms and a node list alone change no setting.
        return Cow::Borrowed(settings);
    }
    let mut completed = settings.clone();
    for (name, found) in &facts.runtime_classes {
        if let RuntimeClassFacts::Found(rc) = found {
            if settings.runtime_class(name).is_none() {
                completed.runtime_classes.push(RuntimeClass {
                    name: name.clone(),
                    scheduling: Scheduling {
                        node_selector: rc.scheduling.node_selector.clone(),
                        tolerations: rc.scheduling.tolerations.clone(),
                    },
                    handler: Some(rc.handler.clone()),
                    isolation: rc.isolation,
                });
            }
        }
    }
    // Unread nodes leave `fromNodes` as it is: no taint, and a warning.
    if let Some(nodes) = facts.inventory(settings) {
        let nodes: Vec<_> = nodes.iter().filter(|n| n.usable()).cloned().collect();
        if settings.windows_taint.reads_nodes() {
            completed.windows_taint = os_taint(&nodes, Os::Windows).into();
        }
        if settings.linux_taint.reads_nodes() {
            completed.linux_taint = os_taint(&nodes, Os::Linux).into();
        }
    }
    Cow::Owned(completed)
}
