package redisio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/refresher/refresher/internal/redact"
)

// Topology is the shape of the Redis a URL names.
type Topology int

const (
	// Single is one Redis server (redis:// or rediss://).
	Single Topology = iota
	// Cluster is a Redis Cluster (redis+cluster:// or rediss+cluster://):
	// every kind's keys must share one hash tag (see Lists.Tag).
	Cluster
	// Sentinel is a master found through Redis Sentinel
	// (redis+sentinel:// or rediss+sentinel://).
	Sentinel
)

func (t Topology) String() string {
	switch t {
	case Cluster:
		return "Redis Cluster"
	case Sentinel:
		return "Redis Sentinel"
	}
	return "Redis"
}

// urlExamples is appended to every error about a Redis URL.
const urlExamples = "use redis://[user:password@]host:6379/0, " +
	"redis+cluster://[user:password@]h1:7000,h2:7001,h3:7002 or " +
	"redis+sentinel://[user:password@]s1:26379,s2:26379/mymaster"

// TopologyOf returns the topology the scheme of rawURL names, and Single
// for any other scheme (which Open then refuses).
func TopologyOf(rawURL string) Topology {
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "redis+cluster", "rediss+cluster":
		return Cluster
	case "redis+sentinel", "rediss+sentinel":
		return Sentinel
	}
	return Single
}

// Options are what Open needs beyond the URL.
type Options struct {
	// PoolSize is the least number of connections of the pool (per node in
	// a cluster), unless the URL sets pool_size, which wins. Default:
	// go-redis's, 10 per CPU.
	PoolSize int
}

// Open returns the client of the Redis that rawURL names, through go-redis's
// client for its topology, and pings it. It is the one place where a Redis
// URL becomes a client, for the service and the reference worker alike:
//
//   - redis://[user:password@]host:port[/db][?options] (rediss:// for TLS):
//     one server;
//   - redis+cluster://[user:password@]h1:7000,h2:7001[?options]: a Redis
//     Cluster, found through any of the nodes listed;
//   - redis+sentinel://[user:password@]s1:26379,s2:26379/mymaster[?options]:
//     the master mymaster, found through any of the sentinels listed and
//     followed across failovers. The user and password are the master's
//     (and its replicas'); sentinel_username and sentinel_password in the
//     query authenticate to the sentinels, when they require it.
//
// The options are go-redis's URL options (dial_timeout, pool_size, db,
// ...). No error quotes the password.
func Open(ctx context.Context, rawURL string, o Options) (redis.UniversalClient, error) {
	rdb, where, err := newClient(rawURL, o)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("redis URL %q: %w (%s)", redact.String(rawURL), err, urlExamples), rawURL)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, redact.Error(fmt.Errorf("connect to %s at %s: %w (is it running? check `redis:` in the config or REFRESHER_REDIS)",
			TopologyOf(rawURL), where, err), rawURL)
	}
	return rdb, nil
}

// newClient parses rawURL into a client, not yet connected, and says where
// it connects (the addresses, for errors).
func newClient(rawURL string, o Options) (redis.UniversalClient, string, error) {
	pool := func(n int) int {
		if n != 0 {
			return n // set in the URL
		}
		return max(o.PoolSize, 10*runtime.GOMAXPROCS(0))
	}
	switch TopologyOf(rawURL) {
	case Cluster:
		opt, err := parseCluster(rawURL)
		if err != nil {
			return nil, "", err
		}
		opt.PoolSize = pool(opt.PoolSize)
		cc := redis.NewClusterClient(opt)
		cc.AddHook(reloadOnFailure{cc})
		return cc, strings.Join(opt.Addrs, ","), nil
	case Sentinel:
		opt, err := parseSentinel(rawURL)
		if err != nil {
			return nil, "", err
		}
		opt.PoolSize = pool(opt.PoolSize)
		return redis.NewFailoverClient(opt), "master " + opt.MasterName + " of " + strings.Join(opt.SentinelAddrs, ","), nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	opt.PoolSize = pool(opt.PoolSize)
	return redis.NewClient(opt), opt.Addr, nil
}

// splitHosts parses rawURL, whose host is a comma-separated list of
// host:port, and returns the URL with the first host only, the others, and
// the user and password (removed from the URL, so that go-redis's parser
// never sees nor quotes them).
func splitHosts(rawURL, what string) (u *url.URL, more []string, user, pass string, err error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	at := strings.LastIndex(auth, "@")
	hosts := strings.Split(auth[at+1:], ",")
	for _, h := range hosts {
		if host, port, err := net.SplitHostPort(h); err != nil || host == "" || port == "" {
			return nil, nil, "", "", fmt.Errorf("%q is not a %s address host:port", h, what)
		}
	}
	// url.Parse takes one host: give it the first.
	u, err = url.Parse(scheme + "://" + auth[:at+1] + hosts[0] + rest[end:])
	if err != nil {
		return nil, nil, "", "", errors.New("not a URL")
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	u.Scheme = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(u.Scheme), "+cluster"), "+sentinel")
	return u, hosts[1:], user, pass, nil
}

func parseCluster(rawURL string) (*redis.ClusterOptions, error) {
	u, more, user, pass, err := splitHosts(rawURL, "cluster node")
	if err != nil {
		return nil, err
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		return nil, fmt.Errorf("a cluster has no database number or path, found %q: remove it", "/"+p)
	}
	u.Path = ""
	q := u.Query()
	if q.Has("addr") {
		return nil, errors.New("list the cluster's nodes in the host, comma-separated, not in addr=")
	}
	q["addr"] = more
	u.RawQuery = q.Encode()
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	opt.Username, opt.Password = user, pass
	return opt, nil
}

func parseSentinel(rawURL string) (*redis.FailoverOptions, error) {
	u, more, user, pass, err := splitHosts(rawURL, "sentinel")
	if err != nil {
		return nil, err
	}
	master := strings.Trim(u.Path, "/")
	if master == "" || strings.Contains(master, "/") {
		return nil, errors.New("name the master after the sentinels, as in /mymaster (and the database, if not 0, as ?db=N)")
	}
	u.Path = ""
	q := u.Query()
	for _, k := range []string{"addr", "master_name", "username", "password"} {
		if q.Has(k) {
			return nil, fmt.Errorf("%s= is not an option here: list the sentinels in the host, the master in the path, and the master's user and password before the '@'", k)
		}
	}
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q["addr"] = more
	q.Set("master_name", master)
	u.RawQuery = q.Encode()
	opt, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	opt.Username, opt.Password = user, pass
	opt.SentinelUsername, opt.SentinelPassword = sentinelUser, sentinelPass
	return opt, nil
}
