//! Server-side request forgery (SSRF) guard: webhook and HTTP targets are supplied by users,
//! so by default kairos refuses to call addresses that are not on the public internet —
//! loopback, private ranges, link-local (including the `169.254.169.254` cloud metadata
//! service), CGNAT, unspecified, multicast, and the IPv6 equivalents, also when embedded in an
//! IPv4-mapped or NAT64/6to4 address.
//!
//! Hand-written: the guard has to sit in the resolver the HTTP client connects through (see
//! below), which a URL-validating crate cannot do.
//!
//! # Why two checks
//!
//! A check of the resolved addresses before sending ([`check_target`]) alone is not sound: the
//! HTTP client resolves the name again when it connects, and a hostile DNS server can answer
//! with a public address the first time and `127.0.0.1` the second (DNS rebinding). Pinning
//! the checked address per request (`ClientBuilder::resolve`) would need one client per
//! request, losing connection reuse. So the shared client is built with
//! [`PublicOnlyResolver`]: the resolution that actually chooses the address to connect to
//! refuses private answers, which closes the rebinding window. [`check_target`] still runs
//! first because it gives a clear, permanent error, and because it is the only check for URLs
//! whose host is an IP literal (the client does not call a resolver for those). The client is
//! also built without proxies, so the address checked is the address connected to.

use kairos_core::{ErrorClass, Failure};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use url::{Host, Url};

/// Why a target URL is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetError {
    /// The scheme is not `http` or `https`.
    UnsupportedScheme(String),
    /// The URL has no host.
    NoHost,
    /// The host is, or resolves to, a non-public address.
    Private(IpAddr),
    /// The host name could not be resolved (the reason is included).
    Resolve(String),
    /// The host is a `localhost` name (`localhost.`, `*.localhost`), whatever it resolves to.
    LocalhostName(String),
}

impl TargetError {
    /// How the retry policy should treat it: DNS failures may be temporary, everything else
    /// is permanent.
    pub fn class(&self) -> ErrorClass {
        match self {
            TargetError::Resolve(_) => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        }
    }

    /// The failure a channel reports for it.
    pub fn to_failure(&self) -> Failure {
        Failure::new(self.class(), self.to_string())
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::UnsupportedScheme(s) => {
                write!(
                    f,
                    "unsupported URL scheme `{s}`: only http and https are allowed"
                )
            }
            TargetError::NoHost => f.write_str("the URL has no host"),
            TargetError::Private(ip) => write!(f, "{}", private_message(*ip)),
            TargetError::Resolve(reason) => write!(f, "could not resolve the host: {reason}"),
            TargetError::LocalhostName(name) => write!(
                f,
                "target host {name} (a localhost name) is private; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow"
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// The message used wherever a private target is refused. It does not name the address:
/// what a name resolves to inside the network is not for whoever saved the URL to learn.
pub(crate) fn private_message(_ip: IpAddr) -> String {
    "target resolves to a non-public address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow"
        .to_string()
}

/// Check that `url` may be called: `http`/`https` only, and — unless `allow_private` — the
/// host is not a `localhost` name ([`is_localhost_name`]) and every address it resolves to is
/// public (see [`is_private_address`]).
pub async fn check_target(url: &Url, allow_private: bool) -> Result<(), TargetError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(TargetError::UnsupportedScheme(other.to_string())),
    }
    let host = url.host().ok_or(TargetError::NoHost)?;
    if allow_private {
        return Ok(());
    }
    match host {
        Host::Ipv4(ip) => refuse_private(IpAddr::V4(ip)),
        Host::Ipv6(ip) => refuse_private(IpAddr::V6(ip)),
        Host::Domain(name) if is_localhost_name(name) => {
            Err(TargetError::LocalhostName(name.to_string()))
        }
        Host::Domain(name) => {
            let port = url.port_or_known_default().unwrap_or(80);
            let addrs = resolve_public(name, port).await?;
            if addrs.is_empty() {
                return Err(TargetError::Resolve("no addresses".into()));
            }
            Ok(())
        }
    }
}

fn refuse_private(ip: IpAddr) -> Result<(), TargetError> {
    if is_private_address(ip) {
        Err(TargetError::Private(ip))
    } else {
        Ok(())
    }
}

/// Resolve `host` and refuse the whole answer if any address in it is not public: a name
/// that resolves to both a public and a private address is treated as hostile.
async fn resolve_public(host: &str, port: u16) -> Result<Vec<SocketAddr>, TargetError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| TargetError::Resolve(e.to_string()))?
        .collect();
    if let Some(bad) = addrs.iter().find(|a| is_private_address(a.ip())) {
        return Err(TargetError::Private(bad.ip()));
    }
    Ok(addrs)
}

