//! One HTTP request, sent and read to its end under the two clocks: a 2xx
//! reply ([`Received`]) or how it failed ([`Failure`]).
//!
//! It does not decide what a failure means (final, worth another attempt,
//! after how long): that is the client's (`http`). It reads a response only
//! through `stream`, and knows no wire format beyond the decoder it is
//! given.

use super::decode::{StreamDecoder, StreamFault, Streamed};
use super::error::BrokeOff;
use super::stream::{read_body, read_reply, Clocks, Progress, Read, Waited};

/// A 2xx reply.
#[derive(Debug)]
pub(crate) enum Received<D> {
    /// A whole body: the plain request's, or a server that answered the
    /// streaming request with JSON. The wire format reads it.
    Body(String),
    /// An event stream read to its end, cut off by the total cap, or cut
    /// because it repeated itself.
    Stream(Streamed<D>),
}

/// Why an attempt gave no reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A 2xx body that is not UTF-8: what is wrong with it.
    NotUtf8(String),
    /// A status other than 2xx, with the body (decoded lossily: it only
    /// ever goes into a message) and the `Retry-After` header.
    Status {
        status: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// Silence past the idle limit.
    Stalled,
    Connect(reqwest::Error),
    /// The reply broke off after it had started.
    Broken(BrokeOff),
    Fault(StreamFault),
}

/// Sends `request` with `headers` and reads the reply with a fresh `D`
/// under `clocks`, reporting to the [`Progress`] that `progress` starts
/// once a 2xx response has come. A request cut by the total cap before any
/// answer is an empty capped stream: nothing of it is usable.
pub(crate) async fn attempt<D: StreamDecoder + Default>(
    mut request: reqwest::RequestBuilder,
    headers: &[(&'static str, String)],
    clocks: &Clocks,
    progress: impl FnOnce() -> Progress,
) -> Result<Received<D>, Failure> {
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = match clocks.wait(request.send()).await {
        Waited::Done(Ok(response)) => response,
        Waited::Done(Err(err)) if err.is_timeout() => return Err(Failure::Stalled),
        Waited::Done(Err(err)) => return Err(Failure::Connect(err)),
        Waited::Idle => return Err(Failure::Stalled),
        Waited::Capped => return Ok(Received::Stream(Streamed::capped(D::default()))),
    };
    if !response.status().is_success() {
        return Err(refusal(response, clocks).await);
    }
    let mut progress = progress();
    match read_reply(response, clocks, D::default(), &mut progress).await {
        Read::Body(text) => Ok(Received::Body(text)),
        Read::Stream(streamed) => Ok(Received::Stream(streamed)),
        Read::NotUtf8(detail) => Err(Failure::NotUtf8(detail)),
        Read::Stalled => Err(Failure::Stalled),
        Read::Broken(cause) => Err(Failure::Broken(cause)),
        Read::Fault(fault) => Err(Failure::Fault(fault)),
    }
}

/// The failure of a response whose status is not 2xx: its status, body
/// and `Retry-After`.
async fn refusal(mut response: reqwest::Response, clocks: &Clocks) -> Failure {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    match read_body(&mut response, clocks).await {
        Waited::Done(Ok(bytes)) => Failure::Status {
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            retry_after,
        },
        Waited::Done(Err(err)) => Failure::Connect(err),
        Waited::Idle | Waited::Capped => Failure::Stalled,
    }
}
