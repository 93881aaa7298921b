package redisio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseClusterURL(t *testing.T) {
	rdb, where, err := newClient("redis+cluster://app:s3cret@h1:7000,h2:7001,h3:7002?dial_timeout=2s&pool_size=7", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want a *redis.ClusterClient", rdb)
	}
	o := cc.Options()
	if strings.Join(o.Addrs, ",") != "h1:7000,h2:7001,h3:7002" || o.Username != "app" || o.Password != "s3cret" ||
		o.DialTimeout != 2*time.Second || o.PoolSize != 7 || o.TLSConfig != nil {
		t.Errorf("options: addrs %v user %q password %q dial %s pool %d tls %v", o.Addrs, o.Username, o.Password, o.DialTimeout, o.PoolSize, o.TLSConfig)
	}
	if where != "h1:7000,h2:7001,h3:7002" {
		t.Errorf("where = %q", where)
	}
	rdb2, _, err := newClient("rediss+cluster://h1:7000", Options{PoolSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb2.Close()
	if o := rdb2.(*redis.ClusterClient).Options(); o.TLSConfig == nil || o.PoolSize < 40 {
		t.Errorf("rediss+cluster: tls %v pool %d, want TLS and a pool of 40 or more", o.TLSConfig, o.PoolSize)
	}
}

func TestParseSentinelURL(t *testing.T) {
	rdb, _, err := newClient("redis+sentinel://:m%40ster@s1:26379,s2:26380/mymaster?db=2&sentinel_password=sp", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	// A failover client is a *redis.Client whose options are not exposed:
	// check what go-redis's parser made of the URL we build.
	opt, err := parseSentinel("redis+sentinel://:m%40ster@s1:26379,s2:26380/mymaster?db=2&sentinel_password=sp")
	if err != nil {
		t.Fatal(err)
	}
	if opt.MasterName != "mymaster" || strings.Join(opt.SentinelAddrs, ",") != "s1:26379,s2:26380" || opt.Password != "m@ster" ||
		opt.SentinelPassword != "sp" || opt.DB != 2 {
		t.Errorf("options: master %q sentinels %v password %q sentinel password %q db %d", opt.MasterName, opt.SentinelAddrs, opt.Password, opt.SentinelPassword, opt.DB)
	}
	if TopologyOf("REDIS+SENTINEL://x:1/m") != Sentinel || TopologyOf("rediss+cluster://x:1") != Cluster || TopologyOf("redis://x") != Single {
		t.Error("TopologyOf does not tell the schemes apart")
	}
}

// TestOpenRefusesBadURLs checks that each malformed URL gets an error that
// says what is wrong and shows the forms, and never the password.
func TestOpenRefusesBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis+cluster://u:hunter22@h1:7000,h2/0", `"h2" is not a cluster node address`},
		{"redis+cluster://u:hunter22@h1:7000/3", "a cluster has no database number"},
		{"redis+cluster://u:hunter22@h1:7000?addr=h2:7001", "not in addr="},
		{"redis+cluster://u:hunter22@h1:7000?bogus=1", "bogus"},
		{"redis+sentinel://u:hunter22@s1:26379", "name the master"},
		{"redis+sentinel://u:hunter22@s1:26379/m?password=x", "password= is not an option"},
		{"redis+sentinel://u:hunter22@s1/m", `"s1" is not a sentinel address`},
		{"http://u:hunter22@h:1", "invalid URL scheme"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := Open(ctx, tc.url, Options{})
		cancel()
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.url)
		case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "redis+sentinel://[user:password@]"):
			t.Errorf("%s: error %q, want it to say %q and show the URL forms", tc.url, err, tc.want)
		case strings.Contains(err.Error(), "hunter22"):
			t.Errorf("%s: error shows the password: %q", tc.url, err)
		}
	}
}

// TestOpenUnreachable checks that a cluster or sentinel set that does not
// answer gives an error naming the topology and its addresses, without the
// password.
func TestOpenUnreachable(t *testing.T) {
	for _, u := range []string{"redis+cluster://u:hunter22@127.0.0.1:1", "redis+sentinel://u:hunter22@127.0.0.1:1/mymaster?max_retries=-1"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := Open(ctx, u, Options{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "Redis ") || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: error %v, want one naming the topology and 127.0.0.1:1, without the password", u, err)
		}
	}
}
