package cluster

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// tlsTestCA signs test certificates; its own is in file.
type tlsTestCA struct {
	dir, file string
	cert      *x509.Certificate
	key       *ecdsa.PrivateKey
	serial    int64
}

func newTLSTestCA(t *testing.T, dir, name string, notBefore, notAfter time.Time) *tlsTestCA {
	t.Helper()
	ca := &tlsTestCA{dir: dir, file: filepath.Join(dir, name+".pem"), serial: 1}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	ca.key, ca.cert = tlsTestSign(t, tmpl, nil, nil, ca.file, "")
	return ca
}

// issue writes NAME.pem and NAME.key, a member certificate; eku nil is
// server and client authentication.
func (ca *tlsTestCA) issue(t *testing.T, name string, notBefore, notAfter time.Time, eku []x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	if eku == nil {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: eku}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+".key")
	tlsTestSign(t, tmpl, ca.cert, ca.key, certFile, keyFile)
	return certFile, keyFile
}

// tlsTestSign makes a key, signs tmpl (self-signed when parent is nil) and
// writes the certificate, and the key if keyFile is given.
func tlsTestSign(t *testing.T, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, certFile, keyFile string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, typ string, b []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", der)
	if keyFile != "" {
		b, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		write(keyFile, "EC PRIVATE KEY", b)
	}
	return key, cert
}

