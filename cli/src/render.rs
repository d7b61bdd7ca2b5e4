//! `os-placement facts render`: the ConfigMaps the facts syncer would
//! publish for what facts files hold, written to standard output. The files
//! are read by the door, as `--facts` reads them, and the ConfigMaps are
//! built by the core's builder, as the syncer builds them.

use std::io::{self, Write};

use os_placement_door::emit::value_to_yaml;
use os_placement_door::HostFacts;
use serde_json::json;

use crate::args::{RenderArgs, RenderFormat};
use crate::engine::facts_error;
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
        facts.add_text(&text).map_err(|e| facts_error(path, &e))?;
    }
    let maps = facts.published(&args.namespace);
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
