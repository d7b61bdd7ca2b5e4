//! `--lookup`: the platforms of the images the objects need, read from
//! their registries when the command runs, with the limits and credentials
//! of `facts sync` (`os_placement_registry`). The images asked for are those the
//! policy would ask its host for (`needs_request`), so the answer is the
//! one the policy gives once the facts syncer has published them.

use os_placement_core::{needs_request, ImageFacts};
use os_placement_door::{objects, read_stream, request_for, Found, Options};

use crate::error::CliError;
use crate::inputs::Input;
use os_placement_registry::RegistryArgs;
use os_placement_registry::Resolver;

/// The distinct images the policy would look up for the objects of
/// `inputs`, in the order first needed; unreadable documents add none.
pub fn wanted_images(inputs: &[Input], options: &Options<'_>) -> Vec<String> {
    let mut wanted: Vec<String> = Vec::new();
    let texts = inputs.iter().filter_map(|input| input.text.as_ref().ok());
    for document in texts.flat_map(|text| read_stream(text)).flatten() {
        for found in objects(&document) {
            let Found::Object(subject) = found else {
                continue;
            };
            let request = request_for(&options.call(&subject));
            for image in needs_request(&request, options.settings).images {
                if !wanted.contains(&image) {
                    wanted.push(image);
                }
            }
        }
    }
    wanted
}

/// The facts of each image from its registry; a failed lookup is a fact
/// too (the policy warns about it), so only a runtime that cannot start
/// is an error.
pub fn resolve(
    images: &[String],
    args: &RegistryArgs,
) -> Result<Vec<(String, ImageFacts)>, CliError> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    // Err only when a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let resolver = Resolver::new(args);
    let found = runtime.block_on(resolver.resolve_all(images));
    let failed = found
        .iter()
        .filter(|(_, facts)| matches!(facts, ImageFacts::LookupFailed(_)))
        .count();
    eprintln!(
        "os-placement: looked up {} image{} in their registries ({failed} failed)",
        images.len(),
        if images.len() == 1 { "" } else { "s" }
    );
    Ok(found)
}
