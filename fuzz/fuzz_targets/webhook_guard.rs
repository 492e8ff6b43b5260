//! The SSRF guard for push-notification webhooks (`accord_server::push::guard`): any text in as
//! a URL, any 16 bytes as an address, never a panic. The address table agrees with the standard
//! library's own classification wherever the two overlap, an IPv4 address and its IPv4-mapped
//! IPv6 form are judged alike, a URL the default policy accepts is https and reaches no refused
//! address, and a refusal never repeats the URL (which may carry secrets).
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use accord_server::push::guard::{Scheme, WebhookPolicy, WebhookRefused, classify};
use libfuzzer_sys::fuzz_target;
use url::{Host, ParseError};

/// Every way the URL parser refuses a text: its messages are fixed wording.
const PARSE_ERRORS: [ParseError; 10] = [
    ParseError::EmptyHost,
    ParseError::IdnaError,
    ParseError::InvalidPort,
    ParseError::InvalidIpv4Address,
    ParseError::InvalidIpv6Address,
    ParseError::InvalidDomainCharacter,
    ParseError::RelativeUrlWithoutBase,
    ParseError::RelativeUrlWithCannotBeABaseBase,
    ParseError::SetHostOnCannotBeABaseUrl,
    ParseError::Overflow,
];

fn check_address(ip: IpAddr) {
    let class = classify(ip);
    let refused_by_std = match ip {
        IpAddr::V4(v4) => {
            v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
        }
        IpAddr::V6(v6) => {
            v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
        }
    };
    if refused_by_std {
        assert!(class.is_some(), "{ip} is not public, but classify passes it");
    }
    if let IpAddr::V4(v4) = ip {
        let mapped = IpAddr::V6(v4.to_ipv6_mapped());
        assert_eq!(class.is_some(), classify(mapped).is_some(), "{ip} and {mapped} judged differently");
    }
    let policy = WebhookPolicy::new();
    if class.is_some() {
        assert!(policy.check_ip(ip, Scheme::Https).is_err(), "{ip} refused by the table, passed by the policy");
    }
    assert!(policy.check_ip(ip, Scheme::Http).is_err(), "plain http to {ip} with no allowed network");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(octets) = <[u8; 16]>::try_from(data.get(..16).unwrap_or_default()) {
        check_address(IpAddr::V6(Ipv6Addr::from(octets)));
        check_address(IpAddr::V4(Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3])));
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let policies = [WebhookPolicy::new(), WebhookPolicy::new().allow_loopback(), WebhookPolicy::new().allow_private()];
    for (index, policy) in policies.iter().enumerate() {
        match policy.check_url(text) {
            Ok(url) => {
                assert!(url.username().is_empty() && url.password().is_none(), "{text:?}: userinfo passed");
                let ip = match url.host() {
                    Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
                    Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
                    Some(Host::Domain(_)) => None,
                    None => panic!("{text:?}: accepted without a host"),
                };
                if index == 0 {
                    assert_eq!(url.scheme(), "https", "{text:?}: the default policy accepted plain http");
                    if let Some(ip) = ip {
                        assert!(classify(ip).is_none(), "{text:?}: the default policy accepted {ip}");
                    }
                }
            }
            Err(refused) => {
                assert!(!refused.reason().is_empty());
                // The refusal is fixed wording (and, for a refused address, the address): it never
                // repeats what the caller sent. (Asserting that the message does not contain the
                // text was wrong: a text may itself be a piece of the fixed wording, as
                // `webhook URL is not an absol` is.)
                match &refused {
                    WebhookRefused::InvalidUrl(detail) => {
                        assert!(
                            PARSE_ERRORS.iter().any(|error| error.to_string() == *detail)
                                || detail == "port 0"
                                || detail == "no host",
                            "{text:?}: the refusal's detail is not fixed wording: {detail}"
                        );
                    }
                    WebhookRefused::Address { ip, .. } => assert!(classify(*ip).is_some()),
                    _ => {}
                }
            }
        }
    }
    let _ = WebhookPolicy::parse_allow(text);
});
