//go:build linux

// Uses the lab tests' helpers (lab_test.go, Linux only).

package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tlsDate is how hapticd writes a certificate's NotBefore and NotAfter.
const tlsDate = "2006-01-02 15:04:05 UTC"

// testCA is a lab CA made in a test: its certificate in dir/NAME.pem.
type testCA struct {
	dir, name string
	cert      *x509.Certificate
	key       *ecdsa.PrivateKey
	serial    int64
}

func newTestCA(t *testing.T, dir, name string, notBefore, notAfter time.Time) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	return &testCA{dir: dir, name: name, cert: cert, key: key, serial: 1}
}

func (ca *testCA) file() string { return filepath.Join(ca.dir, ca.name+".pem") }

// issue signs a member certificate for ips (none: 127.0.0.1-4) and writes
// NAME.pem and NAME.key; eku nil is server and client auth, as
// docs/lab.md's recipe.
func (ca *testCA) issue(t *testing.T, name string, notBefore, notAfter time.Time, eku []x509.ExtKeyUsage, ips ...string) (certFile, keyFile string) {
	t.Helper()
	if len(ips) == 0 {
		ips = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
	}
	var addrs []net.IP
	for _, ip := range ips {
		addrs = append(addrs, net.ParseIP(ip))
	}
	if eku == nil {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: eku,
		IPAddresses: addrs}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// labTLSCase is a set of --cluster-* flags and what hapticd must answer:
// wantErr "" starts, anything else is refused with an error holding every
// one of wantErr's |-separated parts.
type labTLSCase struct {
	name    string
	args    []string
	wantErr string
}

// labTLSCases makes the certificates of every case in a fresh directory.
// Times are whole seconds: a certificate holds no less.
func labTLSCases(t *testing.T) []labTLSCase {
	t.Helper()
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	ca := newTestCA(t, dir, "ca", now.Add(-day), now.Add(3650*day))
	other := newTestCA(t, dir, "other-ca", now.Add(-day), now.Add(3650*day))
	oldCA := newTestCA(t, dir, "old-ca", now.Add(-400*day), now.Add(-day))
	flags := func(cert, key, caFile string) []string {
		var a []string
		for _, f := range [][2]string{{"--cluster-cert", cert}, {"--cluster-key", key}, {"--cluster-ca", caFile}} {
			if f[1] != "" {
				a = append(a, f[0], f[1])
			}
		}
		return a
	}
	validCert, validKey := ca.issue(t, "valid", now.Add(-day), now.Add(365*day), nil)
	soonCert, soonKey := ca.issue(t, "soon", now.Add(-355*day), now.Add(10*day), nil)
	expiredAt := now.Add(-time.Hour)
	expiredCert, expiredKey := ca.issue(t, "expired", now.Add(-365*day), expiredAt, nil)
	laterAt := now.Add(2 * day)
	laterCert, laterKey := ca.issue(t, "later", laterAt, now.Add(365*day), nil)
	foreignCert, foreignKey := other.issue(t, "foreign", now.Add(-day), now.Add(365*day), nil)
	serverCert, serverKey := ca.issue(t, "server-only", now.Add(-day), now.Add(365*day), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	clientCert, clientKey := ca.issue(t, "client-only", now.Add(-day), now.Add(365*day), []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	oldCACert, oldCAKey := oldCA.issue(t, "by-old-ca", now.Add(-300*day), now.Add(365*day), nil)
	// A certificate copied from host B (10.0.0.2) to this member, which
	// peers dial at 127.0.0.1 (memberArgs' --cluster-bind).
	hostBCert, hostBKey := ca.issue(t, "host-b", now.Add(-day), now.Add(365*day), nil, "10.0.0.2")
	advertised := func(cert, key, addr string) []string {
		return append(flags(cert, key, ca.file()), "--cluster-advertise", addr)
	}
	return []labTLSCase{
		{"valid", flags(validCert, validKey, ca.file()), ""},
		{"expiring in 10 days", flags(soonCert, soonKey, ca.file()), ""},
		{"expired", flags(expiredCert, expiredKey, ca.file()), "--cluster-cert|" + expiredCert + "|expired|" + expiredAt.Format(tlsDate)},
		{"not yet valid", flags(laterCert, laterKey, ca.file()), "--cluster-cert|" + laterCert + "|not valid before|" + laterAt.Format(tlsDate)},
		{"signed by another CA", flags(foreignCert, foreignKey, ca.file()), "--cluster-cert|" + foreignCert + "|not signed by --cluster-ca|" + ca.file()},
		{"server auth only", flags(serverCert, serverKey, ca.file()), "--cluster-cert|" + serverCert + "|client"},
		{"client auth only", flags(clientCert, clientKey, ca.file()), "--cluster-cert|" + clientCert + "|server"},
		{"CA expired", flags(oldCACert, oldCAKey, oldCA.file()), "--cluster-ca|" + oldCA.file() + "|expired"},
		{"key of another certificate", flags(validCert, soonKey, ca.file()), "--cluster-key|private key does not match"},
		{"missing certificate file", flags(filepath.Join(dir, "nope.pem"), validKey, ca.file()), "--cluster-cert|nope.pem"},
		{"missing CA file", flags(validCert, validKey, filepath.Join(dir, "nope-ca.pem")), "--cluster-ca|nope-ca.pem"},
		{"CA file without a certificate", flags(validCert, validKey, validKey), "--cluster-ca|holds no PEM certificate"},
		{"no --cluster-ca", flags(validCert, validKey, ""), "--cluster-cert, --cluster-key and --cluster-ca together"},
		{"only --cluster-ca", flags("", "", ca.file()), "--cluster-cert, --cluster-key and --cluster-ca together"},
		{"naming another address", flags(hostBCert, hostBKey, ca.file()), "--cluster-cert|" + hostBCert + "|does not name 127.0.0.1|peers dial"},
		{"naming the advertised address", advertised(hostBCert, hostBKey, "10.0.0.2:7070"), ""},
		{"not naming the advertised address", advertised(validCert, validKey, "10.0.0.2:7070"), "--cluster-cert|" + validCert + "|does not name 10.0.0.2"},
		// An empty bind is the default loopback, as the link takes it.
		{"an empty bind", append(flags(validCert, validKey, ca.file()), "--cluster-bind", ""), ""},
	}
}

// memberArgs makes args those of a node with static membership (no peers
// needed) on 127.0.0.1.
func memberArgs(role string, clusterPort int, args []string) []string {
	if role == "standalone" {
		return args
	}
	return append([]string{"--role", role, "--membership", "static", "--cluster-port", strconv.Itoa(clusterPort), "--cluster-bind", "127.0.0.1"}, args...)
}

// The TLS files are read and checked with the other lab flags, before
// anything starts: a member whose certificate cannot work is refused with
// the file and the reason named; in standalone the flags are refused
// as --cluster-advertise is.
func TestLabTLSFlags(t *testing.T) {
	for _, tt := range labTLSCases(t) {
		for _, role := range []string{"node", "gateway", "standalone"} {
			args := memberArgs(role, 7070, tt.args)
			if role == "gateway" {
				args = append(args, "--peers", "127.0.0.2:7070")
			}
			want := tt.wantErr
			if role == "standalone" {
				want = "for --role node or gateway; standalone runs no cluster code"
			}
			o, err := parseFlags(args)
			switch {
			case want == "" && err != nil:
				t.Errorf("%s, %s: %v", tt.name, role, err)
			case want == "" && o.lab.tls == nil:
				t.Errorf("%s, %s: accepted, but no TLS loaded for the cluster link", tt.name, role)
			case want != "" && err == nil:
				t.Errorf("%s, %s: accepted; want refused (%s)", tt.name, role, want)
			case want != "":
				for _, part := range strings.Split(want, "|") {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("%s, %s: error %q does not say %q", tt.name, role, err, part)
					}
				}
			}
		}
	}
}

// docs/lab.md's recipe makes certificates that pass the start's checks,
// every member's.
func TestLabTLSReadmeRecipePasses(t *testing.T) {
	dir := t.TempDir()
	if !readmeLabPKI(t, dir) {
		t.Skip("no openssl")
	}
	// Each member binds the address its certificate names (readmeLabPKI's).
	for m, addr := range map[string]string{"a": "127.0.0.2", "b": "127.0.0.3", "gw": "127.0.0.4"} {
		args := append(memberArgs("node", 7070, []string{"--cluster-cert", filepath.Join(dir, m+".pem"), "--cluster-key", filepath.Join(dir, m+".key"),
			"--cluster-ca", filepath.Join(dir, "ca.pem")}), "--cluster-bind", addr)
		o, err := parseFlags(args)
		if err != nil {
			t.Errorf("member %s of docs/lab.md's recipe: %v", m, err)
			continue
		}
		if o.lab.tls == nil {
			t.Errorf("member %s: accepted, but no TLS loaded for the cluster link", m)
			continue
		}
		if left := time.Until(o.lab.tls.NotAfter); left < 364*24*time.Hour {
			t.Errorf("member %s: valid until %v, %v from now; the recipe says -days 365", m, o.lab.tls.NotAfter, left)
		}
	}
}

// A refused TLS set ends the process before any of its ports listens: the
// real binary exits non-zero saying why, and its HTTP, legacy and events
// ports, dialled all along, never accepted a connection (they did for
// about 100 ms, the arm connected, when the files were read by the cluster
// link's start).
func TestLabTLSRefusedBeforeStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cases := labTLSCases(t)
	refused := map[string]bool{"expired": true, "not yet valid": true, "signed by another CA": true,
		"key of another certificate": true, "CA file without a certificate": true, "no --cluster-ca": true,
		"naming another address": true}
	var standalone []string
	for _, tt := range cases {
		if tt.name == "valid" {
			standalone = tt.args
		}
	}
	cases = append(cases, labTLSCase{"standalone", standalone, "standalone"})
	refused["standalone"] = true
	const host = "127.0.0.1"
	ports := newLabPorts(t)
	for _, tt := range cases {
		if !refused[tt.name] {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			role := "node"
			if tt.name == "standalone" {
				role = "standalone"
			}
			api := []int{ports.free(host), ports.free(host), ports.free(host)}
			args := append([]string{"--bind", host, "--port", strconv.Itoa(api[0]), "--legacy-port", strconv.Itoa(api[1]),
				"--events-port", strconv.Itoa(api[2]), "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0",
				"--hw-scan-period", "0", "--log-format", "json"}, memberArgs(role, ports.free(host), tt.args)...)
			cmd := exec.Command(bin, args...)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// One dialler a port, without a pause: a refused dial on
			// loopback takes microseconds, and the listeners of a start
			// that fails late were up for only about 100 ms.
			var accepted atomic.Value // the first port that accepted
			var dialers sync.WaitGroup
			stop := make(chan struct{})
			for _, p := range api {
				dialers.Go(func() {
					addr := net.JoinHostPort(host, strconv.Itoa(p))
					for {
						if c, err := net.DialTimeout("tcp", addr, 50*time.Millisecond); err == nil {
							c.Close()
							accepted.CompareAndSwap(nil, p)
						}
						select {
						case <-stop:
							return
						default:
						}
					}
				})
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				close(stop)
				dialers.Wait()
				t.Fatalf("still running after 10 s (a port accepted: %v); want refused (%s)", accepted.Load(), tt.wantErr)
			}
			close(stop)
			dialers.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("exit %v; want a failure", err)
			}
			first, _, _ := strings.Cut(tt.wantErr, "|")
			if !strings.Contains(out.String(), first) {
				t.Errorf("output does not say %q:\n%s", first, out.String())
			}
			if p := accepted.Load(); p != nil {
				t.Errorf("port %d accepted a connection before the refusal", p)
			}
		})
	}
}

