//! The request itself, over wasi:http. Redirects are followed here, one
//! checked request per hop; the host refuses what the grant does not allow.

use crate::{MAX_BODY_BYTES, MAX_REDIRECTS, Page};
use toolhost_sdk::ToolError;

/// GET `url`, following redirects.
#[cfg(target_os = "wasi")]
pub fn get(url: &url::Url) -> Result<Page, ToolError> {
    let mut url = url.clone();
    for _ in 0..=MAX_REDIRECTS {
        match once(&url)? {
            Hop::Done(page) => return Ok(page),
            Hop::Redirect(location) => {
                let next = url.join(&location).map_err(|e| {
                    ToolError::failed(format!(
                        "{url} redirects to `{location}`, which is not a URL ({e})"
                    ))
                })?;
                if !matches!(next.scheme(), "http" | "https")
                    || (url.scheme() == "https" && next.scheme() == "http")
                {
                    return Err(ToolError::denied(format!(
                        "{url} redirects to `{next}`; only http(s) redirects that keep https are followed"
                    )));
                }
                url = next;
            }
        }
    }
    Err(ToolError::failed(format!(
        "more than {MAX_REDIRECTS} redirects; stopped at {url}"
    )))
}

/// Outside a toolhost sandbox there is no wasi:http.
#[cfg(not(target_os = "wasi"))]
pub fn get(url: &url::Url) -> Result<Page, ToolError> {
    let _ = (url, MAX_BODY_BYTES, MAX_REDIRECTS);
    Err(ToolError::failed(
        "web_fetch fetches through the toolhost host (wasi:http); run it as a plugin",
    ))
}

#[cfg(target_os = "wasi")]
enum Hop {
    Done(Page),
    Redirect(String),
}

#[cfg(target_os = "wasi")]
fn once(url: &url::Url) -> Result<Hop, ToolError> {
    let response = toolhost_builtin::http::get(
        url,
        &[
            ("user-agent", b"toolhost-web_fetch/0.1"),
            (
                "accept",
                b"text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8",
            ),
        ],
        None,
        MAX_BODY_BYTES,
    )?;
    let status = response.status;
    if (300..400).contains(&status)
        && let Some(location) = response.header("location")
    {
        return Ok(Hop::Redirect(location.to_owned()));
    }
    if status >= 400 {
        return Err(status_error(url, status));
    }
    Ok(Hop::Done(Page {
        url: url.to_string(),
        content_type: response
            .header("content-type")
            .unwrap_or("application/octet-stream")
            .to_owned(),
        body: String::from_utf8_lossy(&response.body).into_owned(),
        cut: response.cut,
    }))
}

/// An HTTP error status in the model's terms: retry what may change.
#[cfg(target_os = "wasi")]
fn status_error(url: &url::Url, status: u16) -> ToolError {
    let message = format!("{url} answered HTTP {status}");
    if status == 404 || status == 410 {
        ToolError::retry(format!("{message}: the page does not exist; check the URL"))
    } else if status >= 500 || status == 429 {
        ToolError::retry(format!("{message}; try again later"))
    } else {
        ToolError::failed(message)
    }
}
