package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Config configures a node or a gateway.
type Config struct {
	// NodeID names this process in the lab (a node's inventory carries it).
	NodeID string
	// Bind and Port are where the remote listens (Bind: loopback unless the
	// lab spans hosts). Port 0 takes a fresh port at every start, which is
	// what lets a restarted process back in (package doc, Rejoin); a node
	// with static membership needs a fixed one, the gateway lists it.
	Bind string
	Port int
	// Advertise, when set, is the host:port peers dial for this process's
	// cluster link instead of Bind:Port: a NAT, a port forward or a proxy
	// in between (the lab's delay test puts toxiproxy there). What listens
	// there must forward to Bind:Port, so Port must be fixed.
	Advertise string
	// Membership is MembershipStatic (default), MembershipAutomanaged or
	// MembershipEtcd.
	Membership string
	// EtcdEndpoints are the etcd servers of MembershipEtcd (host:port or
	// http://host:port).
	EtcdEndpoints []string
	// Peers are, with static membership, the nodes' cluster addresses
	// (gateway only); with automanaged membership, every member's health
	// endpoint, host:health-port (every process, the same list).
	Peers []string
	// HealthPort is where the automanaged health endpoint listens, on Bind.
	HealthPort int
	// HealthGuard, when set, wraps the health endpoint: the service's
	// browser guard, so that a web page cannot read the member list
	// through a rebinding host name (PROTOCOL.md 3.4). The hosts of Peers
	// must pass it: the members poll each other by those names.
	HealthGuard func(http.Handler) http.Handler
	// CertFile, KeyFile and CAFile turn on mutual TLS: this process shows
	// its certificate and accepts only peers whose certificate CAFile signed.
	// They are read once, at start (LoadMutualTLS).
	CertFile, KeyFile, CAFile string
	// TLS, when set, is mutual TLS already loaded from those files
	// (hapticd loads them with its other flags, before anything starts):
	// the files are not read again.
	TLS *MutualTLS
	// HTTPURL is where clients reach this node directly (node only).
	HTTPURL string
	// LeaseMs is how long a forwarded command holds on the node (default
	// 100): a lost gateway or link ramps the force to zero after it.
	LeaseMs int
	// PushHz is how often a node pushes its devices' states (default 500).
	PushHz int
	// NodeTimeout drops a node the gateway has not heard from (default 1 s).
	NodeTimeout time.Duration
	// Build names this process's build (BuildOf; main passes it down). A
	// lab's members join only members of the same build: a node refuses a
	// gateway's Subscribe that states another (or none: an older build),
	// a gateway a node's Inventory (package doc, Builds).
	Build string
	Log   zerolog.Logger
}

// DefaultBind is the cluster link's address when none is given: loopback,
// a lab on one host.
const DefaultBind = "127.0.0.1"

func (c *Config) defaults() {
	if c.Membership == "" {
		c.Membership = MembershipStatic
	}
	if c.Bind == "" {
		c.Bind = DefaultBind
	}
	if c.LeaseMs == 0 {
		c.LeaseMs = 100
	}
	if c.PushHz == 0 {
		c.PushHz = 500
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = time.Second
	}
}

// Membership modes: the static list of node addresses with a remote Watch
// on each, or protoactor's cluster with automanaged membership (every
// member's health endpoint polled, by healthPoller: protoactor's automanaged
// protocol with a grace for a stalled member) or its etcd provider (members
// register in etcd under a lease and watch each other there).
const (
	MembershipStatic      = "static"
	MembershipAutomanaged = "automanaged"
	MembershipEtcd        = "etcd"
)

// Names of the one actor per process that remote messages reach.
const (
	nodeActorName    = "hapticd-node"
	gatewayActorName = "hapticd-gateway"
)

// How often a gateway subscribes to each node, and how long a node keeps
// pushing to a gateway it no longer hears from.
const (
	SubscribeEvery = 250 * time.Millisecond
	GatewayTimeout = 3 * time.Second
)

