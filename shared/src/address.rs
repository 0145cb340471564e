//! Which IP addresses are public: the pure classification behind the worker's private-address
//! guard (SPEC §7).
//!
//! An address is public when it is ordinary global unicast: not in any block of the IANA IPv4 and
//! IPv6 special-purpose address registries that is not globally reachable (loopback, private,
//! link-local, carrier-grade NAT, multicast, unspecified, documentation, benchmarking, reserved,
//! protocol assignments), and, for IPv6, inside the global unicast space `2000::/3`.
//!
//! IPv6 transition forms carry an IPv4 address that is where the packets really go, so that
//! embedded address is judged in their place: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
//! `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
//! `2002:AABB:CCDD::/48` and Teredo `2001:0:SSSS:SSSS::/32` (both the server address and the
//! obfuscated client address). Without this, `::ffff:127.0.0.1` or `64:ff9b::10.0.0.1` would pass
//! as public IPv6 addresses and reach loopback or the private network through the host's own
//! stack or a NAT64 gateway.
//!
//! Decisions worth knowing:
//! - The local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215) is refused whatever it embeds: it is
//!   not globally reachable, and where its IPv4 part sits depends on a prefix length only the
//!   local network knows.
//! - `192.0.0.0/24` is refused as a whole, including its two anycast /32s: no website lives there.
//! - Inside `2001::/23` the globally reachable assignments of the registry stay public (PCP, TURN
//!   and DNS-SD anycast, AMT, AS112-v6, ORCHIDv2, DRIP); the rest is refused.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A special-purpose address block: its prefix as written and what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The prefix, as written in the registry (`127.0.0.0/8`).
    pub cidr: &'static str,
    /// What the block is (`loopback`).
    pub name: &'static str,
}

/// An IPv6 transition form carrying an IPv4 address, which was judged in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Embedded {
    /// The form (`NAT64 64:ff9b::/96`, `Teredo client`).
    pub form: &'static str,
    /// The IPv4 address it carries.
    pub v4: Ipv4Addr,
}

/// Why an address is not public: the block it (or the IPv4 address it carries) falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonPublic {
    /// The address asked about.
    pub ip: IpAddr,
    /// The special-purpose block that makes it non-public.
    pub block: Block,
    /// The transition form and IPv4 address judged, when the block is the embedded address's.
    pub via: Option<Embedded>,
}

impl fmt::Display for NonPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.via {
            Some(e) => write!(
                f,
                "{} carries {} ({}), which is in {} ({})",
                self.ip, e.v4, e.form, self.block.cidr, self.block.name
            ),
            None => write!(f, "{} is in {} ({})", self.ip, self.block.cidr, self.block.name),
        }
    }
}

impl std::error::Error for NonPublic {}

/// Whether `ip` is a public unicast address Shoal may connect to by default.
#[must_use]
pub fn is_public(ip: IpAddr) -> bool {
    check(ip).is_ok()
}

/// `Ok` for a public address, else the block that makes it non-public.
pub fn check(ip: IpAddr) -> Result<(), NonPublic> {
    match ip {
        IpAddr::V4(v4) => match v4_block(v4) {
            None => Ok(()),
            Some(block) => Err(NonPublic { ip, block, via: None }),
        },
        IpAddr::V6(v6) => check_v6(v6).map_err(|(block, via)| NonPublic { ip, block, via }),
    }
}

/// One row of a special-purpose table: network, prefix length, the block.
type V4Row = (u32, u8, Block);

const fn b(cidr: &'static str, name: &'static str) -> Block {
    Block { cidr, name }
}

