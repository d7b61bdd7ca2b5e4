//! (e) The `windowsImages` glob: compiling any pattern and matching any
//! text terminates without a panic, and agrees with a naive reference
//! matcher on patterns of literals, `?` and `*`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use os_placement_core::Glob;

fuzz_target!(|input: (&str, &str)| {
    let (pattern, text) = input;
    let Ok(glob) = Glob::new(pattern) else {
        assert!(
            pattern.is_empty() || pattern.contains('[') || pattern.contains('\\'),
            "{pattern:?} refused"
        );
        return;
    };
    let got = glob.matches(text);
    if !pattern.chars().any(|c| matches!(c, '[' | '\\')) {
        let p: Vec<char> = pattern.chars().collect();
        let t: Vec<char> = text.chars().collect();
        // Bounded so the exponential reference stays fast.
        if p.len() <= 12 && t.len() <= 24 {
            assert_eq!(got, naive(&p, &t), "{pattern:?} vs {text:?}");
        }
        if !pattern.contains(['*', '?']) {
            assert!(glob.matches(pattern), "{pattern:?} does not match itself");
        }
    }
});

/// Textbook recursive matcher: `*` any run, `?` one character.
fn naive(p: &[char], t: &[char]) -> bool {
    match p.split_first() {
        None => t.is_empty(),
        Some(('*', rest)) => (0..=t.len()).any(|i| naive(rest, t.get(i..).unwrap_or(&[]))),
        Some(('?', rest)) => t.split_first().is_some_and(|(_, tr)| naive(rest, tr)),
        Some((c, rest)) => t
            .split_first()
            .is_some_and(|(tc, tr)| tc == c && naive(rest, tr)),
    }
}
