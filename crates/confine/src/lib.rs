//! OS confinement of a command: the boundary, whatever the command's text
//! says. Two layers, prepared in the parent and applied by the child
//! between `clone` and `execve` ([`spawn`]):
//!
//! 1. **Namespaces** (where user namespaces can be created, or the host
//!    runs as root): the command gets its own mount, PID, IPC and UTS
//!    namespaces, a user namespace unless the host may make mount
//!    namespaces itself (as root, where it would map root to root and
//!    add nothing; the view is then made ahead, spawn/ahead.rs), and a network
//!    namespace with only a loopback interface unless its grant allows the
//!    network. In the mount namespace it sees the [`view`]: system
//!    directories, the workspace and the configured read list, nothing else
//!    of the host; a private `/proc`, `/tmp` and `/dev/shm` that vanish
//!    with it; secret paths (a [`Found`], from the broker's scan) masked and protected paths read-only
//!    even inside the workspace. It holds no capability, and a pids cgroup
//!    ([`cgroup`]), its PID namespace's own `pid_max` (Linux 6.14 and
//!    later, where root has no cgroup: `RLIMIT_NPROC` never binds root) or
//!    `RLIMIT_NPROC` bounds its processes.
//! 2. **Landlock and seccomp**, inside the namespaces as a second layer, or
//!    alone where namespaces are unavailable (the fallback): Landlock
//!    allows reads only from the same places and writes only to the
//!    workspace, the private temp dirs and the configured writable ones;
//!    seccomp keeps processes in their session and, without a network
//!    grant or namespace, sockets to `AF_UNIX` (seccomp.rs).
//!
//! Every command also gets a session of its own, `no_new_privs`, the
//! parent-death signal, a file-size limit and no core dumps. What applied
//! is known before the spawn and reported as the `confinement` list; a
//! child that cannot apply a planned part fails to start, so the list never
//! claims more than holds.

mod error;
mod tasks;
pub use error::Error;
pub mod cgroup;
mod seccomp;
pub mod spawn;
pub mod view;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, Scope,
};
use spawn::{Landlock, Launch, Namespaces};
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The newest Landlock ABI whose rights toolhost asks for.
const ABI_USED: ABI = ABI::V6;

/// What the host kernel offers, probed once per process.
#[derive(Debug, Clone)]
pub struct Support {
    /// The kernel's Landlock ABI version (0 if none).
    pub landlock_abi: i32,
    /// The seccomp programs with sockets restricted to `AF_UNIX`, and not.
    filters: Option<[Arc<seccomp::Filters>; 2]>,
    /// The host may make mount namespaces itself (as root, with every
    /// capability): commands need no user namespace, which as root would
    /// map root to root and add nothing, and their views can be made ahead
    /// (spawn/ahead.rs).
    pub own_mounts: bool,
    /// Each PID namespace has a `pid_max` of its own (Linux 6.14 and
    /// later): a command's namespace can be held to a number of tasks
    /// without a cgroup, as root too.
    pub pid_max_per_namespace: bool,
}

impl Support {
    /// What this kernel offers: probed on first use, then shared by every
    /// broker of the process (the kernel does not change under it).
    pub fn get() -> &'static Self {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        SUPPORT.get_or_init(Self::probe)
    }

    fn probe() -> Self {
        // The newest ABI whose every right the kernel accepts, as a hard
        // requirement, is the one it offers (up to the one toolhost uses).
        let abis = [ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1];
        let landlock_abi = abis
            .into_iter()
            .find(|&abi| kernel_accepts(abi))
            .map_or(0, |abi| abi as i32);
        // The kernel lists a Seccomp field for tasks when it supports it.
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
        let filters = seccomp
            .then(|| {
                Ok::<_, Error>([
                    Arc::new(seccomp::filters(true)?),
                    Arc::new(seccomp::filters(false)?),
                ])
            })
            .transpose()
            .unwrap_or_else(|e| {
                tracing::warn!("commands will run without a seccomp filter: {e}");
                None
            });
        Self {
            landlock_abi,
            filters,
            own_mounts: spawn::own_mount_namespaces(),
            pid_max_per_namespace: tasks::pid_max_per_namespace(
                &rustix::system::uname().release().to_string_lossy(),
            ),
        }
    }

    fn abi(&self) -> ABI {
        match self.landlock_abi {
            1 => ABI::V1,
            2 => ABI::V2,
            3 => ABI::V3,
            4 => ABI::V4,
            5 => ABI::V5,
            n if n >= 6 => ABI_USED,
            _ => ABI::Unsupported,
        }
    }
}