// A member whose certificate ends within 30 days starts and serves, and
// says so in its log at warning level with the date, which the journal
// keeps; a certificate valid for longer says nothing.
func TestLabTLSExpiringStartsWithWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cases := map[string][]string{}
	for _, tt := range labTLSCases(t) {
		cases[tt.name] = tt.args
	}
	soon, _, err := parseCertFlag(cases["expiring in 10 days"])
	if err != nil {
		t.Fatal(err)
	}
	ports := newLabPorts(t)
	for name, wantWarn := range map[string]bool{"expiring in 10 days": true, "valid": false} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--bind", "127.0.0.1", "--port", "0", "--legacy-port", "-1", "--events-port", "-1",
				"--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0", "--hw-scan-period", "0", "--log-format", "json"},
				memberArgs("node", ports.free("127.0.0.1"), cases[name])...)
			lines := runUntilReady(t, bin, args)
			var warned []map[string]any
			for _, l := range lines {
				if l["level"] == "warn" && strings.Contains(fmt.Sprint(l), "--cluster-cert") {
					warned = append(warned, l)
				}
			}
			switch {
			case !wantWarn && len(warned) > 0:
				t.Errorf("warned of a certificate valid for a year: %v", warned)
			case wantWarn && len(warned) != 1:
				t.Errorf("%d warnings naming --cluster-cert; want 1 naming %s", len(warned), soon.NotAfter.UTC().Format(tlsDate))
			case wantWarn && !strings.Contains(fmt.Sprint(warned[0]["message"]), soon.NotAfter.UTC().Format(tlsDate)):
				t.Errorf("warning %v does not name the date %s in its message", warned[0], soon.NotAfter.UTC().Format(tlsDate))
			}
		})
	}
}

