//! What node labels say about a node's OS and Windows build.

use std::collections::BTreeMap;

use crate::build::WindowsBuild;
use crate::constraint::{Builds, Os, Placement};

pub const OS_LABEL: &str = "kubernetes.io/os";
pub const BETA_OS_LABEL: &str = "beta.kubernetes.io/os";
pub const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";
/// AKS node image family, e.g. `Windows2022`, `Ubuntu`.
pub const AKS_OS_SKU_LABEL: &str = "kubernetes.azure.com/os-sku";
/// GKE Windows node pools, e.g. `2022`.
pub const GKE_WINDOWS_VERSION_LABEL: &str = "cloud.google.com/gke-windows-os-version";

/// Whether a label key tells anything about OS or build.
pub fn is_placement_label(key: &str) -> bool {
    matches!(
        key,
        OS_LABEL
            | BETA_OS_LABEL
            | WINDOWS_BUILD_LABEL
            | AKS_OS_SKU_LABEL
            | GKE_WINDOWS_VERSION_LABEL
    )
}

/// The nodes carrying `key=value`; `None` when the key says nothing about placement.
pub fn nodes_with(key: &str, value: &str) -> Option<Placement> {
    match key {
        OS_LABEL | BETA_OS_LABEL => Some(
            Os::from_label(value)
                .map(Os::placement)
                .unwrap_or_else(Placement::nowhere),
        ),
        WINDOWS_BUILD_LABEL => Some(match WindowsBuild::parse_label(value) {
            Ok(build) => Placement::windows(Builds::only(build)),
            Err(_) => Placement::nowhere(),
        }),
        AKS_OS_SKU_LABEL => Some(aks_os_sku(value)),
        GKE_WINDOWS_VERSION_LABEL => Some(match year_build(value) {
            Some(build) => Placement::windows(Builds::only(build)),
            None => Placement::windows(Builds::Any),
        }),
        _ => None,
    }
}

/// The nodes a whole nodeSelector admits, as far as placement labels go.
pub fn selector_placement(selector: &BTreeMap<String, String>) -> Placement {
    selector
        .iter()
        .filter_map(|(k, v)| nodes_with(k, v))
        .fold(Placement::anywhere(), |acc, p| acc.intersect(&p))
}

/// The nodes that carry the label key at all.
pub fn nodes_with_key(key: &str) -> Option<Placement> {
    match key {
        // Every node has an OS label.
        OS_LABEL | BETA_OS_LABEL | AKS_OS_SKU_LABEL => Some(Placement::anywhere()),
        WINDOWS_BUILD_LABEL | GKE_WINDOWS_VERSION_LABEL => Some(Placement::windows(Builds::Any)),
        _ => None,
    }
}

/// The nodes lacking the label key.
pub fn nodes_without_key(key: &str) -> Option<Placement> {
    match key {
        OS_LABEL | BETA_OS_LABEL | AKS_OS_SKU_LABEL => Some(Placement::nowhere()),
        WINDOWS_BUILD_LABEL | GKE_WINDOWS_VERSION_LABEL => Some(Placement::linux()),
        _ => None,
    }
}

fn aks_os_sku(value: &str) -> Placement {
    match value.strip_prefix("Windows") {
        Some(year) => match year_build(year) {
            Some(build) => Placement::windows(Builds::only(build)),
            None => Placement::windows(Builds::Any),
        },
        // Ubuntu, AzureLinux, CBLMariner, Mariner: all Linux images.
        None => Placement::linux(),
    }
}

/// Windows Server year to build, as AKS and GKE name their node images.
fn year_build(year: &str) -> Option<WindowsBuild> {
    match year {
        "2019" => WindowsBuild::from_release("ltsc2019"),
        "2022" => WindowsBuild::from_release("ltsc2022"),
        "2025" => WindowsBuild::from_release("ltsc2025"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_label_values() {
        assert_eq!(nodes_with(OS_LABEL, "linux"), Some(Placement::linux()));
        assert_eq!(
            nodes_with(BETA_OS_LABEL, "windows").and_then(|p| p.os()),
            Some(Os::Windows)
        );
        // Labels are case-sensitive: no node carries "Windows".
        assert_eq!(nodes_with(OS_LABEL, "Windows"), Some(Placement::nowhere()));
        assert_eq!(nodes_with("kubernetes.io/arch", "amd64"), None);
    }

    #[test]
    fn build_and_platform_labels() {
        let p = nodes_with(WINDOWS_BUILD_LABEL, "10.0.20348").unwrap();
        assert_eq!(
            p.windows.and_then(|b| b.single()),
            WindowsBuild::from_release("ltsc2022")
        );
        let sku = nodes_with(AKS_OS_SKU_LABEL, "Windows2019").unwrap();
        assert_eq!(
            sku.windows.and_then(|b| b.single()),
            WindowsBuild::from_release("ltsc2019")
        );
        assert_eq!(
            nodes_with(AKS_OS_SKU_LABEL, "Ubuntu"),
            Some(Placement::linux())
        );
        let gke = nodes_with(GKE_WINDOWS_VERSION_LABEL, "2022").unwrap();
        assert_eq!(gke.os(), Some(Os::Windows));
        assert_eq!(
            nodes_without_key(WINDOWS_BUILD_LABEL),
            Some(Placement::linux())
        );
    }
}
