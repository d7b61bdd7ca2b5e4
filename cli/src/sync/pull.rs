//! `--pull-secrets`: each image read with the credentials the kubelet
//! would pull it with in each namespace that uses it. A Pod's
//! `imagePullSecrets` (the ServiceAccount admission plugin has already
//! copied its ServiceAccount's into a Pod that named none); for a pod
//! template, its own, else those of its ServiceAccount, as its Pods will
//! get them. The Secrets' credentials are matched to the image as the
//! kubelet's keyring matches them (`os_placement_registry::keyring`); a
//! namespace whose Secrets hold none for the image reads it as the nodes
//! would, with the syncer's own credentials.
//!
//! One namespace's credentials are never lent to another's reference:
//! the image is read once per distinct set of credentials, and its facts
//! published only when every read agrees; otherwise a failure naming the
//! namespaces is.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::Api;
use kube::Client;
use os_placement_core::{ImageFacts, Kind};
use os_placement_registry::{Credentials, Keyring, Reading, Repository, Resolver};
use serde_json::Value;

/// How long a Secret or ServiceAccount read is used (a rotated Secret is
/// picked up), as the Docker config's credentials are.
const KEPT_FOR: Duration = Duration::from_secs(300);
/// How long a read that failed stands before it is tried again.
const FAILED_FOR: Duration = Duration::from_secs(30);
/// The longest one read of a Secret or ServiceAccount may take.
const READ_DEADLINE: Duration = Duration::from_secs(10);
/// Objects kept at once, each kind.
const KEPT: usize = 4096;
/// Namespaces named in a failure, at most.
const NAMED: usize = 3;

/// What the syncer must be allowed to read them, for a failure's fix.
const RBAC_FIX: &str = "grant the syncer's ServiceAccount get on secrets and serviceaccounts (deploy/facts-sync-pull-secrets.yaml)";

/// Where one workload's pull credentials come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pull {
    /// The workload's namespace.
    pub namespace: String,
    /// The Secrets its pod spec names in `imagePullSecrets`.
    pub secrets: Vec<String>,
    /// For a pod template naming none: its ServiceAccount, whose
    /// `imagePullSecrets` its Pods will be given.
    pub service_account: Option<String>,
}

/// The pull context of a workload of `kind` in `namespace` whose pod spec
/// is `spec`; `None` for an object in no namespace.
pub fn pull_of(kind: Kind, namespace: Option<&str>, spec: &Value) -> Option<Pull> {
    let namespace = namespace?.to_string();
    let secrets: Vec<String> = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect();
    let service_account = (secrets.is_empty() && kind != Kind::Pod).then(|| {
        ["serviceAccountName", "serviceAccount"]
            .iter()
            .find_map(|field| spec.get(field).and_then(Value::as_str))
            .filter(|name| !name.is_empty())
            .unwrap_or("default")
            .to_string()
    });
    Some(Pull {
        namespace,
        secrets,
        service_account,
    })
}

/// A read of one object: what it held, that it does not exist, or why it
/// could not be read.
#[derive(Debug, Clone)]
enum Read<T> {
    Found(T),
    Missing,
    Failed(String),
}

type Kept<T> = Mutex<HashMap<(String, String), (Read<T>, Instant)>>;

/// Held while one object is read.
type Flight = Arc<tokio::sync::Mutex<()>>;

/// Reads pull Secrets and ServiceAccounts through the API, each kept for
/// [`KEPT_FOR`].
pub struct PullSecrets {
    client: Client,
    secrets: Kept<Keyring>,
    accounts: Kept<Vec<String>>,
    /// One read at a time per object: lookups in flight that need the
    /// same Secret wait for its first read instead of asking again.
    flights: Mutex<HashMap<(&'static str, String, String), Flight>>,
}

/// One read: the credentials (user, password) tried in turn, or, where
/// they could not be read, the namespace and why.
type ReadKey = Result<Vec<(String, String)>, (String, String)>;

/// The credentials to read with, or why they could not be read.
type Candidates = Result<Vec<Credentials>, String>;

impl PullSecrets {
    /// Reads through `client`.
    pub fn new(client: Client) -> PullSecrets {
        PullSecrets {
            client,
            secrets: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
            flights: Mutex::new(HashMap::new()),
        }
    }

