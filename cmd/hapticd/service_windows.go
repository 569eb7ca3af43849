package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// runService is "hapticd service ...": it registers, starts, stops and
// removes the Windows service, and "service run" is what the Service
// Control Manager starts.
func runService(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, serviceUsage)
		return errors.New("service: name an action: install, uninstall, start or stop")
	}
	switch args[0] {
	case "install":
		return installService(args[1:], out)
	case "uninstall":
		return uninstallService(out)
	case "start":
		return controlService(out, true)
	case "stop":
		return controlService(out, false)
	case "run":
		// Not svc.IsWindowsService: it misjudges under Wine, where the
		// SCM's session is not 0. svc.Run itself fails at once when no SCM
		// started this process.
		err := svc.Run(serviceName, &windowsService{args: args[1:]})
		if errors.Is(err, windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
			return errors.New("service: \"service run\" is started by the Service Control Manager; in a console run hapticd itself")
		}
		if err != nil {
			return fmt.Errorf("service: %w", err)
		}
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(out, serviceUsage)
		return nil
	}
	fmt.Fprint(out, serviceUsage)
	return fmt.Errorf("service: unknown action %q", args[0])
}

func installService(flags []string, out io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("service: find this program: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return fmt.Errorf("service: find this program: %w", err)
	}
	runArgs := serviceRunArgs(flags, os.Getenv("ProgramData"))
	// A bad flag must fail now, not at the next boot.
	if _, err := parseFlags(runArgs[2:]); err != nil {
		return fmt.Errorf("service: install: %w", err)
	}
	m, err := connectSCM()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	if s, err := m.OpenService(serviceName); err == nil {
		s.Close()
		return fmt.Errorf("service: %s is already installed; run hapticd service uninstall first", serviceName)
	}
	s, err := m.CreateService(serviceName, exe, mgr.Config{
		DisplayName: "hapticd",
		Description: "Local control service for haptic arms and grips (HTTP and WebSocket on loopback).",
		StartType:   mgr.StartAutomatic,
	}, runArgs...)
	if err != nil {
		return fmt.Errorf("service: install: %w", err)
	}
	defer s.Close()
	// Restart after a crash, as the systemd unit does.
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: 2 * time.Second}}, 24*60*60); err != nil {
		fmt.Fprintf(out, "warning: could not set the restart-on-failure action: %v\n", err)
	}
	fmt.Fprintf(out, "installed service %s: %s %q\nstart it with: hapticd service start\n", serviceName, exe, runArgs)
	return nil
}

func uninstallService(out io.Writer) error {
	return withService(func(s *mgr.Service) error {
		if st, err := s.Query(); err == nil && st.State != svc.Stopped {
			if err := stopAndWait(s); err != nil {
				return err
			}
		}
		if err := s.Delete(); err != nil {
			return fmt.Errorf("service: uninstall: %w", err)
		}
		fmt.Fprintf(out, "removed service %s (its state directory is left in place)\n", serviceName)
		return nil
	})
}

func controlService(out io.Writer, start bool) error {
	return withService(func(s *mgr.Service) error {
		if !start {
			if err := stopAndWait(s); err != nil {
				return err
			}
			fmt.Fprintf(out, "service %s stopped\n", serviceName)
			return nil
		}
		if err := s.Start(); err != nil {
			return fmt.Errorf("service: start: %w", err)
		}
		if err := waitState(s, svc.Running); err != nil {
			return fmt.Errorf("service: start: %w (see hapticd.log in the state directory)", err)
		}
		fmt.Fprintf(out, "service %s running\n", serviceName)
		return nil
	})
}

// connectSCM connects to the Service Control Manager, which needs an
// administrator for every change.
func connectSCM() (*mgr.Mgr, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("service: connect to the Service Control Manager (run as administrator): %w", err)
	}
	return m, nil
}

// withService runs fn on the installed hapticd service.
func withService(fn func(*mgr.Service) error) error {
	m, err := connectSCM()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return fmt.Errorf("service: %s is not installed (hapticd service install): %w", serviceName, err)
	}
	defer s.Close()
	return fn(s)
}

func stopAndWait(s *mgr.Service) error {
	if _, err := s.Control(svc.Stop); err != nil {
		return fmt.Errorf("service: stop: %w", err)
	}
	if err := waitState(s, svc.Stopped); err != nil {
		return fmt.Errorf("service: stop: %w", err)
	}
	return nil
}

// waitState polls the service until it reaches want, or fails when it
// stops on the way or takes longer than 30 s.
func waitState(s *mgr.Service, want svc.State) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := s.Query()
		if err != nil {
			return err
		}
		if st.State == want {
			return nil
		}
		if want == svc.Running && st.State == svc.Stopped {
			return fmt.Errorf("the service stopped during start (exit code %d, service code %d)", st.Win32ExitCode, st.ServiceSpecificExitCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still in state %d after 30 s", st.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// windowsService runs hapticd under the Service Control Manager: it starts
// the service as serve does, and a Stop or Shutdown request shuts it down
// as a SIGTERM would.
type windowsService struct{ args []string }

// Service-specific exit codes the SCM records (sc query hapticd).
const (
	exitStartFailed = 1
	exitStopFailed  = 2
)

func (w *windowsService) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending, WaitHint: 20000}
	o, err := parseFlags(w.args)
	if err != nil {
		return true, exitStartFailed
	}
	logFile, err := openServiceLog(o.stateDir)
	if err != nil {
		return true, exitStartFailed
	}
	defer logFile.Close()
	log, err := newLogger(o.logLevel, o.logFormat, logFile)
	if err != nil {
		fmt.Fprintln(logFile, "hapticd:", err)
		return true, exitStartFailed
	}
	sv, err := startService(context.Background(), o, log)
	if err != nil {
		log.Error().Err(err).Msg("service did not start")
		return true, exitStartFailed
	}
	logReady(log, sv)
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for c := range req {
		switch c.Cmd {
		case svc.Interrogate:
			status <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			log.Info().Str("request", map[svc.Cmd]string{svc.Stop: "stop", svc.Shutdown: "shutdown"}[c.Cmd]).Msg("shutting down")
			status <- svc.Status{State: svc.StopPending, WaitHint: 10000}
			if err := sv.stop(nil); err != nil {
				log.Error().Err(err).Msg("stop")
				return true, exitStopFailed
			}
			return false, 0
		}
	}
	return false, 0
}

// openServiceLog opens hapticd.log in the state directory for appending;
// a log over 10 MiB is moved to hapticd.log.1 first. A service has no
// console to write to.
func openServiceLog(stateDir string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o750); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, "hapticd.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > 10<<20 {
		_ = os.Rename(path, path+".1")
	}
	return os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
}
