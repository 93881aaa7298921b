package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// Worker holds the settings of the reference worker (`refresher worker`
// with --config); the service itself does not use them. Environment:
// REFRESHER_WORKER as YAML, e.g. '{allow_private_networks: true}'.
type Worker struct {
	// AllowPrivateNetworks lets the worker fetch input URLs on loopback,
	// private, link-local and other non-public addresses. Default false:
	// input_url is end-user input, and such a URL would let users read the
	// worker's own network.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// AllowNetworks lets the worker fetch from these networks only, in CIDR
	// notation (a bare address means that one address), e.g.
	// [10.1.0.0/16]. Default none.
	AllowNetworks []string `yaml:"allow_networks"`
	// MaxBodyBytes limits the size of one response body. Default 0: the
	// worker's default, 100 MB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
}

// Networks parses AllowNetworks.
func (w Worker) Networks() ([]netip.Prefix, error) { return ParseNetworks(w.AllowNetworks) }

// ParseNetworks parses networks in CIDR notation ("10.1.0.0/16",
// "fd00:1::/48"); a bare address ("10.1.2.3") is the network of that one
// address. Empty entries are skipped.
func ParseNetworks(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a network in CIDR notation (use e.g. 10.1.0.0/16 or fd00:1::/48)", s)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a network in CIDR notation (use e.g. 10.1.0.0/16 or fd00:1::/48)", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
