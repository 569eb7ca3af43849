package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hid"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/transport"
)

// hardware wires real devices into the service: the emulated devices of
// --emulate (and --emulate-arms), the explicit --hw-port ports and the USB scan.
type hardware struct {
	log       zerolog.Logger
	watcher   *discovery.Watcher
	emulators []*emulator.Emulator
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// newHardware starts the emulators (so their ports exist) and prepares the
// watcher; nil when there is nothing to watch.
func newHardware(o *options, log zerolog.Logger) (*hardware, error) {
	h := &hardware{log: log.With().Str("component", "hardware").Logger()}
	ports := append([]string(nil), o.hwPorts...)
	periodS := 1 / float64(o.loopHz)
	for _, entry := range o.emulated.Sorted() {
		spec := entry.Family.Spec()
		for i := range entry.Count {
			// From --sim-index-base, as the simulated devices: two nodes of
			// one lab on one host must not emulate the same device (id and
			// UUID).
			index := o.lab.simIndexBase + i
			e, path, err := emulator.StartPTY(emulator.Options{Family: entry.Family, Index: index, PeriodS: periodS, Motion: simMotion(o, entry.Family), Seed: int64(index)})
			if err != nil {
				h.closeEmulators()
				return nil, fmt.Errorf("--emulate %s: %w", spec.Name, err)
			}
			h.emulators = append(h.emulators, e)
			ports = append(ports, emulatedPort(spec, path))
			id := strconv.Itoa(int(e.ID()))
			if spec.Kind == hw.KindArm {
				id = fmt.Sprintf("%04X", e.ID())
			}
			fmt.Fprintf(os.Stdout, "emulated %s %d (id %s) on %s\n", spec.Name, index, id, path)
			h.log.Info().Str("family", spec.Name).Int("index", index).Str("device_id", id).Str("port", path).Msg("emulated device")
		}
	}
	if len(ports) == 0 && o.hwScanPeriod <= 0 {
		return h, nil
	}
	scan := o.hwScanPeriod
	if scan <= 0 {
		// Explicit ports only: still revisit them, so an unplugged device
		// comes back.
		scan = time.Second
	}
	if o.hwScanPeriod > 0 && !serial.USBIdentity {
		h.log.Warn().Msg("this build cannot read USB ids (macOS without cgo): the scan lists /dev/cu.usbmodem* ports but opens none; open a device with --hw-port /dev/cu.usbmodemNNNN")
	}
	wo := discovery.WatcherOptions{ExplicitPorts: ports, ScanPeriod: scan, PeriodS: periodS}
	if o.hwScanPeriod <= 0 {
		// Explicit ports only: no USB or HID enumeration on each scan.
		wo.Enumerate = func() ([]serial.PortInfo, error) { return nil, nil }
		wo.HIDEnumerate = func() ([]hid.DeviceInfo, error) { return nil, nil }
	}
	h.watcher = discovery.NewWatcher(wo)
	return h, nil
}

// emulatedPort is the --hw-port spelling of an emulated device of family
// spec on path: a grip's port says it is one (the serial driver cannot
// tell a grip from an arm), and the grip driver tells its link from its
// status stream, as for a real grip the scan finds.
func emulatedPort(spec sim.FamilySpec, path string) string {
	if spec.Kind == hw.KindGrip {
		return "grip:" + path
	}
	return path
}

// onDeviceLost lets the watcher rescan a port whose device failed.
func (h *hardware) onDeviceLost(info hw.Info) {
	if h != nil && h.watcher != nil && info.Port != "" {
		h.watcher.Lost(info.Port)
	}
}

// ports reads the watcher's latest scan for GET /ports; nil when there is
// no watcher.
func (h *hardware) ports() func() transport.HardwarePorts {
	if h == nil || h.watcher == nil {
		return nil
	}
	return func() transport.HardwarePorts {
		r := h.watcher.Report()
		out := transport.HardwarePorts{ScannedAt: r.At, Ports: make([]transport.HardwarePort, 0, len(r.Ports))}
		for _, p := range r.Ports {
			hp := transport.HardwarePort{Path: p.Path, Explicit: p.Explicit, Product: p.Product, Serial: p.Serial,
				Outcome: p.Outcome.String(), Reason: p.Reason, Hint: p.Hint, Failures: p.Failures}
			if p.VID != 0 || p.PID != 0 {
				hp.USBID = fmt.Sprintf("%04x:%04x", p.VID, p.PID)
			}
			if p.Kind != 0 {
				hp.Kind = p.Kind.String()
			}
			if p.Outcome == discovery.Failed && !p.RetryAt.IsZero() {
				hp.RetryAt = &p.RetryAt
			}
			out.Ports = append(out.Ports, hp)
		}
		return out
	}
}

// start runs the watcher, adding what it finds to svc.
func (h *hardware) start(svc *actors.Service) {
	if h.watcher == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.watcher.Run(ctx, &foundHandler{h: h, svc: svc})
	}()
}

// stop ends the watcher and lets go of the ports it holds: a device's port
// stays locked until the service closes its driver, a port held for a
// reopen is free at once.
func (h *hardware) stop() {
	if h == nil {
		return
	}
	if h.cancel != nil {
		h.cancel()
	}
	h.wg.Wait()
	if h.watcher != nil {
		h.watcher.Release()
	}
}

// closeEmulators unplugs the emulated devices; it runs after the service has
// halted its devices.
func (h *hardware) closeEmulators() {
	for _, e := range h.emulators {
		_ = e.Close()
	}
}

// foundHandler adopts what the watcher finds.
type foundHandler struct {
	h   *hardware
	svc *actors.Service
}

// Refuses keeps the watcher off every port while serial devices are
// disabled: a user who turned them off expects the arms left alone, not
// woken at every retry to be refused. The scan's report (logged, and on
// GET /ports) says why.
func (f *foundHandler) Refuses() (reason, hint string) {
	if f.svc.Settings().SerialEnable {
		return "", ""
	}
	return "serial devices are disabled (setting system/serial_enable)",
		"POST /settings/system/serial_enable true to use the device; until then another program may take it"
}

func (f *foundHandler) DeviceFound(d hw.Driver) {
	info := d.Info()
	// Not waited for on the watcher's goroutine: an addition can wait long
	// (an arm back while the config write it left with is still on a slow
	// disk), and the arms plugged in meanwhile must not wait behind it. The
	// watcher finds this port again only after Lost or Refused, so one
	// port's additions keep their order.
	f.svc.AddDeviceThen(d, true, func(_ *actors.Device, err error) {
		if err != nil {
			f.h.log.Error().Err(err).Str("port", info.Port).Msg("could not add the device")
			_ = d.Close()
			f.h.watcher.Refused(info.Port, "the service could not add the device: "+err.Error(),
				"it is retried automatically with backoff; the service's log has the details")
		}
	})
}

func (f *foundHandler) ScanReport(r discovery.Report) {
	for _, p := range r.Ports {
		// A loaded device's info line is its device-connected event.
		ev := f.h.log.Debug()
		switch p.Outcome {
		case discovery.Failed:
			ev = f.h.log.Warn()
		}
		ev.Str("port", p.Path).Str("outcome", p.Outcome.String()).Str("product", p.Product).
			Str("device_id", p.DeviceID).Str("reason", p.Reason).Str("hint", p.Hint).Msg("hardware scan")
	}
}
