//! (f) Raw bytes as the host's answer to the published facts list: read as
//! the policy reads it, every way a request can want it, never a panic;
//! what reads as a list gives facts for every image wanted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use os_placement_core::published::{read_answers, Wanted};
use os_placement_core::{ImageFacts, NodeFacts};

fuzz_target!(|data: &[u8]| {
    let images = ["registry.corp.example/billing/api:4.2".to_string(), "nginx:1.27".to_string()];
    let names = ["ip-10-0-1-11.ec2.internal".to_string(), "node-3".to_string()];
    let classes = ["windows-2022".to_string()];
    for labels in [false, true] {
        let wanted = Wanted {
            images: &images,
            names: &names,
            runtime_classes: &classes,
            labels,
        };
        let Ok(found) = read_answers(&[data.to_vec()], &wanted) else {
            continue;
        };
        let facts = found.image_facts(&images);
        assert_eq!(facts.len(), images.len());
        // An unreadable ConfigMap is a failed lookup, never a silent miss.
        if !found.problems.is_empty() {
            assert!(facts
                .values()
                .all(|f| !matches!(f, ImageFacts::Unpublished)));
        }
        if let NodeFacts::Listed(nodes) = found.node_facts(&names, "not published") {
            assert!(nodes.iter().all(|n| n.count > 0));
        }
        let _ = found.runtime_class("windows-2022");
    }
});
