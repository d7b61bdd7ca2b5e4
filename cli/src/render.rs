//! `os-placement facts render`: the ConfigMaps the facts syncer would
//! publish for what facts files hold, written to standard output. The files
//! are read by the door, as `--facts` reads them, and the ConfigMaps are
//! built by the core's builder, as the syncer builds them.

use std::io::{self, Write};

use os_placement_core::published;
use os_placement_door::emit::value_to_yaml;
use os_placement_door::HostFacts;
use serde_json::{json, Value};

use crate::args::{RenderArgs, RenderFormat};
use crate::error::CliError;
use crate::inputs::read_path_within;

/// The largest facts file read: `kubectl get nodes -o json` of a large
/// cluster, with the nodes' status, runs to hundreds of megabytes.
const MAX_FACTS_BYTES: u64 = 1024 * 1024 * 1024;

/// Reads the files, writes the ConfigMaps.
pub fn run(args: &RenderArgs) -> Result<u8, CliError> {
    let mut facts = HostFacts::default();
    for path in &args.files {
        let text = read_path_within(path, MAX_FACTS_BYTES)?;
        facts.add_text(&text).map_err(|e| {
            CliError::Facts(format!(
                "{}:{}:{}: {}",
                path.display(),
                e.at.line,
                e.at.column,
                e.message
            ))
        })?;
    }
    let maps = config_maps(&facts, &args.namespace);
    let mut out = io::stdout().lock();
    match args.output {
        RenderFormat::Yaml => {
            for map in &maps {
                writeln!(out, "---")?;
                out.write_all(value_to_yaml(map).as_bytes())?;
            }
        }
        RenderFormat::Json => {
            let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": maps});
            serde_json::to_writer_pretty(&mut out, &list).map_err(io::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(0)
}

/// The ConfigMaps publishing what `facts` holds in `namespace`.
pub fn config_maps(facts: &HostFacts, namespace: &str) -> Vec<Value> {
    let sources = facts.render_sources();
    published::config_maps(
        &published::Sources {
            nodes: sources.nodes.as_deref(),
            runtime_classes: sources.runtime_classes.as_ref(),
            images: &sources.images,
            resolved_at: None,
        },
        namespace,
    )
}