    /// The lock of one object's read.
    fn flight(&self, kind: &'static str, namespace: &str, name: &str) -> Flight {
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if flights.len() >= KEPT {
            flights.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        flights
            .entry((kind, namespace.to_string(), name.to_string()))
            .or_default()
            .clone()
    }

    /// The facts of `image`, read with the credentials of each of `pulls`;
    /// with none, as the syncer reads any image.
    pub async fn read(
        &self,
        resolver: &Resolver,
        image: &str,
        pulls: &BTreeSet<Arc<Pull>>,
    ) -> ImageFacts {
        if pulls.is_empty() {
            return resolver.resolve(image).await;
        }
        let Some(repository) = Repository::of(image) else {
            return resolver.resolve(image).await;
        };
        // By the credentials to read with: namespaces sharing them read once.
        let mut reads: BTreeMap<ReadKey, (Candidates, BTreeSet<String>)> = BTreeMap::new();
        for pull in pulls {
            let candidates = self.candidates(pull, &repository).await;
            let key = match &candidates {
                Ok(all) => Ok(all
                    .iter()
                    .map(|c| (c.user.clone(), c.password.clone()))
                    .collect()),
                Err(why) => Err((pull.namespace.clone(), why.clone())),
            };
            reads
                .entry(key)
                .or_insert_with(|| (candidates, BTreeSet::new()))
                .1
                .insert(pull.namespace.clone());
        }
        let mut outcomes: Vec<(ImageFacts, BTreeSet<String>)> = Vec::new();
        for (_, (candidates, namespaces)) in reads {
            let reading = match candidates {
                Ok(all) => read_with(resolver, image, all).await,
                Err(why) => Reading {
                    facts: ImageFacts::LookupFailed(why),
                    unanswered: false,
                },
            };
            // No answer from the registry: every other read would meet the same.
            if reading.unanswered {
                return reading.facts;
            }
            let facts = reading.facts;
            match outcomes.iter_mut().find(|(o, _)| *o == facts) {
                Some((_, seen)) => seen.extend(namespaces),
                None => outcomes.push((facts, namespaces)),
            }
        }
        combine(outcomes)
    }

    /// The credentials `pull` holds for `image`, in the order the kubelet
    /// tries them (Secret by Secret, the most specific key first); empty
    /// when its Secrets hold none for it.
    async fn candidates(&self, pull: &Pull, repository: &Repository) -> Candidates {
        let names = match &pull.service_account {
            Some(account) if pull.secrets.is_empty() => {
                match self.account(&pull.namespace, account).await {
                    Read::Found(names) => names,
                    // No such ServiceAccount: its Pods are not created, nothing to pull with.
                    Read::Missing => Vec::new(),
                    Read::Failed(why) => return Err(why),
                }
            }
            _ => pull.secrets.clone(),
        };
        let mut all = Vec::new();
        for name in names {
            match self.secret(&pull.namespace, &name).await {
                Read::Found(keyring) => all.extend(keyring.lookup(repository)),
                // The kubelet goes on without a Secret it cannot find.
                Read::Missing => {}
                Read::Failed(why) => return Err(why),
            }
        }
        let mut seen = BTreeSet::new();
        all.retain(|c| seen.insert((c.user.clone(), c.password.clone())));
        Ok(all)
    }

    /// The keyring of Secret `namespace/name`.
    async fn secret(&self, namespace: &str, name: &str) -> Read<Keyring> {
        let origin = format!("the pull Secret {namespace}/{name}");
        self.read_kept(
            &self.secrets,
            "Secret",
            namespace,
            name,
            |secret: Secret| {
                let data: BTreeMap<String, Vec<u8>> = secret
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                match Keyring::from_secret(secret.type_.as_deref().unwrap_or(""), &data, &origin) {
                    Ok(keyring) => Read::Found(keyring),
                    Err(why) => Read::Failed(format!(
                        "{origin} cannot be read: {why}; create it again with kubectl create secret docker-registry"
                    )),
                }
            },
        )
        .await
    }

    /// The Secrets ServiceAccount `namespace/name` gives its Pods.
    async fn account(&self, namespace: &str, name: &str) -> Read<Vec<String>> {
        let names = |account: ServiceAccount| {
            Read::Found(
                account
                    .image_pull_secrets
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| s.name)
                    .filter(|n| !n.is_empty())
                    .collect(),
            )
        };
        self.read_kept(&self.accounts, "ServiceAccount", namespace, name, names)
            .await
    }

