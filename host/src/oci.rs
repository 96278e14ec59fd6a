//! Components from OCI registries: `oci://REGISTRY/REPO:TAG` or
//! `oci://REGISTRY/REPO@sha256:…`, as `wkg` and `oras` publish them (an
//! OCI image manifest whose one layer is the component,
//! `application/vnd.wasm.content.layer.v1+wasm`).
//!
//! - **Pinned.** The first use of a source writes its manifest digest to
//!   `toolhost.lock` (a file to commit beside the project's
//!   `toolhost.toml`); from then on the component is fetched by that digest
//!   only. A tag that later points elsewhere is refused by `toolhost plugin
//!   pull` until a person re-pins it (`toolhost plugin update`).
//! - **Content-addressed and offline.** A pulled component is kept under
//!   its manifest digest with the manifest and its signatures; a start
//!   with a pinned source reads it from there, checking the chain
//!   lock digest → manifest bytes → layer digest → component bytes, and
//!   makes no network request.
//! - **Signed.** With `require_signature`, a component loads only if a
//!   cosign-style keyed signature (the `sha256-HEX.sig` tag, a
//!   `simplesigning` payload naming the manifest digest, an ECDSA P-256
//!   signature in its `dev.cosignproject.cosign/signature` annotation)
//!   verifies with one of the configured public keys, offline, at every
//!   load.
//! - **Credentials** come from the Docker config file and its credential
//!   helpers (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`),
//!   or are given; plain HTTP is used for loopback registries only.

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::Digest as _;
use std::path::{Path, PathBuf};

mod lock;
mod review;
mod sign;
pub use lock::{Lock, Pinned};
pub use review::Reviewed;

/// A component layer's media type.
pub const WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// A Wasm artifact's config media type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";

/// Why a component could not be pulled, pushed or trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// Not an `oci://` reference.
    #[error("`{0}` is not an OCI source: write oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST)")]
    BadSource(String),
    /// The registry refused the credentials.
    #[error(
        "{registry} refused the credentials{from}: {why}; check them (`docker login {registry}` \
         writes the Docker config toolhost reads)"
    )]
    Auth {
        /// The registry.
        registry: String,
        /// Where they came from.
        from: String,
        /// What it said.
        why: String,
    },
    /// The registry could not be reached or answered an error.
    #[error("{source_ref}: {why}")]
    Registry {
        /// The source.
        source_ref: String,
        /// What failed.
        why: String,
    },
    /// The tag points elsewhere than the lock pins.
    #[error(
        "{source_ref} now points to {now}, but toolhost.lock pins {pinned}: nothing was changed. \
         If the new component is expected, re-pin it with `toolhost plugin update {source_ref}`"
    )]
    Moved {
        /// The source.
        source_ref: String,
        /// The pinned digest.
        pinned: String,
        /// Where the tag points now.
        now: String,
    },
    /// Bytes that are not what their digest says.
    #[error("{0}")]
    Integrity(String),
    /// A missing or bad signature.
    #[error("{0}")]
    Signature(String),
    /// The file system.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// A parsed `oci://` source.
#[derive(Debug, Clone)]
pub struct Source {
    text: String,
    reference: Reference,
}

