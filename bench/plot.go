package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// plotSeries is one line of a panel.
type plotSeries struct {
	name  string
	color string
	dash  string // SVG stroke-dasharray; empty is solid
	xs    []float64
	ys    []float64
}

// plotPanel is one chart; panels share the x axis.
type plotPanel struct {
	title  string
	yLabel string
	logY   bool
	series []plotSeries
}

// Layout of the SVG, in pixels.
const (
	plotWidth       = 860
	plotPanelHeight = 300
	plotMarginLeft  = 80
	plotMarginRight = 200 // legend
	plotMarginTop   = 50
	plotPanelGap    = 70
)

// writePlot renders panels stacked over one x axis as a standalone SVG.
// Points with a non-positive value on a log axis are left out.
func writePlot(w io.Writer, title, xLabel string, logX bool, panels []plotPanel) error {
	height := plotMarginTop + len(panels)*(plotPanelHeight+plotPanelGap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", plotMarginLeft, esc(title))

	var allX []float64
	for _, p := range panels {
		for _, s := range p.series {
			allX = append(allX, s.xs...)
		}
	}
	xa := newAxis(allX, logX)
	plotW := float64(plotWidth - plotMarginLeft - plotMarginRight)
	for i, p := range panels {
		top := float64(plotMarginTop + i*(plotPanelHeight+plotPanelGap))
		h := float64(plotPanelHeight)
		var ys []float64
		for _, s := range p.series {
			ys = append(ys, s.ys...)
		}
		ya := newAxis(ys, p.logY)
		left := float64(plotMarginLeft)
		px := func(x float64) float64 { return left + xa.frac(x)*plotW }
		py := func(y float64) float64 { return top + h - ya.frac(y)*h }

		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", left, top-8, esc(p.title))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", left, top, plotW, h)
		for _, t := range ya.ticks() {
			y := py(t)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, esc(tickText(t)))
		}
		for _, t := range xa.ticks() {
			x := px(t)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, top+h)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+h+16, esc(tickText(t)))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+plotW/2, top+h+34, esc(xLabel))
		fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", left-58, top+h/2, esc(p.yLabel))

		for j, s := range p.series {
			var pts []string
			for k := range s.xs {
				if k >= len(s.ys) || !xa.plottable(s.xs[k]) || !ya.plottable(s.ys[k]) {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.xs[k]), py(s.ys[k])))
			}
			dash := ""
			if s.dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, esc(s.dash))
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), esc(s.color), dash)
				for _, pt := range pts {
					x, y, _ := strings.Cut(pt, ",")
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, esc(s.color))
				}
			}
			ly := top + 14 + float64(j)*18
			lx := left + plotW + 14
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly-4, lx+24, ly-4, esc(s.color), dash)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+30, ly, esc(s.name))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// axis maps data values to 0..1, linearly or by log10.
type axis struct {
	log    bool
	lo, hi float64 // in axis space (log10 of the value for a log axis)
}

func newAxis(values []float64, logScale bool) axis {
	a := axis{log: logScale}
	first := true
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (logScale && v <= 0) {
			continue
		}
		if logScale {
			v = math.Log10(v)
		}
		if first {
			a.lo, a.hi, first = v, v, false
			continue
		}
		a.lo, a.hi = min(a.lo, v), max(a.hi, v)
	}
	switch {
	case first && logScale:
		a.lo, a.hi = 0, 1
	case first:
		a.lo, a.hi = 0, 1
	case logScale:
		// Whole decades, so the ticks land on the frame.
		a.lo, a.hi = math.Floor(a.lo), math.Ceil(a.hi)
		if a.hi == a.lo {
			a.hi = a.lo + 1
		}
	default:
		// Linear axes start at zero: rates and counts read best from it.
		a.lo = min(a.lo, 0)
		step := niceStep((a.hi - a.lo) / 5)
		a.hi = math.Ceil(a.hi/step) * step
		if a.hi == a.lo {
			a.hi = a.lo + 1
		}
	}
	return a
}

func (a axis) plottable(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.log || v > 0)
}

func (a axis) frac(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// ticks are decades (with 2 and 5 when there are few) on a log axis, and
// 1-2-5 steps on a linear one.
func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		mults := []float64{1}
		if a.hi-a.lo <= 2 {
			mults = []float64{1, 2, 5}
		}
		for e := a.lo; e <= a.hi; e++ {
			for _, m := range mults {
				v := m * math.Pow(10, e)
				if lv := math.Log10(v); lv <= a.hi+1e-9 {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((a.hi - a.lo) / 5)
	for i := math.Ceil(a.lo / step); i*step <= a.hi+step*1e-9; i++ {
		out = append(out, i*step)
	}
	return out
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func tickText(v float64) string {
	switch av := math.Abs(v); {
	case av >= 1e6:
		return fmt.Sprintf("%.6gM", v/1e6)
	case av >= 1e4:
		return fmt.Sprintf("%.6gk", v/1e3)
	default:
		return fmt.Sprintf("%.6g", v)
	}
}