    /// The `kind` object `namespace/name` as `kept` holds it, else read
    /// once (lookups that need it meanwhile wait for that read), turned
    /// into what is kept by `convert`, and kept.
    async fn read_kept<K, T: Clone>(
        &self,
        kept_reads: &Kept<T>,
        kind: &'static str,
        namespace: &str,
        name: &str,
        convert: impl FnOnce(K) -> Read<T>,
    ) -> Read<T>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        if let Some(read) = kept(kept_reads, namespace, name) {
            return read;
        }
        let flight = self.flight(kind, namespace, name);
        let _reading = flight.lock().await;
        if let Some(read) = kept(kept_reads, namespace, name) {
            return read;
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let read = match get(&api, kind, namespace, name).await {
            Read::Found(object) => convert(object),
            Read::Missing => Read::Missing,
            Read::Failed(why) => Read::Failed(why),
        };
        keep(kept_reads, namespace, name, &read);
        read
    }
}

/// The facts of each of `images`, `--concurrency` at a time: read with
/// the pull credentials of `pulls` where `secrets` are read, else as any image.
pub async fn read_all(
    resolver: &Resolver,
    secrets: Option<&PullSecrets>,
    images: &[String],
    pulls: &BTreeMap<String, BTreeSet<Arc<Pull>>>,
) -> Vec<(String, ImageFacts)> {
    let none = BTreeSet::new();
    futures_util::stream::iter(images)
        .map(|image| {
            let used = pulls.get(image).unwrap_or(&none);
            async move {
                let facts = match secrets {
                    Some(secrets) => secrets.read(resolver, image, used).await,
                    None => resolver.resolve(image).await,
                };
                (image.clone(), facts)
            }
        })
        .buffer_unordered(resolver.concurrency())
        .collect()
        .await
}

/// A fingerprint of where an image's pull credentials come from: a new
/// one means another namespace or Secret uses it, and it is read again.
pub fn fingerprint(pulls: &BTreeSet<Arc<Pull>>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    pulls.hash(&mut hasher);
    hasher.finish()
}

/// One object read through `api`, within [`READ_DEADLINE`].
async fn get<K>(api: &Api<K>, kind: &str, namespace: &str, name: &str) -> Read<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match tokio::time::timeout(READ_DEADLINE, api.get_opt(name)).await {
        Ok(Ok(Some(object))) => Read::Found(object),
        Ok(Ok(None)) => Read::Missing,
        Ok(Err(kube::Error::Api(status))) if status.code == 403 => Read::Failed(format!(
            "the {kind} {namespace}/{name} may not be read (403); {RBAC_FIX}"
        )),
        Ok(Err(e)) => Read::Failed(format!(
            "the {kind} {namespace}/{name} could not be read: {e}; it is read again within {FAILED_FOR:?}"
        )),
        Err(_) => Read::Failed(format!(
            "the {kind} {namespace}/{name} could not be read within {READ_DEADLINE:?}; it is read again within {FAILED_FOR:?}"
        )),
    }
}

fn kept<T: Clone>(kept: &Kept<T>, namespace: &str, name: &str) -> Option<Read<T>> {
    let kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    let (read, at) = kept.get(&(namespace.to_string(), name.to_string()))?;
    let lasts = if matches!(read, Read::Failed(_)) {
        FAILED_FOR
    } else {
        KEPT_FOR
    };
    (at.elapsed() < lasts).then(|| read.clone())
}

fn keep<T: Clone>(kept: &Kept<T>, namespace: &str, name: &str, read: &Read<T>) {
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= KEPT {
        kept.retain(|_, (_, at)| at.elapsed() < KEPT_FOR);
    }
    kept.insert(
        (namespace.to_string(), name.to_string()),
        (read.clone(), Instant::now()),
    );
}

/// The image read with each of `candidates` in turn until one reads it,
/// as the kubelet tries a Pod's credentials, else the first one's failure;
/// with none, as the nodes would read it (the syncer's own credentials).
async fn read_with(resolver: &Resolver, image: &str, candidates: Vec<Credentials>) -> Reading {
    let mut first = None;
    for credentials in candidates {
        let reading = resolver.resolve_with(image, Some(credentials)).await;
        if !matches!(reading.facts, ImageFacts::LookupFailed(_)) || reading.unanswered {
            return reading;
        }
        first.get_or_insert(reading);
    }
    match first {
        Some(failed) => failed,
        None => resolver.resolve_with(image, None).await,
    }
}

