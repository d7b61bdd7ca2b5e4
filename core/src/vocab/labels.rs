//! What node labels say about a node's OS and Windows build, and which
//! values no node ever carries.

use super::ordered::StringMap;

use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{Builds, Os, Placement};

pub const OS_LABEL: &str = "kubernetes.io/os";
pub const BETA_OS_LABEL: &str = "beta.kubernetes.io/os";
pub const WINDOWS_BUILD_LABEL: &str = "node.kubernetes.io/windows-build";
/// The node's CPU architecture, set by the kubelet (`amd64`, `arm64`, ...).
pub const ARCH_LABEL: &str = "kubernetes.io/arch";
/// The node's hostname, set by the kubelet: one value per node.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// The deprecated architecture label the kubelet still sets.
pub const BETA_ARCH_LABEL: &str = "beta.kubernetes.io/arch";
/// AKS node image family, e.g. `Windows2022`, `Ubuntu`.
pub const AKS_OS_SKU_LABEL: &str = "kubernetes.azure.com/os-sku";
/// GKE Windows node pools, e.g. `2022`.
pub const GKE_WINDOWS_VERSION_LABEL: &str = "cloud.google.com/gke-windows-os-version";

/// The values of the AKS OSSKU enum (AKS API, `OSSKU`), which the node
/// label carries verbatim: case-sensitive, and no others.
const AKS_OS_SKUS: &[(&str, AksImage)] = &[
    ("Ubuntu", AksImage::Linux),
    ("Ubuntu2204", AksImage::Linux),
    ("Ubuntu2404", AksImage::Linux),
    ("AzureLinux", AksImage::Linux),
    ("AzureLinux3", AksImage::Linux),
    ("AzureContainerLinux", AksImage::Linux),
    ("CBLMariner", AksImage::Linux),
    ("Mariner", AksImage::Linux),
    ("Flatcar", AksImage::Linux),
    (
        "Windows2019",
        AksImage::Windows(Some(WindowsBuild::LTSC2019)),
    ),
    (
        "Windows2022",
        AksImage::Windows(Some(WindowsBuild::LTSC2022)),
    ),
    (
        "Windows2025",
        AksImage::Windows(Some(WindowsBuild::LTSC2025)),
    ),
    // The Windows Server Annual Channel: its build changes with the channel.
    ("WindowsAnnual", AksImage::Windows(None)),
];

/// The Windows Server versions of GKE Windows node pools (LTSC only).
const GKE_WINDOWS_VERSIONS: &[(&str, WindowsBuild)] = &[
    ("2019", WindowsBuild::LTSC2019),
    ("2022", WindowsBuild::LTSC2022),
    ("2025", WindowsBuild::LTSC2025),
];

#[derive(Debug, Clone, Copy)]
enum AksImage {
    Linux,
    Windows(Option<WindowsBuild>),
}

impl AksImage {
    fn placement(self) -> Placement {
        match self {
            AksImage::Linux => Placement::linux(),
            AksImage::Windows(Some(build)) => Placement::windows(Builds::only(build)),
            AksImage::Windows(None) => Placement::windows(Builds::Any),
        }
    }
}

/// What one known node label says about the nodes carrying it. One row per
/// label: a new platform label is one row.
struct KnownLabel {
    key: &'static str,
    /// The nodes carrying `key=value` (none for a value it never takes).
    with_value: fn(&str) -> Placement,
    /// The nodes carrying the key at all.
    with_key: fn() -> Placement,
    /// The nodes whose value, read as an integer, is greater (`true`) or
    /// less than the bound (`Gt`/`Lt`).
    compared: fn(bool, i64) -> Placement,
    /// The values nodes do carry, for messages about one they do not.
    known_values: fn(&str) -> String,
    /// A typical value, for messages.
    example: &'static str,
}

