//! Where a request comes from: the connection's peer, or — when that peer is a configured
//! trusted proxy — the client the proxies name in `X-Forwarded-For`.
//!
//! The rate limit and the anonymous callers' share both count callers by this address, so one
//! rule decides it for both. `X-Forwarded-For` is read only from trusted proxies: from anyone
//! else it is a header the caller wrote, and would let one client pose as many.
//!
//! So is `X-Forwarded-Client-Cert` (Envoy's format), the client certificate a proxy that
//! terminates TLS verified: from a trusted proxy it becomes a [`ForwardedClientCertificate`] that
//! the authentication layer reads as it reads a certificate of Accord's own handshake; from anyone
//! else it is ignored.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use ipnet::IpNet;

/// The client address of a request, as [`resolve`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl ClientAddress {
    /// The address callers are counted by: an IPv4 address as it is, an IPv6 address cut to its
    /// /64 (one host usually holds a whole /64: counting each address apart would let it
    /// multiply its share).
    pub fn key(self) -> IpAddr {
        match self.0.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
            v4 => v4,
        }
    }

    /// The address a request was resolved to by the serving layers, if any.
    pub fn of(extensions: &http::Extensions) -> Option<Self> {
        extensions.get::<Self>().copied()
    }
}

/// The client of a request whose connection comes from `peer`: `peer` itself, unless it is one
/// of `trusted`; then `X-Forwarded-For` is read from its right end, each hop a trusted proxy
/// passing to the next, and the first address that is not a trusted proxy is the client. A
/// malformed entry ends the walk at the last trusted hop.
pub fn resolve(peer: IpAddr, headers: &http::HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |address: &IpAddr| trusted.iter().any(|net| net.contains(&address.to_canonical()));
    let mut client = peer.to_canonical();
    if !is_trusted(&client) {
        return client;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect();
    for hop in hops.iter().rev() {
        let Ok(address) = hop.parse::<IpAddr>() else { break };
        client = address.to_canonical();
        if !is_trusted(&client) {
            break;
        }
    }
    client
}

/// Puts the request's [`ClientAddress`] into its extensions (once; an outer layer's answer is
/// kept), from axum's `ConnectInfo` and `X-Forwarded-For` by [`resolve`]. Called by the request
/// middleware every counting face is mounted with ([`crate::observe`]).
pub(crate) fn stamp(request: &mut axum::extract::Request, trusted: &[IpNet]) {
    if request.extensions().get::<ClientAddress>().is_none()
        && let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>().copied()
    {
        let client = resolve(peer.ip(), request.headers(), trusted);
        request.extensions_mut().insert(ClientAddress(client));
        let from_trusted = trusted.iter().any(|net| net.contains(&peer.ip().to_canonical()));
        if from_trusted
            && let Some(forwarded) = request
                .headers()
                .get_all(FORWARDED_CLIENT_CERT)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .next_back()
                .and_then(ForwardedClientCertificate::parse)
        {
            request.extensions_mut().insert(forwarded);
        }
    }
}

/// The header a proxy that terminates TLS names the client's certificate in (Envoy's).
pub const FORWARDED_CLIENT_CERT: &str = "x-forwarded-client-cert";

/// The client certificate a trusted proxy verified, as its `X-Forwarded-Client-Cert` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardedClientCertificate {
    /// The certificate's first URI SAN (`URI=`), else its first DNS SAN (`DNS=`), else the CN of
    /// its `Subject=`.
    pub subject: String,
}

impl ForwardedClientCertificate {
    /// Reads the last element of an `X-Forwarded-Client-Cert` value (the one the nearest proxy
    /// added: elements before it may be the client's own writing): `By=…;Hash=…;URI=…;DNS=…;
    /// Subject="…"`, values quoted where they hold `,` `;` or `=`. `None` when the element names
    /// no subject.
    pub fn parse(value: &str) -> Option<Self> {
        let element = split_unquoted(value, ',').into_iter().next_back()?;
        let (mut uri, mut dns, mut common_name) = (None, None, None);
        for pair in split_unquoted(element, ';') {
            let Some((key, raw)) = pair.split_once('=') else { continue };
            let value = unquote(raw.trim());
            if value.is_empty() {
                continue;
            }
            match key.trim().to_ascii_lowercase().as_str() {
                "uri" if uri.is_none() => uri = Some(value),
                "dns" if dns.is_none() => dns = Some(value),
                // RFC 4514 (`CN=…,O=…`), or the older OpenSSL one-line form (`/O=…/CN=…`).
                "subject" => {
                    common_name = [',', '/'].into_iter().find_map(|separator| {
                        split_unquoted(&value, separator)
                            .into_iter()
                            .find_map(|part| part.trim().strip_prefix("CN=").map(str::to_owned))
                    });
                }
                _ => {}
            }
        }
        uri.or(dns).or(common_name).map(|subject| Self { subject })
    }
}