/// Whether the kernel can create a ruleset with every right of `abi`.
fn kernel_accepts(abi: ABI) -> bool {
    let build = || -> Result<RulesetCreated, landlock::RulesetError> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?;
        if abi >= ABI::V4 {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        if abi >= ABI::V6 {
            ruleset = ruleset.scope(Scope::from_all(abi))?;
        }
        ruleset.create()
    };
    build().is_ok()
}

/// The guarded paths of a tree, as absolute paths: what a view covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Paths masked: the command sees an empty file or directory.
    pub secret: Vec<PathBuf>,
    /// Paths mounted read-only.
    pub protected: Vec<PathBuf>,
    /// Directories mounted on themselves, writable: a mount point cannot
    /// be renamed, removed or replaced (`EBUSY`), so what is beneath stays
    /// where the read-only covers and the sweep expect it.
    pub pinned: Vec<PathBuf>,
    /// Files shown as another, read-only: (the copy shown, the path it
    /// covers), e.g. a `.git/config` with the token in a remote's URL
    /// redacted.
    pub redacted: Vec<(PathBuf, PathBuf)>,
}

/// Limits every command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tasks (processes and threads) at once.
    pub processes: u32,
    /// Largest file a command may write, in bytes.
    pub file_size: u64,
    /// Size of the private `/tmp`, in MiB.
    pub tmp_mib: u64,
}

/// What to confine one command to.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The workspace (canonical).
    pub workspace: &'a Path,
    /// Directories writable besides the workspace (canonical).
    pub writable: &'a [PathBuf],
    /// Paths readable besides the system directories and the workspace.
    pub read: &'a [PathBuf],
    /// The broker's temp dir: the commands' `/tmp` in the fallback.
    pub temp: &'a Path,
    /// The grant lets the command use the network.
    pub network: bool,
    /// Build the namespace sandbox (else the fallback, by configuration or
    /// because this host cannot).
    pub namespaces: bool,
    /// Secret and protected paths to cover (namespaces only).
    pub found: &'a Found,
    /// The host's own directories, by what they hold (its configuration,
    /// its trust store, its state, its compile cache): where no namespace
    /// can hide them, a writable path holding one refuses the command.
    pub policy_dirs: &'a [(&'static str, PathBuf)],
    /// The limits the command gets.
    pub limits: Limits,
    /// The pids cgroup parent, where the host has one.
    pub pids: Option<&'a cgroup::Pids>,
    /// Where the views' skeletons are made (namespaces only).
    pub skeletons: Option<&'a view::Skeletons>,
}

/// A layer of the full sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// User, mount, PID, IPC, UTS and network namespaces with the view.
    Namespaces,
    /// The Landlock ruleset.
    Landlock,
    /// The seccomp filter.
    Seccomp,
}

/// Confinement ready to go into a [`Launch`], and what it enforces.
pub struct Prepared {
    pub(crate) namespaces: Option<Namespaces>,
    pub(crate) landlock: Option<Landlock>,
    pub(crate) seccomp: Option<Arc<seccomp::Filters>>,
    /// The pids limit a cgroup enforces, if the host has one.
    pub cgroup: Option<u32>,
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    pub(crate) drop_capabilities: bool,
    /// Names of what is enforced, for the report.
    pub enforced: Vec<String>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("enforced", &self.enforced)
            .finish_non_exhaustive()
    }
}

/// Device files every command may write (`> /dev/null`).
const WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// System directories the fallback lets commands read.
const READABLE: [&str; 12] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/dev",
];

/// `path` as a C string; the error names a path holding a NUL byte.
fn c_path(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::NulInPath(path.to_owned()))
}

/// Refuse a read or writable path inside the workspace or inside another
/// writable path.
fn inside_writable(plan: &Plan<'_>) -> Result<(), Error> {
    let holders: Vec<&Path> = std::iter::once(plan.workspace)
        .chain(plan.writable.iter().map(PathBuf::as_path))
        .collect();
    let listed = (plan.read.iter().map(|p| (p, "read")))
        .chain(plan.writable.iter().map(|p| (p, "writable")));
    for (path, list) in listed {
        if let Some(holder) = holders
            .iter()
            .find(|h| path.starts_with(h) && path.as_path() != **h)
        {
            return Err(Error::InsideWritable {
                path: path.clone(),
                list,
                holder: holder.to_path_buf(),
            });
        }
    }
    Ok(())
}

