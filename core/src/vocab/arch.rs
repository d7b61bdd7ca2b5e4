//! CPU architectures as Go and Kubernetes name them (`GOARCH`: the kubelet's
//! `kubernetes.io/arch` label and the OCI image index's
//! `platform.architecture` use the same words), and which architectures a
//! node filter allows.

use crate::vocab::ordered::SortedSet;

/// A set of architecture names, e.g. `{amd64, arm64}`.
pub type ArchSet = SortedSet<String>;

/// The architectures a pod's own fields let it land on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchFilter {
    /// Any architecture.
    Any,
    /// These only.
    Only(ArchSet),
    /// Any but these.
    Except(ArchSet),
}

impl ArchFilter {
    /// Whether `arch` passes.
    pub fn allows(&self, arch: &str) -> bool {
        match self {
            ArchFilter::Any => true,
            ArchFilter::Only(set) => set.contains(arch),
            ArchFilter::Except(set) => !set.contains(arch),
        }
    }

    /// What both filters allow.
    pub fn intersect(&self, other: &ArchFilter) -> ArchFilter {
        match (self, other) {
            (ArchFilter::Any, f) | (f, ArchFilter::Any) => f.clone(),
            (ArchFilter::Only(a), f) | (f, ArchFilter::Only(a)) => {
                ArchFilter::Only(a.iter().filter(|x| f.allows(x)).cloned().collect())
            }
            (ArchFilter::Except(a), ArchFilter::Except(b)) => ArchFilter::Except(a.union(b)),
        }
    }

    /// What either filter allows.
    pub fn union(&self, other: &ArchFilter) -> ArchFilter {
        match (self, other) {
            (ArchFilter::Any, _) | (_, ArchFilter::Any) => ArchFilter::Any,
            (ArchFilter::Only(a), ArchFilter::Only(b)) => ArchFilter::Only(a.union(b)),
            (ArchFilter::Except(e), ArchFilter::Only(o))
            | (ArchFilter::Only(o), ArchFilter::Except(e)) => {
                ArchFilter::Except(e.iter().filter(|x| !o.contains(*x)).cloned().collect())
            }
            (ArchFilter::Except(a), ArchFilter::Except(b)) => ArchFilter::Except(a.intersection(b)),
        }
    }
}

/// The architecture a Docker Hub official-image namespace stands for, as
/// docker-library/official-images documents them ("Architectures other
/// than amd64?": `amd64/`, `arm32v5/` to `arm32v7/`, `arm64v8/`, `i386/`,
/// `mips64le/`, `ppc64le/`, `riscv64/`, `s390x/`, `winamd64/`).
const HUB_NAMESPACES: &[(&str, &str)] = &[
    ("amd64", "amd64"),
    ("arm32v5", "arm"),
    ("arm32v6", "arm"),
    ("arm32v7", "arm"),
    ("arm64v8", "arm64"),
    ("i386", "386"),
    ("mips64le", "mips64le"),
    ("ppc64le", "ppc64le"),
    ("riscv64", "riscv64"),
    ("s390x", "s390x"),
    ("winamd64", "amd64"),
];

/// The architecture an image reference names by its Docker Hub namespace
/// (`arm64v8/nginx`, `docker.io/arm64v8/nginx:1.27`); `None` for anything
/// else.
pub fn hub_namespace_arch(image: &str) -> Option<&'static str> {
    let path = image
        .strip_prefix("docker.io/")
        .or_else(|| image.strip_prefix("index.docker.io/"))
        .unwrap_or(image);
    let (namespace, rest) = path.split_once('/')?;
    // A registry host (with a dot or a port) is not a Hub namespace.
    if namespace.contains(['.', ':']) || rest.contains('/') {
        return None;
    }
    HUB_NAMESPACES
        .iter()
        .find(|(ns, _)| *ns == namespace)
        .map(|(_, arch)| *arch)
}

/// The architectures clusters commonly offer for an OS when the nodes are
/// not read: Linux on amd64 and arm64 (Graviton, Ampere), Windows on amd64.
pub fn usual_architectures(windows: bool) -> ArchSet {
    let names: &[&str] = if windows {
        &["amd64"]
    } else {
        &["amd64", "arm64"]
    };
    names.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> ArchSet {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hub_namespaces_name_their_architecture() {
        assert_eq!(hub_namespace_arch("arm64v8/nginx:1.27"), Some("arm64"));
        assert_eq!(hub_namespace_arch("docker.io/arm32v7/alpine"), Some("arm"));
        assert_eq!(hub_namespace_arch("amd64/busybox"), Some("amd64"));
        // Not Hub namespaces: a registry host, a deeper path, an ordinary owner.
        assert_eq!(hub_namespace_arch("registry.example.com/arm64v8"), None);
        assert_eq!(hub_namespace_arch("arm64v8/team/app"), None);
        assert_eq!(hub_namespace_arch("library/nginx"), None);
        assert_eq!(hub_namespace_arch("nginx"), None);
    }

    #[test]
    fn filters_combine_as_sets() {
        let only = ArchFilter::Only(set(&["amd64", "arm64"]));
        let except = ArchFilter::Except(set(&["arm64"]));
        assert_eq!(only.intersect(&except), ArchFilter::Only(set(&["amd64"])));
        assert_eq!(only.union(&except), ArchFilter::Except(set(&[])));
        assert!(ArchFilter::Any.allows("s390x"));
        assert!(!except.allows("arm64"));
    }
}
