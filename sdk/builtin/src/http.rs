//! One HTTP request over wasi:http, for the built-ins that reach the web
//! (web_fetch, web_search). The host checks every request against the
//! tool's grant (hosts, schemes, resolved addresses) and bounds it by the
//! call's deadline; this module builds the request, reads the body up to a
//! limit and puts the host's refusals in words a model can act on.

use std::time::Duration;
use toolhost_sdk::ToolError;

// The markers around content from the web (data, never instructions), and
// how text inside them is kept from closing the block early or opening a
// fake one: the same as around other MCP servers' text.
pub use toolhost_shared::untrusted::{BEGIN, END, defuse};

/// A response read whole (up to the limit asked for).
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body's bytes, cut at the limit.
    pub body: Vec<u8>,
    /// True when the body reached the limit (and was cut there).
    pub cut: bool,
}

impl Response {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// GET `url` with `headers`, reading at most `max_body` bytes of the body;
/// with `timeout`, the connection, the first byte and each later byte must
/// come within it. Redirects are not followed (the caller sees 3xx).
#[cfg(target_os = "wasi")]
pub fn get(
    url: &url::Url,
    headers: &[(&str, &[u8])],
    timeout: Option<Duration>,
    max_body: usize,
) -> Result<Response, ToolError> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{OutgoingBody, RequestOptions};

    let request = request_for(url, headers)?;
    let options = timeout.map(|t| {
        let options = RequestOptions::new();
        let nanos = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        let _ = options.set_connect_timeout(Some(nanos));
        let _ = options.set_first_byte_timeout(Some(nanos));
        let _ = options.set_between_bytes_timeout(Some(nanos));
        options
    });
    let body = request
        .body()
        .map_err(|()| ToolError::failed("cannot open the request body"))?;
    let pending = outgoing_handler::handle(request, options).map_err(|e| refused(url, &e))?;
    OutgoingBody::finish(body, None).map_err(|e| refused(url, &e))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(refused(url, &e)),
        _ => {
            return Err(ToolError::failed(format!(
                "no response from {}",
                shown(url)
            )));
        }
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let incoming = response
        .consume()
        .map_err(|()| ToolError::failed("cannot read the response body"))?;
    let stream = incoming
        .stream()
        .map_err(|()| ToolError::failed("cannot read the response body"))?;
    let (bytes, cut) = read_body(&stream, max_body, url)?;
    drop(stream);
    Ok(Response {
        status,
        headers,
        body: bytes,
        cut,
    })
}

/// A GET of `url` with `headers`, its scheme, authority and path set.
#[cfg(target_os = "wasi")]
fn request_for(
    url: &url::Url,
    headers: &[(&str, &[u8])],
) -> Result<wasip2::http::types::OutgoingRequest, ToolError> {
    use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};
    let fields = Fields::from_list(
        &headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.to_vec()))
            .collect::<Vec<_>>(),
    )
    .map_err(|e| ToolError::failed(format!("cannot build the request headers: {e:?}")))?;
    let request = OutgoingRequest::new(fields);
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

/// At most `max_body` bytes of `stream`, and whether it was cut there.
#[cfg(target_os = "wasi")]
fn read_body(
    stream: &wasip2::io::streams::InputStream,
    max_body: usize,
    url: &url::Url,
) -> Result<(Vec<u8>, bool), ToolError> {
    use wasip2::io::streams::StreamError;
    let mut bytes = Vec::new();
    let mut cut = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() >= max_body {
                    cut = true;
                    bytes.truncate(max_body);
                    break;
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(ToolError::retry(format!(
                    "reading {} failed: {}",
                    shown(url),
                    e.to_debug_string()
                )));
            }
        }
    }
    Ok((bytes, cut))
}

/// Outside a toolhost sandbox there is no wasi:http.
#[cfg(not(target_os = "wasi"))]
pub fn get(
    url: &url::Url,
    headers: &[(&str, &[u8])],
    timeout: Option<Duration>,
    max_body: usize,
) -> Result<Response, ToolError> {
    let _ = (url, headers, timeout, max_body);
    Err(ToolError::failed(
        "this tool reaches the web through the toolhost host (wasi:http); run it as a plugin",
    ))
}

/// `url` without its query, for messages (a query may carry a key).
pub fn shown(url: &url::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// A request the host refused or could not complete, in words.
#[cfg(target_os = "wasi")]
fn refused(url: &url::Url, code: &wasip2::http::types::ErrorCode) -> ToolError {
    use wasip2::http::types::ErrorCode;
    let host = url.host_str().unwrap_or_default();
    let url = shown(url);
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
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            ToolError::retry(format!("`{host}` did not answer in time; try again later"))
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
