//! Who may drive a network listener (`serve --http`, `review`): bearer
//! tokens and the files that hold them, and on loopback the user the
//! connecting socket belongs to.
//!
//! - A token file holds one credential per line, `TOKEN [NAME]` (`#` starts
//!   a comment). It must be readable by its owner alone: a file group or
//!   others may read is refused with the `chmod` that fixes it.
//! - Without a token file, `serve --http` makes a token and keeps it in a
//!   0600 file in a 0700 directory of the user's ([`token_dir`]); only the
//!   path is printed, never the token.
//! - On a loopback address, a connection whose socket another user made is
//!   answered `403` and closed before a byte of its request is read
//!   ([`OwnUser`]). The socket's owner comes from the kernel: one exact
//!   lookup of the client's end over `NETLINK_SOCK_DIAG` (its `uid` is the
//!   user that created it, which that user cannot change). A connection
//!   whose socket is not found is refused too.

use std::io::{self, Write as _};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt as _;

/// The fewest characters a token may have.
pub const MIN_TOKEN: usize = 16;

/// One credential a listener accepts.
#[derive(Clone)]
pub struct Credential {
    /// Who holds it, as the audit log and the logs name it.
    pub name: Arc<str>,
    /// The bearer token.
    pub token: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("token", &"[redacted]")
            .finish()
    }
}

/// How a listener authenticates its requests.
#[derive(Debug, Clone)]
pub enum Auth {
    /// `Authorization: Bearer TOKEN`, TOKEN one of these.
    Tokens(Vec<Credential>),
    /// No token (`--no-auth`): loopback only, and only the user who
    /// started the server may connect ([`OwnUser`]).
    Open,
}

impl Auth {
    /// One credential named `name`.
    pub fn token(name: &str, token: impl Into<String>) -> Self {
        Self::Tokens(vec![Credential {
            name: name.into(),
            token: token.into(),
        }])
    }

    /// The credential `header` (an `Authorization` value) presents, if it
    /// is one of these; with [`Auth::Open`], `open_as`.
    pub fn principal(&self, header: Option<&str>, open_as: &Arc<str>) -> Option<Arc<str>> {
        let Self::Tokens(credentials) = self else {
            return Some(Arc::clone(open_as));
        };
        // The scheme name is case-insensitive (RFC 9110).
        let given = header
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, token)| token.trim());
        // Every credential is compared, in constant time each.
        let mut found = None;
        for c in credentials {
            if crate::net::same(given.as_bytes(), c.token.as_bytes()) {
                found = Some(Arc::clone(&c.name));
            }
        }
        found
    }
}

/// The text of `path`, a file only its owner may read (refused with the
/// `chmod` to run otherwise): a token file, a cluster key.
pub fn read_private(path: &Path) -> Result<String, AccessError> {
    let read = |source| AccessError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mode = file.metadata().map_err(read)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(AccessError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    io::read_to_string(file).map_err(read)
}

/// Why a token file or the generated token cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The file cannot be read.
    #[error("cannot read the token file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Group or others may read it.
    #[error(
        "the token file {path} may be read by other users (mode {mode:o}); run `chmod 600 {path}` and start again"
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// No usable credential in it.
    #[error("the token file {path}: {why}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The generated token cannot be kept.
    #[error("cannot keep the server's token in {path}: {source}")]
    Keep {
        /// Where it was to go.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// There is nowhere to keep a generated token.
    #[error(
        "there is no directory to keep the server's token in (set XDG_RUNTIME_DIR or HOME), \
         or give one with --token-file FILE"
    )]
    NoDir,
}