// link is a process's end of the lab: its own actor system with
// protoactor's remote and, with automanaged membership, its cluster. The
// service's actors stay in their own system: nothing of theirs is reachable
// from the network.
type link struct {
	sys *actor.ActorSystem
	rem *remote.Remote
	// cl and prov are set with a cluster membership (automanaged or
	// etcd), health with automanaged only.
	cl     *cluster.Cluster
	prov   cluster.ClusterProvider
	health net.Listener
	// stopWatch ends the watch of the TLS certificate's end (nil
	// without TLS).
	stopWatch func()
	// mtls is the link's TLS (nil: plain), for certEnded.
	mtls *MutualTLS
}

// certEnded says, once the link's certificate (or its CA) has ended, why
// the member is not ready: the files are read at start only, and from that
// date peers refuse every new connection of this member; a link already
// up goes on until it breaks (a peer's restart, a stall, a cut), and then
// the peer is lost until this member restarts with a renewed certificate.
// Go checks a certificate at the handshake only, so without this the
// member, and a gateway's list, looked healthy up to that break.
func (lk *link) certEnded(now time.Time) (detail string, ended bool) {
	if lk == nil || lk.mtls == nil || now.Before(lk.mtls.NotAfter) {
		return "", false
	}
	what, date := lk.mtls.ending()
	return fmt.Sprintf("%s expired on %s: peers refuse this member's new connections; renew it and restart this member", what, date), true
}

// startLink starts the remote on c.Bind:c.Port and, with automanaged
// membership, joins the cluster as a member with the given kinds (none for
// a gateway). start runs on the new system before the remote listens, so
// the process's named actor exists before any peer can message it.
func startLink(c *Config, kinds []*cluster.Kind, start func(*actor.ActorSystem) error) (*link, error) {
	addr := net.JoinHostPort(c.Bind, strconv.Itoa(c.Port))
	if c.Port < 0 {
		return nil, fmt.Errorf("cluster: --cluster-port %d: want 0 (a fresh port each start) or a port", c.Port)
	}
	if c.Advertise != "" {
		if err := checkAdvertise(c.Advertise, c.Port); err != nil {
			return nil, err
		}
	}
	// remote.Start panics when it cannot listen: find out first.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen %s: %w", addr, err)
	}
	_ = l.Close()
	protoLog := c.Log.With().Str("component", "protoactor").Logger()
	// protoactor's gRPC handlers panic on what a peer sends (a type this
	// build does not know, an index past a batch's tables, its
	// unimplemented RPCs), and gRPC does not recover a handler's panic:
	// one bad message would take the process and its arms down.
	serverOpts := []grpc.ServerOption{
		grpc.ChainStreamInterceptor(recoverStream(protoLog)),
		grpc.ChainUnaryInterceptor(recoverUnary(protoLog)),
	}
	var opts []remote.ConfigOption
	mtls := c.TLS
	if mtls == nil && (c.CertFile != "" || c.KeyFile != "" || c.CAFile != "") {
		if mtls, err = LoadMutualTLS(c.CertFile, c.KeyFile, c.CAFile, time.Now()); err != nil {
			return nil, err
		}
	}
	if mtls != nil {
		mtls.warnEnding(c.Log, time.Now())
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(mtls.server)))
		opts = append(opts, remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(mtls.client)), closeFailedHandshakes))
	} else {
		opts = append(opts, remote.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()), closeFailedHandshakes))
	}
	// WithServerOptions replaces, never adds: all of them in one call.
	opts = append(opts, remote.WithServerOptions(serverOpts...))
	slogger := slog.New(zerolog.NewSlogHandler(protoLog.Level(max(zerolog.WarnLevel, protoLog.GetLevel()))))
	lk := &link{sys: actor.NewActorSystemWithConfig(actor.Configure(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slogger }),
	))}
	if err := start(lk.sys); err != nil {
		lk.sys.Shutdown()
		return nil, err
	}
	if c.Advertise != "" {
		opts = append(opts, remote.WithAdvertisedHost(c.Advertise))
	}
	rcfg := remote.Configure(c.Bind, c.Port, opts...)
	switch c.Membership {
	case MembershipAutomanaged:
		err = lk.joinCluster(c, rcfg, kinds)
	case MembershipEtcd:
		err = lk.joinEtcd(c, rcfg, kinds)
	default:
		lk.rem = remote.NewRemote(lk.sys, rcfg)
		err = recovered("start remote", lk.rem.Start)
	}
	if err != nil {
		lk.stop()
		return nil, err
	}
	c.Log.Info().Str("listener", "cluster").Str("addr", lk.sys.Address()).Str("bind", addr).Bool("tls", mtls != nil).
		Str("membership", c.Membership).Msg("listening")
	if mtls != nil {
		lk.mtls = mtls
		lk.stopWatch = mtls.watchEnding(c.Log, RenewWithin)
	}
	return lk, nil
}