/// The IPv4 special-purpose blocks that are not globally reachable, plus multicast and the
/// reserved space (IANA IPv4 Special-Purpose Address Registry, RFC 6890 and updates). First match
/// wins, so the limited broadcast address comes before the reserved block that contains it.
const V4_BLOCKS: &[V4Row] = &[
    (0x0000_0000, 8, b("0.0.0.0/8", "this network")),
    (0x0a00_0000, 8, b("10.0.0.0/8", "private")),
    (0x6440_0000, 10, b("100.64.0.0/10", "shared address space (carrier-grade NAT)")),
    (0x7f00_0000, 8, b("127.0.0.0/8", "loopback")),
    (0xa9fe_0000, 16, b("169.254.0.0/16", "link-local")),
    (0xac10_0000, 12, b("172.16.0.0/12", "private")),
    (0xc000_0000, 24, b("192.0.0.0/24", "IETF protocol assignments")),
    (0xc000_0200, 24, b("192.0.2.0/24", "documentation (TEST-NET-1)")),
    (0xc058_6300, 24, b("192.88.99.0/24", "deprecated 6to4 relay anycast")),
    (0xc0a8_0000, 16, b("192.168.0.0/16", "private")),
    (0xc612_0000, 15, b("198.18.0.0/15", "benchmarking")),
    (0xc633_6400, 24, b("198.51.100.0/24", "documentation (TEST-NET-2)")),
    (0xcb00_7100, 24, b("203.0.113.0/24", "documentation (TEST-NET-3)")),
    (0xe000_0000, 4, b("224.0.0.0/4", "multicast")),
    (0xffff_ffff, 32, b("255.255.255.255/32", "limited broadcast")),
    (0xf000_0000, 4, b("240.0.0.0/4", "reserved")),
];

fn v4_block(ip: Ipv4Addr) -> Option<Block> {
    let bits = u32::from(ip);
    V4_BLOCKS.iter().find(|(net, len, _)| prefix_matches_v4(bits, *net, *len)).map(|(_, _, block)| *block)
}

fn prefix_matches_v4(bits: u32, net: u32, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    bits & mask == net
}

fn prefix_matches_v6(bits: u128, net: u128, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
    bits & mask == net
}

/// What an IPv6 special-purpose block means for an address in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V6Rule {
    /// Not public.
    Refuse,
    /// Globally reachable although inside a refused block.
    Public,
    /// Judge the IPv4 address in the last 32 bits.
    Low32,
    /// 6to4: judge the IPv4 address in bits 16..48.
    SixToFour,
    /// Teredo: judge the server (bits 32..64) and the client (last 32 bits, inverted).
    Teredo,
}

