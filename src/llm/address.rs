//! Reading a URL's host: which machine a base URL points at, and whether
//! it is this one (a local server is reached without any proxy). Pure text
//! work; no request is made here.

/// The host of `url`, lowercase, without scheme, credentials, port, path
/// or the brackets of an IPv6 address.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    }
    .to_ascii_lowercase()
}

/// Whether `url` points at this machine (then no proxy is used).
pub(crate) fn is_loopback(url: &str) -> bool {
    let host = url_host(url);
    host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:80"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }

    #[test]
    fn hosts_lose_scheme_credentials_port_and_path() {
        assert_eq!(
            url_host("https://user:pw@API.example.com:8443/v1?x=1"),
            "api.example.com"
        );
        assert_eq!(url_host("http://[::1]:80/v1"), "::1");
        assert_eq!(url_host("localhost:11434"), "localhost");
    }
}