impl Source {
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:HEX`.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = || OciError::BadSource(text.to_owned());
        let rest = text.strip_prefix("oci://").ok_or_else(bad)?;
        // A registry is named, never Docker Hub by default.
        let (registry, _) = rest.split_once('/').ok_or_else(bad)?;
        if !registry.contains(['.', ':']) && registry != "localhost" {
            return Err(bad());
        }
        let reference: Reference = rest.parse().map_err(|_| bad())?;
        Ok(Self {
            text: text.to_owned(),
            reference,
        })
    }

    /// The source as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The component's file name: the repository's last part.
    fn file_name(&self) -> String {
        let repo = self.reference.repository();
        let last = repo.rsplit('/').next().unwrap_or(repo);
        format!("{}.wasm", last.replace(['-', '.'], "_"))
    }

    fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }
}

/// Where components are kept and how they are trusted.
#[derive(Debug, Clone)]
pub struct Options {
    /// The content-addressed store (`$XDG_CACHE_HOME/toolhost/oci`).
    pub store: PathBuf,
    /// The lock file (`toolhost.lock`).
    pub lock: PathBuf,
    /// Refuse components without a good signature.
    pub require_signature: bool,
    /// Public keys (PEM) signatures are checked with.
    pub keys: Vec<PathBuf>,
    /// Credentials to use instead of the Docker config's.
    pub credentials: Option<(String, String)>,
}

impl Options {
    /// The person's: the user cache, and `toolhost.lock` in the user
    /// configuration directory (`~/.config/toolhost/toolhost.lock`), which
    /// no project, tool or command can write: what a source runs does not
    /// depend on the directory toolhost starts in.
    pub fn user() -> Self {
        let config = dirs::config_dir().unwrap_or_else(std::env::temp_dir);
        Self::in_dir(&config.join("toolhost"))
    }

    /// The user's cache, `toolhost.lock` in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            store: dirs::cache_dir()
                .unwrap_or_else(std::env::temp_dir)
                .join("toolhost")
                .join("oci"),
            lock: dir.join("toolhost.lock"),
            require_signature: false,
            keys: Vec::new(),
            credentials: None,
        }
    }
}

/// A component pulled (or found in the store).
#[derive(Debug, Clone)]
pub struct Pulled {
    /// Its pin.
    pub pinned: Pinned,
    /// A directory holding it alone, as a plugin directory.
    pub dir: PathBuf,
    /// What its signature check said (`None`: not checked).
    pub signed_by: Option<String>,
}

/// Components from registries.
#[derive(Debug, Clone)]
pub struct Oci {
    options: Options,
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OciError + '_ {
    move |source| OciError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Oci {
    /// Components kept and trusted as `options` say.
    pub fn new(options: Options) -> Self {
        Self { options }
    }

    /// The lock.
    pub fn lock(&self) -> Result<Lock, OciError> {
        Lock::read(&self.options.lock)
    }

    /// The plugin directory of `source`'s component: from the store when
    /// the lock pins it and the store holds it (no network request), else
    /// pulled by its pinned digest, or by its tag on first use (and pinned).
    pub fn resolve(&self, source: &str) -> Result<Pulled, OciError> {
        let source = Source::parse(source)?;
        let Some(pinned) = self.lock()?.get(source.as_str()).cloned() else {
            return self.pull(source.as_str(), false);
        };
        let unusable = match self.kept(&source, &pinned) {
            Ok(pulled) => return Ok(pulled),
            Err(why) => why,
        };
        // Pinned, not kept (or kept before it was signed, or tampered
        // with): by its digest, whatever its tag says now.
        let by_digest = source.reference.clone_with_digest(pinned.digest.clone());
        match block_on(self.fetch(&source, &by_digest, Some(&pinned), false)) {
            Ok(Ok(_)) => self.kept(&source, &pinned),
            Ok(Err(failed)) | Err(failed) => Err(OciError::Registry {
                source_ref: source.as_str().to_owned(),
                why: format!(
                    "its kept copy cannot be used ({unusable}), and fetching it again failed: {failed}"
                ),
            }),
        }
    }

    /// Pull `source` (its pinned digest, unless `update`), keep it and pin
    /// it. A tag pointing elsewhere than the pin is refused unless `update`.
    pub fn pull(&self, source: &str, update: bool) -> Result<Pulled, OciError> {
        let source = Source::parse(source)?;
        let mut lock = self.lock()?;
        let pinned = lock.get(source.as_str()).cloned();
        let digest = block_on(self.fetch(&source, &source.reference, pinned.as_ref(), update))??;
        let pinned = Pinned {
            source: source.as_str().to_owned(),
            digest,
        };
        let pulled = self.kept(&source, &pinned)?;
        lock.pin(pinned);
        lock.write(&self.options.lock)?;
        Ok(pulled)
    }

    /// Forget `source`'s pin; true if it had one.
    pub fn remove(&self, source: &str) -> Result<bool, OciError> {
        let mut lock = self.lock()?;
        let removed = lock.remove(source);
        if removed {
            lock.write(&self.options.lock)?;
        }
        Ok(removed)
    }

    /// Publish `wasm` as `source` (a Wasm OCI artifact other tools pull);
    /// its manifest digest.
    pub fn push(&self, wasm: &[u8], source: &str) -> Result<String, OciError> {
        let source = Source::parse(source)?;
        block_on(async {
            let client = self.client_for(&source);
            let auth = self.auth(&source)?;
            let layer = ImageLayer::new(wasm.to_vec(), WASM_LAYER.to_owned(), None);
            let config = serde_json::json!({
                "architecture": "wasm",
                "os": "wasip2",
                "layerDigests": [sha256(wasm)],
            });
            let config = Config::new(
                config.to_string().into_bytes(),
                WASM_CONFIG.to_owned(),
                None,
            );
            let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
            client
                .push(&source.reference, &[layer], config, &auth, Some(manifest))
                .await
                .map_err(|e| self.registry_error(&source, &e))?;
            let (_, digest) = client
                .pull_manifest_raw(
                    &source.reference,
                    &auth,
                    &[oci_client::manifest::OCI_IMAGE_MEDIA_TYPE],
                )
                .await
                .map_err(|e| self.registry_error(&source, &e))?;
            Ok(digest)
        })?
    }

    /// Sign `source`'s pinned component with the PEM private key
    /// `key_pem` (PKCS#8 P-256), as cosign does: the signature goes to
    /// the registry beside it.
    pub fn sign(&self, source: &str, key_pem: &str) -> Result<String, OciError> {
        let source = Source::parse(source)?;
        let pinned = self.lock()?.get(source.as_str()).cloned().ok_or_else(|| {
            OciError::Signature(format!(
                "{} is not pinned: pull it first (`toolhost plugin pull {}`)",
                source.as_str(),
                source.as_str()
            ))
        })?;
        block_on(sign::push_signature(self, &source, &pinned.digest, key_pem))?
    }

    /// A client that speaks plain HTTP to `source`'s registry if it is a
    /// loopback one.
    pub(crate) fn client_for(&self, source: &Source) -> Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = source.registry();
        let loopback = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .any(|l| registry == *l || registry.starts_with(&format!("{l}:")));
        let protocol = if loopback {
            ClientProtocol::HttpsExcept(vec![registry.to_owned()])
        } else {
            ClientProtocol::Https
        };
        Client::new(ClientConfig {
            protocol,
            ..ClientConfig::default()
        })
    }

    pub(crate) fn auth(&self, source: &Source) -> Result<RegistryAuth, OciError> {
        if let Some((user, password)) = &self.options.credentials {
            return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
        }
        match docker_credential::get_credential(source.registry()) {
            Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
                Ok(RegistryAuth::Basic(user, password))
            }
            Ok(docker_credential::DockerCredential::IdentityToken(token)) => {
                Ok(RegistryAuth::Bearer(token))
            }
            Err(_) => Ok(RegistryAuth::Anonymous),
        }
    }

    pub(crate) fn registry_error(
        &self,
        source: &Source,
        err: &oci_client::errors::OciDistributionError,
    ) -> OciError {
        let why = err.to_string();
        let refused = matches!(
            err,
            oci_client::errors::OciDistributionError::AuthenticationFailure(_)
                | oci_client::errors::OciDistributionError::UnauthorizedError { .. }
        ) || why.contains("401")
            || why.to_ascii_lowercase().contains("unauthorized");
        if refused {
            let from = if self.options.credentials.is_some() {
                " given".to_owned()
            } else {
                " from the Docker config".to_owned()
            };
            return OciError::Auth {
                registry: source.registry().to_owned(),
                from,
                why,
            };
        }
        OciError::Registry {
            source_ref: source.as_str().to_owned(),
            why,
        }
    }

    /// Fetch `source` (at `at`: its tag, or a digest) into the store; its
    /// manifest digest, which must be `pinned`'s unless `update`.
    async fn fetch(
        &self,
        source: &Source,
        at: &Reference,
        pinned: Option<&Pinned>,
        update: bool,
    ) -> Result<String, OciError> {
        let client = self.client_for(source);
        let auth = self.auth(source)?;
        let media = [oci_client::manifest::OCI_IMAGE_MEDIA_TYPE];
        let wrap = |e: oci_client::errors::OciDistributionError| self.registry_error(source, &e);
        let (bytes, digest) = client
            .pull_manifest_raw(at, &auth, &media)
            .await
            .map_err(wrap)?;
        if let Some(pinned) = pinned.filter(|p| !update && p.digest != digest) {
            return Err(OciError::Moved {
                source_ref: source.as_str().to_owned(),
                pinned: pinned.digest.clone(),
                now: digest,
            });
        }
        if sha256(&bytes) != digest {
            return Err(OciError::Integrity(format!(
                "{}: the manifest the registry sent does not match its digest {digest}",
                source.as_str()
            )));
        }
        let manifest: OciImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
            OciError::Integrity(format!(
                "{}: not an OCI image manifest: {e}",
                source.as_str()
            ))
        })?;
        let layer = wasm_layer(&manifest, source)?;
        if u64::try_from(layer.size).unwrap_or(u64::MAX) > crate::runtime::MAX_COMPONENT_BYTES {
            return Err(OciError::Integrity(format!(
                "{}: the component is {} bytes; toolhost loads at most {}",
                source.as_str(),
                layer.size,
                crate::runtime::MAX_COMPONENT_BYTES
            )));
        }
        let mut wasm = Vec::new();
        client.pull_blob(at, layer, &mut wasm).await.map_err(wrap)?;
        // Checked before anything kept is replaced.
        if sha256(&wasm) != layer.digest {
            return Err(OciError::Integrity(format!(
                "{}: the component the registry sent does not match its digest {}",
                source.as_str(),
                layer.digest
            )));
        }
        let signatures = sign::fetch_signatures(&client, &auth, source, &digest).await;
        self.keep(source, &digest, &bytes, &wasm, &signatures)?;
        Ok(digest)
    }

    fn kept_dir(&self, digest: &str) -> PathBuf {
        self.options.store.join(digest.replace(':', "-"))
    }

    /// Keep a fetched component under its manifest digest.
    fn keep(
        &self,
        source: &Source,
        digest: &str,
        manifest: &[u8],
        wasm: &[u8],
        signatures: &[sign::Signature],
    ) -> Result<(), OciError> {
        let dir = self.kept_dir(digest);
        let temp = self.options.store.join(format!(
            ".{}.{}",
            digest.replace(':', "-"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&temp);
        std::fs::create_dir_all(&temp).map_err(io(&temp))?;
        let write = |name: &str, bytes: &[u8]| {
            let path = temp.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))
        };
        write("manifest.json", manifest)?;
        write(&source.file_name(), wasm)?;
        write(
            "signatures.json",
            serde_json::to_string_pretty(signatures)
                .unwrap_or_default()
                .as_bytes(),
        )?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&temp, &dir).map_err(io(&dir))
    }

    /// The kept component of `pinned`, every link of its chain checked, and
    /// its signature when one is required.
    fn kept(&self, source: &Source, pinned: &Pinned) -> Result<Pulled, OciError> {
        let dir = self.kept_dir(&pinned.digest);
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(io(&path))
        };
        let manifest_bytes = read("manifest.json")?;
        if sha256(&manifest_bytes) != pinned.digest {
            return Err(OciError::Integrity(format!(
                "the kept manifest of {} does not match its pin {}",
                source.as_str(),
                pinned.digest
            )));
        }
        let manifest: OciImageManifest = serde_json::from_slice(&manifest_bytes)
            .map_err(|e| OciError::Integrity(format!("the kept manifest: {e}")))?;
        let layer = wasm_layer(&manifest, source)?;
        let name = source.file_name();
        let wasm = read(&name)?;
        if sha256(&wasm) != layer.digest {
            return Err(OciError::Integrity(format!(
                "the kept component of {} does not match its digest {}",
                source.as_str(),
                layer.digest
            )));
        }
        // The directory is loaded as a plugin directory: nothing but the
        // component may be a `.wasm` in it.
        let others = std::fs::read_dir(&dir)
            .map_err(io(&dir))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wasm") && *n != name)
            .collect::<Vec<_>>();
        if !others.is_empty() {
            return Err(OciError::Integrity(format!(
                "the kept copy of {} in {} holds other components ({}); remove the directory \
                 and pull again",
                source.as_str(),
                dir.display(),
                others.join(", ")
            )));
        }
        let signed_by = if self.options.require_signature {
            let signatures: Vec<sign::Signature> =
                serde_json::from_slice(&read("signatures.json")?)
                    .map_err(|e| OciError::Integrity(format!("the kept signatures: {e}")))?;
            Some(sign::verify(
                &signatures,
                &pinned.digest,
                &self.options.keys,
                source,
            )?)
        } else {
            None
        };
        Ok(Pulled {
            pinned: pinned.clone(),
            dir,
            signed_by,
        })
    }
}

/// The component layer of `manifest`.
fn wasm_layer<'a>(
    manifest: &'a OciImageManifest,
    source: &Source,
) -> Result<&'a oci_client::manifest::OciDescriptor, OciError> {
    let layers: Vec<_> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == WASM_LAYER || l.media_type == "application/wasm")
        .collect();
    match layers.as_slice() {
        [one] => Ok(one),
        _ => Err(OciError::Integrity(format!(
            "{} is not one WebAssembly component: its manifest has {} layers of type {WASM_LAYER}",
            source.as_str(),
            layers.len()
        ))),
    }
}

/// Run `work` on a runtime of its own, on a thread of its own (a caller
/// may be on a runtime already).
fn block_on<F>(work: F) -> Result<F::Output, OciError>
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| OciError::Registry {
                        source_ref: String::new(),
                        why: format!("cannot start the registry client's runtime: {e}"),
                    })?;
                Ok(runtime.block_on(work))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(OciError::Registry {
                    source_ref: String::new(),
                    why: "the registry client stopped unexpectedly".into(),
                })
            })
    })
}