/// The IPv6 special-purpose blocks (IANA IPv6 Special-Purpose Address Registry, RFC 6890 and
/// updates), plus the other blocks outside or inside `2000::/3` that are never a website. First
/// match wins: specific rows (carve-outs, the unspecified and loopback addresses) come before
/// the blocks that contain them.
const V6_BLOCKS: &[(u128, u8, V6Rule, Block)] = &[
    (0, 128, V6Rule::Refuse, b("::/128", "unspecified")),
    (1, 128, V6Rule::Refuse, b("::1/128", "loopback")),
    (0xffff_0000_0000, 96, V6Rule::Low32, b("::ffff:0:0/96", "IPv4-mapped")),
    (0, 96, V6Rule::Low32, b("::/96", "IPv4-compatible")),
    (0xffff_0000_0000_0000, 96, V6Rule::Low32, b("::ffff:0:0:0/96", "IPv4-translated")),
    (0x0064_ff9b_u128 << 96, 96, V6Rule::Low32, b("64:ff9b::/96", "NAT64")),
    (0x0064_ff9b_0001_u128 << 80, 48, V6Rule::Refuse, b("64:ff9b:1::/48", "local-use NAT64")),
    (0x0100_u128 << 112, 64, V6Rule::Refuse, b("100::/64", "discard-only")),
    (0x2001_0000_u128 << 96, 32, V6Rule::Teredo, b("2001::/32", "Teredo")),
    (0x2001_0001_u128 << 96 | 1, 128, V6Rule::Public, b("2001:1::1/128", "PCP anycast")),
    (0x2001_0001_u128 << 96 | 2, 128, V6Rule::Public, b("2001:1::2/128", "TURN anycast")),
    (0x2001_0001_u128 << 96 | 3, 128, V6Rule::Public, b("2001:1::3/128", "DNS-SD SRP anycast")),
    (0x2001_0002_0000_u128 << 80, 48, V6Rule::Refuse, b("2001:2::/48", "benchmarking")),
    (0x2001_0003_u128 << 96, 32, V6Rule::Public, b("2001:3::/32", "AMT")),
    (0x2001_0004_0112_u128 << 80, 48, V6Rule::Public, b("2001:4:112::/48", "AS112-v6")),
    (0x2001_0020_u128 << 96, 28, V6Rule::Public, b("2001:20::/28", "ORCHIDv2")),
    (0x2001_0030_u128 << 96, 28, V6Rule::Public, b("2001:30::/28", "DRIP entity tags")),
    (0x2001_u128 << 112, 23, V6Rule::Refuse, b("2001::/23", "IETF protocol assignments")),
    (0x2001_0db8_u128 << 96, 32, V6Rule::Refuse, b("2001:db8::/32", "documentation")),
    (0x2002_u128 << 112, 16, V6Rule::SixToFour, b("2002::/16", "6to4")),
    (0x3fff_u128 << 112, 20, V6Rule::Refuse, b("3fff::/20", "documentation")),
    (0x5f00_u128 << 112, 16, V6Rule::Refuse, b("5f00::/16", "segment routing (SRv6) SIDs")),
    (0xfc00_u128 << 112, 7, V6Rule::Refuse, b("fc00::/7", "unique local")),
    (0xfe80_u128 << 112, 10, V6Rule::Refuse, b("fe80::/10", "link-local")),
    (0xfec0_u128 << 112, 10, V6Rule::Refuse, b("fec0::/10", "site-local (deprecated)")),
    (0xff00_u128 << 112, 8, V6Rule::Refuse, b("ff00::/8", "multicast")),
];

/// Everything outside `2000::/3` that no row above names.
const NOT_GLOBAL_UNICAST: Block = b("2000::/3", "outside global unicast");

fn check_v6(ip: Ipv6Addr) -> Result<(), (Block, Option<Embedded>)> {
    let bits = u128::from(ip);
    let Some((_, _, rule, block)) = V6_BLOCKS.iter().find(|(net, len, _, _)| prefix_matches_v6(bits, *net, *len))
    else {
        return if prefix_matches_v6(bits, 0x2000_u128 << 112, 3) { Ok(()) } else { Err((NOT_GLOBAL_UNICAST, None)) };
    };
    let embedded = |form: &'static str, v4: u32| -> Result<(), (Block, Option<Embedded>)> {
        let v4 = Ipv4Addr::from(v4);
        match v4_block(v4) {
            None => Ok(()),
            Some(inner) => Err((inner, Some(Embedded { form, v4 }))),
        }
    };
    // The truncating cast picks out one 32-bit field of the address.
    let field = |shift: u32| (bits >> shift) as u32;
    match rule {
        V6Rule::Refuse => Err((*block, None)),
        V6Rule::Public => Ok(()),
        V6Rule::Low32 => embedded(block.cidr_form(), field(0)),
        V6Rule::SixToFour => embedded("6to4 2002::/16", field(80)),
        V6Rule::Teredo => {
            embedded("Teredo 2001::/32 (server)", field(64))?;
            embedded("Teredo 2001::/32 (client)", !field(0))
        }
    }
}