/// One verdict from what each group of namespaces read: the facts when
/// they all agree; else a failure that names who read what.
fn combine(mut outcomes: Vec<(ImageFacts, BTreeSet<String>)>) -> ImageFacts {
    if outcomes.len() <= 1 {
        return outcomes
            .pop()
            .map_or(ImageFacts::LookupFailed(String::new()), |(facts, _)| facts);
    }
    let failed: Vec<&(ImageFacts, BTreeSet<String>)> = outcomes
        .iter()
        .filter(|(o, _)| matches!(o, ImageFacts::LookupFailed(_)))
        .collect();
    if let Some((ImageFacts::LookupFailed(why), namespaces)) = failed.first() {
        let others = |read: bool| -> BTreeSet<String> {
            outcomes
                .iter()
                .filter(|(o, n)| n != namespaces && matches!(o, ImageFacts::Platforms(_)) == read)
                .flat_map(|(_, n)| n.iter().cloned())
                .collect()
        };
        let (read_by, failed_too) = (others(true), others(false));
        let also = if failed_too.is_empty() {
            String::new()
        } else {
            format!(" (nor with those of {})", namespaces_of(&failed_too))
        };
        let head = if read_by.is_empty() {
            "not read with the pull credentials of".to_string()
        } else {
            format!(
                "read with the pull credentials of {}, but not with those of",
                namespaces_of(&read_by)
            )
        };
        return ImageFacts::LookupFailed(format!(
            "{head} {}{also}: {why}",
            namespaces_of(namespaces)
        ));
    }
    let each: Vec<String> = outcomes
        .iter()
        .map(|(o, namespaces)| format!("{}: {}", namespaces_of(namespaces), platforms_of(o)))
        .collect();
    ImageFacts::LookupFailed(format!(
        "the pull credentials of different namespaces read different platforms ({}); check that their pull Secrets name the same registry account, or name the image by digest",
        each.join("; ")
    ))
}

/// "namespace a", "namespaces a, b and c", "namespaces a, b, c and 4 more".
fn namespaces_of(namespaces: &BTreeSet<String>) -> String {
    let all: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    match all.as_slice() {
        [one] => format!("namespace {one}"),
        many if many.len() <= NAMED => {
            let (last, rest) = many.split_last().unwrap_or((&"", &[]));
            format!("namespaces {} and {last}", rest.join(", "))
        }
        many => format!(
            "namespaces {} and {} more",
            many.iter()
                .take(NAMED)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            many.len() - NAMED
        ),
    }
}

