//! (b) Structure-aware: the fuzzer's bytes drive a generator of pods and
//! workloads of every kind and of settings (the same generator the
//! property tests use), and every evaluation is checked against the
//! properties in core/tests/props.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

#[path = "../../core/tests/props/mod.rs"]
#[allow(dead_code)]
mod props;

struct Bytes<'a, 'b>(&'a mut Unstructured<'b>);

impl props::gen::Source for Bytes<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.0.choose_index(n).unwrap_or(0)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut source = Bytes(&mut u);
    let case = props::gen::case(&mut source);
    props::check::all(&case);
});
