package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Redis is a redis-server a test started on 127.0.0.1, stopped when the
// test ends.
type Redis struct {
	Addr string // host:port
	cmd  *exec.Cmd
	dir  string
	args []string
}

// redisServer returns the path of redis-server. Without one the test is
// skipped on a developer machine and fails when CI is set (.ci/run
// installs Debian's redis-server).
func redisServer(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but redis-server is not installed: %v", err)
	}
	t.Skipf("redis-server not installed (apt-get install redis-server): %v", err)
	return ""
}

// StartRedis starts a redis-server on a free port of 127.0.0.1 with its
// data in a temporary directory, with extra arguments (e.g. "--appendonly",
// "yes"), and waits until it answers.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	return startRedis(t, func() int { return freePort(t) }, extra)
}

func startRedis(t testing.TB, pick func() int, extra []string) *Redis {
	t.Helper()
	path := redisServer(t)
	r := &Redis{dir: t.TempDir()}
	var last string
	for range 3 { // a port found free may be taken before the server binds it
		port := pick()
		r.Addr = fmt.Sprintf("127.0.0.1:%d", port)
		r.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", r.dir, "--save", "", "--daemonize", "no", "--protected-mode", "yes"}, extra...)
		if last = r.start(t, path); last == "" {
			t.Cleanup(func() { r.Stop() })
			return r
		}
	}
	t.Fatalf("redis-server did not start:\n%s", last)
	return nil
}

// start runs the server and waits for it to accept connections; it
// returns the server's output when it does not.
func (r *Redis) start(t testing.TB, path string) string {
	t.Helper()
	r.cmd = exec.Command(path, r.args...)
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.cmd.Stdout
	return StartReady(r.cmd, out, "Ready to accept connections", 30*time.Second)
}

// Stop kills the server (as a crash would: nothing is flushed).
func (r *Redis) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		KillGroup(r.cmd)
	}
}

// Restart starts the server again on the same port and directory, after
// Stop.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	path := redisServer(t)
	if out := r.start(t, path); out != "" {
		t.Fatalf("redis-server did not start again:\n%s", out)
	}
}

// StartRedisCluster starts three redis-server masters in cluster mode on
// 127.0.0.1 and joins them (redis-cli --cluster create), and returns
// their addresses once the cluster is up.
func StartRedisCluster(t testing.TB) []string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but redis-cli is not installed: %v", err)
		}
		t.Skipf("redis-cli not installed: %v", err)
	}
	var addrs []string
	for i := range 3 {
		conf := filepath.Join(t.TempDir(), fmt.Sprintf("nodes-%d.conf", i))
		r := startRedis(t, func() int { return freeClusterPort(t) }, []string{"--cluster-enabled", "yes", "--cluster-config-file", conf, "--cluster-node-timeout", "5000"})
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		for {
			out, _ := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cluster is not up after a minute: %s", out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

// freeClusterPort returns a port of 127.0.0.1 that was free a moment ago,
// with its cluster bus port (10000 above it) free too.
func freeClusterPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(30000)
		a, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return port
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
