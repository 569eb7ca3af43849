package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/transport"
)

// labOptions are the flags of a lab (several hosts): the process's role,
// where its cluster link listens, and its peers.
type labOptions struct {
	role          string
	membership    string
	healthPort    int
	nodeID        string
	peers         listFlag
	bind          string
	port          int
	advertise     string
	discovery     string
	etcd          []string // from --discovery etcd=...
	cert, key, ca string
	tls           *cluster.MutualTLS // loaded from cert, key and ca by check
	nodeTimeout   time.Duration
	leaseMs       int
	pushHz        int
	simIndexBase  int
}

func (l *labOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&l.role, "role", "standalone", "standalone (one host, no cluster code), node (serves its devices to a gateway) or gateway (serves every node's devices)")
	fs.StringVar(&l.nodeID, "node-id", "", "this process's name in the lab (default: its cluster address)")
	fs.StringVar(&l.membership, "membership", cluster.MembershipAutomanaged, "automanaged (protoactor's cluster; every process's --peers are every member's health endpoint) or static (only the gateway has --peers: the nodes' cluster addresses); --discovery etcd=... makes it etcd")
	fs.Var(&l.peers, "peers", "static: on the gateway, the nodes' cluster addresses host:cluster-port; automanaged: on every process, every member's host:health-port (repeatable, comma-separated)")
	fs.IntVar(&l.healthPort, "cluster-health-port", 7071, "automanaged: port of the membership health endpoint (plain HTTP, bound to --cluster-bind only; peers list it)")
	fs.StringVar(&l.bind, "cluster-bind", cluster.DefaultBind, "address the cluster link binds; loopback unless the lab spans hosts")
	fs.IntVar(&l.port, "cluster-port", 0, "cluster link port; 0 takes a fresh port at every start, which lets a restarted process rejoin (automanaged peers find it through --cluster-health-port); a node with --membership static needs a fixed one, the gateway's --peers list it")
	fs.StringVar(&l.advertise, "cluster-advertise", "", "host:port peers dial for this process's cluster link when it is not --cluster-bind:--cluster-port (a NAT, a port forward, a proxy); needs a fixed --cluster-port, which whatever listens there forwards to")
	fs.StringVar(&l.discovery, "discovery", "", "etcd=http://host:port[,...]: members find each other through etcd (protoactor's etcd provider) instead of --peers; empty: --peers, the default")
	fs.StringVar(&l.cert, "cluster-cert", "", "PEM certificate for mutual TLS on the cluster link")
	fs.StringVar(&l.key, "cluster-key", "", "PEM key of --cluster-cert")
	fs.StringVar(&l.ca, "cluster-ca", "", "PEM CA that signs every lab member's certificate (turns on mutual TLS)")
	fs.DurationVar(&l.nodeTimeout, "cluster-node-timeout", time.Second, "gateway: drop a node silent for this long")
	fs.IntVar(&l.leaseMs, "cluster-lease-ms", 100, "node: how long a gateway's command holds; a lost gateway ramps the force to zero after it (gateway: frames warn state_stale for a device whose state is older)")
	fs.IntVar(&l.pushHz, "cluster-push-hz", 500, "node: how often device states are pushed to the gateway")
	fs.IntVar(&l.simIndexBase, "sim-index-base", 0, "index of the first simulated and of the first emulated device (nodes of one lab on one host need distinct UUIDs)")
}

