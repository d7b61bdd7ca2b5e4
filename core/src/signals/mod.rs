//! What the pod's fields and images say about the nodes it needs: image
//! classification, the meaning of selectors and affinity, the resolution.

pub mod affinity;
pub mod architecture;
pub mod image;
pub mod pending;
pub mod platforms;
pub mod report;
pub mod resolve;