impl Block {
    /// The transition form's name for messages: "NAT64 64:ff9b::/96".
    fn cidr_form(&self) -> &'static str {
        match self.cidr {
            "::ffff:0:0/96" => "IPv4-mapped ::ffff:0:0/96",
            "::/96" => "IPv4-compatible ::/96",
            "::ffff:0:0:0/96" => "IPv4-translated ::ffff:0:0:0/96",
            "64:ff9b::/96" => "NAT64 64:ff9b::/96",
            _ => self.name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of both tables says what its `cidr` text says (the numbers are not mistyped).
    #[test]
    fn table_rows_match_their_written_prefixes() {
        for (net, len, block) in V4_BLOCKS {
            let (addr, bits) = block.cidr.split_once('/').expect("a prefix has a length");
            let addr: Ipv4Addr = addr.parse().expect("the prefix parses");
            assert_eq!((u32::from(addr), *len), (*net, bits.parse::<u8>().expect("a length")), "{}", block.cidr);
        }
        for (net, len, _, block) in V6_BLOCKS {
            let (addr, bits) = block.cidr.split_once('/').expect("a prefix has a length");
            let addr: Ipv6Addr = addr.parse().expect("the prefix parses");
            assert_eq!((u128::from(addr), *len), (*net, bits.parse::<u8>().expect("a length")), "{}", block.cidr);
        }
    }

    /// Each special-purpose block and transition form, by an address inside it, with the block
    /// it must be refused for (`None`: public).
    #[test]
    fn every_block_and_transition_form() {
        let cases: &[(&str, Option<&str>)] = &[
            // IPv4 special-purpose registry.
            ("0.0.0.0", Some("0.0.0.0/8")),
            ("0.1.2.3", Some("0.0.0.0/8")),
            ("10.1.2.3", Some("10.0.0.0/8")),
            ("100.64.0.1", Some("100.64.0.0/10")),
            ("100.127.255.255", Some("100.64.0.0/10")),
            ("100.128.0.1", None),
            ("100.63.255.255", None),
            ("127.0.0.1", Some("127.0.0.0/8")),
            ("127.0.55.1", Some("127.0.0.0/8")),
            ("169.254.169.254", Some("169.254.0.0/16")),
            ("172.16.0.1", Some("172.16.0.0/12")),
            ("172.31.255.255", Some("172.16.0.0/12")),
            ("172.32.0.1", None),
            ("192.0.0.9", Some("192.0.0.0/24")),
            ("192.0.2.1", Some("192.0.2.0/24")),
            ("192.88.99.1", Some("192.88.99.0/24")),
            ("192.168.1.1", Some("192.168.0.0/16")),
            ("198.18.0.1", Some("198.18.0.0/15")),
            ("198.19.255.255", Some("198.18.0.0/15")),
            ("198.20.0.1", None),
            ("198.51.100.7", Some("198.51.100.0/24")),
            ("203.0.113.7", Some("203.0.113.0/24")),
            ("224.0.0.1", Some("224.0.0.0/4")),
            ("239.255.255.250", Some("224.0.0.0/4")),
            ("240.0.0.1", Some("240.0.0.0/4")),
            ("255.255.255.255", Some("255.255.255.255/32")),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("192.0.1.1", None),
            ("192.31.196.1", None),
            // IPv6 special-purpose registry.
            ("::", Some("::/128")),
            ("::1", Some("::1/128")),
            ("100::1", Some("100::/64")),
            ("2001:2::1", Some("2001:2::/48")),
            ("2001:db8::1", Some("2001:db8::/32")),
            ("3fff::1", Some("3fff::/20")),
            ("3fff:fff::1", Some("3fff::/20")),
            ("3fff:1000::1", None),
            ("fc00::1", Some("fc00::/7")),
            ("fd12:3456::1", Some("fc00::/7")),
            ("fe80::1", Some("fe80::/10")),
            ("fec0::1", Some("fec0::/10")),
            ("ff02::1", Some("ff00::/8")),
            ("5f00::1", Some("5f00::/16")),
            ("2001:5::1", Some("2001::/23")),
            ("2001:1ff::1", Some("2001::/23")),
            ("2001:200::1", None),
            // Globally reachable carve-outs of 2001::/23.
            ("2001:1::1", None),
            ("2001:1::2", None),
            ("2001:1::3", None),
            ("2001:1::4", Some("2001::/23")),
            ("2001:3::1", None),
            ("2001:4:112::1", None),
            ("2001:20::1", None),
            ("2001:3f::1", None),
            // Outside global unicast.
            ("4000::1", Some("2000::/3")),
            ("1::1", Some("2000::/3")),
            ("64:ff9b:2::1", Some("2000::/3")),
            // Ordinary global unicast.
            ("2606:4700::1111", None),
            ("2a00:1450:4001::200e", None),
            // IPv4-mapped.
            ("::ffff:127.0.0.1", Some("127.0.0.0/8")),
            ("::ffff:10.0.0.1", Some("10.0.0.0/8")),
            ("::ffff:8.8.8.8", None),
            // IPv4-compatible (deprecated).
            ("::127.0.0.1", Some("127.0.0.0/8")),
            ("::10.0.0.1", Some("10.0.0.0/8")),
            ("::169.254.169.254", Some("169.254.0.0/16")),
            ("::8.8.8.8", None),
            // IPv4-translated.
            ("::ffff:0:127.0.0.1", Some("127.0.0.0/8")),
            ("::ffff:0:192.168.0.1", Some("192.168.0.0/16")),
            ("::ffff:0:8.8.8.8", None),
            // NAT64, well-known prefix.
            ("64:ff9b::10.0.0.1", Some("10.0.0.0/8")),
            ("64:ff9b::127.0.0.1", Some("127.0.0.0/8")),
            ("64:ff9b::100.64.0.1", Some("100.64.0.0/10")),
            ("64:ff9b::8.8.8.8", None),
            // NAT64, local-use prefix: refused whatever it carries.
            ("64:ff9b:1::10.0.0.1", Some("64:ff9b:1::/48")),
            ("64:ff9b:1::8.8.8.8", Some("64:ff9b:1::/48")),
            // 6to4: the IPv4 address is bits 16..48.
            ("2002:7f00:1::1", Some("127.0.0.0/8")),
            ("2002:c0a8:101::1", Some("192.168.0.0/16")),
            ("2002:a9fe:a9fe::", Some("169.254.0.0/16")),
            ("2002:808:808::1", None),
            // Teredo: server in bits 32..64, client in the last 32 bits inverted.
            ("2001:0:808:808:0:0:80ff:fffe", Some("127.0.0.0/8")), // client 127.0.0.1
            ("2001:0:808:808:0:0:f5ff:fffe", Some("10.0.0.0/8")),  // client 10.0.0.1
            ("2001:0:a00:1:0:0:f7f7:f7f7", Some("10.0.0.0/8")),    // server 10.0.0.1
            ("2001:0:808:808:0:0:f7f7:f7f7", None),                // both 8.8.8.8
        ];
        let mut wrong = Vec::new();
        for (text, want) in cases {
            let ip: IpAddr = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            let got = check(ip).err().map(|n| n.block.cidr);
            if got != *want {
                wrong.push(format!("{text}: expected {want:?}, got {got:?}"));
            }
            assert_eq!(is_public(ip), want.is_none(), "{text}");
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn refusals_name_the_embedded_address() {
        let ip: IpAddr = "64:ff9b::a00:1".parse().expect("parses");
        let refusal = check(ip).expect_err("refused");
        assert_eq!(refusal.via.map(|e| e.v4), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(
            refusal.to_string(),
            "64:ff9b::a00:1 carries 10.0.0.1 (NAT64 64:ff9b::/96), which is in 10.0.0.0/8 (private)"
        );
        let plain = check(IpAddr::V4(Ipv4Addr::LOCALHOST)).expect_err("refused");
        assert_eq!(plain.to_string(), "127.0.0.1 is in 127.0.0.0/8 (loopback)");
        let teredo: IpAddr = "2001:0:808:808:0:0:80ff:fffe".parse().expect("parses");
        let refusal = check(teredo).expect_err("refused");
        assert_eq!(refusal.via.map(|e| (e.form, e.v4)), Some(("Teredo 2001::/32 (client)", Ipv4Addr::LOCALHOST)));
    }
}
