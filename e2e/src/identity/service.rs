//! What every fake identity service shares: a [`Scripted`] server (so each
//! request is recorded), a token lifetime and a failure mode a test may
//! change while it runs, and the ledger of what it issued.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::tokens::{locked, Issued};
use crate::error::Error;
use crate::faults::http::Request;
use crate::faults::registry::{Answer, Scripted};

/// The settings and ledger of one fake service, as its handler sees them.
#[derive(Debug)]
pub struct State<F> {
    lifetime: Mutex<Duration>,
    failure: Mutex<Option<F>>,
    issued: Mutex<Vec<Issued>>,
}

impl<F: Copy> State<F> {
    fn new(lifetime: Duration) -> State<F> {
        State {
            lifetime: Mutex::new(lifetime),
            failure: Mutex::new(None),
            issued: Mutex::new(Vec::new()),
        }
    }

    /// How long what it issues now lasts.
    pub fn lifetime(&self) -> Duration {
        *locked(&self.lifetime)
    }

    /// How it fails now; `None` when it works.
    pub fn failure(&self) -> Option<F> {
        *locked(&self.failure)
    }

    /// Records `token` as issued now, for the current lifetime.
    pub fn issue(&self, token: String) -> Issued {
        let issued_at = SystemTime::now();
        let issued = Issued {
            token,
            issued_at,
            expires_at: issued_at + self.lifetime(),
        };
        locked(&self.issued).push(issued.clone());
        issued
    }

    /// Whether `token` was issued here and has not expired.
    pub fn is_valid(&self, token: &str) -> bool {
        let now = SystemTime::now();
        locked(&self.issued)
            .iter()
            .any(|i| i.token == token && i.valid_at(now))
    }

    /// Everything issued so far, oldest first.
    pub fn issued(&self) -> Vec<Issued> {
        locked(&self.issued).clone()
    }
}

/// A running fake service, failing with an `F` when told to. Stops when dropped.
pub struct FakeService<F> {
    server: Scripted,
    state: Arc<State<F>>,
}

impl<F: Copy + Send + 'static> FakeService<F> {
    /// Starts a server answering with `handler`, issuing for `lifetime`.
    pub(crate) fn serve(
        lifetime: Duration,
        handler: impl Fn(&State<F>, &Request) -> Answer + Send + Sync + 'static,
    ) -> Result<FakeService<F>, Error> {
        let state = Arc::new(State::new(lifetime));
        let server = {
            let state = state.clone();
            Scripted::start(move |request| handler(&state, request))?
        };
        Ok(FakeService { server, state })
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.server.host()
    }

    /// `http://127.0.0.1:PORT`, for an endpoint variable.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.host())
    }

    /// The requests it answered so far, headers and bodies included.
    pub fn seen(&self) -> Vec<Request> {
        self.server.seen()
    }

    /// What it issued so far, oldest first.
    pub fn issued(&self) -> Vec<Issued> {
        self.state.issued()
    }

    /// Whether `token` was issued here and has not expired.
    pub fn is_valid(&self, token: &str) -> bool {
        self.state.is_valid(token)
    }

    /// From now on, what it issues lasts `lifetime`.
    pub fn set_lifetime(&self, lifetime: Duration) {
        *super::tokens::locked(&self.state.lifetime) = lifetime;
    }

    /// From now on, it fails with `failure`; `None` makes it work again.
    pub fn set_failure(&self, failure: Option<F>) {
        *super::tokens::locked(&self.state.failure) = failure;
    }

    /// Its state, shared with services that check what it issued.
    pub(crate) fn state(&self) -> Arc<State<F>> {
        self.state.clone()
    }
}
