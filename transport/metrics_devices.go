package transport

import (
	"cmp"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
)

// The per-device series are most of a large fleet's /metrics (about 4.4 KB
// an arm in the text format). Built as client_golang's registry builds
// them, a Metric and a dto.Metric per series, a checked, hashed and sorted
// family, and a histogram converted per device although a scheduler
// shard's hundreds of devices share it, one scrape of 1,000 arms allocated
// 26 MB in 437,000 objects and ran for 50 ms of CPU, and the collections
// its garbage set off held both Ps of a 2-CPU host with it: the loops'
// ticks waited up to a preemption slice (10 ms) for one (metrics1k). So
// the device families are gathered here instead, into dto objects kept
// from one scrape to the next and updated in place, each distinct
// histogram converted once a scrape; the rest (Go, process, the
// service-wide hapticd_ series) still comes from the registry.

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

var deviceMetricFamilies = [numDeviceFamilies]struct {
	name, help string
	typ        dto.MetricType
}{
	famPeriod:     {"hapticd_loop_period_seconds", "Time between successive ticks of a device's real-time loop (simulated devices: of their scheduler shard).", dto.MetricType_HISTOGRAM},
	famTarget:     {"hapticd_loop_target_period_seconds", "The period a device's loop aims at.", dto.MetricType_GAUGE},
	famOverruns:   {"hapticd_loop_overruns_total", "Loop ticks that started after their deadline had passed.", dto.MetricType_COUNTER},
	famTicks:      {"hapticd_loop_ticks_total", "Loop ticks that exchanged with the device.", dto.MetricType_COUNTER},
	famExchange:   {"hapticd_driver_exchange_seconds", "Driver round trip of one exchange (simulated devices: the simulation step, sampled).", dto.MetricType_HISTOGRAM},
	famDrvErrors:  {"hapticd_driver_errors_total", "Driver errors.", dto.MetricType_COUNTER},
	famLeases:     {"hapticd_lease_expiries_total", "Controlling sessions released because their lease lapsed.", dto.MetricType_COUNTER},
	famBusy:       {"hapticd_busy_refusals_total", "Commands refused because another session controlled the device.", dto.MetricType_COUNTER},
	famPassivityJ: {"hapticd_passivity_energy_joules", "Energy of what an arm's passivity controller watches (its scope: by default the rendered effects and navigation; in the output scope the whole force output) since its control began, its own damping included, capped at the reserve (0.2 J; negative: those sources drove the arm).", dto.MetricType_GAUGE},
	famAddedDamp:  {"hapticd_passivity_added_damping_newton_seconds_per_metre", "Damping the passivity controller adds to an arm's output now.", dto.MetricType_GAUGE},
}

// deviceSeries is one device's series: their labels made once, their
// values written in place each scrape.
type deviceSeries struct {
	d       *actors.Device
	labels  []*dto.LabelPair // device_id, device_type: sorted by name, as the registry sorts them
	metrics [numDeviceFamilies]dto.Metric
	counter [numDeviceFamilies]dto.Counter
	gauge   [numDeviceFamilies]dto.Gauge
	value   [numDeviceFamilies]float64
}

func newDeviceSeries(d *actors.Device) *deviceSeries {
	s := &deviceSeries{d: d}
	name, id := "device_id", "device_type"
	s.labels = []*dto.LabelPair{{Name: &name, Value: &d.ID}, {Name: &id, Value: &d.Name}}
	for f := range numDeviceFamilies {
		m := &s.metrics[f]
		m.Label = s.labels
		switch deviceMetricFamilies[f].typ {
		case dto.MetricType_COUNTER:
			s.counter[f].Value = &s.value[f]
			m.Counter = &s.counter[f]
		case dto.MetricType_GAUGE:
			s.gauge[f].Value = &s.value[f]
			m.Gauge = &s.gauge[f]
		}
	}
	return s
}

// deviceSeriesSet is the device families of one scrape at a time. A scrape
// takes a set, fills it and encodes it; one that starts meanwhile takes
// another (deviceGatherer.take), so no set is written while encoded.
type deviceSeriesSet struct {
	list  *actors.DeviceSet // the device list order was made for
	order []*deviceSeries   // sorted by device_id, then device_type (the registry's order)
	byDev map[*actors.Device]*deviceSeries
	fams  [numDeviceFamilies]dto.MetricFamily
	names [numDeviceFamilies]string
	helps [numDeviceFamilies]string
	types [numDeviceFamilies]dto.MetricType
	hists map[actors.Histogram]*dto.Histogram // this scrape's, each converted once
}

func newDeviceSeriesSet() *deviceSeriesSet {
	set := &deviceSeriesSet{byDev: map[*actors.Device]*deviceSeries{}, hists: map[actors.Histogram]*dto.Histogram{}}
	for f := range numDeviceFamilies {
		set.names[f], set.helps[f], set.types[f] = deviceMetricFamilies[f].name, deviceMetricFamilies[f].help, deviceMetricFamilies[f].typ
		set.fams[f].Name, set.fams[f].Help, set.fams[f].Type = &set.names[f], &set.helps[f], &set.types[f]
	}
	return set
}

