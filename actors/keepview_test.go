package actors

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
)

// keepView leaves the register's command with the Params of the view in
// force whatever was written last: a Write of a view read before the
// device actor published a newer one, or a Reparam of a view that a newer
// one overtook (the race review23 named), is put right; a command that is
// no longer the session's is left alone.
func TestKeepViewLeavesTheViewInForce(t *testing.T) {
	v1, v2, v3 := loop.DefaultParams(), &loop.Params{ForceGateGain: 0.5}, &loop.Params{ForceGateGain: 0.9}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1}}
	cases := []struct {
		name    string
		written *loop.Params // what the register holds for the session
		wrote   *loop.Params // what the writer believes it wrote
		views   []*loop.Params
		owner   uint64
		want    *loop.Params
	}{
		{"a write of an old view", v1, v1, []*loop.Params{v3}, 7, v3},
		{"a stale Reparam over the actor's", v2, v2, []*loop.Params{v3}, 7, v3},
		{"the view changes while it works", v1, v1, []*loop.Params{v2, v3}, 7, v3},
		{"already in force", v3, v3, []*loop.Params{v3}, 7, v3},
		{"another owner", v1, v1, []*loop.Params{v3}, 8, v1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reg loop.Register
			reg.Claim(7)
			reg.Write(7, 1, 1<<40, &cmd, tc.written)
			if tc.owner != 7 {
				reg.Release(7)
				reg.Claim(tc.owner)
			}
			i := 0
			current := func() *loop.Params {
				v := tc.views[min(i, len(tc.views)-1)]
				i++
				return v
			}
			keepView(&reg, 7, tc.wrote, current)
			var got loop.Command
			reg.Read(&got)
			if got.Params != tc.want || got.Seq != 1 || got.Cmd != cmd {
				t.Fatalf("register holds %+v with Params %p, want seq 1, %+v and %p", got, got.Params, cmd, tc.want)
			}
		})
	}
}
