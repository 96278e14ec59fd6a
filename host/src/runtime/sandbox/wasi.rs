//! The WASI context a call gets: its captured pipes, no sockets, the granted environment variables and directories, nothing else.

use super::*;

/// The WASI context of a call: its captured stdout and stderr, no
/// sockets, the granted environment variables, and the workspace and
/// directories preopened with the grant's access. Nothing else.
pub(super) fn wasi_ctx(
    req: &CallRequest<'_>,
    stdout: &CappedPipe,
    stderr: &CappedPipe,
) -> Result<WasiCtx, CallError> {
    let mut builder = WasiCtxBuilder::new();
    // Must come before the preopens, which capture it: without it every file
    // operation is a round trip through a blocking thread pool.
    builder
        .allow_blocking_current_thread(true)
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    // A secret stored for the tool, else the host's variable.
    for key in &req.grant.env {
        let stored = req.grant.secrets.iter().find(|(name, _)| name == key);
        if let Some((_, value)) = stored {
            builder.env(key, &value.0);
        } else if let Ok(value) = std::env::var(key) {
            builder.env(key, value);
        }
    }
    let failed = |what: String| CallError::new(ErrorKind::Failed, what);
    if let (Some(access), Some(dir)) = (req.grant.workspace, req.workspace) {
        builder
            .preopened_dir(dir, ".", perms(access))
            .map_err(|e| failed(format!("cannot open the workspace {}: {e}", dir.display())))?;
    }
    for d in &req.grant.directories {
        builder
            .preopened_dir(&d.host_path, format!("/{}", d.name), perms(d.access))
            .map_err(|e| {
                failed(format!(
                    "cannot open directory `{}` ({}): {e}",
                    d.name,
                    d.host_path.display()
                ))
            })?;
    }
    Ok(builder.build())
}