// LoadMutualTLS refuses, naming the file and the date, what every peer
// would refuse at its handshakes, and says when a set it accepts ends:
// the member's certificate, or its CA's if that ends first.
func TestLoadMutualTLS(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	ca := newTLSTestCA(t, dir, "ca", now.Add(-day), now.Add(3650*day))
	other := newTLSTestCA(t, dir, "other", now.Add(-day), now.Add(3650*day))
	shortCA := newTLSTestCA(t, dir, "short-ca", now.Add(-day), now.Add(20*day))
	valid, validKey := ca.issue(t, "valid", now.Add(-day), now.Add(365*day), nil)
	soon, soonKey := ca.issue(t, "soon", now.Add(-day), now.Add(10*day), nil)
	expired, expiredKey := ca.issue(t, "expired", now.Add(-365*day), now.Add(-time.Hour), nil)
	later, laterKey := ca.issue(t, "later", now.Add(2*day), now.Add(365*day), nil)
	foreign, foreignKey := other.issue(t, "foreign", now.Add(-day), now.Add(365*day), nil)
	server, serverKey := ca.issue(t, "server", now.Add(-day), now.Add(365*day), []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	anyUse, anyUseKey := ca.issue(t, "any", now.Add(-day), now.Add(365*day), []x509.ExtKeyUsage{x509.ExtKeyUsageAny})
	byShort, byShortKey := shortCA.issue(t, "by-short", now.Add(-day), now.Add(365*day), nil)
	tests := []struct {
		name            string
		cert, key, ca   string
		wantErr         []string
		notAfter        time.Time
		ending          string
		endsWithinMonth bool
	}{
		{"valid", valid, validKey, ca.file, nil, now.Add(365 * day), valid, false},
		{"expiring in 10 days", soon, soonKey, ca.file, nil, now.Add(10 * day), soon, true},
		{"any usage", anyUse, anyUseKey, ca.file, nil, now.Add(365 * day), anyUse, false},
		{"CA ends first", byShort, byShortKey, shortCA.file, nil, now.Add(20 * day), shortCA.file, true},
		{"expired", expired, expiredKey, ca.file, []string{"--cluster-cert " + expired, "expired on 2026-11-29 08:00:00 UTC"}, time.Time{}, "", false},
		{"not yet valid", later, laterKey, ca.file, []string{"--cluster-cert " + later, "not valid before 2026-12-01 09:00:00 UTC"}, time.Time{}, "", false},
		{"another CA", foreign, foreignKey, ca.file, []string{"--cluster-cert " + foreign, "not signed by --cluster-ca " + ca.file}, time.Time{}, "", false},
		{"server only", server, serverKey, ca.file, []string{"--cluster-cert " + server, "not for client authentication"}, time.Time{}, "", false},
		{"mismatched key", valid, soonKey, ca.file, []string{"--cluster-key", "private key does not match"}, time.Time{}, "", false},
		{"CA holds no certificate", valid, validKey, validKey, []string{"--cluster-ca " + validKey, "holds no PEM certificate"}, time.Time{}, "", false},
		{"incomplete", valid, validKey, "", []string{"--cluster-cert, --cluster-key and --cluster-ca together"}, time.Time{}, "", false},
	}
	for _, tt := range tests {
		m, err := LoadMutualTLS(tt.cert, tt.key, tt.ca, now)
		if tt.wantErr != nil {
			if err == nil {
				t.Errorf("%s: loaded; want refused", tt.name)
				continue
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %q does not say %q", tt.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !m.NotAfter.Equal(tt.notAfter) || m.Ending != tt.ending || m.CertFile != tt.cert {
			t.Errorf("%s: ends %v (%s, cert %s); want %v (%s)", tt.name, m.NotAfter, m.Ending, m.CertFile, tt.notAfter, tt.ending)
		}
		if got := m.EndsWithin(now, RenewWithin); got != tt.endsWithinMonth {
			t.Errorf("%s: ends within 30 days %v, want %v", tt.name, got, tt.endsWithinMonth)
		}
		var buf bytes.Buffer
		m.warnEnding(zerolog.New(&buf), now)
		switch {
		case !tt.endsWithinMonth && buf.Len() > 0:
			t.Errorf("%s: warned %s", tt.name, buf.String())
		case tt.endsWithinMonth && (!strings.Contains(buf.String(), `"level":"warn"`) ||
			!strings.Contains(buf.String(), tt.notAfter.Format(TLSDate)) || !strings.Contains(buf.String(), tt.ending)):
			t.Errorf("%s: warning %q; want one at warn level naming %s and %s", tt.name, buf.String(), tt.ending, tt.notAfter.Format(TLSDate))
		}
	}
}

// A member given the files (Config's CertFile, KeyFile and CAFile, no
// loaded TLS) loads and checks them at its link's start: an expired
// certificate is refused there too, before the link listens.
func TestTLSStartRefusesExpired(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca := newTLSTestCA(t, dir, "ca", now.Add(-48*time.Hour), now.Add(48*time.Hour))
	cert, key := ca.issue(t, "expired", now.Add(-24*time.Hour), now.Add(-time.Hour), nil)
	cfg := &Config{Bind: "127.0.0.1", CertFile: cert, KeyFile: key, CAFile: ca.file, Log: zerolog.Nop()}
	cfg.defaults()
	if _, err := startLink(cfg, nil, func(*actor.ActorSystem) error { return nil }); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("start with an expired certificate: %v; want refused", err)
	}
}

// lineWriter hands each log line to a channel (the watch logs from its
// own goroutine).
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// A running member's log says when its certificate enters its last
// stretch (a warning) and when it ends (an error), which the start could
// not: the files are read once. Stopped, the watch says nothing more.
func TestTLSWatchEnding(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	ca := newTLSTestCA(t, dir, "ca", now.Add(-time.Hour), now.Add(time.Hour))
	cert, key := ca.issue(t, "short", now.Add(-time.Hour), now.Add(3*time.Second), nil)
	m, err := LoadMutualTLS(cert, key, ca.file, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	date := m.NotAfter.UTC().Format(TLSDate)
	lines := make(lineWriter, 8)
	stop := m.watchEnding(zerolog.New(lines), 2*time.Second)
	defer stop()
	for _, want := range []string{`"level":"warn"`, `"level":"error"`} {
		select {
		case l := <-lines:
			if !strings.Contains(l, want) || !strings.Contains(l, date) || !strings.Contains(l, cert) {
				t.Errorf("line %s; want one at %s naming %s and %s", l, want, cert, date)
			}
			if at := time.Now(); want == `"level":"error"` && at.Before(m.NotAfter) {
				t.Errorf("said expired at %v, before %v", at, m.NotAfter)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s line within 5 s", want)
		}
	}

	quiet := make(lineWriter, 8)
	m2, err := LoadMutualTLS(cert, key, ca.file, now)
	if err != nil {
		t.Fatal(err)
	}
	m2.NotAfter = time.Now().Add(500 * time.Millisecond)
	m2.watchEnding(zerolog.New(quiet), time.Second)() // stopped at once
	select {
	case l := <-quiet:
		t.Errorf("a stopped watch logged %s", l)
	case <-time.After(time.Second):
	}
}
