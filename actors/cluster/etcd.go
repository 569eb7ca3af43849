package cluster

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdPrefix is where the lab's members register in etcd: protoactor's
// provider puts each under etcdPrefix/<cluster name>/<cluster name>@<member
// id>, with a lease it keeps alive (3 s), so a killed member's key goes
// when its lease lapses and a stopped one's at once.
const etcdPrefix = "/hapticd"

// etcdDialTimeout bounds the first connection to etcd. protoactor's
// provider reads the member list without a deadline, so a process that
// cannot reach etcd would hang at start instead of saying so.
const etcdDialTimeout = 5 * time.Second

// ParseEtcdEndpoints checks a comma-separated list of etcd endpoints
// (host:port or http://host:port) and returns them.
func ParseEtcdEndpoints(s string) ([]string, error) {
	var eps []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		hostPort := e
		if strings.Contains(e, "://") {
			u, err := url.Parse(e)
			if err != nil {
				return nil, fmt.Errorf("cluster: etcd endpoint %q: %w", e, err)
			}
			if u.Scheme != "http" {
				return nil, fmt.Errorf("cluster: etcd endpoint %q: only http:// is supported (etcd over TLS is not wired up)", e)
			}
			if u.Path != "" && u.Path != "/" {
				return nil, fmt.Errorf("cluster: etcd endpoint %q: want http://host:port, no path", e)
			}
			hostPort = u.Host
		}
		if err := checkHostPort(hostPort); err != nil {
			return nil, fmt.Errorf("cluster: etcd endpoint %q: %w", e, err)
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("cluster: etcd endpoints %q: want at least one host:port or http://host:port", s)
	}
	return eps, nil
}

// joinEtcd starts the remote as a member of protoactor's cluster with its
// etcd provider: no health endpoint and no --peers; every member registers
// its cluster address and kinds in etcd and watches the others there.
func (lk *link) joinEtcd(c *Config, rcfg *remote.Config, kinds []*cluster.Kind) error {
	if len(c.EtcdEndpoints) == 0 {
		return fmt.Errorf("cluster: etcd membership needs etcd endpoints")
	}
	prov, err := etcd.NewWithConfig(etcdPrefix, clientv3.Config{
		Endpoints:   c.EtcdEndpoints,
		DialTimeout: etcdDialTimeout,
		// Blocking: New fails when etcd cannot be reached within
		// DialTimeout, instead of the provider hanging on its first read.
		DialOptions: []grpc.DialOption{grpc.WithBlock()},
		// The provider logs what matters through protoactor's logger; the
		// client's own zap output would break the service's log format.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("cluster: etcd at %s: %w (is etcd running there? see docs/lab.md, Discovery through etcd)", strings.Join(c.EtcdEndpoints, ","), err)
	}
	lk.prov = prov
	lk.cl = cluster.New(lk.sys, cluster.Configure(clusterName, prov, disthash.New(), rcfg,
		cluster.WithKinds(kinds...), cluster.WithRequestTimeout(configTimeout)))
	if err := recovered("join the cluster through etcd", lk.cl.StartMember); err != nil {
		return err
	}
	lk.rem = lk.cl.Remote
	return nil
}