/// `windows/amd64 10.0.20348.2113, linux/arm64`.
fn platforms_of(facts: &ImageFacts) -> String {
    match facts {
        ImageFacts::Platforms(platforms) => platforms
            .iter()
            .map(|p| {
                let mut text = format!(
                    "{}/{}",
                    p.os,
                    p.architecture.as_deref().unwrap_or("unknown")
                );
                if let Some(version) = &p.os_version {
                    text.push(' ');
                    text.push_str(version);
                }
                text
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use os_placement_core::Platform;
    use serde_json::json;

    fn platform(os: &str, version: Option<&str>) -> ImageFacts {
        ImageFacts::Platforms(vec![Platform {
            os: os.into(),
            os_version: version.map(str::to_string),
            architecture: Some("amd64".into()),
        }])
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    // The ServiceAccount admission plugin
    // (plugin/pkg/admission/serviceaccount/admission.go) copies a
    // ServiceAccount's imagePullSecrets into a Pod only when it names none.
    #[test]
    fn a_template_naming_no_secret_pulls_with_its_service_accounts() {
        let spec = json!({"serviceAccountName": "builder", "containers": []});
        let pull = pull_of(Kind::Deployment, Some("team-a"), &spec).unwrap();
        assert_eq!(pull.service_account.as_deref(), Some("builder"));
        assert!(pull.secrets.is_empty());
        let pull = pull_of(Kind::Job, Some("team-a"), &json!({"containers": []})).unwrap();
        assert_eq!(pull.service_account.as_deref(), Some("default"));
        // Negative: its own Secrets win; a Pod already holds its account's.
        let spec = json!({"serviceAccountName": "builder",
            "imagePullSecrets": [{"name": "regcred"}, {"name": ""}, {}]});
        let pull = pull_of(Kind::Deployment, Some("team-a"), &spec).unwrap();
        assert_eq!(pull.secrets, ["regcred"]);
        assert_eq!(pull.service_account, None);
        let pull = pull_of(
            Kind::Pod,
            Some("team-a"),
            &json!({"serviceAccountName": "b"}),
        )
        .unwrap();
        assert_eq!(pull.service_account, None);
        assert!(pull_of(Kind::Pod, None, &spec).is_none());
    }

    #[test]
    fn agreeing_reads_publish_their_platforms() {
        let facts = platform("windows", Some("10.0.20348.1"));
        let combined = combine(vec![(facts.clone(), set(&["a", "b"]))]);
        assert_eq!(combined, facts);
    }

    #[test]
    fn a_namespace_that_cannot_read_it_is_named_with_its_fix() {
        let combined = combine(vec![
            (platform("linux", None), set(&["team-a"])),
            (
                ImageFacts::LookupFailed(
                    "the registry r asks for credentials (401); check the user name and password in the pull Secret team-b/regcred".into(),
                ),
                set(&["team-b"]),
            ),
        ]);
        let ImageFacts::LookupFailed(why) = combined else {
            panic!("{combined:?}")
        };
        assert!(
            why.starts_with("read with the pull credentials of namespace team-a, but not with those of namespace team-b: the registry r asks"),
            "{why}"
        );
        assert!(
            why.ends_with("; check the user name and password in the pull Secret team-b/regcred")
        );
    }

    #[test]
    fn different_platforms_are_not_published() {
        let combined = combine(vec![
            (platform("linux", None), set(&["a", "b", "c", "d", "e"])),
            (platform("windows", Some("10.0.20348.1")), set(&["f"])),
        ]);
        let ImageFacts::LookupFailed(why) = combined else {
            panic!("{combined:?}")
        };
        assert!(
            why.contains("(namespaces a, b, c and 2 more: linux/amd64; namespace f: windows/amd64 10.0.20348.1)"),
            "{why}"
        );
        assert!(why.contains("; check that their pull Secrets"));
    }

    /// Reads `image` with the pull Secrets of namespaces `a` and `b` (each
    /// its own account for 127.0.0.1:`port`) served by a fake API: the facts,
    /// and how many reads were made with a pull Secret.
    fn read_in_two_namespaces(port: u16, image: &str) -> (ImageFacts, u64) {
        use clap::Parser;
        use os_placement_e2e::faults::api::FakeApi;
        use os_placement_e2e::identity::pull_secret;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            registry: os_placement_registry::RegistryArgs,
        }
        let host = format!("127.0.0.1:{port}");
        let api = FakeApi::start(vec![
            pull_secret("a", "regcred", &host, "robot-a", "pw-a"),
            pull_secret("b", "regcred", &host, "robot-b", "pw-b"),
        ])
        .unwrap();
        let flags = ["t", "--insecure-registry", &host, "--retries", "0"];
        let args = Flags::try_parse_from(flags).unwrap().registry;
        let pull = |namespace: &str| {
            Arc::new(Pull {
                namespace: namespace.into(),
                secrets: vec!["regcred".into()],
                service_account: None,
            })
        };
        let pulls = BTreeSet::from([pull("a"), pull("b")]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let resolver = Resolver::new(&args);
            let client = Client::try_from(kube::Config::new(api.url().parse().unwrap())).unwrap();
            let facts = PullSecrets::new(client)
                .read(&resolver, image, &pulls)
                .await;
            let reads = resolver
                .lookups_by_credentials()
                .iter()
                .find(|(by, _, _)| *by == "pull-secret")
                .map_or(0, |(_, n, _)| *n);
            (facts, reads)
        })
    }

    #[test]
    fn a_registry_that_does_not_answer_is_tried_once_whatever_the_credentials() {
        // Nothing listens on port 9.
        let (facts, reads) = read_in_two_namespaces(9, "127.0.0.1:9/app:1");
        assert!(matches!(facts, ImageFacts::LookupFailed(_)), "{facts:?}");
        assert_eq!(reads, 1);
        // Negative: a registry that answers, refusing both, is asked with each.
        let registry = os_placement_e2e::faults::registry::Scripted::start(|_| {
            let mut answer =
                os_placement_e2e::faults::registry::Answer::json(401, &serde_json::json!({}));
            answer
                .headers
                .push(("WWW-Authenticate".into(), "Basic realm=\"r\"".into()));
            answer
        })
        .unwrap();
        let image = format!("{}/app:1", registry.host());
        let (facts, reads) = read_in_two_namespaces(registry.port(), &image);
        let ImageFacts::LookupFailed(why) = facts else {
            panic!("{facts:?}")
        };
        assert!(why.contains("the pull Secret a/regcred"), "{why}");
        assert_eq!(reads, 2);
    }

    #[test]
    fn namespaces_are_named_in_a_short_list() {
        assert_eq!(namespaces_of(&set(&["a"])), "namespace a");
        assert_eq!(namespaces_of(&set(&["a", "b"])), "namespaces a and b");
        assert_eq!(
            namespaces_of(&set(&["a", "b", "c"])),
            "namespaces a, b and c"
        );
    }
}
