//! `make bench-server`'s Kubernetes API: the fault suite's fake API server
//! (discovery, LIST, WATCH) holding an empty cluster, so policy-server
//! answers os-placement's calls as in a cluster with nothing published.
//! Writes a kubeconfig to the path given, then serves until its standard
//! input closes.

use std::io::Read;
use std::process::ExitCode;

use os_placement_e2e::faults::api::FakeApi;

fn main() -> ExitCode {
    let Some(kubeconfig) = std::env::args_os().nth(1) else {
        eprintln!("usage: os-placement-fake-api KUBECONFIG_PATH (serves until stdin closes)");
        return ExitCode::from(2);
    };
    let api = match FakeApi::start(Vec::new()) {
        Ok(api) => api,
        Err(e) => {
            eprintln!("os-placement-fake-api: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = api.kubeconfig(std::path::Path::new(&kubeconfig)) {
        eprintln!("os-placement-fake-api: {e}");
        return ExitCode::FAILURE;
    }
    println!("{}", api.url());
    // Serve until the script closes our standard input (or kills us).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    ExitCode::SUCCESS
}
