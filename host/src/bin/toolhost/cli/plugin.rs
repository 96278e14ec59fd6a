//! `toolhost plugin`: components from OCI registries, pulled, pinned in
//! `toolhost.lock`, pushed and signed (toolhost::oci); and the
//! `[[plugins]]` / `--plugin` sources resolved when toolhost starts.

use super::settings::UsageError;
use std::io::Read as _;
use std::path::PathBuf;
use toolhost::config::Config;
use toolhost::oci::{Oci, Options};

/// Registry credentials given on the command line.
#[derive(Debug, Clone, clap::Args)]
pub struct Credentials {
    /// The registry user (else the Docker config's credentials are used).
    #[arg(long, value_name = "USER", requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the registry password (or token) from stdin.
    #[arg(long)]
    pub password_stdin: bool,
}

/// What `toolhost plugin` does. Pins live in the user's
/// `~/.config/toolhost/toolhost.lock`.
#[derive(Debug, clap::Subcommand)]
pub enum PluginAction {
    /// Pull SOURCE (`oci://REGISTRY/REPO:TAG`) and pin its digest in
    /// toolhost.lock; a pinned source whose tag moved is refused (see
    /// `update`).
    Pull {
        /// The component.
        source: String,
        #[command(flatten)]
        credentials: Credentials,
    },
    /// Pull SOURCE again and re-pin it to where its tag points now.
    Update {
        /// The component.
        source: String,
        #[command(flatten)]
        credentials: Credentials,
    },
    /// Publish a built component FILE as SOURCE: an OCI artifact (one
    /// `application/vnd.wasm.content.layer.v1+wasm` layer) that wkg and
    /// oras pull too.
    Push {
        /// The `.wasm` file.
        file: PathBuf,
        /// Where to push it.
        source: String,
        #[command(flatten)]
        credentials: Credentials,
    },
    /// Sign SOURCE's pinned component with a PEM PKCS#8 ECDSA P-256 private
    /// key, as cosign does (the signature is pushed to the registry).
    Sign {
        /// The component (pulled and pinned first).
        source: String,
        /// The private key file.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[command(flatten)]
        credentials: Credentials,
    },
    /// List the pinned sources and their digests.
    List,
    /// Forget SOURCE's pin.
    Remove {
        /// The component.
        source: String,
    },
}

fn options(credentials: Option<&Credentials>) -> anyhow::Result<Options> {
    let mut options = Options::user();
    if let Some(Credentials {
        username: Some(user),
        password_stdin: true,
    }) = credentials
    {
        let mut password = String::new();
        std::io::stdin().read_to_string(&mut password)?;
        options.credentials = Some((user.clone(), password.trim_end().to_owned()));
    }
    Ok(options)
}

/// Run `action`; what to print.
pub fn run(action: &PluginAction) -> anyhow::Result<String> {
    Ok(match action {
        PluginAction::Pull {
            source,
            credentials,
        }
        | PluginAction::Update {
            source,
            credentials,
        } => {
            let update = matches!(action, PluginAction::Update { .. });
            let oci = Oci::new(options(Some(credentials))?);
            let pulled = oci.pull(source, update)?;
            format!(
                "{} {source}: {}\n  kept in {}\n",
                if update { "re-pinned" } else { "pinned" },
                pulled.pinned.digest,
                pulled.dir.display()
            )
        }
        PluginAction::Push {
            file,
            source,
            credentials,
        } => {
            let wasm = std::fs::read(file)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", file.display())))?;
            let oci = Oci::new(options(Some(credentials))?);
            let digest = oci.push(&wasm, source)?;
            format!("pushed {} as {source}: {digest}\n", file.display())
        }
        PluginAction::Sign {
            source,
            key,
            credentials,
        } => {
            let pem = std::fs::read_to_string(key)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", key.display())))?;
            let oci = Oci::new(options(Some(credentials))?);
            let at = oci.sign(source, &pem)?;
            format!("signed {source}: {at}\n")
        }
        PluginAction::List => {
            let oci = Oci::new(options(None)?);
            let lock = oci.lock()?;
            if lock.pins().is_empty() {
                return Ok(format!(
                    "nothing pinned in {}\n",
                    Options::user().lock.display()
                ));
            }
            lock.pins()
                .iter()
                .map(|p| format!("{}  {}\n", p.source, p.digest))
                .collect()
        }
        PluginAction::Remove { source } => {
            let oci = Oci::new(options(None)?);
            if !oci.remove(source)? {
                return Err(UsageError(format!(
                    "{source} is not pinned (`toolhost plugin list` shows the pins)"
                ))
                .into());
            }
            format!("removed the pin of {source}\n")
        }
    })
}

/// The `[[plugins]]` sources and `--plugin` ones, resolved (read from the
/// store when pinned, pulled and pinned otherwise) and added to the
/// configuration's plugin directories.
pub fn resolve_sources(config: &mut Config, extra: &[String]) -> anyhow::Result<()> {
    let sources: Vec<String> = config
        .plugins
        .iter()
        .map(|p| p.source.clone())
        .chain(extra.iter().cloned())
        .collect();
    if sources.is_empty() {
        return Ok(());
    }
    let mut options = Options::user();
    options.require_signature = config.signatures.require;
    options.keys.clone_from(&config.signatures.keys);
    let oci = Oci::new(options);
    for source in sources {
        let pulled = oci
            .resolve(&source)
            .map_err(|e| anyhow::anyhow!("cannot load {source}: {e}"))?;
        config.plugin_dirs.push(pulled.dir);
    }
    Ok(())
}
