package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
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
	ecfg := clientv3.Config{
		Endpoints:   c.EtcdEndpoints,
		DialTimeout: etcdDialTimeout,
		// Blocking: New fails when etcd cannot be reached within
		// DialTimeout, instead of the provider hanging on its first read.
		DialOptions: []grpc.DialOption{grpc.WithBlock()},
		// The provider logs what matters through protoactor's logger; the
		// client's own zap output would break the service's log format.
		Logger: zap.NewNop(),
	}
	unreachable := func(err error) error {
		return fmt.Errorf("cluster: etcd at %s: %w (is etcd running there? see docs/lab.md, Discovery through etcd)", strings.Join(c.EtcdEndpoints, ","), err)
	}
	if err := removeStaleRegistrations(ecfg, kinds, c); err != nil {
		return unreachable(err)
	}
	prov, err := etcd.NewWithConfig(etcdPrefix, ecfg)
	if err != nil {
		return unreachable(err)
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

// removeStaleRegistrations deletes what an earlier process of this node
// left in etcd: a killed process's registration stays until its lease
// lapses (3 s), and meanwhile the topology holds two members with the
// node's kind, the dead one maybe chosen for its devices. A node's kind is
// its own (node-<id>), so a registration with it that is not this
// process's is a previous process's. A gateway (no kinds) removes nothing.
func removeStaleRegistrations(ecfg clientv3.Config, kinds []*cluster.Kind, c *Config) error {
	if len(kinds) == 0 {
		return nil
	}
	own := map[string]bool{}
	for _, k := range kinds {
		own[k.Kind] = true
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdDialTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, etcdPrefix+"/"+clusterName+"/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		var m struct {
			ID    string   `json:"id"`
			Kinds []string `json:"kinds"`
		}
		if json.Unmarshal(kv.Value, &m) != nil || !slices.ContainsFunc(m.Kinds, func(k string) bool { return own[k] }) {
			continue
		}
		// Only if unchanged since read: a registration that was renewed
		// meanwhile is not stale.
		key := string(kv.Key)
		if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(key)).Commit(); err != nil {
			return err
		}
		c.Log.Info().Str("member", m.ID).Msg("removed an earlier process's etcd registration of this node")
	}
	return nil
}
