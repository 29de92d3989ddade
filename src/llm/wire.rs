//! A provider's wire format: everything that differs between the chat APIs
//! swarm speaks, behind one small trait ([`WireFormat`]).
//!
//! A wire format says where a request goes, which headers carry the key,
//! what the JSON body looks like, how to read a whole reply and (through
//! its [`StreamDecoder`]) how to read a streamed one. It sends nothing,
//! waits for nothing and never retries: the one HTTP chat client (`http`)
//! does that for every format alike. Adding a provider is one file that
//! implements this trait and one row in the provider table (`provider`).

use serde_json::Value;

use super::chat::{ChatRequest, ProviderKind};
use super::decode::{ReplyParts, StreamDecoder};

/// One provider's wire format.
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// The provider that speaks it.
    const KIND: ProviderKind;

    /// Reads this format's event stream.
    type Events: StreamDecoder + Default;

    /// The format for `model` at `base_url` (normalised: no trailing slash,
    /// no version path the format adds itself).
    fn new(base_url: String, model: String) -> Self;

    /// The model id, as sent and logged.
    fn model(&self) -> &str;

    /// The headers every request carries: the key, when there is one, and
    /// any other header the API requires.
    fn headers(key: Option<&str>) -> Vec<(&'static str, String)>;

    /// Where a streamed request goes.
    fn stream_url(&self) -> String;

    /// Where a request that is not streamed goes (named in errors about a
    /// reply that is not the API's).
    fn plain_url(&self) -> String;

    /// The JSON body of a streamed request.
    fn stream_body(&self, request: &ChatRequest) -> Value;

    /// The JSON body of a request that is not streamed.
    fn plain_body(&self, request: &ChatRequest) -> Value;

    /// Reads a whole JSON reply; `Err` says why it cannot be used.
    fn read_reply(&self, reply: &Value) -> Result<ReplyParts, &'static str>;
}

/// A JSON number for a temperature (or a penalty), rounded to 3 decimals
/// (an `f32` would otherwise serialize as `0.20000000298023224`).
pub(crate) fn temperature_json(temperature: f32) -> Value {
    let rounded = (f64::from(temperature) * 1000.0).round() / 1000.0;
    serde_json::json!(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperatures_are_rounded_for_the_wire() {
        assert_eq!(temperature_json(0.2).to_string(), "0.2");
        assert_eq!(temperature_json(1.0).to_string(), "1.0");
    }
}
