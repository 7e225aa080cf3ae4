//! What a proxy changes in the headers it passes on: hop-by-hop headers
//! (RFC 9110 §7.6.1) stay on their own connection, and `X-Forwarded-For`
//! names the client.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// The hop-by-hop headers every proxy drops, besides those a `Connection`
/// header names.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
];

/// Drops the hop-by-hop headers: the fixed list, `Transfer-Encoding` (the
/// next hop frames the body itself), and every header a `Connection` header
/// names. Allocates nothing for the usual single `Connection` line.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    match headers.get_all(header::CONNECTION).iter().count() {
        0 => {}
        1 => {
            if let Some(listed) = headers.remove(header::CONNECTION) {
                drop_listed(headers, &listed);
            }
        }
        _ => {
            let listed: Vec<HeaderValue> = headers.get_all(header::CONNECTION).iter().cloned().collect();
            for value in &listed {
                drop_listed(headers, value);
            }
        }
    }
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(header::TRANSFER_ENCODING);
}

/// Drops the headers one `Connection` value names (`close`, `keep-alive` and
/// extensions), case-insensitively, except `Host` and `X-Forwarded-For`.
fn drop_listed(headers: &mut HeaderMap, listed: &HeaderValue) {
    let Ok(listed) = listed.to_str() else { return };
    for name in listed.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if let Ok(name) = HeaderName::from_bytes(name.as_bytes())
            // A client may not have the proxy's own end-to-end headers dropped.
            && name != header::HOST
            && name != FORWARDED_FOR
        {
            headers.remove(&name);
        }
    }
}

/// Appends `client` to the request's `X-Forwarded-For` (as a header line of
/// its own, which is the same list: RFC 9110 §5.3).
pub(crate) fn forwarded_for(headers: &mut HeaderMap, client: &HeaderValue) {
    headers.append(FORWARDED_FOR, client.clone());
}

const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_are_dropped() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, X-Secret, x-forwarded-for, Host"),
            ("x-forwarded-for", "203.0.113.7"),
            ("connection", "upgrade"),
            ("keep-alive", "timeout=5"),
            ("x-secret", "1"),
            ("transfer-encoding", "chunked"),
            ("te", "trailers"),
            ("upgrade", "websocket"),
            ("proxy-authorization", "Basic x"),
            ("host", "example.com"),
            ("x-kept", "yes"),
        ] {
            headers.append(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<_> = headers.keys().map(|k| k.as_str()).collect();
        left.sort_unstable();
        assert_eq!(left, ["host", "x-forwarded-for", "x-kept"]);

        let mut one = HeaderMap::new();
        one.insert(header::CONNECTION, HeaderValue::from_static("close, x-gone"));
        one.insert(HeaderName::from_static("x-gone"), HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut one);
        assert!(one.is_empty());
    }

    #[test]
    fn forwarded_for_adds_to_what_earlier_proxies_wrote() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.7"));
        forwarded_for(&mut headers, &HeaderValue::from_static("127.0.0.1"));
        let all: Vec<_> = headers.get_all("x-forwarded-for").iter().collect();
        assert_eq!(all, ["203.0.113.7", "127.0.0.1"]);
    }
}
