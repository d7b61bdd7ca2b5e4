//! The settings of the last request, kept read. A warm instance gets the
//! same settings text with every request (policy-server sends the policy's
//! settings each time), so reading them once saves a JSON tree and the
//! settings checks per request. A changed text is read afresh.

use std::cell::RefCell;

use os_placement_core::{Settings, SettingsError};

/// The settings text of the last request, and once it came twice, what it
/// reads as.
struct Kept {
    text: Box<str>,
    settings: Option<Settings>,
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Calls `use_them` with the settings `text` (JSON) reads as. A text seen
/// for the first time is read for this request alone: a fresh instance,
/// which serves one request, keeps nothing. The second time in a row it is
/// read once more and kept, and later requests with the same text reuse it.
/// `keep` runs that reading, so the module can place what it keeps outside
/// the request's arena.
pub fn with_settings<R>(
    text: &str,
    keep: impl FnOnce(&mut dyn FnMut()),
    use_them: impl FnOnce(&Settings) -> R,
) -> Result<R, SettingsError> {
    let seen = KEPT.with_borrow(|kept| match kept {
        Some(kept) if *kept.text == *text => Some(kept.settings.is_some()),
        _ => None,
    });
    match seen {
        Some(true) => {}
        Some(false) => keep(&mut || {
            let settings = Settings::from_json(text).ok();
            KEPT.set(Some(Kept {
                text: text.into(),
                settings,
            }));
        }),
        None => keep(&mut || {
            KEPT.set(Some(Kept {
                text: text.into(),
                settings: None,
            }));
        }),
    }
    KEPT.with_borrow(|kept| match kept {
        Some(Kept {
            text: kept,
            settings: Some(settings),
        }) if **kept == *text => Ok(use_them(settings)),
        _ => Settings::from_json(text).map(|s| use_them(&s)),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mutate(text: &str) -> Result<bool, SettingsError> {
        with_settings(text, |read| read(), |s| s.mutate)
    }

    #[test]
    fn changed_settings_text_is_read_afresh() {
        assert!(!mutate(r#"{"mutate": false}"#).unwrap());
        assert!(!mutate(r#"{"mutate": false}"#).unwrap());
        assert!(mutate(r#"{"mutate": true}"#).unwrap());
        assert!(mutate("null").unwrap(), "null is every default");
    }

    #[test]
    fn bad_settings_are_an_error_every_time_and_forget_the_last_good_ones() {
        assert!(!mutate(r#"{"mutate": false}"#).unwrap());
        for _ in 0..2 {
            let error = mutate(r#"{"mutate": 3}"#).unwrap_err();
            assert!(error.to_string().contains("mutate"), "{error}");
        }
        assert!(!mutate(r#"{"mutate": false}"#).unwrap());
    }

    /// Whether the settings of `text` are kept after this request.
    fn kept(text: &str) -> bool {
        mutate(text).unwrap();
        KEPT.with_borrow(|k| {
            k.as_ref()
                .is_some_and(|k| *k.text == *text && k.settings.is_some())
        })
    }

    #[test]
    fn settings_are_kept_from_their_second_request_on() {
        let text = r#"{"defaultOS": "linux"}"#;
        assert!(!kept(text), "a fresh instance keeps nothing");
        assert!(kept(text));
        assert!(kept(text));
        assert!(!kept(r#"{"mutate": true}"#), "changed settings are new");
    }

    #[test]
    fn keeping_runs_the_reading_only_when_something_changes() {
        let mut runs = 0;
        for _ in 0..4 {
            with_settings(
                "null",
                |read| {
                    runs += 1;
                    read()
                },
                |_| (),
            )
            .unwrap();
        }
        assert_eq!(runs, 2, "once to note the text, once to keep it");
    }
}
