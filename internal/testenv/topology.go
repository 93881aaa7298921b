package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file starts Redis topologies of the test's own on loopback, from
// Debian's redis-server, redis-cli and redis-sentinel (packages
// redis-server and redis-sentinel; scripts/redis-topologies.sh installs
// them when missing): a Redis Cluster of 3 masters and 3 replicas, and one
// master, one replica and 3 sentinels. Each runs in a temporary folder on
// free high ports, with short failure-detection timeouts (a failover takes
// seconds), and is killed and removed when the test ends.

const topologyHint = "install them with scripts/redis-topologies.sh (Debian's redis-server and redis-sentinel), or run `make test`"

// RedisNode is one process of a topology: a server or a sentinel.
type RedisNode struct {
	Addr string // 127.0.0.1:port
	Dir  string // its folder, which holds its log, redis.log
	cmd  *exec.Cmd
	done chan struct{}
}

// Kill ends the process at once (SIGKILL), as a crash would, and waits for
// it to be gone.
func (n *RedisNode) Kill() {
	if n.cmd.Process != nil {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
	}
}

// Pause stops the process (SIGSTOP) until Resume: it neither answers nor
// reads what is sent to it, as a replica that lags behind its master.
func (n *RedisNode) Pause() { _ = n.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused process go on (SIGCONT).
func (n *RedisNode) Resume() { _ = n.cmd.Process.Signal(syscall.SIGCONT) }

// RedisTopology is a running cluster or Sentinel set.
type RedisTopology struct {
	// URL is the redis+cluster:// or redis+sentinel:// URL of it.
	URL string
	// Servers are the Redis servers: in a cluster, masters first, as
	// created; with Sentinel, the master then the replica.
	Servers []*RedisNode
	// Sentinels are the sentinels (none in a cluster).
	Sentinels []*RedisNode
}

// CPU returns the CPU time (user and system) its servers and sentinels
// have used so far, from /proc; see ProcessCPU.
func (tp *RedisTopology) CPU() time.Duration {
	var d time.Duration
	for _, n := range append(append([]*RedisNode(nil), tp.Servers...), tp.Sentinels...) {
		if n.cmd.Process != nil {
			d += ProcessCPU(n.cmd.Process.Pid)
		}
	}
	return d
}

// Server returns the server at addr, or nil.
func (tp *RedisTopology) Server(addr string) *RedisNode {
	for _, n := range tp.Servers {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// ReplicaOf returns the server that replicates master, or nil.
func (tp *RedisTopology) ReplicaOf(t testing.TB, master *RedisNode) *RedisNode {
	t.Helper()
	port := master.Addr[strings.LastIndex(master.Addr, ":")+1:]
	for _, n := range tp.Servers {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		info, err := rdb.Info(context.Background(), "replication").Result()
		_ = rdb.Close()
		if err == nil && strings.Contains(info, "master_port:"+port+"\r\n") {
			return n
		}
	}
	return nil
}

// lookBins fails t when a binary of names is missing.
func lookBins(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s is not installed: %s", n, topologyHint)
		}
	}
}

// freePort returns a port in 20000-29999 that is free on loopback, with
// port+10000 (a cluster node's bus port) free too.
func freePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(10000)
		a, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		_ = a.Close()
		if err != nil {
			continue
		}
		_ = b.Close()
		return p
	}
	t.Fatal("no free port pair in 20000-39999 on 127.0.0.1")
	return 0
}

// startNode starts bin with the arguments args gives for a free port, in a
// new folder under root, logging to redis.log there, and waits until it
// answers PING with its own process ID (not another test's server that
// took the port first; then it tries another port).
func startNode(t testing.TB, root, bin string, args func(port int, dir string) []string) *RedisNode {
	t.Helper()
	for try := 0; ; try++ {
		port := freePort(t)
		dir := filepath.Join(root, strconv.Itoa(port))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, "redis.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args(port, dir)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
		cmd.SysProcAttr = dieWithParent()
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v (%s)", bin, err, topologyHint)
		}
		n := &RedisNode{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); _ = logf.Close(); close(n.done) }()
		t.Cleanup(n.Kill)
		if n.answers(cmd.Process.Pid) {
			return n
		}
		n.Kill()
		if try == 4 {
			b, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("%s did not start on 5 ports; the last log:\n%s", bin, tail(string(b), 2000))
		}
	}
}

// answers waits up to 10 s for the node to answer PING with process ID pid
// in INFO, and says whether it did.
func (n *RedisNode) answers(pid int) bool {
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
	defer rdb.Close()
	want := "process_id:" + strconv.Itoa(pid) + "\r\n"
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		select {
		case <-n.done:
			return false // it exited: the port was taken
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := rdb.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			return strings.Contains(info, want)
		}
	}
	return false
}

