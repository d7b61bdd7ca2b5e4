//! The scheduler's filters, modelled once: node selectors and required
//! node affinity (one requirement matcher), taints and tolerations (one
//! toleration check), and the RuntimeClass scheduling merge. The node
//! inventory check, the plan and the landing picture all call them.

pub mod requirement;
pub mod runtime_class;
pub mod taints;