// clusterName is the automanaged cluster's name: a health endpoint that
// answers with another name is not a member.
const clusterName = "hapticd-lab"

// joinCluster starts the remote as a member of protoactor's cluster with
// automanaged membership (healthPoller, which answers as protoactor's
// automanaged provider does). Its echo server's listener is bound to
// c.Bind, which keeps the health endpoint on the cluster's interface (echo
// serves a preset Listener instead of binding).
func (lk *link) joinCluster(c *Config, rcfg *remote.Config, kinds []*cluster.Kind) error {
	haddr := net.JoinHostPort(c.Bind, strconv.Itoa(c.HealthPort))
	if c.HealthPort <= 0 {
		return fmt.Errorf("cluster: --cluster-health-port %d: a fixed port is needed, peers list it", c.HealthPort)
	}
	hl, err := net.Listen("tcp", haddr)
	if err != nil {
		return fmt.Errorf("cluster: listen %s (health): %w", haddr, err)
	}
	lk.health = hl
	e := echo.New()
	e.HideBanner, e.HidePort, e.Listener = true, true, hl
	// echo's server has no timeouts: a client that never finishes its
	// request would hold a descriptor and a goroutine for good. The
	// bounds of the service's own listeners (transport.Server.listen).
	e.Server.ReadHeaderTimeout = 5 * time.Second
	e.Server.ReadTimeout = 30 * time.Second
	e.Server.WriteTimeout = 30 * time.Second
	e.Server.IdleTimeout = 2 * time.Minute
	// 64 KiB as on the service's listeners: net/http reads 4 KiB past it.
	e.Server.MaxHeaderBytes = 64<<10 - 4<<10
	e.Logger.SetOutput(io.Discard)
	e.StdLogger = log.New(io.Discard, "", 0)
	if c.HealthGuard != nil {
		e.Use(echo.WrapMiddleware(c.HealthGuard))
	}
	// Every member polls every host, itself included: the list is the same
	// on every process of a lab, with or without the process's own entry.
	hosts := []string{haddr}
	for _, p := range c.Peers {
		if p != haddr {
			hosts = append(hosts, p)
		}
	}
	prov := newHealthPoller(e, HealthRefresh, hosts...)
	lk.prov = prov
	lk.cl = cluster.New(lk.sys, cluster.Configure(clusterName, prov, disthash.New(), rcfg,
		cluster.WithKinds(kinds...), cluster.WithRequestTimeout(configTimeout)))
	cl, sys := lk.cl, lk.sys
	e.GET("/_health", func(ctx echo.Context) error {
		// The port the remote took (a fresh one per start with port 0):
		// the endpoint answers only once the remote listens.
		host, port, err := sys.GetHostPort()
		if err != nil || port <= 0 {
			return ctx.NoContent(http.StatusServiceUnavailable)
		}
		return ctx.JSON(http.StatusOK, automanaged.NewNode(clusterName, sys.ID, host, port, c.HealthPort, cl.GetClusterKinds()))
	})
	if err := recovered("join the cluster", lk.cl.StartMember); err != nil {
		return err
	}
	lk.rem = lk.cl.Remote
	return nil
}