// waitFor polls ok until it holds, failing t after timeout with the tail
// of the logs of nodes.
func waitFor(t testing.TB, timeout time.Duration, what string, ok func(context.Context) bool, nodes ...*RedisNode) {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		good := ok(ctx)
		cancel()
		if good {
			return
		}
		if time.Now().After(end) {
			var logs strings.Builder
			for _, n := range nodes {
				b, _ := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
				fmt.Fprintf(&logs, "\n--- %s:\n%s", n.Addr, tail(string(b), 2000))
			}
			t.Fatalf("%s: not within %s%s", what, timeout, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// serverArgs are the options every test server runs with: loopback only,
// no persistence.
func serverArgs(port int) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--daemonize", "no"}
}

// RedisServer starts one Redis server of this test's own (no
// persistence), for comparisons with the topologies on the same machine,
// and returns its redis:// URL.
func RedisServer(t testing.TB) string {
	t.Helper()
	return RedisAlone(t).URL
}

// RedisAlone is RedisServer as a topology of one server (no sentinels),
// whose URL is redis://, so that its CPU can be read as a topology's.
func RedisAlone(t testing.TB) *RedisTopology {
	t.Helper()
	lookBins(t, "redis-server")
	n := startNode(t, t.TempDir(), "redis-server", func(p int, _ string) []string { return serverArgs(p) })
	return &RedisTopology{URL: "redis://" + n.Addr + "/0", Servers: []*RedisNode{n}}
}

// RedisCluster starts a Redis Cluster of 3 masters and 3 replicas for this
// test, whose nodes detect a failed master after 1 s (cluster-node-timeout).
func RedisCluster(t testing.TB) *RedisTopology {
	t.Helper()
	return RedisClusterOf(t, 1)
}

// RedisClusterOf starts a Redis Cluster of 3 masters with replicas
// replicas each (0 or more), as RedisCluster.
func RedisClusterOf(t testing.TB, replicas int) *RedisTopology {
	t.Helper()
	lookBins(t, "redis-server", "redis-cli")
	root := t.TempDir()
	tp := &RedisTopology{}
	addrs := make([]string, 3*(1+replicas))
	for i := range addrs {
		n := startNode(t, root, "redis-server", func(p int, _ string) []string {
			return append(serverArgs(p), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000")
		})
		tp.Servers = append(tp.Servers, n)
		addrs[i] = n.Addr
	}
	out, err := exec.Command("redis-cli", append([]string{"--cluster", "create"}, append(addrs, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range tp.Servers {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr})
		waitFor(t, 20*time.Second, n.Addr+" sees the cluster ok", func(ctx context.Context) bool {
			info, err := rdb.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		}, tp.Servers...)
		waitFor(t, 20*time.Second, n.Addr+" has its replica in sync", func(ctx context.Context) bool {
			info, err := rdb.Info(ctx, "replication").Result()
			return err == nil && (strings.Contains(info, "role:master") && strings.Contains(info, "connected_slaves:"+strconv.Itoa(replicas)) ||
				strings.Contains(info, "master_link_status:up"))
		}, tp.Servers...)
		_ = rdb.Close()
	}
	tp.URL = "redis+cluster://" + strings.Join(addrs, ",")
	return tp
}

// RedisSentinel starts one master, one replica and 3 sentinels monitoring
// them as "mymaster" with a quorum of 2, which take a master for down after
// 1 s.
func RedisSentinel(t testing.TB) *RedisTopology {
	t.Helper()
	lookBins(t, "redis-server", "redis-sentinel")
	root := t.TempDir()
	tp := &RedisTopology{}
	master := startNode(t, root, "redis-server", func(p int, _ string) []string { return serverArgs(p) })
	mp := master.Addr[strings.LastIndex(master.Addr, ":")+1:]
	replica := startNode(t, root, "redis-server", func(p int, _ string) []string {
		return append(serverArgs(p), "--replicaof", "127.0.0.1", mp)
	})
	tp.Servers = []*RedisNode{master, replica}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	waitFor(t, 20*time.Second, "the replica syncs with the master", func(ctx context.Context) bool {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, master, replica)
	var addrs []string
	for range 3 {
		n := startNode(t, root, "redis-sentinel", func(p int, dir string) []string {
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\n"+
				"sentinel monitor mymaster 127.0.0.1 %s 2\nsentinel down-after-milliseconds mymaster 1000\n"+
				"sentinel failover-timeout mymaster 5000\nsentinel parallel-syncs mymaster 1\n", p, dir, mp)
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{conf}
		})
		tp.Sentinels = append(tp.Sentinels, n)
		addrs = append(addrs, n.Addr)
	}
	for _, s := range tp.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		waitFor(t, 30*time.Second, s.Addr+" knows the other sentinels and the replica", func(ctx context.Context) bool {
			m, err := sc.Master(ctx, "mymaster").Result()
			return err == nil && m["num-other-sentinels"] == "2" && m["num-slaves"] == "1"
		}, tp.Sentinels...)
		_ = sc.Close()
	}
	tp.URL = "redis+sentinel://" + strings.Join(addrs, ",") + "/mymaster"
	return tp
}