// yieldEvery is how long a scrape's goroutine runs before it lets the
// goroutines its P holds ready run: a loop's pacer wakes through a timer
// of the P it last ran on, and a goroutine that does not yield holds that
// timer until the runtime preempts it, 10 ms on.
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

// fill writes the devices' series as they are now and returns their
// non-empty families.
func (set *deviceSeriesSet) fill(svc *actors.Service, y *yielder) []*dto.MetricFamily {
	if list := svc.Devices(); list != set.list {
		set.relist(list)
	}
	clear(set.hists)
	for f := range set.fams {
		set.fams[f].Metric = set.fams[f].Metric[:0]
	}
	for i, s := range set.order {
		if i%32 == 31 {
			y.maybe()
		}
		d := s.d
		st := d.Stats()
		if m := &s.metrics[famPeriod]; set.histogram(m, d.PeriodHistogram(), periodBuckets) {
			set.fams[famPeriod].Metric = append(set.fams[famPeriod].Metric, m)
		}
		set.add(s, famTarget, float64(st.TargetNs)/1e9)
		set.add(s, famOverruns, float64(st.Overruns))
		set.add(s, famTicks, float64(st.Ticks))
		// Nil for a moment after the device is listed, until its loop
		// starts (as the period's).
		if m := &s.metrics[famExchange]; set.histogram(m, d.ExchangeHistogram(), exchangeBuckets) {
			set.fams[famExchange].Metric = append(set.fams[famExchange].Metric, m)
		}
		set.add(s, famDrvErrors, float64(st.Errors))
		set.add(s, famLeases, float64(st.LeaseExpiries))
		set.add(s, famBusy, float64(st.BusyRefusals))
		if d.Type == protocol.TypeArm {
			out := d.Output()
			set.add(s, famPassivityJ, out.EnergyJ)
			set.add(s, famAddedDamp, out.AddedDampingNsPerM)
		}
	}
	var out []*dto.MetricFamily
	for f := range set.fams {
		if len(set.fams[f].Metric) > 0 {
			out = append(out, &set.fams[f])
		}
	}
	return out
}

func (set *deviceSeriesSet) add(s *deviceSeries, f deviceFamily, v float64) {
	s.value[f] = v
	set.fams[f].Metric = append(set.fams[f].Metric, &s.metrics[f])
}

// histogram points m at h converted (once a scrape: a scheduler shard's
// devices share their histograms), and reports whether there is one.
func (set *deviceSeriesSet) histogram(m *dto.Metric, h actors.Histogram, bounds []float64) bool {
	if h == nil {
		m.Histogram = nil
		return false
	}
	dh := set.hists[h]
	if dh == nil {
		dh = convertHistogram(h, bounds)
		set.hists[h] = dh
	}
	m.Histogram = dh
	return true
}

// relist follows the device list: the series of devices still listed are
// kept, new devices get theirs, and the order is made again.
func (set *deviceSeriesSet) relist(list *actors.DeviceSet) {
	all := list.All()
	byDev := make(map[*actors.Device]*deviceSeries, len(all))
	order := set.order[:0]
	for _, d := range all {
		s := set.byDev[d]
		if s == nil {
			s = newDeviceSeries(d)
		}
		byDev[d] = s
		order = append(order, s)
	}
	clear(order[len(order):cap(order)])
	slices.SortFunc(order, func(a, b *deviceSeries) int {
		return cmp.Or(cmp.Compare(a.d.ID, b.d.ID), cmp.Compare(a.d.Name, b.d.Name))
	})
	set.list, set.order, set.byDev = list, order, byDev
}

// keptSets is how many idle sets a handler keeps: one for the scrapes that
// come one at a time, a second for one that overlaps.
const keptSets = 2

// metricsGatherer is /metrics' gatherer: the registry's families and the
// devices', merged in name order.
type metricsGatherer struct {
	reg        prometheus.Gatherer
	svc        *actors.Service
	yieldEvery time.Duration
	mu         sync.Mutex
	idle       []*deviceSeriesSet
}

func (g *metricsGatherer) take() *deviceSeriesSet {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.idle); n > 0 {
		set := g.idle[n-1]
		g.idle = g.idle[:n-1]
		return set
	}
	return newDeviceSeriesSet()
}

func (g *metricsGatherer) put(set *deviceSeriesSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.idle) < keptSets {
		g.idle = append(g.idle, set)
	}
}

// Gather implements prometheus.TransactionalGatherer: the families stay
// the scrape's until done is called.
func (g *metricsGatherer) Gather() ([]*dto.MetricFamily, func(), error) {
	mfs, err := g.reg.Gather()
	set := g.take()
	y := newYielder(g.yieldEvery)
	mfs = append(mfs, set.fill(g.svc, &y)...)
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return mfs, func() { g.put(set) }, err
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
