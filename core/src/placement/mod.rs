//! Where the pod should go and what to add so it gets there: the settings
//! completed with cluster facts, the plan,
//! the pod's own node choices, the Windows API rules, ownership of added
//! entries, the node inventory check and the landing picture.

pub mod architecture;
pub mod builds;
pub mod cluster_settings;
pub mod inventory;
pub mod landing;
pub mod missing;
pub mod ops;
pub mod ownership;
pub mod plan;
pub mod selection;
pub mod windows_rules;
