package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// PythonWithRedis returns a python3 that can import redis-py, for the tests
// that run the README's Python worker (examples/worker.py), or skips the
// test saying what to install (`make test` installs it: scripts/python.sh).
// pyenv's python3 may shadow the system one, where Debian's python3-redis
// puts the module, so /usr/bin/python3 is tried too.
func PythonWithRedis(t testing.TB) string {
	t.Helper()
	var tried []string
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		tried = append(tried, path)
		if exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if len(tried) == 0 {
		t.Skip("skip the Python worker: no python3 on PATH or in /usr/bin (make test installs it: scripts/python.sh)")
	}
	t.Skipf("skip the Python worker: no redis module in %v (pip install redis, or apt-get install python3-redis; make test installs it)", tried)
	return ""
}

// PythonEnv is the environment to run examples/worker.py in: this
// process's without its OTEL_* variables (a developer's own collector
// must not change what a test sees), no bytecode written beside the
// script, then env.
func PythonEnv(env ...string) []string {
	out := []string{"PYTHONDONTWRITEBYTECODE=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}
