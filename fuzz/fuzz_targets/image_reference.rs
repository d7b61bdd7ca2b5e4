//! (d) The image reference parser and classifier on any string: parts
//! borrow from the input, and classification does not depend on the
//! surrounding whitespace the parser trims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use os_placement_core::{classify, ImageRef, ImageRule};

fuzz_target!(|input: (&str, Option<&str>)| {
    let (image, pattern) = input;
    if let Some(parsed) = ImageRef::parse(image) {
        assert!(image.contains(parsed.repository), "{parsed:?}");
        for part in [parsed.registry, parsed.tag, parsed.digest]
            .into_iter()
            .flatten()
        {
            assert!(image.contains(part), "{parsed:?}");
        }
        let name = parsed.name();
        assert!(image.contains(name.as_str()), "{name}");
    }
    let rules: Vec<ImageRule> = pattern
        .and_then(|p| ImageRule::new(p, None).ok())
        .into_iter()
        .collect();
    let os = classify(image, &rules);
    let padded = format!(" {image} ");
    if rules.is_empty() {
        assert_eq!(classify(&padded, &rules), os, "{image:?}");
    }
});