/// Every label that tells something about OS or build.
const KNOWN_LABELS: &[KnownLabel] = &[
    KnownLabel {
        key: OS_LABEL,
        with_value: os_nodes,
        with_key: Placement::anywhere,
        compared: never,
        known_values: |_| "nodes carry linux or windows, in lower case".to_string(),
        example: "linux",
    },
    KnownLabel {
        key: BETA_OS_LABEL,
        with_value: os_nodes,
        with_key: Placement::anywhere,
        compared: never,
        known_values: |_| "nodes carry linux or windows, in lower case".to_string(),
        example: "linux",
    },
    KnownLabel {
        key: WINDOWS_BUILD_LABEL,
        with_value: build_nodes,
        with_key: any_windows,
        compared: never,
        known_values: build_label_hint,
        example: "10.0.20348",
    },
    KnownLabel {
        key: AKS_OS_SKU_LABEL,
        with_value: aks_nodes,
        with_key: Placement::anywhere,
        compared: never,
        known_values: |value| {
            with_spelling(
                value,
                AKS_OS_SKUS.iter().map(|(sku, _)| *sku),
                "AKS values are case-sensitive:",
            )
        },
        example: "Windows2022",
    },
    KnownLabel {
        key: GKE_WINDOWS_VERSION_LABEL,
        with_value: gke_nodes,
        with_key: any_windows,
        compared: gke_compared,
        known_values: |value| {
            with_spelling(
                value,
                GKE_WINDOWS_VERSIONS.iter().map(|(year, _)| *year),
                "GKE Windows nodes carry",
            )
        },
        example: "2022",
    },
];

fn known(key: &str) -> Option<&'static KnownLabel> {
    KNOWN_LABELS.iter().find(|label| label.key == key)
}

fn os_nodes(value: &str) -> Placement {
    Os::from_label(value)
        .map(Os::placement)
        .unwrap_or_else(Placement::nowhere)
}

fn build_nodes(value: &str) -> Placement {
    match WindowsBuild::parse_label(value) {
        Ok(build) => Placement::windows(Builds::only(build)),
        Err(_) => Placement::nowhere(),
    }
}

fn aks_nodes(value: &str) -> Placement {
    AKS_OS_SKUS
        .iter()
        .find(|(sku, _)| *sku == value)
        .map(|(_, image)| image.placement())
        .unwrap_or_else(Placement::nowhere)
}

fn gke_nodes(value: &str) -> Placement {
    GKE_WINDOWS_VERSIONS
        .iter()
        .find(|(year, _)| *year == value)
        .map(|(_, build)| Placement::windows(Builds::only(*build)))
        .unwrap_or_else(Placement::nowhere)
}

fn any_windows() -> Placement {
    Placement::windows(Builds::Any)
}

/// Values that never parse as integers never compare.
fn never(_: bool, _: i64) -> Placement {
    Placement::nowhere()
}

fn gke_compared(greater: bool, bound: i64) -> Placement {
    let passes = |n: i64| if greater { n > bound } else { n < bound };
    let builds = GKE_WINDOWS_VERSIONS
        .iter()
        .filter(|(year, _)| year.parse::<i64>().is_ok_and(passes))
        .map(|(_, build)| *build)
        .collect();
    Placement::windows(Builds::Only(builds))
}

/// Whether a label key tells anything about OS or build.
pub fn is_placement_label(key: &str) -> bool {
    known(key).is_some()
}

/// The nodes carrying `key=value`; `None` when the key says nothing about
/// placement. A value the label never takes gives no node.
pub fn nodes_with(key: &str, value: &str) -> Option<Placement> {
    known(key).map(|label| (label.with_value)(value))
}

/// Why no node carries `key=value`, naming the values nodes do carry;
/// `None` when some node may carry it.
pub fn why_no_node_carries(key: &str, value: &str) -> Option<String> {
    let label = known(key)?;
    if !(label.with_value)(value).is_empty() {
        return None;
    }
    let known = (label.known_values)(value);
    Some(format!("no node carries {key}={value} ({known})"))
}

/// The known values, led by the right spelling when only the case differs.
fn with_spelling<'a>(value: &str, known: impl Iterator<Item = &'a str>, intro: &str) -> String {
    let known: Vec<&str> = known.collect();
    let list = known.join(", ");
    match known.iter().find(|k| k.eq_ignore_ascii_case(value)) {
        Some(right) => format!("did you mean {right}? {intro} {list}"),
        None => format!("{intro} {list}"),
    }
}

/// What is wrong with a build label value, and the build of a release
/// name written in its place.
fn build_label_hint(value: &str) -> String {
    let release =
        WindowsBuild::from_release(value).map(|build| format!("{value} is build {build}, "));
    let problem = match WindowsBuild::parse_label(value) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    format!("{}{problem}", release.unwrap_or_default()).replace("; ", ", ")
}

