//! The policy's own code run natively over this crate's host: its fact
//! gathering (`os_placement_policy::facts`) and the core's decision on a
//! whole request, which the module must match.

use os_placement_core::{Admission, Decision, Settings};
use serde_json::Value;

use crate::host::HostCalls;

/// The policy's host, answered by `host`.
pub(crate) struct Through<'a>(pub(crate) &'a dyn HostCalls);

impl os_placement_policy::facts::Host for Through<'_> {
    fn call(
        &self,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, os_placement_policy::facts::HostError> {
        self.0
            .call("kubewarden", namespace, operation, payload)
            .map_err(|e| os_placement_policy::facts::HostError(e.0))
    }
}

/// The core's decision on the whole `request` (every field parsed), with
/// facts gathered by the policy's own code through `host`: what the module,
/// which parses only the fields the rules read, must answer.
pub fn whole_request_decision(
    request: &Value,
    settings: &Settings,
    host: &dyn HostCalls,
) -> Decision {
    let admission = Admission::new(request, settings).without_signals();
    let facts = os_placement_policy::facts::gather(admission.needs(), &Through(host));
    admission.decide(&facts)
}
