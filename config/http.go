package config

import (
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/refresher/refresher/operator"
)

// Roles of an API token.
const (
	// RoleRead may read the API, the dashboard and /metrics.
	RoleRead = "read"
	// RoleAct may read and change state (enable, trigger, pause, replay...).
	RoleAct = "act"
)

// MinTokenLength is the shortest API token accepted.
const MinTokenLength = 16

// TokenHelp says how to make a token, for the errors about one.
const TokenHelp = `make one with "openssl rand -hex 16" (32 characters)`

// APIToken is one entry of api_tokens, written either as the token alone
// (role act, as before roles existed):
//
//	api_tokens: {alice: "9f86d081884c7d659a2feaa0c55ad015"}
//
// or with its role:
//
//	api_tokens: {grafana: {token: "...", role: read}, alice: {token: "...", role: act}}
type APIToken struct {
	Token string `yaml:"token"`
	// Role is RoleRead or RoleAct. Default RoleAct.
	Role string `yaml:"role"`
}

// UnmarshalYAML reads a token written alone or as {token, role}.
func (t *APIToken) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*t = APIToken{Token: n.Value}
		return nil
	}
	type plain APIToken
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = APIToken(p)
	return nil
}

// TokensOf returns the name → token map of the api_tokens whose role is
// role (after SetDefaults).
func (c *Config) TokensOf(role string) map[string]string {
	out := map[string]string{}
	for name, t := range c.APITokens {
		if t.Role == role {
			out[name] = t.Token
		}
	}
	return out
}

// OperatorAccess returns o with the API tokens by role and what the listen
// address (HTTPAddr) implies: off loopback, reads need a token unless
// http_public_read; on loopback, only loopback names are served in Host
// (DNS rebinding). Every command that serves the operator sets its access
// here, with its listener's HTTPLimits.
func (c *Config) OperatorAccess(o operator.Options) operator.Options {
	loopback := operator.IsLoopback(c.HTTPAddr())
	o.Tokens, o.ReadTokens = c.TokensOf(RoleAct), c.TokensOf(RoleRead)
	o.ReadNeedsToken = !loopback && !c.HTTPPublicRead
	o.Loopback = loopback
	return o
}

// HTTPLimits are the operator listener's connection cap and time limits.
func (c *Config) HTTPLimits() operator.Limits {
	return operator.Limits{MaxConns: c.HTTPMaxConnections}
}

// setTokenRoles gives each API token without a role the role act (a token
// written as a plain string, as before roles existed).
func (c *Config) setTokenRoles() {
	for name, t := range c.APITokens {
		if t.Role == "" {
			t.Role = RoleAct
			c.APITokens[name] = t
		}
	}
}

// validateHTTP checks the API tokens and the connection cap.
func (c *Config) validateHTTP(bad func(format string, args ...any)) {
	names := make([]string, 0, len(c.APITokens))
	for name := range c.APITokens {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		t := c.APITokens[name]
		at := fmt.Sprintf("api_tokens.%s", name)
		switch {
		case t.Token == "":
			bad("%s: the token is empty: %s", at, TokenHelp)
		case len(t.Token) < MinTokenLength:
			bad("%s: the token has %d characters, fewer than %d: %s", at, len(t.Token), MinTokenLength, TokenHelp)
		case seen[t.Token] != "":
			bad("%s: the same token as api_tokens.%s: give each its own (%s)", at, seen[t.Token], TokenHelp)
		}
		seen[t.Token] = name
		if t.Role != RoleRead && t.Role != RoleAct {
			bad("%s.role: %q is not a role (use %s to read only, or %s to read and act)", at, t.Role, RoleRead, RoleAct)
		}
	}
	if c.HTTPMaxConnections < 1 {
		bad("http_max_connections: %d is out of range (use at least 1; default %d)", c.HTTPMaxConnections, Defaults.HTTPMaxConnections)
	}
}