// parseCertFlag reads the certificate of args' --cluster-cert.
func parseCertFlag(args []string) (*x509.Certificate, string, error) {
	for i, a := range args {
		if a == "--cluster-cert" && i+1 < len(args) {
			b, err := os.ReadFile(args[i+1])
			if err != nil {
				return nil, "", err
			}
			blk, _ := pem.Decode(b)
			if blk == nil {
				return nil, "", errors.New("no PEM in " + args[i+1])
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			return c, args[i+1], err
		}
	}
	return nil, "", errors.New("no --cluster-cert")
}

// runUntilReady runs the binary until it logs ready (JSON) and returns the
// lines it logged until then; it fails the test if the process exits first.
func runUntilReady(t *testing.T, bin string, args []string) []map[string]any {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	done := make(chan []map[string]any, 1)
	go func() {
		var lines []map[string]any
		var raw []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			raw = append(raw, sc.Text())
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			lines = append(lines, l)
			if l["message"] == "ready" {
				done <- lines
				for sc.Scan() {
				}
				return
			}
		}
		t.Errorf("exited before ready:\n%s", strings.Join(raw, "\n"))
		done <- nil
	}()
	select {
	case lines := <-done:
		if lines == nil {
			t.FailNow()
		}
		return lines
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20 s")
		return nil
	}
}