impl Prepared {
    /// Prepare `plan` on a kernel offering `support`.
    pub fn new(plan: &Plan<'_>, support: &Support) -> Result<Self, Error> {
        inside_writable(plan)?;
        let root = rustix::process::geteuid().is_root();
        let mut enforced = Vec::new();
        let mut namespaces = if plan.namespaces {
            Some(namespaces(plan, support.own_mounts, &mut enforced)?)
        } else {
            None
        };
        let in_namespaces = namespaces.is_some();
        // Without namespaces nothing can be hidden: a writable path holding
        // toolhost's own configuration, trust store, state or compile cache
        // refuses every command.
        if !in_namespaces {
            let writable =
                std::iter::once(plan.workspace).chain(plan.writable.iter().map(PathBuf::as_path));
            for w in writable {
                if let Some((what, dir)) = plan.policy_dirs.iter().find(|(_, d)| d.starts_with(w)) {
                    return Err(Error::PolicyDirWritable {
                        writable: w.to_owned(),
                        what,
                        dir: dir.clone(),
                    });
                }
            }
        }
        let drop_capabilities = in_namespaces || root;
        if drop_capabilities {
            enforced.push("no-capabilities".to_owned());
        }
        enforced.extend(["no-new-privs".to_owned(), "own-session".to_owned()]);
        let cgroup = plan.pids.map(|_| plan.limits.processes);
        let mut rlimits = vec![
            (libc::RLIMIT_FSIZE, plan.limits.file_size),
            (libc::RLIMIT_CORE, 0),
        ];
        tasks::limit(
            plan,
            support,
            cgroup,
            namespaces.as_mut(),
            &mut rlimits,
            &mut enforced,
        );
        enforced.push("file-size-limit".to_owned());
        let landlock = if support.landlock_abi >= 1 {
            Some(landlock(plan, support, in_namespaces, &mut enforced)?)
        } else {
            None
        };
        // In a network namespace the loopback is all there is: sockets need
        // no filter.
        let restrict_sockets = !plan.network && !in_namespaces;
        let seccomp = support
            .filters
            .as_ref()
            .map(|f| Arc::clone(&f[usize::from(!restrict_sockets)]));
        if seccomp.is_some() {
            enforced.push("seccomp-session".to_owned());
            if restrict_sockets {
                enforced.push("seccomp-net".to_owned());
            }
        }
        Ok(Self {
            namespaces,
            landlock,
            seccomp,
            cgroup,
            rlimits,
            drop_capabilities,
            enforced,
        })
    }

    /// Whether the command gets namespaces (else it runs in the fallback,
    /// Landlock and seccomp alone, and sees the host's environment paths).
    pub fn in_namespaces(&self) -> bool {
        self.namespaces.is_some()
    }

    /// The first layer of the full sandbox this command does not get, if
    /// any.
    pub fn missing(&self) -> Option<Layer> {
        if self.namespaces.is_none() {
            Some(Layer::Namespaces)
        } else if self.landlock.is_none() {
            Some(Layer::Landlock)
        } else if self.seccomp.is_none() {
            Some(Layer::Seccomp)
        } else {
            None
        }
    }

    /// The launch of `program` (candidate paths) with `argv` and `envp`
    /// in `cwd`; the error names a `cwd` that cannot be a C string.
    pub fn launch(
        self,
        cwd: &Path,
        program: Vec<CString>,
        argv: Vec<CString>,
        envp: Vec<CString>,
    ) -> Result<Launch, Error> {
        Ok(Launch {
            namespaces: self.namespaces,
            cwd: c_path(cwd)?,
            rlimits: self.rlimits,
            cgroup: self
                .cgroup
                .map_or(spawn::CgroupJoin::None, spawn::CgroupJoin::Limit),
            drop_capabilities: self.drop_capabilities,
            landlock: self.landlock,
            seccomp: self.seccomp,
            program,
            argv,
            envp,
            owner: Arc::from(""),
            net: None,
            stale_view: None,
        })
    }
}

