package config

import (
	"strings"
	"testing"
)

// TestAPITokenRoles: api_tokens takes a token alone (role act, as before
// roles existed) or {token, role}, from the file and the environment.
func TestAPITokenRoles(t *testing.T) {
	var c Config
	err := decode([]byte(`
api_tokens:
  alice: "0123456789abcdef0123"
  grafana: {token: "fedcba9876543210fedc", role: read}
  bob: {token: "aaaabbbbccccddddeeee"}
http_public_read: true
kinds: [{name: a, schedule: "RRULE:FREQ=DAILY"}]
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	act, read := c.TokensOf(RoleAct), c.TokensOf(RoleRead)
	if len(act) != 2 || act["alice"] != "0123456789abcdef0123" || act["bob"] != "aaaabbbbccccddddeeee" {
		t.Errorf("act tokens: %v", act)
	}
	if len(read) != 1 || read["grafana"] != "fedcba9876543210fedc" {
		t.Errorf("read tokens: %v", read)
	}
	if !c.HTTPPublicRead || c.HTTPMaxConnections != Defaults.HTTPMaxConnections {
		t.Errorf("http_public_read %v, http_max_connections %d", c.HTTPPublicRead, c.HTTPMaxConnections)
	}

	var e Config
	env := map[string]string{"REFRESHER_API_TOKENS": `{g: {token: "fedcba9876543210fedc", role: read}}`, "REFRESHER_HTTP_PUBLIC_READ": "true"}
	if err := ApplyEnv(&e, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	e.SetDefaults()
	if e.APITokens["g"] != (APIToken{Token: "fedcba9876543210fedc", Role: RoleRead}) || !e.HTTPPublicRead {
		t.Errorf("from the environment: %v %v", e.APITokens, e.HTTPPublicRead)
	}
}

// TestWeakTokensRefused: an empty token, a short one, a role that is not
// one and a token given twice are refused, saying how to make a token.
func TestWeakTokensRefused(t *testing.T) {
	for _, tc := range []struct {
		tokens map[string]APIToken
		want   string
	}{
		{map[string]APIToken{"ops": {}}, "api_tokens.ops: the token is empty"},
		{map[string]APIToken{"ops": {Token: "x"}}, "api_tokens.ops: the token has 1 characters, fewer than 16"},
		{map[string]APIToken{"ops": {Token: "0123456789abcde"}}, "fewer than 16"},
		{map[string]APIToken{"ops": {Token: "0123456789abcdef", Role: "admin"}}, `api_tokens.ops.role: "admin" is not a role`},
		{map[string]APIToken{"a": {Token: "0123456789abcdef"}, "b": {Token: "0123456789abcdef", Role: RoleRead}}, "api_tokens.b: the same token as api_tokens.a"},
	} {
		c := Config{APITokens: tc.tokens, Kinds: []Kind{{Name: "a", Schedule: "RRULE:FREQ=DAILY"}}}
		c.SetDefaults()
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.tokens, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), "openssl rand -hex 16") && !strings.Contains(err.Error(), "role") {
			t.Errorf("%v: %v does not say how to make a token", tc.tokens, err)
		}
	}
	c := Config{APITokens: map[string]APIToken{"ops": {Token: "0123456789abcdef"}}, Kinds: []Kind{{Name: "a", Schedule: "RRULE:FREQ=DAILY"}}}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Errorf("a 16-character token: %v", err)
	}
}
