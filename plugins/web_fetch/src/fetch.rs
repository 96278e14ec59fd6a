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
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::OutgoingBody;
    use wasip2::io::streams::StreamError;

    let request = get_request(url)?;
    let body = request
        .body()
        .map_err(|()| ToolError::failed("cannot open the request body"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| refused(url, &e))?;
    OutgoingBody::finish(body, None).map_err(|e| refused(url, &e))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(refused(url, &e)),
        _ => return Err(ToolError::failed(format!("no response from {url}"))),
    };
    let status = response.status();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .first()
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    if (300..400).contains(&status)
        && let Some(location) = header("location")
    {
        return Ok(Hop::Redirect(location));
    }
    let content_type = header("content-type").unwrap_or_else(|| "application/octet-stream".into());
    let incoming = response
        .consume()
        .map_err(|()| ToolError::failed("cannot read the response body"))?;
    let stream = incoming
        .stream()
        .map_err(|()| ToolError::failed("cannot read the response body"))?;
    let mut bytes = Vec::new();
    let mut cut = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() >= MAX_BODY_BYTES {
                    cut = true;
                    bytes.truncate(MAX_BODY_BYTES);
                    break;
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(ToolError::retry(format!(
                    "reading {url} failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
    drop(stream);
    if status >= 400 {
        return Err(status_error(url, status));
    }
    Ok(Hop::Done(Page {
        url: url.to_string(),
        content_type,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        cut,
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

/// A GET of `url` with the tool's headers.
#[cfg(target_os = "wasi")]
fn get_request(url: &url::Url) -> Result<wasip2::http::types::OutgoingRequest, ToolError> {
    use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

    let headers = Fields::from_list(&[
        ("user-agent".to_owned(), b"toolhost-web_fetch/0.1".to_vec()),
        (
            "accept".to_owned(),
            b"text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8".to_vec(),
        ),
    ])
    .map_err(|e| ToolError::failed(format!("cannot build the request headers: {e:?}")))?;
    let request = OutgoingRequest::new(headers);
    let _ = request.set_method(&Method::Get);
    let scheme = if url.scheme() == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let _ = request.set_scheme(Some(&scheme));
    let host = url.host_str().unwrap_or_default();
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let _ = request.set_authority(Some(&authority));
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let _ = request.set_path_with_query(Some(&path));
    Ok(request)
}

/// A request the host refused or could not complete, in words.
#[cfg(target_os = "wasi")]
fn refused(url: &url::Url, code: &wasip2::http::types::ErrorCode) -> ToolError {
    use wasip2::http::types::ErrorCode;
    let host = url.host_str().unwrap_or_default();
    match code {
        ErrorCode::HttpRequestDenied => ToolError::denied(format!(
            "{url}: `{host}` is not among the hosts this tool was granted; nothing was fetched"
        )),
        ErrorCode::DestinationIpProhibited => ToolError::denied(format!(
            "{url}: `{host}` resolves to a private, local or metadata address, which is refused \
             unless the grant lists that address; nothing was fetched"
        )),
        ErrorCode::DnsError(_) => {
            ToolError::retry(format!("cannot resolve `{host}`; check the URL"))
        }
        ErrorCode::ConnectionRefused | ErrorCode::ConnectionTimeout => {
            ToolError::retry(format!("cannot connect to `{host}`; try again later"))
        }
        ErrorCode::HttpResponseBodySize(_) => ToolError::failed(format!(
            "{url}: the response is larger than the host allows"
        )),
        ErrorCode::HttpProtocolError => ToolError::denied(format!(
            "{url}: the host refused the request (only http and https are allowed)"
        )),
        other => ToolError::failed(format!("fetching {url} failed: {other:?}")),
    }
}