/// The namespaces and the view of `plan`.
fn namespaces(
    plan: &Plan<'_>,
    own_mounts: bool,
    enforced: &mut Vec<String>,
) -> Result<Namespaces, Error> {
    let (uid, gid) = (rustix::process::geteuid(), rustix::process::getegid());
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if !own_mounts {
        flags |= libc::CLONE_NEWUSER;
        enforced.push("user-ns".to_owned());
    }
    enforced.extend(["mount-ns", "pid-ns", "ipc-ns", "uts-ns"].map(str::to_owned));
    if !plan.network {
        flags |= libc::CLONE_NEWNET;
        enforced.push("net-ns".to_owned());
    }
    let home = dirs::home_dir().filter(|h| h.is_absolute() && h.parent().is_some());
    let layout = view::Layout {
        workspace: plan.workspace.to_owned(),
        home,
        read: plan.read.to_vec(),
        writable: plan.writable.to_vec(),
        masked: plan.found.secret.clone(),
        read_only: plan.found.protected.clone(),
        pinned: plan.found.pinned.clone(),
        redacted: plan.found.redacted.clone(),
        tmp_mib: plan.limits.tmp_mib,
        network: plan.network,
    };
    enforced.extend([
        "private-proc".to_owned(),
        "private-tmp".to_owned(),
        "read-allowlist".to_owned(),
        format!("secrets-masked {}", plan.found.secret.len()),
        format!("protected-read-only {}", plan.found.protected.len()),
    ]);
    let id_map =
        |id: u32| CString::new(format!("{id} {id} 1")).expect("digits and spaces hold no NUL byte");
    let view = layout.view()?;
    let skeletons = plan.skeletons.ok_or(Error::NoSkeletons)?;
    // A command must never reach the skeletons: through a writable path
    // it could replace a mask or a mount point for the next command.
    let base = skeletons.base();
    if let Some(w) = std::iter::once(plan.workspace)
        .chain(plan.writable.iter().map(PathBuf::as_path))
        .find(|w| base.starts_with(w))
    {
        return Err(Error::SkeletonsWritable {
            writable: w.to_owned(),
            base: base.to_owned(),
        });
    }
    let skeleton = skeletons.get(&view.entries).map_err(Error::Skeleton)?;
    let split = own_mounts.then(|| view.split(&skeleton.root)).flatten();
    let (fixed, per_command) = match split {
        Some((ops, per_command)) => {
            let fixed =
                spawn::Fixed::new(&skeleton.root, &skeleton.mask_file, &skeleton.mask_dir, ops);
            (Some(Arc::new(fixed)), per_command)
        }
        None => (None, Vec::new()),
    };
    Ok(Namespaces {
        flags,
        uid_map: id_map(uid.as_raw()),
        gid_map: id_map(gid.as_raw()),
        root: c_path(&skeleton.root)?,
        mask_file: skeleton.mask_file.clone(),
        mask_dir: skeleton.mask_dir.clone(),
        ops: view.rooted(&skeleton.root),
        loopback: !plan.network,
        fixed,
        per_command,
        made: None,
        pid_max: None,
    })
}

/// The Landlock ruleset: reads and writes as the module docs say; TCP
/// bind and connect denied when the fallback restricts the network.
fn landlock(
    plan: &Plan<'_>,
    support: &Support,
    in_namespaces: bool,
    enforced: &mut Vec<String>,
) -> Result<Landlock, Error> {
    let abi = support.abi();
    let restrict_net = !plan.network && !in_namespaces && support.landlock_abi >= 4;
    let fail = |e: landlock::RulesetError| Error::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(fail)?;
    if restrict_net {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(fail)?;
    }
    if support.landlock_abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(fail)?;
    }
    let created = ruleset.create().map_err(fail)?;
    let fd: Option<OwnedFd> = created.into();
    let ruleset =
        fd.ok_or_else(|| Error::Landlock("it is not enforced by this kernel".to_owned()))?;
    let (read, all) = (
        AccessFs::from_read(abi).bits(),
        AccessFs::from_all(abi).bits(),
    );
    let mut rules: Vec<(CString, u64)> = Vec::new();
    let mut writable: Vec<&Path> = vec![plan.workspace];
    writable.extend(plan.writable.iter().map(PathBuf::as_path));
    writable.extend(WRITABLE_DEVICES.iter().map(Path::new));
    if in_namespaces {
        rules.push((c_path(Path::new("/"))?, read));
        writable.extend([Path::new("/tmp"), Path::new("/dev/shm")]);
        if let Some(home) = dirs::home_dir() {
            rules.push((c_path(&home)?, all));
        }
    } else {
        for p in READABLE
            .iter()
            .map(Path::new)
            .chain(plan.read.iter().map(PathBuf::as_path))
        {
            rules.push((c_path(p)?, read));
        }
        writable.push(plan.temp);
        enforced.push("read-allowlist (landlock)".to_owned());
    }
    for p in writable {
        rules.push((c_path(p)?, all));
    }
    enforced.push(format!("landlock-fs (abi {})", support.landlock_abi));
    if restrict_net {
        enforced.push("landlock-net".to_owned());
    }
    if support.landlock_abi >= 6 {
        enforced.push("landlock-scope".to_owned());
    }
    Ok(Landlock {
        ruleset,
        rules,
        file_rights: AccessFs::from_file(abi).bits(),
    })
}

/// `program` resolved against `path` (the command's `PATH`), as the
/// candidates `execve` tries in order; a name with a `/` is itself.
pub fn candidates(program: &str, path: &str, cwd: &Path) -> Vec<CString> {
    if program.contains('/') {
        return c_path(&cwd.join(program)).into_iter().collect();
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .filter_map(|d| c_path(&Path::new(d).join(program)).ok())
        .collect()
}
