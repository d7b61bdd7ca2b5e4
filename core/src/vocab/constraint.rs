//! Which nodes a pod may land on, reduced to what matters here: the OS,
//! and for Windows nodes the build.

use std::fmt;

use crate::vocab::build::WindowsBuild;
use crate::vocab::ordered::SortedSet;

/// A set of Windows builds, in ascending order. A handful of builds exist,
/// so a sorted vector serves better than a B-tree: sets are built, met and
/// dropped many times per pod, and a vector has no nodes to allocate or walk.
pub type BuildSet = SortedSet<WindowsBuild>;

/// Windows builds a pod may land on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builds {
    /// Every build, known or not.
    Any,
    /// These builds only.
    Only(BuildSet),
    /// Every build but these.
    Except(BuildSet),
}

impl Builds {
    /// Exactly one build.
    pub fn only(build: WindowsBuild) -> Builds {
        Builds::Only(BuildSet::from_iter([build]))
    }

    /// The node builds that run a container image of `build`.
    pub fn compatible_hosts(build: WindowsBuild) -> Builds {
        Builds::Only(build.compatible_hosts().into_iter().collect())
    }

    /// Whether no build is allowed.
    pub fn is_empty(&self) -> bool {
        matches!(self, Builds::Only(set) if set.is_empty())
    }

    /// Whether every build in `self` is also in `other`.
    pub fn is_within(&self, other: &Builds) -> bool {
        self.intersect(&other.complement()).is_empty()
    }

    /// Whether `build` is allowed.
    pub fn allows(&self, build: WindowsBuild) -> bool {
        match self {
            Builds::Any => true,
            Builds::Only(set) => set.contains(&build),
            Builds::Except(set) => !set.contains(&build),
        }
    }

    /// The single build allowed, if the set pins exactly one.
    pub fn single(&self) -> Option<WindowsBuild> {
        match self {
            Builds::Only(set) if set.len() == 1 => set.iter().next().copied(),
            _ => None,
        }
    }

    /// The builds both allow.
    pub fn intersect(&self, other: &Builds) -> Builds {
        use Builds::*;
        match (self, other) {
            (Any, x) | (x, Any) => x.clone(),
            (Only(a), Only(b)) => Only(a.intersection(b)),
            (Only(a), Except(b)) | (Except(b), Only(a)) => Only(a.difference(b)),
            (Except(a), Except(b)) => Except(a.union(b)),
        }
    }

    /// The builds either allows.
    pub fn union(&self, other: &Builds) -> Builds {
        use Builds::*;
        match (self, other) {
            (Any, _) | (_, Any) => Any,
            (Only(a), Only(b)) => Only(a.union(b)),
            (Only(a), Except(b)) | (Except(b), Only(a)) => Except(b.difference(a)),
            (Except(a), Except(b)) => Except(a.intersection(b)),
        }
    }

    /// The builds this does not allow.
    pub fn complement(&self) -> Builds {
        match self {
            Builds::Any => Builds::Only(BuildSet::new()),
            Builds::Only(set) => Builds::Except(set.clone()),
            Builds::Except(set) => Builds::Only(set.clone()),
        }
    }
}

impl fmt::Display for Builds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |set: &BuildSet| {
            set.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        };
        match self {
            Builds::Any => f.write_str("any build"),
            Builds::Only(set) => write!(f, "build {}", list(set)),
            Builds::Except(set) => write!(f, "any build but {}", list(set)),
        }
    }
}

/// The nodes a pod may land on: Linux or not, and Windows of which builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Whether Linux nodes are allowed.
    pub linux: bool,
    /// `None`: no Windows node.
    pub windows: Option<Builds>,
}

impl Placement {
    /// Every node.
    pub fn anywhere() -> Placement {
        Placement {
            linux: true,
            windows: Some(Builds::Any),
        }
    }

    /// No node.
    pub fn nowhere() -> Placement {
        Placement {
            linux: false,
            windows: None,
        }
    }

    /// Linux nodes only.
    pub fn linux() -> Placement {
        Placement {
            linux: true,
            windows: None,
        }
    }

    /// Windows nodes of these builds only.
    pub fn windows(builds: Builds) -> Placement {
        Placement {
            linux: false,
            windows: Some(builds),
        }
        .normalised()
    }

    fn normalised(mut self) -> Placement {
        if self.windows.as_ref().is_some_and(Builds::is_empty) {
            self.windows = None;
        }
        self
    }

    /// Whether no node is allowed.
    pub fn is_empty(&self) -> bool {
        !self.linux && self.windows.is_none()
    }

    /// Whether some Windows node is allowed.
    pub fn allows_windows(&self) -> bool {
        self.windows.is_some()
    }

    /// Whether the OS alone is compatible, ignoring builds.
    pub fn os_overlaps(&self, other: &Placement) -> bool {
        (self.linux && other.linux) || (self.windows.is_some() && other.windows.is_some())
    }