// recoverStream ends a cluster stream whose handler panicked with an
// error, instead of the process: the peer's connection is dropped, as
// protoactor drops it on a message it cannot decode without panicking.
func recoverStream(log zerolog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer recoverPeer(log, info.FullMethod, &err)
		return handler(srv, ss)
	}
}

// recoverUnary is recoverStream for the link's one-shot RPCs.
func recoverUnary(log zerolog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer recoverPeer(log, info.FullMethod, &err)
		return handler(ctx, req)
	}
}

// closeFailedHandshakes closes the connection of a cluster stream that
// fails before the peer's first answer. protoactor's endpoint writer dials
// a new grpc.ClientConn for each of its attempts to reach a peer (five, 2 s
// apart) and closes only the last: every earlier one, its handshake failed,
// stayed open, redialling the dead address with gRPC's backoff for the
// rest of the process's life. A lab member restarted takes a fresh cluster
// port, so each restart of a node (or a gateway) left four such
// connections and a dozen goroutines on every peer, for good.
var closeFailedHandshakes = grpc.WithChainStreamInterceptor(
	func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			_ = cc.Close()
			return nil, err
		}
		return &handshakeStream{ClientStream: s, cc: cc}, nil
	})

// handshakeStream closes its connection when the stream fails before its
// first message from the peer, or when that message is not the answer to
// protoactor's connect request (the endpoint writer then gives the
// attempt up without closing it).
type handshakeStream struct {
	grpc.ClientStream
	cc       *grpc.ClientConn
	answered atomic.Bool
}

func (s *handshakeStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && !s.answered.Load() {
		_ = s.cc.Close()
	}
	return err
}

func (s *handshakeStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if s.answered.Load() {
		return err
	}
	if rm, ok := m.(*remote.RemoteMessage); err != nil || !ok || rm.GetConnectResponse() == nil {
		_ = s.cc.Close()
		return err
	}
	s.answered.Store(true)
	return nil
}

// recoverPeer turns a handler's panic into the error *err its peer gets.
func recoverPeer(log zerolog.Logger, method string, err *error) {
	if p := recover(); p != nil {
		log.Warn().Str("method", method).Str("panic", fmt.Sprint(p)).Msg("cluster: a peer's message made protoactor panic; its stream is closed")
		*err = status.Errorf(codes.InvalidArgument, "cluster: %s: the message could not be handled", method)
	}
}

// HealthRefresh is how often an automanaged member polls every host's
// health endpoint (each poll waits up to 2 s; healthPoller).
const HealthRefresh = 250 * time.Millisecond

// recovered runs f, turning protoactor's panics (it panics where it cannot
// listen or a provider fails) into an error.
func recovered(what string, f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: %s: %v", what, p)
		}
	}()
	f()
	return nil
}

// stop shuts the link down within stopRemoteWithin. It is not graceful:
// the link is at-most-once anyway, and protoactor's graceful stop waits up
// to 10 s on a peer that is gone (2 s more in a cluster), which would eat
// the service's own shutdown budget. protoactor panics on some shutdown
// paths; a panic there must not keep the service from stopping.
func (lk *link) stop() {
	if lk.stopWatch != nil {
		lk.stopWatch()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		if lk.prov != nil {
			// A non-graceful cluster shutdown leaves the provider polling
			// and serving health; peers should see this member go at once.
			_ = recovered("stop the provider", func() { _ = lk.prov.Shutdown(false) })
		}
		if lk.health != nil {
			_ = lk.health.Close() // the provider's Close only reaches it once serving
		}
		switch {
		case lk.cl != nil && lk.rem != nil:
			lk.cl.Shutdown(false)
		case lk.rem != nil:
			lk.rem.Shutdown(false)
			lk.sys.Shutdown()
		default:
			lk.sys.Shutdown()
		}
	}()
	select {
	case <-done:
	case <-time.After(stopRemoteWithin):
	}
}

const stopRemoteWithin = time.Second