/// Whether `ip` is not a public unicast address: loopback, private (10/8, 172.16/12,
/// 192.168/16), link-local (169.254/16), CGNAT (100.64/10), unspecified / "this network"
/// (0/8), multicast, reserved and broadcast (224/3), benchmarking (198.18/15), IETF protocol
/// assignments (192.0.0/24), documentation ranges; IPv6 `::`, `::1`, unique-local fc00::/7,
/// link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, documentation 2001:db8::/32;
/// NAT64 local-use 64:ff9b:1::/48, Teredo 2001:0000::/32, discard-only 100::/64, ORCHID
/// 2001:10::/28 and 2001:20::/28, benchmarking 2001:2::/48; and IPv4 addresses embedded in
/// IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), IPv4-compatible, NAT64
/// (64:ff9b::/96) and 6to4 (2002::/16) IPv6 addresses. (No maintained crate carries the IANA
/// special-purpose registry with this meaning; each range has its case in the tests.)
pub fn is_private_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0                                   // "this network", includes 0.0.0.0
        || a == 10                           // private
        || a == 127                          // loopback
        || (a == 100 && (b & 0xc0) == 64)    // CGNAT 100.64/10
        || (a == 169 && b == 254)            // link-local, cloud metadata
        || (a == 172 && (b & 0xf0) == 16)    // private 172.16/12
        || (a == 192 && b == 168)            // private
        || (a == 192 && b == 0 && c == 0)    // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)    // TEST-NET-1
        || (a == 198 && (b & 0xfe) == 18)    // benchmarking 198.18/15
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)  // TEST-NET-3
        || a >= 224 // multicast 224/4, reserved 240/4, broadcast
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_private_v4(v4); // ::ffff:a.b.c.d
    }
    if s[..6] == [0; 6] {
        // ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d
        return ip.is_unspecified() || ip.is_loopback() || is_private_v4(embedded(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_private_v4(embedded(s[6], s[7])); // NAT64 well-known prefix
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 0x0001 {
        // NAT64 local-use 64:ff9b:1::/48 (RFC 8215): translated by the operator's own
        // translator, so what it reaches is not known to be public.
        return true;
    }
    if s[0] == 0x2001 && s[1] == 0x0000 {
        // Teredo 2001:0000::/32 (RFC 4380): a tunnel whose embedded addresses are obfuscated
        // and whose relays may sit anywhere; only this /32, not all of 2001::/16.
        return true;
    }
    if s[0] == 0x2002 {
        return is_private_v4(embedded(s[1], s[2])); // 6to4
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT): the IPv4 address it stands for.
        return is_private_v4(embedded(s[6], s[7]));
    }
    if s[..4] == [0x0100, 0, 0, 0] {
        return true; // discard-only 100::/64 (RFC 6666)
    }
    if s[0] == 0x2001 && (s[1] & 0xfff0) == 0x0010 {
        return true; // ORCHID 2001:10::/28 (RFC 4843, deprecated)
    }
    if s[0] == 0x2001 && (s[1] & 0xfff0) == 0x0020 {
        return true; // ORCHIDv2 2001:20::/28 (RFC 7343): overlay identifiers, not routable
    }
    if s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0 {
        return true; // benchmarking 2001:2::/48 (RFC 5180)
    }
    (s[0] & 0xfe00) == 0xfc00             // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80      // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0      // site-local fec0::/10 (deprecated)
        || (s[0] & 0xff00) == 0xff00      // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
}

/// Whether `name` is a `localhost` name: `localhost` itself, with or without the trailing dot
/// of a fully qualified name, and every name under it (`*.localhost`, RFC 6761), in any case.
pub fn is_localhost_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// The save-time check, without DNS: whether `url` plainly targets a non-public address — an
/// IP literal that is not public ([`is_private_address`]), a `localhost` name
/// ([`is_localhost_name`]), or no host at all. The send-time [`check_target`] resolves names
/// and is authoritative; this catches the obvious cases when the URL is saved, so the user
/// hears about them then.
pub fn is_obviously_private(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => is_private_address(ip.into()),
        Some(Host::Ipv6(ip)) => is_private_address(ip.into()),
        Some(Host::Domain(d)) => is_localhost_name(d),
        None => true,
    }
}

/// The error [`PublicOnlyResolver`] returns when a name resolves to a private address; the
/// webhook sender finds it in the error chain and reports a permanent failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateAddressError(pub IpAddr);

impl fmt::Display for PrivateAddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&private_message(self.0))
    }
}

impl std::error::Error for PrivateAddressError {}

