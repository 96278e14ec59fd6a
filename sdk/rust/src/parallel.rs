//! Fan a call's work out over the host's cores (a component has no threads).
//!
//! Split the work into shares, then [`run_shares`]: the host runs this same
//! tool once per share, with the same arguments, and each run finds its share
//! in [`Context::share`](crate::Context::share). Ask [`width`] first: it says
//! how many runs would go at once, and when it is 1 (no spare cores, a run
//! that is itself a share, or natively) do the work directly instead.
//!
//! ```no_run
//! use toolhost_sdk::{Context, Output, ToolError, parallel};
//! fn search(ctx: &Context, files: Vec<String>) -> Result<Output, ToolError> {
//!     if let Some(share) = ctx.share() {
//!         return Ok(Output::text(format!("searched {share}")));
//!     }
//!     if parallel::width() > 1 {
//!         let outputs = parallel::run_shares(files);
//!         // merge outputs, in input order ...
//!     }
//!     Ok(Output::text("searched everything"))
//! }
//! ```

use crate::{Output, ToolError};

/// How many shares the host would run at once right now (at least 1).
///
/// ```
/// // Natively (no host) everything runs in this instance.
/// assert_eq!(toolhost_sdk::parallel::width(), 1);
/// ```
pub fn width() -> usize {
    #[cfg(target_arch = "wasm32")]
    {
        crate::__private::bindings::toolhost::plugin::parallel::width() as usize
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        1
    }
}

/// Run this tool once per input, concurrently where the host can; the
/// results come back in input order. Natively there is no host, and every
/// input fails: check [`width`] first.
///
/// ```
/// let results = toolhost_sdk::parallel::run_shares(vec!["a".into(), "b".into()]);
/// assert_eq!(results.len(), 2);
/// assert!(results.iter().all(Result::is_err)); // natively: no host
/// ```
pub fn run_shares(inputs: Vec<String>) -> Vec<Result<Output, ToolError>> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::__private::bindings::toolhost::plugin::parallel::run_shares(&inputs)
            .into_iter()
            .map(|r| r.map(Output::from).map_err(ToolError::from))
            .collect()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        inputs
            .iter()
            .map(|_| {
                Err(ToolError::failed(
                    "no host to run shares of the work (native run)",
                ))
            })
            .collect()
    }
}

/// Deal `items` round-robin into at most `shares` shares, so similar items
/// spread evenly and each share stays in the items' order.
///
/// ```
/// let shares = toolhost_sdk::parallel::deal(vec![1, 2, 3, 4, 5], 2);
/// assert_eq!(shares, vec![vec![1, 3, 5], vec![2, 4]]);
/// ```
pub fn deal<T>(items: Vec<T>, shares: usize) -> Vec<Vec<T>> {
    let shares = shares.clamp(1, items.len().max(1));
    let mut out: Vec<Vec<T>> = (0..shares).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        out[i % shares].push(item);
    }
    out
}

/// Run one share per element of `shares` (each serialised as JSON) and
/// parse every run's structured output as `R`, in order. The first failed
/// run is the error.
///
/// ```
/// use toolhost_sdk::{ToolError, parallel};
/// let files: Vec<String> = vec!["a.rs".into(), "b.rs".into()];
/// let shares = parallel::deal(files, parallel::width());
/// // Each run takes its files with `parallel::share` and returns its count as structured data.
/// let counts: Result<Vec<usize>, ToolError> = parallel::fan_out(&shares);
/// assert!(counts.is_err()); // natively there is no host to run the shares
/// ```
pub fn fan_out<S, R>(shares: &[S]) -> Result<Vec<R>, ToolError>
where
    S: serde::Serialize,
    R: serde::de::DeserializeOwned,
{
    let inputs = shares
        .iter()
        .map(|s| {
            serde_json::to_string(s)
                .map_err(|e| ToolError::failed(format!("cannot encode a share: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    run_shares(inputs)
        .into_iter()
        .map(|out| {
            let out = out?;
            let data = out
                .structured()
                .cloned()
                .ok_or_else(|| ToolError::failed("a share returned no structured result"))?;
            serde_json::from_value(data)
                .map_err(|e| ToolError::failed(format!("a share's result is malformed: {e}")))
        })
        .collect()
}

/// In a run started by [`run_shares`]: its share, parsed as `T`.
///
/// ```
/// use toolhost_sdk::{Context, ToolError, parallel};
/// let ctx = Context::default();
/// // `Some(Ok(files))` in a run started by `fan_out`; `None` in the call that fans out.
/// let mine: Option<Result<Vec<String>, ToolError>> = parallel::share(&ctx);
/// assert!(mine.is_none());
/// ```
pub fn share<T: serde::de::DeserializeOwned>(ctx: &crate::Context) -> Option<Result<T, ToolError>> {
    ctx.share().map(|s| {
        serde_json::from_str(s)
            .map_err(|e| ToolError::failed(format!("this run's share is malformed: {e}")))
    })
}
