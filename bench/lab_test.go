package bench

import (
	"strings"
	"testing"
	"time"
)

// Lab drives a real node and gateway: both paths carry frames with no
// broken contract, and the ratios come from the same run.
func TestLabAgainstRealProcesses(t *testing.T) {
	bin, ctx := endToEnd(t, "starts a hapticd node and gateway; skipped with -short")
	rep, err := Lab(ctx, LabOptions{Hapticd: bin, Arms: 1, Clients: 1, RateHz: 500,
		Duration: 600 * time.Millisecond, Warmup: 200 * time.Millisecond, LoopHz: 1000, Pairs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("report:\n%s", table.String())
	for name, r := range map[string]LoadResult{"direct": rep.Direct, "gateway": rep.Gateway} {
		o := r.Overall
		if o.Received == 0 || o.Received != o.Sent || o.Lost+o.OutOfOrder+o.ErrorFrames != 0 || o.ClientsInError != 0 {
			t.Errorf("%s: sent %d, received %d, lost %d, out of order %d, error frames %d, sessions in error %d",
				name, o.Sent, o.Received, o.Lost, o.OutOfOrder, o.ErrorFrames, o.ClientsInError)
		}
	}
	if rep.RTTP50Ratio <= 0 || rep.RateRatio <= 0 {
		t.Errorf("ratios not computed: %+v", rep)
	}
	// The paths alternated in two pairs; each ratio is the median of the
	// pairs' (the mean of two), within their range, and both pairs print.
	if len(rep.Pairs) != 2 || len(rep.Comparisons) != 3 {
		t.Fatalf("pairs %+v, comparisons %+v: want 2 pairs and 3 paired figures", rep.Pairs, rep.Comparisons)
	}
	for _, c := range rep.Comparisons {
		if len(c.PairRatios) != 2 || c.Ratio < c.RatioMin || c.Ratio > c.RatioMax || c.Baseline != "direct" {
			t.Errorf("%s: %+v, want the median of 2 pair ratios beside the direct path", c.Figure, c)
		}
	}
	if !strings.Contains(table.String(), "MEDIAN of the per-pair ratios") {
		t.Errorf("the table does not say how the ratios are taken:\n%s", table.String())
	}
	// The gateway's state age: at least the node's read to the gateway's
	// loop, and under a second on loopback.
	if a := rep.StateAge; a.Count == 0 || a.P50Us <= 0 || a.P99Us < a.P50Us || a.P99Us > 1e6 {
		t.Errorf("gateway state age %+v", a)
	}
}