/// A [`reqwest::dns::Resolve`] that resolves with the system resolver and refuses any answer
/// containing a non-public address. Install it on clients that must not reach private
/// networks (see the module documentation for why).
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // Port 0: reqwest replaces it with the URL's port.
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| is_private_address(a.ip())) {
                return Err(Box::new(PrivateAddressError(bad.ip()))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(s: &str) -> bool {
        is_private_address(s.parse().unwrap())
    }

    #[test]
    fn private_ipv4_ranges_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.255",
            "255.255.255.255",
            "240.0.0.1",
            "198.18.0.1",
            "192.0.0.8",
        ] {
            assert!(private(ip), "{ip} should be private");
        }
    }

    #[test]
    fn public_ipv4_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.0.1",
            "11.0.0.1",
            "192.169.0.1",
            "93.184.216.34",
        ] {
            assert!(!private(ip), "{ip} should be public");
        }
    }

    #[test]
    fn private_ipv6_ranges_are_refused() {
        for ip in [
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::1",
            "2001:db8::1",
            "64:ff9b:1::a00:1",
            "64:ff9b:1:ffff::808:808",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            // IPv4-mapped ::ffff:0:0/96: the mapped IPv4 address decides.
            "::ffff:0:0",
            "::ffff:192.168.0.1",
            "::ffff:100.64.0.1",
            // IPv4-translated ::ffff:0:0:0/96.
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.0.0.1",
            // Discard-only 100::/64.
            "100::",
            "100::1",
            "100::ffff:ffff:ffff:ffff",
            // ORCHID 2001:10::/28 and ORCHIDv2 2001:20::/28.
            "2001:10::1",
            "2001:1f:ffff::1",
            "2001:20::1",
            "2001:2f::1",
            // Benchmarking 2001:2::/48.
            "2001:2::1",
        ] {
            assert!(private(ip), "{ip} should be private");
        }
    }

    #[test]
    fn public_ipv6_addresses_pass() {
        for ip in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            // Next to the refused ranges, not in them.
            "64:ff9b:2::808:808",
            "2001:1::1",
            "2001:470::1",
            "::ffff:0:8.8.8.8",
            "100:0:0:1::1",
            "101::1",
            "2001:30::1",
            "2001:f::1",
            "2001:2:1::1",
        ] {
            assert!(!private(ip), "{ip} should be public");
        }
    }

    #[tokio::test]
    async fn check_target_refuses_schemes_and_private_hosts() {
        let check = |s: &str, allow: bool| {
            let url = Url::parse(s).unwrap();
            async move { check_target(&url, allow).await }
        };
        assert!(matches!(check("ftp://example.com/", false).await,
            Err(TargetError::UnsupportedScheme(s)) if s == "ftp"));
        assert!(matches!(
            check("file:///etc/passwd", true).await,
            Err(TargetError::UnsupportedScheme(_))
        ));
        assert_eq!(
            check("http://127.0.0.1:8080/", false).await,
            Err(TargetError::Private("127.0.0.1".parse().unwrap()))
        );
        assert_eq!(
            check("http://[::1]/", false).await,
            Err(TargetError::Private("::1".parse().unwrap()))
        );
        // The URL parser normalizes obscure IPv4 spellings before the check.
        assert_eq!(
            check("http://0x7f.1/", false).await,
            Err(TargetError::Private("127.0.0.1".parse().unwrap()))
        );
        for local in [
            "http://localhost:1/",
            "http://localhost.:1/",
            "http://api.localhost/",
        ] {
            let e = check(local, false).await.unwrap_err();
            assert!(matches!(e, TargetError::LocalhostName(_)), "{local}: {e:?}");
            assert_eq!(e.class(), ErrorClass::Permanent);
            assert!(
                e.to_string().contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"),
                "{e}"
            );
        }
        assert_eq!(check("http://localhost.:1/", true).await, Ok(()));
        let e = check("http://169.254.169.254/latest/meta-data", false)
            .await
            .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Permanent);
        assert!(
            e.to_string().contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"),
            "{e}"
        );
        assert_eq!(check("http://127.0.0.1:8080/", true).await, Ok(()));
        assert_eq!(check("http://8.8.8.8/", false).await, Ok(()));
    }

    #[test]
    fn localhost_names_are_obviously_private_at_save_time() {
        let obvious = |s: &str| is_obviously_private(&Url::parse(s).unwrap());
        for u in [
            "http://localhost/",
            "http://localhost./",
            "http://LOCALHOST.:8080/x",
            "http://api.localhost/",
            "http://a.b.localhost./",
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://[64:ff9b:1::1]/",
            "http://[2001::1]/",
        ] {
            assert!(obvious(u), "{u} should be refused at save time");
        }
        for u in [
            "http://example.com/",
            "http://localhost.example.com/",
            "http://notlocalhost/",
            "http://8.8.8.8/",
        ] {
            assert!(!obvious(u), "{u} should pass the save-time check");
        }
    }

    #[test]
    fn refusals_do_not_name_the_address() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        for msg in [
            TargetError::Private(ip).to_string(),
            PrivateAddressError(ip).to_string(),
        ] {
            assert!(msg.contains("resolves to a non-public address"), "{msg}");
            assert!(!msg.contains("10.1.2.3"), "{msg}");
            assert!(msg.contains("KAIROS_ALLOW_PRIVATE_TARGETS=1"), "{msg}");
        }
    }

    #[tokio::test]
    async fn resolver_refuses_names_that_resolve_privately() {
        let err = match PublicOnlyResolver
            .resolve("localhost".parse().unwrap())
            .await
        {
            Ok(_) => panic!("localhost must be refused"),
            Err(e) => e,
        };
        let private = err
            .downcast_ref::<PrivateAddressError>()
            .expect("a PrivateAddressError");
        assert!(private.0.is_loopback());
    }
}