/// The credentials in the token file at `path`: each line `TOKEN [NAME]`
/// (blank lines and `#` comments skipped; NAME defaults to `token N`).
pub fn read_token_file(path: &Path) -> Result<Vec<Credential>, AccessError> {
    let text = read_private(path)?;
    let invalid = |why: String| AccessError::Invalid {
        path: path.to_owned(),
        why,
    };
    let mut credentials: Vec<Credential> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (token, name) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if token.len() < MIN_TOKEN {
            return Err(invalid(format!(
                "line {}: a token must be at least {MIN_TOKEN} characters",
                n + 1
            )));
        }
        let name = match name.trim() {
            "" => format!("token {}", credentials.len() + 1),
            name => name.to_owned(),
        };
        if credentials.iter().any(|c| *c.name == *name) {
            return Err(invalid(format!(
                "line {}: the name `{name}` is given twice",
                n + 1
            )));
        }
        credentials.push(Credential {
            name: name.into(),
            token: token.to_owned(),
        });
    }
    if credentials.is_empty() {
        return Err(invalid(format!(
            "no token in it: write one of at least {MIN_TOKEN} characters on a line (`TOKEN [NAME]`)"
        )));
    }
    Ok(credentials)
}

/// Where a generated token is kept: `$XDG_RUNTIME_DIR/toolhost`, else
/// `$XDG_STATE_HOME/toolhost` (`~/.local/state/toolhost`); in its
/// `tokens` subdirectory, which holds nothing else (toolhost's state
/// directory itself may be open to others to read).
pub fn token_dir() -> Option<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir());
    runtime
        .or_else(dirs::state_dir)
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))
        .map(|d| d.join("toolhost").join("tokens"))
}

/// A generated token kept in a file only its owner can read; the file is
/// removed when this drops.
#[derive(Debug)]
pub struct KeptToken {
    /// The file.
    pub path: PathBuf,
    /// The credential it holds.
    pub credential: Credential,
}

impl KeptToken {
    /// A new random token kept in `dir` (default [`token_dir`]) as
    /// `http-PORT.token`, or `http-pid-PID.token` when the port is not
    /// known before binding (0).
    pub fn new(port: u16, dir: Option<PathBuf>) -> Result<Self, AccessError> {
        let dir = dir.or_else(token_dir).ok_or(AccessError::NoDir)?;
        let name = match port {
            0 => format!("http-pid-{}.token", std::process::id()),
            port => format!("http-{port}.token"),
        };
        let path = dir.join(name);
        let keep = |source| AccessError::Keep {
            path: path.clone(),
            source,
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(keep)?;
        let mut meta = std::fs::symlink_metadata(&dir).map_err(keep)?;
        let own = rustix::process::geteuid().as_raw();
        // Made by this user with a looser mode (by hand, or by a umask):
        // closed, as it is only for tokens.
        if meta.is_dir() && meta.uid() == own && meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(keep)?;
            meta = std::fs::symlink_metadata(&dir).map_err(keep)?;
        }
        if !meta.is_dir() || meta.uid() != own || meta.mode() & 0o077 != 0 {
            return Err(keep(io::Error::other(format!(
                "{} must be a directory of this user's that no one else may open (chmod 700)",
                dir.display()
            ))));
        }
        // A file left by a server that did not end cleanly is replaced,
        // never written through.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(keep(e)),
            _ => {}
        }
        let token = crate::net::random_hex(32);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(keep)?;
        writeln!(file, "{token}").map_err(keep)?;
        Ok(Self {
            path,
            credential: Credential {
                name: "token".into(),
                token,
            },
        })
    }
}