/// The nodes whose `key` label, read as an integer, is greater (or less)
/// than `bound`: `Gt`/`Lt` as the scheduler applies them
/// (apimachinery labels.Requirement.Matches). `None` when the key says
/// nothing about placement.
pub fn nodes_compared(key: &str, greater: bool, bound: i64) -> Option<Placement> {
    known(key).map(|label| (label.compared)(greater, bound))
}

/// Why `key Gt/Lt bound` matches no node; `None` when some node may match.
pub fn why_no_node_compares(key: &str, greater: bool, bound: i64) -> Option<String> {
    let label = known(key)?;
    if !(label.compared)(greater, bound).is_empty() {
        return None;
    }
    let op = if greater { "Gt" } else { "Lt" };
    let why = if key == GKE_WINDOWS_VERSION_LABEL {
        let years: Vec<&str> = GKE_WINDOWS_VERSIONS.iter().map(|(y, _)| *y).collect();
        format!("GKE Windows nodes carry {}", years.join(", "))
    } else {
        format!(
            "{op} compares integers, and {key} values such as {} are not integers",
            label.example
        )
    };
    Some(format!("{key} {op} {bound} matches no node ({why})"))
}

/// The nodes a whole nodeSelector admits, as far as placement labels go.
pub fn selector_placement(selector: &StringMap) -> Placement {
    selector
        .iter()
        .filter_map(|(k, v)| nodes_with(k, v))
        .fold(Placement::anywhere(), |acc, p| acc.intersect(&p))
}

/// The nodes that carry the label key at all.
pub fn nodes_with_key(key: &str) -> Option<Placement> {
    known(key).map(|label| (label.with_key)())
}

/// The nodes lacking the label key: those the key's nodes leave out.
pub fn nodes_without_key(key: &str) -> Option<Placement> {
    nodes_with_key(key).map(|with| {
        if with == Placement::anywhere() {
            Placement::nowhere()
        } else {
            Placement::linux()
        }
    })
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

    #[test]
    fn values_no_node_carries() {
        for (key, value) in [
            (AKS_OS_SKU_LABEL, "windows2022"),
            (AKS_OS_SKU_LABEL, "Windows2016"),
            (GKE_WINDOWS_VERSION_LABEL, "ltsc2022"),
            (OS_LABEL, "Linux"),
            (WINDOWS_BUILD_LABEL, "17763"),
        ] {
            assert_eq!(
                nodes_with(key, value),
                Some(Placement::nowhere()),
                "{value}"
            );
            let why = why_no_node_carries(key, value).unwrap();
            assert!(
                why.starts_with(&format!("no node carries {key}={value} (")),
                "{why}"
            );
        }
        // Values some node carries, and keys that say nothing about placement.
        assert_eq!(why_no_node_carries(AKS_OS_SKU_LABEL, "Windows2022"), None);
        assert_eq!(why_no_node_carries(GKE_WINDOWS_VERSION_LABEL, "2019"), None);
        assert_eq!(why_no_node_carries("example.com/pool", "x"), None);
    }

    #[test]
    fn integer_comparisons() {
        // Never integers: Gt/Lt match nothing whatever the bound.
        for key in [
            OS_LABEL,
            BETA_OS_LABEL,
            WINDOWS_BUILD_LABEL,
            AKS_OS_SKU_LABEL,
        ] {
            assert_eq!(
                nodes_compared(key, true, i64::MIN),
                Some(Placement::nowhere())
            );
            assert!(why_no_node_compares(key, false, 0).is_some());
        }
        let gke = |greater, bound| nodes_compared(GKE_WINDOWS_VERSION_LABEL, greater, bound);
        assert_eq!(
            gke(false, 2020)
                .and_then(|p| p.windows)
                .and_then(|b| b.single()),
            WindowsBuild::from_release("ltsc2019")
        );
        assert_eq!(gke(true, 2018).and_then(|p| p.os()), Some(Os::Windows));
        assert_eq!(gke(true, 2025), Some(Placement::nowhere()));
        assert_eq!(gke(false, 2019), Some(Placement::nowhere()));
        assert_eq!(
            why_no_node_compares(GKE_WINDOWS_VERSION_LABEL, true, 2022),
            None
        );
        assert_eq!(nodes_compared("example.com/gpus", true, 1), None);
    }
}