// MutualTLS is the cluster link's mutual TLS, loaded from the lab's PEM
// files and checked by LoadMutualTLS.
type MutualTLS struct {
	server, client *tls.Config
	// CertFile is --cluster-cert; NotAfter is when its certificate, or a
	// CA certificate its chain ends in if that ends first, stops being
	// valid, and Ending names which (CertFile, or the CA's file). Peers
	// refuse this member from then on.
	CertFile, Ending string
	NotAfter         time.Time
	leaf             *x509.Certificate
}

// CheckNames refuses a certificate that does not name host, the address
// peers dial for this member (--cluster-advertise's host, else
// --cluster-bind): every peer checks the name when it dials, so a
// certificate copied from another host would fail every handshake while
// this member said it was ready. An unspecified address (0.0.0.0, ::)
// names no dialled host and is not checked.
func (m *MutualTLS) CheckNames(host string) error {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil
	}
	if err := m.leaf.VerifyHostname(host); err != nil {
		return fmt.Errorf("cluster: --cluster-cert %s does not name %s, the address peers dial for this member: they refuse it at every handshake; sign one for %s (docs/lab.md) or check --cluster-bind/--cluster-advertise (%w)",
			m.CertFile, host, host, err)
	}
	return nil
}

// RenewWithin is how close to its end a certificate is warned of, at
// start and while the member runs.
const RenewWithin = 30 * 24 * time.Hour

// TLSDate is how a certificate's NotBefore and NotAfter are written.
const TLSDate = "2006-01-02 15:04:05 UTC"

// LoadMutualTLS reads --cluster-cert, --cluster-key and --cluster-ca and
// refuses what the peers would refuse at every handshake: a certificate
// that is not valid at now (expired, or not yet valid), or that the CA
// does not sign for both server and client authentication (each member
// is both). The files are read here only, once, at start: a renewed
// certificate takes a restart.
func LoadMutualTLS(certFile, keyFile, caFile string, now time.Time) (*MutualTLS, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("cluster: mutual TLS needs --cluster-cert, --cluster-key and --cluster-ca together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: load --cluster-cert/--cluster-key: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: read --cluster-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: --cluster-ca %s holds no PEM certificate", caFile)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cluster: --cluster-cert %s: %w", certFile, err)
		}
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("cluster: --cluster-cert %s expired on %s (its NotAfter): peers refuse it; renew it (docs/lab.md) and start again",
			certFile, leaf.NotAfter.UTC().Format(TLSDate))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("cluster: --cluster-cert %s is not valid before %s (its NotBefore): peers refuse it until then; check this host's clock",
			certFile, leaf.NotBefore.UTC().Format(TLSDate))
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	// KeyUsages accepts a chain that allows any one of them: a peer's
	// server checks client authentication, its client server
	// authentication, so both are checked apart.
	var chain []*x509.Certificate
	for _, use := range []struct {
		eku  x509.ExtKeyUsage
		name string
	}{{x509.ExtKeyUsageServerAuth, "server"}, {x509.ExtKeyUsageClientAuth, "client"}} {
		chains, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{use.eku}})
		var unknown x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		switch {
		case err == nil:
			chain = chains[0]
			continue
		case errors.As(err, &unknown):
			return nil, fmt.Errorf("cluster: --cluster-cert %s is not signed by --cluster-ca %s: peers refuse it (%w)", certFile, caFile, err)
		case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
			// The member's own certificate is valid (above): a CA's is not.
			return nil, fmt.Errorf("cluster: --cluster-ca %s: the CA that signs --cluster-cert %s has expired or is not yet valid: peers refuse every member it signed (%w)", caFile, certFile, err)
		case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
			return nil, fmt.Errorf("cluster: --cluster-cert %s is not for %s authentication (its extended key usage): every member is both client and server, docs/lab.md's recipe sets extendedKeyUsage=serverAuth,clientAuth (%w)", certFile, use.name, err)
		default:
			return nil, fmt.Errorf("cluster: --cluster-cert %s does not verify against --cluster-ca %s: %w", certFile, caFile, err)
		}
	}
	m := &MutualTLS{CertFile: certFile, Ending: certFile, NotAfter: leaf.NotAfter, leaf: leaf}
	for _, c := range chain[1:] {
		if c.NotAfter.Before(m.NotAfter) {
			m.NotAfter, m.Ending = c.NotAfter, caFile
		}
	}
	m.server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	m.client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool}
	return m, nil
}

