//! The SSRF guard for webhook URLs (A2A §13.2).
//!
//! A push-notification config names a URL that the agent will POST to later, so a caller could
//! point it at the agent's own network: its loopback, its private ranges, its cloud's metadata
//! service. [`WebhookPolicy`] decides which targets are allowed. By default only `https` URLs to
//! public unicast addresses pass; an allow-list of networks lets chosen targets through (and
//! allows plain `http` to them).
//!
//! A URL is checked twice: [`WebhookPolicy::check_url`] when the config is set (the scheme, no
//! credentials, an IP-literal host), and every address a host name resolves to when a
//! notification is delivered (see [`super::sender`]), so that a name cannot be re-pointed at a
//! refused address after the config was accepted.
//!
//! The table of refused addresses is [`classify`]: IPv4 ranges, IPv6 ranges, and the IPv6 forms
//! that embed an IPv4 address (mapped, compatible, NAT64, 6to4), which are judged by the IPv4
//! address they carry.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use url::{Host, Url};

/// Why an address is not a public unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// `0.0.0.0/8`, `::`: "this host", which reaches the local machine.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), IPv6 unique local `fc00::/7` and the
    /// deprecated site-local `fec0::/10`.
    Private,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT shared space, `100.64.0.0/10`.
    SharedAddressSpace,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment, discard and reserved ranges, and IPv6
    /// outside global unicast `2000::/3`.
    Reserved,
    /// A cloud provider's instance metadata service.
    Metadata,
    /// Teredo tunnelling, `2001::/32`: the real endpoint is hidden in the address.
    Teredo,
}

impl AddressClass {
    /// A stable, short name of the class (`"loopback"`, `"private"`, `"metadata"`, …).
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::SharedAddressSpace => "cgnat",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::Reserved => "reserved",
            Self::Metadata => "metadata",
            Self::Teredo => "teredo",
        }
    }

    /// Whether an allow-list entry can let an address of this class through. Metadata services,
    /// "this host", multicast and broadcast are never webhook targets, whatever the allow-list.
    pub fn allowable(self) -> bool {
        !matches!(self, Self::Unspecified | Self::Multicast | Self::Broadcast | Self::Metadata)
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unspecified => "an unspecified",
            Self::Loopback => "a loopback",
            Self::Private => "a private",
            Self::LinkLocal => "a link-local",
            Self::SharedAddressSpace => "a shared (CGNAT)",
            Self::Multicast => "a multicast",
            Self::Broadcast => "a broadcast",
            Self::Reserved => "a reserved",
            Self::Metadata => "a cloud metadata",
            Self::Teredo => "a Teredo",
        })
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(segments: [u16; 8], len: u8) -> Ipv6Net {
    let [a, b, c, d, e, f, g, h] = segments;
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)
}

/// Refused IPv4 ranges; the first match wins (exact metadata addresses before their ranges,
/// broadcast before `240/4`).
const IPV4_REFUSED: &[(Ipv4Net, AddressClass)] = &[
    (v4(169, 254, 169, 254, 32), AddressClass::Metadata), // AWS, GCP, Azure, OCI, …
    (v4(100, 100, 100, 200, 32), AddressClass::Metadata), // Alibaba Cloud
    (v4(168, 63, 129, 16, 32), AddressClass::Metadata),   // Azure WireServer
    (v4(0, 0, 0, 0, 8), AddressClass::Unspecified),
    (v4(127, 0, 0, 0, 8), AddressClass::Loopback),
    (v4(10, 0, 0, 0, 8), AddressClass::Private),
    (v4(172, 16, 0, 0, 12), AddressClass::Private),
    (v4(192, 168, 0, 0, 16), AddressClass::Private),
    (v4(169, 254, 0, 0, 16), AddressClass::LinkLocal),
    (v4(100, 64, 0, 0, 10), AddressClass::SharedAddressSpace),
    (v4(192, 0, 0, 0, 24), AddressClass::Reserved), // IETF protocol assignments
    (v4(192, 0, 2, 0, 24), AddressClass::Reserved), // TEST-NET-1
    (v4(198, 51, 100, 0, 24), AddressClass::Reserved), // TEST-NET-2
    (v4(203, 0, 113, 0, 24), AddressClass::Reserved), // TEST-NET-3
    (v4(198, 18, 0, 0, 15), AddressClass::Reserved), // benchmarking
    (v4(192, 88, 99, 0, 24), AddressClass::Reserved), // deprecated 6to4 relay anycast
    (v4(224, 0, 0, 0, 4), AddressClass::Multicast),
    (v4(255, 255, 255, 255, 32), AddressClass::Broadcast),
    (v4(240, 0, 0, 0, 4), AddressClass::Reserved),
];