func (l *labOptions) check() error {
	switch l.role {
	case "standalone", "node", "gateway":
	default:
		return fmt.Errorf("--role %q: want standalone, node or gateway", l.role)
	}
	if l.discovery != "" {
		if err := l.checkDiscovery(); err != nil {
			return err
		}
	}
	if l.advertise != "" {
		if l.role == "standalone" {
			return errors.New("--cluster-advertise is for --role node or gateway; standalone runs no cluster code")
		}
		if l.port == 0 {
			return fmt.Errorf("--cluster-advertise %s needs a fixed --cluster-port: what listens at the advertised address forwards to it", l.advertise)
		}
		if host, p, err := net.SplitHostPort(l.advertise); err != nil || host == "" || !validPort(p) {
			return fmt.Errorf("--cluster-advertise %q: want host:port", l.advertise)
		}
	}
	switch l.membership {
	case cluster.MembershipEtcd:
		// Set by --discovery etcd=..., checked above; named alone, it
		// has no etcd to ask.
		if len(l.etcd) == 0 {
			return errors.New("--membership etcd: give etcd's address with --discovery etcd=http://host:port")
		}
	case cluster.MembershipStatic:
		if l.role == "gateway" && len(l.peers) == 0 {
			return errors.New("--role gateway needs --peers (the nodes' cluster addresses)")
		}
		if l.role != "gateway" && len(l.peers) > 0 {
			return fmt.Errorf("--peers is for --role gateway with --membership static (this is --role %s): nodes learn their gateway when it subscribes", l.role)
		}
		if l.role == "node" && l.port == 0 {
			return errors.New("--role node with --membership static needs a fixed --cluster-port: the gateway's --peers list it")
		}
	case cluster.MembershipAutomanaged:
		if l.role == "standalone" {
			if len(l.peers) > 0 {
				return errors.New("--peers is for --role node or gateway; standalone runs no cluster code")
			}
			break
		}
		if len(l.peers) == 0 {
			return errors.New("--membership automanaged needs --peers (every member's host:health-port, the same list on every process)")
		}
		if l.healthPort == l.port {
			return fmt.Errorf("--cluster-health-port %d is --cluster-port's: they need two ports", l.healthPort)
		}
	default:
		return fmt.Errorf("--membership %q: want static or automanaged (--discovery etcd=... for etcd)", l.membership)
	}
	if l.port < 0 || l.port > 65535 {
		return fmt.Errorf("--cluster-port %d: want 0 (a fresh port each start) or a port", l.port)
	}
	if l.simIndexBase < 0 {
		return errors.New("--sim-index-base must not be negative")
	}
	if err := l.checkTiming(); err != nil {
		return err
	}
	return l.loadTLS()
}

// loadTLS reads and checks the cluster link's certificates now, before any
// device or port: a set the peers would refuse (an expired certificate, one
// the CA did not sign, a key of another) is refused at once rather than
// after the arms connected; so is a certificate that does not name the
// address peers dial for this member. startLab passes what it loaded on.
func (l *labOptions) loadTLS() error {
	if l.cert == "" && l.key == "" && l.ca == "" {
		return nil
	}
	if l.role == "standalone" {
		return errors.New("--cluster-cert, --cluster-key and --cluster-ca are for --role node or gateway; standalone runs no cluster code")
	}
	t, err := cluster.LoadMutualTLS(l.cert, l.key, l.ca, time.Now())
	if err != nil {
		return err
	}
	dialled := cmp.Or(l.bind, cluster.DefaultBind)
	if l.advertise != "" {
		dialled, _, _ = net.SplitHostPort(l.advertise) // checked above
	}
	if err := t.CheckNames(dialled); err != nil {
		return err
	}
	l.tls = t
	return nil
}

// checkTiming refuses a node's lease and push rate that cannot work
// together (a push interval of 0 or less would stop the node once
// started), and a node timeout that would drop every node at once.
func (l *labOptions) checkTiming() error {
	if l.leaseMs < cluster.MinLeaseMs || l.leaseMs > cluster.MaxLeaseMs {
		return fmt.Errorf("--cluster-lease-ms %d: want %d to %d (the gateway renews a steady force every %d ms; a longer lease holds a lost gateway's force longer than any session's)",
			l.leaseMs, cluster.MinLeaseMs, cluster.MaxLeaseMs, cluster.MinLeaseMs/2)
	}
	if l.pushHz < 1 || l.pushHz > cluster.MaxPushHz {
		return fmt.Errorf("--cluster-push-hz %d: want 1 to %d", l.pushHz, cluster.MaxPushHz)
	}
	// A command's lease ends at most the lease after the newest state the
	// gateway had: with fewer than two pushes per lease most commands
	// would arrive already lapsed.
	if l.pushHz*l.leaseMs < 2000 {
		return fmt.Errorf("--cluster-push-hz %d with --cluster-lease-ms %d: a node must push at least twice per lease (%d Hz or more, or a longer lease)",
			l.pushHz, l.leaseMs, (2000+l.leaseMs-1)/l.leaseMs)
	}
	if l.nodeTimeout < cluster.MinNodeTimeout {
		return fmt.Errorf("--cluster-node-timeout %v: want %v or more (the gateway probes its nodes' silence every %v)", l.nodeTimeout, cluster.MinNodeTimeout, cluster.MinNodeTimeout/4)
	}
	return nil
}