// EndsWithin says whether the certificate stops being valid within d of
// now.
func (m *MutualTLS) EndsWithin(now time.Time, d time.Duration) bool {
	return m.NotAfter.Sub(now) < d
}

// warnEnding logs, at warning level, a certificate that ends within
// RenewWithin: the member starts, and its peers refuse it from that date.
func (m *MutualTLS) warnEnding(log zerolog.Logger, now time.Time) {
	if !m.EndsWithin(now, RenewWithin) {
		return
	}
	m.logEnding(log, now)
}

// watchEnding tells a running member's log, as LoadMutualTLS's checks
// did at start, when its certificate enters its last within (a warning)
// and when it ends (an error): the files are read at start only, so from
// then on peers refuse every new connection of this member until it
// restarts with a renewed one (certEnded), and the log said no more than
// protoactor's handshake errors, at the link's next break. A
// start already within it was warned of (warnEnding). stop ends the watch.
func (m *MutualTLS) watchEnding(log zerolog.Logger, within time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		warned := m.EndsWithin(time.Now(), within)
		for {
			next := m.NotAfter
			if !warned {
				next = m.NotAfter.Add(-within)
			}
			// A day at most: the wall clock, which the dates are in, may
			// jump (a host's suspend, a clock set) where a timer does not.
			t := time.NewTimer(min(time.Until(next), 24*time.Hour))
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case <-done: // stopped as the timer fired
				return
			default:
			}
			now := time.Now()
			if !now.Before(m.NotAfter) {
				what, date := m.ending()
				log.Error().Str("cert", m.Ending).Str("not_after", date).
					Msgf("%s expired on %s: peers refuse this member's new connections from now on (a link already up goes on until it breaks: a peer's restart, a stall, a cut) and /readyz fails; renew it and restart this member (certificates are read at start only; docs/lab.md)", what, date)
				return
			}
			if !warned && m.EndsWithin(now, within) {
				m.logEnding(log, now)
				warned = true
			}
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}

// ending names the certificate that ends first and its date, for the log.
func (m *MutualTLS) ending() (what, date string) {
	what = "--cluster-cert " + m.CertFile
	if m.Ending != m.CertFile {
		what = "the CA of --cluster-cert " + m.CertFile + " (--cluster-ca " + m.Ending + ")"
	}
	return what, m.NotAfter.UTC().Format(TLSDate)
}

// logEnding is warnEnding's line.
func (m *MutualTLS) logEnding(log zerolog.Logger, now time.Time) {
	what, date := m.ending()
	log.Warn().Str("cert", m.Ending).Str("not_after", date).Int("days_left", int(m.NotAfter.Sub(now)/(24*time.Hour))).
		Msgf("%s expires on %s: from then on peers refuse this member's new connections and /readyz fails; renew it and restart this member (certificates are read at start only; docs/lab.md)", what, date)
}

// checkAdvertise refuses an advertised address peers could not dial, or
// one that nothing can forward to (a fresh port per start).
func checkAdvertise(adv string, port int) error {
	if err := checkHostPort(adv); err != nil {
		return fmt.Errorf("cluster: --cluster-advertise %q: %w", adv, err)
	}
	if port == 0 {
		return fmt.Errorf("cluster: --cluster-advertise %s needs a fixed --cluster-port: what listens at the advertised address forwards to it", adv)
	}
	return nil
}

// checkHostPort refuses what is not host:port with a port from 1 to 65535.
func checkHostPort(hp string) error {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 || host == "" {
		return fmt.Errorf("want host:port with a port from 1 to 65535, not %q", hp)
	}
	return nil
}
