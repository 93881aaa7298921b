// Package deploy holds the files of the Docker stack (docker-compose.yml and
// the Dockerfile at the repository root, the MySQL init script here) and the
// tests that check them.
//
// There is no Docker engine on the development machines or in CI, so these
// tests cannot run the stack: they read the files with a YAML parser and
// check what Docker would rely on (services, health checks, depends_on
// conditions, build context, environment, mounted files), and they run the
// init script on the test MariaDB.
package deploy

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/refresher/refresher/models/mysqlstore"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/refresher/refresher/internal/testenv"
)

// root is the repository root, where docker-compose.yml and the Dockerfile
// live; paths in the compose file are relative to it.
const root = ".."

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                                `yaml:"image"`
	Build       *composeBuild                         `yaml:"build"`
	Command     []string                              `yaml:"command"`
	Environment map[string]string                     `yaml:"environment"`
	Volumes     []string                              `yaml:"volumes"`
	Healthcheck *struct{ Test []string }              `yaml:"healthcheck"`
	DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
	Restart     string                                `yaml:"restart"`
	PullPolicy  string                                `yaml:"pull_policy"`
	Ports       []string                              `yaml:"ports"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// refresherServices run the image built from the Dockerfile; the first
// element of each command is the refresher subcommand.
var refresherServices = map[string]string{"migrate": "migrate", "refresher": "run", "worker": "worker"}

// kindConfig is the part of a REFRESHER_KINDS entry these tests look at.
type kindConfig struct {
	Name     string   `yaml:"name"`
	Key      string   `yaml:"key"`
	Payload  []string `yaml:"payload"`
	Schedule string   `yaml:"schedule"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(data, &c), "docker-compose.yml")
	return c
}

func TestComposeServices(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	names := make([]string, 0, len(c.Services))
	for name := range c.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	require.Equal(t, []string{"migrate", "mysql", "redis", "refresher", "worker"}, names)

	require.True(t, strings.HasPrefix(c.Services["mysql"].Image, "mysql:8"), "mysql image %q", c.Services["mysql"].Image)
	require.True(t, strings.HasPrefix(c.Services["redis"].Image, "redis:7"), "redis image %q", c.Services["redis"].Image)
	for _, name := range []string{"mysql", "redis"} {
		hc := c.Services[name].Healthcheck
		require.NotNil(t, hc, "%s has no healthcheck", name)
		require.NotEmpty(t, hc.Test, "%s healthcheck has no test", name)
		require.Contains(t, []string{"CMD", "CMD-SHELL"}, hc.Test[0], "%s healthcheck test", name)
	}
}