/// Refused IPv6 ranges; the first match wins. The forms that embed IPv4 are in
/// [`IPV6_EMBEDDING`]; anything outside `2000::/3` left after both is [`AddressClass::Reserved`].
const IPV6_REFUSED: &[(Ipv6Net, AddressClass)] = &[
    (v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128), AddressClass::Metadata), // AWS
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), AddressClass::Unspecified),
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), AddressClass::Loopback),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64), AddressClass::Reserved), // discard-only
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), AddressClass::Teredo),
    (v6([0x2001, 0x2, 0, 0, 0, 0, 0, 0], 48), AddressClass::Reserved), // benchmarking
    (v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), AddressClass::Reserved), // documentation
    (v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), AddressClass::Reserved),   // documentation
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), AddressClass::Private),     // unique local
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), AddressClass::Private),    // site-local
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), AddressClass::LinkLocal),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), AddressClass::Multicast),
];

/// Where an IPv6 form carries an IPv4 address.
#[derive(Clone, Copy)]
enum Embedding {
    /// The last 32 bits (IPv4-mapped, NAT64 well-known prefix): judged by that address.
    Last32,
    /// The last 32 bits, but the form is refused even when they are public: judged by that
    /// address when it is refused, else by the class given.
    Last32Always(AddressClass),
    /// Bits 16..48 (6to4).
    SixToFour,
}

const IPV6_EMBEDDING: &[(Ipv6Net, Embedding)] = &[
    (v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96), Embedding::Last32),
    (v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96), Embedding::Last32),
    // Local-use NAT64 (RFC 8215) is an operator's own translator, and where it puts the IPv4
    // address depends on its prefix length (RFC 6052 §2.2), so no address under it is known to
    // be public; the usual /96 placement names the reason when it is refused.
    (v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48), Embedding::Last32Always(AddressClass::Private)),
    (v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), Embedding::SixToFour),
    // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1); `::` and `::1` are matched before.
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 96), Embedding::Last32Always(AddressClass::Reserved)),
];

/// The class of `ip`, or `None` for a public unicast address.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(ip) => classify_v4(ip),
        IpAddr::V6(ip) => classify_v6(ip),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    IPV4_REFUSED.iter().find(|(net, _)| net.contains(&ip)).map(|(_, class)| *class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    if let Some((_, class)) = IPV6_REFUSED.iter().find(|(net, _)| net.contains(&ip)) {
        return Some(*class);
    }
    let o = ip.octets();
    let last32 = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some((_, embedding)) = IPV6_EMBEDDING.iter().find(|(net, _)| net.contains(&ip)) {
        return match embedding {
            Embedding::Last32 => classify_v4(last32),
            Embedding::Last32Always(class) => Some(classify_v4(last32).unwrap_or(*class)),
            Embedding::SixToFour => classify_v4(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        };
    }
    let global_unicast = v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);
    (!global_unicast.contains(&ip)).then_some(AddressClass::Reserved)
}

/// The scheme of a webhook URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain `http`: allowed only to an allowed network.
    Http,
    /// `https`.
    Https,
}

/// Why a webhook URL or address was refused. The message never repeats the URL, so it carries
/// no credentials or tokens a URL may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookRefused {
    /// Not an absolute URL with a host and a usable port.
    InvalidUrl(String),
    /// Neither `https` nor `http`, or plain `http` to a target outside the allowed networks.
    Scheme,
    /// The URL carries a user name or password.
    Userinfo,
    /// The target address is not allowed.
    Address {
        /// Why the address is refused.
        class: AddressClass,
        /// The refused address.
        ip: IpAddr,
    },
}

impl WebhookRefused {
    /// A stable, short name of the refusal: `"url"`, `"scheme"`, `"userinfo"`, or the address
    /// class's [`AddressClass::reason`] (`"loopback"`, `"private"`, `"metadata"`, …).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidUrl(_) => "url",
            Self::Scheme => "scheme",
            Self::Userinfo => "userinfo",
            Self::Address { class, .. } => class.reason(),
        }
    }
}

impl fmt::Display for WebhookRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl(detail) => write!(f, "webhook URL is not an absolute http(s) URL: {detail}"),
            Self::Scheme => f.write_str("webhook URL must use https (plain http only to an allowed network)"),
            Self::Userinfo => f.write_str("webhook URL must not carry a user name or password"),
            Self::Address { class, ip } => write!(f, "webhook target {ip} is {class} address"),
        }
    }
}

impl std::error::Error for WebhookRefused {}

/// An allow-list entry that is not `loopback`, `private`, an IP address or a CIDR network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidAllowEntry(pub String);

impl fmt::Display for InvalidAllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not `loopback`, `private`, an IP address or a CIDR network", self.0)
    }
}

impl std::error::Error for InvalidAllowEntry {}