// checkDiscovery parses --discovery; etcd discovery replaces --peers and
// the health endpoint with protoactor's etcd provider.
func (l *labOptions) checkDiscovery() error {
	eps, ok := strings.CutPrefix(l.discovery, "etcd=")
	if !ok {
		return fmt.Errorf("--discovery %q: want etcd=http://host:port[,http://host:port...]", l.discovery)
	}
	if l.role == "standalone" {
		return errors.New("--discovery is for --role node or gateway; standalone runs no cluster code")
	}
	if l.membership == cluster.MembershipStatic {
		return errors.New("--discovery etcd needs protoactor's cluster: drop --membership static")
	}
	if len(l.peers) > 0 {
		return errors.New("--peers and --discovery etcd both list the members: give one")
	}
	list, err := cluster.ParseEtcdEndpoints(eps)
	if err != nil {
		return fmt.Errorf("--discovery: %w", err)
	}
	l.etcd, l.membership = list, cluster.MembershipEtcd
	return nil
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n <= 65535
}

// lab is a running node or gateway; nil in standalone.
type lab interface {
	// Ready says whether the lab serves what it has (a gateway: its
	// nodes' devices listed, and no node refused for its build), and if
	// not, what it waits for: /readyz's lab check.
	Ready() (ready bool, detail string)
	// Started says whether the start is over (a gateway: its nodes
	// listed, silent past --cluster-node-timeout, or refused): what the
	// process's start waits for, so that a node of another build keeps
	// the gateway unready (Ready) but not from serving.
	Started() (started bool, detail string)
	Close()
}

// startLab starts the cluster side of a node or gateway; standalone starts
// nothing.
// browser is what the service's browser guard allows besides loopback
// (--allow-origin, --allow-host).
// build names this binary's build (labBuild): the lab's members join
// only members of the same build.
func startLab(l *labOptions, svc *actors.Service, httpURL, build string, browser browserAllowed, log zerolog.Logger) (lab, error) {
	if l.role == "standalone" {
		return nil, nil
	}
	cfg := cluster.Config{
		NodeID: l.nodeID, Bind: l.bind, Port: l.port, Advertise: l.advertise, Peers: l.peers,
		Membership: l.membership, EtcdEndpoints: l.etcd, HealthPort: l.healthPort,
		CertFile: l.cert, KeyFile: l.key, CAFile: l.ca, TLS: l.tls, HTTPURL: httpURL,
		LeaseMs: l.leaseMs, PushHz: l.pushHz, NodeTimeout: l.nodeTimeout, Build: build,
		Log: log.With().Str("component", "cluster").Logger(),
	}
	cfg.HealthGuard = labHealthGuard(l, browser, cfg.Log).Wrap
	if cfg.NodeID == "" {
		// Stable across restarts: the node's kind and its devices'
		// identities must not change with the fresh cluster port.
		cfg.NodeID = l.bind
		if l.port != 0 {
			cfg.NodeID = fmt.Sprintf("%s:%d", l.bind, l.port)
		}
	}
	if l.role == "node" {
		n, err := cluster.StartNode(svc, cfg)
		if err != nil {
			return nil, err
		}
		return n, nil
	}
	g, err := cluster.StartGateway(svc, cfg)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// labBuild names this binary's build for the lab (cluster.BuildOf): its
// version (main.version, stamped by a release's -ldflags), the VCS
// revision Go stamped into it and whether the checkout was modified.
func labBuild() string {
	b := transport.ReadBuildInfo(version)
	return cluster.BuildOf(b.Version, b.GitHash, vcsModified())
}

// vcsModified says whether Go stamped the binary as built from a checkout
// with local changes (vcs.modified).
func vcsModified() bool {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.modified" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// browserAllowed is what --allow-origin and --allow-host let past the
// browser guard besides loopback.
type browserAllowed struct{ origins, hosts []string }

// labHealthGuard is the browser guard of a member's health endpoint: the
// APIs' (a rebinding page must not read the member list either), with the
// hosts of --peers allowed, since the members poll each other by those
// names (a name of /etc/hosts for 127.0.0.2, say).
func labHealthGuard(l *labOptions, browser browserAllowed, log zerolog.Logger) *transport.BrowserGuard {
	hosts := append([]string(nil), browser.hosts...)
	for _, p := range l.peers {
		if h, _, err := net.SplitHostPort(p); err == nil {
			hosts = append(hosts, h)
		}
	}
	return transport.NewBrowserGuard(l.bind, browser.origins, hosts, func(r *http.Request, code protocol.Code, _ string) {
		log.Warn().Str("remote", r.RemoteAddr).Str("origin", r.Header.Get("Origin")).Str("host", r.Host).Str("code", string(code)).Msg("refused a browser request on the health endpoint")
	})
}