    /// The nodes both allow.
    pub fn intersect(&self, other: &Placement) -> Placement {
        Placement {
            linux: self.linux && other.linux,
            windows: match (&self.windows, &other.windows) {
                (Some(a), Some(b)) => Some(a.intersect(b)),
                _ => None,
            },
        }
        .normalised()
    }

    /// The nodes either allows.
    pub fn union(&self, other: &Placement) -> Placement {
        Placement {
            linux: self.linux || other.linux,
            windows: match (&self.windows, &other.windows) {
                (Some(a), Some(b)) => Some(a.union(b)),
                (Some(a), None) | (None, Some(a)) => Some(a.clone()),
                (None, None) => None,
            },
        }
        .normalised()
    }

    /// The OS, when only one is possible.
    pub fn os(&self) -> Option<Os> {
        match (self.linux, self.windows.is_some()) {
            (true, false) => Some(Os::Linux),
            (false, true) => Some(Os::Windows),
            _ => None,
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.linux, &self.windows) {
            (false, None) => f.write_str("no node"),
            (true, None) => f.write_str("Linux"),
            (false, Some(Builds::Any)) => f.write_str("Windows"),
            (false, Some(b)) => write!(f, "Windows {b}"),
            (true, Some(Builds::Any)) => f.write_str("Linux or Windows"),
            (true, Some(b)) => write!(f, "Linux or Windows {b}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// An operating system, as the `kubernetes.io/os` label names it.
pub enum Os {
    /// `linux`
    Linux,
    /// `windows`
    Windows,
}

impl Os {
    /// The value of the `kubernetes.io/os` label and of `spec.os.name`.
    pub fn label(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }

    /// The OS of a label value; case-sensitive, as labels are.
    pub fn from_label(value: &str) -> Option<Os> {
        match value {
            "linux" => Some(Os::Linux),
            "windows" => Some(Os::Windows),
            _ => None,
        }
    }

    /// The nodes of this OS (any Windows build).
    pub fn placement(self) -> Placement {
        match self {
            Os::Linux => Placement::linux(),
            Os::Windows => Placement::windows(Builds::Any),
        }
    }
}

impl fmt::Display for Os {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Os::Linux => "Linux",
            Os::Windows => "Windows",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(n: u32) -> WindowsBuild {
        WindowsBuild::new(n)
    }

    #[test]
    fn build_sets_stay_sorted_and_free_of_repeats() {
        let set: BuildSet = [b(3), b(1), b(2), b(3)].into_iter().collect();
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), [b(1), b(2), b(3)]);
        assert_eq!((set.len(), set.first()), (3, Some(&b(1))));
        assert!(set.contains(&b(2)) && !set.contains(&b(4)));
        let other: BuildSet = [b(4), b(2)].into_iter().collect();
        let listed = |s: BuildSet| s.into_iter().collect::<Vec<_>>();
        assert_eq!(listed(set.intersection(&other)), [b(2)]);
        assert_eq!(listed(set.difference(&other)), [b(1), b(3)]);
        assert_eq!(listed(set.union(&other)), [b(1), b(2), b(3), b(4)]);
        let mut grown = BuildSet::new();
        assert!(grown.insert(b(5)) && !grown.insert(b(5)));
    }

    #[test]
    fn build_sets_intersect_and_union() {
        let only_a = Builds::only(b(17763));
        let only_b = Builds::only(b(20348));
        assert!(only_a.intersect(&only_b).is_empty());
        assert_eq!(only_a.intersect(&Builds::Any), only_a);
        let except_a = only_a.complement();
        assert!(except_a.intersect(&only_a).is_empty());
        assert_eq!(except_a.intersect(&only_b), only_b);
        assert_eq!(only_a.union(&only_b).single(), None);
        assert_eq!(except_a.union(&only_a), Builds::Except(BuildSet::new()));
        assert!(except_a.union(&only_a).allows(b(1)));
    }

    #[test]
    fn placements_combine() {
        let win_2019 = Placement::windows(Builds::only(b(17763)));
        let win_2022 = Placement::windows(Builds::only(b(20348)));
        assert!(win_2019.intersect(&win_2022).is_empty());
        assert!(win_2019.os_overlaps(&win_2022));
        assert!(Placement::linux().intersect(&win_2019).is_empty());
        assert!(!Placement::linux().os_overlaps(&win_2019));
        let either = Placement::linux().union(&win_2022);
        assert_eq!(either.os(), None);
        assert_eq!(either.intersect(&win_2022).os(), Some(Os::Windows));
        assert_eq!(
            Placement::anywhere().intersect(&Placement::linux()).os(),
            Some(Os::Linux)
        );
        assert_eq!(either.to_string(), "Linux or Windows build 10.0.20348");
    }
}
