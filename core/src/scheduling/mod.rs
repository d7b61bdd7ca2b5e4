//! The scheduler's filters, modelled once: nodes, node selectors and
//! required node affinity, taints and tolerations, RuntimeClass scheduling.

pub mod taints;