/// `text` split at each `separator` outside double quotes (a `\` escapes the next character).
fn split_unquoted(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (at, character) in text.char_indices() {
        match character {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            _ if character == separator && !quoted => {
                parts.push(&text[start..at]);
                start = at + character.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A value without its surrounding quotes and escapes.
fn unquote(value: &str) -> String {
    let inner = value.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).unwrap_or(value);
    let mut out = String::with_capacity(inner.len());
    let mut escaped = false;
    for character in inner.chars() {
        if !escaped && character == '\\' {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(character);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_client_certificates_name_the_uri_else_the_dns_name_else_the_common_name() {
        let parse = |value: &str| ForwardedClientCertificate::parse(value).map(|forwarded| forwarded.subject);
        let envoy = "By=spiffe://example.org/ns/edge/sa/envoy;Hash=468ed33be74eee6556d90c0149c1309e9ba61d6425303443c0748a02dd8de688;Subject=\"/C=US/ST=CA/L=San Francisco/OU=Lyft/CN=Test Client\";URI=spiffe://example.org/ns/shop/sa/client;DNS=client.example";
        assert_eq!(parse(envoy).as_deref(), Some("spiffe://example.org/ns/shop/sa/client"));
        assert_eq!(parse("Hash=ab;DNS=client.example;DNS=other.example").as_deref(), Some("client.example"));
        assert_eq!(parse("Hash=ab;Subject=\"CN=just a name,O=Example, Inc.\"").as_deref(), Some("just a name"));
        assert_eq!(
            parse("URI=spiffe://spoofed/by/the/client,By=x;URI=spiffe://example.org/real").as_deref(),
            Some("spiffe://example.org/real"),
            "the last element, the nearest proxy's"
        );
        assert_eq!(parse("Subject=\"/C=US/OU=Lyft/CN=Test Client\"").as_deref(), Some("Test Client"));
        assert_eq!(parse("Hash=ab;By=spiffe://proxy"), None, "no subject");
        assert_eq!(parse(""), None);
    }

    fn headers(forwarded: &[&str]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for value in forwarded {
            headers.append("x-forwarded-for", value.parse().expect("header value"));
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().expect("net")];
        let forwarded = headers(&["203.0.113.9, 198.51.100.7"]);
        assert_eq!(resolve(ip("192.0.2.1"), &forwarded, &trusted), ip("192.0.2.1"), "an untrusted peer is the client");
        assert_eq!(resolve(ip("10.1.2.3"), &forwarded, &trusted), ip("198.51.100.7"), "the hop before the proxy");
        assert_eq!(resolve(ip("10.1.2.3"), &forwarded, &[]), ip("10.1.2.3"), "no trusted proxy: the peer");
        let chain = headers(&["203.0.113.9", "10.9.9.9"]);
        assert_eq!(resolve(ip("10.1.2.3"), &chain, &trusted), ip("203.0.113.9"), "through two trusted proxies");
        let spoofed = headers(&["garbage, 10.9.9.9"]);
        assert_eq!(resolve(ip("10.1.2.3"), &spoofed, &trusted), ip("10.9.9.9"), "a bad entry stops the walk");
        assert_eq!(resolve(ip("10.1.2.3"), &headers(&[]), &trusted), ip("10.1.2.3"), "no header: the proxy");
        assert_eq!(resolve(ip("::ffff:10.1.2.3"), &forwarded, &trusted), ip("198.51.100.7"), "mapped IPv4");
    }

    #[test]
    fn ipv6_callers_are_counted_by_their_64() {
        let a = ClientAddress(ip("2001:db8:1:2:aaaa::1")).key();
        let b = ClientAddress(ip("2001:db8:1:2:bbbb::9")).key();
        let other = ClientAddress(ip("2001:db8:1:3::1")).key();
        assert_eq!(a, b);
        assert_ne!(a, other);
        assert_eq!(ClientAddress(ip("192.0.2.7")).key(), ip("192.0.2.7"));
    }
}