func TestComposeDependsOn(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	want := map[string]map[string]string{
		"mysql":     nil,
		"redis":     nil,
		"migrate":   {"mysql": "service_healthy"},
		"refresher": {"migrate": "service_completed_successfully", "mysql": "service_healthy", "redis": "service_healthy"},
		"worker":    {"redis": "service_healthy"},
	}
	for name, s := range c.Services {
		var got map[string]string
		for dep, d := range s.DependsOn {
			if got == nil {
				got = map[string]string{}
			}
			got[dep] = d.Condition
			if d.Condition == "service_healthy" {
				require.NotNil(t, c.Services[dep].Healthcheck, "%s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		require.Equal(t, want[name], got, "depends_on of %s", name)
	}
	require.Equal(t, "no", c.Services["migrate"].Restart, "migrate is one-shot: restarting it would keep refresher waiting")
}

// The three refresher services run one image, built once: one service has
// the build: section and names the image, the others name the same image
// and never pull it (compose would otherwise build it once per service and
// leave the extra builds dangling).
func TestComposeBuildsFromDockerfile(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	image := c.Services["refresher"].Image
	require.NotEmpty(t, image)
	var builders []string
	for name, sub := range refresherServices {
		s := c.Services[name]
		require.Equal(t, image, s.Image, "%s uses another image than refresher", name)
		require.NotEmpty(t, s.Command, "%s has no command", name)
		require.Equal(t, sub, s.Command[0], "%s runs `refresher %s`", name, sub)
		if s.Build == nil {
			require.Equal(t, "never", s.PullPolicy, "%s runs the image another service builds: it must not try to pull it", name)
			continue
		}
		builders = append(builders, name)
		require.FileExists(t, filepath.Join(root, s.Build.Context, s.Build.Dockerfile), "Dockerfile of %s", name)
		require.Equal(t, root, filepath.Join(root, s.Build.Context), "%s builds from the repository root", name)
		require.NotEqual(t, "never", s.PullPolicy, "%s builds the image", name)
	}
	require.Len(t, builders, 1, "exactly one service builds the image: %v", builders)
	for _, name := range []string{"mysql", "redis"} {
		require.Nil(t, c.Services[name].Build, "%s uses the upstream image", name)
	}
}

// interpolate replaces ${NAME:-default} as compose does when NAME is not
// set in the environment.
func interpolate(s string) string {
	return regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`).ReplaceAllString(s, "$1")
}

// The dashboard, the API and /metrics are published on the host's
// loopback, with a token (run refuses a listener off loopback without
// one), and the Prometheus scrape config in deploy/ matches: the same port
// and path, and the token from a file that says how to write the stack's
// token into it and that git ignores (no token is written in the config).
func TestComposePublishesOperatorPort(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	env := c.Services["refresher"].Environment
	host, port, err := net.SplitHostPort(env["REFRESHER_HTTP"])
	require.NoError(t, err, "REFRESHER_HTTP of refresher")
	require.Equal(t, "0.0.0.0", host, "the server listens on the container's network, not its loopback")

	var tokens map[string]string
	require.NoError(t, yaml.Unmarshal([]byte(interpolate(env["REFRESHER_API_TOKENS"])), &tokens), "REFRESHER_API_TOKENS is a YAML map")
	require.Len(t, tokens, 1)
	var token string
	for _, tok := range tokens {
		token = tok
	}
	require.GreaterOrEqual(t, len(token), 16, "a token of at least 16 characters")

	var published string
	for _, p := range c.Services["refresher"].Ports {
		parts := strings.Split(p, ":")
		require.Len(t, parts, 3, "port %q is published as HOST_IP:HOST_PORT:CONTAINER_PORT", p)
		if parts[2] == port {
			require.Equal(t, "127.0.0.1", parts[0], "published on the host's loopback only")
			published = parts[1]
		}
	}
	require.NotEmpty(t, published, "the container port %s is published", port)

	data, err := os.ReadFile("prometheus/prometheus.yml")
	require.NoError(t, err)
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			Authorization struct {
				Type            string `yaml:"type"`
				Credentials     string `yaml:"credentials"`
				CredentialsFile string `yaml:"credentials_file"`
			} `yaml:"authorization"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &prom))
	require.Contains(t, prom.RuleFiles, "alerts.yml")
	require.Len(t, prom.ScrapeConfigs, 1)
	sc := prom.ScrapeConfigs[0]
	require.Equal(t, "/metrics", sc.MetricsPath)
	require.Equal(t, "Bearer", sc.Authorization.Type)
	require.Empty(t, sc.Authorization.Credentials, "no token written in prometheus.yml: use credentials_file")
	tokenFile := sc.Authorization.CredentialsFile
	require.NotEmpty(t, tokenFile, "the scrape reads the token from credentials_file")
	require.False(t, filepath.IsAbs(tokenFile), "credentials_file %q is beside prometheus.yml (Prometheus reads it relative to the config)", tokenFile)
	require.Contains(t, string(data), `"$REFRESHER_TOKEN" > deploy/prometheus/`+tokenFile, "prometheus.yml says how to write the stack's token into %s", tokenFile)
	ignore, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^/deploy/prometheus/`+regexp.QuoteMeta(tokenFile)+`$`, string(ignore), "git ignores the token file")
	require.Equal(t, []string{"127.0.0.1:" + published}, sc.StaticConfigs[0].Targets, "the scrape target is the published port")
}

func TestComposeEnvironment(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	mysqlEnv := c.Services["mysql"].Environment

	for _, name := range []string{"migrate", "refresher"} {
		env := c.Services[name].Environment
		dsn, err := mysql.ParseDSN(env["REFRESHER_DATABASE"])
		require.NoError(t, err, "REFRESHER_DATABASE of %s", name)
		require.Equal(t, "mysql:3306", dsn.Addr, "%s connects to the mysql service", name)
		require.Equal(t, mysqlEnv["MYSQL_DATABASE"], dsn.DBName, "%s uses the database the mysql service creates", name)
		require.Equal(t, "root", dsn.User)
		require.Equal(t, mysqlEnv["MYSQL_ROOT_PASSWORD"], dsn.Passwd, "%s logs in with the mysql service's root password", name)
		require.True(t, dsn.ParseTime, "%s: parseTime=true", name)
		require.Equal(t, "UTC", dsn.Loc.String(), "%s: loc=UTC", name)

		kinds := composeKinds(t, env)
		require.Len(t, kinds, 1, "one kind in REFRESHER_KINDS of %s", name)
		require.Equal(t, kindConfig{Name: "big_tables", Key: "uid", Payload: []string{"input_url"},
			Schedule: "RRULE:FREQ=MINUTELY;INTERVAL=5"}, kinds[0])
	}
	for _, name := range []string{"refresher", "worker"} {
		u, err := url.Parse(c.Services[name].Environment["REFRESHER_REDIS"])
		require.NoError(t, err, "REFRESHER_REDIS of %s", name)
		require.Equal(t, "redis", u.Scheme)
		require.Equal(t, "redis:6379", u.Host, "%s connects to the redis service", name)
	}
	require.Equal(t, c.Services["refresher"].Environment["REFRESHER_REDIS"], c.Services["worker"].Environment["REFRESHER_REDIS"],
		"the worker and the service share one Redis")

	worker := c.Services["worker"].Command
	i := slices.Index(worker, "--kind")
	require.True(t, i >= 0 && i+1 < len(worker), "worker command %v has no --kind", worker)
	require.Equal(t, composeKinds(t, c.Services["refresher"].Environment)[0].Name, worker[i+1], "the worker serves the configured kind")
}

func composeKinds(t *testing.T, env map[string]string) []kindConfig {
	t.Helper()
	raw, ok := env["REFRESHER_KINDS"]
	require.True(t, ok, "REFRESHER_KINDS is not set")
	var kinds []kindConfig
	require.NoError(t, yaml.Unmarshal([]byte(raw), &kinds), "REFRESHER_KINDS is YAML flow text")
	return kinds
}

// initScript returns the host path and the text of the init script mounted
// into the mysql service.
func initScript(t *testing.T) (string, string) {
	t.Helper()
	c := loadCompose(t)
	for _, v := range c.Services["mysql"].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[1], "/docker-entrypoint-initdb.d/") {
			require.True(t, strings.HasPrefix(parts[0], "./"), "init script %q is a path relative to the compose file", parts[0])
			path := filepath.Join(root, parts[0])
			require.FileExists(t, path, "init script mounted into mysql")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			return path, string(data)
		}
	}
	t.Fatal("mysql mounts no init script into /docker-entrypoint-initdb.d/")
	return "", ""
}

func TestComposeInitScript(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	path, script := initScript(t)
	require.Contains(t, c.Volumes, "mysql-data", "the data volume is declared")

	kind := composeKinds(t, c.Services["refresher"].Environment)[0]
	create := regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS ` + kind.Name + ` \((.*?)\n\)`).FindStringSubmatch(script)
	require.NotNil(t, create, "%s creates no table %s", path, kind.Name)
	for _, col := range append([]string{kind.Key}, kind.Payload...) {
		require.Regexp(t, `(?m)^\s+`+col+`\s`, create[1], "table %s has the column %s named in REFRESHER_KINDS", kind.Name, col)
	}
	require.Contains(t, script, "CREATE DATABASE IF NOT EXISTS "+c.Services["mysql"].Environment["MYSQL_DATABASE"]+" ")
}

