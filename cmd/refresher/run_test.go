package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/testenv"
)

// TestMain lets a test run this test binary as the real refresher program:
// with REFRESHER_TEST_MAIN=1 it calls main with the arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("REFRESHER_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"refresher"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startRun starts `refresher run --config FILE` as a child process and waits
// until it logs that it runs.
func startRun(t *testing.T) *exec.Cmd {
	t.Helper()
	b := setupCommands(t)
	_, err := b.run(t, "migrate", "--config", b.path)
	require.NoError(t, err)
	_, prefix := testenv.Redis(t)
	cfg, err := os.ReadFile(b.path)
	require.NoError(t, err)
	cfg = []byte(strings.Replace(string(cfg), "  - name: big_tables\n",
		fmt.Sprintf("  - name: big_tables\n    input: %[1]sin\n    output: %[1]sout\n    dead: %[1]sdead\n", prefix), 1))
	path := filepath.Join(t.TempDir(), "run.yml")
	require.NoError(t, os.WriteFile(path, append(cfg, []byte("redis: "+testenv.RedisURL()+"\nhttp: 127.0.0.1:0\n")...), 0o600))

	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "run", "--config", path)
	cmd.Env = append(os.Environ(), "REFRESHER_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "refresher running") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return cmd
		}
	}
	t.Fatalf("refresher run did not start: %v", lines.Err())
	return nil
}

// wait returns the exit code of cmd, failing the test after 10s.
func wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(10 * time.Second):
		t.Fatal("refresher run did not exit within 10s")
		return -1
	}
}

func TestRunStopsOnSignal(t *testing.T) {
	t.Parallel()
	cmd := startRun(t)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, wait(t, cmd), "the first SIGTERM finishes the batches in hand and exits cleanly")
}

func TestSecondSignalExits(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sig, done, exited := make(chan os.Signal, 2), make(chan struct{}), make(chan int, 1)
	go exitOnSecondSignal(sig, done, quiet, func(code int) { exited <- code })
	sig <- syscall.SIGTERM
	select {
	case code := <-exited:
		t.Fatalf("exited with %d after the first signal", code)
	case <-time.After(50 * time.Millisecond):
	}
	sig <- syscall.SIGINT
	require.Equal(t, 130, <-exited)

	// After the service stopped on its own, signals no longer exit.
	sig2, done2 := make(chan os.Signal, 2), make(chan struct{})
	returned := make(chan struct{})
	go func() { exitOnSecondSignal(sig2, done2, quiet, func(int) { t.Error("exit called") }); close(returned) }()
	sig2 <- syscall.SIGTERM
	close(done2)
	<-returned
}

// A malformed Redis URL is refused without printing its password.
func TestOpenRedisHidesPassword(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis://:s3cret@127.0.0.1:63z9/0",
		"redis://user:s3cret@127.0.0.1:6379/zero",
		"redis://user:s3cret@[::1:6379/0",
		// A password in the query: go-redis refuses the option, and the
		// URL quoted in the error must not show it.
		"redis://127.0.0.1:6379/0?password=s3cret",
		"redis://127.0.0.1:6379/0?Password=s3cret&dial_timeout=soon",
	} {
		_, err := openRedis(t.Context(), url, 0)
		require.Error(t, err, url)
		require.NotContains(t, err.Error(), "s3cret", url)
		require.Contains(t, err.Error(), "xxxxx", url)
	}
	err := runWorker(t.Context(), workerSettings{Kind: "k", RedisURL: "redis://127.0.0.1:6379/zero?password=s3cret", Input: "i", Output: "o", Concurrency: 1, HTTPTimeout: time.Second}, nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

// TestWorkerLogsGoRedisLines: go-redis's own lines reach the worker's
// logger, leveled and attributed: here a sentinel that does not answer.
func TestWorkerLogsGoRedisLines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing answers there now
	var out testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	err = runWorker(t.Context(), workerSettings{Kind: "k", RedisURL: "redis+sentinel://" + addr + "/chores-master?dial_timeout=1s",
		Input: "i", Output: "o", Concurrency: 1, HTTPTimeout: time.Second, MaxBodyBytes: 1}, log)
	require.ErrorContains(t, err, "connect to Redis Sentinel")
	require.Regexp(t, `level=WARN msg="sentinel: GetMasterAddrByName addr=`+regexp.QuoteMeta(addr)+`, master=\\"chores-master\\" failed: [^\n]*component=go-redis`, out.String())
}