impl Drop for KeptToken {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A TCP listener that, on a loopback address, serves only connections
/// whose socket this process's user made; others get `403` and are closed.
pub struct OwnUser {
    inner: tokio::net::TcpListener,
    /// Whom to serve: this process's effective uid, on loopback.
    only: Option<u32>,
}

impl OwnUser {
    /// Serve `inner`'s connections; on loopback, only this user's.
    pub fn new(inner: tokio::net::TcpListener) -> io::Result<Self> {
        let loopback = inner.local_addr()?.ip().is_loopback();
        Ok(Self {
            inner,
            only: loopback.then(|| rustix::process::geteuid().as_raw()),
        })
    }
}

impl axum::serve::Listener for OwnUser {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, peer) = match self.inner.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors, mostly: wait rather than spin.
                    tracing::debug!(%err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            // No Nagle: a result written right after the SSE priming event
            // must not wait for the client's delayed ACK (~40 ms a call).
            if let Err(err) = tcp.set_nodelay(true) {
                tracing::debug!(%err, "cannot set TCP_NODELAY");
            }
            let Some(own) = self.only else {
                return (tcp, peer);
            };
            let local = match tcp.local_addr() {
                Ok(local) => local,
                Err(_) => continue,
            };
            match socket_uid(peer, local) {
                Some(uid) if uid == own => return (tcp, peer),
                uid => {
                    tracing::warn!(
                        %peer,
                        uid = uid.map_or_else(|| "unknown".to_owned(), |u| u.to_string()),
                        "refused a connection from another user: only uid {own}, who started this server, may use it"
                    );
                    tokio::spawn(refuse(tcp, own));
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Until the server is asked to stop: Ctrl-C (SIGINT) or SIGTERM, so a
/// service manager's stop also ends it cleanly (its token file removed).
pub async fn stop_requested() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Answer `403` on a connection another user made, then close it.
async fn refuse(mut tcp: tokio::net::TcpStream, own: u32) {
    let body = format!(
        "Forbidden: this toolhost serves only the user who started it (uid {own}); \
         connections from other users are refused on loopback. Start your own server.\n"
    );
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        let _ = tcp.write_all(answer.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// The uid that owns the client end of the loopback connection from
/// `peer` to `local`: one exact lookup in the kernel's socket table over
/// `NETLINK_SOCK_DIAG` (what `ss` uses), whatever the number of sockets.
/// A client socket of the other family (an IPv6 socket connected to an
/// IPv4 address) is looked up under its mapped addresses too.
pub fn socket_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let mapped = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
        IpAddr::V6(_) => a,
    };
    diag_uid(peer, local).or_else(|| diag_uid(mapped(peer), mapped(local)))
}

/// `SOCK_DIAG_BY_FAMILY`, a request for one socket (`NLM_F_REQUEST`),
/// `INET_DIAG_NOCOOKIE`, `NLMSG_ERROR`: from linux/sock_diag.h,
/// linux/netlink.h and linux/inet_diag.h.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NO_COOKIE: u32 = u32::MAX;
/// `TCP_LISTEN` in linux/tcp_states.h.
const TCP_LISTEN: u8 = 10;
/// Where `idiag_uid` sits in the answer: after the 16-byte `nlmsghdr`,
/// `inet_diag_msg`'s family, state, timer, retrans (4), its socket id (48)
/// and expires, rqueue, wqueue (12).
const UID_AT: usize = 16 + 4 + 48 + 12;

/// The `inet_diag_req_v2` for the TCP socket whose own end is `from` and
/// whose other end is `to`, in a netlink message.
fn diag_request(from: SocketAddr, to: SocketAddr) -> Vec<u8> {
    let family = if from.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    let address = |a: SocketAddr| -> [u8; 16] {
        let mut bytes = [0u8; 16];
        match a.ip() {
            IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => bytes = v6.octets(),
        }
        bytes
    };
    let mut m = Vec::with_capacity(72);
    m.extend_from_slice(&72u32.to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // the kernel's port id
    m.extend_from_slice(&[family as u8, libc::IPPROTO_TCP as u8, 0, 0]);
    m.extend_from_slice(&u32::MAX.to_ne_bytes()); // every TCP state
    m.extend_from_slice(&from.port().to_be_bytes());
    m.extend_from_slice(&to.port().to_be_bytes());
    m.extend_from_slice(&address(from));
    m.extend_from_slice(&address(to));
    m.extend_from_slice(&0u32.to_ne_bytes()); // any interface
    m.extend_from_slice(&NO_COOKIE.to_ne_bytes());
    m.extend_from_slice(&NO_COOKIE.to_ne_bytes());
    m
}

/// The uid of the TCP socket `from` → `to`, asked of the kernel.
fn diag_uid(from: SocketAddr, to: SocketAddr) -> Option<u32> {
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, netlink};
    let fd = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(netlink::SOCK_DIAG),
    )
    .ok()?;
    let kernel = netlink::SocketAddrNetlink::new(0, 0);
    let request = diag_request(from, to);
    rustix::net::sendto(&fd, &request, SendFlags::empty(), &kernel).ok()?;
    let mut answer = [0u8; 512];
    let (len, _) = rustix::net::recv(&fd, &mut answer, RecvFlags::empty()).ok()?;
    let answer = answer.get(..len)?;
    let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
    // Anything else is NLMSG_ERROR: no such socket. The kernel falls back
    // to a listener on the asked port when no connection matches: only an
    // answer with both ports asked for, and not listening, is the one.
    let ports_asked = request.get(24..28)?;
    let (state, ports) = (*answer.get(17)?, answer.get(20..24)?);
    if kind != SOCK_DIAG_BY_FAMILY || ports != ports_asked || state == TCP_LISTEN {
        return None;
    }
    let uid = answer.get(UID_AT..UID_AT + 4)?;
    Some(u32::from_ne_bytes(uid.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_connection_is_traced_to_its_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        let uid = socket_uid(peer, server.local_addr().unwrap());
        assert_eq!(uid, Some(rustix::process::geteuid().as_raw()));
        // The server's own end is not the client's; an end that does not
        // exist is no one's.
        assert_eq!(
            socket_uid(server.local_addr().unwrap(), "127.0.0.1:1".parse().unwrap()),
            None
        );
        drop(client);
        if let Ok(listener) = std::net::TcpListener::bind("[::1]:0") {
            let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, peer) = listener.accept().unwrap();
            let uid = socket_uid(peer, server.local_addr().unwrap());
            assert_eq!(uid, Some(rustix::process::geteuid().as_raw()), "over IPv6");
        }
    }

    #[test]
    fn token_files_must_be_private_and_hold_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(
            &path,
            "# agents\n0123456789abcdef0123 ci\n\nfedcba98765432100000\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_token_file(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("chmod 600 {}", path.display())),
            "{err}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let creds = read_token_file(&path).unwrap();
        let names: Vec<&str> = creds.iter().map(|c| &*c.name).collect();
        assert_eq!(names, ["ci", "token 2"]);
        let auth = Auth::Tokens(creds);
        let open: Arc<str> = "uid 0".into();
        assert_eq!(
            auth.principal(Some("bearer 0123456789abcdef0123"), &open)
                .as_deref(),
            Some("ci")
        );
        assert_eq!(auth.principal(Some("Bearer nope"), &open), None);
        assert_eq!(auth.principal(None, &open), None);
        assert_eq!(Auth::Open.principal(None, &open).as_deref(), Some("uid 0"));
        std::fs::write(&path, "short\n").unwrap();
        let err = read_token_file(&path).unwrap_err().to_string();
        assert!(err.contains("at least 16"), "{err}");
    }

    #[test]
    fn a_kept_token_is_private_and_goes_with_the_server() {
        let dir = tempfile::tempdir().unwrap();
        // toolhost's state directory as other parts make it (0755), and a
        // tokens directory someone left open: closed, then used.
        let tokens = dir.path().join("toolhost/tokens");
        std::fs::create_dir_all(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o755)).unwrap();
        let kept = KeptToken::new(8765, Some(tokens.clone())).unwrap();
        let mode = std::fs::metadata(&tokens).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700);
        let meta = std::fs::metadata(&kept.path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        let read = read_token_file(&kept.path).unwrap();
        assert_eq!(read[0].token, kept.credential.token);
        assert!(!format!("{kept:?}").contains(&kept.credential.token));
        let path = kept.path.clone();
        drop(kept);
        assert!(!path.exists());
    }
}
