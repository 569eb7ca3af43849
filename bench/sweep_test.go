package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSweep(t *testing.T) {
	tests := []struct {
		in      string
		want    SweepSpec
		wantErr bool
	}{
		{"clients=1,10,50,100", SweepSpec{"clients", []int{1, 10, 50, 100}}, false},
		{"clients=50, 1 ,10", SweepSpec{"clients", []int{1, 10, 50}}, false},
		{"arms=100,1", SweepSpec{"arms", []int{1, 100}}, false},
		{"threads=1,2", SweepSpec{}, true},
		{"clients=1,x", SweepSpec{}, true},
		{"clients=0", SweepSpec{}, true},
		{"clients", SweepSpec{}, true},
	}
	for _, tt := range tests {
		got, err := ParseSweep(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSweep(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// svgElements decodes the whole document with encoding/xml, failing on
// anything that is not well-formed, and counts elements by name.
func svgElements(t *testing.T, doc []byte) (root string, counts map[string]int, text string) {
	t.Helper()
	counts = map[string]int{}
	var texts strings.Builder
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q, want the SVG namespace", el.Name.Space)
				}
			}
			counts[el.Name.Local]++
		case xml.CharData:
			texts.Write(el)
		}
	}
	return root, counts, texts.String()
}

func syntheticSweep() SweepReport {
	var s SweepReport
	s.Machine = Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2}
	for i, n := range []int{1, 10, 50, 100} {
		f := float64(i + 1)
		p := RunReport{Config: RunConfig{Arms: 100, Clients: n, RateHz: 1000, DurationS: 20, LoopHz: 1000}}
		p.Hapticd.Overall = Overall{AchievedHzTotal: 1000 * float64(n) / f,
			RTT: Summary{P50Us: 40 * f, P90Us: 60 * f, P99Us: 120 * f, P999Us: 400 * f, MaxUs: 900 * f}}
		p.Echo = &LoadResult{Overall: Overall{AchievedHzTotal: 1000 * float64(n), RTT: Summary{P50Us: 20, P99Us: 50}}}
		s.Points = append(s.Points, p)
	}
	return s
}

func TestSweepSVGIsValidXML(t *testing.T) {
	var buf bytes.Buffer
	if err := syntheticSweep().WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	root, counts, text := svgElements(t, buf.Bytes())
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	// Two panels: RTT (4 hapticd + 2 echo lines) and rate (hapticd, echo, target).
	if counts["polyline"] != 9 {
		t.Errorf("%d polylines, want 9 (6 RTT series and 3 rate series)", counts["polyline"])
	}
	if counts["circle"] != 9*4 {
		t.Errorf("%d point markers, want %d", counts["circle"], 9*4)
	}
	// Every point lies inside its panel's frame, inside the canvas.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "circle" {
			continue
		}
		var x, y float64
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "cx":
				fmt.Sscan(a.Value, &x)
			case "cy":
				fmt.Sscan(a.Value, &y)
			}
		}
		if x < plotMarginLeft || x > plotWidth-plotMarginRight || y < plotMarginTop || y > float64(plotMarginTop+2*(plotPanelHeight+plotPanelGap)) {
			t.Errorf("point (%v, %v) lies outside the plot area", x, y)
		}
	}
	for _, want := range []string{"hapticd p99.9", "echo p99", "clients", "RTT (µs, log scale)", "frames per second", "100"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

func TestPlotEscapesAndSkipsUnplottable(t *testing.T) {
	var buf bytes.Buffer
	err := writePlot(&buf, `a <title> & "quotes"`, "x", false, []plotPanel{{
		title: "p<1>", yLabel: "y & z", logY: true,
		series: []plotSeries{{name: "s<&>", color: "#000", xs: []float64{1, 2, 3}, ys: []float64{0, 10, 100}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, counts, text := svgElements(t, buf.Bytes())
	if counts["circle"] != 2 {
		t.Errorf("%d markers, want 2: a zero cannot sit on a log axis", counts["circle"])
	}
	if !strings.Contains(text, `a <title> & "quotes"`) || !strings.Contains(text, "s<&>") {
		t.Errorf("escaped text did not round-trip: %q", text)
	}
}

func TestSweepAgainstFakeService(t *testing.T) {
	f := newFakeService(t, fakeFaults{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Sweep(ctx, RunOptions{Target: f.wsURL(), NoBareLoop: true, Duration: 150 * time.Millisecond,
		Warmup: 20 * time.Millisecond}, SweepSpec{Over: "clients", Counts: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 2 || rep.Points[0].Config.Clients != 1 || rep.Points[1].Config.Clients != 3 {
		t.Fatalf("sweep points %+v, want 1 and 3 clients", rep.Points)
	}
	for _, p := range rep.Points {
		if len(p.Hapticd.Clients) != p.Config.Clients || p.Echo == nil {
			t.Errorf("point at %d clients has %d client results, echo %v", p.Config.Clients, len(p.Hapticd.Clients), p.Echo != nil)
		}
	}
	var table, svg bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(table.String(), "\n"); lines != 2+1+2 {
		t.Errorf("sweep table has %d lines, want a heading, a header and one line per point:\n%s", lines, table.String())
	}
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	svgElements(t, svg.Bytes())
}