// A member whose certificate ends while it runs is no longer ready: Go
// checks a certificate at the handshake only, so the links already up go
// on and every check said healthy until a link broke, after which the
// peer was lost for good (tourtls2). From the certificate's NotAfter its
// /readyz answers 503, its lab check naming the file and the date; a
// gateway's too, though its start was long over.
func TestLabTLSCertificateEndingWhileRunningFailsReadyz(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	const host = "127.0.0.1"
	ports := newLabPorts(t)
	for _, role := range []string{"node", "gateway"} {
		t.Run(role, func(t *testing.T) {
			// Long enough for a loaded machine's start; a certificate's
			// times are whole seconds.
			now := time.Now().UTC().Truncate(time.Second)
			endsAt := now.Add(12 * time.Second)
			cert, key := ca.issue(t, role, now.Add(-time.Hour), endsAt, nil)
			httpPort := ports.free(host)
			args := memberArgs(role, ports.free(host), []string{"--cluster-cert", cert, "--cluster-key", key, "--cluster-ca", ca.file()})
			if role == "gateway" {
				// A node that never answers: not waited for past the
				// node timeout, so the gateway becomes ready alone.
				args = append(args, "--peers", fmt.Sprintf("%s:%d", host, ports.free(host)))
			}
			args = append([]string{"--bind", host, "--port", strconv.Itoa(httpPort), "--legacy-port", "-1", "--events-port", "-1",
				"--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0", "--hw-scan-period", "0", "--log-format", "json"}, args...)
			runUntilReady(t, bin, args)
			url := fmt.Sprintf("http://%s:%d/readyz", host, httpPort)
			var status int
			var lab string
			deadline := endsAt.Add(30 * time.Second)
			for time.Now().Before(deadline) {
				asked := time.Now()
				if status, lab = readyzLab(t, url); status == 503 {
					break
				}
				if status != 200 && asked.Before(endsAt) {
					t.Fatalf("/readyz %d (lab: %q) before the certificate ended; want 200", status, lab)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if status != 503 {
				t.Fatalf("/readyz %d (lab: %q) 30 s after the certificate ended at %v; want 503", status, lab, endsAt)
			}
			if at := time.Now(); at.Before(endsAt) {
				t.Errorf("/readyz failed at %v, before the certificate ended at %v", at, endsAt)
			}
			for _, want := range []string{cert, "expired", endsAt.Format(tlsDate)} {
				if !strings.Contains(lab, want) {
					t.Errorf("/readyz's lab check %q does not say %q", lab, want)
				}
			}
		})
	}
}

// readyzLab is /readyz's status and its lab check's detail.
func readyzLab(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var doc struct {
		Checks []struct {
			Name   string `json:"name"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	for _, c := range doc.Checks {
		if c.Name == "lab" {
			return resp.StatusCode, c.Detail
		}
	}
	t.Fatalf("GET %s: no lab check", url)
	return 0, ""
}
