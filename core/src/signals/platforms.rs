//! Where an image runs, from the platforms its registry lists.

use crate::input::facts::Platform;
use crate::vocab::build::WindowsBuild;
use crate::vocab::constraint::{BuildSet, Builds, Placement};

/// Where an image may run, from its platforms: `None` when they name
/// neither Linux nor Windows. Windows entries count with their build, and
/// the hosts that run it (containerd matches `os.version` to the host's
/// build: containerd pkg/platforms, platforms_windows.go); with Hyper-V
/// isolation every newer host runs it too.
pub fn platforms_placement(platforms: &[Platform], hyperv: bool) -> Option<Placement> {
    let linux = platforms.iter().any(|p| p.os == "linux");
    let windows: Vec<&Platform> = platforms.iter().filter(|p| p.os == "windows").collect();
    if !linux && windows.is_empty() {
        return None;
    }
    let mut placement = if linux {
        Placement::linux()
    } else {
        Placement::nowhere()
    };
    if !windows.is_empty() {
        let builds: Option<Vec<WindowsBuild>> = windows
            .iter()
            .map(|p| {
                p.os_version
                    .as_deref()
                    .and_then(WindowsBuild::parse_version)
            })
            .collect();
        let hosts = match builds {
            // A Windows entry without a build may run on any host.
            None => Builds::Any,
            Some(builds) => builds
                .into_iter()
                .map(|b| hosts_of(b, hyperv))
                .fold(Builds::Only(BuildSet::new()), |acc, h| acc.union(&h)),
        };
        placement = placement.union(&Placement::windows(hosts));
    }
    Some(placement)
}

/// Node builds that run a container of `build`.
pub fn hosts_of(build: WindowsBuild, hyperv: bool) -> Builds {
    if hyperv {
        // Every older build is excluded: newer builds, known or not, run it.
        Builds::Except(
            crate::vocab::build::known_builds()
                .into_iter()
                .filter(|b| *b < build)
                .collect(),
        )
    } else {
        Builds::compatible_hosts(build)
    }
}
