package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Config configures a node or a gateway.
type Config struct {
	// NodeID names this process in the lab (a node's inventory carries it).
	NodeID string
	// Bind and Port are where the remote listens (Bind: loopback unless the
	// lab spans hosts). Port must be fixed: peers are listed by address.
	Bind string
	Port int
	// Peers are the nodes' remote addresses, host:port (gateway only).
	Peers []string
	// CertFile, KeyFile and CAFile turn on mutual TLS: this process shows
	// its certificate and accepts only peers whose certificate CAFile signed.
	CertFile, KeyFile, CAFile string
	// HTTPURL is where clients reach this node directly (node only).
	HTTPURL string
	// LeaseMs is how long a forwarded command holds on the node (default
	// 100): a lost gateway or link ramps the force to zero after it.
	LeaseMs int
	// PushHz is how often a node pushes its devices' states (default 500).
	PushHz int
	// NodeTimeout drops a node the gateway has not heard from (default 1 s).
	NodeTimeout time.Duration
	Log         zerolog.Logger
}

func (c *Config) defaults() {
	if c.Bind == "" {
		c.Bind = "127.0.0.1"
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

// startRemote starts an actor system of its own with protoactor's remote on
// c.Bind:c.Port. The service's actors stay in their own system: nothing of
// theirs is reachable from the network.
func startRemote(c *Config) (*actor.ActorSystem, *remote.Remote, error) {
	addr := net.JoinHostPort(c.Bind, strconv.Itoa(c.Port))
	if c.Port <= 0 {
		return nil, nil, fmt.Errorf("cluster: --cluster-port %d: a fixed port is needed, peers list it", c.Port)
	}
	// remote.Start panics when it cannot listen: find out first.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: listen %s: %w", addr, err)
	}
	_ = l.Close()
	var opts []remote.ConfigOption
	if c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" {
		server, client, err := mutualTLS(c.CertFile, c.KeyFile, c.CAFile)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts,
			remote.WithServerOptions(grpc.Creds(credentials.NewTLS(server))),
			remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(client))))
	} else {
		opts = append(opts, remote.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	protoLog := c.Log.With().Str("component", "protoactor-remote").Logger()
	slogger := slog.New(zerolog.NewSlogHandler(protoLog.Level(max(zerolog.WarnLevel, protoLog.GetLevel()))))
	sys := actor.NewActorSystemWithConfig(actor.Configure(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slogger }),
	))
	r := remote.NewRemote(sys, remote.Configure(c.Bind, c.Port, opts...))
	if err := startRecovered(r); err != nil {
		sys.Shutdown()
		return nil, nil, err
	}
	c.Log.Info().Str("listener", "cluster").Str("addr", addr).Bool("tls", c.CAFile != "").Msg("listening")
	return sys, r, nil
}

func startRecovered(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: start remote: %v", p)
		}
	}()
	r.Start()
	return nil
}

// stopRemote shuts the remote down within stopRemoteWithin. It is not
// graceful: the link is at-most-once anyway, and protoactor's graceful stop
// waits up to 10 s on a peer that is gone, which would eat the service's
// own shutdown budget. protoactor panics on some shutdown paths; a panic
// there must not keep the service from stopping.
func stopRemote(sys *actor.ActorSystem, r *remote.Remote) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		r.Shutdown(false)
		sys.Shutdown()
	}()
	select {
	case <-done:
	case <-time.After(stopRemoteWithin):
	}
}

const stopRemoteWithin = time.Second

// mutualTLS builds the server and client sides of mutual TLS from PEM files.
func mutualTLS(certFile, keyFile, caFile string) (server, client *tls.Config, err error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, nil, errors.New("cluster: mutual TLS needs --cluster-cert, --cluster-key and --cluster-ca together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: load --cluster-cert/--cluster-key: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: read --cluster-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("cluster: --cluster-ca %s holds no PEM certificate", caFile)
	}
	server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool}
	return server, client, nil
}
