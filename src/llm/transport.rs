//! The HTTP seam: plain request/response values and the small [`Transport`] trait the endpoint
//! client is generic over.
//!
//! Implementations: `llm::http::FetchTransport` (browser `fetch`, wasm only) and
//! `scripted::server::InProcess` (the scripted endpoint called in-process, with a fake clock, for
//! native tests; behind the `test-support` feature). Retries, structured-output fallback and stream decoding sit above
//! this trait, so they are tested natively.
//!
//! *Invariant:* `HttpRequest`'s `Debug` never prints header values that carry credentials.

use crate::clock::Millis;
use crate::error::Result;
use crate::llm::config::is_sensitive_header;
use crate::llm::Cancel;

/// HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
}

impl Method {
    /// `GET` or `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// A request, fully built (URL normalised, headers including credentials, JSON body).
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method.
    pub method: Method,
    /// Absolute URL.
    pub url: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// Body (JSON text), if any.
    pub body: Option<String>,
    /// True when the caller will read the body as a stream.
    pub stream: bool,
}

impl HttpRequest {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let v = if is_sensitive_header(k) {
                    "***"
                } else {
                    v.as_str()
                };
                (k.as_str(), v)
            })
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .field("stream", &self.stream)
            .finish()
    }
}

/// The value of header `name` (case-insensitive) in a header list.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A response whose headers arrived; the body is read with [`ResponseBody::chunk`].
#[derive(Debug)]
pub struct HttpResponse<B> {
    /// HTTP status.
    pub status: u16,
    /// Headers (names lowercase where the transport knows them).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: B,
}

/// A response body read in chunks as they arrive from the network.
#[allow(async_fn_in_trait)] // generic, single-threaded (the browser's), never dyn
pub trait ResponseBody {
    /// The next chunk, `None` at the end. Errors: [`crate::Error::Cancelled`],
    /// [`crate::Error::LlmTimeout`] (no chunk within the timeout), [`crate::Error::LlmUnreachable`]
    /// (connection lost).
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>>;

    /// Reads the rest of the body.
    async fn read_all(&mut self) -> Result<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(c) = self.chunk().await? {
            all.extend_from_slice(&c);
        }
        Ok(all)
    }
}

/// How long a request may stay silent (field case F37), in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The wait for the response to start: its headers, and then its first body byte (a local
    /// model may think over a long prompt for minutes before its first token).
    pub start_ms: u64,
    /// The longest gap between two body chunks once the first arrived: a stream that stalls
    /// fails after this, however long it has run; one that keeps producing is never cut.
    pub idle_ms: u64,
}

/// Sends HTTP requests, sleeps and tells the time: everything the endpoint client needs from the
/// platform.
#[allow(async_fn_in_trait)] // see `ResponseBody`
pub trait Transport {
    /// The body type of responses.
    type Body: ResponseBody;

    /// Sends `request` and resolves once the response headers arrived. `timeouts.start_ms`
    /// bounds the wait for the headers and then for the body's first chunk; `timeouts.idle_ms`
    /// the wait for each later chunk. A timeout aborts the request (the server sees a
    /// disconnect).
    ///
    /// Errors: [`crate::Error::Cancelled`]; [`crate::Error::LlmTimeout`];
    /// [`crate::Error::LlmOriginNotAllowed`] when the browser refused the response (CORS) while
    /// the server is reachable; [`crate::Error::LlmUnreachable`] otherwise. HTTP error statuses
    /// are *not* errors here: they come back as responses.
    async fn send(
        &self,
        request: &HttpRequest,
        cancel: &Cancel,
        timeouts: Timeouts,
    ) -> Result<HttpResponse<Self::Body>>;

    /// Sleeps `ms` milliseconds. Errors: [`crate::Error::Cancelled`] (ends the sleep at once).
    async fn sleep(&self, ms: u64, cancel: &Cancel) -> Result<()>;

    /// Current time, ms since the epoch (for `Retry-After` dates).
    fn now_ms(&self) -> Millis;

    /// The origin of the page making the requests (`self.location.origin`), for CORS advice;
    /// `None` outside a browser.
    fn page_origin(&self) -> Option<String> {
        None
    }
}

/// A shared transport serves as well (one `fetch` for an embedding and a chat call).
impl<T: Transport> Transport for &T {
    type Body = T::Body;

    async fn send(
        &self,
        request: &HttpRequest,
        cancel: &Cancel,
        timeouts: Timeouts,
    ) -> Result<HttpResponse<Self::Body>> {
        (**self).send(request, cancel, timeouts).await
    }

    async fn sleep(&self, ms: u64, cancel: &Cancel) -> Result<()> {
        (**self).sleep(ms, cancel).await
    }

    fn now_ms(&self) -> Millis {
        (**self).now_ms()
    }

    fn page_origin(&self) -> Option<String> {
        (**self).page_origin()
    }
}

/// A body that is already complete, handed out in the chunks given (tests, in-process servers).
#[derive(Debug, Clone, Default)]
pub struct ChunkedBody {
    chunks: std::collections::VecDeque<Vec<u8>>,
}

impl ChunkedBody {
    /// A body yielding `chunks` in order.
    pub fn new(chunks: Vec<Vec<u8>>) -> Self {
        ChunkedBody {
            chunks: chunks.into(),
        }
    }
}

impl ResponseBody for ChunkedBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>> {
        Ok(self.chunks.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_credentials() {
        let r = HttpRequest {
            method: Method::Post,
            url: "http://x/v1/chat/completions".into(),
            headers: vec![
                ("authorization".into(), "Bearer sk-SECRET".into()),
                ("x-api-key".into(), "sk-ant-SECRET".into()),
                ("content-type".into(), "application/json".into()),
            ],
            body: Some("{}".into()),
            stream: false,
        };
        let d = format!("{r:?}");
        assert!(!d.contains("SECRET"), "{d}");
        assert!(d.contains("application/json"));
        assert_eq!(r.header("X-API-KEY"), Some("sk-ant-SECRET"));
    }
}