// TestComposeInitScriptRuns runs the init script and `refresher migrate`'s
// runner on the test MariaDB: the example rows exist and are due.
func TestComposeInitScriptRuns(t *testing.T) {
	t.Parallel()
	_, script := initScript(t)
	db, _ := testenv.DB(t)
	ctx := context.Background()
	// The test database stands in for `app`.
	script = regexp.MustCompile(`(?m)^(CREATE DATABASE|USE) .*;$`).ReplaceAllString(script, "")
	for stmt := range strings.SplitSeq(script, ";\n") {
		if strings.TrimSpace(stripComments(stmt)) == "" {
			continue
		}
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err, "init script statement:\n%s", stmt)
	}
	_, err := mysqlstore.Migrate(ctx, db, []string{"big_tables"}, io.Discard, false)
	require.NoError(t, err, "refresher migrate on the example table")

	rows, err := db.QueryContext(ctx, `SELECT uid, input_url FROM big_tables
		WHERE refresh_at <= UTC_TIMESTAMP(6) AND refresh_attempt_no = 0 ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var due [][2]string
	for rows.Next() {
		var r [2]string
		require.NoError(t, rows.Scan(&r[0], &r[1]))
		require.Len(t, r[0], 20, "uid %q is an xid-sized CHAR(20)", r[0])
		due = append(due, r)
	}
	require.NoError(t, rows.Err())
	require.Len(t, due, 2, "two example rows, due at once")
	require.Equal(t, "https://example.com/", due[0][1], "one good URL")
	host, err := url.Parse(due[1][1])
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(host.Hostname(), ".invalid"), "one URL whose host never resolves: %s", due[1][1])
}

func stripComments(s string) string {
	return regexp.MustCompile(`(?m)^\s*--.*$`).ReplaceAllString(s, "")
}

// TestDockerfile checks the parts of the Dockerfile the stack relies on.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	df := string(data)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+\.\d+)$`).FindStringSubmatch(string(gomod))
	require.NotNil(t, goVersion, "go.mod has a go line with a patch version")

	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	require.Len(t, froms, 2, "multi-stage: a build stage and a run stage")
	require.Equal(t, "golang:"+goVersion[1], froms[0][1], "the builder's Go is go.mod's, patch version included (golang:1.26 may be an older patch)")
	require.Contains(t, froms[1][1], ":nonroot", "the run stage runs as a non-root user")
	require.Regexp(t, `(?m)^USER nonroot`, df)
	require.Regexp(t, `CGO_ENABLED=0 go build .*-tags timetzdata`, df, "static binary with tzdata embedded")
	build := regexp.MustCompile(`-o (\S+) (\./\S+)`).FindStringSubmatch(df)
	require.NotNil(t, build, "go build -o BIN ./PKG")
	require.DirExists(t, filepath.Join(root, build[2]), "the package the Dockerfile builds")
	require.Regexp(t, `(?m)^ENTRYPOINT \["/usr/local/bin/refresher"\]$`, df)
	require.Contains(t, df, "COPY --from=build "+build[1]+" /usr/local/bin/refresher")

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	for _, needed := range []string{"go.mod", "go.sum", "cmd", "internal"} {
		require.NotRegexp(t, `(?m)^`+regexp.QuoteMeta(needed)+`/?$`, string(ignore), ".dockerignore keeps %s out of the build", needed)
	}
	require.Regexp(t, `(?m)^\.git$`, string(ignore))
}
