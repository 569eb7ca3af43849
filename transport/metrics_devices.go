package transport

import (
	"cmp"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
)

// The per-device series are most of a large fleet's /metrics (about 4.4 KB
// an arm in the text format). Built as client_golang's registry builds
// them (a const Metric, then a dto.Metric, per series; each family
// checked, hashed and sorted; a histogram converted per device although a
// scheduler shard's hundreds of devices share it), one scrape of 1,000
// arms allocated 26 MB in 434,000 objects, and the collections that
// garbage set off were about half of the loop ticks scrapes made late
// (metrics1k: TestMetricsScrapeStallFigure, docs/performance.md). So they
// are gathered here: each distinct histogram converted once a scrape, the
// devices' dto objects in one slab a scrape (4.4 MB a text scrape in all,
// most of it the encoder's; dto objects kept from one scrape to the next
// saved another 1.8 MB a scrape but held 2.4 KB an arm between scrapes,
// where the whole service's heap is about 8 KB an arm at 10,000, for no
// late tick fewer that the runs could tell). The rest (Go, process, the service-wide hapticd_ series)
// still comes from the registry.

// deviceFamily is one per-device family.
type deviceFamily int

const (
	famPeriod deviceFamily = iota
	famTarget
	famOverruns
	famTicks
	famExchange
	famDrvErrors
	famLeases
	famBusy
	famPassivityJ
	famAddedDamp
	numDeviceFamilies
)

// A device's counters and gauges, each family's slot among them.
const numDeviceCounters, numDeviceGauges = 5, 3

var deviceMetricFamilies = [numDeviceFamilies]struct {
	name, help string
	typ        dto.MetricType
	slot       int // among the device's counters or gauges
}{
	famPeriod:     {"hapticd_loop_period_seconds", "Time between successive ticks of a device's real-time loop (simulated devices: of their scheduler shard).", dto.MetricType_HISTOGRAM, 0},
	famTarget:     {"hapticd_loop_target_period_seconds", "The period a device's loop aims at.", dto.MetricType_GAUGE, 0},
	famOverruns:   {"hapticd_loop_overruns_total", "Loop ticks that started after their deadline had passed.", dto.MetricType_COUNTER, 0},
	famTicks:      {"hapticd_loop_ticks_total", "Loop ticks that exchanged with the device.", dto.MetricType_COUNTER, 1},
	famExchange:   {"hapticd_driver_exchange_seconds", "Driver round trip of one exchange (simulated devices: the simulation step, sampled).", dto.MetricType_HISTOGRAM, 0},
	famDrvErrors:  {"hapticd_driver_errors_total", "Driver errors.", dto.MetricType_COUNTER, 2},
	famLeases:     {"hapticd_lease_expiries_total", "Controlling sessions released because their lease lapsed.", dto.MetricType_COUNTER, 3},
	famBusy:       {"hapticd_busy_refusals_total", "Commands refused because another session controlled the device.", dto.MetricType_COUNTER, 4},
	famPassivityJ: {"hapticd_passivity_energy_joules", "Energy of what an arm's passivity controller watches (its scope: by default the rendered effects and navigation; in the output scope the whole force output) since its control began, its own damping included, capped at the reserve (0.2 J; negative: those sources drove the arm).", dto.MetricType_GAUGE, 1},
	famAddedDamp:  {"hapticd_passivity_added_damping_newton_seconds_per_metre", "Damping the passivity controller adds to an arm's output now.", dto.MetricType_GAUGE, 2},
}

// deviceSeries is one device's series in one scrape. A scrape allocates
// its devices' series in one slab: a few allocations a scrape, whatever
// the fleet, and nothing kept between scrapes.
type deviceSeries struct {
	labels  [2]dto.LabelPair
	labelPs [2]*dto.LabelPair // device_id, device_type: sorted by name, as the registry sorts them
	metrics [numDeviceFamilies]dto.Metric
	counter [numDeviceCounters]dto.Counter
	gauge   [numDeviceGauges]dto.Gauge
	value   [numDeviceFamilies]float64
}

var labelDeviceID, labelDeviceType = "device_id", "device_type"

func (s *deviceSeries) init(d *actors.Device) {
	s.labels[0] = dto.LabelPair{Name: &labelDeviceID, Value: &d.ID}
	s.labels[1] = dto.LabelPair{Name: &labelDeviceType, Value: &d.Name}
	s.labelPs = [2]*dto.LabelPair{&s.labels[0], &s.labels[1]}
	for f := range numDeviceFamilies {
		m := &s.metrics[f]
		m.Label = s.labelPs[:]
		switch slot := deviceMetricFamilies[f].slot; deviceMetricFamilies[f].typ {
		case dto.MetricType_COUNTER:
			s.counter[slot].Value = &s.value[f]
			m.Counter = &s.counter[slot]
		case dto.MetricType_GAUGE:
			s.gauge[slot].Value = &s.value[f]
			m.Gauge = &s.gauge[slot]
		}
	}
}

