package worker

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// AddressPolicy decides which IP addresses the worker may connect to.
// input_url is end-user input, so by default the worker refuses every
// address that is not public (server-side request forgery: a user must not
// make the worker read the cloud metadata service, a database port or an
// admin page on the worker's own network).
//
// The check runs on the address actually dialed (net.Dialer.ControlContext),
// after DNS resolution and on every redirect hop, so a host name that
// resolves to a private address, DNS rebinding and a redirect to
// http://10.0.0.1/ are all refused before a packet is sent.
type AddressPolicy struct {
	// AllowPrivateNetworks allows every non-public unicast address:
	// loopback, private, link-local, unique-local, CGNAT and the reserved
	// ranges. Unspecified, multicast and broadcast addresses stay refused
	// unless AllowNetworks names them. Default false.
	AllowPrivateNetworks bool
	// AllowNetworks allows the addresses in these prefixes whatever their
	// class, e.g. 10.1.0.0/16 for the one internal network that serves
	// input files. An IPv4-mapped IPv6 address (::ffff:10.1.2.3) matches the
	// IPv4 prefix. Default none.
	AllowNetworks []netip.Prefix
}

// NotAllowedError is the error of a connection the AddressPolicy refused.
// Its text names the address and is meant for logs, not for users.
type NotAllowedError struct {
	Addr  netip.Addr // the address dialed; invalid when it could not be read
	Class string     // why it is not public, e.g. "loopback", "private"
}

func (e *NotAllowedError) Error() string {
	return "address " + e.Addr.String() + " is not allowed (" + e.Class + ")"
}

// Check returns a *NotAllowedError when the policy refuses addr, else nil.
func (p AddressPolicy) Check(addr netip.Addr) error {
	addr = addr.WithZone("")
	for _, n := range p.AllowNetworks {
		if n.Contains(addr) || n.Contains(addr.Unmap()) {
			return nil
		}
	}
	class := AddressClass(addr)
	if class == "" {
		return nil
	}
	if p.AllowPrivateNetworks && class != classUnspecified && class != classMulticast && class != classBroadcast {
		return nil
	}
	return &NotAllowedError{Addr: addr, Class: class}
}

// checkDial checks the "ip:port" a dialer is about to connect to.
func (p AddressPolicy) checkDial(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &NotAllowedError{Class: "unreadable address"}
	}
	return p.Check(ap.Addr())
}

// NewTransport returns an HTTP transport like http.DefaultTransport that
// refuses, before connecting, every address p does not allow, and that
// ignores the proxy environment variables (HTTP_PROXY and friends): a proxy
// would dial the target itself, out of reach of the check.
func NewTransport(p AddressPolicy) *http.Transport {
	return newTransport(p, nil, nil)
}

// newTransport is NewTransport with a resolver (nil: the default one) and a
// hook that runs after the policy allowed an address, for tests: a test
// hook that refuses every connection makes a test that sends no packet
// even when the policy check is broken.
func newTransport(p AddressPolicy, resolver *net.Resolver, after func(address string) error) *http.Transport {
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  resolver,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			if err := p.checkDial(address); err != nil {
				return err
			}
			if after != nil {
				return after(address)
			}
			return nil
		},
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = d.DialContext
	return t
}

// Address classes that no setting but AllowNetworks allows.
const (
	classUnspecified = "unspecified"
	classMulticast   = "multicast"
	classBroadcast   = "broadcast"
)

// nonPublic lists the special-purpose ranges (IANA's IPv4 and IPv6
// Special-Purpose Address Registries) that are not reachable public
// unicast addresses. IPv4-mapped, NAT64 and 6to4 addresses are not here:
// AddressClass judges them by the IPv4 address they embed.
var nonPublic = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/32"), classUnspecified},
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), classMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), classBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},

	{netip.MustParsePrefix("::/128"), classUnspecified},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), classMulticast},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// AddressClass says why addr is not a public address ("loopback",
// "private", "link-local", "unique-local", "NAT64 of private", ...), or
// returns "" for a public one. An IPv4-mapped address (::ffff:a.b.c.d), a
// NAT64 address (64:ff9b::a.b.c.d) and a 6to4 address (2002:AABB:CCDD::)
// are judged by the IPv4 address they embed. An IPv6 address outside
// 2000::/3, the global unicast space, is "reserved".
func AddressClass(addr netip.Addr) string {
	addr = addr.WithZone("")
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.Is4In6():
		return AddressClass(addr.Unmap())
	case nat64.Contains(addr):
		b := addr.As16()
		if c := AddressClass(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
			return "NAT64 of " + c
		}
		return ""
	case sixToFour.Contains(addr):
		b := addr.As16()
		if c := AddressClass(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
			return "6to4 of " + c
		}
		return ""
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	if addr.Is6() && !global6.Contains(addr) {
		return "reserved"
	}
	return ""
}
