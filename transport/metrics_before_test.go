package transport

// The /metrics collector as it was before metrics1k (2026-11-29): the
// reference TestMetricsDeviceSeriesAsTheRegistryBuiltThem holds today's
// device families to, and the old side of TestMetricsScrapeStallFigure's
// and BenchmarkMetricsScrape1000Arms' before/after figures.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
)

var deviceLabels = []string{"device_type", "device_id"}

var (
	descPeriod     = prometheus.NewDesc("hapticd_loop_period_seconds", "Time between successive ticks of a device's real-time loop (simulated devices: of their scheduler shard).", deviceLabels, nil)
	descTarget     = prometheus.NewDesc("hapticd_loop_target_period_seconds", "The period a device's loop aims at.", deviceLabels, nil)
	descOverruns   = prometheus.NewDesc("hapticd_loop_overruns_total", "Loop ticks that started after their deadline had passed.", deviceLabels, nil)
	descTicks      = prometheus.NewDesc("hapticd_loop_ticks_total", "Loop ticks that exchanged with the device.", deviceLabels, nil)
	descExchange   = prometheus.NewDesc("hapticd_driver_exchange_seconds", "Driver round trip of one exchange (simulated devices: the simulation step, sampled).", deviceLabels, nil)
	descDrvErrors  = prometheus.NewDesc("hapticd_driver_errors_total", "Driver errors.", deviceLabels, nil)
	descLeases     = prometheus.NewDesc("hapticd_lease_expiries_total", "Controlling sessions released because their lease lapsed.", deviceLabels, nil)
	descBusy       = prometheus.NewDesc("hapticd_busy_refusals_total", "Commands refused because another session controlled the device.", deviceLabels, nil)
	descPassivityJ = prometheus.NewDesc("hapticd_passivity_energy_joules", "Energy of what an arm's passivity controller watches (its scope: by default the rendered effects and navigation; in the output scope the whole force output) since its control began, its own damping included, capped at the reserve (0.2 J; negative: those sources drove the arm).", deviceLabels, nil)
	descAddedDamp  = prometheus.NewDesc("hapticd_passivity_added_damping_newton_seconds_per_metre", "Damping the passivity controller adds to an arm's output now.", deviceLabels, nil)
)

type beforeCollector struct{ serviceCollector }

func (c *beforeCollector) Describe(chan<- *prometheus.Desc) {}

func newBeforeMetricsHandler(svc *actors.Service, build BuildInfo, known startLabels) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&beforeCollector{serviceCollector{svc: svc, build: build, known: known}},
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

func (c *beforeCollector) Collect(ch chan<- prometheus.Metric) {
	svc := c.svc
	for _, d := range svc.Devices().All() {
		lv := []string{d.Name, d.ID}
		st := d.Stats()
		if h := d.PeriodHistogram(); h != nil {
			ch <- newHistogram(descPeriod, h, periodBuckets, lv)
		}
		ch <- prometheus.MustNewConstMetric(descTarget, prometheus.GaugeValue, float64(st.TargetNs)/1e9, lv...)
		ch <- prometheus.MustNewConstMetric(descOverruns, prometheus.CounterValue, float64(st.Overruns), lv...)
		ch <- prometheus.MustNewConstMetric(descTicks, prometheus.CounterValue, float64(st.Ticks), lv...)
		// Nil for a moment after the device is listed, until its loop
		// starts (as the period's).
		if h := d.ExchangeHistogram(); h != nil {
			ch <- newHistogram(descExchange, h, exchangeBuckets, lv)
		}
		ch <- prometheus.MustNewConstMetric(descDrvErrors, prometheus.CounterValue, float64(st.Errors), lv...)
		ch <- prometheus.MustNewConstMetric(descLeases, prometheus.CounterValue, float64(st.LeaseExpiries), lv...)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, float64(st.BusyRefusals), lv...)
		if d.Type == protocol.TypeArm {
			out := d.Output()
			ch <- prometheus.MustNewConstMetric(descPassivityJ, prometheus.GaugeValue, out.EnergyJ, lv...)
			ch <- prometheus.MustNewConstMetric(descAddedDamp, prometheus.GaugeValue, out.AddedDampingNsPerM, lv...)
		}
	}

	// The service-wide series did not change.
	c.serviceCollector.Collect(ch)
}