// yieldEvery is how long a scrape's goroutine runs before it lets other
// goroutines have its P: a loop's pacer wakes through a timer of the P it
// last ran on, which a goroutine that does not yield can keep from firing
// until the runtime preempts it, 10 ms on, when the other P is busy too
// (say with a collection's worker). The measurement could not tell the
// yields' effect from its runs' spread; they cost a clock read every 32
// devices and every write.
const yieldEvery = 200 * time.Microsecond

// yielder calls runtime.Gosched once every has passed since the last
// (never when every is 0: the measurement's variant without yields).
type yielder struct {
	every time.Duration
	last  time.Time
}

func newYielder(every time.Duration) yielder { return yielder{every: every, last: time.Now()} }

func (y *yielder) maybe() {
	if y.every == 0 {
		return
	}
	if now := time.Now(); now.Sub(y.last) >= y.every {
		runtime.Gosched()
		y.last = time.Now()
	}
}

// gatherDevices returns the devices' families as they are now, the
// non-empty ones, each sorted as the registry sorts its series (by
// device_id, then device_type).
func gatherDevices(svc *actors.Service, y *yielder) []*dto.MetricFamily {
	devs := svc.Devices().All() // a copy of the list
	slices.SortFunc(devs, func(a, b *actors.Device) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name))
	})
	slab := make([]deviceSeries, len(devs))
	var fams [numDeviceFamilies]dto.MetricFamily
	for f := range fams {
		fams[f] = dto.MetricFamily{
			Name:   &deviceMetricFamilies[f].name,
			Help:   &deviceMetricFamilies[f].help,
			Type:   &deviceMetricFamilies[f].typ,
			Metric: make([]*dto.Metric, 0, len(devs)),
		}
	}
	add := func(s *deviceSeries, f deviceFamily, v float64) {
		s.value[f] = v
		fams[f].Metric = append(fams[f].Metric, &s.metrics[f])
	}
	// A scheduler shard's devices share their histograms: each is
	// converted once per family (whose bucket bounds it takes).
	type histOf struct {
		h actors.Histogram
		f deviceFamily
	}
	hists := map[histOf]*dto.Histogram{}
	histogram := func(s *deviceSeries, f deviceFamily, h actors.Histogram, bounds []float64) {
		if h == nil {
			return
		}
		dh := hists[histOf{h, f}]
		if dh == nil {
			dh = convertHistogram(h, bounds)
			hists[histOf{h, f}] = dh
		}
		s.metrics[f].Histogram = dh
		fams[f].Metric = append(fams[f].Metric, &s.metrics[f])
	}
	for i, d := range devs {
		if i%32 == 31 {
			y.maybe()
		}
		s := &slab[i]
		s.init(d)
		st := d.Stats()
		histogram(s, famPeriod, d.PeriodHistogram(), periodBuckets)
		add(s, famTarget, float64(st.TargetNs)/1e9)
		add(s, famOverruns, float64(st.Overruns))
		add(s, famTicks, float64(st.Ticks))
		// Nil for a moment after the device is listed, until its loop
		// starts (as the period's).
		histogram(s, famExchange, d.ExchangeHistogram(), exchangeBuckets)
		add(s, famDrvErrors, float64(st.Errors))
		add(s, famLeases, float64(st.LeaseExpiries))
		add(s, famBusy, float64(st.BusyRefusals))
		if d.Type == protocol.TypeArm {
			out := d.Output()
			add(s, famPassivityJ, out.EnergyJ)
			add(s, famAddedDamp, out.AddedDampingNsPerM)
		}
	}
	var out []*dto.MetricFamily
	for f := range fams {
		if len(fams[f].Metric) > 0 {
			out = append(out, &fams[f])
		}
	}
	return out
}

// metricsGatherer is /metrics' gatherer: the registry's families and the
// devices', merged in name order.
type metricsGatherer struct {
	reg        prometheus.Gatherer
	svc        *actors.Service
	yieldEvery time.Duration
}

func (g *metricsGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.reg.Gather()
	y := newYielder(g.yieldEvery)
	mfs = append(mfs, gatherDevices(g.svc, &y)...)
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return mfs, err
}

// yieldingWriter lets the loops' goroutines run while a scrape encodes:
// the encoder writes its output in pieces, and a piece written after
// yieldEvery of work yields first.
type yieldingWriter struct {
	http.ResponseWriter
	y yielder
}

func (w *yieldingWriter) Write(b []byte) (int, error) {
	w.y.maybe()
	return w.ResponseWriter.Write(b)
}

func (w *yieldingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