const LOOPBACK_NETWORKS: [IpNet; 2] = [IpNet::V4(v4(127, 0, 0, 0, 8)), IpNet::V6(v6([0, 0, 0, 0, 0, 0, 0, 1], 128))];

const PRIVATE_NETWORKS: [IpNet; 4] = [
    IpNet::V4(v4(10, 0, 0, 0, 8)),
    IpNet::V4(v4(172, 16, 0, 0, 12)),
    IpNet::V4(v4(192, 168, 0, 0, 16)),
    IpNet::V6(v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7)),
];

/// Which webhook targets are allowed.
///
/// The default allows `https` to public unicast addresses only. Each allowed network lets its
/// addresses through, over `https` or plain `http` — except the classes no list can allow (see
/// [`AddressClass::allowable`]).
#[derive(Debug, Clone, Default)]
pub struct WebhookPolicy {
    allowed: Vec<IpNet>,
}

impl WebhookPolicy {
    /// The default policy: `https` to public unicast addresses only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also allows `network` (over `https` or `http`).
    pub fn allow(mut self, network: impl Into<IpNet>) -> Self {
        self.allowed.push(network.into().trunc());
        self
    }

    /// Also allows every network of `networks`.
    pub fn allow_networks(self, networks: impl IntoIterator<Item = IpNet>) -> Self {
        networks.into_iter().fold(self, Self::allow)
    }

    /// Also allows loopback: `127.0.0.0/8` and `::1`.
    pub fn allow_loopback(self) -> Self {
        self.allow_networks(LOOPBACK_NETWORKS)
    }

    /// Also allows the private ranges: RFC 1918 and IPv6 unique local `fc00::/7`.
    pub fn allow_private(self) -> Self {
        self.allow_networks(PRIVATE_NETWORKS)
    }

    /// The allowed networks.
    pub fn allowed(&self) -> &[IpNet] {
        &self.allowed
    }

    /// Parses an allow-list value (as given to `--webhook-allow`): comma-separated entries, each
    /// `loopback`, `private`, an IP address or a CIDR network.
    pub fn parse_allow(value: &str) -> Result<Vec<IpNet>, InvalidAllowEntry> {
        let mut networks = Vec::new();
        for entry in value.split(',').map(str::trim) {
            match entry {
                "loopback" => networks.extend(LOOPBACK_NETWORKS),
                "private" => networks.extend(PRIVATE_NETWORKS),
                _ => {
                    let network = IpNet::from_str(entry)
                        .or_else(|_| IpAddr::from_str(entry).map(IpNet::from))
                        .map_err(|_| InvalidAllowEntry(entry.to_owned()))?;
                    networks.push(network.trunc());
                }
            }
        }
        Ok(networks)
    }

    /// Whether `ip` is on an allowed network (an IPv4-mapped address counts as its IPv4 address).
    fn is_allowed(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.allowed.iter().any(|network| network.contains(&ip) || network.contains(&canonical))
    }

    /// Checks one target address reached over `scheme`.
    pub fn check_ip(&self, ip: IpAddr, scheme: Scheme) -> Result<(), WebhookRefused> {
        let allowed = self.is_allowed(ip);
        match classify(ip) {
            Some(class) if !(allowed && class.allowable()) => Err(WebhookRefused::Address { class, ip }),
            Some(_) => Ok(()),
            None if scheme == Scheme::Http && !allowed => Err(WebhookRefused::Scheme),
            None => Ok(()),
        }
    }

    /// Checks a webhook URL when its config is set: an absolute `http(s)` URL without userinfo,
    /// the scheme rule, and an IP-literal host's address. A host name is checked at delivery,
    /// address by address, when it is resolved.
    pub fn check_url(&self, url: &str) -> Result<Url, WebhookRefused> {
        let url = Url::parse(url).map_err(|error| WebhookRefused::InvalidUrl(error.to_string()))?;
        let scheme = match url.scheme() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            _ => return Err(WebhookRefused::Scheme),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookRefused::Userinfo);
        }
        if url.port() == Some(0) {
            return Err(WebhookRefused::InvalidUrl("port 0".to_owned()));
        }
        match url.host() {
            None => return Err(WebhookRefused::InvalidUrl("no host".to_owned())),
            Some(Host::Ipv4(ip)) => self.check_ip(ip.into(), scheme)?,
            Some(Host::Ipv6(ip)) => self.check_ip(ip.into(), scheme)?,
            // Plain http to a name can only reach an allowed network; without one, it can't pass.
            Some(Host::Domain(_)) if scheme == Scheme::Http && self.allowed.is_empty() => {
                return Err(WebhookRefused::Scheme);
            }
            Some(Host::Domain(_)) => {}
        }
        Ok(url)
    }
}
